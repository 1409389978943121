//! perftest's tests on bareverbs' own command path: `--device vfio:BDF`
//! (a ConnectX through VFIO, wall-clock time) and `--device fw-sim` (the
//! simulator behind the firmware command interface, virtual time).
//!
//! [`CmdBackend`] is generic over the core [`Device`], so the code that runs
//! against hardware is the code CI runs against the simulator. For each
//! run it creates, by command, a protection domain, DMA buffers with memory
//! keys ([`Mkey::memory_region`] gives the core's [`MemoryRegion`]), one CQ
//! per side and two QPs on port 1 connected to each other through the
//! NIC's loopback (address path with force-loopback; the simulator routes
//! `fl` to the local port). QP geometry is the exact mlx5 sizing of the
//! run's request ([`qp_layout`] with the device's own capabilities); a
//! request the device cannot create is refused with the sizing error's
//! text ([`QpRejected`]). Doorbells are 8-byte doorbells by default
//! ([`BlueFlame::doorbell_only`]); `--blueflame` copies single inline WQEs
//! through the BlueFlame register as the provider does.
//!
//! The tests run on the core's queues
//! ([`post_send`](bareverbs::sq::SendQueue::post_send),
//! [`post_rdma_raw`](bareverbs::sq::SendQueue::post_rdma_raw),
//! [`post_recv_raw`](bareverbs::rq::RecvQueue::post_recv_raw),
//! [`CompletionQueue::poll`] with the [`QueuePair`] as resolver):
//!
//! - `write-lat`: ping-pong. A WRITEs into B's buffer, the thread spins on
//!   the last byte of B's buffer changing, then B WRITEs back into A's
//!   buffer and the thread spins on A's; a sample is the round trip / 2.
//! - `send-lat`: the same ping-pong with SEND/RECV, detected by polling
//!   the receiver's CQ.
//! - `read-lat`, `atomic-lat` (fetch-and-add): one operation outstanding,
//!   a sample is the whole operation (post → completion polled).
//! - `write-bw`, `send-bw`, `read-bw`: up to `tx_depth` WRs outstanding,
//!   `post_list` WRs per doorbell, one signaled WR every `cq_mod`.
//!
//! Every message carries its iteration number (8 bytes at each end, a fixed
//! pattern between; messages under 16 bytes are one byte value per
//! iteration), and every byte that arrives is compared with what was sent
//! ([`PerfRunReport::mismatches`] counts the bytes that differ, and `size`
//! bytes per message that never arrived). Each busy-wait has a time limit
//! and fails with an error naming what never completed.
//!
//! Time comes from a [`Timer`]: [`WallTimer`] (monotonic wall clock) on
//! hardware, [`FabricTimer`] (the fabric's virtual clock, which the
//! simulator's cost model drives) on the simulator.

use super::run::{qp_request, Conn, PerfBackend, PerfRunConfig, PerfRunReport, PerfTest};
use crate::perftest::format::Verb;
use anyhow::{anyhow, bail};
use bareverbs::cmd::{Bar0, Clock, CmdError};
use bareverbs::cq::{CompletionQueue, DynCompletionQueue, PollError};
use bareverbs::cqe::{CqeSize, WcOpcode, WcStatus, WorkCompletion};
use bareverbs::device::{
    AddressPath, CqHandle, Device, DeviceConfig, DeviceError, Init2Rtr, Mkey, MkeyAccess, Pd,
    QpHandle, QpServiceType, QpSpec, Rst2Init, Rtr2Rts, UarMap,
};
use bareverbs::mr::MemoryRegion;
use bareverbs::platform::{DmaAllocator, DmaBuf, Uar, BF_OFFSET};
use bareverbs::queue_pair::QueuePair;
use bareverbs::rq::{RecvError, RecvWr, RqConfig, RqSlot};
use bareverbs::sizing::{qp_layout, QpLayout, QpType, SendOps};
use bareverbs::sq::{
    BlueFlame, PostError, RdmaOp, RdmaWr, SendFlags, SendOp, SendWr, Sge, SqConfig, SqSlot, UdDest,
};
use bareverbs::wqe::AddressVector;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

/// Receive WQEs per QP (perftest's default `rx_depth` is 512).
pub const RQ_WQES: usize = 512;
/// Largest buffer one memory key covers here (512 pages: CREATE_MKEY
/// carries its page list in the command mailboxes, which hold 608 pages).
pub const CHUNK_BYTES: usize = 2 << 20;
/// Most bytes of message slots per area (src or dst of one side).
pub const AREA_BYTES: usize = 32 << 20;
/// Default limit of every busy-wait (5 s of the timer's clock).
pub const DEFAULT_TIMEOUT_NS: u64 = 5_000_000_000;
/// Q_Key of the UD QPs.
const QKEY: u32 = 0x1111_1111;
/// UD receive buffers start with room for the GRH (IBA 11.4.1.2).
const GRH_BYTES: usize = 40;
/// Bytes of the iteration tag at each end of a message.
const TAG: usize = 8;
/// With nothing happening for this long, unreliable SENDs still in flight
/// are presumed lost (timer nanoseconds).
const LOSS_GRACE_NS: u64 = 1_000_000;

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

/// The simulator's virtual clock. A busy-wait step processes the fabric's
/// next event; with nothing pending the clock moves 1 ms, so a wait for
/// something that can no longer happen reaches its limit.
pub struct FabricTimer {
    fabric: bareverbs_sim::Fabric,
    nic: bareverbs_sim::Device,
    base: BTreeMap<String, f64>,
}

impl FabricTimer {
    /// A timer over `fabric`, reporting the counters of `nic`.
    pub fn new(fabric: bareverbs_sim::Fabric, nic: bareverbs_sim::Device) -> Self {
        FabricTimer {
            fabric,
            nic,
            base: BTreeMap::new(),
        }
    }

    /// The NIC's cumulative counters by name.
    fn totals(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(self.nic.counters()) {
            for (k, v) in m {
                if let Some(x) = v.as_f64() {
                    out.insert(k, x);
                }
            }
        }
        out
    }
}

impl Timer for FabricTimer {
    fn now_ns(&mut self) -> u64 {
        self.fabric.now_ns()
    }
    fn relax(&mut self) {
        if !self.fabric.step() {
            self.fabric.spend(1_000_000);
        }
    }
    fn cqes_polled(&mut self, n: usize) {
        let p = self.fabric.params();
        self.fabric.spend((p.t_cqe_ns * n as f64).round() as u64);
    }
    fn settle(&mut self) {
        self.fabric.run_for(10_000_000);
    }
    fn modeled(&self) -> bool {
        true
    }
    fn note(&self) -> String {
        "the same code as --device vfio:BDF, on the simulator behind the firmware command \
         interface -- times are MODELED (virtual clock), not measured on a NIC"
            .into()
    }
    fn set_loss(&mut self, loss: f64) -> anyhow::Result<()> {
        self.fabric
            .set_faults(bareverbs_sim::FaultPlan::lossy(loss.clamp(0.0, 1.0)));
        Ok(())
    }
    fn begin_run(&mut self) {
        self.base = self.totals();
    }
    fn link_gbps(&self) -> f64 {
        self.fabric.params().link_gbps
    }
    fn counters(&self, out: &mut BTreeMap<String, f64>) {
        for (k, v) in self.totals() {
            let since = v - self.base.get(&k).copied().unwrap_or(0.0);
            out.insert(format!("nic.{k}"), since);
        }
    }
}

/// Knobs of the command-path backend.
#[derive(Clone, Debug)]
pub struct CmdOptions {
    /// Copy single inline WQEs through the BlueFlame register (default:
    /// 8-byte doorbells only, the VFIO default: BARs are mapped uncached).
    pub blueflame: bool,
    /// Limit of every busy-wait, in the timer's nanoseconds.
    pub timeout_ns: u64,
    /// LID written in UD address vectors besides force-loopback (the
    /// simulator routes by it; hardware loops back on `fl`).
    pub loopback_lid: u16,
    /// The `--device` string, for names and messages.
    pub label: String,
}

impl CmdOptions {
    /// Defaults for device `label`.
    pub fn new(label: &str) -> Self {
        CmdOptions {
            blueflame: false,
            timeout_ns: DEFAULT_TIMEOUT_NS,
            loopback_lid: 0,
            label: label.to_string(),
        }
    }
}

/// The QP a run asks for cannot be created on this device; the text is
/// the sizing error's.
#[derive(Debug)]
pub struct QpRejected(pub String);

impl fmt::Display for QpRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QP creation fails: {}", self.0)
    }
}

impl std::error::Error for QpRejected {}

