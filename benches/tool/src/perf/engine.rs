//! The one perftest engine: every `bareverbs perf` test (`write-lat` …
//! `read-bw`) on every backend runs this loop. A backend is a
//! [`PerfDevice`]: it creates and connects the QP pairs of a run and their
//! registered buffers, and gives the engine each side's data path
//! ([`SideOps`]: post a list, post a receive, poll) and the clock
//! ([`Timer`]). The engine posts (TX depth `-t`, post list `-l`, CQ
//! moderation `-Q`, inline, `-q` QP pairs, `-n` iterations or `-D`
//! seconds), polls, stamps posts and completions, checks every payload
//! byte that arrives and builds the [`PerfRunReport`].
//!
//! - `write-lat`: ping-pong. A WRITEs into B's buffer, the engine spins on
//!   the last byte of B's buffer changing, then B WRITEs back into A's
//!   buffer and the engine spins on A's; a sample is the round trip / 2.
//! - `send-lat`: the same ping-pong with SEND/RECV, detected by polling
//!   the receiver's CQ.
//! - `read-lat`, `atomic-lat` (fetch-and-add): one operation outstanding,
//!   a sample is the whole operation (post → completion polled).
//! - `write-bw`, `send-bw`, `read-bw`: up to the TX depth of WRs
//!   outstanding on each QP pair, `post_list` WRs per doorbell, one
//!   signaled WR every `cq_mod`.
//!
//! Every message carries its iteration number (8 bytes at each end, a fixed
//! pattern between; messages under 16 bytes are one byte value per
//! iteration), and every byte that arrives is compared in place with what
//! was sent ([`PerfRunReport::mismatches`] counts the bytes that differ,
//! and `size` bytes per message that never arrived); no copy of a message
//! is kept. Buffers are registered once per run: at most [`AREA_BYTES`] of
//! message slots per area, so messages larger than that share one slot
//! (perftest's cycle buffer does the same); a check then accepts the tag
//! of any iteration that used the slot since, and still every body byte.
//! Each busy-wait has a time limit and fails with an error naming what
//! never completed.

use super::backend::PerfBackend;
use super::config::{qp_request, PerfRunConfig};
use super::flags::{Conn, PerfArgs, PerfTest};
use super::report::PerfRunReport;
use crate::perftest::format::{Endpoint, Verb};
use anyhow::{anyhow, bail};
use bareverbs::cq::PollError;
use bareverbs::cqe::{WcOpcode, WcStatus, WorkCompletion};
use bareverbs::sizing::{qp_layout, DeviceCaps, QpLayout, SendOps};
use bareverbs::sq::{PostError, RdmaOp, RdmaWr, SendFlags, SendOp, SendWr, Sge, UdDest};
use bareverbs::wqe::AddressVector;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

/// Receive WQEs per QP (perftest's default `rx_depth` is 512).
pub const RQ_WQES: usize = 512;
/// Most bytes of message slots per area (src or dst of one side), over
/// all QP pairs of a run.
pub const AREA_BYTES: usize = 32 << 20;
/// Default limit of every busy-wait (5 s of the timer's clock).
pub const DEFAULT_TIMEOUT_NS: u64 = 5_000_000_000;
/// Q_Key of the UD QPs.
pub const QKEY: u32 = 0x1111_1111;
/// UD receive buffers start with room for the GRH (IBA 11.4.1.2).
pub const GRH_BYTES: usize = 40;
/// Bytes of the iteration tag at each end of a message.
const TAG: usize = 8;
/// With nothing happening for this long, unreliable SENDs still in flight
/// are presumed lost (timer nanoseconds).
const LOSS_GRACE_NS: u64 = 1_000_000;
/// Payload bytes in flight per QP on the simulator devices (see
/// [`PerfDevice::inflight_bytes`]).
pub const SIM_INFLIGHT_BYTES: u64 = 128 << 20;
/// Most post/completion stamps reserved up front.
const RESERVE_MAX: u64 = 1 << 20;

/// The QP a run asks for cannot be created on this device; the text is
/// the sizing error's (or the device's refusal).
#[derive(Debug)]
pub struct QpRejected(pub String);

impl fmt::Display for QpRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QP creation fails: {}", self.0)
    }
}

impl std::error::Error for QpRejected {}

/// The run needs more memory than the backend allows (a typed refusal,
/// before anything is allocated).
#[derive(Debug)]
pub struct TooMuchMemory {
    /// Bytes the run would need.
    pub need: u64,
    /// Bytes the backend allows.
    pub limit: u64,
    /// What needs it.
    pub what: String,
}

impl fmt::Display for TooMuchMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} needs about {} MiB of queue and buffer memory, more than the {} MiB this backend allows",
            self.what,
            self.need.div_ceil(1 << 20),
            self.limit >> 20
        )
    }
}

impl std::error::Error for TooMuchMemory {}

/// The clock of a run, and what a busy-wait does while it waits.
pub trait Timer {
    /// Now, in nanoseconds of this clock.
    fn now_ns(&mut self) -> u64;
    /// One iteration of a busy-wait (a spin hint on hardware; on the
    /// simulator the device makes progress).
    fn relax(&mut self);
    /// `n` CQEs were polled (the simulator charges their CPU cost).
    fn cqes_polled(&mut self, n: usize) {
        let _ = n;
    }
    /// Lets in-flight work settle (used before a final check of
    /// unreliable transfers, which complete before their data lands).
    fn settle(&mut self);
    /// Times are modeled, not measured.
    fn modeled(&self) -> bool;
    /// What the header says about the times.
    fn note(&self) -> String;
    /// Applies the run's packet-loss setting (an error where loss cannot
    /// be injected).
    fn set_loss(&mut self, loss: f64) -> anyhow::Result<()>;
    /// A run starts: counters reported afterwards count from here.
    fn begin_run(&mut self) {}
    /// Rate of the link the transfers cross (Gb/s), when it is modeled
    /// (0: unknown, e.g. on hardware).
    fn link_gbps(&self) -> f64 {
        0.0
    }
    /// Extra counters for the report (this run's only).
    fn counters(&self, out: &mut BTreeMap<String, f64>) {
        let _ = out;
    }
}

/// Wall-clock time ([`Instant`], monotonic, no TSC assumptions).
#[derive(Debug)]
pub struct WallTimer {
    start: Instant,
}

impl Default for WallTimer {
    fn default() -> Self {
        WallTimer {
            start: Instant::now(),
        }
    }
}

