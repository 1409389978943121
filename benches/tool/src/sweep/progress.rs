//! The sweep's progress bar on stderr ([`Progress`]): quiet for the first
//! second, then a redrawn bar on a terminal (`indicatif`) or a line every
//! 20 points.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Instant;

/// The bar's width in characters.
const WIDTH: usize = 30;

/// Progress of a sweep over `total` points.
pub(super) struct Progress {
    total: usize,
    done: usize,
    start: Instant,
    /// The redrawn bar when stderr is a terminal (hidden until first
    /// shown); `None` otherwise.
    bar: Option<ProgressBar>,
    shown: bool,
}

impl Progress {
    /// A bar for `total` points, started now.
    pub(super) fn new(total: usize) -> Self {
        let bar = crate::output::stderr_is_terminal().then(|| {
            let b = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::hidden());
            let style = ProgressStyle::with_template("[{bar:30}] {pos}/{len} {msg:<28}")
                .map(|s| s.progress_chars("#."))
                .unwrap_or_else(|_| ProgressStyle::default_bar());
            b.set_style(style);
            b
        });
        Progress {
            total,
            done: 0,
            start: Instant::now(),
            bar,
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
        if let Some(b) = &self.bar {
            if !self.shown {
                b.set_draw_target(ProgressDrawTarget::stderr());
            }
            b.set_message(what.to_string());
            b.set_position(self.done as u64);
        } else if self.done == self.total || self.done.is_multiple_of(20) {
            let filled = WIDTH * self.done / self.total.max(1);
            let bar: String = "#".repeat(filled) + &".".repeat(WIDTH - filled);
            crate::eoutln!("[{bar}] {}/{} {what}", self.done, self.total);
        }
        self.shown = true;
    }
    /// Ends the bar's line (on a terminal, when it was shown).
    pub(super) fn finish(&self) {
        if let (Some(b), true) = (&self.bar, self.shown) {
            b.finish();
        }
    }
}
