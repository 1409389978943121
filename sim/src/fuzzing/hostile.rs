//! Fuzz body `hostile_cq`: the device as an adversary. Bytes drive a
//! script of posts (two QPs: one with its own RQ, one on an SRQ), CQEs
//! written by a "device" (honest ones, phantom / repeated / stale counters,
//! CQEs of unknown QPs, random opcodes, compressed sessions of any count),
//! polls with a random batch size, and QP resets (with CQ clean). After
//! every poll and post it checks, against an independent model:
//!
//! * every completion names a WR that is posted and not yet completed, and
//!   retires exactly the WRs the model expects (exactly once, never a
//!   phantom);
//! * the queues' counters equal the model's outstanding work;
//! * the ring bytes of every WQE in flight are unchanged (nothing posted
//!   over a WQE the device may still execute);
//! * the doorbell record follows the consumer index.
//!
//! The script runs twice: polled with [`CompletionQueue::poll`] (full
//! `WorkCompletion`s), then with [`CompletionQueue::poll_completions`] (the
//! lean path). The second run must see, poll for poll, the same result or
//! error, the same completions (`Completion::from(&wc)`), the same consumer
//! index, doorbell record and ring bytes as the first.
//!
//! Everything lives in fixed arrays on the stack: no allocation per run.

use bareverbs::cq::{CompletionQueue, PollError};
use bareverbs::cqe::{
    Completion, Cqe64, CqeFormat, CqeOpcode, CqeSize, MiniCqeFormat, Syndrome, WorkCompletion,
};
use bareverbs::platform::{DmaBuf, MemUar};
use bareverbs::qp::QpType;
use bareverbs::queue_pair::{QpSet, QueuePair};
use bareverbs::rq::{RecvQueue, RecvWr, RqConfig, RqSlot, SharedReceiveQueue, SrqConfig, SrqSlot};
use bareverbs::sq::{SendFlags, SendOp, SendQueue, SendWr, Sge, SqConfig, SqSlot};
use bareverbs::wqe::Opcode;
use core::ptr::NonNull;

const NCQE: usize = 16;
const SQ: usize = 8;
const RQ: usize = 4;
const SRQ: usize = 4;
const QPN: [u32; 2] = [0x100, 0x200];
const UIDX: [u32; 2] = [1, 2];

/// Device-visible memory of the whole scenario.
#[repr(C, align(64))]
struct Mem {
    cq: [u8; NCQE * 64],
    cq_db: [u8; 8],
    sq: [[u8; SQ * 64]; 2],
    qp_db: [[u8; 8]; 2],
    rq: [u8; RQ * 16],
    srq: [u8; SRQ * 32],
    srq_db: [u8; 8],
}

fn dma(p: *mut u8, len: usize) -> DmaBuf {
    DmaBuf {
        cpu: NonNull::new(p).expect("non-null"),
        iova: 0x1000,
        len,
    }
}

fn peek<const L: usize>(p: *const u8) -> [u8; L] {
    let mut o = [0u8; L];
    for (i, b) in o.iter_mut().enumerate() {
        // SAFETY: callers pass pointers to L bytes inside `Mem`; raw
        // volatile reads, no reference into device-visible memory.
        *b = unsafe { core::ptr::read_volatile(p.add(i)) };
    }
    o
}

/// A send WR in flight: id, WR sequence, first WQEBB counter, the first
/// 16 bytes (control segment) of its WQE.
#[derive(Clone, Copy, Default)]
struct SendRec {
    id: u64,
    seq: u32,
    ctr: u16,
    ctrl: [u8; 16],
}

/// A receive in flight: id, ring slot, its first data segment.
#[derive(Clone, Copy, Default)]
struct RecvRec {
    id: u64,
    slot: u16,
    seg: [u8; 16],
}

/// Fixed-capacity FIFO.
struct Fifo<T: Copy + Default, const C: usize> {
    v: [T; C],
    n: usize,
}