impl Timer for WallTimer {
    fn now_ns(&mut self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
    fn relax(&mut self) {
        std::hint::spin_loop();
    }
    fn settle(&mut self) {
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(10) {
            std::hint::spin_loop();
        }
    }
    fn modeled(&self) -> bool {
        false
    }
    fn note(&self) -> String {
        "times are MEASURED on the NIC (wall clock)".into()
    }
    fn set_loss(&mut self, loss: f64) -> anyhow::Result<()> {
        if loss > 0.0 {
            bail!("--loss {loss} cannot be injected on hardware (it is a simulator setting)");
        }
        Ok(())
    }
}

/// The data path of one side, with the ring size erased.
pub trait SideOps {
    /// QP number.
    fn qpn(&self) -> u32;
    /// Posts through the safe API (SGEs checked against this side's keys).
    fn post(&mut self, wrs: &[SendWr<'_>]) -> Result<(), PostError>;
    /// Posts through the hot path.
    ///
    /// # Safety
    /// Every SGE must lie inside one of this side's registered slots.
    unsafe fn post_rdma(&mut self, op: RdmaOp, wrs: &[RdmaWr<'_>]) -> Result<(), PostError>;
    /// Posts one receive of `sge` (checked against this side's keys).
    fn post_recv(&mut self, wr_id: u64, sge: Sge) -> anyhow::Result<()>;
    /// Polls the side's CQ.
    fn poll(&mut self, out: &mut [WorkCompletion]) -> Result<usize, PollError>;
    /// WRs posted and not yet retired.
    fn outstanding(&self) -> u32;
    /// SQ producer index (WQEBBs).
    fn cur_post(&self) -> u32;
    /// DS count of the WQE whose first WQEBB is `wqebb`, read from the ring.
    fn wqe_ds(&self, wqebb: u32) -> u32;
}

/// One message slot: CPU pointer, device address, key.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// Host address of the slot's first byte (raw: the device may write it).
    pub cpu: NonNull<u8>,
    /// Device (IOVA) address of the slot.
    pub addr: u64,
    /// Memory key (lkey = rkey) covering the slot.
    pub key: u32,
}

/// Which areas a test uses (the others are not allocated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Areas {
    /// A's source slots (WRITE/SEND data, the ping).
    pub a_src: bool,
    /// A's destination slots (READ targets, the pong, atomics' results).
    pub a_dst: bool,
    /// B's source slots (READ sources, the pong, the atomic counter).
    pub b_src: bool,
    /// B's destination slots (WRITE/SEND targets).
    pub b_dst: bool,
}

/// One connected QP pair and its registered slots, made by a
/// [`PerfDevice`]; `a` is the requester, `b` the responder.
pub struct Pair {
    /// The requester's data path.
    pub a: Box<dyn SideOps>,
    /// The responder's data path.
    pub b: Box<dyn SideOps>,
    /// A's source slots (empty when [`Areas::a_src`] is off).
    pub a_src: Vec<Slot>,
    /// A's destination slots.
    pub a_dst: Vec<Slot>,
    /// B's source slots.
    pub b_src: Vec<Slot>,
    /// B's destination slots.
    pub b_dst: Vec<Slot>,
    /// UD: the address vector toward the peer.
    pub av: AddressVector,
    /// The `local address` line of this pair (A).
    pub local: Endpoint,
    /// The `remote address` line (B).
    pub remote: Endpoint,
}

/// What a run needs decided before anything is created (device-neutral).
#[derive(Clone, Debug)]
pub struct Plan {
    /// Exact mlx5 geometry of the run's QPs (with `max_inline_data` the
    /// run's `-I`, as perftest creates its QPs).
    pub layout: QpLayout,
    /// Connection type.
    pub conn: Conn,
    /// Verb.
    pub verb: Verb,
    /// Message bytes.
    pub size: usize,
    /// SGEs per posted WR.
    pub k: u32,
    /// Post inline.
    pub inline: bool,
    /// The QPs are created with atomics.
    pub atomics: bool,
    /// WRs in flight per QP at most (1 for latency tests).
    pub window: u32,
    /// WRs a send queue may hold unretired (declared to CREATE_QP; the
    /// CQs are sized for it): the window, at least a few for ping-pong.
    pub cap: u32,
    /// Message slots per area and pair.
    pub slots: usize,
    /// Bytes per slot (message, plus the GRH room of UD receives, 64-aligned).
    pub slot_bytes: usize,
    /// Where received data starts in a receive slot (40 on UD).
    pub recv_off: usize,
    /// QP pairs.
    pub pairs: usize,
    /// Areas the test uses.
    pub areas: Areas,
    /// Iterations per pair (`-n`; `-D` runs count as one second of
    /// `RESERVE_MAX` = 2^20 stamps).
    pub iters: u64,
}

impl Plan {
    /// Decides `cfg`'s geometry with the device's sizing capabilities.
    pub fn new(cfg: &PerfRunConfig, caps: &DeviceCaps) -> anyhow::Result<Plan> {
        Self::with_inflight(cfg, caps, None)
    }

    /// As [`new`](Self::new), with at most `inflight` payload bytes in
    /// flight per QP (the TX depth is lowered to fit, to no less than 2).
    pub fn with_inflight(
        cfg: &PerfRunConfig,
        caps: &DeviceCaps,
        inflight: Option<u64>,
    ) -> anyhow::Result<Plan> {
        let verb = cfg.test.verb();
        if cfg.conn != Conn::Rc && matches!(verb, Verb::Read | Verb::Atomic) {
            bail!("{} needs an RC QP (-c RC)", verb.name());
        }
        if cfg.conn == Conn::Ud && verb == Verb::Write {
            bail!("RDMA_Write is not available on UD QPs");
        }
        if cfg.conn == Conn::Ud && cfg.size > cfg.mtu as u64 {
            bail!("UD messages are limited to one MTU ({} B)", cfg.mtu);
        }
        let ops = qp_request(cfg).effective_ops();
        let atomics = ops.intersects(SendOps::ATOMIC_FA | SendOps::ATOMIC_CS);
        if verb == Verb::Atomic && !ops.contains(SendOps::ATOMIC_FA) {
            bail!("atomic-lat posts fetch-and-add: --send-ops must include it (e.g. write,send,read,atomic)");
        }
        let size = if verb == Verb::Atomic {
            8
        } else {
            usize::try_from(cfg.size).map_err(|_| anyhow!("-s {} is too large", cfg.size))?
        };
        if size == 0 {
            bail!("-s 0: messages need at least one byte");
        }
        let recv_off = if cfg.conn == Conn::Ud { GRH_BYTES } else { 0 };
        let slot_bytes = (size + recv_off).next_multiple_of(64);
        let req = qp_request(cfg).recv(RQ_WQES as u32, 1);
        let layout = qp_layout(&req, caps).map_err(|e| QpRejected(e.to_string()))?;
        if layout.rq.wqe_cnt as usize != RQ_WQES || layout.rq.wqe_shift != 4 {
            bail!(
                "unexpected receive queue geometry {} x {} B",
                layout.rq.wqe_cnt,
                layout.rq.wqe_size
            );
        }
        let lat = !cfg.test.is_bw();
        let mut window = if lat {
            1
        } else {
            cfg.tx_depth.max(1).min(layout.sq.max_post)
        };
        if verb == Verb::Send {
            window = window.min(RQ_WQES as u32);
        }
        if let Some(b) = inflight {
            let fit = (b / size as u64).clamp(2, u32::MAX as u64) as u32;
            window = window.min(fit);
        }
        let pairs = if lat { 1 } else { cfg.qps.max(1) as usize };
        // Areas share AREA_BYTES over the pairs; at least one slot each.
        let per_pair = AREA_BYTES / pairs / slot_bytes;
        let slots = (window as usize).min(per_pair.max(1));
        // A latency run may post before the previous CQE arrived; a few
        // WRs of slack keep it from waiting on that.
        let cap = if lat {
            layout.sq.max_post.min(8)
        } else {
            window
        };
        let areas = match (cfg.test, verb) {
            (PerfTest::WriteLat | PerfTest::SendLat, _) => Areas {
                a_src: true,
                a_dst: true,
                b_src: true,
                b_dst: true,
            },
            (_, Verb::Read | Verb::Atomic) => Areas {
                a_src: false,
                a_dst: true,
                b_src: true,
                b_dst: false,
            },
            _ => Areas {
                a_src: true,
                a_dst: false,
                b_src: false,
                b_dst: true,
            },
        };
        Ok(Plan {
            layout,
            conn: cfg.conn,
            verb,
            size,
            k: if verb == Verb::Atomic {
                1
            } else {
                cfg.sge.max(1).min(size as u32)
            },
            inline: cfg.inline && matches!(verb, Verb::Write | Verb::Send),
            atomics,
            window,
            cap,
            slots,
            slot_bytes,
            recv_off,
            pairs,
            areas,
            iters: if cfg.duration.is_some() {
                RESERVE_MAX
            } else {
                cfg.iters
            },
        })
    }

    /// Slot bytes one side allocates (its areas).
    pub fn side_bytes(&self, a: bool) -> u64 {
        let n = if a {
            self.areas.a_src as u64 + self.areas.a_dst as u64
        } else {
            self.areas.b_src as u64 + self.areas.b_dst as u64
        };
        n * (self.slots * self.slot_bytes) as u64
    }

    /// Host memory the run's queues and buffers take, about: per pair two
    /// send rings, receive rings and CQs (64 B CQEs) with their host-side
    /// WR records, plus the slots.
    pub fn memory_estimate(&self) -> u64 {
        let l = &self.layout;
        let ncqe = (self.cap as usize + RQ_WQES).next_power_of_two() as u64;
        let per_side = l.sq.buf_bytes
            + (l.rq.wqe_cnt as u64) * (l.rq.wqe_size as u64)
            + ncqe * 64
            + l.sq.wqe_cnt as u64 * 64
            + RQ_WQES as u64 * 16;
        let slots = self.side_bytes(true) + self.side_bytes(false);
        // Post and completion stamps (8 B each per iteration).
        let stamps = 16 * self.iters;
        self.pairs as u64 * (2 * per_side + slots + stamps)
    }
}

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
    /// Creates and connects `plan.pairs` QP pairs with their registered
    /// slots. What it created stays until [`close`](Self::close).
    fn open(&mut self, cfg: &PerfRunConfig, plan: &Plan) -> anyhow::Result<Vec<Pair>>;
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

impl<D: PerfDevice> PerfBackend for D {
    fn name(&self) -> String {
        PerfDevice::name(self)
    }
    fn timing_note(&self) -> String {
        PerfDevice::timing_note(self)
    }
    fn run(&mut self, cfg: &PerfRunConfig) -> anyhow::Result<PerfRunReport> {
        run_on(self, cfg)
    }
    fn notes(&self, cfg: &PerfRunConfig) -> Vec<String> {
        let mut v = Vec::new();
        let modeled = self.variance_note().is_some();
        if cfg.duration.is_some() {
            v.push(if modeled {
                format!(
                    "Duration        : -D {} bounds WALL-CLOCK time here: WRs are posted for {} s of \
                     real time; the figures are in the device's modeled time",
                    cfg.duration.unwrap_or(0),
                    cfg.duration.unwrap_or(0)
                )
            } else {
                format!("Duration        : -D {} s of wall-clock time", cfg.duration.unwrap_or(0))
            });
        }
        if let Ok(p) = Plan::with_inflight(cfg, &self.caps(cfg), self.inflight_bytes()) {
            if cfg.test.is_bw() && p.window < cfg.tx_depth {
                v.push(format!(
                    "In flight       : at most {} WRs per QP (TX depth {}): {}",
                    p.window,
                    cfg.tx_depth,
                    match self.inflight_bytes() {
                        Some(b) if p.window as u64 == (b / p.size as u64).max(2) => format!(
                            "the simulator holds each in-flight WR's payload, capped at {} MiB per QP",
                            b >> 20
                        ),
                        _ => "the send queue's max_post or the receive queue bounds it".into(),
                    }
                ));
            }
        }
        if let Some(n) = self.variance_note() {
            v.push(format!("Variance        : {n}"));
        }
        v
    }
    fn refuse(&self, cfg: &PerfRunConfig, args: &PerfArgs) -> Option<String> {
        if let Some(why) = PerfDevice::refuse(self, cfg, args) {
            return Some(why);
        }
        // A QP the device cannot create (its sizing, e.g. -I beyond the
        // largest WQE) is refused before anything runs; perftest stops at
        // "Couldn't create QP" for the same request.
        match Plan::with_inflight(cfg, &self.caps(cfg), self.inflight_bytes()) {
            Err(e) if e.downcast_ref::<QpRejected>().is_some() => {
                Some(format!("{e} (perftest: Couldn't create QP)"))
            }
            // More memory than the backend allows: refused before any of
            // it is allocated.
            Ok(p) => memory_check(&p, cfg, self.memory_limit())
                .err()
                .map(|e| e.to_string()),
            _ => None,
        }
    }
}

/// Refuses a plan that needs more memory than `limit`.
fn memory_check(plan: &Plan, cfg: &PerfRunConfig, limit: Option<u64>) -> anyhow::Result<()> {
    if let Some(limit) = limit {
        let need = plan.memory_estimate();
        if need > limit {
            return Err(anyhow::Error::new(TooMuchMemory {
                need,
                limit,
                what: format!(
                    "-q {} -s {} ({} QP pairs, {} B slots)",
                    cfg.qps, cfg.size, plan.pairs, plan.slot_bytes
                ),
            }));
        }
    }
    Ok(())
}

/// Runs `cfg` on `dev`: plan, open, the engine, close.
pub fn run_on<D: PerfDevice + ?Sized>(
    dev: &mut D,
    cfg: &PerfRunConfig,
) -> anyhow::Result<PerfRunReport> {
    let caps = dev.caps(cfg);
    let plan = Plan::with_inflight(cfg, &caps, dev.inflight_bytes())?;
    memory_check(&plan, cfg, dev.memory_limit())?;
    dev.timer().set_loss(cfg.loss)?;
    dev.timer().begin_run();
    let pairs = match dev.open(cfg, &plan) {
        Ok(p) => p,
        Err(e) => {
            let _ = dev.close();
            return Err(e);
        }
    };
    let (local, remote) = (pairs[0].local.clone(), pairs[0].remote.clone());
    let r = {
        let mut e = Engine::new(dev.timer(), pairs, &plan, cfg);
        e.run().map(|()| e.finish(&plan))
    };
    let c = dev.close();
    let mut rep = r?;
    c?;
    rep.backend = PerfDevice::name(dev);
    rep.local = Some(local);
    rep.remote = Some(remote);
    dev.annotate(cfg, &mut rep);
    Ok(rep)
}

/// SGE lists of one pair's slots (`k`-way splits of the message).
struct Lists {
    a_src: Vec<Vec<Sge>>,
    a_dst: Vec<Vec<Sge>>,
    b_src: Vec<Vec<Sge>>,
}

fn split(s: &Slot, size: usize, k: u32) -> Vec<Sge> {
    let k = k.max(1) as usize;
    let base = size / k;
    let mut off = 0;
    (0..k)
        .map(|i| {
            let len = if i == k - 1 { size - off } else { base };
            let g = Sge {
                addr: s.addr + off as u64,
                length: len as u32,
                lkey: s.key,
            };
            off += len;
            g
        })
        .collect()
}

/// One batch of a bandwidth run and how it posts: the verb, message size,
/// slots per area, the fast path (`post_rdma`: neither inline nor UD),
/// the flags of an unsignaled WR, UD and the peer's QPN, the batch's
/// first iteration and each WR's signaled flag.
struct Batch<'f> {
    verb: Verb,
    size: usize,
    slots: u64,
    fast: bool,
    inline_flags: SendFlags,
    ud: bool,
    qpn_b: u32,
    first: u64,
    signaled: &'f [bool],
}

/// The WRs of batch `b` over the pair's slots (each source stamped with
/// its iteration): RDMA WRs on the fast path, send WRs otherwise (the
/// other list stays empty).
#[inline(always)]
fn build_batch<'a>(
    b: &Batch<'_>,
    a_src: &[Slot],
    b_src: &[Slot],
    b_dst: &[Slot],
    sg: &'a Lists,
    av: &'a AddressVector,
) -> (Vec<RdmaWr<'a>>, Vec<SendWr<'a>>) {
    let (verb, size, slots) = (b.verb, b.size, b.slots);
    let m = b.signaled.len() as u64;
    let mut rbatch: Vec<RdmaWr<'_>> = Vec::with_capacity(m as usize);
    let mut sbatch: Vec<SendWr<'_>> = Vec::with_capacity(m as usize);
    for (j, it) in (b.first..b.first + m).enumerate() {
        let slot = (it % slots) as usize;
        let sig = b.signaled[j];
        let remote = match verb {
            Verb::Read => {
                stamp(&b_src[slot], size, it);
                b_src[slot]
            }
            _ => {
                stamp(&a_src[slot], size, it);
                b_dst[slot]
            }
        };
        let sgl = match verb {
            Verb::Read => &sg.a_dst[slot][..],
            _ => &sg.a_src[slot][..],
        };
        if b.fast {
            rbatch.push(RdmaWr {
                wr_id: it,
                remote_addr: remote.addr,
                rkey: remote.key,
                sgl,
                signaled: sig,
            });
        } else {
            let op = match verb {
                Verb::Send => SendOp::Send,
                _ => SendOp::Write {
                    remote_addr: remote.addr,
                    rkey: remote.key,
                },
            };
            let mut fl = b.inline_flags;
            if sig {
                fl |= SendFlags::SIGNALED;
            }
            let mut wr = SendWr::new(it, op, sgl).with_flags(fl);
            if b.ud {
                wr = wr.with_ud(UdDest {
                    av,
                    remote_qpn: b.qpn_b,
                    remote_qkey: QKEY,
                });
            }
            sbatch.push(wr);
        }
    }
    (rbatch, sbatch)
}

/// The run state of one pair.
struct PairRun {
    p: Pair,
    sg: Lists,
    /// WRs posted / retired per side (retired = through the last CQE's WR;
    /// `wr_id` is the side's posting sequence number).
    a_posted: u64,
    b_posted: u64,
    a_retired: u64,
    b_retired: u64,
    /// Receive completions not consumed yet: (wr_id = slot, byte_len).
    a_recvs: VecDeque<(u64, u32)>,
    b_recvs: VecDeque<(u64, u32)>,
    /// The iteration the next SEND received by B should carry.
    rx_next: u64,
    /// Bandwidth tests: iterations posted, completed, received (SEND),
    /// presumed lost (unreliable SEND).
    posted: u64,
    completed: u64,
    received: u64,
    lost: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Who {
    A,
    B,
}

/// The mutable state of one run.
struct Engine<'t> {
    timer: &'t mut dyn Timer,
    pairs: Vec<PairRun>,
    body: Vec<u8>,
    test: PerfTest,
    verb: Verb,
    iters: u64,
    /// `-D`: stop posting at this wall-clock instant.
    stop_at: Option<Instant>,
    cq_mod: u64,
    post_list: u32,
    window: u32,
    cap: u32,
    timeout_ns: u64,
    size: usize,
    slots: usize,
    recv_off: usize,
    inline: bool,
    ud: bool,
    reliable: bool,
    rep: PerfRunReport,
    wcs: [WorkCompletion; 32],
    post_ns_total: f64,
    post_wrs: u64,
    doorbells: u64,
    cqes: u64,
    wqe_seen: bool,
}

impl<'t> Engine<'t> {
    fn new(timer: &'t mut dyn Timer, pairs: Vec<Pair>, plan: &Plan, cfg: &PerfRunConfig) -> Self {
        let body: Vec<u8> = (0..plan.size).map(|j| ((j * 7) % 251 + 1) as u8).collect();
        let pairs = pairs
            .into_iter()
            .map(|p| {
                // Source slots hold the body; the tags are written per iteration.
                for s in p.a_src.iter().chain(&p.b_src) {
                    // SAFETY: each slot holds slot_bytes >= size bytes of
                    // live registered memory no WR uses yet.
                    unsafe {
                        std::ptr::copy_nonoverlapping(body.as_ptr(), s.cpu.as_ptr(), plan.size)
                    };
                }
                let sg = |v: &[Slot]| v.iter().map(|s| split(s, plan.size, plan.k)).collect();
                PairRun {
                    sg: Lists {
                        a_src: sg(&p.a_src),
                        a_dst: sg(&p.a_dst),
                        b_src: sg(&p.b_src),
                    },
                    p,
                    a_posted: 0,
                    b_posted: 0,
                    a_retired: 0,
                    b_retired: 0,
                    a_recvs: VecDeque::new(),
                    b_recvs: VecDeque::new(),
                    rx_next: 0,
                    posted: 0,
                    completed: 0,
                    received: 0,
                    lost: 0,
                }
            })
            .collect();
        Engine {
            timer,
            pairs,
            body,
            test: cfg.test,
            verb: plan.verb,
            iters: if cfg.duration.is_some() {
                u64::MAX / 4
            } else {
                cfg.iters.max(1)
            },
            stop_at: cfg
                .duration
                .map(|d| Instant::now() + Duration::from_secs(d)),
            cq_mod: cfg.cq_mod.max(1) as u64,
            post_list: cfg.post_list.max(1).min(plan.window),
            window: plan.window,
            cap: plan.cap,
            timeout_ns: DEFAULT_TIMEOUT_NS,
            size: plan.size,
            slots: plan.slots,
            recv_off: plan.recv_off,
            inline: plan.inline,
            ud: plan.conn == Conn::Ud,
            reliable: plan.conn == Conn::Rc,
            rep: PerfRunReport {
                tick_hz: 1e9,
                ring_bytes: plan.layout.sq.buf_bytes,
                ..Default::default()
            },
            wcs: [WorkCompletion::default(); 32],
            post_ns_total: 0.0,
            post_wrs: 0,
            doorbells: 0,
            cqes: 0,
            wqe_seen: false,
        }
    }

