//! The device as an adversary: memory-backed CQ rings filled with crafted
//! CQEs (phantom, repeated, stale, out-of-order counters, oversize
//! compressed sessions, CQEs of another QP, CQE version 0 vs 1 routing,
//! stale flushes after a reset). For each: no panic, every posted WR
//! completes exactly once or the bad CQE is a typed error, no WQE in flight
//! is overwritten, and the queues stay usable. Small sizes: runs under miri.

use bareverbs::cq::{CompletionQueue, CompletionReject, CqError, PollError};
use bareverbs::cqe::{Cqe64, CqeSize, WcStatus, WorkCompletion};
use bareverbs::platform::{DmaBuf, MemUar};
use bareverbs::qp::QpType;
use bareverbs::queue_pair::{QpSet, QueuePair};
use bareverbs::rq::{RecvErrorKind, RecvQueue, RecvWr, RqConfig, SharedReceiveQueue, SrqConfig};
use bareverbs::rq::{RqSlot, SrqSlot};
use bareverbs::sq::SqSlot;
use bareverbs::sq::{PostErrorKind, SendFlags, SendOp, SendWr, Sge, SqConfig};
use core::ptr::NonNull;

const NCQE: usize = 16;
const SQ: usize = 8;
const RQ: usize = 4;
const SRQ: usize = 4;

type Qp = QueuePair<MemUar, [SqSlot; SQ], [RqSlot; RQ]>;

/// Heap memory standing in for DMA memory; the queues hold raw pointers
/// into it, so it must outlive them (it is dropped last).
struct Mem(Vec<Vec<u64>>);

impl Mem {
    fn new() -> Self {
        Mem(Vec::new())
    }
    fn alloc(&mut self, bytes: usize) -> DmaBuf {
        let mut v = vec![0u64; bytes.div_ceil(8)];
        let cpu = NonNull::new(v.as_mut_ptr().cast::<u8>()).unwrap();
        self.0.push(v);
        DmaBuf {
            cpu,
            iova: 0x10_0000 * self.0.len() as u64,
            len: bytes,
        }
    }
}

fn read(b: DmaBuf) -> Vec<u8> {
    // SAFETY: `b` is live test memory; raw volatile reads, no reference.
    (0..b.len)
        .map(|i| unsafe { core::ptr::read_volatile(b.cpu.as_ptr().add(i)) })
        .collect()
}

/// The device side of a CQ: writes CQEs at its producer index with the
/// owner bit of that lap ([ref §5.3](bareverbs::reference)).
struct Dev {
    ring: DmaBuf,
    pi: u32,
}

impl Dev {
    fn put_at(&self, pos: u32, bytes: &[u8; 64]) {
        let base = (pos as usize & (NCQE - 1)) * 64;
        for (i, b) in bytes.iter().enumerate() {
            // SAFETY: inside the CQ ring; raw volatile byte store.
            unsafe { core::ptr::write_volatile(self.ring.cpu.as_ptr().add(base + i), *b) };
        }
    }
    fn push(&mut self, mut c: Cqe64) {
        let owner = ((self.pi as usize & NCQE) != 0) as u8;
        let o = c.op_own();
        c.set_op_own((o & !1) | owner);
        self.put_at(self.pi, c.as_bytes());
        self.pi += 1;
    }
    /// A compressed session of `count` mini-CQEs (hash format: counters
    /// `first + i`) of opcode `op` for `qpn`/`uidx`.
    fn push_session(&mut self, op: u8, qpn: u32, uidx: u32, first: u16, count: u32) {
        let mut t = cqe(op, qpn, uidx, first);
        t.set_byte_cnt(count);
        let owner = ((self.pi as usize & NCQE) != 0) as u8;
        t.set_op_own((op << 4) | (3 << 2) | owner);
        self.put_at(self.pi, t.as_bytes());
        let mut arr = [0u8; 64];
        for m in 0..8 {
            arr[m * 8 + 4..m * 8 + 8].copy_from_slice(&(100 + m as u32).to_be_bytes());
        }
        self.put_at(self.pi + 1, &arr);
        self.pi += count;
    }
}

fn cqe(op: u8, qpn: u32, uidx: u32, counter: u16) -> Cqe64 {
    let mut c = Cqe64::ZERO;
    c.set_op_own(op << 4)
        .set_sop_drop_qpn((0x0a << 24) | qpn)
        .set_srqn_uidx(uidx)
        .set_wqe_counter(counter)
        .set_byte_cnt(64);
    if op == 13 || op == 14 {
        c.set_syndrome(0x05); // WR_FLUSH_ERR
    }
    c
}

