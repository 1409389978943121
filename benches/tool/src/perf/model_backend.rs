//! `--device model`: the perftest engine ([`super::engine`]) on a device
//! that is the closed-form NIC model ([`NicModel`], perf ref §2.3)
//! and nothing else. Posting costs the *measured* CPU time of posting the
//! same WQE into a memory-backed SQ ([`probe`], [`post_samples`]); each
//! message then arrives, and completes, at the time the model gives: the
//! model's latency after its post, and no sooner than one NIC message time
//! (the model's non-CPU rate bound, shared by all QPs) after the previous
//! one. On arrival the device moves the bytes (WRITE, READ, SEND into the
//! next posted receive, fetch-and-add), so the engine's payload checks
//! run as on any device. `--loss` drops a message with the probability of
//! losing any of its MTU packets: RC retries up to 7 times (each costing
//! the retry timeout on latency tests, a NAK round trip on bandwidth
//! tests) and then completes with RETRY_EXC_ERR; UC/UD complete on
//! sending and the data never arrives.

use super::config::{qp_request, PerfRunConfig};
use super::engine::{Pair, PairAreas, PerfDevice, Plan, SideOps, Slot, Timer};
use super::flags::Conn;
use super::report::PerfRunReport;
use crate::model::{NicCost, NicModel, PcieModel, WqeOp, WqeShape};
use crate::perf::probe::{post_samples, probe, ProbeSpec};
use crate::perftest::format::{Endpoint, Verb};
use anyhow::Context as _;
use bareverbs::cq::PollError;
use bareverbs::cqe::{WcOpcode, WcStatus, WorkCompletion};
use bareverbs::qp::QpType as SqQpType;
use bareverbs::sizing::{sq_layout, DeviceCaps, SqLayout};
use bareverbs::sq::{PostError, PostErrorKind, RdmaOp, RdmaWr, SendOp, SendWr, Sge};
use bareverbs::wqe::{AddressVector, DS_BYTES};
use bareverbs_sim::rng::Rng;
use bareverbs_sim::vendor;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::ptr::NonNull;
use std::rc::Rc;

/// Picoseconds per nanosecond (the device's clock counts picoseconds).
const PS: f64 = 1000.0;
/// Retry count of the RC QPs (retry_cnt = 7).
const RETRIES: u32 = 7;

/// What happens when a message arrives.
#[derive(Clone, Copy, Debug)]
struct Arrival {
    /// Requester side index.
    from: usize,
    wr_id: u64,
    op: Op,
    /// Local buffer (host address, length): source of WRITE/SEND, target
    /// of READ and of the fetched atomic value.
    local: (u64, u32),
    /// Remote address (WRITE/READ/atomic).
    remote: u64,
    signaled: bool,
    /// The data arrives (false: lost on an unreliable QP).
    delivered: bool,
    /// RC retries were exhausted: an error completion, no data.
    failed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Write,
    Read,
    Send,
    FetchAdd(u64),
}

/// One side's queue state.
#[derive(Default)]
struct SideState {
    peer: usize,
    qpn: u32,
    posted: u64,
    retired: u64,
    cur_post: u32,
    cq: VecDeque<WorkCompletion>,
    recvs: VecDeque<(u64, Sge)>,
}

/// The model's timing of the current run.
#[derive(Clone, Copy, Default)]
struct Timing {
    /// CPU ns per posted WR (bandwidth tests).
    post_ns: f64,
    /// One-way latency after the post call returned, ns.
    rest_ns: f64,
    /// NIC ns per message (the model's non-CPU bound).
    gap_ns: f64,
    /// Probability that a message loses a packet.
    p_msg: f64,
    /// Extra ns per RC retry.
    retry_ns: f64,
    lat_test: bool,
    ud: bool,
    reliable: bool,
    max_post: u32,
    ds: u32,
    wqebbs: u32,
}