impl<T: Copy + Default, const C: usize> Fifo<T, C> {
    fn new() -> Self {
        Fifo {
            v: [T::default(); C],
            n: 0,
        }
    }
    fn push(&mut self, x: T) {
        assert!(self.n < C, "model overflow: the queue accepted too much");
        self.v[self.n] = x;
        self.n += 1;
    }
    fn items(&self) -> &[T] {
        &self.v[..self.n]
    }
    /// Removes the first `k` entries.
    fn drop_front(&mut self, k: usize) {
        self.v.copy_within(k..self.n, 0);
        self.n -= k;
    }
    fn remove(&mut self, i: usize) {
        self.v.copy_within(i + 1..self.n, i);
        self.n -= 1;
    }
}

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
}

struct Model {
    sends: [Fifo<SendRec, 4>; 2],
    recvs: Fifo<RecvRec, 4>,
    srq: Fifo<RecvRec, 3>,
    next_id: u64,
    /// The device's idea of the next RQ counter.
    dev_rq: u16,
    /// Device producer index of the CQ.
    pi: u32,
    /// Counters of recent honest send CQEs (for repeats).
    recent: [u16; 4],
}

type Qp = QueuePair<MemUar, [SqSlot; SQ], [RqSlot; RQ]>;

/// The control segment of the WQE at WQEBB counter `ctr` of QP `qp`.
fn sq_ctrl(sq_p: *const u8, qp: usize, ctr: u16) -> [u8; 16] {
    peek::<16>(sq_p.wrapping_add(qp * SQ * 64 + (ctr as usize & (SQ - 1)) * 64))
}

/// Polls of one script (at most 200 steps plus the final drain).
const MAX_POLLS: usize = 200 + 2 * NCQE;

/// What one poll call did, as the first (full-path) run saw it.
#[derive(Clone, Copy, Default, PartialEq, Debug)]
struct PollRecord {
    res: Option<Result<usize, PollError>>,
    completions: [Completion; 4],
    ci: u32,
    dbrec: u32,
    /// FNV-1a of the CQ ring bytes after the call.
    ring: u64,
}

/// The full-path run's polls, replayed against the lean-path run.
struct Trace {
    polls: [PollRecord; MAX_POLLS],
    n: usize,
    /// Second run: compare instead of record.
    replay: bool,
}

/// Runs one script, on the full poll path and then on the lean one; see
/// the module documentation.
pub fn hostile_cq(data: &[u8]) {
    let mut t = Trace {
        polls: [PollRecord::default(); MAX_POLLS],
        n: 0,
        replay: false,
    };
    run(data, &mut t);
    let polls = t.n;
    t.replay = true;
    t.n = 0;
    run(data, &mut t);
    assert_eq!(t.n, polls, "lean run polled a different number of times");
}

/// Raw pointers to the fields of one [`Mem`], taken once: `Mem` is only
/// read through `peek`/raw pointers from then on.
#[derive(Clone, Copy)]
struct Ptrs {
    cq: *mut u8,
    cq_db: *mut u8,
    sq: *mut u8,
    qp_db: *mut u8,
    rq: *mut u8,
    srq: *mut u8,
    srq_db: *mut u8,
}

impl Mem {
    /// All of it zeroed.
    fn zeroed() -> Mem {
        Mem {
            cq: [0; NCQE * 64],
            cq_db: [0; 8],
            sq: [[0; SQ * 64]; 2],
            qp_db: [[0; 8]; 2],
            rq: [0; RQ * 16],
            srq: [0; SRQ * 32],
            srq_db: [0; 8],
        }
    }

    /// Raw pointers into `self`; see [`Ptrs`].
    fn ptrs(&mut self) -> Ptrs {
        let mp: *mut Mem = self;
        // SAFETY: field projections of a live `Mem`, no reference created.
        unsafe {
            Ptrs {
                cq: core::ptr::addr_of_mut!((*mp).cq).cast::<u8>(),
                cq_db: core::ptr::addr_of_mut!((*mp).cq_db).cast::<u8>(),
                sq: core::ptr::addr_of_mut!((*mp).sq).cast::<u8>(),
                qp_db: core::ptr::addr_of_mut!((*mp).qp_db).cast::<u8>(),
                rq: core::ptr::addr_of_mut!((*mp).rq).cast::<u8>(),
                srq: core::ptr::addr_of_mut!((*mp).srq).cast::<u8>(),
                srq_db: core::ptr::addr_of_mut!((*mp).srq_db).cast::<u8>(),
            }
        }
    }
}

