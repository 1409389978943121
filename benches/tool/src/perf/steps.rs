//! The timed loop of the memory-backed benches (`perf post`, `perf
//! post-recv`): steps until the iterations are done, refusing a loop that
//! makes no progress.

use std::time::{Duration, Instant};

/// Runs `step` (which returns the operations it did) until `iters` are
/// done: the operations done and the time the loop took, or `None` once
/// 1000 steps in a row did nothing.
#[inline(always)]
pub fn timed_steps(iters: u64, mut step: impl FnMut() -> u64) -> Option<(u64, Duration)> {
    let t = Instant::now();
    let mut done = 0u64;
    let mut stalls = 0u32;
    while done < iters {
        let n = step();
        done += n;
        stalls = if n == 0 { stalls + 1 } else { 0 };
        if stalls >= 1000 {
            return None;
        }
    }
    Some((done, t.elapsed()))
}