/// The model device's state, shared by its sides and its clock.
#[derive(Default)]
struct World {
    now_ps: u64,
    seq: u64,
    events: BinaryHeap<Reverse<(u64, u64)>>,
    pending: BTreeMap<u64, Arrival>,
    sides: Vec<SideState>,
    timing: Timing,
    /// CPU cost samples of latency posts (ns), used in turn.
    cpu: Vec<u64>,
    cpu_next: usize,
    /// When the NIC finished its last message (ps).
    nic_free_ps: f64,
    rng: Option<Rng>,
    retries: u64,
    doorbells: u64,
    loss: f64,
}

impl World {
    fn spend_ns(&mut self, ns: f64) {
        self.now_ps += (ns * PS).round() as u64;
    }

    /// Applies the earliest event; false when none is pending.
    fn step(&mut self) -> bool {
        let Some(Reverse((t, id))) = self.events.pop() else {
            return false;
        };
        self.now_ps = self.now_ps.max(t);
        if let Some(a) = self.pending.remove(&id) {
            self.arrive(a);
        }
        true
    }

    fn arrive(&mut self, a: Arrival) {
        let to = self.sides[a.from].peer;
        let mut status = WcStatus::Success;
        if a.failed {
            status = WcStatus::RetryExcErr;
        } else if a.delivered {
            match a.op {
                // SAFETY (all arms): the addresses are host addresses of
                // slots this device allocated for the run (the engine
                // posts only SGEs and remote addresses from its slot
                // tables, which stay allocated until close); raw copies.
                Op::Write => unsafe {
                    std::ptr::copy(
                        a.local.0 as *const u8,
                        a.remote as *mut u8,
                        a.local.1 as usize,
                    )
                },
                Op::Read => unsafe {
                    std::ptr::copy(
                        a.remote as *const u8,
                        a.local.0 as *mut u8,
                        a.local.1 as usize,
                    )
                },
                Op::FetchAdd(add) => unsafe {
                    let mut v = [0u8; 8];
                    std::ptr::copy_nonoverlapping(a.remote as *const u8, v.as_mut_ptr(), 8);
                    let old = u64::from_be_bytes(v);
                    std::ptr::copy_nonoverlapping(v.as_ptr(), a.local.0 as *mut u8, 8);
                    let new = old.wrapping_add(add).to_be_bytes();
                    std::ptr::copy_nonoverlapping(new.as_ptr(), a.remote as *mut u8, 8);
                },
                Op::Send => {
                    let grh = if self.timing.ud { 40 } else { 0 };
                    if let Some((rid, sge)) = self.sides[to].recvs.pop_front() {
                        let n = (a.local.1 as usize).min((sge.length as usize).saturating_sub(grh));
                        // SAFETY: as above; the receive SGE is a slot of
                        // the peer, at least GRH + message bytes long.
                        unsafe {
                            std::ptr::copy(
                                a.local.0 as *const u8,
                                (sge.addr as usize + grh) as *mut u8,
                                n,
                            )
                        };
                        let qp_num = self.sides[to].qpn;
                        self.sides[to].cq.push_back(WorkCompletion {
                            wr_id: rid,
                            status: WcStatus::Success,
                            opcode: WcOpcode::Recv,
                            byte_len: (n + grh) as u32,
                            qp_num,
                            ..WorkCompletion::default()
                        });
                    }
                }
            }
        }
        if a.signaled || a.failed {
            let opcode = match a.op {
                Op::Write => WcOpcode::RdmaWrite,
                Op::Read => WcOpcode::RdmaRead,
                Op::Send => WcOpcode::Send,
                Op::FetchAdd(_) => WcOpcode::FetchAdd,
            };
            let qp_num = self.sides[a.from].qpn;
            self.sides[a.from].cq.push_back(WorkCompletion {
                wr_id: a.wr_id,
                status,
                opcode,
                vendor_err: if a.failed {
                    u32::from(vendor::RETRY_EXC)
                } else {
                    0
                },
                qp_num,
                ..WorkCompletion::default()
            });
        }
    }