    /// `-D` ran out: stop posting (what is in flight still completes).
    fn out_of_time(&self) -> bool {
        self.stop_at.is_some_and(|t| Instant::now() >= t)
    }

    fn side(&mut self, q: usize, w: Who) -> &mut dyn SideOps {
        let p = &mut self.pairs[q].p;
        match w {
            Who::A => p.a.as_mut(),
            Who::B => p.b.as_mut(),
        }
    }

    fn qpn(&self, q: usize, w: Who) -> u32 {
        let p = &self.pairs[q].p;
        match w {
            Who::A => p.a.qpn(),
            Who::B => p.b.qpn(),
        }
    }

    fn outstanding(&self, q: usize, w: Who) -> u32 {
        let p = &self.pairs[q].p;
        match w {
            Who::A => p.a.outstanding(),
            Who::B => p.b.outstanding(),
        }
    }

    /// Polls `w`'s CQ of pair `q` once: send completions retire WRs,
    /// receive completions are queued. An error completion ends the run.
    fn poll(&mut self, q: usize, w: Who) -> anyhow::Result<usize> {
        let pr = &mut self.pairs[q];
        let r = match w {
            Who::A => pr.p.a.poll(&mut self.wcs),
            Who::B => pr.p.b.poll(&mut self.wcs),
        };
        let n = r.map_err(|e| anyhow!("polling the CQ of QP {:#x}: {e}", self.qpn(q, w)))?;
        if n == 0 {
            return Ok(0);
        }
        self.timer.cqes_polled(n);
        self.cqes += n as u64;
        for k in 0..n {
            let wc = self.wcs[k];
            if wc.status != WcStatus::Success {
                self.rep.completed_err += 1;
                bail!(
                    "{}: WR {} on QP {:#x} completed with {} ({}, vendor syndrome {:#x})",
                    test_name(self.test),
                    wc.wr_id,
                    self.qpn(q, w),
                    wc.status,
                    wc.status.description(),
                    wc.vendor_err
                );
            }
            let recv = matches!(wc.opcode, WcOpcode::Recv);
            let pr = &mut self.pairs[q];
            match (w, recv) {
                (Who::A, true) => pr.a_recvs.push_back((wc.wr_id, wc.byte_len)),
                (Who::B, true) => pr.b_recvs.push_back((wc.wr_id, wc.byte_len)),
                (Who::A, false) => pr.a_retired = pr.a_retired.max(wc.wr_id + 1),
                (Who::B, false) => pr.b_retired = pr.b_retired.max(wc.wr_id + 1),
            }
        }
        Ok(n)
    }