fn new_cq(mem: &mut Mem, version: u8) -> (CompletionQueue<NCQE>, Dev) {
    let ring = mem.alloc(NCQE * 64);
    let db = mem.alloc(8);
    // SAFETY: test memory outliving the CQ, accessed only through raw
    // pointers (the CQ and `Dev`).
    let mut cq =
        unsafe { CompletionQueue::<NCQE>::new(ring, db, 9, CqeSize::B64, version) }.unwrap();
    cq.init_ring();
    (cq, Dev { ring, pi: 0 })
}

fn sq_cfg(qpn: u32) -> SqConfig {
    SqConfig::new(QpType::Rc, 4, 2).qpn(qpn)
}

/// A QP with its own RQ (or none) over fresh test memory.
fn new_qp(mem: &mut Mem, qpn: u32, uidx: u32, version: u8, with_rq: bool) -> (Qp, DmaBuf, DmaBuf) {
    let sq_ring = mem.alloc(SQ * 64);
    let rq_ring = mem.alloc(RQ * 16);
    let db = mem.alloc(8);
    // SAFETY: test memory outliving the queues; the SQ uses record word 1,
    // the RQ word 0; nothing else touches them.
    let sq = unsafe {
        bareverbs::sq::SendQueue::new(
            sq_ring,
            db,
            MemUar::default(),
            sq_cfg(qpn),
            [SqSlot::default(); SQ],
        )
    }
    .unwrap();
    let rq = with_rq.then(|| {
        let cfg = RqConfig {
            wqe_shift: 4,
            max_gs: 1,
            max_post: 4,
        };
        // SAFETY: as above.
        unsafe { RecvQueue::new(rq_ring, db, cfg, [RqSlot::default(); RQ]) }.unwrap()
    });
    let mut qp = QueuePair::new(qpn, uidx, version, sq, rq);
    qp.sq.enable();
    if let Some(rq) = qp.rq.as_mut() {
        rq.enable();
    }
    (qp, sq_ring, rq_ring)
}

const SGE: Sge = Sge {
    addr: 0x4000,
    length: 32,
    lkey: 0x77,
};

fn post_sends(qp: &mut Qp, ids: &[u64]) {
    let sgl = [SGE];
    for &id in ids {
        let wr = SendWr::new(id, SendOp::Send, &sgl).with_flags(SendFlags::SIGNALED);
        // SAFETY: memory-only ring, never executed; the SGE is never
        // dereferenced.
        unsafe { qp.sq.post_send_raw(&[wr]) }.unwrap();
    }
}

fn post_recvs(qp: &mut Qp, ids: &[u64]) {
    let sgl = [SGE];
    for &id in ids {
        // SAFETY: as above.
        unsafe {
            qp.rq.as_mut().unwrap().post_recv_raw(&[RecvWr {
                wr_id: id,
                sgl: &sgl,
            }])
        }
        .unwrap();
    }
}

/// Polls until the CQ is empty, returning completions and errors in order.
fn drain<R: bareverbs::cq::WrResolver>(
    cq: &mut CompletionQueue<NCQE>,
    r: &mut R,
) -> (Vec<WorkCompletion>, Vec<PollError>) {
    let mut wcs = Vec::new();
    let mut errs = Vec::new();
    let mut out = [WorkCompletion::default(); 4];
    for _ in 0..64 {
        match cq.poll(r, &mut out) {
            Ok(0) => break,
            Ok(n) => wcs.extend_from_slice(&out[..n]),
            Err(e) => {
                wcs.extend_from_slice(&out[..e.completions()]);
                errs.push(e);
            }
        }
        // The record always follows the consumer index (ref §4.5).
        assert_eq!(cq.read_dbrec(0), cq.consumer_index() & 0xff_ffff);
    }
    (wcs, errs)
}

fn ids(w: &[WorkCompletion]) -> Vec<u64> {
    w.iter().map(|w| w.wr_id).collect()
}

fn rejected(e: &PollError) -> (u32, u16, CompletionReject) {
    match *e {
        PollError::Rejected {
            qp,
            wqe_counter,
            why,
            ..
        } => (qp, wqe_counter, why),
        other => panic!("expected Rejected, got {other:?}"),
    }
}

