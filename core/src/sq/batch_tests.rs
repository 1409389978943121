//! Tests of [`SendBatch`]: pushes build exactly what a list post builds
//! (WQE bytes, records, doorbell, errors, the cached fence), a refused push
//! writes nothing and the batch goes on, drop rings as `ring` does, and a
//! leaked batch posts nothing.

use super::tests::{cfg, queue, ring_bytes, Fixture, N};
use super::*;
use bareverbs_sim::rng::Rng;

fn fixture() -> Fixture {
    Fixture {
        ring: [0; N * 8],
        db: [0],
    }
}

/// Everything a post leaves behind that the device or a completion sees.
fn state(q: &SendQueue<MemUar, [SqSlot; N]>, f: &Fixture) -> impl PartialEq + core::fmt::Debug {
    (
        (q.cur_post(), q.head(), q.tail(), q.bf_offset(), q.fm_cache),
        q.slots,
        ring_bytes(f).to_vec(),
        f.db,
        q.uar().bytes().to_vec(),
    )
}

use crate::platform::MemUar;

/// A random WR of every kind the queue takes, some of them refused (too
/// many SGEs, inline too long, WQE too large), with random flags.
/// Inline WRs take their SGEs from `inline_sgl` (CPU memory).
fn random_wr<'a>(r: &mut Rng, sgl: &'a [Sge], inline_sgl: &'a [Sge], wr_id: u64) -> SendWr<'a> {
    let raddr = r.next_u64();
    let rkey = r.next_u32();
    let op = match r.next_u32() % 10 {
        0 => SendOp::Send,
        1 => SendOp::SendImm { imm: r.next_u32() },
        2 => SendOp::Write {
            remote_addr: raddr,
            rkey,
        },
        3 => SendOp::WriteImm {
            remote_addr: raddr,
            rkey,
            imm: r.next_u32(),
        },
        4 => SendOp::Read {
            remote_addr: raddr,
            rkey,
        },
        5 => SendOp::CompSwap {
            remote_addr: raddr & !7,
            rkey,
            compare: r.next_u64(),
            swap: r.next_u64(),
        },
        6 => SendOp::FetchAdd {
            remote_addr: raddr & !7,
            rkey,
            add: r.next_u64(),
        },
        7 => SendOp::LocalInv {
            invalidate_rkey: rkey,
        },
        8 => SendOp::BindMw {
            mw_rkey: rkey,
            bind: MwBind {
                mw_type: MwType::Type2,
                new_rkey: r.next_u32(),
                mr_lkey: r.next_u32(),
                addr: r.next_u64(),
                length: if r.one_in(4) {
                    1 << 32
                } else {
                    r.next_u64() % 65536
                },
                access: crate::mr::Access::empty(),
            },
        },
        _ => SendOp::SendInv {
            invalidate_rkey: rkey,
        },
    };
    let mut flags = SendFlags::empty();
    for f in [SendFlags::SIGNALED, SendFlags::SOLICITED, SendFlags::FENCE] {
        if r.one_in(3) {
            flags |= f;
        }
    }
    let inline = matches!(
        op,
        SendOp::Send | SendOp::SendImm { .. } | SendOp::Write { .. }
    ) && r.one_in(4);
    let sgl = if inline {
        flags |= SendFlags::INLINE;
        inline_sgl
    } else {
        sgl
    };
    let k = (r.next_u32() % (sgl.len() as u32 + 1)) as usize;
    SendWr::new(wr_id, op, &sgl[..k]).with_flags(flags)
}

/// Random lists posted on one queue by pushes (stopping at the first
/// refusal, as a list post does) and on a twin by `post_send_raw`: the
/// same result and the same everything after every round.
#[test]
fn pushes_build_exactly_what_a_list_post_builds() {
    let rounds = if cfg!(miri) { 40 } else { 2000 };
    let (mut fa, mut fb) = (fixture(), fixture());
    let c = cfg(QpType::Rc, 4, 5, 60);
    let (mut a, mut b) = (queue(&mut fa, c), queue(&mut fb, c));
    let mut r = Rng::new(0x5e_ba7c);
    // Inline sources: CPU memory, addresses with exposed provenance.
    let payload = [0xa5u8; 256];
    for round in 0..rounds as u64 {
        let sgl: [Sge; 6] = core::array::from_fn(|_| Sge {
            addr: r.next_u64(),
            length: match r.next_u32() % 3 {
                0 => 0,
                _ => r.next_u32() % 5000,
            },
            lkey: r.next_u32(),
        });
        // Up to 6 × 40 bytes: some fit the 60-byte inline limit, some not.
        let inline_sgl: [Sge; 6] = core::array::from_fn(|i| Sge {
            addr: payload.as_ptr().wrapping_add(i * 40).expose_provenance() as u64,
            length: r.next_u32() % 41,
            lkey: r.next_u32(),
        });
        let n = 1 + (r.next_u32() % 5) as usize;
        let wrs: heapless::Vec<SendWr<'_>, 5> = (0..n)
            .map(|j| random_wr(&mut r, &sgl, &inline_sgl, round * 8 + j as u64))
            .collect();
        let pushed = {
            let mut batch = a.batch();
            let mut res = Ok(());
            for (index, w) in wrs.iter().enumerate() {
                // SAFETY: memory-only ring; non-inline SGEs are never
                // dereferenced, inline ones point into `payload`.
                if let Err(kind) = unsafe { batch.push(w) } {
                    res = Err(PostError { index, kind });
                    break;
                }
            }
            if r.one_in(2) {
                batch.ring();
            } else {
                drop(batch);
            }
            res
        };
        // SAFETY: as above.
        let listed = unsafe { b.post_send_raw(&wrs) };
        assert_eq!(pushed, listed, "round {round}");
        assert_eq!(state(&a, &fa), state(&b, &fb), "round {round}");
        if r.one_in(2) {
            // Everything completed (both queues alike).
            // SAFETY: memory-only rings, never executed by a device.
            unsafe {
                a.set_counters(a.cur_post(), a.head(), a.bf_offset());
                b.set_counters(b.cur_post(), b.head(), b.bf_offset());
            }
        }
    }
}