/// The SGE every posted WR carries (never dereferenced: no device).
const SGE: Sge = Sge {
    addr: 0x4000,
    length: 16,
    lkey: 5,
};

/// The send queue configuration of the QP numbered `qpn`.
fn sq_cfg(qpn: u32) -> SqConfig {
    SqConfig::new(QpType::Rc, 4, 4).qpn(qpn)
}

/// QP `k` over `p`'s rings, enabled; `with_rq` gives it QP 0's RQ.
///
/// # Safety
/// `p` points into a [`Mem`] that outlives the QP and is accessed only
/// through raw pointers while the QP lives.
unsafe fn mk_qp(p: Ptrs, k: usize, with_rq: bool, version: u8) -> Qp {
    // SAFETY: the caller's contract; each QP has its own SQ ring and
    // record.
    let sq = unsafe {
        SendQueue::new(
            dma(p.sq.wrapping_add(k * SQ * 64), SQ * 64),
            dma(p.qp_db.wrapping_add(k * 8), 8),
            MemUar::default(),
            sq_cfg(QPN[k]),
            [SqSlot::default(); SQ],
        )
    }
    .expect("sq");
    let rq = with_rq.then(|| {
        let cfg = RqConfig {
            wqe_shift: 4,
            max_gs: 1,
            max_post: 4,
        };
        // SAFETY: the caller's contract (record word 0 of QP 0).
        unsafe {
            RecvQueue::new(
                dma(p.rq, RQ * 16),
                dma(p.qp_db, 8),
                cfg,
                [RqSlot::default(); RQ],
            )
        }
        .expect("rq")
    });
    let mut q = QueuePair::new(QPN[k], UIDX[k], version, sq, rq);
    q.sq.enable();
    if let Some(r) = q.rq.as_mut() {
        r.enable();
    }
    q
}

/// One script's queues (a CQ, two QPs, an SRQ) over one [`Mem`], and the
/// model of what they hold. Fields drop in the order the original locals
/// did (model first, CQ last).
struct Scene {
    m: Model,
    srq: SharedReceiveQueue<[SrqSlot; SRQ]>,
    qps: [Qp; 2],
    cq: CompletionQueue<NCQE>,
    p: Ptrs,
    version: u8,
}

impl Scene {
    /// The queues over `p`: CQE `version`, mini-CQE format `mini`.
    ///
    /// # Safety
    /// `p` points into a [`Mem`] that outlives the scene and is accessed
    /// only through raw pointers while the scene lives.
    unsafe fn new(p: Ptrs, version: u8, mini: MiniCqeFormat) -> Scene {
        // SAFETY: the caller's contract.
        let mut cq = unsafe {
            CompletionQueue::<NCQE>::new(
                dma(p.cq, NCQE * 64),
                dma(p.cq_db, 8),
                7,
                CqeSize::B64,
                version,
            )
        }
        .expect("cq");
        cq.init_ring();
        cq.set_mini_cqe_format(mini);
        // SAFETY: the caller's contract.
        let qps = unsafe { [mk_qp(p, 0, true, version), mk_qp(p, 1, false, version)] };
        let srq_cfg = SrqConfig {
            wqe_shift: 5,
            max_gs: 1,
            nwqes: SRQ as u32,
            wait_queue: false,
        };
        // SAFETY: the caller's contract.
        let srq = unsafe {
            SharedReceiveQueue::new(
                dma(p.srq, SRQ * 32),
                dma(p.srq_db, 8),
                srq_cfg,
                [SrqSlot::default(); SRQ],
            )
        }
        .expect("srq");
        let m = Model {
            sends: [Fifo::new(), Fifo::new()],
            recvs: Fifo::new(),
            srq: Fifo::new(),
            next_id: 1,
            dev_rq: 0,
            pi: 0,
            recent: [0; 4],
        };
        Scene {
            m,
            srq,
            qps,
            cq,
            p,
            version,
        }
    }

