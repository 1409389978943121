//! Receive queue and SRQ unit tests: terminator, zero-length skip and
//! overflow on the RQ; free-list re-linking on the SRQ.

use core::ptr::NonNull;

use super::*;
use crate::platform::DmaBuf;
use crate::retire::CompletionReject;
use crate::sge::Sge;
use crate::wqe::{DataSeg, Segment};

fn buf<T>(a: &mut [T]) -> DmaBuf {
    DmaBuf {
        cpu: NonNull::new(a.as_mut_ptr().cast::<u8>()).unwrap(),
        iova: 0x1000,
        len: core::mem::size_of_val(a),
    }
}

fn seg(ring: &[u64], idx: usize) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&ring[idx * 2].to_ne_bytes());
    out[8..].copy_from_slice(&ring[idx * 2 + 1].to_ne_bytes());
    out
}

#[test]
fn rq_terminator_skip_and_overflow() {
    let mut ring = [0u64; 4 * 2 * 2];
    let mut db = [0u64; 1];
    let cfg = RqConfig {
        wqe_shift: 5,
        max_gs: 2,
        max_post: 4,
    };
    // SAFETY: test memory outliving the queue, touched only through it
    // until the queue is dropped.
    let mut rq =
        unsafe { RecvQueue::new(buf(&mut ring), buf(&mut db), cfg, [RqSlot::default(); 4]) }
            .unwrap();
    let s = [
        Sge {
            addr: 0x10,
            length: 0,
            lkey: 1,
        },
        Sge {
            addr: 0x20,
            length: 8,
            lkey: 2,
        },
    ];
    // Posting before INIT is refused.
    // SAFETY: the SGEs are never dereferenced by this memory-only test.
    let e = unsafe { rq.post_recv_raw(&[RecvWr { wr_id: 1, sgl: &s }]) }.unwrap_err();
    assert!(matches!(
        e.kind,
        RecvErrorKind::TooManySges { max: None, .. }
    ));
    rq.enable();
    let wrs = [RecvWr { wr_id: 1, sgl: &s }; 5];
    // SAFETY: as above.
    let e = unsafe { rq.post_recv_raw(&wrs) }.unwrap_err();
    assert_eq!((e.index, e.kind.errno()), (4, 12));
    let _ = rq;
    // ref §2.1: the zero-length SGE is skipped, the terminator follows.
    assert_eq!(seg(&ring, 0), DataSeg::new(8, 2, 0x20).to_bytes::<16>());
    assert_eq!(seg(&ring, 1), DataSeg::TERMINATOR.to_bytes::<16>());
    assert_eq!(db[0].to_ne_bytes()[..4], 4u32.to_be_bytes());
}

#[test]
fn srq_free_list_relinks_completed_slots() {
    let mut ring = [0u64; 8 * 4];
    let mut db = [0u64; 1];
    let cfg = SrqConfig {
        wqe_shift: 5,
        max_gs: 1,
        nwqes: 4,
        wait_queue: true,
    };
    // SAFETY: as above.
    let mut srq = unsafe {
        SharedReceiveQueue::new(buf(&mut ring), buf(&mut db), cfg, [SrqSlot::default(); 8])
    }
    .unwrap();
    let s = [Sge {
        addr: 0x20,
        length: 8,
        lkey: 2,
    }];
    let wr = [RecvWr { wr_id: 7, sgl: &s }];
    for _ in 0..3 {
        // SAFETY: as above.
        unsafe { srq.post_recv_raw(&wr) }.unwrap();
    }
    // head == tail: full (tail slot never handed out). ref §2.2.
    // SAFETY: as above.
    let e = unsafe { srq.post_recv_raw(&wr) }.unwrap_err();
    assert_eq!(e.kind.errno(), 12);
    // SAFETY: memory-only test: no device executes the ring.
    assert_eq!(unsafe { srq.retire(0) }, Ok(7));
    assert_eq!(
        // SAFETY: as above.
        unsafe { srq.retire(9) },
        Err(CompletionReject::SlotOutOfRange),
        "out-of-range slot from bad device bytes"
    );
    // SAFETY: as above.
    unsafe { srq.post_recv_raw(&wr) }.unwrap();
    assert_eq!((srq.head(), srq.tail(), srq.counter()), (0, 0, 4));
}