/// Pushes that go on after refusals build what posting each WR on its own
/// builds: the same WQE bytes, records, counters and cached fence (the
/// fence rule of ref §1.3 applies per WR: a refusal after the SGE check
/// consumes a cached fence, one at the SGE check or queue full keeps it,
/// and a UMR's small fence reaches the next WQE built). Only the
/// doorbells differ (one per batch against one per post).
#[test]
fn pushes_after_refusals_build_what_single_posts_build() {
    let rounds = if cfg!(miri) { 30 } else { 1500 };
    let (mut fa, mut fb) = (fixture(), fixture());
    let c = cfg(QpType::Rc, 4, 5, 60);
    let (mut a, mut b) = (queue(&mut fa, c), queue(&mut fb, c));
    let mut r = Rng::new(0xf3_9ce);
    let payload = [0x3cu8; 256];
    for round in 0..rounds as u64 {
        let sgl: [Sge; 6] = core::array::from_fn(|_| Sge {
            addr: r.next_u64(),
            length: r.next_u32() % 3 * 1000,
            lkey: r.next_u32(),
        });
        let inline_sgl: [Sge; 6] = core::array::from_fn(|i| Sge {
            addr: payload.as_ptr().wrapping_add(i * 40).expose_provenance() as u64,
            length: r.next_u32() % 41,
            lkey: r.next_u32(),
        });
        let n = 1 + (r.next_u32() % 6) as usize;
        let wrs: heapless::Vec<SendWr<'_>, 6> = (0..n)
            .map(|j| random_wr(&mut r, &sgl, &inline_sgl, round * 8 + j as u64))
            .collect();
        let mut pushed: heapless::Vec<Result<(), PostErrorKind>, 6> = heapless::Vec::new();
        {
            let mut batch = a.batch();
            for w in &wrs {
                // SAFETY: memory-only ring; non-inline SGEs are never
                // dereferenced, inline ones point into `payload`.
                let _ = pushed.push(unsafe { batch.push(w) });
            }
            batch.ring();
        }
        for (w, p) in wrs.iter().zip(&pushed) {
            // SAFETY: as above.
            let single = unsafe { b.post_send_raw(core::slice::from_ref(w)) };
            assert_eq!(single.map_err(|e| e.kind), *p, "round {round}");
        }
        assert_eq!(
            (a.cur_post(), a.head(), a.tail(), a.fm_cache),
            (b.cur_post(), b.head(), b.tail(), b.fm_cache),
            "round {round}"
        );
        assert_eq!(a.slots, b.slots, "round {round}");
        assert_eq!(ring_bytes(&fa), ring_bytes(&fb), "round {round}");
        assert_eq!(fa.db, fb.db, "round {round}");
        if r.one_in(2) {
            // SAFETY: memory-only rings, never executed by a device.
            unsafe {
                a.set_counters(a.cur_post(), a.head(), a.bf_offset());
                b.set_counters(b.cur_post(), b.head(), b.bf_offset());
            }
        }
    }
}

/// A refused push writes nothing and leaves the batch open: the WRs
/// pushed after it are built where it would have been, and one doorbell
/// rings for all of them.
#[test]
fn a_refused_push_writes_nothing_and_the_batch_goes_on() {
    let (mut fa, mut fb) = (fixture(), fixture());
    let c = cfg(QpType::Rc, 4, 2, 0);
    let (mut a, mut b) = (queue(&mut fa, c), queue(&mut fb, c));
    let sg = [Sge {
        addr: 0x1000,
        length: 64,
        lkey: 7,
    }; 3];
    let ok = |id| SendWr::new(id, SendOp::Send, &sg[..1]);
    let too_many = SendWr::new(9, SendOp::Send, &sg);
    // SAFETY: memory-only rings; SGEs never dereferenced.
    unsafe {
        let mut batch = a.batch();
        batch.push(&ok(1)).unwrap();
        let e = batch.push(&too_many).unwrap_err();
        assert!(
            matches!(e, PostErrorKind::TooManySges { num: 3, .. }),
            "{e:?}"
        );
        batch.push(&ok(2)).unwrap();
        assert_eq!(batch.built(), 2);
        batch.ring();
        b.post_send_raw(&[ok(1), ok(2)]).unwrap();
    }
    assert_eq!(state(&a, &fa), state(&b, &fb));
    assert_eq!(a.uar().doorbells, 1);
}