    /// One script step: op `op`, further bytes from `b`.
    fn step(&mut self, op: u8, b: &mut Bytes<'_>, trace: &mut Trace) {
        match op % 9 {
            0 => self.post_sends(op, b),
            1 => self.post_recv(),
            2 => self.post_srq_recv(),
            3 => self.honest_send_cqe(op, b),
            4 => self.honest_recv_cqe(op, b),
            5 => self.hostile_cqe(op, b),
            6 => self.compressed_session(op, b),
            7 => self.reset_qp0(op),
            _ => {
                let ne = 1 + (op >> 4) as usize % 4;
                self.poll(ne, trace);
            }
        }
    }

    /// Polls up to `ne` completions; see [`poll`].
    fn poll(&mut self, ne: usize, trace: &mut Trace) {
        let Scene {
            cq,
            qps,
            srq,
            m,
            version,
            ..
        } = self;
        poll(cq, qps, srq, m, ne, *version, trace);
    }

    /// The invariants; see [`check`].
    fn check(&self) {
        let p = self.p;
        check(&self.qps, &self.srq, &self.m, p.sq, p.rq, p.srq);
    }

    /// Op 0: post 1..3 sends on QP k (`op >> 4 & 1`), each 1 or 2 WQEBBs.
    fn post_sends(&mut self, op: u8, b: &mut Bytes<'_>) {
        let Scene { qps, m, p, .. } = self;
        let sq_p = p.sq;
        let k = (op >> 4) as usize & 1;
        let n = 1 + (b.u8() % 3) as usize;
        for _ in 0..n {
            let shape = b.u8();
            let sgl = [SGE; 4];
            let nsge = if shape & 1 != 0 { 4 } else { 1 };
            let mut wr = SendWr::new(m.next_id, SendOp::Send, &sgl[..nsge]);
            if shape & 2 != 0 {
                wr = wr.with_flags(SendFlags::SIGNALED);
            }
            let q = &mut qps[k];
            let (ctr, seq) = (q.sq.cur_post() as u16, q.sq.head());
            // SAFETY: memory-only ring; the SGEs are never
            // dereferenced (not inline, no device).
            match unsafe { q.sq.post_send_raw(&[wr]) } {
                Ok(()) => {
                    m.sends[k].push(SendRec {
                        id: m.next_id,
                        seq,
                        ctr,
                        ctrl: sq_ctrl(sq_p, k, ctr),
                    });
                    m.next_id += 1;
                }
                Err(_) => assert_eq!(m.sends[k].n, 4, "refused with room"),
            }
        }
    }

    /// Op 1: post a receive on QP 0's RQ.
    fn post_recv(&mut self) {
        let Scene { qps, m, p, .. } = self;
        let rq_p = p.rq;
        let rq = qps[0].rq.as_mut().expect("rq");
        let slot = (rq.head() as usize & (RQ - 1)) as u16;
        let sgl = [SGE];
        // SAFETY: memory-only ring; the SGE is never dereferenced (no
        // device).
        match unsafe {
            rq.post_recv_raw(&[RecvWr {
                wr_id: m.next_id,
                sgl: &sgl,
            }])
        } {
            Ok(()) => {
                m.recvs.push(RecvRec {
                    id: m.next_id,
                    slot,
                    seg: peek::<16>(rq_p.wrapping_add(slot as usize * 16)),
                });
                m.next_id += 1;
            }
            Err(_) => assert_eq!(m.recvs.n, 4, "RQ refused with room"),
        }
    }