#[test]
fn phantom_repeated_and_stale_send_counters_are_rejected() {
    let mut mem = Mem::new();
    let (mut cq, mut dev) = new_cq(&mut mem, 1);
    let (mut qp, sq_ring, _) = new_qp(&mut mem, 0x100, 1, 1, true);
    post_sends(&mut qp, &[10, 11, 12]); // counters 0, 1, 2
    let before = read(sq_ring);
    dev.push(cqe(0, 0x100, 1, 5)); // never posted
    dev.push(cqe(0, 0x100, 1, 1)); // good: retires 10 and 11
    dev.push(cqe(0, 0x100, 1, 1)); // repeated
    dev.push(cqe(0, 0x100, 1, 0)); // stale
    dev.push(cqe(0, 0x100, 1, 2)); // good
    dev.push(cqe(13, 0x100, 1, 2)); // flush of a retired WQE
    let mut out = [WorkCompletion::default(); 4];
    // The phantom is the first CQE: a typed error, consumed, nothing
    // retired; the next call continues behind it.
    let e = cq.poll(&mut qp, &mut out).unwrap_err();
    assert_eq!(rejected(&e), (1, 5, CompletionReject::NotInFlight));
    assert_eq!(e.completions(), 0);
    assert_eq!((cq.consumer_index(), cq.read_dbrec(0)), (1, 1));
    assert_eq!((qp.sq.tail(), qp.sq.outstanding()), (0, 3));
    let (wcs, errs) = drain(&mut cq, &mut qp);
    assert_eq!(ids(&wcs), [11, 12]);
    assert!(wcs.iter().all(|w| w.status == WcStatus::Success));
    let why: Vec<_> = errs.iter().map(rejected).collect();
    assert_eq!(
        why,
        [
            (1, 1, CompletionReject::NotInFlight),
            (1, 0, CompletionReject::NotInFlight),
            (1, 2, CompletionReject::NotInFlight),
        ]
    );
    assert_eq!((qp.sq.head(), qp.sq.tail()), (3, 3));
    assert_eq!(read(sq_ring), before, "no WQE was rewritten");
    // Usable afterwards: the full capacity can be posted and completed.
    post_sends(&mut qp, &[20, 21, 22, 23]);
    dev.push(cqe(0, 0x100, 1, 6));
    let (wcs, errs) = drain(&mut cq, &mut qp);
    assert_eq!((ids(&wcs), errs.len()), (vec![23], 0));
    assert_eq!(qp.sq.outstanding(), 0);
}

#[test]
fn extra_and_out_of_order_receive_cqes_are_rejected() {
    let mut mem = Mem::new();
    let (mut cq, mut dev) = new_cq(&mut mem, 1);
    let (mut qp, _, rq_ring) = new_qp(&mut mem, 0x100, 1, 1, true);
    post_recvs(&mut qp, &[30, 31]);
    let before = read(rq_ring);
    dev.push(cqe(2, 0x100, 1, 1)); // out of order: 0 is the oldest
    dev.push(cqe(2, 0x100, 1, 0));
    dev.push(cqe(2, 0x100, 1, 1));
    dev.push(cqe(2, 0x100, 1, 2)); // extra: nothing outstanding
    dev.push(cqe(14, 0x100, 1, 2)); // extra flush
    let (wcs, errs) = drain(&mut cq, &mut qp);
    assert_eq!(ids(&wcs), [30, 31]);
    let why: Vec<_> = errs.iter().map(rejected).collect();
    assert_eq!(
        why,
        [
            (1, 1, CompletionReject::NotOldest { expected: 0 }),
            (1, 2, CompletionReject::NothingOutstanding),
            (1, 2, CompletionReject::NothingOutstanding),
        ]
    );
    let rq = qp.rq.as_mut().unwrap();
    assert_eq!((rq.head(), rq.tail(), rq.outstanding()), (2, 2, 0));
    assert_eq!(read(rq_ring), before);
    // Not wedged: four receives fit again, a fifth is refused as full.
    post_recvs(&mut qp, &[40, 41, 42, 43]);
    let sgl = [SGE];
    // SAFETY: memory-only ring, never executed.
    let e = unsafe {
        qp.rq.as_mut().unwrap().post_recv_raw(&[RecvWr {
            wr_id: 44,
            sgl: &sgl,
        }])
    }
    .unwrap_err();
    assert!(matches!(
        e.kind,
        RecvErrorKind::QueueFull {
            outstanding: 4,
            max_post: 4
        }
    ));
}

