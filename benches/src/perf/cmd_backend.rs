//! The command-path devices of the perftest engine
//! ([`super::engine`]): `--device vfio:BDF` (a ConnectX through VFIO,
//! wall-clock time) and `--device fw-sim` (the simulator behind the
//! firmware command interface, virtual time).
//!
//! [`CmdBackend`] is generic over the core [`Device`], so the code that runs
//! against hardware is the code CI runs against the simulator. For each
//! run it creates, by command, a protection domain, DMA buffers with memory
//! keys ([`Mkey::memory_region`] gives the core's [`MemoryRegion`]), one CQ
//! per side and QP pairs on port 1 connected to each other through the
//! NIC's loopback (address path with force-loopback; the simulator routes
//! `fl` to the local port). QP geometry is the exact mlx5 sizing of the
//! run's request ([`qp_layout`](bareverbs::sizing::qp_layout) with the
//! device's own capabilities); a request the device cannot create is
//! refused with the sizing error's text ([`QpRejected`]). Doorbells are
//! 8-byte doorbells by default ([`BlueFlame::doorbell_only`]);
//! `--blueflame` copies single inline WQEs through the BlueFlame register
//! as the provider does. The data path is the core's queues
//! ([`post_send`](bareverbs::sq::SendQueue::post_send),
//! [`post_rdma_raw`](bareverbs::sq::SendQueue::post_rdma_raw),
//! [`post_recv_raw`](bareverbs::rq::RecvQueue::post_recv_raw),
//! [`CompletionQueue::poll`] with the [`QueuePair`] as resolver).
//!
//! Time comes from a [`Timer`]: [`WallTimer`] (monotonic wall clock) on
//! hardware, [`FabricTimer`] (the fabric's virtual clock, which the
//! simulator's cost model drives) on the simulator.

use super::engine::{Pair, PerfDevice, Plan, SideOps, Slot, QKEY};
pub use super::engine::{QpRejected, Timer, WallTimer, DEFAULT_TIMEOUT_NS, RQ_WQES};
use super::run::{Conn, PerfBackend, PerfRunConfig};
use anyhow::{anyhow, bail};
use bareverbs::cmd::{Bar0, Clock, CmdError};
use bareverbs::cq::{CompletionQueue, DynCompletionQueue, PollError};
use bareverbs::cqe::{CqeSize, WorkCompletion};
use bareverbs::device::{
    AddressPath, CqHandle, Device, DeviceConfig, DeviceError, Init2Rtr, Mkey, Pd, QpHandle, QpSpec,
    Rst2Init, Rtr2Rts, UarMap,
};
use bareverbs::mr::{Access, MemoryRegion};
use bareverbs::platform::{DmaAllocator, DmaBuf, Uar, BF_OFFSET};
use bareverbs::qp::QpType;
use bareverbs::queue_pair::QueuePair;
use bareverbs::rq::{RecvError, RecvWr, RqConfig, RqSlot};
use bareverbs::sizing::DeviceCaps;
use bareverbs::sq::{BlueFlame, PostError, RdmaOp, RdmaWr, SendWr, Sge, SqConfig, SqSlot};
use bareverbs::wqe::AddressVector;
use std::collections::BTreeMap;
use std::ptr::NonNull;

/// Most bytes of message slots packed under one memory key (a larger
/// slot gets a buffer and key of its own: `Device::create_mkey` picks an
/// MTT page size whose list fits one command).
pub const CHUNK_BYTES: usize = 2 << 20;

/// The simulator's virtual clock. A busy-wait step processes the fabric's
/// next event; with nothing pending the clock moves 1 ms, so a wait for
/// something that can no longer happen reaches its limit.
pub struct FabricTimer {
    fabric: bareverbs_sim::Fabric,
    /// The devices whose counters are reported, by prefix.
    nics: Vec<(&'static str, bareverbs_sim::Device)>,
    base: BTreeMap<String, f64>,
    note: String,
}

impl FabricTimer {
    /// A timer over `fabric`, reporting the counters of `nic` (as `nic.*`).
    pub fn new(fabric: bareverbs_sim::Fabric, nic: bareverbs_sim::Device) -> Self {
        Self::with_nics(
            fabric,
            vec![("nic", nic)],
            "the same code as --device vfio:BDF, on the simulator behind the firmware command \
             interface -- times are MODELED (virtual clock), not measured on a NIC"
                .into(),
        )
    }