    /// Busy-waits until `done` holds, relaxing in between; fails after
    /// the timeout with `what()` in the message.
    fn wait(
        &mut self,
        what: &dyn Fn(&Self) -> String,
        mut done: impl FnMut(&mut Self) -> anyhow::Result<bool>,
    ) -> anyhow::Result<()> {
        let deadline = self.timer.now_ns().saturating_add(self.timeout_ns);
        loop {
            if done(self)? {
                return Ok(());
            }
            if self.timer.now_ns() >= deadline {
                return Err(self.timeout(&what(self)));
            }
            self.timer.relax();
        }
    }

    fn timeout(&self, what: &str) -> anyhow::Error {
        anyhow!(
            "{}: timed out after {} ms ({}) waiting for {what}",
            test_name(self.test),
            self.timeout_ns / 1_000_000,
            if self.timer.modeled() {
                "virtual time"
            } else {
                "wall clock"
            },
        )
    }

    /// Waits until `w`'s send queue of pair `q` may take one more WR.
    fn room(&mut self, q: usize, w: Who) -> anyhow::Result<()> {
        if self.outstanding(q, w) < self.cap {
            return Ok(());
        }
        let max = self.cap;
        self.wait(
            &|e: &Self| {
                format!(
                    "a send completion on QP {:#x} ({} WRs outstanding, at most {max} may be)",
                    e.qpn(q, w),
                    e.outstanding(q, w),
                )
            },
            |e| {
                e.poll(q, w)?;
                Ok(e.outstanding(q, w) < max)
            },
        )
    }

    /// Signal this WR? Every `cq_mod`-th, the last of the run, and any WR
    /// that fills the send window (or it could never drain).
    fn signal(&self, seq: u64, in_flight_after: u64, last: bool) -> bool {
        last || (seq + 1).is_multiple_of(self.cq_mod) || in_flight_after >= self.cap as u64
    }

    /// Posts `nwr` WRs on `w` of pair `q` through `f`, timing the call;
    /// the first post of A reads its WQE back from the ring. Returns the
    /// post stamp.
    fn post_timed(
        &mut self,
        q: usize,
        w: Who,
        nwr: usize,
        f: impl FnOnce(&mut dyn SideOps) -> Result<(), PostError>,
    ) -> anyhow::Result<u64> {
        let before = self.side(q, w).cur_post();
        let t0 = self.timer.now_ns();
        let r = f(self.side(q, w));
        let t1 = self.timer.now_ns();
        r.map_err(|e| {
            anyhow!(
                "{}: posting on QP {:#x} failed: {e}",
                test_name(self.test),
                self.qpn(q, w)
            )
        })?;
        self.post_ns_total += t1.saturating_sub(t0) as f64;
        self.post_wrs += nwr as u64;
        self.doorbells += 1;
        self.rep.posted += nwr as u64;
        if !self.wqe_seen && w == Who::A {
            self.wqe_seen = true;
            let s = self.side(q, w);
            let bbs = s.cur_post().wrapping_sub(before);
            let ds = s.wqe_ds(before);
            self.rep.wqe_bytes = 16 * ds;
            self.rep.wqebbs = bbs / nwr.max(1) as u32;
        }
        let pr = &mut self.pairs[q];
        match w {
            Who::A => pr.a_posted += nwr as u64,
            Who::B => pr.b_posted += nwr as u64,
        }
        Ok(t0)
    }

