//! The CPU time a run takes (`getrusage(RUSAGE_SELF)`), for the
//! polling-against-events comparison (`-e`): user and system time against
//! the wall-clock time of the run.

use std::collections::BTreeMap;
use std::time::Instant;

/// User and system CPU time of the process so far, in microseconds.
fn cpu_us() -> (u64, u64) {
    // SAFETY: `rusage` is plain integers and `timeval`s: all-zero bytes
    // are a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a live `rusage`; RUSAGE_SELF is a valid
    // `who`.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return (0, 0);
    }
    let us = |t: libc::timeval| t.tv_sec.max(0) as u64 * 1_000_000 + t.tv_usec.max(0) as u64;
    (us(u.ru_utime), us(u.ru_stime))
}

/// A CPU-time stopwatch started at [`CpuUse::start`].
pub(super) struct CpuUse {
    wall: Instant,
    user: u64,
    sys: u64,
}

impl CpuUse {
    /// Starts measuring.
    pub(super) fn start() -> Self {
        let (user, sys) = cpu_us();
        CpuUse {
            wall: Instant::now(),
            user,
            sys,
        }
    }

    /// Adds `cpu_user_ms`, `cpu_sys_ms`, `cpu_wall_ms` and `cpu_percent`
    /// (user + system over wall-clock time, 100 = one core busy) since
    /// the start to `counters`.
    pub(super) fn finish(&self, counters: &mut BTreeMap<String, f64>) {
        let (user, sys) = cpu_us();
        let wall_us = self.wall.elapsed().as_micros().max(1) as f64;
        let (u, s) = (
            user.saturating_sub(self.user) as f64,
            sys.saturating_sub(self.sys) as f64,
        );
        counters.insert("cpu_user_ms".into(), u / 1e3);
        counters.insert("cpu_sys_ms".into(), s / 1e3);
        counters.insert("cpu_wall_ms".into(), wall_us / 1e3);
        counters.insert("cpu_percent".into(), (u + s) / wall_us * 100.0);
    }
}