    /// A timer over `fabric`, reporting the counters of each device under
    /// its prefix; `note` is what the header says about the times.
    pub fn with_nics(
        fabric: bareverbs_sim::Fabric,
        nics: Vec<(&'static str, bareverbs_sim::Device)>,
        note: String,
    ) -> Self {
        FabricTimer {
            fabric,
            nics,
            base: BTreeMap::new(),
            note,
        }
    }

    /// The fabric.
    pub fn fabric(&self) -> &bareverbs_sim::Fabric {
        &self.fabric
    }

    /// The devices' cumulative counters by name.
    fn totals(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for (prefix, nic) in &self.nics {
            if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(nic.counters()) {
                for (k, v) in m {
                    if let Some(x) = v.as_f64() {
                        out.insert(format!("{prefix}.{k}"), x);
                    }
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
        self.note.clone()
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
            out.insert(k, since);
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

/// perftest's tests on a core [`Device`] through its command interface.
pub struct CmdBackend<B: Bar0 + UarMap, C: Clock, A: DmaAllocator, T: Timer> {
    dev: Option<Device<B, C, A>>,
    timer: T,
    opts: CmdOptions,
    /// Kept alive until after teardown (the VFIO mappings).
    keep: Option<Box<dyn std::any::Any>>,
    /// What the current run created.
    objs: Objects,
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
            objs: Objects::default(),
        }
    }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator, T: Timer> Drop for CmdBackend<B, C, A, T> {
    fn drop(&mut self) {
        let objs = std::mem::take(&mut self.objs);
        if let Some(d) = self.dev.as_mut() {
            let _ = objs.destroy(d);
        }
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

fn mtu_enum(mtu: u32) -> anyhow::Result<u8> {
    bareverbs::cmd::ops::IbMtu::from_bytes(mtu)
        .map(bareverbs::cmd::ops::IbMtu::code)
        .ok_or_else(|| anyhow!("-m {mtu}: the MTU must be 256, 512, 1024, 2048 or 4096"))
}

/// How the QPs of a run are connected (command-path specifics).
struct Link {
    qp_type: QpType,
    mtu: u8,
    log_ra: u8,
}

impl<B, C, A, T> PerfDevice for CmdBackend<B, C, A, T>
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

    fn caps(&self, cfg: &PerfRunConfig) -> DeviceCaps {
        self.dev
            .as_ref()
            .map(|d| d.device_caps())
            .unwrap_or(cfg.caps)
    }

    fn memory_limit(&self) -> Option<u64> {
        // The simulator's DMA memory is this process's heap; on hardware
        // the registered buffers are what the host must provide anyway.
        self.timer.modeled().then_some(1 << 30)
    }

    fn variance_note(&self) -> Option<String> {
        self.timer.modeled().then(|| {
            "none modeled: the simulator's cost model is deterministic (no jitter), so latency \
             varies only with loss and retransmission, completions in steady state are evenly \
             spaced and BW peak ~ BW average -- a property of the model, not a measured peak"
                .into()
        })
    }

    fn inflight_bytes(&self) -> Option<u64> {
        self.timer
            .modeled()
            .then_some(super::engine::SIM_INFLIGHT_BYTES)
    }

    fn timer(&mut self) -> &mut dyn Timer {
        &mut self.timer
    }

    fn open(&mut self, cfg: &PerfRunConfig, plan: &Plan) -> anyhow::Result<Vec<Pair>> {
        let dev = self
            .dev
            .as_mut()
            .ok_or_else(|| anyhow!("the device was torn down"))?;
        let st = match cfg.conn {
            Conn::Rc => QpType::Rc,
            Conn::Uc => QpType::Uc,
            Conn::Ud => QpType::Ud,
        };
        let hca = dev.hca_caps();
        let link = Link {
            qp_type: st,
            mtu: mtu_enum(cfg.mtu)?,
            log_ra: hca.log_max_ra_req_qp.min(hca.log_max_ra_res_qp).min(4),
        };
        let objs = &mut self.objs;
        let pd = dev.alloc_pd().map_err(|e| anyhow!("ALLOC_PD: {e}"))?;
        objs.pd = Some(pd);
        let mut pairs = Vec::with_capacity(plan.pairs);
        for q in 0..plan.pairs {
            pairs.push(open_pair(dev, objs, &self.opts, cfg, plan, &link, pd, q)?);
        }
        Ok(pairs)
    }

    fn close(&mut self) -> anyhow::Result<()> {
        let objs = std::mem::take(&mut self.objs);
        match self.dev.as_mut() {
            Some(dev) => objs.destroy(dev),
            None => Ok(()),
        }
    }
}

/// Creates one QP pair by command (CQs, QPs, slots), connects it and
/// builds its queues.
#[allow(clippy::too_many_arguments)]
fn open_pair<B, C, A>(
    dev: &mut Device<B, C, A>,
    objs: &mut Objects,
    opts: &CmdOptions,
    cfg: &PerfRunConfig,
    plan: &Plan,
    link: &Link,
    pd: Pd,
    q: usize,
) -> anyhow::Result<Pair>
where
    B: Bar0 + UarMap,
    B::Uar: 'static,
    C: Clock,
    A: DmaAllocator,
{
    let mut mrs_a = Vec::new();
    let mut mrs_b = Vec::new();
    let sb = plan.slot_bytes;
    let n = |on: bool| if on { plan.slots } else { 0 };
    let ar = plan.areas;
    let a_src = area(dev, objs, pd, n(ar.a_src), sb, &mut mrs_a)?;
    let a_dst = area(dev, objs, pd, n(ar.a_dst), sb, &mut mrs_a)?;
    let b_src = area(dev, objs, pd, n(ar.b_src), sb, &mut mrs_b)?;
    let b_dst = area(dev, objs, pd, n(ar.b_dst), sb, &mut mrs_b)?;
    let l = &plan.layout;
    // Each CQ holds a completion for every WR its QP may have outstanding
    // (ref §3.7): the run's cap on send WRs plus the receive queue.
    let ncqe = (plan.cap as usize + RQ_WQES).next_power_of_two() as u32;
    let first_cq = objs.cqs.len();
    for _ in 0..2 {
        let cq = dev
            .create_cq(ncqe, CqeSize::B64)
            .map_err(|e| anyhow!("CREATE_CQ with {ncqe} entries: {e}"))?;
        objs.cqs.push(cq);
    }
    let log = |v: u32| v.trailing_zeros() as u8;
    let first_qp = objs.qps.len();
    for side in 0..2u32 {
        let spec = QpSpec {
            qp_type: link.qp_type,
            pd,
            send_cqn: objs.cqs[first_cq + side as usize].cqn(),
            recv_cqn: objs.cqs[first_cq + side as usize].cqn(),
            log_sq_size: log(l.sq.wqe_cnt),
            log_rq_size: log(l.rq.wqe_cnt),
            rq_wqe_shift: l.rq.wqe_shift as u8,
            srqn: None,
            user_index: 0x100 + 2 * q as u32 + side,
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
    let (qa, qb) = (objs.qps[first_qp].qpn(), objs.qps[first_qp + 1].qpn());
    let (x, y) = objs.qps.split_at_mut(first_qp + 1);
    connect(dev, &mut x[first_qp], qb, link, (0x100, 0x200))?;
    connect(dev, &mut y[0], qa, link, (0x200, 0x100))?;

    let hca = dev.hca_caps();
    let bf_reg = if hca.bf {
        1usize << hca.log_bf_reg_size
    } else {
        0
    };
    let qp_type = match cfg.conn {
        Conn::Rc => bareverbs::sizing::QpType::Rc,
        Conn::Uc => bareverbs::sizing::QpType::Uc,
        Conn::Ud => bareverbs::sizing::QpType::Ud,
    };
    let sqc = |k: usize| SqConfig {
        qpn: 0,
        qp_type,
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
        .map_uar(objs.qps[first_qp].uar_index())
        .map_err(|e| anyhow!("{e}"))?;
    let uar_b = dev
        .map_uar(objs.qps[first_qp + 1].uar_index())
        .map_err(|e| anyhow!("{e}"))?;
    // Queue storage sized at run time from the geometry the device was
    // given (no size macro, no big stack).
    let a = make_side(
        uar_a,
        &objs.qps[first_qp],
        &objs.cqs[first_cq],
        sqc(0),
        rqc,
        mrs_a,
    )?;
    let b = make_side(
        uar_b,
        &objs.qps[first_qp + 1],
        &objs.cqs[first_cq + 1],
        sqc(1),
        rqc,
        mrs_b,
    )?;
    // What perftest prints for each side (ctx_print_pingpong_data): the
    // QPN, the send PSN given at RTR2RTS, the buffer the peer accesses.
    // LID 0 and a zero GID: the loopback path carries neither.
    let ep = |qpn: u32, psn: u32, s: Option<&Slot>| crate::perftest::format::Endpoint {
        lid: 0,
        qpn,
        psn,
        out_reads: 16,
        rkey: s.map_or(0, |s| s.key),
        vaddr: s.map_or(0, |s| s.addr),
        gid: [0; 16],
    };
    let la = a_dst.first().or(a_src.first());
    let lb = b_dst.first().or(b_src.first());
    let (local, remote) = (ep(qa, 0x200, la), ep(qb, 0x100, lb));
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
    Ok(Pair {
        a,
        b,
        a_src,
        a_dst,
        b_src,
        b_dst,
        av,
        local,
        remote,
    })
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

/// `n` slots of `slot_bytes` in DMA buffers of at most [`CHUNK_BYTES`]
/// (or one slot, when it is larger), each under its own memory key.
fn area<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    dev: &mut Device<B, C, A>,
    objs: &mut Objects,
    pd: Pd,
    n: usize,
    slot_bytes: usize,
    mrs: &mut Vec<MemoryRegion>,
) -> anyhow::Result<Vec<Slot>> {
    const ALL: Access = Access::LOCAL_WRITE
        .union(Access::REMOTE_WRITE)
        .union(Access::REMOTE_READ)
        .union(Access::REMOTE_ATOMIC);
    let per_chunk = (CHUNK_BYTES / slot_bytes).max(1);
    let mut slots = Vec::with_capacity(n);
    if n == 0 {
        return Ok(slots);
    }
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

/// One side's queues over runtime-sized storage (shared with the direct
/// simulator device, [`super::sim_backend`]).
pub(super) struct Side<U: Uar> {
    /// The QP's host queues.
    pub(super) qp: QueuePair<U, Vec<SqSlot>, Vec<RqSlot>>,
    /// The side's CQ (sends and receives).
    pub(super) cq: DynCompletionQueue,
    /// The side's registered regions.
    pub(super) mrs: Vec<MemoryRegion>,
    /// The send ring (WQEs are read back from it).
    pub(super) ring: DmaBuf,
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
    plan: &Link,
    psn: (u32, u32),
) -> anyhow::Result<()> {
    let rc = plan.qp_type == QpType::Rc;
    let ud = plan.qp_type == QpType::Ud;
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

#[cfg(test)]
mod tests {
    //! The command-path backend over `bring_up_on` (the simulator behind
    //! the firmware command interface). Expected WQE sizes come from the
    //! segment rules ([ref §1.7](bareverbs::reference): ctrl 16, raddr 16, data 16 per SGE,
    //! inline 4 + payload rounded to 16, atomic 16), not from the code.
    use super::*;
    use crate::perf::run::{configs, PerfArgs, PerfRunReport, PerfTest};
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
    /// the 15 extra gathers (t_sge = 11 ns each, perf ref §2.3).
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
        // -q 2 runs two QP pairs, each through all its iterations.
        let r = run(PerfTest::WriteBw, &["-q", "2", "-n", "100", "-s", "1024"]).unwrap();
        clean(&r, 200);
        assert_eq!(r.tcompleted.len(), 200);
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