    /// Queues one posted WR's arrival at the model's time.
    fn post_one(
        &mut self,
        from: usize,
        wr_id: u64,
        op: Op,
        sgl: &[Sge],
        remote: u64,
        signaled: bool,
    ) {
        let t = self.timing;
        let now_ns = self.now_ps as f64 / PS;
        let mut at = (now_ns + t.rest_ns).max(self.nic_free_ps / PS + t.gap_ns);
        self.nic_free_ps = at * PS;
        let (mut delivered, mut failed) = (true, false);
        if t.p_msg > 0.0 {
            let rng = self.rng.get_or_insert_with(|| Rng::new(1));
            if rng.unit() < t.p_msg {
                if t.reliable {
                    failed = true;
                    for _ in 0..RETRIES {
                        self.retries += 1;
                        at += t.retry_ns;
                        if rng.unit() >= t.p_msg {
                            failed = false;
                            break;
                        }
                    }
                    delivered = !failed;
                } else {
                    delivered = false;
                }
            }
        }
        let len: u32 = sgl.iter().map(|g| g.length).sum();
        let local = (sgl.first().map_or(0, |g| g.addr), len);
        // The engine's SGE lists split one contiguous slot, so the first
        // SGE's address and the total length describe the message.
        let id = self.seq;
        self.seq += 1;
        self.pending.insert(
            id,
            Arrival {
                from,
                wr_id,
                op,
                local,
                remote,
                signaled,
                delivered,
                failed,
            },
        );
        self.events.push(Reverse(((at * PS).round() as u64, id)));
    }
}

/// The model's clock.
struct ModelTimer {
    w: Rc<RefCell<World>>,
    link_gbps: f64,
    model_name: String,
}

impl Timer for ModelTimer {
    fn now_ns(&mut self) -> u64 {
        self.w.borrow().now_ps / 1000
    }
    fn relax(&mut self) {
        let mut w = self.w.borrow_mut();
        if !w.step() {
            w.spend_ns(1e6);
        }
    }
    fn settle(&mut self) {
        let mut w = self.w.borrow_mut();
        let until = w.now_ps + 10_000_000_000;
        while w.events.peek().is_some_and(|Reverse((t, _))| *t <= until) {
            w.step();
        }
        w.now_ps = w.now_ps.max(until);
    }
    fn modeled(&self) -> bool {
        true
    }
    fn note(&self) -> String {
        format!(
            "times are MODELED by {} (closed form, no simulation), not measured on a NIC",
            self.model_name
        )
    }
    fn set_loss(&mut self, loss: f64) -> anyhow::Result<()> {
        self.w.borrow_mut().loss = loss.clamp(0.0, 1.0);
        Ok(())
    }
    fn link_gbps(&self) -> f64 {
        self.link_gbps
    }
    fn counters(&self, out: &mut BTreeMap<String, f64>) {
        let w = self.w.borrow();
        out.insert("rc_retries".into(), w.retries as f64);
    }
}

/// One side of a model QP pair.
struct ModelSide {
    w: Rc<RefCell<World>>,
    id: usize,
}

impl ModelSide {
    fn post_ops(&mut self, wrs: &[(u64, Op, &[Sge], u64, bool)]) -> Result<(), PostError> {
        let mut w = self.w.borrow_mut();
        let t = w.timing;
        let s = &w.sides[self.id];
        let outstanding = (s.posted - s.retired) as u32 + wrs.len() as u32;
        if outstanding > t.max_post {
            return Err(PostError {
                index: 0,
                kind: PostErrorKind::QueueFull {
                    outstanding,
                    max_post: t.max_post,
                },
            });
        }
        // The CPU posts the list: latency tests take the next measured
        // sample, bandwidth tests the measured mean per WR.
        let cpu = if t.lat_test && !w.cpu.is_empty() {
            let i = w.cpu_next % w.cpu.len();
            w.cpu_next += 1;
            w.cpu[i] as f64
        } else {
            t.post_ns * wrs.len() as f64
        };
        w.spend_ns(cpu);
        w.doorbells += 1;
        for &(wr_id, op, sgl, remote, sig) in wrs {
            w.post_one(self.id, wr_id, op, sgl, remote, sig);
        }
        let s = &mut w.sides[self.id];
        s.posted += wrs.len() as u64;
        s.cur_post = s.cur_post.wrapping_add(t.wqebbs * wrs.len() as u32);
        Ok(())
    }
}

