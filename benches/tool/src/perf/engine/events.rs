//! Completions by CQ event (perftest's `-e`): what a backend gives the
//! engine to sleep on ([`EventWait`]), and the engine's use of it — arm
//! every CQ of the run, look once more, then wait for the completion
//! vector instead of spinning.

/// Waiting for completion events on a run's completion vector.
pub trait EventWait {
    /// Waits up to `timeout_us` for completion events and writes the CQ
    /// numbers they name into `cqns`; returns how many (0: timed out).
    fn wait(&mut self, timeout_us: u64, cqns: &mut [u32]) -> anyhow::Result<usize>;
}