    fn flags(&self, signaled: bool) -> SendFlags {
        let mut f = SendFlags::empty();
        if self.inline {
            f |= SendFlags::INLINE;
        }
        if signaled {
            f |= SendFlags::SIGNALED;
        }
        f
    }

    fn post_recv(&mut self, q: usize, w: Who, slot: usize) -> anyhow::Result<()> {
        let p = &self.pairs[q].p;
        let s = match w {
            Who::A => p.a_dst[slot],
            Who::B => p.b_dst[slot],
        };
        let sge = Sge {
            addr: s.addr,
            length: (self.size + self.recv_off) as u32,
            lkey: s.key,
        };
        self.side(q, w).post_recv(slot as u64, sge)
    }

    fn run(&mut self) -> anyhow::Result<()> {
        match self.test {
            PerfTest::WriteLat | PerfTest::SendLat => self.ping_pong(),
            PerfTest::ReadLat | PerfTest::AtomicLat => self.op_lat(),
            PerfTest::WriteBw | PerfTest::SendBw | PerfTest::ReadBw => self.bw(),
        }?;
        // Every WR posted completes: wait for the last signaled ones.
        for q in 0..self.pairs.len() {
            self.wait(
                &|e: &Self| {
                    let p = &e.pairs[q];
                    format!(
                        "the last send completions ({} of {} WRs retired on QP {:#x}, {} of {} on QP {:#x})",
                        p.a_retired,
                        p.a_posted,
                        p.p.a.qpn(),
                        p.b_retired,
                        p.b_posted,
                        p.p.b.qpn()
                    )
                },
                |e| {
                    e.poll(q, Who::A)?;
                    e.poll(q, Who::B)?;
                    let p = &e.pairs[q];
                    Ok(p.a_retired >= p.a_posted && p.b_retired >= p.b_posted)
                },
            )?;
        }
        self.rep.completed_ok = self.pairs.iter().map(|p| p.a_retired + p.b_retired).sum();
        Ok(())
    }

    /// Records one round trip / operation time.
    fn sample(&mut self, t: &mut u64, ns: u64) {
        *t += ns;
        self.push_posted(*t);
        if self.keeps(self.rep.latency_samples_ns.len()) {
            self.rep.latency_samples_ns.push(ns as f64 / self.rtt());
        } else {
            self.rep.beyond.samples += 1;
        }
    }

    /// Whether a stamp list of `len` entries takes another: always, but
    /// in a `-D` run only up to [`RESERVE_MAX`] (the rest is counted in
    /// `rep.beyond`, so memory does not grow with the duration).
    fn keeps(&self, len: usize) -> bool {
        self.stop_at.is_none() || (len as u64) < RESERVE_MAX
    }

    /// Records a post stamp (see [`Self::keeps`]).
    fn push_posted(&mut self, t: u64) {
        if self.keeps(self.rep.tposted.len()) {
            self.rep.tposted.push(t);
        } else {
            self.rep.beyond.posted += 1;
            self.rep.beyond.last_posted = t;
        }
    }

    /// Records a completion stamp (see [`Self::keeps`]).
    fn push_completed(&mut self, t: u64) {
        if self.keeps(self.rep.tcompleted.len()) {
            self.rep.tcompleted.push(t);
        } else {
            self.rep.beyond.completed += 1;
            self.rep.beyond.last_completed = t;
        }
    }

    fn rtt(&self) -> f64 {
        self.verb.rtt_factor() as f64
    }

    /// Posts the ping (A) or pong (B) of a ping-pong iteration.
    fn post_pp(&mut self, w: Who, last: bool) -> anyhow::Result<u64> {
        self.room(0, w)?;
        let (seq, out) = match w {
            Who::A => (self.pairs[0].a_posted, self.outstanding(0, Who::A)),
            Who::B => (self.pairs[0].b_posted, self.outstanding(0, Who::B)),
        };
        let sig = self.signal(seq, out as u64 + 1, last);
        let flags = self.flags(sig);
        let (verb, ud) = (self.verb, self.ud);
        let pr = &mut self.pairs[0];
        let (qa, qb) = (pr.p.a.qpn(), pr.p.b.qpn());
        let (sgl, dst, peer) = match w {
            Who::A => (&pr.sg.a_src[0], pr.p.b_dst[0], qb),
            Who::B => (&pr.sg.b_src[0], pr.p.a_dst[0], qa),
        };
        let op = if verb == Verb::Send {
            SendOp::Send
        } else {
            SendOp::Write {
                remote_addr: dst.addr,
                rkey: dst.key,
            }
        };
        let sgl = sgl.clone();
        let av = pr.p.av;
        let mut wr = SendWr::new(seq, op, &sgl).with_flags(flags);
        if ud {
            wr = wr.with_ud(UdDest {
                av: &av,
                remote_qpn: peer,
                remote_qkey: QKEY,
            });
        }
        self.post_timed(0, w, 1, |s| s.post(&[wr]))
    }

    /// Waits for iteration `i`'s message to arrive at `w`: the last byte of
    /// its buffer changing (WRITE) or a receive completion (SEND).
    fn arrive(&mut self, w: Who, i: u64) -> anyhow::Result<()> {
        let size = self.size;
        let p = &self.pairs[0].p;
        let (dst, from, to) = match w {
            Who::A => (p.a_dst[0], p.b.qpn(), p.a.qpn()),
            Who::B => (p.b_dst[0], p.a.qpn(), p.b.qpn()),
        };
        if self.verb == Verb::Write {
            let want = last_byte(size, i);
            return self.wait(
                &|_| {
                    format!(
                        "the RDMA WRITE of iteration {i} (QP {from:#x} -> QP {to:#x}) to land: the last \
                         byte of the target buffer is {:#04x}, expected {want:#04x}",
                        read_byte(&dst, size - 1)
                    )
                },
                |_| Ok(read_byte(&dst, size - 1) == want),
            );
        }
        let recvs = |e: &Self| match w {
            Who::A => e.pairs[0].a_recvs.len(),
            Who::B => e.pairs[0].b_recvs.len(),
        };
        self.wait(
            &|_| {
                format!(
                    "the receive completion of iteration {i}'s SEND (QP {from:#x} -> QP {to:#x})"
                )
            },
            |e| {
                if recvs(e) == 0 {
                    e.poll(0, w)?;
                }
                Ok(recvs(e) > 0)
            },
        )?;
        let pr = &mut self.pairs[0];
        let (_slot, len) = match w {
            Who::A => pr.a_recvs.pop_front(),
            Who::B => pr.b_recvs.pop_front(),
        }
        .unwrap_or_default();
        let want = (size + self.recv_off) as u32;
        if len != want {
            // Short or long receive: every byte counts as wrong.
            self.rep.mismatches += size as u64;
        }
        Ok(())
    }

    /// write-lat / send-lat: A → B, then B → A; sample = round trip / 2.
    fn ping_pong(&mut self) -> anyhow::Result<()> {
        let size = self.size;
        let send = self.verb == Verb::Send;
        if send {
            self.post_recv(0, Who::A, 0)?;
            self.post_recv(0, Who::B, 0)?;
        }
        let mut t = 0u64;
        self.rep.tposted.push(0);
        let mut i = 0;
        while i < self.iters && !(i >= 5 && self.out_of_time()) {
            let last = i + 1 == self.iters;
            let (a_src, b_src) = (self.pairs[0].p.a_src[0], self.pairs[0].p.b_src[0]);
            stamp(&a_src, size, i);
            stamp(&b_src, size, i);
            self.room(0, Who::A)?;
            self.room(0, Who::B)?;
            let t0 = self.post_pp(Who::A, last)?;
            self.arrive(Who::B, i)?;
            self.post_pp(Who::B, last)?;
            if send {
                self.post_recv(0, Who::B, 0)?;
            }
            self.arrive(Who::A, i)?;
            let rtt = self.timer.now_ns().saturating_sub(t0);
            self.sample(&mut t, rtt);
            if send {
                self.post_recv(0, Who::A, 0)?;
            }
            let off = self.recv_off;
            let p = &self.pairs[0].p;
            for d in [p.b_dst[0], p.a_dst[0]] {
                // SAFETY: off + size <= slot_bytes: inside the slot.
                let at = unsafe { d.cpu.as_ptr().add(off) };
                self.rep.mismatches += mismatches(at, size, i, &self.body, 1, i + 1);
            }
            self.poll(0, Who::A)?;
            self.poll(0, Who::B)?;
            i += 1;
        }
        Ok(())
    }

