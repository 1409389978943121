//! The simulated world: devices, the fabric between their ports, the
//! deterministic event queue on virtual time, the fault plan, and the CQE
//! writer. Transport logic lives in [`crate::transport`].

use crate::cost::{trunc_u64, Counters, FastCosts, LenCosts, ModelParams};
use crate::dma::HeapDma;
use crate::fault::{Fate, FaultPlan};
use crate::objects::{AsyncEvent, Cq, Mr, Qp, Srq};
use crate::rng::Rng;
use crate::wire::{Packet, Req};
use bareverbs::cqe::Cqe64;
use bareverbs::qp::QpState;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::rc::Rc;
use std::sync::Arc;

/// Base of QP numbers on every device (qpn = base + table index).
pub const QPN_BASE: u32 = 0x100;
/// Vendor syndromes written in error CQEs, by syndrome.
///
/// Only WR_FLUSH_ERR's 0xF9 is confirmed from public logs of ConnectX
/// hardware ("syndrome 0x5, vendor syndrome 0xf9", linux-nvme/nvme-cli
/// issue #3268; "Work Request Flushed Error, vendor_err:0xf9",
/// accelio/accelio issue #181). The others are model values, not taken
/// from hardware: the vendor syndrome is opaque to verbs ([ref §5.6](bareverbs::reference):
/// `wc.vendor_err = vendor_err_synd`).
pub mod vendor {
    use bareverbs::cqe::Syndrome;

    /// WR_FLUSH_ERR (0x05) → 0xF9 (observed on hardware, see above).
    pub const FLUSH: u8 = 0xf9;
    /// LOCAL_LENGTH_ERR (0x01).
    pub const LOCAL_LENGTH: u8 = 0x68;
    /// LOCAL_QP_OP_ERR (0x02).
    pub const LOCAL_QP_OP: u8 = 0x69;
    /// LOCAL_PROT_ERR (0x04).
    pub const LOCAL_PROT: u8 = 0x6a;
    /// REMOTE_INVAL_REQ_ERR (0x12).
    pub const REMOTE_INVAL_REQ: u8 = 0x8a;
    /// REMOTE_ACCESS_ERR (0x13).
    pub const REMOTE_ACCESS: u8 = 0x88;
    /// REMOTE_OP_ERR (0x14).
    pub const REMOTE_OP: u8 = 0x89;
    /// TRANSPORT_RETRY_EXC_ERR (0x15).
    pub const RETRY_EXC: u8 = 0x81;
    /// RNR_RETRY_EXC_ERR (0x16).
    pub const RNR_RETRY_EXC: u8 = 0x82;

    /// The vendor syndrome for `syndrome`.
    pub const fn of(syndrome: u8) -> u8 {
        match Syndrome::from_u8(syndrome) {
            Syndrome::LocalLengthErr => LOCAL_LENGTH,
            Syndrome::LocalQpOpErr => LOCAL_QP_OP,
            Syndrome::LocalProtErr => LOCAL_PROT,
            Syndrome::WrFlushErr => FLUSH,
            Syndrome::RemoteInvalReqErr => REMOTE_INVAL_REQ,
            Syndrome::RemoteAccessErr => REMOTE_ACCESS,
            Syndrome::RemoteOpErr => REMOTE_OP,
            Syndrome::TransportRetryExcErr => RETRY_EXC,
            Syndrome::RnrRetryExcErr => RNR_RETRY_EXC,
            _ => 0,
        }
    }
}

/// One entry of the event trace (for determinism checks and debugging).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceEvent {
    /// Virtual time (ns).
    pub t_ns: u64,
    /// What happened.
    pub kind: TraceKind,
    /// Device index.
    pub dev: u16,
    /// QP number.
    pub qpn: u32,
    /// PSN or WQE counter, by kind.
    pub arg: u32,
}

impl TraceEvent {
    /// An entry.
    #[inline]
    pub(crate) const fn new(t_ns: u64, kind: TraceKind, dev: u16, qpn: u32, arg: u32) -> Self {
        TraceEvent {
            t_ns,
            kind,
            dev,
            qpn,
            arg,
        }
    }
}

/// Kinds of trace entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceKind {
    /// A packet was sent.
    Send,
    /// A packet was lost.
    Lost,
    /// A packet arrived.
    Arrive,
    /// A retransmission timer fired.
    Timeout,
    /// An RNR timer fired.
    RnrRetry,
    /// A CQE was written (arg = wqe_counter | syndrome << 16).
    Cqe,
    /// A QP entered ERR.
    QpError,
    /// A CQ overran.
    CqOverrun,
}