    /// Op 2: post a receive on the SRQ.
    fn post_srq_recv(&mut self) {
        let Scene { srq, m, p, .. } = self;
        let srq_p = p.srq;
        let slot = srq.head() as u16;
        let sgl = [SGE];
        // SAFETY: memory-only ring; the SGE is never dereferenced (no
        // device).
        match unsafe {
            srq.post_recv_raw(&[RecvWr {
                wr_id: m.next_id,
                sgl: &sgl,
            }])
        } {
            Ok(()) => {
                m.srq.push(RecvRec {
                    id: m.next_id,
                    slot,
                    seg: peek::<16>(srq_p.wrapping_add(slot as usize * 32 + 16)),
                });
                m.next_id += 1;
            }
            Err(_) => assert_eq!(m.srq.n, 3, "SRQ refused with room"),
        }
    }

    /// Op 3: honest send completion (or flush) of a WR in flight.
    fn honest_send_cqe(&mut self, op: u8, b: &mut Bytes<'_>) {
        let Scene { cq, m, p, .. } = self;
        let cq_p = p.cq;
        let k = (op >> 4) as usize & 1;
        let it = m.sends[k].items();
        if !it.is_empty() {
            let r = it[b.u8() as usize % it.len()];
            let opc = if op & 0x20 != 0 {
                CqeOpcode::ReqErr as u8
            } else {
                CqeOpcode::Req as u8
            };
            m.recent[(r.ctr & 3) as usize] = r.ctr;
            device_cqe(cq_p, &mut m.pi, cq.consumer_index(), opc, k, r.ctr);
        }
    }

    /// Op 4: honest receive completion (RQ in order, or an SRQ slot).
    fn honest_recv_cqe(&mut self, op: u8, b: &mut Bytes<'_>) {
        let Scene { cq, qps, m, p, .. } = self;
        let cq_p = p.cq;
        if op & 0x10 == 0 {
            let tail = qps[0].rq.as_ref().expect("rq").tail() as u16;
            if m.dev_rq.wrapping_sub(tail) > 8 {
                m.dev_rq = tail;
            }
            let c = m.dev_rq;
            m.dev_rq = m.dev_rq.wrapping_add(1);
            let opc = if op & 0x20 != 0 {
                CqeOpcode::RespErr as u8
            } else {
                CqeOpcode::RespSend as u8
            };
            device_cqe(cq_p, &mut m.pi, cq.consumer_index(), opc, 0, c);
        } else if m.srq.n > 0 {
            let r = m.srq.items()[b.u8() as usize % m.srq.n];
            device_cqe(
                cq_p,
                &mut m.pi,
                cq.consumer_index(),
                CqeOpcode::RespSend as u8,
                1,
                r.slot,
            );
        }
    }

    /// Op 5: hostile CQE: any opcode, any QP, any counter.
    fn hostile_cqe(&mut self, op: u8, b: &mut Bytes<'_>) {
        let Scene { cq, qps, m, p, .. } = self;
        let cq_p = p.cq;
        let opc = match b.u8() % 6 {
            0 | 1 => CqeOpcode::Req as u8,
            2 => CqeOpcode::RespSend as u8,
            3 => CqeOpcode::ReqErr as u8,
            4 => CqeOpcode::RespErr as u8,
            _ => b.u8() >> 4,
        };
        let k = b.u8() as usize % 3;
        let ctr = match b.u8() % 4 {
            0 => b.u16(),
            1 => m.recent[(op >> 4) as usize & 3],
            2 => qps[k & 1].sq.cur_post() as u16,
            _ => (qps[k & 1].sq.cur_post() as u16).wrapping_sub(1 + (op >> 5) as u16),
        };
        device_cqe(cq_p, &mut m.pi, cq.consumer_index(), opc, k, ctr);
    }

