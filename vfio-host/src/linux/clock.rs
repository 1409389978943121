//! The host clock the core's command interface waits with ([`StdClock`]).

use bareverbs::cmd::Clock;
use std::time::{Duration, Instant};

/// A monotonic clock; delays of 1 ms or more sleep, shorter ones spin.
#[derive(Debug)]
pub struct StdClock {
    start: Instant,
}

impl Default for StdClock {
    fn default() -> Self {
        StdClock {
            start: Instant::now(),
        }
    }
}

impl Clock for StdClock {
    fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }
    fn delay_us(&mut self, us: u32) {
        if us >= 1000 {
            std::thread::sleep(Duration::from_micros(us as u64));
        } else {
            let t = Instant::now();
            while t.elapsed() < Duration::from_micros(us as u64) {
                std::hint::spin_loop();
            }
        }
    }
}