pub(crate) enum Event {
    Deliver(Packet),
    RetryTimer {
        dev: u16,
        qi: u32,
        gen: u64,
    },
    RnrTimer {
        dev: u16,
        qi: u32,
        gen: u64,
    },
    /// The last bit of an unreliable (UC/UD) message left the port: its
    /// send WQE (found by PSN and WQE counter) completes.
    TxDone {
        dev: u16,
        qi: u32,
        psn: u32,
        wqe_counter: u16,
    },
}

/// A heap entry: due time, tie-breaking sequence number and the slot of
/// the event in the slab (kept small so heap operations move little).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Timed {
    t: u64,
    seq: u64,
    slot: u32,
}
impl PartialOrd for Timed {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Timed {
    fn cmp(&self, o: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse for earliest first.
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

/// A retransmission timer armed but not yet put on the event heap. Most
/// timers are disarmed (the ACK arrives) before they are due; holding the
/// latest one aside saves the heap a push and a pop for each. Its key
/// (due time, sequence number) is taken when it is armed, so the order in
/// which events run is the order a heap entry would have given.
#[derive(Clone, Copy)]
struct Deferred {
    t: u64,
    seq: u64,
    dev: u16,
    qi: u32,
    gen: u64,
}

/// One device's state.
pub(crate) struct Dev {
    #[allow(dead_code)] // kept for the command interface (page allocation)
    pub dma: Arc<HeapDma>,
    pub lid: u16,
    pub qps: Vec<Option<Qp>>,
    pub cqs: Vec<Option<Cq>>,
    pub srqs: Vec<Option<Srq>>,
    pub mrs: Vec<Option<Mr>>,
    pub next_pd: u32,
    pub events: Vec<AsyncEvent>,
    pub counters: Counters,
    /// Virtual time the port's transmitter is free again.
    pub tx_free: u64,
    /// QP-context cache: most recently used QP index first.
    pub lru_head: Option<u32>,
    pub lru_tail: Option<u32>,
    pub lru_len: u32,
}

impl Dev {
    fn unlink(&mut self, qi: u32) {
        let (p, n) = match self.qps.get(qi as usize).and_then(|q| q.as_ref()) {
            Some(q) => (q.lru_prev, q.lru_next),
            None => return,
        };
        match p {
            Some(p) => {
                if let Some(Some(q)) = self.qps.get_mut(p as usize) {
                    q.lru_next = n;
                }
            }
            None => self.lru_head = n,
        }
        match n {
            Some(n) => {
                if let Some(Some(q)) = self.qps.get_mut(n as usize) {
                    q.lru_prev = p;
                }
            }
            None => self.lru_tail = p,
        }
    }

    /// Drops QP `qi` from the QP-context cache (before it is destroyed).
    pub fn qpc_forget(&mut self, qi: u32) {
        if matches!(self.qps.get(qi as usize), Some(Some(q)) if q.in_qpc) {
            self.unlink(qi);
            self.lru_len -= 1;
            if let Some(Some(q)) = self.qps.get_mut(qi as usize) {
                q.in_qpc = false;
                q.lru_prev = None;
                q.lru_next = None;
            }
        }
    }

    /// Touches QP `qi` in the QP-context cache of `capacity` entries;
    /// returns true on a miss (the context had to be fetched).
    pub fn qpc_touch(&mut self, qi: u32, capacity: u32) -> bool {
        let hit = matches!(self.qps.get(qi as usize), Some(Some(q)) if q.in_qpc);
        if hit {
            if self.lru_head == Some(qi) {
                return false;
            }
            self.unlink(qi);
        } else {
            self.lru_len += 1;
        }
        let old = self.lru_head;
        if let Some(Some(q)) = self.qps.get_mut(qi as usize) {
            q.in_qpc = true;
            q.lru_prev = None;
            q.lru_next = old;
        }
        if let Some(o) = old {
            if let Some(Some(q)) = self.qps.get_mut(o as usize) {
                q.lru_prev = Some(qi);
            }
        }
        self.lru_head = Some(qi);
        if self.lru_tail.is_none() {
            self.lru_tail = Some(qi);
        }
        while self.lru_len > capacity.max(1) {
            let Some(t) = self.lru_tail else { break };
            self.unlink(t);
            if let Some(Some(q)) = self.qps.get_mut(t as usize) {
                q.in_qpc = false;
                q.lru_prev = None;
                q.lru_next = None;
            }
            self.lru_len -= 1;
        }
        !hit
    }

    pub fn mr(&self, key: u32) -> Option<&Mr> {
        let m = self
            .mrs
            .get(bareverbs::mr::mkey_index(key) as usize)?
            .as_ref()?;
        (m.key == key && m.valid).then_some(m)
    }
}

/// Disjoint borrows of a [`World`] for a fused path ([`World::fast_parts`]).
pub(crate) struct FastParts<'a> {
    pub params: &'a ModelParams,
    pub costs: &'a FastCosts,
    pub len_costs: &'a mut LenCosts,
    pub devs: &'a mut Vec<Dev>,
    pub trace: &'a mut Option<Vec<TraceEvent>>,
    pub now: &'a mut u64,
    pub horizon_ns: u64,
}

/// Applies `f` to the counters of device `d` and of its QP `qi`.
#[inline]
pub(crate) fn cnt2(w: &mut World, d: u16, qi: u32, f: impl Fn(&mut Counters, &ModelParams)) {
    let p = &w.params;
    let dev = &mut w.devs[d as usize];
    f(&mut dev.counters, p);
    if let Some(Some(q)) = dev.qps.get_mut(qi as usize) {
        f(&mut q.counters, p);
    }
}

/// The whole simulation.
pub(crate) struct World {
    pub now: u64,
    pub devs: Vec<Dev>,
    heap: BinaryHeap<Timed>,
    /// An event that is due no later than every heap entry (key, event).
    front: Option<(u64, u64, Event)>,
    deferred: Option<Deferred>,
    slab: Vec<Option<Event>>,
    free: Vec<u32>,
    seq: u64,
    /// The fault plan; written only through [`Self::set_faults`], which
    /// keeps `faults_clean` in step.
    faults: FaultPlan,
    /// `faults.is_clean()`.
    faults_clean: bool,
    pub rng: Rng,
    /// Cost-model parameters; written only through [`Self::set_params`],
    /// which keeps `costs` in step.
    params: ModelParams,
    /// The parameter-only terms of `params`.
    costs: FastCosts,
    /// The payload-length terms of the last fused WRITE under `params`.
    len_costs: LenCosts,
    pub auto_progress: bool,
    pub horizon_ns: u64,
    /// Most WQEs one pass over a work queue fetches or flushes:
    /// [`Fabric::set_pass_limit`].
    ///
    /// [`Fabric::set_pass_limit`]: crate::device::Fabric::set_pass_limit
    pub pass_limit: u32,
    pub trace: Option<Vec<TraceEvent>>,
    /// QPs to move to ERR once the current step finishes.
    pub to_error: Vec<(u16, u32)>,
    /// Some QP may be in ERR (receive posts there must be flushed).
    pub any_error: bool,
    /// Scratch buffer for WQE copies.
    pub scratch: Vec<u8>,
    /// Recycled payload buffers.
    pub buf_pool: Vec<Vec<u8>>,
    /// Recycled request cells (no other holder; payload moved out).
    pub req_pool: Vec<Rc<Req>>,
    /// Fused fast paths enabled ([`crate::Fabric::set_fast_paths`]).
    pub fast_paths: bool,
    /// Operations the fast paths executed.
    pub fast_runs: u64,
}

/// Default pass limit ([`Fabric::set_pass_limit`](crate::Fabric::set_pass_limit)):
/// a whole 16-bit counter span, so any doorbell-record value is followed to
/// its end.
pub const PASS_LIMIT_DEFAULT: u32 = 0x1_0000;

impl World {
    pub fn new(seed: u64) -> Self {
        World {
            now: 0,
            devs: Vec::new(),
            heap: BinaryHeap::new(),
            front: None,
            deferred: None,
            slab: Vec::new(),
            free: Vec::new(),
            seq: 0,
            faults: FaultPlan::default(),
            faults_clean: true,
            rng: Rng::new(seed),
            params: ModelParams::default(),
            costs: FastCosts::new(&ModelParams::default()),
            len_costs: LenCosts::default(),
            auto_progress: true,
            horizon_ns: 1_000_000_000,
            pass_limit: PASS_LIMIT_DEFAULT,
            trace: None,
            to_error: Vec::new(),
            any_error: false,
            scratch: Vec::new(),
            buf_pool: Vec::new(),
            req_pool: Vec::new(),
            fast_paths: true,
            fast_runs: 0,
        }
    }