    /// Op 6: compressed session of any count, send or receive.
    fn compressed_session(&mut self, op: u8, b: &mut Bytes<'_>) {
        let Scene { cq, qps, m, p, .. } = self;
        let cq_p = p.cq;
        let count = 1 + (b.u8() as u32 % 12);
        let k = b.u8() as usize % 3;
        let opc = [
            CqeOpcode::Req,
            CqeOpcode::RespSend,
            CqeOpcode::ReqErr,
            CqeOpcode::RespErr,
            CqeOpcode::Resize,
        ][(op >> 4) as usize % 5] as u8;
        let first = match b.u8() % 3 {
            0 => b.u16(),
            1 => qps[0].rq.as_ref().expect("rq").tail() as u16,
            _ => m.sends[k & 1].items().first().map_or(0, |r| r.ctr),
        };
        let mut arr = [0u8; 64];
        for (i, x) in arr.iter_mut().enumerate() {
            *x = if i % 8 < 2 && b.u8() & 1 == 0 {
                // SendInfo counters near the first one.
                (first.wrapping_add((i / 8) as u16).to_be_bytes())[i % 8]
            } else {
                b.u8()
            };
        }
        device_session(
            cq_p,
            &mut m.pi,
            cq.consumer_index(),
            opc,
            k,
            first,
            count,
            &arr,
        );
    }

    /// Op 7: reset QP 0 (clean the CQ), then reuse it.
    fn reset_qp0(&mut self, op: u8) {
        let Scene { cq, qps, m, .. } = self;
        if op & 0x30 == 0 {
            // SAFETY: memory-only queues; no device executes them.
            unsafe { qps[0].reset(&mut [&mut *cq]) };
            qps[0].sq.enable();
            qps[0].rq.as_mut().expect("rq").enable();
            m.sends[0].n = 0;
            m.recvs.n = 0;
            m.dev_rq = 0;
            assert_eq!(cq.read_dbrec(0), cq.consumer_index() & 0xff_ffff);
            // The device continues behind the cleaned entries.
            if m.pi.wrapping_sub(cq.consumer_index()) > NCQE as u32 {
                m.pi = cq.consumer_index();
            }
        }
    }
}

fn run(data: &[u8], trace: &mut Trace) {
    let mut b = Bytes(data);
    let sel = b.u8();
    let version = sel & 1;
    let mini = match (sel >> 1) % 3 {
        0 => MiniCqeFormat::Hash,
        1 => MiniCqeFormat::Csum,
        _ => MiniCqeFormat::SendInfo,
    };
    let mut mem = Mem::zeroed();
    let p = mem.ptrs();
    // SAFETY: `mem` outlives the scene (declared before it) and is
    // accessed only through these raw pointers while it lives.
    let mut s = unsafe { Scene::new(p, version, mini) };
    for _ in 0..200 {
        if b.0.is_empty() {
            break;
        }
        let op = b.u8();
        s.step(op, &mut b, trace);
        s.check();
    }
    // Drain what is left; the invariants hold to the end.
    for _ in 0..2 * NCQE {
        s.poll(4, trace);
    }
    s.check();
}

/// Writes one CQE at the device producer index (if the ring has room).
fn device_cqe(cq: *mut u8, pi: &mut u32, ci: u32, opc: u8, k: usize, ctr: u16) {
    if room(pi, ci) == 0 {
        return;
    }
    let (qpn, uidx) = qp_ids(k);
    let mut c = Cqe64::ZERO;
    c.set_send_wqe_opcode_qpn(Opcode::Send.bits(), qpn)
        .set_srqn_uidx(uidx)
        .set_wqe_counter(ctr)
        .set_byte_cnt(16);
    if opc == CqeOpcode::ReqErr as u8 || opc == CqeOpcode::RespErr as u8 {
        c.set_syndrome(Syndrome::WrFlushErr.as_u8());
    }
    let owner = ((*pi as usize & NCQE) != 0) as u8;
    c.set_op_own_parts(opc, 0, false, owner);
    write_entry(cq, *pi, c.as_bytes());
    *pi = pi.wrapping_add(1);
}

/// Free entries the device may write. A consumer that ran ahead of the
/// device (it took garbage bytes beyond the producer for a CQE, e.g. a
/// mini-CQE array slot) pulls the producer along.
fn room(pi: &mut u32, ci: u32) -> u32 {
    let used = pi.wrapping_sub(ci);
    if used > NCQE as u32 {
        *pi = ci;
        return NCQE as u32;
    }
    NCQE as u32 - used
}

/// (QPN, user index) a device CQE for QP `k` carries; `k == 2` names
/// nobody.
fn qp_ids(k: usize) -> (u32, u32) {
    match k {
        0 | 1 => (QPN[k], UIDX[k]),
        _ => (0x300, 3),
    }
}