fn op_of(op: &SendOp) -> Option<(Op, u64)> {
    Some(match *op {
        SendOp::Write { remote_addr, .. } => (Op::Write, remote_addr),
        SendOp::Read { remote_addr, .. } => (Op::Read, remote_addr),
        SendOp::Send => (Op::Send, 0),
        SendOp::FetchAdd {
            remote_addr, add, ..
        } => (Op::FetchAdd(add), remote_addr),
        _ => return None,
    })
}

impl SideOps for ModelSide {
    fn qpn(&self) -> u32 {
        self.w.borrow().sides[self.id].qpn
    }
    fn post(&mut self, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        let mut v = Vec::with_capacity(wrs.len());
        for (i, wr) in wrs.iter().enumerate() {
            let Some((op, remote)) = op_of(&wr.op) else {
                return Err(PostError {
                    index: i,
                    kind: PostErrorKind::OpNotAllowed {
                        op: wr.op.name(),
                        qp_type: SqQpType::Rc,
                    },
                });
            };
            let sig = wr.flags.contains(bareverbs::sq::SendFlags::SIGNALED);
            v.push((wr.wr_id, op, wr.sgl, remote, sig));
        }
        self.post_ops(&v)
    }
    unsafe fn post_rdma(&mut self, op: RdmaOp, wrs: &[RdmaWr<'_>]) -> Result<(), PostError> {
        let op = match op {
            RdmaOp::Write => Op::Write,
            RdmaOp::Read => Op::Read,
            RdmaOp::Send => Op::Send,
        };
        let v: Vec<_> = wrs
            .iter()
            .map(|w| (w.wr_id, op, w.sgl, w.remote_addr, w.signaled))
            .collect();
        self.post_ops(&v)
    }
    fn post_recv(&mut self, wr_id: u64, sge: Sge) -> anyhow::Result<()> {
        self.w.borrow_mut().sides[self.id]
            .recvs
            .push_back((wr_id, sge));
        Ok(())
    }
    fn poll(&mut self, out: &mut [WorkCompletion]) -> Result<usize, PollError> {
        let mut w = self.w.borrow_mut();
        let s = &mut w.sides[self.id];
        let mut n = 0;
        while n < out.len() {
            let Some(wc) = s.cq.pop_front() else { break };
            if wc.opcode != WcOpcode::Recv {
                s.retired = s.retired.max(wc.wr_id + 1);
            }
            out[n] = wc;
            n += 1;
        }
        Ok(n)
    }
    fn outstanding(&self) -> u32 {
        let w = self.w.borrow();
        let s = &w.sides[self.id];
        (s.posted - s.retired) as u32
    }
    fn cur_post(&self) -> u32 {
        self.w.borrow().sides[self.id].cur_post
    }
    fn wqe_ds(&self, _wqebb: u32) -> u32 {
        self.w.borrow().timing.ds
    }
}

/// The model device.
pub struct ModelBackend {
    model: Box<dyn NicModel>,
    retry_timeout_ns: f64,
    timer: ModelTimer,
    seed: u64,
    bufs: Vec<(NonNull<u8>, Layout)>,
    /// The model's cost of the current run's WQE (for the report).
    nic: Option<NicCost>,
}

/// The model, its parameters and the clock's counters (when the world is
/// not borrowed: `<borrowed>` otherwise); never the buffers' contents.
impl std::fmt::Debug for ModelBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("ModelBackend");
        d.field("model", &self.model.name())
            .field("retry_timeout_ns", &self.retry_timeout_ns)
            .field("link_gbps", &self.timer.link_gbps)
            .field("seed", &self.seed)
            .field("bufs", &self.bufs.len())
            .field(
                "buf_bytes",
                &self.bufs.iter().map(|(_, l)| l.size()).sum::<usize>(),
            )
            .field("nic", &self.nic);
        match self.timer.w.try_borrow() {
            Ok(w) => d
                .field("now_ps", &w.now_ps)
                .field("doorbells", &w.doorbells)
                .field("retries", &w.retries)
                .field("sides", &w.sides.len()),
            Err(_) => d.field("world", &format_args!("<borrowed>")),
        };
        d.finish_non_exhaustive()
    }
}

