//! The backend trait of the engine ([`PerfDevice`]): what a device does
//! for a perftest run (name, sizing caps, memory limits, the clock, open
//! and close the pairs, annotate the report).

use super::events::EventWait;
use super::pair::Pair;
use super::plan::Plan;
use super::role::Role;
use super::timer::Timer;
use crate::perf::config::PerfRunConfig;
use crate::perf::flags::PerfArgs;
use crate::perf::report::PerfRunReport;
use crate::perftest::format::Endpoint;
use bareverbs::sizing::DeviceCaps;

/// Exchanges this host's key messages (one [`Endpoint`] per QP) for the
/// peer host's, in the same order (perftest's `ctx_hand_shake` per QP).
pub type KeyExchange<'a> = dyn FnMut(&[Endpoint]) -> anyhow::Result<Vec<Endpoint>> + 'a;

/// A backend of the engine: the device operations of a perftest run.
pub trait PerfDevice {
    /// Name shown in the header.
    fn name(&self) -> String;
    /// Why this device cannot honour `cfg` / `args`, if it cannot (a flag
    /// perftest accepts but this device does not implement).
    fn refuse(&self, _cfg: &PerfRunConfig, _args: &PerfArgs) -> Option<String> {
        None
    }
    /// What the header says about the times.
    fn timing_note(&self) -> String;
    /// Sizing capabilities the QPs are sized with.
    fn caps(&self, cfg: &PerfRunConfig) -> DeviceCaps;
    /// Host memory a run may take on this device (None: no limit, e.g.
    /// hardware, whose DMA memory the host provides anyway).
    fn memory_limit(&self) -> Option<u64> {
        Some(1 << 30)
    }
    /// Payload bytes a QP may have in flight (None: no limit). The
    /// simulator gathers a WR's whole payload when it executes the WQE and
    /// holds it until the WR completes, so its devices cap this.
    fn inflight_bytes(&self) -> Option<u64> {
        None
    }
    /// The run's clock.
    fn timer(&mut self) -> &mut dyn Timer;
    /// The run's clock and, when `cfg.events` asks for completions by
    /// event, what to sleep on (devices without events return `None`;
    /// they refuse `-e` in [`refuse`](Self::refuse)).
    fn timer_and_events(&mut self) -> (&mut dyn Timer, Option<&mut dyn EventWait>) {
        (self.timer(), None)
    }
    /// Creates and connects `plan.pairs` QP pairs with their registered
    /// slots. What it created stays until [`close`](Self::close).
    fn open(&mut self, cfg: &PerfRunConfig, plan: &Plan) -> anyhow::Result<Vec<Pair>>;
    /// A two-host run: creates this host's side (`role`) of `plan.pairs`
    /// QP pairs, hands their key messages to `keys` and connects each QP
    /// toward the endpoint the peer sent back. What it created stays until
    /// [`close`](Self::close). Devices that cannot reach another host
    /// refuse (the default).
    fn open_half(
        &mut self,
        _cfg: &PerfRunConfig,
        _plan: &Plan,
        _role: Role,
        _keys: &mut KeyExchange<'_>,
    ) -> anyhow::Result<Vec<Pair>> {
        anyhow::bail!(
            "{} cannot reach another host: server/client runs need --device vfio:BDF or \
             --device fw-sim --wire ADDR:PORT",
            self.name()
        )
    }
    /// Destroys what [`open`](Self::open) created (the pairs are dropped
    /// before this is called).
    fn close(&mut self) -> anyhow::Result<()>;
    /// Device-specific facts for the report (WQE shape, NIC cost, …).
    fn annotate(&self, _cfg: &PerfRunConfig, _rep: &mut PerfRunReport) {}
    /// What the spread of this device's figures means (a header note):
    /// `None` for a device that measures (its spread is the NIC's).
    fn variance_note(&self) -> Option<String> {
        None
    }
}