#[test]
fn phantom_srq_slot_is_rejected_and_never_handed_out() {
    let mut mem = Mem::new();
    let (mut cq, mut dev) = new_cq(&mut mem, 1);
    let (qp, _, _) = new_qp(&mut mem, 0x100, 1, 1, false);
    let ring = mem.alloc(SRQ * 32);
    let db = mem.alloc(8);
    let cfg = SrqConfig {
        wqe_shift: 5,
        max_gs: 1,
        nwqes: 4,
        wait_queue: false,
    };
    // SAFETY: test memory outliving the SRQ.
    let mut srq =
        unsafe { SharedReceiveQueue::new(ring, db, cfg, [SrqSlot::default(); SRQ]) }.unwrap();
    let sgl = [SGE];
    let post = |srq: &mut SharedReceiveQueue<[SrqSlot; SRQ]>, id| {
        // SAFETY: memory-only ring, never executed.
        unsafe {
            srq.post_recv_raw(&[RecvWr {
                wr_id: id,
                sgl: &sgl,
            }])
        }
    };
    post(&mut srq, 50).unwrap(); // slot 0
    post(&mut srq, 51).unwrap(); // slot 1
    let mut qps = [qp];
    let mut set = QpSet {
        qps: &mut qps,
        srq: Some(&mut srq),
    };
    dev.push(cqe(2, 0x100, 1, 2)); // slot 2: never posted
    dev.push(cqe(2, 0x100, 1, 9)); // out of range
    let (wcs, errs) = drain(&mut cq, &mut set);
    assert!(wcs.is_empty());
    let why: Vec<_> = errs.iter().map(rejected).collect();
    assert_eq!(
        why,
        [
            (1, 2, CompletionReject::SlotNotPosted),
            (1, 9, CompletionReject::SlotOutOfRange),
        ]
    );
    let srq = &mut srq;
    post(srq, 52).unwrap(); // slot 2
    let before = read(ring);
    // Three posted = nwqes − 1: the SRQ is full; the phantom did not free
    // a slot that still holds a WQE.
    let e = post(srq, 53).unwrap_err();
    assert_eq!(e.kind.errno(), 12);
    assert_eq!(read(ring), before, "no posted WQE was overwritten");
    assert!((0..3).all(|i| srq.is_posted(i)));
    let mut set = QpSet {
        qps: &mut qps,
        srq: Some(srq),
    };
    for s in [1u16, 2, 0, 0] {
        dev.push(cqe(2, 0x100, 1, s));
    }
    let (wcs, errs) = drain(&mut cq, &mut set);
    assert_eq!(ids(&wcs), [51, 52, 50]);
    assert_eq!(
        errs.iter().map(rejected).collect::<Vec<_>>(),
        [(1, 0, CompletionReject::SlotNotPosted)]
    );
}

#[test]
fn oversize_compressed_session_completes_only_what_is_outstanding() {
    let mut mem = Mem::new();
    let (mut cq, mut dev) = new_cq(&mut mem, 1);
    let (mut qp, _, _) = new_qp(&mut mem, 0x100, 1, 1, true);
    post_recvs(&mut qp, &[60, 61]);
    dev.push_session(2, 0x100, 1, 0, 8);
    post_sends(&mut qp, &[70]);
    dev.push(cqe(0, 0x100, 1, 0)); // a normal CQE after the session
    let mut out = [WorkCompletion::default(); 8];
    let e = cq.poll(&mut qp, &mut out).unwrap_err();
    assert_eq!(e.completions(), 2);
    assert_eq!(ids(&out[..2]), [60, 61]);
    assert_eq!(out[1].byte_len, 101);
    assert_eq!(rejected(&e), (1, 2, CompletionReject::NothingOutstanding));
    // The rest of the session was consumed, never reported.
    assert_eq!(cq.consumer_index(), 8);
    assert_eq!(cq.read_dbrec(0), 8);
    let (wcs, errs) = drain(&mut cq, &mut qp);
    assert_eq!((ids(&wcs), errs.len()), (vec![70], 0));
    assert_eq!(qp.rq.as_ref().unwrap().outstanding(), 0);
    // A session of a CQE kind that completes no work request is refused
    // whole (the provider would have made `count` empty completions).
    dev.push_session(0xa, 0x100, 1, 0, 3);
    let (wcs, errs) = drain(&mut cq, &mut qp);
    assert!(wcs.is_empty());
    assert_eq!(rejected(&errs[0]).2, CompletionReject::NoWorkRequest);
    assert_eq!((errs.len(), cq.consumer_index()), (1, 12));
}

