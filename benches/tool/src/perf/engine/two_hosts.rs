//! A two-host run ([`run_half`]): this host drives one side of every QP
//! pair ([`Role::Client`] or [`Role::Server`]) and a peer host the
//! other, the two joined by an out-of-band link ([`PeerLink`]: perftest's
//! TCP exchange) that carries the key messages, the synchronisation
//! around the test and the report exchange.
//!
//! The peer's buffers are addressed as perftest addresses them: the
//! WRITE and READ targets are the first `cycle buffer` bytes (the
//! larger of the two hosts' page sizes, `check_sys_data`) at the address
//! the peer's key message names, so a stock perftest peer, whose buffer
//! is that big, is never addressed beyond it.

use super::cpu::CpuUse;
use super::device::PerfDevice;
use super::plan::{memory_check, Plan};
use super::role::Role;
use super::runner::Engine;
use crate::perf::config::PerfRunConfig;
use crate::perf::report::{PeerRun, PerfRunReport};
use crate::perftest::format::{Endpoint, Verb};
use anyhow::bail;

/// The out-of-band link to the peer host, as a two-host run uses it.
pub trait PeerLink {
    /// Bytes of the peer's buffer a WRITE or READ may address from the
    /// address its key message names (perftest's agreed cycle buffer).
    fn cycle_buffer(&self) -> usize;
    /// Whether the peer is bareverbs (what it writes and holds carries
    /// bareverbs' tags and is checked; a perftest peer's is not).
    fn peer_is_bareverbs(&self) -> bool;
    /// The key exchange before the QPs are connected: this host's key
    /// message per QP for the peer's.
    fn keys(&mut self, mine: &[Endpoint]) -> anyhow::Result<Vec<Endpoint>>;
    /// With the QPs connected: the rest of the exchange before the test
    /// (perftest's second round of key messages and the hand shake after
    /// RTR).
    fn ready(&mut self, mine: &[Endpoint]) -> anyhow::Result<()>;
    /// Whether the peer has sent something (without blocking): the
    /// server waits for the client's end of the test this way, keeping
    /// its device's clock running.
    fn peer_spoke(&mut self) -> anyhow::Result<bool>;
    /// After the test: the rest of the exchange (the end hand shake, the
    /// report exchange, closing) with this host's report `rep`; what the
    /// peer showed of itself and sent.
    fn finish(&mut self, cfg: &PerfRunConfig, rep: &PerfRunReport) -> anyhow::Result<PeerRun>;
}

/// Runs this host's side (`role`) of `cfg` on `dev` against the peer
/// behind `link`: plan, open and connect by key exchange, the engine, the
/// end exchange, close.
pub fn run_half<D: PerfDevice + ?Sized>(
    dev: &mut D,
    cfg: &PerfRunConfig,
    role: Role,
    link: &mut dyn PeerLink,
) -> anyhow::Result<PerfRunReport> {
    if !role.two_hosts() {
        bail!("a loopback run has no peer host");
    }
    let caps = dev.caps(cfg);
    let mut plan = Plan::with_inflight(cfg, &caps, dev.inflight_bytes())?;
    if plan.verb != Verb::Send {
        // The peer's buffer is one cycle buffer at its key's address.
        plan.slots = (link.cycle_buffer() / plan.slot_bytes).max(1);
    }
    memory_check(&plan, cfg, dev.memory_limit())?;
    dev.timer().set_loss(cfg.loss)?;
    dev.timer().begin_run();
    let pairs = match dev.open_half(cfg, &plan, role, &mut |mine| link.keys(mine)) {
        Ok(p) => p,
        Err(e) => {
            let _ = dev.close();
            return Err(e);
        }
    };
    let mine: Vec<Endpoint> = pairs
        .iter()
        .map(|p| match role {
            Role::Server => p.remote.clone(),
            _ => p.local.clone(),
        })
        .collect();
    // The address lines are this host's first: on the server, side B's.
    let (local, remote) = match role {
        Role::Server => (pairs[0].remote.clone(), pairs[0].local.clone()),
        _ => (pairs[0].local.clone(), pairs[0].remote.clone()),
    };
    let r = run_pairs(dev, cfg, &plan, role, link, pairs, &mine);
    let c = dev.close();
    let mut rep = r?;
    c?;
    rep.backend = PerfDevice::name(dev);
    rep.local = Some(local);
    rep.remote = Some(remote);
    dev.annotate(cfg, &mut rep);
    Ok(rep)
}

/// The part of [`run_half`] with the pairs open: the exchange up to the
/// test, the engine, the server's wait for the client and its checks, the
/// end exchange.
fn run_pairs<D: PerfDevice + ?Sized>(
    dev: &mut D,
    cfg: &PerfRunConfig,
    plan: &Plan,
    role: Role,
    link: &mut dyn PeerLink,
    pairs: Vec<super::pair::Pair>,
    mine: &[Endpoint],
) -> anyhow::Result<PerfRunReport> {
    let (timer, events) = dev.timer_and_events();
    let events = match (cfg.events, events) {
        (false, _) => None,
        (true, Some(ev)) => Some(ev),
        (true, None) => bail!("-e (sleep on CQ events) needs a device with completion events"),
    };
    let cpu = CpuUse::start();
    let mut e = Engine::new(timer, events, pairs, plan, cfg);
    e.check_peer_payload(link.peer_is_bareverbs());
    // Receives first: the peer may send as soon as it is told to start.
    e.first_receives()?;
    link.ready(mine)?;
    e.run()?;
    // What this side's device still owes the peer (the ACK of the last
    // message it received) leaves before the run ends: a NIC answers on
    // its own, a simulated one only while its host drives it.
    e.settle();
    if role == Role::Server {
        e.wait_for_peer(&mut || link.peer_spoke())?;
        e.after_peer();
    }
    let mut rep = e.finish(plan);
    cpu.finish(&mut rep.counters);
    drop(e);
    rep.peer = Some(link.finish(cfg, &rep)?);
    Ok(rep)
}