/// perftest's tests on a core [`Device`] through its command interface.
pub struct CmdBackend<B: Bar0 + UarMap, C: Clock, A: DmaAllocator, T: Timer> {
    dev: Option<Device<B, C, A>>,
    timer: T,
    opts: CmdOptions,
    /// Kept alive until after teardown (the VFIO mappings).
    keep: Option<Box<dyn std::any::Any>>,
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator, T: Timer> CmdBackend<B, C, A, T> {
    /// A backend over the brought-up `dev`; `keep` is dropped after the
    /// device is torn down.
    pub fn new(
        dev: Device<B, C, A>,
        timer: T,
        opts: CmdOptions,
        keep: Option<Box<dyn std::any::Any>>,
    ) -> Self {
        CmdBackend {
            dev: Some(dev),
            timer,
            opts,
            keep,
        }
    }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator, T: Timer> Drop for CmdBackend<B, C, A, T> {
    fn drop(&mut self) {
        if let Some(d) = self.dev.take() {
            let _ = d.teardown();
        }
        self.keep.take();
    }
}

/// `--device fw-sim`: a simulated ConnectX brought up through the core's
/// command interface ([`bareverbs_sim::fw::bring_up_on`]) on a fabric
/// seeded with `seed`.
pub fn fw_sim(seed: u64, mut opts: CmdOptions) -> anyhow::Result<Box<dyn PerfBackend>> {
    let fabric = bareverbs_sim::Fabric::new(seed);
    let (dev, nic) = bareverbs_sim::fw::bring_up_on(
        &fabric,
        bareverbs_sim::fw::FwConfig::default(),
        DeviceConfig::default(),
    )
    .map_err(|e| anyhow!("simulated bring-up failed: {e}"))?;
    // The backend drives time itself (FabricTimer::relax).
    fabric.set_auto_progress(false);
    opts.loopback_lid = nic.lid();
    let timer = FabricTimer::new(fabric, nic);
    Ok(Box::new(CmdBackend::new(dev, timer, opts, None)))
}

/// `--device vfio:BDF`: the ConnectX at `bdf` through VFIO
/// ([`bareverbs_vfio::bring_up_vfio`]). Errors are the VFIO host's own
/// (e.g. how to bind the function to vfio-pci).
#[cfg(target_os = "linux")]
pub fn vfio(bdf: &str, opts: CmdOptions) -> anyhow::Result<Box<dyn PerfBackend>> {
    let (nic, mut dev) =
        bareverbs_vfio::bring_up_vfio(bdf, DeviceConfig::default()).map_err(|e| anyhow!("{e}"))?;
    // UARs mapped from now on copy whole BlueFlame chunks when asked to.
    // SAFETY: the BlueFlame switch only chooses how the host copies its own
    // stores into UAR pages mapped later; it touches no BAR register, and
    // the device's DMA targets stay those the driver programmed.
    unsafe { dev.bar_mut() }.blueflame = opts.blueflame;
    Ok(Box::new(CmdBackend::new(
        dev,
        WallTimer::default(),
        opts,
        Some(Box::new(nic)),
    )))
}

/// `--device vfio:BDF` (VFIO is Linux-only).
#[cfg(not(target_os = "linux"))]
pub fn vfio(_bdf: &str, _opts: CmdOptions) -> anyhow::Result<Box<dyn PerfBackend>> {
    Err(anyhow!("{}", bareverbs_vfio::VfioHostError::Unsupported))
}

impl<B, C, A, T> PerfBackend for CmdBackend<B, C, A, T>
where
    B: Bar0 + UarMap,
    B::Uar: 'static,
    C: Clock,
    A: DmaAllocator,
    T: Timer,
{
    fn name(&self) -> String {
        format!(
            "bareverbs-cmd on {} ({}, objects and QPs by firmware command, {})",
            self.opts.label,
            if self.timer.modeled() {
                "simulated ConnectX"
            } else {
                "ConnectX through VFIO"
            },
            if self.opts.blueflame {
                "BlueFlame for single inline WQEs"
            } else {
                "8-byte doorbells"
            }
        )
    }

    fn timing_note(&self) -> String {
        self.timer.note()
    }

    fn run(&mut self, cfg: &PerfRunConfig) -> anyhow::Result<PerfRunReport> {
        let dev = self
            .dev
            .as_mut()
            .ok_or_else(|| anyhow!("the device was torn down"))?;
        let plan = Plan::new(cfg, dev)?;
        self.timer.set_loss(cfg.loss)?;
        self.timer.begin_run();
        let mut objs = Objects::default();
        let r = execute(dev, &mut self.timer, &self.opts, cfg, &plan, &mut objs);
        let c = objs.destroy(dev);
        let mut rep = r?;
        c?;
        rep.backend = self.name();
        Ok(rep)
    }
}

/// What a run needs decided before anything is created.
struct Plan {
    layout: QpLayout,
    st: QpServiceType,
    qp_type: QpType,
    verb: Verb,
    size: usize,
    /// SGEs per posted WR.
    k: u32,
    inline: bool,
    atomics: bool,
    /// WRs in flight at most (1 for latency tests).
    window: u32,
    /// WRs a send queue may hold unretired (declared to CREATE_QP; the
    /// CQs are sized for it): the window, at least a few for ping-pong.
    cap: u32,
    /// Message slots per area.
    slots: usize,
    /// Bytes per slot (message, plus the GRH room of UD receives, 64-aligned).
    slot_bytes: usize,
    /// Where received data starts in a receive slot (40 on UD).
    recv_off: usize,
    mtu: u8,
    log_ra: u8,
}

fn mtu_enum(mtu: u32) -> anyhow::Result<u8> {
    bareverbs::cmd::ops::IbMtu::from_bytes(mtu)
        .map(bareverbs::cmd::ops::IbMtu::code)
        .ok_or_else(|| anyhow!("-m {mtu}: the MTU must be 256, 512, 1024, 2048 or 4096"))
}

impl Plan {
    fn new<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
        cfg: &PerfRunConfig,
        dev: &Device<B, C, A>,
    ) -> anyhow::Result<Plan> {
        let verb = cfg.test.verb();
        if cfg.qps != 1 {
            bail!(
                "the command-path backend runs one QP pair; -q {} is not supported",
                cfg.qps
            );
        }
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
        if slot_bytes > CHUNK_BYTES {
            bail!(
                "-s {size}: messages above {} bytes are not supported by the command-path \
                 backend (one memory key covers at most {} pages here)",
                CHUNK_BYTES - recv_off,
                CHUNK_BYTES / 4096
            );
        }
        let caps = dev.device_caps();
        let req = qp_request(cfg).recv(RQ_WQES as u32, 1);
        let layout = qp_layout(&req, &caps).map_err(|e| QpRejected(e.to_string()))?;
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
        let slots = (window as usize).min((AREA_BYTES / slot_bytes).max(1));
        let window = window.min(slots as u32).max(1);
        // A latency run may post before the previous CQE arrived; a few
        // WRs of slack keep it from waiting on that.
        let cap = if lat {
            layout.sq.max_post.min(8)
        } else {
            window
        };
        let (st, qp_type) = match cfg.conn {
            Conn::Rc => (QpServiceType::Rc, QpType::Rc),
            Conn::Uc => (QpServiceType::Uc, QpType::Uc),
            Conn::Ud => (QpServiceType::Ud, QpType::Ud),
        };
        let hca = dev.hca_caps();
        let log_ra = hca.log_max_ra_req_qp.min(hca.log_max_ra_res_qp).min(4);
        Ok(Plan {
            layout,
            st,
            qp_type,
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
            mtu: mtu_enum(cfg.mtu)?,
            log_ra,
        })
    }
}

/// Everything created by command for one run, destroyed afterwards.
#[derive(Default)]
struct Objects {
    pd: Option<Pd>,
    bufs: Vec<DmaBuf>,
    mkeys: Vec<Mkey>,
    cqs: Vec<CqHandle>,
    qps: Vec<QpHandle>,
}

impl Objects {
    /// Destroys in reverse order of dependence; continues past errors and
    /// returns the first.
    fn destroy<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
        self,
        dev: &mut Device<B, C, A>,
    ) -> anyhow::Result<()> {
        let mut first: Option<anyhow::Error> = None;
        let mut note = |r: Result<(), DeviceError>, what: &str| {
            if let Err(e) = r {
                first.get_or_insert_with(|| anyhow!("destroying the {what}: {e}"));
                false
            } else {
                true
            }
        };
        for qp in self.qps {
            note(dev.destroy_qp(qp), "QP");
        }
        for cq in self.cqs {
            note(dev.destroy_cq(cq), "CQ");
        }
        let mut keys_gone = true;
        for m in self.mkeys {
            keys_gone &= note(dev.destroy_mkey(m), "memory key");
        }
        if keys_gone {
            for b in self.bufs {
                // SAFETY: every key over these buffers was destroyed by
                // command above and the queues naming them are gone.
                unsafe { dev.allocator().free(b) };
            }
        }
        if let Some(pd) = self.pd {
            note(dev.dealloc_pd(pd), "protection domain");
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// One message slot: CPU pointer, device address, key.
#[derive(Clone, Copy, Debug)]
struct Slot {
    cpu: NonNull<u8>,
    addr: u64,
    key: u32,
}

/// `n` slots of `slot_bytes` in DMA buffers of at most [`CHUNK_BYTES`],
/// each under its own memory key.
fn area<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    dev: &mut Device<B, C, A>,
    objs: &mut Objects,
    pd: Pd,
    n: usize,
    slot_bytes: usize,
    mrs: &mut Vec<MemoryRegion>,
) -> anyhow::Result<Vec<Slot>> {
    const ALL: MkeyAccess = MkeyAccess {
        local_read: true,
        local_write: true,
        remote_read: true,
        remote_write: true,
        atomic: true,
    };
    let per_chunk = (CHUNK_BYTES / slot_bytes).max(1);
    let mut slots = Vec::with_capacity(n);
    while slots.len() < n {
        let m = per_chunk.min(n - slots.len());
        let len = (m * slot_bytes).next_multiple_of(4096);
        let buf = dev
            .allocator()
            .alloc(len, 4096)
            .ok_or_else(|| anyhow!("out of DMA memory for a {len}-byte message buffer"))?;
        // SAFETY: a fresh allocation of `len` bytes that nothing else uses.
        unsafe { std::ptr::write_bytes(buf.cpu.as_ptr(), 0, len) };
        objs.bufs.push(buf);
        // SAFETY: `buf` is a message buffer this run allocated and owns
        // (no ring); it is freed only after the key is destroyed
        // (Objects::destroy) and is accessed only through raw pointers.
        let mkey = unsafe { dev.create_mkey(pd, &buf, ALL) }
            .map_err(|e| anyhow!("CREATE_MKEY over {len} bytes: {e}"))?;
        objs.mkeys.push(mkey);
        // SAFETY: `buf` is the key's buffer; it is freed only after the key
        // is destroyed (Objects::destroy), after the queues are dropped.
        let mr = unsafe { mkey.memory_region(&buf) }
            .ok_or_else(|| anyhow!("memory key does not cover its buffer"))?;
        mrs.push(mr);
        for i in 0..m {
            let off = i * slot_bytes;
            slots.push(Slot {
                // SAFETY: off < len, inside the allocation.
                cpu: unsafe { NonNull::new_unchecked(buf.cpu.as_ptr().add(off)) },
                addr: mkey.addr() + off as u64,
                key: mkey.key(),
            });
        }
    }
    Ok(slots)
}

/// The data path of one side, with the ring size erased.
trait SideOps {
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

struct Side<U: Uar> {
    qp: QueuePair<U, Vec<SqSlot>, Vec<RqSlot>>,
    cq: DynCompletionQueue,
    mrs: Vec<MemoryRegion>,
    ring: DmaBuf,
}

impl<U: Uar> SideOps for Side<U> {
    fn qpn(&self) -> u32 {
        self.qp.qpn
    }
    fn post(&mut self, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        self.qp.sq.post_send(wrs, &self.mrs)
    }
    unsafe fn post_rdma(&mut self, op: RdmaOp, wrs: &[RdmaWr<'_>]) -> Result<(), PostError> {
        // SAFETY: forwarded: the SGEs lie in this side's registered slots,
        // which stay allocated until the queues are dropped.
        unsafe { self.qp.sq.post_rdma_raw(op, wrs) }
    }
    fn post_recv(&mut self, wr_id: u64, sge: Sge) -> anyhow::Result<()> {
        if bareverbs::mr::find(&self.mrs, &sge).is_none() {
            bail!("receive buffer outside the registered memory");
        }
        let rq = self
            .qp
            .rq
            .as_mut()
            .ok_or_else(|| anyhow!("the QP has no receive queue"))?;
        let sgl = [sge];
        // SAFETY: the SGE lies inside a registered region of this side
        // (checked above) that outlives the queue.
        unsafe { rq.post_recv_raw(&[RecvWr { wr_id, sgl: &sgl }]) }
            .map_err(|e: RecvError| anyhow!("posting a receive on QP {:#x}: {e}", self.qp.qpn))
    }
    fn poll(&mut self, out: &mut [WorkCompletion]) -> Result<usize, PollError> {
        self.cq.poll(&mut self.qp, out)
    }
    fn outstanding(&self) -> u32 {
        self.qp.sq.outstanding()
    }
    fn cur_post(&self) -> u32 {
        self.qp.sq.cur_post()
    }
    fn wqe_ds(&self, wqebb: u32) -> u32 {
        let n = self.ring.len / 64;
        let off = (wqebb as usize & (n - 1)) * 64 + 7;
        // SAFETY: off < n * 64 = the ring's length; a raw byte read of the
        // control segment's DS field, which only the host writes.
        (unsafe { std::ptr::read_volatile(self.ring.cpu.as_ptr().add(off)) } & 0x3f) as u32
    }
}

/// The data-path queues over one side's command-created QP and CQ.
fn make_side<U: Uar + 'static>(
    uar: U,
    qp: &QpHandle,
    cq: &CqHandle,
    sqc: SqConfig,
    rqc: RqConfig,
    mrs: Vec<MemoryRegion>,
) -> anyhow::Result<Box<dyn SideOps>> {
    // SAFETY: one queue object per handle; the returned side is dropped
    // before the QP and CQ are destroyed (execute returns before
    // Objects::destroy runs).
    let (qpair, mut cqq) = unsafe {
        (
            qp.queue_pair(
                uar,
                sqc,
                rqc,
                vec![SqSlot::default(); qp.sq_wqebbs() as usize],
                vec![RqSlot::default(); qp.rq_wqes() as usize],
            ),
            CompletionQueue::<0>::with_entries(
                cq.ncqe() as usize,
                cq.ring(),
                cq.dbrec(),
                cq.cqn(),
                cq.cqe_size(),
                cq.cqe_version(),
            ),
        )
    };
    let mut qpair =
        qpair.ok_or_else(|| anyhow!("send or receive queue geometry refused by the core"))?;
    let cqq_ok = cqq.as_mut().map_err(|e| anyhow!("CQ: {e}"))?;
    cqq_ok.init_ring();
    // The QP is in RTS already: both queues may post.
    qpair.sq.enable();
    if let Some(rq) = qpair.rq.as_mut() {
        rq.enable();
    }
    Ok(Box::new(Side {
        qp: qpair,
        cq: cqq.map_err(|e| anyhow!("CQ: {e}"))?,
        mrs,
        ring: qp.sq(),
    }))
}

/// RESET → INIT → RTR → RTS by command toward `peer` on port 1, looped
/// back by the NIC (force-loopback address path).
fn connect<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    dev: &mut Device<B, C, A>,
    qp: &mut QpHandle,
    peer: u32,
    plan: &Plan,
    psn: (u32, u32),
) -> anyhow::Result<()> {
    let rc = plan.st == QpServiceType::Rc;
    let ud = plan.st == QpServiceType::Ud;
    if rc && dev.force_loopback_rc() == Some(false) {
        bail!(
            "this device does not allow force-loopback RC QPs in its RoCE state \
             (RoCE capability fl_rc_qp_when_roce_enabled/_disabled = 0); \
             the single-device perf tests need them"
        );
    }
    let qpn = qp.qpn();
    let ctx = |step: &str, e: DeviceError| anyhow!("{step} of QP {qpn:#x}: {e}");
    dev.rst2init(
        qp,
        &Rst2Init {
            port: 1,
            pkey_index: 0,
            remote_read: rc,
            remote_write: !ud,
            remote_atomic: rc,
            qkey: if ud { QKEY } else { 0 },
        },
    )
    .map_err(|e| ctx("RST2INIT", e))?;
    let log_msg = dev.hca_caps().log_max_msg.min(31);
    dev.init2rtr(
        qp,
        &Init2Rtr {
            mtu: plan.mtu,
            log_msg_max: log_msg,
            remote_qpn: if ud { 0 } else { peer },
            rq_psn: psn.0,
            log_rra_max: if rc { plan.log_ra } else { 0 },
            min_rnr_nak: if rc { 12 } else { 0 },
            path: AddressPath {
                fl: !ud,
                port: 1,
                ..Default::default()
            },
        },
    )
    .map_err(|e| ctx("INIT2RTR", e))?;
    dev.rtr2rts(
        qp,
        &Rtr2Rts {
            sq_psn: psn.1,
            retry_count: if rc { 7 } else { 0 },
            rnr_retry: if rc { 7 } else { 0 },
            ack_timeout: if rc { 14 } else { 0 },
            log_sra_max: if rc { plan.log_ra } else { 0 },
        },
    )
    .map_err(|e| ctx("RTR2RTS", e))?;
    Ok(())
}

/// Creates every object, connects, builds the queues and runs the test.
fn execute<B, C, A>(
    dev: &mut Device<B, C, A>,
    timer: &mut dyn Timer,
    opts: &CmdOptions,
    cfg: &PerfRunConfig,
    plan: &Plan,
    objs: &mut Objects,
) -> anyhow::Result<PerfRunReport>
where
    B: Bar0 + UarMap,
    B::Uar: 'static,
    C: Clock,
    A: DmaAllocator,
{
    let pd = dev.alloc_pd().map_err(|e| anyhow!("ALLOC_PD: {e}"))?;
    objs.pd = Some(pd);
    let mut mrs_a = Vec::new();
    let mut mrs_b = Vec::new();
    let n = plan.slots;
    let sb = plan.slot_bytes;
    let a_src = area(dev, objs, pd, n, sb, &mut mrs_a)?;
    let a_dst = area(dev, objs, pd, n, sb, &mut mrs_a)?;
    let b_src = area(dev, objs, pd, n, sb, &mut mrs_b)?;
    let b_dst = area(dev, objs, pd, n, sb, &mut mrs_b)?;
    let l = &plan.layout;
    // Each CQ holds a completion for every WR its QP may have outstanding
    // (FACTS §3.7): the run's cap on send WRs plus the receive queue.
    let ncqe = (plan.cap as usize + RQ_WQES).next_power_of_two() as u32;
    for _ in 0..2 {
        let cq = dev
            .create_cq(ncqe, CqeSize::B64)
            .map_err(|e| anyhow!("CREATE_CQ with {ncqe} entries: {e}"))?;
        objs.cqs.push(cq);
    }
    let log = |v: u32| v.trailing_zeros() as u8;
    for side in 0..2u32 {
        let spec = QpSpec {
            st: plan.st,
            pd,
            send_cqn: objs.cqs[side as usize].cqn(),
            recv_cqn: objs.cqs[side as usize].cqn(),
            log_sq_size: log(l.sq.wqe_cnt),
            log_rq_size: log(l.rq.wqe_cnt),
            rq_wqe_shift: l.rq.wqe_shift as u8,
            srqn: None,
            user_index: 0x100 + side,
            max_send_wr: plan.cap,
            max_recv_wr: l.rq.max_post,
        };
        let qp = dev.create_qp(spec).map_err(|e| {
            let text = format!(
                "CREATE_QP ({} WQEBBs of send ring, {} receive WQEs): {e}",
                l.sq.wqe_cnt, l.rq.wqe_cnt
            );
            // A limit of the driver or a firmware refusal: this device
            // cannot have this QP. Anything else is a failure of the run.
            match e {
                DeviceError::Limit { .. } | DeviceError::Cmd(CmdError::Failed { .. }) => {
                    anyhow::Error::new(QpRejected(text))
                }
                _ => anyhow!("{text}"),
            }
        })?;
        objs.qps.push(qp);
    }
    let (qa, qb) = (objs.qps[0].qpn(), objs.qps[1].qpn());
    connect(dev, &mut objs.qps[0], qb, plan, (0x100, 0x200))?;
    connect(dev, &mut objs.qps[1], qa, plan, (0x200, 0x100))?;

    let hca = dev.hca_caps();
    let bf_reg = if hca.bf {
        1usize << hca.log_bf_reg_size
    } else {
        0
    };
    let sqc = |k: usize| SqConfig {
        qpn: 0,
        qp_type: plan.qp_type,
        max_post: l.sq.max_post,
        max_gs: cfg.max_send_sge,
        max_inline_data: l.sq.max_inline_data,
        sig_all: false,
        atomics: plan.atomics,
        bf: if opts.blueflame && bf_reg > 0 {
            BlueFlame {
                reg_offset: BF_OFFSET + k * bf_reg,
                buf_size: bf_reg / 2,
                enabled: true,
                prefer: false,
            }
        } else {
            BlueFlame::doorbell_only(BF_OFFSET + k * bf_reg)
        },
    };
    let rqc = RqConfig {
        wqe_shift: l.rq.wqe_shift,
        max_gs: l.rq.max_gs,
        max_post: l.rq.max_post,
    };
    let uar_a = dev
        .map_uar(objs.qps[0].uar_index())
        .map_err(|e| anyhow!("{e}"))?;
    let uar_b = dev
        .map_uar(objs.qps[1].uar_index())
        .map_err(|e| anyhow!("{e}"))?;
    // Queue storage sized at run time from the geometry the device was
    // given (no size macro, no big stack).
    let a = make_side(uar_a, &objs.qps[0], &objs.cqs[0], sqc(0), rqc, mrs_a)?;
    let b = make_side(uar_b, &objs.qps[1], &objs.cqs[1], sqc(1), rqc, mrs_b)?;
    // What perftest prints for each side (ctx_print_pingpong_data): the
    // QPN, the send PSN given at RTR2RTS, the buffer the peer accesses.
    // LID 0 and a zero GID: the loopback path carries neither.
    let ep = |qpn: u32, psn: u32, s: &Slot| crate::perftest::format::Endpoint {
        lid: 0,
        qpn,
        psn,
        out_reads: 16,
        rkey: s.key,
        vaddr: s.addr,
        gid: [0; 16],
    };
    let (local, remote) = (ep(qa, 0x200, &a_dst[0]), ep(qb, 0x100, &b_dst[0]));
    let geo = Geometry::new(plan, opts, a_src, a_dst, b_src, b_dst, qa, qb);
    let mut r = Engine::new(timer, a, b, plan, cfg, opts);
    r.run(&geo)?;
    let mut rep = r.finish(plan);
    rep.local = Some(local);
    rep.remote = Some(remote);
    Ok(rep)
}

/// Immutable per-run tables: slots, SGE lists, the message body.
struct Geometry {
    a_src: Vec<Slot>,
    a_dst: Vec<Slot>,
    b_src: Vec<Slot>,
    b_dst: Vec<Slot>,
    /// `k`-way SGE splits of the message in each slot.
    a_src_sg: Vec<Vec<Sge>>,
    a_dst_sg: Vec<Vec<Sge>>,
    b_src_sg: Vec<Vec<Sge>>,
    /// Bytes between the tags.
    body: Vec<u8>,
    /// UD: address vector of the loopback path, and the peers' QPNs.
    av: AddressVector,
    qpn_a: u32,
    qpn_b: u32,
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

impl Geometry {
    #[allow(clippy::too_many_arguments)]
    fn new(
        plan: &Plan,
        opts: &CmdOptions,
        a_src: Vec<Slot>,
        a_dst: Vec<Slot>,
        b_src: Vec<Slot>,
        b_dst: Vec<Slot>,
        qpn_a: u32,
        qpn_b: u32,
    ) -> Geometry {
        let sg = |v: &[Slot]| v.iter().map(|s| split(s, plan.size, plan.k)).collect();
        let body: Vec<u8> = (0..plan.size).map(|j| ((j * 7) % 251 + 1) as u8).collect();
        // Source slots hold the body; the tags are written per iteration.
        for s in a_src.iter().chain(&b_src) {
            // SAFETY: each slot holds slot_bytes >= size bytes of live DMA
            // memory no WR uses yet.
            unsafe { std::ptr::copy_nonoverlapping(body.as_ptr(), s.cpu.as_ptr(), plan.size) };
        }
        let av = AddressVector::datagram(
            (QKEY as u64) << 32,
            0,
            false,
            0,
            0x80, // force loopback
            opts.loopback_lid,
            [0; 6],
            0,
            0,
            0,
            [0; 16],
        );
        Geometry {
            a_src_sg: sg(&a_src),
            a_dst_sg: sg(&a_dst),
            b_src_sg: sg(&b_src),
            a_src,
            a_dst,
            b_src,
            b_dst,
            body,
            av,
            qpn_a,
            qpn_b,
        }
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

/// Bytes of the message at `p` that differ from iteration `i`'s.
fn mismatches(p: *const u8, size: usize, i: u64, body: &[u8], scratch: &mut Vec<u8>) -> u64 {
    scratch.resize(size, 0);
    // SAFETY: `p` is a slot holding at least `size` bytes that no WR
    // writes now; copied out with raw reads (no reference to DMA memory).
    unsafe { std::ptr::copy_nonoverlapping(p, scratch.as_mut_ptr(), size) };
    let got = &scratch[..size];
    if size < 2 * TAG {
        let b = small(i);
        return got.iter().filter(|&&x| x != b).count() as u64;
    }
    let t = tag(i);
    let diff = |a: &[u8], b: &[u8]| a.iter().zip(b).filter(|(x, y)| x != y).count() as u64;
    let mid = if got[TAG..size - TAG] == body[TAG..size - TAG] {
        0
    } else {
        diff(&got[TAG..size - TAG], &body[TAG..size - TAG])
    };
    diff(&got[..TAG], &t) + diff(&got[size - TAG..], &t) + mid
}

fn read_byte(s: &Slot, off: usize) -> u8 {
    // SAFETY: callers pass offsets inside the slot; a raw volatile read of
    // memory the device may be writing.
    unsafe { std::ptr::read_volatile(s.cpu.as_ptr().add(off)) }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Who {
    A,
    B,
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

/// The mutable state of one run.
struct Engine<'t> {
    timer: &'t mut dyn Timer,
    a: Box<dyn SideOps>,
    b: Box<dyn SideOps>,
    test: PerfTest,
    verb: Verb,
    iters: u64,
    cq_mod: u64,
    post_list: u32,
    window: u32,
    /// Most unretired WRs per send queue ([`Plan::cap`]).
    cap: u32,
    timeout_ns: u64,
    size: usize,
    slots: usize,
    recv_off: usize,
    inline: bool,
    ud: bool,
    reliable: bool,
    rep: PerfRunReport,
    scratch: Vec<u8>,
    wcs: [WorkCompletion; 32],
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
    post_ns_total: f64,
    post_wrs: u64,
    doorbells: u64,
    cqes: u64,
    wqe_seen: bool,
}

impl<'t> Engine<'t> {
    fn new(
        timer: &'t mut dyn Timer,
        a: Box<dyn SideOps>,
        b: Box<dyn SideOps>,
        plan: &Plan,
        cfg: &PerfRunConfig,
        opts: &CmdOptions,
    ) -> Self {
        Engine {
            timer,
            a,
            b,
            test: cfg.test,
            verb: plan.verb,
            iters: cfg.iters.max(1),
            cq_mod: cfg.cq_mod.max(1) as u64,
            post_list: cfg.post_list.max(1).min(plan.window),
            window: plan.window,
            cap: plan.cap,
            timeout_ns: opts.timeout_ns,
            size: plan.size,
            slots: plan.slots,
            recv_off: plan.recv_off,
            inline: plan.inline,
            ud: plan.st == QpServiceType::Ud,
            reliable: plan.st == QpServiceType::Rc,
            rep: PerfRunReport {
                tick_hz: 1e9,
                ring_bytes: plan.layout.sq.buf_bytes,
                ..Default::default()
            },
            scratch: Vec::new(),
            wcs: [WorkCompletion::default(); 32],
            a_posted: 0,
            b_posted: 0,
            a_retired: 0,
            b_retired: 0,
            a_recvs: VecDeque::new(),
            b_recvs: VecDeque::new(),
            rx_next: 0,
            post_ns_total: 0.0,
            post_wrs: 0,
            doorbells: 0,
            cqes: 0,
            wqe_seen: false,
        }
    }

    fn side(&mut self, w: Who) -> &mut dyn SideOps {
        match w {
            Who::A => self.a.as_mut(),
            Who::B => self.b.as_mut(),
        }
    }

    fn qpn(&self, w: Who) -> u32 {
        match w {
            Who::A => self.a.qpn(),
            Who::B => self.b.qpn(),
        }
    }

    fn outstanding(&self, w: Who) -> u32 {
        match w {
            Who::A => self.a.outstanding(),
            Who::B => self.b.outstanding(),
        }
    }

    /// Polls `w`'s CQ once: send completions retire WRs, receive
    /// completions are queued. An error completion ends the run.
    fn poll(&mut self, w: Who) -> anyhow::Result<usize> {
        let r = match w {
            Who::A => self.a.poll(&mut self.wcs),
            Who::B => self.b.poll(&mut self.wcs),
        };
        let n = r.map_err(|e| anyhow!("polling the CQ of QP {:#x}: {e}", self.qpn(w)))?;
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
                    self.qpn(w),
                    wc.status,
                    wc.status.description(),
                    wc.vendor_err
                );
            }
            let recv = matches!(wc.opcode, WcOpcode::Recv);
            match (w, recv) {
                (Who::A, true) => self.a_recvs.push_back((wc.wr_id, wc.byte_len)),
                (Who::B, true) => self.b_recvs.push_back((wc.wr_id, wc.byte_len)),
                (Who::A, false) => self.a_retired = self.a_retired.max(wc.wr_id + 1),
                (Who::B, false) => self.b_retired = self.b_retired.max(wc.wr_id + 1),
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

    /// Waits until `w`'s send queue may take one more WR.
    fn room(&mut self, w: Who) -> anyhow::Result<()> {
        if self.outstanding(w) < self.cap {
            return Ok(());
        }
        let max = self.cap;
        self.wait(
            &|e: &Self| {
                format!(
                    "a send completion on QP {:#x} ({} WRs outstanding, at most {max} may be)",
                    e.qpn(w),
                    e.outstanding(w),
                )
            },
            |e| {
                e.poll(w)?;
                Ok(e.outstanding(w) < max)
            },
        )
    }

    /// Signal this WR? Every `cq_mod`-th, the last of the run, and any WR
    /// that fills the send window (or it could never drain).
    fn signal(&self, seq: u64, in_flight_after: u64, last: bool) -> bool {
        last || (seq + 1).is_multiple_of(self.cq_mod) || in_flight_after >= self.cap as u64
    }

    /// Posts `nwr` WRs on `w` through `f`, timing the call; the first post
    /// of A reads its WQE back from the ring. Returns the post stamp.
    fn post_timed(
        &mut self,
        w: Who,
        nwr: usize,
        f: impl FnOnce(&mut dyn SideOps) -> Result<(), PostError>,
    ) -> anyhow::Result<u64> {
        let before = self.side(w).cur_post();
        let t0 = self.timer.now_ns();
        let r = f(self.side(w));
        let t1 = self.timer.now_ns();
        r.map_err(|e| {
            anyhow!(
                "{}: posting on QP {:#x} failed: {e}",
                test_name(self.test),
                self.qpn(w)
            )
        })?;
        self.post_ns_total += t1.saturating_sub(t0) as f64;
        self.post_wrs += nwr as u64;
        self.doorbells += 1;
        self.rep.posted += nwr as u64;
        if !self.wqe_seen && w == Who::A {
            self.wqe_seen = true;
            let s = self.side(w);
            let bbs = s.cur_post().wrapping_sub(before);
            let ds = s.wqe_ds(before);
            self.rep.wqe_bytes = 16 * ds;
            self.rep.wqebbs = bbs / nwr.max(1) as u32;
        }
        match w {
            Who::A => self.a_posted += nwr as u64,
            Who::B => self.b_posted += nwr as u64,
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

    fn post_recv(&mut self, g: &Geometry, w: Who, slot: usize) -> anyhow::Result<()> {
        let s = match w {
            Who::A => g.a_dst[slot],
            Who::B => g.b_dst[slot],
        };
        let sge = Sge {
            addr: s.addr,
            length: (self.size + self.recv_off) as u32,
            lkey: s.key,
        };
        self.side(w).post_recv(slot as u64, sge)
    }

    fn run(&mut self, g: &Geometry) -> anyhow::Result<()> {
        match self.test {
            PerfTest::WriteLat | PerfTest::SendLat => self.ping_pong(g),
            PerfTest::ReadLat | PerfTest::AtomicLat => self.op_lat(g),
            PerfTest::WriteBw | PerfTest::SendBw | PerfTest::ReadBw => self.bw(g),
        }?;
        // Every WR posted completes: wait for the last signaled ones.
        self.wait(
            &|e: &Self| {
                format!(
                    "the last send completions ({} of {} WRs retired on QP {:#x}, {} of {} on QP {:#x})",
                    e.a_retired,
                    e.a_posted,
                    e.a.qpn(),
                    e.b_retired,
                    e.b_posted,
                    e.b.qpn()
                )
            },
            |e| {
                e.poll(Who::A)?;
                e.poll(Who::B)?;
                Ok(e.a_retired >= e.a_posted && e.b_retired >= e.b_posted)
            },
        )?;
        self.rep.completed_ok = self.a_retired + self.b_retired;
        Ok(())
    }

    /// Records one round trip / operation time.
    fn sample(&mut self, t: &mut u64, ns: u64) {
        *t += ns;
        self.rep.tposted.push(*t);
        self.rep.latency_samples_ns.push(ns as f64 / self.rtt());
    }

    fn rtt(&self) -> f64 {
        self.verb.rtt_factor() as f64
    }

    /// Posts the ping (A) or pong (B) of a ping-pong iteration.
    fn post_pp(&mut self, g: &Geometry, w: Who, last: bool) -> anyhow::Result<u64> {
        self.room(w)?;
        let (seq, out) = match w {
            Who::A => (self.a_posted, self.a.outstanding()),
            Who::B => (self.b_posted, self.b.outstanding()),
        };
        let sig = self.signal(seq, out as u64 + 1, last);
        let (sgl, dst, peer) = match w {
            Who::A => (&g.a_src_sg[0], g.b_dst[0], g.qpn_b),
            Who::B => (&g.b_src_sg[0], g.a_dst[0], g.qpn_a),
        };
        let op = if self.verb == Verb::Send {
            SendOp::Send
        } else {
            SendOp::Write {
                remote_addr: dst.addr,
                rkey: dst.key,
            }
        };
        let mut wr = SendWr::new(seq, op, sgl).with_flags(self.flags(sig));
        if self.ud {
            wr = wr.with_ud(UdDest {
                av: &g.av,
                remote_qpn: peer,
                remote_qkey: QKEY,
            });
        }
        self.post_timed(w, 1, |s| s.post(&[wr]))
    }

    /// Waits for iteration `i`'s message to arrive at `w`: the last byte of
    /// its buffer changing (WRITE) or a receive completion (SEND).
    fn arrive(&mut self, g: &Geometry, w: Who, i: u64) -> anyhow::Result<()> {
        let size = self.size;
        let (dst, from, to) = match w {
            Who::A => (g.a_dst[0], g.qpn_b, g.qpn_a),
            Who::B => (g.b_dst[0], g.qpn_a, g.qpn_b),
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
        self.wait(
            &|_| {
                format!(
                    "the receive completion of iteration {i}'s SEND (QP {from:#x} -> QP {to:#x})"
                )
            },
            |e| {
                let q = match w {
                    Who::A => &e.a_recvs,
                    Who::B => &e.b_recvs,
                };
                if q.is_empty() {
                    e.poll(w)?;
                }
                Ok(!match w {
                    Who::A => &e.a_recvs,
                    Who::B => &e.b_recvs,
                }
                .is_empty())
            },
        )?;
        let (_slot, len) = match w {
            Who::A => self.a_recvs.pop_front(),
            Who::B => self.b_recvs.pop_front(),
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
    fn ping_pong(&mut self, g: &Geometry) -> anyhow::Result<()> {
        let size = self.size;
        let send = self.verb == Verb::Send;
        if send {
            self.post_recv(g, Who::A, 0)?;
            self.post_recv(g, Who::B, 0)?;
        }
        let mut t = 0u64;
        self.rep.tposted.push(0);
        for i in 0..self.iters {
            let last = i + 1 == self.iters;
            stamp(&g.a_src[0], size, i);
            stamp(&g.b_src[0], size, i);
            self.room(Who::A)?;
            self.room(Who::B)?;
            let t0 = self.post_pp(g, Who::A, last)?;
            self.arrive(g, Who::B, i)?;
            self.post_pp(g, Who::B, last)?;
            if send {
                self.post_recv(g, Who::B, 0)?;
            }
            self.arrive(g, Who::A, i)?;
            let rtt = self.timer.now_ns().saturating_sub(t0);
            self.sample(&mut t, rtt);
            if send {
                self.post_recv(g, Who::A, 0)?;
            }
            let off = self.recv_off;
            for d in [g.b_dst[0], g.a_dst[0]] {
                // SAFETY: off + size <= slot_bytes: inside the slot.
                let p = unsafe { d.cpu.as_ptr().add(off) };
                self.rep.mismatches += mismatches(p, size, i, &g.body, &mut self.scratch);
            }
            self.poll(Who::A)?;
            self.poll(Who::B)?;
        }
        Ok(())
    }

    /// read-lat / atomic-lat: one operation at a time, post → completion.
    fn op_lat(&mut self, g: &Geometry) -> anyhow::Result<()> {
        let size = self.size;
        let atomic = self.verb == Verb::Atomic;
        let src = g.b_src[0];
        let dst = g.a_dst[0];
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
        let mut t = 0u64;
        self.rep.tposted.push(0);
        for i in 0..self.iters {
            if !atomic {
                stamp(&src, size, i);
            }
            self.room(Who::A)?;
            let seq = self.a_posted;
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
                    &g.a_dst_sg[0][..],
                )
            };
            let wr = SendWr::new(seq, op, sgl).with_flags(SendFlags::SIGNALED);
            let t0 = self.post_timed(Who::A, 1, |s| s.post(&[wr]))?;
            let name = if atomic { "fetch-and-add" } else { "RDMA READ" };
            let (qa, qb) = (g.qpn_a, g.qpn_b);
            self.wait(
                &|_| {
                    format!(
                        "the completion of the {name} of iteration {i} (QP {qa:#x} -> QP {qb:#x})"
                    )
                },
                |e| {
                    e.poll(Who::A)?;
                    Ok(e.a_retired > seq)
                },
            )?;
            let took = self.timer.now_ns().saturating_sub(t0);
            self.sample(&mut t, took);
            self.rep.mismatches += if atomic {
                atomic_mismatches(dst.cpu.as_ptr(), i)
            } else {
                mismatches(dst.cpu.as_ptr(), size, i, &g.body, &mut self.scratch)
            };
        }
        if atomic {
            self.rep.mismatches += atomic_mismatches(src.cpu.as_ptr(), self.iters);
        }
        Ok(())
    }

    /// write-bw / send-bw / read-bw: keep up to `window` WRs in flight.
    fn bw(&mut self, g: &Geometry) -> anyhow::Result<()> {
        let n = self.iters;
        let size = self.size;
        let slots = self.slots as u64;
        let window = self.window as u64;
        let verb = self.verb;
        let send = verb == Verb::Send;
        let rx_slots = if send { slots.min(RQ_WQES as u64) } else { 0 };
        for s in 0..rx_slots {
            self.post_recv(g, Who::B, s as usize)?;
        }
        let fast = !self.inline && !self.ud;
        let rop = match verb {
            Verb::Write => RdmaOp::Write,
            Verb::Read => RdmaOp::Read,
            _ => RdmaOp::Send,
        };
        self.rep.tposted.reserve(n as usize);
        self.rep.tcompleted.reserve(n as usize);
        let mut rbatch: Vec<RdmaWr<'_>> = Vec::with_capacity(self.post_list as usize);
        let mut sbatch: Vec<SendWr<'_>> = Vec::with_capacity(self.post_list as usize);
        let mut posted = 0u64;
        let mut completed = 0u64;
        let mut received = 0u64;
        // UC/UD SENDs presumed lost (they hold no receive).
        let mut lost = 0u64;
        let mut t_first: Option<u64> = None;
        let mut last_progress = self.timer.now_ns();
        while completed < n || (send && self.reliable && received < n) {
            let mut progressed = false;
            // Post whole batches while the window (and, for SEND, the
            // receives) allow.
            while posted < n {
                let m = (self.post_list as u64).min(n - posted);
                let busy_rx = (posted + m).saturating_sub(received + lost);
                if posted + m - completed > window || (send && busy_rx > rx_slots) {
                    break;
                }
                rbatch.clear();
                sbatch.clear();
                for it in posted..posted + m {
                    let slot = (it % slots) as usize;
                    let last = it + 1 == n;
                    let sig = self.signal(it, it + 1 - completed, last);
                    let remote = match verb {
                        Verb::Read => {
                            stamp(&g.b_src[slot], size, it);
                            g.b_src[slot]
                        }
                        _ => {
                            stamp(&g.a_src[slot], size, it);
                            g.b_dst[slot]
                        }
                    };
                    let sgl = match verb {
                        Verb::Read => &g.a_dst_sg[slot][..],
                        _ => &g.a_src_sg[slot][..],
                    };
                    if fast {
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
                        let mut wr = SendWr::new(it, op, sgl).with_flags(self.flags(sig));
                        if self.ud {
                            wr = wr.with_ud(UdDest {
                                av: &g.av,
                                remote_qpn: g.qpn_b,
                                remote_qkey: QKEY,
                            });
                        }
                        sbatch.push(wr);
                    }
                }
                let t = if fast {
                    // SAFETY: every SGE comes from the slot tables of A's
                    // registered areas (Geometry), alive until the queues
                    // are dropped.
                    self.post_timed(Who::A, m as usize, |s| unsafe { s.post_rdma(rop, &rbatch) })?
                } else {
                    self.post_timed(Who::A, m as usize, |s| s.post(&sbatch))?
                };
                let t0 = *t_first.get_or_insert(t);
                for _ in 0..m {
                    self.rep.tposted.push(t - t0);
                }
                posted += m;
                progressed = true;
            }
            // Requester completions: every WR through the CQE's retires.
            if self.poll(Who::A)? > 0 && self.a_retired > completed {
                let now = self.timer.now_ns() - t_first.unwrap_or(0);
                for it in completed..self.a_retired.min(n) {
                    self.rep.tcompleted.push(now);
                    // RC: completion means the data is in place. UC/UD
                    // complete on sending; they are checked at the end.
                    if self.reliable && verb != Verb::Send {
                        let slot = (it % slots) as usize;
                        let p = match verb {
                            Verb::Read => g.a_dst[slot].cpu.as_ptr(),
                            _ => g.b_dst[slot].cpu.as_ptr(),
                        };
                        self.rep.mismatches += mismatches(p, size, it, &g.body, &mut self.scratch);
                    }
                }
                completed = self.a_retired;
                progressed = true;
            }
            // Responder receives (SEND): check and repost.
            if send && (self.poll(Who::B)? > 0 || !self.b_recvs.is_empty()) {
                received += self.consume_recvs(g)?;
                progressed = true;
            }
            let now = self.timer.now_ns();
            let idle = now.saturating_sub(last_progress);
            if progressed {
                last_progress = now;
            } else if send
                && !self.reliable
                && idle >= LOSS_GRACE_NS
                && posted.saturating_sub(received) > lost
            {
                // Unreliable SENDs that have not arrived by now are gone:
                // their receives are free again.
                lost = posted.saturating_sub(received);
                last_progress = now;
            } else if idle >= self.timeout_ns {
                return Err(self.timeout(&format!(
                    "completions: {completed} of {n} WRs completed on QP {:#x}, {posted} posted{}",
                    g.qpn_a,
                    if send {
                        format!(", {received} received on QP {:#x}", g.qpn_b)
                    } else {
                        String::new()
                    }
                )));
            } else {
                self.timer.relax();
            }
        }
        if !self.reliable {
            // Unreliable transports complete before the data lands: let it
            // settle, then check what arrived.
            self.timer.settle();
            if send {
                while self.poll(Who::B)? > 0 {}
                received += self.consume_recvs(g)?;
                self.rep.mismatches += n.saturating_sub(received) * size as u64;
            } else {
                for s in 0..slots.min(n) {
                    let it = s + (n - 1 - s) / slots * slots;
                    let p = g.b_dst[s as usize].cpu.as_ptr();
                    self.rep.mismatches += mismatches(p, size, it, &g.body, &mut self.scratch);
                }
            }
        }
        Ok(())
    }

    /// Checks and reposts the receives B completed; `received` were
    /// consumed before. Returns how many were consumed now.
    fn consume_recvs(&mut self, g: &Geometry) -> anyhow::Result<u64> {
        let mut k = 0u64;
        while let Some((slot, len)) = self.b_recvs.pop_front() {
            let s = g.b_dst[slot as usize];
            k += 1;
            if len as usize != self.size + self.recv_off {
                self.rep.mismatches += self.size as u64;
                self.rx_next += 1;
                self.post_recv(g, Who::B, slot as usize)?;
                continue;
            }
            // SAFETY: recv_off + size <= slot_bytes: inside the slot.
            let p = unsafe { s.cpu.as_ptr().add(self.recv_off) };
            // Which iteration is this? Messages name it (a tag, or under
            // 16 bytes the iteration mod 255); UC/UD may have lost some
            // in between, so the next one is the first at or after the
            // expected iteration that carries this name.
            let mut it = self.rx_next;
            if self.size >= 2 * TAG {
                let mut t = [0u8; TAG];
                // SAFETY: TAG <= size bytes at p, inside the slot.
                unsafe { std::ptr::copy_nonoverlapping(p, t.as_mut_ptr(), TAG) };
                let named = u64::from_be_bytes(t).wrapping_sub(1);
                if (self.rx_next..self.iters).contains(&named) {
                    it = named;
                }
            } else {
                let b = read_byte(&s, self.recv_off);
                if (1..=255).contains(&b) {
                    let skip = (b as u64 - 1 + 255 - self.rx_next % 255) % 255;
                    if self.rx_next + skip < self.iters {
                        it = self.rx_next + skip;
                    }
                }
            }
            self.rep.mismatches += mismatches(p, self.size, it, &g.body, &mut self.scratch);
            self.rx_next = it + 1;
            self.post_recv(g, Who::B, slot as usize)?;
        }
        Ok(k)
    }

    /// The report, with rates and counters.
    fn finish(mut self, plan: &Plan) -> PerfRunReport {
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

fn test_name(t: PerfTest) -> &'static str {
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

#[cfg(test)]
mod tests {
    //! The command-path backend over `bring_up_on` (the simulator behind
    //! the firmware command interface). Expected WQE sizes come from the
    //! segment rules (FACTS §1.7: ctrl 16, raddr 16, data 16 per SGE,
    //! inline 4 + payload rounded to 16, atomic 16), not from the code.
    use super::*;
    use crate::perf::run::{configs, PerfArgs};
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: PerfArgs,
    }

    fn args(v: &[&str]) -> PerfArgs {
        let mut all = vec!["t", "--device", "fw-sim"];
        all.extend_from_slice(v);
        T::parse_from(all).a
    }

    fn run(test: PerfTest, v: &[&str]) -> anyhow::Result<PerfRunReport> {
        let a = args(v);
        let mut opts = CmdOptions::new("fw-sim");
        opts.blueflame = a.blueflame;
        let mut be = fw_sim(a.seed, opts)?;
        let cfg = configs(test, &a)?.remove(0);
        be.run(&cfg)
    }

    /// Every WR completed OK, nothing arrived wrong.
    fn clean(r: &PerfRunReport, posted: u64) {
        assert_eq!(r.posted, posted, "{r:?}");
        assert_eq!(r.completed_ok, posted);
        assert_eq!(r.completed_err, 0);
        assert_eq!(r.mismatches, 0);
        assert!(r.modeled);
    }

    fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len() as f64
    }

    #[test]
    fn write_lat_ping_pong() {
        let r = run(PerfTest::WriteLat, &["-n", "50"]).unwrap();
        // 50 iterations, one WRITE each way per iteration.
        clean(&r, 100);
        assert_eq!(r.latency_samples_ns.len(), 50);
        assert_eq!(r.tposted.len(), 51);
        // 2 B inline (perftest's 220 B inline limit): ctrl 16 + raddr 16 +
        // align16(4 + 2) = 48 B, one WQEBB.
        assert_eq!((r.wqe_bytes, r.wqebbs), (48, 1));
        assert!(r.latency_samples_ns.iter().all(|&s| s > 0.0));
        assert!(r.post_ns > 0.0);
    }

    #[test]
    fn send_lat_ping_pong() {
        let r = run(PerfTest::SendLat, &["-n", "40", "-s", "100"]).unwrap();
        clean(&r, 80);
        assert_eq!(r.latency_samples_ns.len(), 40);
        // 100 B inline SEND: ctrl 16 + align16(4 + 100) = 128 B, 2 WQEBBs.
        assert_eq!((r.wqe_bytes, r.wqebbs), (128, 2));
    }

    #[test]
    fn read_and_atomic_lat() {
        let r = run(PerfTest::ReadLat, &["-n", "30", "-s", "300"]).unwrap();
        clean(&r, 30);
        assert_eq!(r.latency_samples_ns.len(), 30);
        // READ: ctrl + raddr + 1 data segment = 48 B.
        assert_eq!(r.wqe_bytes, 48);
        let a = run(PerfTest::AtomicLat, &["-n", "30"]).unwrap();
        clean(&a, 30);
        assert_eq!(a.latency_samples_ns.len(), 30);
        // Fetch-and-add: ctrl + raddr + atomic + data = 64 B.
        assert_eq!(a.wqe_bytes, 64);
        // A READ and an atomic are both one request/response round trip.
        assert!(mean(&a.latency_samples_ns) > 0.0);
    }

    #[test]
    fn bandwidth_tests() {
        for (t, ds) in [
            (PerfTest::WriteBw, 3), // ctrl + raddr + data
            (PerfTest::SendBw, 2),  // ctrl + data
            (PerfTest::ReadBw, 3),
        ] {
            let r = run(
                t,
                &["-n", "300", "-s", "4096", "-t", "32", "-l", "4", "-Q", "2"],
            )
            .unwrap();
            clean(&r, 300);
            assert_eq!(r.tposted.len(), 300, "{t:?}");
            assert_eq!(r.tcompleted.len(), 300, "{t:?}");
            assert_eq!(r.wqe_bytes, 16 * ds, "{t:?}");
            // 4 WRs per doorbell.
            assert_eq!(r.counters["doorbells"], 75.0, "{t:?}");
            assert_eq!(r.counters["window"], 32.0);
            assert!(r.bandwidth_gbps > 0.0 && r.msg_rate_mpps > 0.0);
            // Completions never precede their posts.
            assert!(r.tposted.iter().zip(&r.tcompleted).all(|(p, c)| c >= p));
        }
    }

    /// The simulator's cost model charges one gather per posted SGE and
    /// fetches the larger WQE: 16 SGEs take longer than 1, by at least
    /// the 15 extra gathers (t_sge = 11 ns each, PERF_AND_SIM §2.3).
    #[test]
    fn latency_grows_with_posted_sges() {
        let one = run(
            PerfTest::WriteLat,
            &[
                "-n",
                "20",
                "-s",
                "256",
                "-I",
                "0",
                "--sge",
                "1",
                "--max-send-sge",
                "16",
            ],
        )
        .unwrap();
        let k16 = run(
            PerfTest::WriteLat,
            &["-n", "20", "-s", "256", "-I", "0", "--sge", "16"],
        )
        .unwrap();
        clean(&one, 40);
        clean(&k16, 40);
        // 1 SGE: 48 B; 16 SGEs: 32 + 16 * 16 = 288 B in 5 WQEBBs.
        assert_eq!((one.wqe_bytes, k16.wqe_bytes, k16.wqebbs), (48, 288, 5));
        let (l1, l16) = (mean(&one.latency_samples_ns), mean(&k16.latency_samples_ns));
        assert!(l16 > l1 + 15.0 * 11.0, "1 SGE {l1} ns, 16 SGEs {l16} ns");
    }

    #[test]
    fn blueflame_only_when_asked() {
        let db = run(PerfTest::WriteLat, &["-n", "10"]).unwrap();
        let bf = run(PerfTest::WriteLat, &["-n", "10", "--blueflame"]).unwrap();
        assert_eq!(db.counters["nic.bf_writes"], 0.0);
        // Every WR is a single inline WQE: each one goes through BlueFlame.
        assert_eq!(bf.counters["nic.bf_writes"], 20.0);
        // The NIC does not fetch a BlueFlame'd WQE: faster.
        assert!(mean(&bf.latency_samples_ns) < mean(&db.latency_samples_ns));
    }

    #[test]
    fn unreliable_transports() {
        let r = run(PerfTest::SendLat, &["-n", "20", "-c", "UD", "-s", "512"]).unwrap();
        clean(&r, 40);
        let r = run(PerfTest::WriteBw, &["-n", "100", "-c", "UC", "-s", "1024"]).unwrap();
        clean(&r, 100);
        let r = run(PerfTest::SendBw, &["-n", "100", "-c", "UD", "-s", "1024"]).unwrap();
        clean(&r, 100);
        // Lost UD datagrams are counted (size bytes each), not waited for.
        let r = run(
            PerfTest::SendBw,
            &[
                "-n", "200", "-c", "UD", "-s", "64", "--loss", "0.2", "--seed", "3",
            ],
        )
        .unwrap();
        assert_eq!(r.completed_ok, 200);
        assert!(
            r.mismatches > 0 && r.mismatches.is_multiple_of(64),
            "{}",
            r.mismatches
        );
    }

    #[test]
    fn refusals_are_explained() {
        // Classic RC ops reserve 192 B per WQE: (1024 - 192) / 16 = 52 SGEs.
        let e = run(
            PerfTest::WriteLat,
            &["--sge", "60", "--send-ops", "classic"],
        )
        .unwrap_err();
        assert!(e.downcast_ref::<QpRejected>().is_some(), "{e}");
        assert!(e.to_string().contains("room for 52"), "{e}");
        // perftest's own refusals come first, with its messages.
        let e = run(PerfTest::ReadLat, &["-c", "UC"]).unwrap_err();
        assert!(
            e.to_string()
                .contains("UC connection not possible in READ/ATOMIC verbs"),
            "{e}"
        );
        let e = run(PerfTest::WriteBw, &["-q", "2"]).unwrap_err();
        assert!(e.to_string().contains("one QP pair"), "{e}");
        let e = run(PerfTest::WriteLat, &["-c", "UD"]).unwrap_err();
        assert!(
            e.to_string()
                .contains("UD connection only possible in SEND verb"),
            "{e}"
        );
    }

    /// A WRITE that never arrives (every UC packet dropped) ends the run
    /// with an error naming it, after the time limit — no hang.
    #[test]
    fn lost_transfer_times_out_with_a_name() {
        let e = run(PerfTest::WriteLat, &["-n", "5", "-c", "UC", "--loss", "1"]).unwrap_err();
        let t = e.to_string();
        assert!(t.contains("timed out after 5000 ms (virtual time)"), "{t}");
        assert!(t.contains("RDMA WRITE of iteration 0"), "{t}");
        // RC retries, then reports the failed WR by its status.
        let e = run(PerfTest::ReadLat, &["-n", "5", "--loss", "1"]).unwrap_err();
        assert!(e.to_string().contains("RETRY_EXC_ERR"), "{e}");
    }

    /// The payload check counts wrong bytes (so a broken transfer shows).
    #[test]
    fn mismatch_counter_sees_wrong_bytes() {
        let body: Vec<u8> = (0..64).map(|j| ((j * 7) % 251 + 1) as u8).collect();
        let mut buf = body.clone();
        buf[..8].copy_from_slice(&tag(41));
        buf[56..].copy_from_slice(&tag(41));
        let mut scratch = Vec::new();
        assert_eq!(mismatches(buf.as_ptr(), 64, 41, &body, &mut scratch), 0);
        // Another iteration's tags: the last byte of both tags differs.
        assert_eq!(mismatches(buf.as_ptr(), 64, 42, &body, &mut scratch), 2);
        buf[30] ^= 0xff;
        assert_eq!(mismatches(buf.as_ptr(), 64, 41, &body, &mut scratch), 1);
        let small_msg = [small(7); 5];
        assert_eq!(mismatches(small_msg.as_ptr(), 5, 7, &body, &mut scratch), 0);
        assert_eq!(mismatches(small_msg.as_ptr(), 5, 8, &body, &mut scratch), 5);
        assert_eq!(atomic_mismatches(9u64.to_be_bytes().as_ptr(), 9), 0);
        assert_eq!(atomic_mismatches(9u64.to_le_bytes().as_ptr(), 9), 0);
        assert_eq!(atomic_mismatches(10u64.to_be_bytes().as_ptr(), 9), 1);
    }

    /// On a ConnectX bound to vfio-pci: `BAREVERBS_VFIO_BDF=0000:3b:00.0
    /// cargo test -p bareverbs-bench -- --ignored hw_`.
    #[test]
    #[ignore = "needs a ConnectX bound to vfio-pci (BAREVERBS_VFIO_BDF)"]
    fn hw_perf_over_vfio() {
        let Ok(bdf) = std::env::var("BAREVERBS_VFIO_BDF") else {
            eprintln!("BAREVERBS_VFIO_BDF not set; skipping");
            return;
        };
        let dev = format!("vfio:{bdf}");
        let mut be = vfio(&bdf, CmdOptions::new(&dev)).unwrap_or_else(|e| panic!("{e}"));
        for (t, v) in [
            (PerfTest::WriteLat, vec!["-n", "1000"]),
            (PerfTest::SendLat, vec!["-n", "1000"]),
            (PerfTest::ReadLat, vec!["-n", "1000"]),
            (PerfTest::AtomicLat, vec!["-n", "1000"]),
            (PerfTest::WriteBw, vec!["-n", "5000"]),
            (PerfTest::SendBw, vec!["-n", "5000"]),
            (PerfTest::ReadBw, vec!["-n", "5000"]),
        ] {
            let mut a = vec!["t", "--device", dev.as_str()];
            a.extend(v);
            let cfg = configs(t, &T::parse_from(a).a).unwrap().remove(0);
            let r = be.run(&cfg).unwrap_or_else(|e| panic!("{t:?}: {e:#}"));
            assert!(!r.modeled);
            assert_eq!(r.completed_ok, r.posted, "{t:?}");
            assert_eq!((r.completed_err, r.mismatches), (0, 0), "{t:?}");
            eprintln!(
                "{t:?}: {:.2} Gb/s, {:.3} Mpps, post {:.0} ns",
                r.bandwidth_gbps, r.msg_rate_mpps, r.post_ns
            );
        }
    }
}