#[test]
fn cqe_version_decides_the_routing_field() {
    // Version 1: B's QPN equals A's user index; a CQE for A (uidx 1) must
    // never be taken by B even though B comes first.
    let mut mem = Mem::new();
    let (mut cq, mut dev) = new_cq(&mut mem, 1);
    let (mut a, _, _) = new_qp(&mut mem, 0x100, 1, 1, true);
    let (mut b, _, _) = new_qp(&mut mem, 1, 2, 1, true);
    post_sends(&mut a, &[0xa0]);
    post_sends(&mut b, &[0xb0]);
    let mut qps = [b, a];
    let mut set = QpSet::<_, [SqSlot; SQ], [RqSlot; RQ], [SrqSlot; SRQ]> {
        qps: &mut qps,
        srq: None,
    };
    dev.push(cqe(0, 0x100, 1, 0));
    dev.push(cqe(0, 0x100, 7, 0)); // uidx of nobody
    let (wcs, errs) = drain(&mut cq, &mut set);
    assert_eq!(ids(&wcs), [0xa0]);
    assert_eq!(
        errs,
        [PollError::UnknownQp {
            qp: 7,
            completions: 1
        }]
    );
    let [b, a] = &qps;
    assert_eq!((a.sq.outstanding(), b.sq.outstanding()), (0, 1));

    // Version 0: A's user index equals B's QPN; a CQE for QPN 0x200 is B's.
    let mut mem = Mem::new();
    let (mut cq, mut dev) = new_cq(&mut mem, 0);
    let (mut a, _, _) = new_qp(&mut mem, 0x100, 0x200, 0, true);
    let (mut b, _, _) = new_qp(&mut mem, 0x200, 5, 0, true);
    post_sends(&mut a, &[0xa1]);
    post_sends(&mut b, &[0xb1]);
    let mut qps = [a, b];
    let mut set = QpSet::<_, [SqSlot; SQ], [RqSlot; RQ], [SrqSlot; SRQ]> {
        qps: &mut qps,
        srq: None,
    };
    dev.push(cqe(0, 0x200, 0x100, 0));
    let (wcs, errs) = drain(&mut cq, &mut set);
    assert_eq!((ids(&wcs), errs.len()), (vec![0xb1], 0));
    let [a, b] = &qps;
    assert_eq!((a.sq.outstanding(), b.sq.outstanding()), (1, 0));
}

/// QP A goes to ERR with work outstanding; its flush CQEs sit in the CQ
/// between CQEs of QP B when A is moved to RESET and reused.
fn flushed_world(mem: &mut Mem) -> (CompletionQueue<NCQE>, Dev, Qp, Qp) {
    let (cq, mut dev) = new_cq(mem, 1);
    let (mut a, _, _) = new_qp(mem, 0x100, 1, 1, true);
    let (mut b, _, _) = new_qp(mem, 0x200, 2, 1, true);
    post_sends(&mut a, &[1, 2, 3, 4]);
    post_recvs(&mut a, &[5, 6]);
    post_sends(&mut b, &[7, 8]);
    dev.push(cqe(0, 0x200, 2, 0)); // B: WR 7
    dev.push(cqe(13, 0x100, 1, 0)); // A flushes
    dev.push(cqe(13, 0x100, 1, 1));
    dev.push(cqe(0, 0x200, 2, 1)); // B: WR 8
    dev.push(cqe(13, 0x100, 1, 2));
    dev.push(cqe(14, 0x100, 1, 0));
    dev.push(cqe(13, 0x100, 1, 3));
    dev.push(cqe(14, 0x100, 1, 1));
    (cq, dev, a, b)
}

