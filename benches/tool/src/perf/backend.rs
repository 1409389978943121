//! The backend trait of `bareverbs perf` ([`PerfBackend`]): a source of
//! transfers. The engine implements it for every
//! [`PerfDevice`](super::engine::PerfDevice); `run` picks one by
//! `--device`. A leaf over the shared types.

use super::config::PerfRunConfig;
use super::engine::{PeerLink, Role};
use super::flags::PerfArgs;
use super::report::PerfRunReport;

/// A source of transfers: the model, the simulator, or a NIC (or the
/// simulator) driven through the firmware command path.
pub trait PerfBackend {
    /// Name shown in the header.
    fn name(&self) -> String;
    /// What the header says about the times.
    fn timing_note(&self) -> String {
        "times are MODELED, not measured on a NIC".into()
    }
    /// Runs one configuration.
    fn run(&mut self, cfg: &PerfRunConfig) -> anyhow::Result<PerfRunReport>;
    /// Runs this host's side (`role`) of one configuration against the
    /// peer host behind `link` (perftest's server/client mode).
    fn run_half(
        &mut self,
        _cfg: &PerfRunConfig,
        _role: Role,
        _link: &mut dyn PeerLink,
    ) -> anyhow::Result<PerfRunReport> {
        anyhow::bail!("{} cannot reach another host", self.name())
    }
    /// Why this backend cannot honour `cfg` / `args` (a flag perftest
    /// accepts but this backend does not implement), if it cannot.
    fn refuse(&self, _cfg: &PerfRunConfig, _args: &PerfArgs) -> Option<String> {
        None
    }
    /// Header note lines about how this backend runs `cfg` (what `-D`
    /// means here, a lowered TX depth, what the figures' spread means).
    fn notes(&self, _cfg: &PerfRunConfig) -> Vec<String> {
        Vec::new()
    }
}