impl ModelBackend {
    /// With `model` (default: [`PcieModel`] with perf ref §2.3
    /// parameters); `seed` drives the loss process.
    pub fn new(model: PcieModel, seed: u64) -> Self {
        let retry_timeout_ns = model.params.retry_timeout_ns();
        let link_gbps = model.params.link_gbps;
        let model_name = model.name().to_string();
        ModelBackend {
            model: Box::new(model),
            retry_timeout_ns,
            timer: ModelTimer {
                w: Rc::new(RefCell::new(World::default())),
                link_gbps,
                model_name,
            },
            seed,
            bufs: Vec::new(),
            nic: None,
        }
    }

    fn area(&mut self, n: usize, slot_bytes: usize, key: u32) -> anyhow::Result<Vec<Slot>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let len = n * slot_bytes;
        let layout = Layout::from_size_align(len, 4096)
            .map_err(|_| anyhow::anyhow!("a {len}-byte message buffer cannot be laid out"))?;
        // SAFETY: the layout has a non-zero size.
        let p = NonNull::new(unsafe { alloc_zeroed(layout) })
            .ok_or_else(|| anyhow::anyhow!("out of memory for a {len}-byte message buffer"))?;
        self.bufs.push((p, layout));
        Ok((0..n)
            .map(|i| {
                // SAFETY: i * slot_bytes < len, inside the allocation.
                let cpu = unsafe { NonNull::new_unchecked(p.as_ptr().add(i * slot_bytes)) };
                Slot {
                    cpu,
                    addr: cpu.as_ptr() as u64,
                    key,
                }
            })
            .collect())
    }

    /// The sides (into `w`) and message areas of every pair of the run.
    fn pair_parts(&mut self, w: &mut World, plan: &Plan) -> anyhow::Result<Vec<PairParts>> {
        let mut pairs = Vec::with_capacity(plan.pairs);
        let ar = plan.areas;
        for q in 0..plan.pairs {
            let (ia, ib) = (2 * q, 2 * q + 1);
            let qa = 0x100 + ia as u32;
            let qb = 0x100 + ib as u32;
            w.sides.push(SideState {
                peer: ib,
                qpn: qa,
                ..SideState::default()
            });
            w.sides.push(SideState {
                peer: ia,
                qpn: qb,
                ..SideState::default()
            });
            let n = |on: bool| if on { plan.slots } else { 0 };
            let sb = plan.slot_bytes;
            let a_src = self.area(n(ar.a_src), sb, 0x1000 + 4 * q as u32)?;
            let a_dst = self.area(n(ar.a_dst), sb, 0x1001 + 4 * q as u32)?;
            let b_src = self.area(n(ar.b_src), sb, 0x1002 + 4 * q as u32)?;
            let b_dst = self.area(n(ar.b_dst), sb, 0x1003 + 4 * q as u32)?;
            let areas = PairAreas {
                a_src,
                a_dst,
                b_src,
                b_dst,
            };
            let local = areas.endpoint(true, 0, qa, 0);
            let remote = areas.endpoint(false, 0, qb, 0);
            pairs.push(PairParts {
                ia,
                ib,
                areas,
                local,
                remote,
            });
        }
        Ok(pairs)
    }

    /// The engine's pair over parts `p`: two sides of the model device.
    fn pair(&self, p: PairParts) -> Pair {
        Pair::new(
            Box::new(ModelSide {
                w: self.timer.w.clone(),
                id: p.ia,
            }),
            Box::new(ModelSide {
                w: self.timer.w.clone(),
                id: p.ib,
            }),
            p.areas,
            AddressVector::datagram(0, 0, false, 0, 0, 0, [0; 6], 0, 0, 0, [0; 16]),
            p.local,
            p.remote,
        )
    }
}

