//! The sweep's progress bar on stderr ([`Progress`]): quiet for the first
//! second, then a redrawn bar on a terminal or a line every 20 points.

use std::io::{IsTerminal, Write as _};
use std::time::Instant;

/// Progress of a sweep over `total` points.
pub(super) struct Progress {
    total: usize,
    done: usize,
    start: Instant,
    tty: bool,
    shown: bool,
}

impl Progress {
    /// A bar for `total` points, started now.
    pub(super) fn new(total: usize) -> Self {
        Progress {
            total,
            done: 0,
            start: Instant::now(),
            tty: std::io::stderr().is_terminal(),
            shown: false,
        }
    }
    /// One more point done (`what` names it).
    pub(super) fn tick(&mut self, what: &str) {
        self.done += 1;
        // Only after the first second, so quick runs stay quiet.
        if self.start.elapsed().as_secs_f64() < 1.0 && self.done < self.total {
            return;
        }
        let w = 30;
        let filled = w * self.done / self.total.max(1);
        let bar: String = "#".repeat(filled) + &".".repeat(w - filled);
        let mut e = std::io::stderr();
        if self.tty {
            let _ = write!(e, "\r[{bar}] {}/{} {what:<28}", self.done, self.total);
        } else if self.done == self.total || self.done.is_multiple_of(20) {
            let _ = writeln!(e, "[{bar}] {}/{} {what}", self.done, self.total);
        }
        self.shown = true;
        let _ = e.flush();
    }
    /// Ends the bar's line (on a terminal, when it was shown).
    pub(super) fn finish(&self) {
        if self.shown && self.tty {
            let _ = writeln!(std::io::stderr());
        }
    }
}