#[test]
fn clean_purges_a_reset_qps_completions() {
    let mut mem = Mem::new();
    let (mut cq, mut dev, a, b) = flushed_world(&mut mem);
    let mut qps = [a, b];
    let mut out = [WorkCompletion::default(); 2];
    // The user sees B's first completion and A's first flush, then resets A.
    let mut set = QpSet::<_, [SqSlot; SQ], [RqSlot; RQ], [SrqSlot; SRQ]> {
        qps: &mut qps,
        srq: None,
    };
    assert_eq!(cq.poll(&mut set, &mut out), Ok(2));
    assert_eq!(ids(&out), [7, 1]);
    assert_eq!(out[1].status, WcStatus::WrFlushErr);
    let [a, b] = &mut qps;
    // SAFETY: memory-only queues; no device executes them.
    unsafe { a.reset(&mut [&mut cq]) };
    // Two polled + five of A's CQEs dropped; B's WR 8 moved to slot 7.
    assert_eq!(cq.consumer_index(), 7, "five of A's CQEs dropped");
    assert_eq!(cq.read_dbrec(0), 7);
    a.sq.enable();
    a.rq.as_mut().unwrap().enable();
    // Reuse A: new work, new CQEs behind B's surviving one.
    post_sends(a, &[11, 12, 13, 14]);
    post_recvs(a, &[15]);
    dev.push(cqe(0, 0x100, 1, 3));
    dev.push(cqe(2, 0x100, 1, 0));
    let _ = b;
    let mut set = QpSet::<_, [SqSlot; SQ], [RqSlot; RQ], [SrqSlot; SRQ]> {
        qps: &mut qps,
        srq: None,
    };
    let (wcs, errs) = drain(&mut cq, &mut set);
    assert_eq!((ids(&wcs), errs.len()), (vec![8, 14, 15], 0));
    assert!(wcs.iter().all(|w| w.status == WcStatus::Success));
    let [a, b] = &qps;
    assert_eq!((a.sq.outstanding(), b.sq.outstanding()), (0, 0));
    // The surviving entry got the owner bit of its new slot: a second lap
    // still polls correctly.
    let [a, _] = &mut qps;
    for k in 0..8u64 {
        post_sends(a, &[100 + k]);
        dev.push(cqe(0, 0x100, 1, (4 + k) as u16));
        let (wcs, errs) = drain(&mut cq, a);
        assert_eq!((ids(&wcs), errs.len()), (vec![100 + k], 0));
    }
}

#[test]
fn stale_flushes_after_reset_are_rejected_not_wedging() {
    let mut mem = Mem::new();
    let (mut cq, _dev, a, b) = flushed_world(&mut mem);
    let mut qps = [a, b];
    // Reset without cleaning the CQ.
    // SAFETY: memory-only queues; no device executes them.
    unsafe {
        qps[0].sq.reset();
        qps[0].rq.as_mut().unwrap().reset();
    }
    qps[0].sq.enable();
    qps[0].rq.as_mut().unwrap().enable();
    let mut set = QpSet::<_, [SqSlot; SQ], [RqSlot; RQ], [SrqSlot; SRQ]> {
        qps: &mut qps,
        srq: None,
    };
    let (wcs, errs) = drain(&mut cq, &mut set);
    assert_eq!(ids(&wcs), [7, 8]);
    assert_eq!(errs.len(), 6);
    for e in &errs {
        let (qp, _, why) = rejected(e);
        assert_eq!(qp, 1);
        assert!(matches!(
            why,
            CompletionReject::NotInFlight | CompletionReject::NothingOutstanding
        ));
    }
    let [a, _] = &mut qps;
    assert_eq!(a.sq.outstanding(), 0);
    // Before the fix the stale flush moved tail past head: QueueFull.
    post_sends(a, &[21, 22, 23, 24]);
    post_recvs(a, &[25, 26, 27, 28]);
    let sgl = [SGE];
    let wr = SendWr::new(29, SendOp::Send, &sgl);
    // SAFETY: memory-only ring, never executed.
    let e = unsafe { a.sq.post_send_raw(&[wr]) }.unwrap_err();
    assert!(matches!(
        e.kind,
        PostErrorKind::QueueFull {
            outstanding: 4,
            max_post: 4
        }
    ));
}

#[test]
fn constructors_refuse_unsafe_geometry() {
    let mut mem = Mem::new();
    let ring = mem.alloc(NCQE * 64 + 8);
    let db = mem.alloc(8);
    let odd = DmaBuf {
        // SAFETY: one byte into the allocation, still inside it.
        cpu: unsafe { ring.cpu.add(4) },
        iova: ring.iova + 4,
        len: NCQE * 64,
    };
    // SAFETY: test memory (the constructor refuses before any access).
    let e = unsafe { CompletionQueue::<NCQE>::new(odd, db, 1, CqeSize::B64, 1) }.unwrap_err();
    assert!(matches!(e, CqError::Misaligned { .. }));
    let rq_ring = mem.alloc(RQ * 16);
    let cfg = RqConfig {
        wqe_shift: 4,
        max_gs: 1,
        max_post: RQ as u32 + 1,
    };
    // SAFETY: as above.
    assert!(unsafe { RecvQueue::new(rq_ring, db, cfg, [RqSlot::default(); RQ]) }.is_none());
}