impl Drop for ModelBackend {
    fn drop(&mut self) {
        let _ = PerfDevice::close(self);
    }
}

fn wqe_op(v: Verb) -> WqeOp {
    match v {
        Verb::Write => WqeOp::Write,
        Verb::Send => WqeOp::Send,
        Verb::Read => WqeOp::Read,
        Verb::Atomic => WqeOp::Atomic,
    }
}

/// One pair of a model run before its sides exist: the side indices in
/// the world, the four message areas and the two endpoints.
struct PairParts {
    ia: usize,
    ib: usize,
    areas: PairAreas,
    local: Endpoint,
    remote: Endpoint,
}

/// DS units of UD's datagram segment (the address vector).
const UD_AV_DS: u32 = (size_of::<AddressVector>() / DS_BYTES) as u32;

/// What to post into the memory-backed SQ of the run's exact `layout`
/// (batches of `batch` WRs), and the DS the probe leaves out: UD's
/// datagram segment ([`UD_AV_DS`]) is added by the rule; the probe posts the
/// RC-shaped remainder.
fn probe_spec(cfg: &PerfRunConfig, plan: &Plan, layout: &SqLayout, batch: u32) -> (ProbeSpec, u32) {
    let (probe_type, extra_ds) = match cfg.conn {
        Conn::Rc => (SqQpType::Rc, 0),
        Conn::Uc => (SqQpType::Uc, 0),
        Conn::Ud => (SqQpType::Rc, UD_AV_DS),
    };
    let spec = ProbeSpec {
        op: wqe_op(plan.verb),
        qp_type: probe_type,
        ring_bbs: layout.wqe_cnt,
        max_post: layout.max_post,
        max_gs: cfg.max_send_sge,
        max_inline: layout.max_inline_data,
        posted_sge: plan.k,
        inline: plan.inline,
        payload: plan.size as u32,
        batch,
        atomics: plan.atomics,
        blueflame: true,
    };
    (spec, extra_ds)
}

/// The WQE the model costs: `ds` DS on `layout`, posted at `post_ns`.
fn wqe_shape(
    cfg: &PerfRunConfig,
    plan: &Plan,
    layout: &SqLayout,
    ds: u32,
    batch: u32,
    post_ns: f64,
) -> WqeShape {
    WqeShape {
        op: wqe_op(plan.verb),
        ds,
        wqebbs: (16 * ds).div_ceil(64),
        posted_sge: if plan.inline { 0 } else { plan.k },
        inline: plan.inline,
        payload_bytes: plan.size as u32,
        batch,
        ring_bytes: layout.buf_bytes,
        slot_bytes: layout.wqe_size,
        active_qps: cfg.qps,
        post_ns: Some(post_ns),
    }
}

impl PerfDevice for ModelBackend {
    fn name(&self) -> String {
        format!("model-only ({})", self.model.name())
    }

    fn timing_note(&self) -> String {
        self.timer.note()
    }

    fn caps(&self, cfg: &PerfRunConfig) -> DeviceCaps {
        cfg.caps
    }

    fn timer(&mut self) -> &mut dyn Timer {
        &mut self.timer
    }

    fn variance_note(&self) -> Option<String> {
        Some(
            "only the measured CPU cost of each post varies (latency tests replay measured \
             samples); the NIC model itself is deterministic, so BW peak ~ BW average and the \
             latency spread is the host CPU's, not a NIC's"
                .into(),
        )
    }