    /// read-lat / atomic-lat: one operation at a time, post → completion.
    fn op_lat(&mut self) -> anyhow::Result<()> {
        let size = self.size;
        let atomic = self.verb == Verb::Atomic;
        let src = self.pairs[0].p.b_src[0];
        let dst = self.pairs[0].p.a_dst[0];
        if atomic {
            // The remote counter starts at 0.
            // SAFETY: the slot holds at least 64 bytes; no WR uses it yet.
            unsafe { std::ptr::write_bytes(src.cpu.as_ptr(), 0, 8) };
        }
        let atomic_sge = [Sge {
            addr: dst.addr,
            length: 8,
            lkey: dst.key,
        }];
        let read_sgl = self.pairs[0].sg.a_dst[0].clone();
        let mut t = 0u64;
        self.rep.tposted.push(0);
        let mut i = 0;
        while i < self.iters && !(i >= 5 && self.out_of_time()) {
            if !atomic {
                stamp(&src, size, i);
            }
            self.room(0, Who::A)?;
            let seq = self.pairs[0].a_posted;
            let (op, sgl) = if atomic {
                (
                    SendOp::FetchAdd {
                        remote_addr: src.addr,
                        rkey: src.key,
                        add: 1,
                    },
                    &atomic_sge[..],
                )
            } else {
                (
                    SendOp::Read {
                        remote_addr: src.addr,
                        rkey: src.key,
                    },
                    &read_sgl[..],
                )
            };
            let wr = SendWr::new(seq, op, sgl).with_flags(SendFlags::SIGNALED);
            let t0 = self.post_timed(0, Who::A, 1, |s| s.post(&[wr]))?;
            let name = if atomic { "fetch-and-add" } else { "RDMA READ" };
            let (qa, qb) = (self.qpn(0, Who::A), self.qpn(0, Who::B));
            self.wait(
                &|_| {
                    format!(
                        "the completion of the {name} of iteration {i} (QP {qa:#x} -> QP {qb:#x})"
                    )
                },
                |e| {
                    e.poll(0, Who::A)?;
                    Ok(e.pairs[0].a_retired > seq)
                },
            )?;
            let took = self.timer.now_ns().saturating_sub(t0);
            self.sample(&mut t, took);
            self.rep.mismatches += if atomic {
                atomic_mismatches(dst.cpu.as_ptr(), i)
            } else {
                mismatches(dst.cpu.as_ptr(), size, i, &self.body, 1, i + 1)
            };
            i += 1;
        }
        if atomic {
            self.rep.mismatches += atomic_mismatches(src.cpu.as_ptr(), i);
        }
        Ok(())
    }

    /// Posts whole batches on pair `q` while its window (and, for SEND,
    /// its receives) allow. Returns whether anything was posted.
    fn post_batches(
        &mut self,
        q: usize,
        n: u64,
        t_first: &mut Option<u64>,
    ) -> anyhow::Result<bool> {
        let size = self.size;
        let slots = self.slots as u64;
        let window = self.window as u64;
        let verb = self.verb;
        let send = verb == Verb::Send;
        let rx_slots = if send { slots.min(RQ_WQES as u64) } else { 0 };
        let fast = !self.inline && !self.ud;
        let rop = match verb {
            Verb::Write => RdmaOp::Write,
            Verb::Read => RdmaOp::Read,
            _ => RdmaOp::Send,
        };
        let mut any = false;
        while let Some((posted, m, flags)) = self.next_batch(q, n, window, send, rx_slots) {
            let (inline_flags, ud) = (self.flags(false), self.ud);
            let test = self.test;
            let PairRun { p, sg, .. } = &mut self.pairs[q];
            let Pair {
                a,
                b,
                a_src,
                b_src,
                b_dst,
                av,
                ..
            } = p;
            let batch = Batch {
                verb,
                size,
                slots,
                fast,
                inline_flags,
                ud,
                qpn_b: b.qpn(),
                first: posted,
                signaled: &flags,
            };
            let (rbatch, sbatch) = build_batch(&batch, a_src, b_src, b_dst, sg, av);
            let before = a.cur_post();
            let t = self.timer.now_ns();
            let r = if fast {
                // SAFETY: every SGE comes from the slot tables of A's
                // registered areas (the pair), alive until the queues are
                // dropped.
                unsafe { a.post_rdma(rop, &rbatch) }
            } else {
                a.post(&sbatch)
            };
            let t1 = self.timer.now_ns();
            r.map_err(|e| {
                anyhow!(
                    "{}: posting on QP {:#x} failed: {e}",
                    test_name(test),
                    a.qpn()
                )
            })?;
            if !self.wqe_seen {
                self.wqe_seen = true;
                let bbs = a.cur_post().wrapping_sub(before);
                self.rep.wqe_bytes = 16 * a.wqe_ds(before);
                self.rep.wqebbs = bbs / m.max(1) as u32;
            }
            drop(rbatch);
            drop(sbatch);
            self.account_batch(q, m, (t, t1), t_first);
            any = true;
        }
        Ok(any)
    }

    /// The next batch pair `q` may post of its `n` WRs: (its first
    /// iteration, its WR count, each WR's signaled flag); `None` when all
    /// are posted or the `window` (for SEND: the `rx_slots` receives) is
    /// full.
    #[inline(always)]
    fn next_batch(
        &self,
        q: usize,
        n: u64,
        window: u64,
        send: bool,
        rx_slots: u64,
    ) -> Option<(u64, u64, Vec<bool>)> {
        let pr = &self.pairs[q];
        let (posted, completed) = (pr.posted, pr.completed);
        if posted >= n {
            return None;
        }
        let m = (self.post_list as u64).min(n - posted);
        let busy_rx = (posted + m).saturating_sub(pr.received + pr.lost);
        if posted + m - completed > window || (send && busy_rx > rx_slots) {
            return None;
        }
        let flags: Vec<bool> = (posted..posted + m)
            .map(|it| self.signal(it, it + 1 - completed, it + 1 == n))
            .collect();
        Some((posted, m, flags))
    }

    /// Books a batch of `m` WRs pair `q` posted in `timed` (the stamps
    /// before and after the post call): the post cost, the counters, and
    /// one post stamp per WR relative to the run's first post.
    #[inline(always)]
    fn account_batch(&mut self, q: usize, m: u64, timed: (u64, u64), t_first: &mut Option<u64>) {
        let (t, t1) = timed;
        self.post_ns_total += t1.saturating_sub(t) as f64;
        self.post_wrs += m;
        self.doorbells += 1;
        self.rep.posted += m;
        self.pairs[q].a_posted += m;
        let t0 = *t_first.get_or_insert(t);
        for _ in 0..m {
            self.push_posted(t - t0);
        }
        self.pairs[q].posted += m;
    }

    /// write-bw / send-bw / read-bw: keep up to `window` WRs in flight on
    /// every pair.
    fn bw(&mut self) -> anyhow::Result<()> {
        let mut n = self.iters;
        let send = self.verb == Verb::Send;
        let nq = self.pairs.len();
        self.bw_prepare(n)?;
        let mut t_first: Option<u64> = None;
        let mut last_progress = self.timer.now_ns();
        let reliable = self.reliable;
        let mut stopping = false;
        loop {
            if !stopping && self.stop_at.is_some() && self.out_of_time() {
                // -D ran out: every pair ends one WR past the furthest
                // (that WR is signaled, so everything before it retires).
                stopping = true;
                n = self
                    .pairs
                    .iter()
                    .map(|p| p.posted)
                    .max()
                    .unwrap_or(0)
                    .saturating_add(1)
                    .max(5);
            }
            let done = self
                .pairs
                .iter()
                .all(|p| p.completed >= n && (!send || !reliable || p.received >= n));
            if done {
                break;
            }
            let mut progressed = false;
            for q in 0..nq {
                progressed |= self.post_batches(q, n, &mut t_first)?;
                progressed |= self.reap_sends(q, t_first)?;
                if send {
                    progressed |= self.reap_recvs(q)?;
                }
            }
            self.after_pass(progressed, &mut last_progress, n)?;
        }
        if !reliable {
            self.settle_and_check()?;
        }
        Ok(())
    }