/// A full queue refuses the push (queue full, with the WRs in flight
/// counted), never overwriting an in-flight WQE.
#[test]
fn a_full_queue_refuses_the_push() {
    let mut f = fixture();
    let mut q = queue(&mut f, cfg(QpType::Rc, 4, 1, 0));
    let sg = [Sge {
        addr: 0x1000,
        length: 64,
        lkey: 7,
    }];
    let before;
    // SAFETY: memory-only ring; SGEs never dereferenced.
    unsafe {
        let mut batch = q.batch();
        for id in 0..4 {
            batch.push(&SendWr::new(id, SendOp::Send, &sg)).unwrap();
        }
        assert_eq!(batch.room(), 0);
        let e = batch.push(&SendWr::new(4, SendOp::Send, &sg)).unwrap_err();
        assert_eq!(
            e,
            PostErrorKind::QueueFull {
                outstanding: 4,
                max_post: 4
            }
        );
        batch.ring();
        before = ring_bytes(&f);
        let e = q
            .post_send_raw(&[SendWr::new(5, SendOp::Send, &sg)])
            .unwrap_err();
        assert_eq!(e.index, 0);
    }
    assert_eq!(ring_bytes(&f), before);
    assert_eq!(q.head(), 4);
}

/// A leaked batch posts nothing: no counter moves, no doorbell rings, and
/// no record it wrote names a WR in flight; the next post builds as if it
/// never happened.
///
/// The records it wrote beyond `head` must not survive the WRs posted
/// next: here A (counter 0, WR 0) and B (counter 1, WR 1) are leaked, then
/// W (two WQEBBs at counter 0, WR 0) and X (counter 2, WR 1) are posted.
/// Counter 1 is the middle of W, never a WQE start: a CQE naming it must
/// retire nothing (B's stale record would say "WR 1, in flight").
#[test]
fn a_leaked_batchs_records_never_retire_later_wrs() {
    let mut f = fixture();
    let mut q = queue(&mut f, cfg(QpType::Rc, 4, 4, 0));
    let sg = [Sge {
        addr: 0x1000,
        length: 64,
        lkey: 7,
    }; 4];
    let one = |id| SendWr::new(id, SendOp::Send, &sg[..1]).with_flags(SendFlags::SIGNALED);
    let two = |id| SendWr::new(id, SendOp::Send, &sg[..4]).with_flags(SendFlags::SIGNALED);
    // SAFETY: memory-only ring; SGEs never dereferenced.
    unsafe {
        let mut batch = q.batch();
        batch.push(&one(0xa)).unwrap();
        batch.push(&one(0xb)).unwrap();
        core::mem::forget(batch);
        q.post_send_raw(&[two(0x1), one(0x2)]).unwrap();
        assert_eq!((q.cur_post(), q.head()), (3, 2));
        assert_eq!(q.retire(1), Err(CompletionReject::NotInFlight));
        // The real WQE starts still retire, with their own ids.
        assert_eq!(q.retire(0).map(|r| r.wr_id), Ok(0x1));
        assert_eq!(q.retire(2).map(|r| r.wr_id), Ok(0x2));
    }
}
#[test]
fn a_leaked_batch_posts_nothing() {
    let (mut fa, mut fb) = (fixture(), fixture());
    let c = cfg(QpType::Rc, 4, 1, 0);
    let (mut a, mut b) = (queue(&mut fa, c), queue(&mut fb, c));
    let sg = [Sge {
        addr: 0x1000,
        length: 64,
        lkey: 7,
    }];
    let w = |id| SendWr::new(id, SendOp::Send, &sg).with_flags(SendFlags::SIGNALED);
    // SAFETY: memory-only rings; SGEs never dereferenced.
    unsafe {
        let mut batch = a.batch();
        batch.push(&w(1)).unwrap();
        core::mem::forget(batch);
        assert_eq!((a.cur_post(), a.head()), (0, 0));
        assert_eq!(a.uar().doorbells, 0);
        assert_eq!(fa.db, [0]);
        // Its WR is not in flight.
        assert!(a.retire(0).is_err());
        a.post_send_raw(&[w(2)]).unwrap();
        b.post_send_raw(&[w(2)]).unwrap();
    }
    assert_eq!(state(&a, &fa), state(&b, &fb));
}