    fn open(&mut self, cfg: &PerfRunConfig, plan: &Plan) -> anyhow::Result<Vec<Pair>> {
        let layout = sq_layout(&qp_request(cfg), &cfg.caps)
            .map_err(|e| anyhow::anyhow!("QP creation fails: {e}"))?;
        let bw = cfg.test.is_bw();
        let batch = if bw { cfg.post_list.max(1) } else { 1 };
        let (spec, extra_ds) = probe_spec(cfg, plan, &layout, batch);
        let pr = probe(&spec, 20_000, 3).context("posting into the memory-backed SQ")?;
        let ds = pr.ds + extra_ds;
        let shape = wqe_shape(cfg, plan, &layout, ds, batch, pr.post_ns);
        let nic = self.model.wqe(&shape);
        let gap_ns = {
            let mut s2 = shape;
            s2.post_ns = Some(1e-3);
            1e3 / self.model.wqe(&s2).rate_bound_mpps
        };
        let cpu = if bw {
            Vec::new()
        } else {
            post_samples(&spec, (cfg.iters as usize).clamp(1, 1 << 16))?
        };
        let pkts = cfg.size.div_ceil(cfg.mtu.max(1) as u64).max(1);
        let loss = self.timer.w.borrow().loss;
        let p_msg = 1.0 - (1.0 - loss).powi(pkts.min(i32::MAX as u64) as i32);
        let mut w = World {
            loss,
            rng: Some(Rng::new(self.seed)),
            cpu,
            timing: Timing {
                post_ns: pr.post_ns,
                rest_ns: (nic.latency_ns - nic.terms.cpu_ns).max(0.0),
                gap_ns,
                p_msg,
                retry_ns: if bw {
                    2.0 * nic.latency_ns
                } else {
                    self.retry_timeout_ns
                },
                lat_test: !bw,
                ud: cfg.conn == Conn::Ud,
                reliable: cfg.conn == Conn::Rc,
                max_post: plan.layout.sq.max_post,
                ds,
                wqebbs: shape.wqebbs,
            },
            ..World::default()
        };
        let pairs = self.pair_parts(&mut w, plan)?;
        *self.timer.w.borrow_mut() = w;
        self.nic = Some(nic);
        Ok(pairs.into_iter().map(|p| self.pair(p)).collect())
    }

    fn close(&mut self) -> anyhow::Result<()> {
        let loss = self.timer.w.borrow().loss;
        *self.timer.w.borrow_mut() = World {
            loss,
            ..World::default()
        };
        for (p, l) in self.bufs.drain(..) {
            // SAFETY: allocated in `area` with this layout; the run's
            // sides are gone and nothing else holds these addresses.
            unsafe { dealloc(p.as_ptr(), l) };
        }
        Ok(())
    }

    fn annotate(&self, _cfg: &PerfRunConfig, rep: &mut PerfRunReport) {
        if let Some(nic) = self.nic {
            rep.modeled_latency_ns = nic.latency_ns;
            rep.nic = nic;
            let posted = rep.posted as f64;
            let batch = rep.counters.get("wrs_posted").copied().unwrap_or(posted)
                / rep
                    .counters
                    .get("doorbells")
                    .copied()
                    .unwrap_or(1.0)
                    .max(1.0);
            rep.counters.insert(
                "bf_writes".into(),
                if nic.bf {
                    rep.counters.get("doorbells").copied().unwrap_or(0.0)
                } else {
                    0.0
                },
            );
            rep.counters.insert(
                "nic_wqe_fetch_bytes".into(),
                nic.wqe_fetch_bytes as f64 / batch.max(1.0) * posted,
            );
            rep.counters.insert(
                "nic_payload_fetch_bytes".into(),
                nic.payload_fetch_bytes as f64 * posted,
            );
            rep.counters
                .insert("pcie_reads".into(), nic.pcie_reads * posted);
        }
    }
}

#[cfg(test)]
mod debug_tests {
    use super::*;

    #[test]
    fn debug_reports_a_borrowed_world_instead_of_waiting() {
        let be = ModelBackend::new(PcieModel::default(), 7);
        let s = format!("{be:?}");
        assert!(s.contains("seed: 7") && s.contains("now_ps: 0"), "{s}");
        let w = be.timer.w.borrow_mut();
        let s = format!("{be:?}");
        drop(w);
        assert!(s.contains("world: <borrowed>"), "{s}");
    }
}