    /// Before a bandwidth run of `n` WRs per pair: every receive slot of
    /// each responder posted (SEND), and room for the stamps reserved.
    fn bw_prepare(&mut self, n: u64) -> anyhow::Result<()> {
        let slots = self.slots as u64;
        let send = self.verb == Verb::Send;
        let nq = self.pairs.len();
        let rx_slots = if send { slots.min(RQ_WQES as u64) } else { 0 };
        for q in 0..nq {
            for s in 0..rx_slots {
                self.post_recv(q, Who::B, s as usize)?;
            }
        }
        let total = n.saturating_mul(nq as u64).min(RESERVE_MAX);
        self.rep.tposted.reserve(total as usize);
        self.rep.tcompleted.reserve(total as usize);
        Ok(())
    }

    /// Requester completions of pair `q`: every WR through the CQE's
    /// retires, with a completion stamp (relative to `t_first`) and, on
    /// RC, the check of its payload. Returns whether any retired.
    #[inline(always)]
    fn reap_sends(&mut self, q: usize, t_first: Option<u64>) -> anyhow::Result<bool> {
        let size = self.size;
        let slots = self.slots as u64;
        let verb = self.verb;
        let reliable = self.reliable;
        // Requester completions: every WR through the CQE's retires.
        if self.poll(q, Who::A)? > 0 && self.pairs[q].a_retired > self.pairs[q].completed {
            let now = self.timer.now_ns() - t_first.unwrap_or(0);
            let (from, to) = (self.pairs[q].completed, self.pairs[q].a_retired);
            for it in from..to {
                self.push_completed(now);
                // RC: completion means the data is in place. UC/UD
                // complete on sending; they are checked at the end.
                if reliable && verb != Verb::Send {
                    let slot = (it % slots) as usize;
                    let p = &self.pairs[q].p;
                    let at = match verb {
                        Verb::Read => p.a_dst[slot].cpu.as_ptr(),
                        _ => p.b_dst[slot].cpu.as_ptr(),
                    };
                    let upto = self.pairs[q].posted;
                    self.rep.mismatches += mismatches(at, size, it, &self.body, slots, upto);
                }
            }
            self.pairs[q].completed = to;
            return Ok(true);
        }
        Ok(false)
    }

    /// Responder receives of pair `q` (SEND): check and repost. Returns
    /// whether any were consumed.
    #[inline(always)]
    fn reap_recvs(&mut self, q: usize) -> anyhow::Result<bool> {
        if self.poll(q, Who::B)? > 0 || !self.pairs[q].b_recvs.is_empty() {
            let k = self.consume_recvs(q)?;
            self.pairs[q].received += k;
            return Ok(true);
        }
        Ok(false)
    }

    /// After a pass over the pairs (of `n` WRs each): progress resets the
    /// idle time; without it, unreliable SENDs missing past the grace
    /// period are presumed lost, a wait past the time limit fails, and
    /// otherwise the timer relaxes.
    #[inline(always)]
    fn after_pass(
        &mut self,
        progressed: bool,
        last_progress: &mut u64,
        n: u64,
    ) -> anyhow::Result<()> {
        let send = self.verb == Verb::Send;
        let reliable = self.reliable;
        let now = self.timer.now_ns();
        let idle = now.saturating_sub(*last_progress);
        let lost_any = send
            && !reliable
            && idle >= LOSS_GRACE_NS
            && self
                .pairs
                .iter()
                .any(|p| p.posted.saturating_sub(p.received) > p.lost);
        if progressed {
            *last_progress = now;
        } else if lost_any {
            // Unreliable SENDs that have not arrived by now are gone:
            // their receives are free again.
            for p in &mut self.pairs {
                p.lost = p.posted.saturating_sub(p.received);
            }
            *last_progress = now;
        } else if idle >= self.timeout_ns {
            let p = &self.pairs[0];
            return Err(self.timeout(&format!(
                "completions: {} of {n} WRs completed on QP {:#x}, {} posted{}",
                p.completed,
                p.p.a.qpn(),
                p.posted,
                if send {
                    format!(", {} received on QP {:#x}", p.received, p.p.b.qpn())
                } else {
                    String::new()
                }
            )));
        } else {
            self.timer.relax();
        }
        Ok(())
    }

    /// The end of an unreliable bandwidth run: UC/UD complete before the
    /// data lands, so let it settle, then check what arrived (SENDs not
    /// received count `size` bytes each).
    fn settle_and_check(&mut self) -> anyhow::Result<()> {
        let size = self.size;
        let slots = self.slots as u64;
        let send = self.verb == Verb::Send;
        // Unreliable transports complete before the data lands: let it
        // settle, then check what arrived.
        self.timer.settle();
        for q in 0..self.pairs.len() {
            let n = self.pairs[q].posted;
            if send {
                while self.poll(q, Who::B)? > 0 {}
                let k = self.consume_recvs(q)?;
                self.pairs[q].received += k;
                self.rep.mismatches += n.saturating_sub(self.pairs[q].received) * size as u64;
            } else {
                for s in 0..slots.min(n) {
                    let it = s + (n - 1 - s) / slots * slots;
                    let at = self.pairs[q].p.b_dst[s as usize].cpu.as_ptr();
                    self.rep.mismatches += mismatches(at, size, it, &self.body, 1, it + 1);
                }
            }
        }
        Ok(())
    }

    /// Checks and reposts the receives B of pair `q` completed. Returns
    /// how many were consumed.
    fn consume_recvs(&mut self, q: usize) -> anyhow::Result<u64> {
        let mut k = 0u64;
        while let Some((slot, len)) = self.pairs[q].b_recvs.pop_front() {
            let s = self.pairs[q].p.b_dst[slot as usize];
            k += 1;
            if len as usize != self.size + self.recv_off {
                self.rep.mismatches += self.size as u64;
                self.pairs[q].rx_next += 1;
                self.post_recv(q, Who::B, slot as usize)?;
                continue;
            }
            // SAFETY: recv_off + size <= slot_bytes: inside the slot.
            let p = unsafe { s.cpu.as_ptr().add(self.recv_off) };
            // Which iteration is this? Messages name it (a tag, or under
            // 16 bytes the iteration mod 255); UC/UD may have lost some
            // in between, so the next one is the first at or after the
            // expected iteration that carries this name.
            let rx_next = self.pairs[q].rx_next;
            let posted = self.pairs[q].posted;
            let mut it = rx_next;
            if self.size >= 2 * TAG {
                let mut t = [0u8; TAG];
                // SAFETY: TAG <= size bytes at p, inside the slot.
                unsafe { std::ptr::copy_nonoverlapping(p, t.as_mut_ptr(), TAG) };
                let named = u64::from_be_bytes(t).wrapping_sub(1);
                if (rx_next..posted).contains(&named) {
                    it = named;
                }
            } else {
                let b = read_byte(&s, self.recv_off);
                if (1..=255).contains(&b) {
                    let skip = (b as u64 - 1 + 255 - rx_next % 255) % 255;
                    if rx_next + skip < posted {
                        it = rx_next + skip;
                    }
                }
            }
            self.rep.mismatches += mismatches(p, self.size, it, &self.body, 1, it + 1);
            self.pairs[q].rx_next = it + 1;
            self.post_recv(q, Who::B, slot as usize)?;
        }
        Ok(k)
    }

    /// The report, with rates and counters.
    fn finish(&mut self, plan: &Plan) -> PerfRunReport {
        let modeled = self.timer.modeled();
        let mut rep = std::mem::take(&mut self.rep);
        rep.modeled = modeled;
        rep.link_gbps = self.timer.link_gbps();
        rep.post_ns = if self.post_wrs > 0 {
            self.post_ns_total / self.post_wrs as f64
        } else {
            0.0
        };
        let size = plan.size as f64;
        if self.test.is_bw() {
            let span = rep.tcompleted.last().copied().unwrap_or(0).max(1) as f64;
            let n = rep.tcompleted.len() as f64;
            rep.msg_rate_mpps = n / span * 1e3;
            rep.bandwidth_gbps = n * size * 8.0 / span;
        } else {
            let span = rep.tposted.last().copied().unwrap_or(0).max(1) as f64;
            let n = rep.latency_samples_ns.len() as f64;
            rep.msg_rate_mpps = n / span * 1e3;
            rep.bandwidth_gbps = n * size * 8.0 / span;
            if modeled && n > 0.0 {
                rep.modeled_latency_ns = rep.latency_samples_ns.iter().sum::<f64>() / n;
            }
        }
        let mut c = BTreeMap::new();
        c.insert("doorbells".into(), self.doorbells as f64);
        c.insert("wrs_posted".into(), self.post_wrs as f64);
        c.insert("cqes_polled".into(), self.cqes as f64);
        c.insert("window".into(), self.window as f64);
        c.insert("slots".into(), plan.slots as f64);
        c.insert("posted_sge".into(), plan.k as f64);
        c.insert("sq_max_post".into(), plan.layout.sq.max_post as f64);
        c.insert("sq_wqebbs".into(), plan.layout.sq.wqe_cnt as f64);
        c.insert("sq_slot_bytes".into(), plan.layout.sq.wqe_size as f64);
        self.timer.counters(&mut c);
        rep.counters = c;
        rep
    }
}

/// The CLI name of a test.
pub fn test_name(t: PerfTest) -> &'static str {
    match t {
        PerfTest::WriteLat => "write-lat",
        PerfTest::WriteBw => "write-bw",
        PerfTest::SendLat => "send-lat",
        PerfTest::SendBw => "send-bw",
        PerfTest::ReadLat => "read-lat",
        PerfTest::ReadBw => "read-bw",
        PerfTest::AtomicLat => "atomic-lat",
    }
}