    /// The cost-model parameters.
    #[inline]
    pub fn params(&self) -> &ModelParams {
        &self.params
    }

    /// Replaces the fault plan.
    pub fn set_faults(&mut self, f: FaultPlan) {
        self.faults_clean = f.is_clean();
        self.faults = f;
    }

    /// Replaces the cost-model parameters.
    pub fn set_params(&mut self, p: ModelParams) {
        self.params = p;
        self.costs = FastCosts::new(&p);
        self.len_costs = LenCosts::default();
    }

    /// The parameter-only cost terms.
    #[inline]
    pub(crate) fn costs(&self) -> &FastCosts {
        &self.costs
    }

    /// The world split for a fused path: the parameters and their terms
    /// beside the mutable devices, trace and clock.
    #[inline]
    pub(crate) fn fast_parts(&mut self) -> FastParts<'_> {
        FastParts {
            params: &self.params,
            costs: &self.costs,
            len_costs: &mut self.len_costs,
            devs: &mut self.devs,
            trace: &mut self.trace,
            now: &mut self.now,
            horizon_ns: self.horizon_ns,
        }
    }

    #[inline]
    pub fn trace(&mut self, kind: TraceKind, dev: u16, qpn: u32, arg: u32) {
        if let Some(t) = self.trace.as_mut() {
            t.push(TraceEvent {
                t_ns: self.now,
                kind,
                dev,
                qpn,
                arg,
            });
        }
    }