#[allow(clippy::too_many_arguments)]
fn device_session(
    cq: *mut u8,
    pi: &mut u32,
    ci: u32,
    opc: u8,
    k: usize,
    first: u16,
    count: u32,
    arr: &[u8; 64],
) {
    // The session and its arrays must fit in the free part of the ring.
    let span = count.max(2);
    if room(pi, ci) < span {
        return;
    }
    let (qpn, uidx) = qp_ids(k);
    // Arrays: group 0 at title + 1, group g at title + 8g.
    let groups = count.div_ceil(8);
    for g in 0..groups {
        let off = if g == 0 { 1 } else { 8 * g };
        write_entry(cq, pi.wrapping_add(off), arr);
    }
    let mut t = Cqe64::ZERO;
    t.set_send_wqe_opcode_qpn(Opcode::Send.bits(), qpn)
        .set_srqn_uidx(uidx)
        .set_wqe_counter(first)
        .set_byte_cnt(count);
    let owner = ((*pi as usize & NCQE) != 0) as u8;
    t.set_op_own_parts(opc, CqeFormat::Compressed as u8, false, owner);
    write_entry(cq, *pi, t.as_bytes());
    *pi = pi.wrapping_add(count);
}

fn write_entry(cq: *mut u8, pos: u32, bytes: &[u8; 64]) {
    let base = (pos as usize & (NCQE - 1)) * 64;
    // Ownership byte last, as a device publishes an entry.
    for i in (0..64).rev() {
        // SAFETY: inside the CQ ring of `Mem`; raw volatile byte store.
        unsafe { core::ptr::write_volatile(cq.add(base + i), bytes[i]) };
    }
}

#[allow(clippy::too_many_arguments)]
fn poll(
    cq: &mut CompletionQueue<NCQE>,
    qps: &mut [Qp; 2],
    srq: &mut SharedReceiveQueue<[SrqSlot; SRQ]>,
    m: &mut Model,
    ne: usize,
    version: u8,
    trace: &mut Trace,
) {
    let mut out = [Completion::default(); 4];
    let before = cq.consumer_index();
    let r = {
        let mut set = QpSet {
            qps: &mut qps[..],
            srq: Some(&mut *srq),
        };
        if trace.replay {
            cq.poll_completions(&mut set, &mut out[..ne])
        } else {
            let mut wcs = [WorkCompletion::default(); 4];
            let r = cq.poll(&mut set, &mut wcs[..ne]);
            for (c, w) in out.iter_mut().zip(&wcs) {
                *c = Completion::from(w);
            }
            r
        }
    };
    let n = match r {
        Ok(n) => n,
        // Typed refusals are the expected answer to hostile bytes.
        Err(
            e @ (PollError::Rejected { .. }
            | PollError::UnknownQp { .. }
            | PollError::BadCompressedSession { .. }),
        ) => e.completions(),
    };
    // The lean run must repeat the full run, poll for poll.
    let mut rec = PollRecord {
        res: Some(r),
        completions: [Completion::default(); 4],
        ci: cq.consumer_index(),
        dbrec: cq.read_dbrec(0),
        ring: fnv(cq.ring().cpu.as_ptr(), NCQE * 64),
    };
    rec.completions[..n].copy_from_slice(&out[..n]);
    let i = trace.n;
    assert!(i < MAX_POLLS, "more polls than the script allows");
    if trace.replay {
        assert_eq!(
            rec, trace.polls[i],
            "poll {i}: poll_completions differs from poll"
        );
    } else {
        trace.polls[i] = rec;
    }
    trace.n += 1;
    assert!(n <= ne);
    assert_eq!(cq.read_dbrec(0), cq.consumer_index() & 0xff_ffff);
    assert!(cq.consumer_index().wrapping_sub(before) <= NCQE as u32 * 2);
    for w in &out[..n] {
        // CQEs that complete no work request (RESIZE_CQ, undefined
        // opcodes) are counted as the provider counts them, without a
        // wr_id: they retire nothing (`check` compares the queues).
        if !w.completes_wr() {
            continue;
        }
        let k = if version == 0 {
            // Routed by QPN: `qp_num` is the routing field.
            if w.qp_num() == QPN[0] {
                0
            } else if w.qp_num() == QPN[1] {
                1
            } else {
                panic!("completion for unknown QP {:#x}", w.qp_num());
            }
        } else {
            // Routed by user index; `qp_num` is only what the CQE claims
            // (not cross-checked, see `QueuePair::is`). The WR decides.
            let id = w.wr_id();
            let mine = m.sends[0].items().iter().any(|r| r.id == id)
                || m.recvs.items().iter().any(|r| r.id == id);
            if mine {
                0
            } else {
                1
            }
        };
        // Send side: the WR must be in flight; it and every earlier WR of
        // that SQ retire.
        if let Some(i) = m.sends[k].items().iter().position(|r| r.id == w.wr_id()) {
            m.sends[k].drop_front(i + 1);
            continue;
        }
        if k == 0 {
            let it = m.recvs.items();
            assert!(
                !it.is_empty() && it[0].id == w.wr_id(),
                "receive completion {} is not the oldest outstanding",
                w.wr_id()
            );
            m.recvs.drop_front(1);
        } else {
            let i = m
                .srq
                .items()
                .iter()
                .position(|r| r.id == w.wr_id())
                .unwrap_or_else(|| panic!("phantom or repeated completion {}", w.wr_id()));
            m.srq.remove(i);
        }
    }
}

