//! One poll and what it must satisfy: the model's retirement of the WRs it
//! completes, the lean run's replay of the full run's polls, and the
//! invariants between queues, model and ring bytes.

use bareverbs::cq::{CompletionQueue, PollError};
use bareverbs::cqe::{Completion, WorkCompletion};
use bareverbs::queue_pair::QpSet;
use bareverbs::rq::{SharedReceiveQueue, SrqSlot};

use super::mem::{peek, sq_ctrl};
use super::model::Model;
use super::{Qp, NCQE, QPN, SRQ};

/// Polls of one script (at most 200 steps plus the final drain).
pub(super) const MAX_POLLS: usize = 200 + 2 * NCQE;

/// What one poll call did, as the first (full-path) run saw it.
#[derive(Clone, Copy, Default, PartialEq, Debug)]
pub(super) struct PollRecord {
    pub(super) res: Option<Result<usize, PollError>>,
    pub(super) completions: [Completion; 4],
    pub(super) ci: u32,
    pub(super) dbrec: u32,
    /// FNV-1a of the CQ ring bytes after the call.
    pub(super) ring: u64,
}

/// The full-path run's polls, replayed against the lean-path run.
pub(super) struct Trace {
    pub(super) polls: [PollRecord; MAX_POLLS],
    pub(super) n: usize,
    /// Second run: compare instead of record.
    pub(super) replay: bool,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn poll(
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
        // A kind added later must be reviewed as an answer to hostile bytes.
        Err(e) => panic!("poll error this check does not know: {e:?}"),
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
pub(super) fn fnv(p: *const u8, len: usize) -> u64 {
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

pub(super) fn check(
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