    pub fn schedule(&mut self, t: u64, ev: Event) {
        self.seq += 1;
        self.push_keyed(t.max(self.now), self.seq, ev);
    }

    /// Puts `ev` on the heap with key (`t`, `seq`).
    fn push_keyed(&mut self, t: u64, seq: u64, ev: Event) {
        // The earliest event waits in `front`, off the heap: a run where
        // each event schedules the next one never touches the heap.
        match &self.front {
            None => {
                if self.heap.peek().is_none_or(|e| (t, seq) < (e.t, e.seq)) {
                    self.front = Some((t, seq, ev));
                    return;
                }
            }
            Some((ft, fs, _)) => {
                if (t, seq) < (*ft, *fs) {
                    if let Some((ft, fs, fev)) = self.front.replace((t, seq, ev)) {
                        self.heap_push(ft, fs, fev);
                    }
                    return;
                }
            }
        }
        self.heap_push(t, seq, ev);
    }

    fn heap_push(&mut self, t: u64, seq: u64, ev: Event) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(ev);
                i
            }
            None => {
                self.slab.push(Some(ev));
                (self.slab.len() - 1) as u32
            }
        };
        self.heap.push(Timed { t, seq, slot });
    }

    /// Arms the retransmission timer of QP `qi` of device `dev` (timer
    /// generation `gen`) for `t`: as `schedule(t, RetryTimer { .. })`, but
    /// the entry is held aside until another timer is armed or it is due.
    pub fn schedule_retry(&mut self, t: u64, dev: u16, qi: u32, gen: u64) {
        self.seq += 1;
        let new = Deferred {
            t: t.max(self.now),
            seq: self.seq,
            dev,
            qi,
            gen,
        };
        if let Some(old) = self.deferred.replace(new) {
            // A re-arm of the same QP makes the old entry stale (timer
            // generations only grow while the QP lives); another QP's
            // entry goes to the heap with its key.
            if old.dev != dev || old.qi != qi {
                self.push_deferred(old);
            }
        }
    }

    fn push_deferred(&mut self, df: Deferred) {
        let ev = Event::RetryTimer {
            dev: df.dev,
            qi: df.qi,
            gen: df.gen,
        };
        self.push_keyed(df.t, df.seq, ev);
    }

    /// Drops the held-aside timer of QP `qi` of device `dev` if that QP's
    /// timer generation has moved past it (it can never fire).
    pub fn drop_stale_timer(&mut self, dev: u16, qi: u32) {
        if let Some(df) = self.deferred {
            if df.dev == dev && df.qi == qi {
                let live = matches!(
                    self.devs.get(dev as usize).and_then(|d| d.qps.get(qi as usize)),
                    Some(Some(q)) if q.timer_gen == df.gen
                );
                if !live {
                    self.deferred = None;
                }
            }
        }
    }

    /// Moves the held-aside timer onto the heap (before a QP slot changes
    /// hands, so that it keeps referring to whatever the heap entry would).
    pub fn flush_deferred(&mut self) {
        if let Some(df) = self.deferred.take() {
            self.push_deferred(df);
        }
    }

    /// Puts a packet on the wire at `depart`, subject to the fault plan.
    pub fn transmit(&mut self, depart: u64, pkt: Packet) {
        let (sd, dd) = (pkt.src_dev, pkt.dst_dev);
        let arrive = depart + trunc_u64(self.params.t_base_ns);
        let fate = self
            .faults
            .decide(&mut self.rng, depart, arrive, dd as usize);
        match fate {
            Fate::Lost => self.trace(TraceKind::Lost, sd, pkt.src_qpn, pkt.psn()),
            Fate::Deliver { at, dup } => {
                self.trace(TraceKind::Send, sd, pkt.src_qpn, pkt.psn());
                if let Some(d) = dup {
                    self.schedule(d, Event::Deliver(pkt.clone()));
                }
                self.schedule(at, Event::Deliver(pkt));
            }
        }
    }

    /// Processes the earliest event if it is due by `limit`. Returns false
    /// when there is none.
    pub fn step(&mut self, limit: u64) -> bool {
        let top = match &self.front {
            Some((t, seq, _)) => Some((*t, *seq)),
            None => self.heap.peek().map(|e| (e.t, e.seq)),
        };
        let (t, ev) = match self.deferred {
            Some(df) if df.t <= limit && top.is_none_or(|k| (df.t, df.seq) < k) => {
                self.deferred = None;
                let ev = Event::RetryTimer {
                    dev: df.dev,
                    qi: df.qi,
                    gen: df.gen,
                };
                (df.t, ev)
            }
            _ => {
                match top {
                    Some((t, _)) if t <= limit => {}
                    _ => return false,
                }
                if let Some((t, _, ev)) = self.front.take() {
                    (t, ev)
                } else {
                    let Some(Timed { t, slot, .. }) = self.heap.pop() else {
                        return false;
                    };
                    self.free.push(slot);
                    let Some(ev) = self.slab.get_mut(slot as usize).and_then(Option::take) else {
                        return true;
                    };
                    (t, ev)
                }
            }
        };
        // A timer that was re-armed or disarmed since it was scheduled is
        // dropped without moving the clock: idle time is not simulated.
        if let Event::RetryTimer { dev, qi, gen } | Event::RnrTimer { dev, qi, gen } = ev {
            let live = matches!(
                self.devs.get(dev as usize).and_then(|d| d.qps.get(qi as usize)),
                Some(Some(q)) if q.timer_gen == gen
            );
            if !live {
                return true;
            }
        }
        self.now = self.now.max(t);
        match ev {
            Event::Deliver(p) => self.deliver(p),
            Event::RetryTimer { dev, qi, gen } => self.retry_timer(dev, qi, gen),
            Event::RnrTimer { dev, qi, gen } => self.rnr_timer(dev, qi, gen),
            Event::TxDone {
                dev,
                qi,
                psn,
                wqe_counter,
            } => self.tx_done(dev, qi, psn, wqe_counter),
        }
        self.settle();
        true
    }

    /// Runs events until the queue is empty or the next event lies more
    /// than the horizon past the start. Returns the number processed.
    pub fn run_until_idle(&mut self) -> u64 {
        self.scan_error_rqs();
        let limit = self.now.saturating_add(self.horizon_ns);
        let mut n = 0;
        while self.step(limit) {
            n += 1;
        }
        n
    }

    /// Runs every event due by `t` and advances the clock to `t`.
    pub fn run_until(&mut self, t: u64) -> u64 {
        self.scan_error_rqs();
        let mut n = 0;
        while self.step(t) {
            n += 1;
        }
        self.now = self.now.max(t);
        n
    }

    /// Whether work fetched now runs alone until the world is idle again:
    /// auto progress, no event of any kind queued or held aside, no fault
    /// plan, no QP queued for ERR, and no receive of a QP in ERR waiting
    /// to be flushed (the next run would flush it first). The fused paths of [`crate::transport`]
    /// require it.
    #[inline]
    pub(crate) fn fast_ok(&self) -> bool {
        self.fast_paths
            && self.auto_progress
            && self.front.is_none()
            && self.deferred.is_none()
            && self.heap.is_empty()
            && self.to_error.is_empty()
            && self.faults_clean
            && (!self.any_error || self.error_rqs_flushed())
    }

    /// Whether [`Self::scan_error_rqs`] would flush nothing now.
    fn error_rqs_flushed(&self) -> bool {
        self.devs.iter().all(|d| {
            d.qps
                .iter()
                .flatten()
                .all(|q| q.state != QpState::Err || World::rq_flushed(q))
        })
    }

    /// See [`crate::Fabric::state_fingerprint`].
    pub fn fingerprint(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let key = |t: &Timed| (t.t, t.seq);
        let mut heap: Vec<(u64, u64)> = self.heap.iter().map(key).collect();
        heap.sort_unstable();
        let _ = writeln!(
            s,
            "now {} seq {} rng {:?} front {:?} deferred {:?} heap {:?} any_error {} to_error {:?}",
            self.now,
            self.seq,
            self.rng,
            self.front.as_ref().map(|f| (f.0, f.1)),
            self.deferred.map(|d| (d.t, d.seq, d.dev, d.qi, d.gen)),
            heap,
            self.any_error,
            self.to_error,
        );
        for (i, d) in self.devs.iter().enumerate() {
            let _ = writeln!(
                s,
                "dev {i} lid {} tx_free {} lru {:?} {:?} {} events {:?}\n  {:?}",
                d.lid, d.tx_free, d.lru_head, d.lru_tail, d.lru_len, d.events, d.counters
            );
            for q in d.qps.iter().flatten() {
                let pend: Vec<_> = q
                    .pend
                    .iter()
                    .map(|p| (p.wqe_counter, p.opcode, p.psn, p.npkts, p.done, p.err))
                    .collect();
                let _ = writeln!(
                    s,
                    "  qp {:#x} {:?} {:?} fetched {} bf {:?} blocked {} rq {} psn {} pend {:?} \
                     retry {} rnr {} gen {} rnr_wait {} epsn {} nak {} rx {} qpc {} {:?} {:?} \
                     attr {:?}\n    {:?}",
                    q.qpn,
                    q.ty,
                    q.state,
                    q.sq_fetched,
                    q.bf_index,
                    q.sq_blocked,
                    q.rq_consumed,
                    q.next_psn,
                    pend,
                    q.retry_left,
                    q.rnr_left,
                    q.timer_gen,
                    q.rnr_wait,
                    q.epsn,
                    q.nak_sent,
                    q.last_rx_ns,
                    q.in_qpc,
                    q.lru_prev,
                    q.lru_next,
                    q.attr,
                    q.counters
                );
            }
            for m in d.mrs.iter().flatten() {
                let _ = writeln!(
                    s,
                    "  mr {:#x} pd {} {:#x}+{:#x} access {} valid {}",
                    m.key,
                    m.pd,
                    m.iova,
                    m.len,
                    m.access.bits(),
                    m.valid
                );
            }
            for r in d.srqs.iter().flatten() {
                let _ = writeln!(
                    s,
                    "  srq head {} consumed {} limit {} error {}",
                    r.head_slot, r.consumed, r.limit, r.error
                );
            }
            for (n, c) in d.cqs.iter().enumerate() {
                let Some(c) = c else { continue };
                let mut ring = vec![0u8; c.ncqe as usize * 64];
                // SAFETY: the ring was translated at CQ creation to ncqe *
                // 64 bytes of live DMA memory; copied into host memory.
                unsafe { std::ptr::copy_nonoverlapping(c.ring, ring.as_mut_ptr(), ring.len()) };
                let mut h = std::hash::DefaultHasher::new();
                std::hash::Hash::hash(&ring, &mut h);
                let _ = writeln!(
                    s,
                    "  cq {n} pi {} error {} armed {:?} last {} ring {:016x}",
                    c.pi,
                    c.error,
                    c.armed,
                    c.last_cqe_ns,
                    std::hash::Hasher::finish(&h)
                );
            }
        }
        s
    }

    /// Advances the event sequence counter by `n`, as `n` calls of
    /// [`Self::schedule`] / [`Self::schedule_retry`] would (for a fused
    /// path whose events are consumed before any other is queued).
    #[inline]
    pub(crate) fn bump_seq(&mut self, n: u64) {
        self.seq += n;
    }

    pub fn pending_events(&self) -> usize {
        self.heap.len() + usize::from(self.deferred.is_some()) + usize::from(self.front.is_some())
    }

    /// Moves every QP queued in `to_error` to ERR (flushing), repeatedly,
    /// since flushing may overrun another CQ.
    pub fn settle(&mut self) {
        while let Some((d, qi)) = self.to_error.pop() {
            self.qp_to_error(d, qi);
        }
    }

    /// Receive WQEs posted to a QP already in ERR are flushed when the
    /// device next looks (there is no receive doorbell register).
    pub fn scan_error_rqs(&mut self) {
        if !self.any_error {
            return;
        }
        let mut seen = false;
        for d in 0..self.devs.len() {
            for qi in 0..self.devs[d].qps.len() {
                let is_err = matches!(&self.devs[d].qps[qi], Some(q) if q.state == QpState::Err);
                if is_err {
                    seen = true;
                    self.flush_rq(d as u16, qi as u32);
                }
            }
        }
        self.settle();
        // Clear the flag once no QP is in ERR (reset or destroyed since);
        // any later move to ERR sets it again.
        self.any_error = seen
            || self
                .devs
                .iter()
                .any(|d| d.qps.iter().flatten().any(|q| q.state == QpState::Err));
    }

    /// Writes one CQE (owner bit added here) into CQ `cqn` of device `d`.
    /// Detects overrun against the consumer index in the doorbell record:
    /// on overrun the CQ enters error, an async CQ error event is raised,
    /// every QP reporting to it is queued for ERR, and `false` is returned.
    pub fn write_cqe(&mut self, d: u16, cqn: usize, cqe: Cqe64, is_err: bool) -> bool {
        self.put_cqe(d, cqn, cqe, is_err)
    }

    /// [`Self::write_cqe`], inlined into its caller (the fused paths).
    #[inline(always)]
    pub(crate) fn put_cqe(&mut self, d: u16, cqn: usize, mut cqe: Cqe64, is_err: bool) -> bool {
        let now = self.now;
        let params = self.params;
        let dev = &mut self.devs[d as usize];
        let Some(Some(cq)) = dev.cqs.get_mut(cqn) else {
            return false;
        };
        if cq.error {
            return false;
        }
        if cq.used() >= cq.ncqe {
            cq.error = true;
            dev.events.push(AsyncEvent::CqError { cqn: cqn as u32 });
            let mut victims = Vec::new();
            for (qi, q) in dev.qps.iter().enumerate() {
                if let Some(q) = q {
                    if (q.scq == cqn || q.rcq == cqn) && q.state != QpState::Err {
                        victims.push((d, qi as u32));
                        dev.events.push(AsyncEvent::QpFatal { qpn: q.qpn });
                    }
                }
            }
            self.to_error.extend(victims);
            self.trace(TraceKind::CqOverrun, d, cqn as u32, 0);
            return false;
        }
        if cq.cqe_version == 0 {
            // Version 0 CQEs carry the SRQ number, not the user index.
            cqe.set_srqn_uidx(0);
        }
        let owner = u8::from(cq.pi & cq.ncqe != 0);
        let op_own = cqe.op_own();
        cqe.set_op_own((op_own & 0xfe) | owner);
        if !is_err {
            // Error CQEs use bytes 52..55 for the syndromes (ref §5.5).
            cqe.set_timestamp(now);
        }
        let slot = (cq.pi & (cq.ncqe - 1)) as usize * 64;
        let bytes = cqe.into_bytes();
        // SAFETY: the ring was translated at creation to ncqe * 64 bytes of
        // live DMA memory and slot + 64 <= ncqe * 64. Bytes 0..63 are
        // written before the ownership byte, as the device must.
        unsafe {
            let p = cq.ring.add(slot);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, 63);
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            std::ptr::write_volatile(p.add(63), bytes[63]);
        }
        cq.pi = cq.pi.wrapping_add(1);
        cq.last_cqe_ns = now;
        if let Some(_sol) = cq.armed.take() {
            dev.events.push(AsyncEvent::Completion { cqn: cqn as u32 });
        }
        dev.counters.cqes += 1;
        if is_err {
            dev.counters.err_cqes += 1;
        }
        dev.counters.dma_write(&params, 64);
        let wc = cqe.wqe_counter() as u32 | (cqe.syndrome() as u32) << 16;
        let qpn = cqe.qpn();
        self.trace(TraceKind::Cqe, d, qpn, wc);
        true
    }
}