/// The iteration tag: `i + 1`, big-endian (its last byte changes every
/// iteration, which is what the write-latency receiver watches).
fn tag(i: u64) -> [u8; TAG] {
    (i + 1).to_be_bytes()
}

/// The byte of messages under 16 bytes (never 0, changes every iteration).
fn small(i: u64) -> u8 {
    (i % 255) as u8 + 1
}

/// Writes iteration `i`'s tags (or, under 16 bytes, its byte) into `s`.
fn stamp(s: &Slot, size: usize, i: u64) {
    let p = s.cpu.as_ptr();
    if size < 2 * TAG {
        // SAFETY: the slot holds at least `size` bytes; no WR reads it now.
        unsafe { std::ptr::write_bytes(p, small(i), size) };
    } else {
        let t = tag(i);
        // SAFETY: as above; both tags lie inside [0, size).
        unsafe {
            std::ptr::copy_nonoverlapping(t.as_ptr(), p, TAG);
            std::ptr::copy_nonoverlapping(t.as_ptr(), p.add(size - TAG), TAG);
        }
    }
}

/// The last byte of iteration `i`'s message.
fn last_byte(size: usize, i: u64) -> u8 {
    if size < 2 * TAG {
        small(i)
    } else {
        tag(i)[TAG - 1]
    }
}

/// Bytes of the tag at `p` that differ from every iteration `j` that may
/// be there: `j = i + m * stride < upto` (later WRs through the same slot).
fn tag_mismatches(p: *const u8, i: u64, stride: u64, upto: u64) -> u64 {
    let mut got = [0u8; TAG];
    // SAFETY: callers pass a pointer to TAG bytes inside a live slot; raw
    // reads, no reference to memory the device may write.
    unsafe { std::ptr::copy_nonoverlapping(p, got.as_mut_ptr(), TAG) };
    let named = u64::from_be_bytes(got).wrapping_sub(1);
    let stride = stride.max(1);
    if named >= i && named < upto.max(i + 1) && (named - i).is_multiple_of(stride) {
        return 0;
    }
    got.iter().zip(tag(i)).filter(|(x, y)| **x != *y).count() as u64
}

/// Bytes of the message at `p` that differ from iteration `i`'s, compared
/// in place (a 4 KiB window at a time, no copy of the message). With a
/// slot shared by every `stride`-th iteration (posted up to `upto`), a
/// tag of any of those later iterations is accepted too; the body must
/// match exactly.
fn mismatches(p: *const u8, size: usize, i: u64, body: &[u8], stride: u64, upto: u64) -> u64 {
    let mut chunk = [0u8; 4096];
    let mut diff_body = |from: usize, to: usize| -> u64 {
        let mut d = 0u64;
        let mut o = from;
        while o < to {
            let n = (to - o).min(chunk.len());
            // SAFETY: [o, o + n) lies inside the `size` bytes at `p`, a
            // live slot; raw reads, no reference to device-visible memory.
            unsafe { std::ptr::copy_nonoverlapping(p.add(o), chunk.as_mut_ptr(), n) };
            let want = &body[o..o + n];
            if chunk[..n] != *want {
                d += chunk[..n].iter().zip(want).filter(|(x, y)| x != y).count() as u64;
            }
            o += n;
        }
        d
    };
    if size < 2 * TAG {
        let stride = stride.max(1);
        let ok = |b: u8| {
            (0..=((upto.max(i + 1) - 1 - i) / stride).min(255)).any(|m| small(i + m * stride) == b)
        };
        let mut got = [0u8; 2 * TAG];
        // SAFETY: `size` bytes at `p` inside a live slot; raw reads.
        unsafe { std::ptr::copy_nonoverlapping(p, got.as_mut_ptr(), size) };
        if got[..size].iter().all(|&b| b == got[0]) && ok(got[0]) {
            return 0;
        }
        let b = small(i);
        return got[..size].iter().filter(|&&x| x != b).count() as u64;
    }
    let mid = diff_body(TAG, size - TAG);
    // SAFETY: both tags lie inside the `size` bytes at `p`.
    let tail = unsafe { p.add(size - TAG) };
    tag_mismatches(p, i, stride, upto) + tag_mismatches(tail, i, stride, upto) + mid
}

fn read_byte(s: &Slot, off: usize) -> u8 {
    // SAFETY: callers pass offsets inside the slot; a raw volatile read of
    // memory the device may be writing.
    unsafe { std::ptr::read_volatile(s.cpu.as_ptr().add(off)) }
}

/// Bytes of an 8-byte fetched value that differ from `v` (either byte
/// order: the simulator stores atomics big-endian, hardware may be set up
/// for the host's order).
fn atomic_mismatches(p: *const u8, v: u64) -> u64 {
    let mut got = [0u8; 8];
    // SAFETY: the slot holds at least 8 bytes no WR writes now.
    unsafe { std::ptr::copy_nonoverlapping(p, got.as_mut_ptr(), 8) };
    let d = |w: [u8; 8]| got.iter().zip(w).filter(|(x, y)| **x != *y).count() as u64;
    d(v.to_be_bytes()).min(d(v.to_le_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The payload check counts wrong bytes (so a broken transfer shows).
    #[test]
    fn mismatch_counter_sees_wrong_bytes() {
        let body: Vec<u8> = (0..64).map(|j| ((j * 7) % 251 + 1) as u8).collect();
        let mut buf = body.clone();
        buf[..8].copy_from_slice(&tag(41));
        buf[56..].copy_from_slice(&tag(41));
        assert_eq!(mismatches(buf.as_ptr(), 64, 41, &body, 1, 42), 0);
        // Another iteration's tags: the last byte of both tags differs.
        assert_eq!(mismatches(buf.as_ptr(), 64, 42, &body, 1, 43), 2);
        // ... unless that slot is shared and iteration 41 may be there:
        // a slot shared by every 3rd iteration holds 38's tag or later.
        assert_eq!(mismatches(buf.as_ptr(), 64, 38, &body, 3, 45), 0);
        // 40 is not among 38, 41, 44 … of stride 2.
        assert_eq!(mismatches(buf.as_ptr(), 64, 40, &body, 2, 45), 2);
        // Not yet posted: refused.
        assert_eq!(mismatches(buf.as_ptr(), 64, 38, &body, 3, 41), 2);
        buf[30] ^= 0xff;
        assert_eq!(mismatches(buf.as_ptr(), 64, 41, &body, 1, 42), 1);
        let small_msg = [small(7); 5];
        assert_eq!(mismatches(small_msg.as_ptr(), 5, 7, &body, 1, 8), 0);
        assert_eq!(mismatches(small_msg.as_ptr(), 5, 8, &body, 1, 9), 5);
        assert_eq!(atomic_mismatches(9u64.to_be_bytes().as_ptr(), 9), 0);
        assert_eq!(atomic_mismatches(9u64.to_le_bytes().as_ptr(), 9), 0);
        assert_eq!(atomic_mismatches(10u64.to_be_bytes().as_ptr(), 9), 1);
        // A large message is compared across the 4 KiB windows.
        let body: Vec<u8> = (0..10_000).map(|j| ((j * 7) % 251 + 1) as u8).collect();
        let mut big = body.clone();
        big[..8].copy_from_slice(&tag(0));
        big[10_000 - 8..].copy_from_slice(&tag(0));
        assert_eq!(mismatches(big.as_ptr(), 10_000, 0, &body, 1, 1), 0);
        big[4096] ^= 1;
        big[8191] ^= 1;
        assert_eq!(mismatches(big.as_ptr(), 10_000, 0, &body, 1, 1), 2);
    }
}