/// A hash of the CQ ring: FNV-1a's step (xor, then multiply by its
/// prime) over the ring's 8-byte words, read with volatile loads. Each
/// step is a bijection of the running value for a given word, so two rings
/// that differ in exactly one word always hash differently.
fn fnv(p: *const u8, len: usize) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for i in 0..len / 8 {
        // SAFETY: callers pass the CQ ring inside `Mem` (64-byte aligned,
        // `len` a multiple of 64), so word i is in bounds and aligned; raw
        // volatile reads, no reference into device-visible memory.
        h ^= unsafe { core::ptr::read_volatile(p.add(i * 8).cast::<u64>()) };
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn check(
    qps: &[Qp; 2],
    srq: &SharedReceiveQueue<[SrqSlot; SRQ]>,
    m: &Model,
    sq_p: *const u8,
    rq_p: *const u8,
    srq_p: *const u8,
) {
    for (k, q) in qps.iter().enumerate() {
        assert_eq!(q.sq.outstanding() as usize, m.sends[k].n, "SQ {k} count");
        if let Some(r) = m.sends[k].items().first() {
            assert_eq!(q.sq.tail(), r.seq, "SQ {k} tail");
        }
        for r in m.sends[k].items() {
            assert_eq!(
                sq_ctrl(sq_p, k, r.ctr),
                r.ctrl,
                "SQ {k}: WQE of WR {} overwritten in flight",
                r.id
            );
        }
    }
    let rq = qps[0].rq.as_ref().expect("rq");
    assert_eq!(rq.outstanding() as usize, m.recvs.n, "RQ count");
    for r in m.recvs.items() {
        assert_eq!(
            peek::<16>(rq_p.wrapping_add(r.slot as usize * 16)),
            r.seg,
            "RQ WQE overwritten in flight"
        );
    }
    for s in 0..SRQ {
        let want = m.srq.items().iter().any(|r| r.slot as usize == s);
        assert_eq!(srq.is_posted(s), want, "SRQ slot {s}");
    }
    for r in m.srq.items() {
        assert_eq!(
            peek::<16>(srq_p.wrapping_add(r.slot as usize * 32 + 16)),
            r.seg,
            "SRQ WQE overwritten in flight"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoke() {
        hostile_cq(&[]);
        hostile_cq(&[0xff; 300]);
        let mut s = vec![1u8];
        for i in 0..120u8 {
            s.extend_from_slice(&[i.wrapping_mul(37), i, i ^ 0x5a, 3, i >> 1]);
        }
        hostile_cq(&s);
    }
}
