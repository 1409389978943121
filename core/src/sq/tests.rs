//! Tests of the send queue: construction, the WQEs it writes, refusals,
//! retirement and reset.

use super::*;
use crate::platform::{MemUar, BF_OFFSET};
use crate::wqe::{AddressVector, Be16, SendWqe};

pub(super) const N: usize = 8;

/// Test memory for one queue: ring, doorbell record, inline payload.
pub(super) struct Fixture {
    pub(super) ring: [u64; N * 8],
    pub(super) db: [u64; 1],
}

fn buf<T>(a: &mut [T]) -> DmaBuf {
    DmaBuf {
        cpu: NonNull::new(a.as_mut_ptr().cast::<u8>()).unwrap(),
        iova: 0x1000,
        len: core::mem::size_of_val(a),
    }
}

/// A test queue's configuration (also used by `post_tests`).
pub(super) fn cfg(qp_type: QpType, max_post: u32, max_gs: u32, inline: u32) -> SqConfig {
    SqConfig::new(qp_type, max_post, max_gs)
        .qpn(0xabcde)
        .inline(inline)
        .atomics(true)
        .blueflame(BlueFlame {
            reg_offset: BF_OFFSET,
            buf_size: 256,
            enabled: true,
            prefer: false,
        })
}

pub(super) fn queue(f: &mut Fixture, c: SqConfig) -> SendQueue<MemUar, [SqSlot; N]> {
    // SAFETY: the fixture outlives the queue in every test and nothing
    // else touches it while the queue lives.
    let mut q = unsafe {
        SendQueue::new(
            buf(&mut f.ring),
            buf(&mut f.db),
            MemUar::filled(0xee),
            c,
            [SqSlot::default(); N],
        )
    }
    .unwrap();
    q.enable();
    q
}

pub(super) fn ring_bytes(f: &Fixture) -> [u8; N * 64] {
    let mut out = [0u8; N * 64];
    for (i, w) in f.ring.iter().enumerate() {
        out[i * 8..i * 8 + 8].copy_from_slice(&w.to_ne_bytes());
    }
    out
}

/// The sizing-derived configuration carries the layout's type and
/// read-back geometry; everything else is the plain constructor's default.
#[test]
fn from_layout_takes_the_geometry_sizing_read_back() {
    use crate::sizing::{qp_layout, DeviceCaps, QpCaps};
    let req = QpCaps::new(QpType::Ud).send(24, 3, 40).recv(8, 1);
    let l = qp_layout(&req, &DeviceCaps::DEFAULT).unwrap();
    let c = SqConfig::from_layout(0x42, &l);
    assert_eq!((c.qpn, c.qp_type), (0x42, QpType::Ud));
    assert_eq!(
        (c.max_post, c.max_gs, c.max_inline_data),
        (l.sq.max_post, l.sq.max_gs, l.sq.max_inline_data)
    );
    assert!(!c.sig_all && !c.atomics);
    assert_eq!(c.bf, BlueFlame::doorbell_only(BF_OFFSET));
    let b = SqConfig::new(QpType::Ud, l.sq.max_post, l.sq.max_gs)
        .qpn(0x42)
        .inline(l.sq.max_inline_data)
        .sig_all(true)
        .atomics(true)
        .blueflame(BlueFlame::doorbell_only(0xa00));
    assert_eq!((b.qpn, b.max_post, b.max_gs), (c.qpn, c.max_post, c.max_gs));
    assert_eq!(b.max_inline_data, c.max_inline_data);
    assert!(b.sig_all && b.atomics);
    assert_eq!(b.bf.reg_offset, 0xa00);
}

/// A BlueFlame register that does not fit in the 4 KiB UAR page is
/// refused at construction (a vector file naming `buf_size` 0x1000
/// made `conform` index past the page: found by `vector_files`).
#[test]
fn blueflame_register_must_fit_the_uar_page() {
    let mut f = Fixture {
        ring: [0; N * 8],
        db: [0],
    };
    let make = |f: &mut Fixture, reg_offset: usize, buf_size: usize| {
        let mut c = cfg(QpType::Rc, 1, 16, 0);
        c.bf.reg_offset = reg_offset;
        c.bf.buf_size = buf_size;
        // SAFETY: the fixture outlives the queue, which is dropped at
        // once.
        unsafe {
            SendQueue::new(
                buf(&mut f.ring),
                buf(&mut f.db),
                MemUar::filled(0xee),
                c,
                [SqSlot::default(); N],
            )
        }
        .is_some()
    };
    assert!(make(&mut f, 0x800, 256));
    assert!(
        make(&mut f, 0xe00, 256),
        "last register: 0xe00 + 512 = 4096"
    );
    assert!(make(&mut f, 0xff8, 0), "8-byte doorbells only");
    assert!(!make(&mut f, 0xe00, 257));
    assert!(!make(&mut f, 0x800, 0x1000));
    assert!(!make(&mut f, 0xffc, 0));
    assert!(!make(&mut f, 0x800, usize::MAX));
    assert!(!make(&mut f, usize::MAX, 0));
}

#[test]
fn write_then_parse_back() {
    let mut f = Fixture {
        ring: [0; N * 8],
        db: [0],
    };
    let mut q = queue(&mut f, cfg(QpType::Rc, 1, 16, 252));
    let sgl = [Sge {
        addr: 0x1122_3344_5566_7788,
        length: 100,
        lkey: 7,
    }];
    let wr = SendWr::new(
        9,
        SendOp::Write {
            remote_addr: 0xdead_beef,
            rkey: 0x42,
        },
        &sgl,
    )
    .with_flags(SendFlags::SIGNALED);
    // SAFETY: non-inline SGE; the memory UAR never dereferences it.
    unsafe { q.post_send_raw(&[wr]) }.unwrap();
    let r = ring_bytes(&f);
    let w = SendWqe::parse(&r, crate::qp::QpType::Rc).unwrap();
    // ref §1.7: RC WRITE with 1 SGE = ctrl + raddr + data = 3 DS.
    assert_eq!(w.ctrl.ds(), 3);
    assert_eq!(w.ctrl.opcode(), 0x08);
    assert_eq!(w.ctrl.qpn(), 0xabcde);
    assert_eq!(w.ctrl.fm_ce_se, 0x08);
    assert_eq!(q.cur_post(), 1);
    // ref §4.1: dbrec word 1 = BE32(cur_post).
    assert_eq!(f.db[0].to_ne_bytes()[4..8], 1u32.to_be_bytes());
    // 8-byte doorbell at the BF register: the first 8 ctrl bytes.
    assert_eq!(q.uar().bytes()[0x800..0x808], r[..8]);
    assert_eq!(q.bf_offset(), 256);
}

#[test]
fn inline_wraps_at_ring_end_and_blueflame_copies_it() {
    let mut f = Fixture {
        ring: [0; N * 8],
        db: [0],
    };
    let mut q = queue(&mut f, cfg(QpType::Rc, 1, 16, 252));
    // SAFETY: memory-only ring, never executed by a device.
    unsafe { q.set_counters(7, 7, 0) };
    let payload: [u8; 60] = core::array::from_fn(|i| i as u8);
    let sgl = [Sge {
        addr: payload.as_ptr().expose_provenance() as u64,
        length: 60,
        lkey: 0,
    }];
    let wr = SendWr::new(1, SendOp::Send, &sgl).with_flags(SendFlags::INLINE);
    // SAFETY: the inline SGE points at `payload`, alive and readable.
    unsafe { q.post_send_raw(&[wr]) }.unwrap();
    let r = ring_bytes(&f);
    // ctrl at slot 7 (0x1c0); inline header at 0x1d0, 44 bytes of
    // payload to the ring end, the remaining 16 at offset 0. ref §1.8.
    assert_eq!(r[0x1d0..0x1d4], (60u32 | 0x8000_0000).to_be_bytes());
    assert_eq!(r[0x1d4..0x200], payload[..44]);
    assert_eq!(r[0..16], payload[44..]);
    // DS = 1 + ceil((60 + 4) / 16) = 5 → 2 WQEBBs.
    assert_eq!(q.cur_post(), 9);
    // BlueFlame: single inline WR of DS 5 ≤ 16 → 128 bytes copied, the
    // source wrapping at the ring end.
    assert_eq!(q.uar().bytes()[0x800..0x840], r[0x1c0..0x200]);
    assert_eq!(q.uar().bytes()[0x840..0x880], r[0..0x40]);
}

#[test]
fn every_refusal_is_typed_and_writes_nothing() {
    let mut f = Fixture {
        ring: [0; N * 8],
        db: [0],
    };
    let mut q = queue(&mut f, cfg(QpType::Rc, 2, 4, 60));
    let before = ring_bytes(&f);
    let sge = Sge {
        addr: 0x1000,
        length: 8,
        lkey: 1,
    };
    let five = [sge; 5];
    let big = [Sge {
        addr: 0x1000,
        length: 61,
        lkey: 1,
    }];
    let one = [sge];
    let ra = SendOp::Write {
        remote_addr: 0,
        rkey: 0,
    };
    let cases = [
        (SendWr::new(1, SendOp::Send, &five), 12),
        (
            SendWr::new(1, SendOp::Send, &big).with_flags(SendFlags::INLINE),
            12,
        ),
        (
            SendWr::new(
                1,
                SendOp::BindMw {
                    mw_rkey: 1,
                    bind: MwBind {
                        length: 1 << 32,
                        new_rkey: 2,
                        mr_lkey: 3,
                        ..MwBind::UNBIND
                    },
                },
                &[],
            ),
            95,
        ),
    ];
    for (wr, errno) in cases {
        // SAFETY: nothing is dereferenced (refused before any write).
        let e = unsafe { q.post_send_raw(&[wr]) }.unwrap_err();
        assert_eq!(e.index, 0);
        assert_eq!(e.kind.errno(), errno, "{:?}", e.kind);
    }
    // Queue full after max_post (2) WRs: the third is refused.
    let wrs = [
        SendWr::new(1, ra, &one),
        SendWr::new(2, ra, &one),
        SendWr::new(3, ra, &one),
    ];
    // SAFETY: non-inline SGEs, never dereferenced.
    let e = unsafe { q.post_send_raw(&wrs) }.unwrap_err();
    assert_eq!(e.index, 2);
    assert!(matches!(
        e.kind,
        PostErrorKind::QueueFull {
            outstanding: 2,
            max_post: 2
        }
    ));
    assert_eq!(q.cur_post(), 2);
    let after = ring_bytes(&f);
    assert_eq!(
        after[128..],
        before[128..],
        "only the two posted WQEBBs changed"
    );
    // Posting is refused in a non-RTS state.
    // SAFETY: memory-only ring, never executed by a device.
    unsafe { q.reset() };
    // SAFETY: as above.
    let e = unsafe { q.post_send_raw(&[SendWr::new(1, SendOp::Send, &[])]) }.unwrap_err();
    assert!(matches!(
        e.kind,
        PostErrorKind::TooManySges { max: None, .. }
    ));
}

#[test]
fn hot_path_writes_exactly_what_the_general_path_writes() {
    let mut fa = Fixture {
        ring: [0; N * 8],
        db: [0],
    };
    let mut fb = Fixture {
        ring: [0; N * 8],
        db: [0],
    };
    let c = cfg(QpType::Rc, 4, 4, 60);
    let mut a = queue(&mut fa, c);
    let mut b = queue(&mut fb, c);
    let mut seed = 0x1234_5678_u32;
    let mut rnd = || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    for round in 0..200u64 {
        let sges: [Sge; 4] = core::array::from_fn(|i| Sge {
            addr: 0x1000 * i as u64 + round,
            length: if rnd() % 4 == 0 { 0 } else { rnd() % 5000 },
            lkey: rnd(),
        });
        let k = (rnd() % 5) as usize;
        let op = [RdmaOp::Write, RdmaOp::Read, RdmaOp::Send][(rnd() % 3) as usize];
        let n = 1 + (rnd() % 3) as usize;
        let fast: [RdmaWr<'_>; 3] = core::array::from_fn(|j| RdmaWr {
            wr_id: round * 8 + j as u64,
            remote_addr: 0xdead_0000 + j as u64,
            rkey: 0x77,
            sgl: &sges[..k],
            signaled: j == n - 1,
        });
        let slow: [SendWr<'_>; 3] = core::array::from_fn(|j| fast[j].to_send_wr(op));
        // SAFETY: non-inline SGEs, never dereferenced.
        let ra = unsafe { a.post_rdma_raw(op, &fast[..n]) };
        // SAFETY: as above.
        let rb = unsafe { b.post_send_raw(&slow[..n]) };
        assert_eq!(ra, rb);
        assert_eq!(
            (a.cur_post(), a.head(), a.bf_offset()),
            (b.cur_post(), b.head(), b.bf_offset())
        );
        assert_eq!(ring_bytes(&fa), ring_bytes(&fb), "round {round}");
        assert_eq!(fa.db, fb.db);
        assert_eq!(a.uar().bytes()[..], b.uar().bytes()[..]);
        if rnd() % 2 == 0 {
            // Everything completed (both queues alike).
            // SAFETY: memory-only rings, never executed by a device.
            unsafe {
                a.set_counters(a.cur_post(), a.head(), a.bf_offset());
                b.set_counters(b.cur_post(), b.head(), b.bf_offset());
            }
        }
    }
}

#[test]
fn ud_needs_a_destination_and_only_sends() {
    let mut f = Fixture {
        ring: [0; N * 8],
        db: [0],
    };
    let mut q = queue(&mut f, cfg(QpType::Ud, 4, 1, 60));
    let one = [Sge {
        addr: 0x1000,
        length: 8,
        lkey: 1,
    }];
    // SAFETY: refused before any write.
    let e = unsafe { q.post_send_raw(&[SendWr::new(1, SendOp::Send, &one)]) }.unwrap_err();
    assert_eq!(e.kind, PostErrorKind::MissingUdDest);
    let wr = SendWr::new(
        1,
        SendOp::Read {
            remote_addr: 0,
            rkey: 0,
        },
        &one,
    );
    // SAFETY: refused before any write.
    let e = unsafe { q.post_send_raw(&[wr]) }.unwrap_err();
    assert!(matches!(
        e.kind,
        PostErrorKind::OpNotAllowed {
            op: "RDMA_READ",
            ..
        }
    ));
    let av = AddressVector {
        rlid: Be16::new(0x12),
        ..Default::default()
    };
    let ud = UdDest {
        av: &av,
        remote_qpn: 0xbeef,
        remote_qkey: 0x1111_1111,
    };
    // SAFETY: non-inline SGE, never dereferenced.
    unsafe { q.post_send_raw(&[SendWr::new(1, SendOp::Send, &one).with_ud(ud)]) }.unwrap();
    let r = ring_bytes(&f);
    // ref §1.5: dqp_dct = QPN | 0x80000000, qkey in bytes 0–3 of the AV.
    assert_eq!(r[16..20], 0x1111_1111u32.to_be_bytes());
    assert_eq!(r[24..28], (0xbeef | 0x8000_0000u32).to_be_bytes());
    // ctrl + AV + data = 5 DS → 2 WQEBBs (ref §1.7).
    assert_eq!(q.cur_post(), 2);
}

fn send_wr(wr_id: u64, sgl: &[Sge]) -> SendWr<'_> {
    SendWr::new(wr_id, SendOp::Send, sgl).with_flags(SendFlags::SIGNALED)
}

#[test]
fn retire_accepts_only_the_first_wqebb_of_a_wqe_in_flight() {
    let mut f = Fixture {
        ring: [0; N * 8],
        db: [0],
    };
    let mut q = queue(&mut f, cfg(QpType::Rc, 4, 4, 0));
    let s1 = [Sge {
        addr: 0x10,
        length: 8,
        lkey: 1,
    }];
    // 4 SGEs: ctrl + 4 data = 5 DS = 2 WQEBBs.
    let s4 = [s1[0]; 4];
    // WR 1 at counter 0 (1 WQEBB), WR 2 at counter 1 (2 WQEBBs), WR 3
    // at counter 3.
    // SAFETY: memory-only ring; SGEs never dereferenced.
    unsafe { q.post_send_raw(&[send_wr(1, &s1), send_wr(2, &s4), send_wr(3, &s1)]) }.unwrap();
    assert_eq!((q.cur_post(), q.head(), q.tail()), (4, 3, 0));
    // SAFETY: (all retire calls) memory-only ring, never executed.
    unsafe {
        // Never posted: counter 4 (beyond the producer), 9 (slot 1 a lap
        // on), 2 (second WQEBB of WR 2).
        for c in [4u16, 9, 2, 0xffff] {
            assert_eq!(q.retire(c), Err(CompletionReject::NotInFlight), "{c}");
            assert_eq!(q.tail(), 0, "{c}");
        }
        assert_eq!(q.retire(1).map(|r| r.wr_id), Ok(2));
        assert_eq!(q.tail(), 2);
        // Repeated and stale counters retire nothing; tail never moves
        // backwards.
        assert_eq!(q.retire(1), Err(CompletionReject::NotInFlight));
        assert_eq!(q.retire(0), Err(CompletionReject::NotInFlight));
        assert_eq!(q.tail(), 2);
        assert_eq!(q.retire(3).map(|r| r.wr_id), Ok(3));
        assert_eq!(q.outstanding(), 0);
        assert_eq!(q.retire(3), Err(CompletionReject::NotInFlight));
    }
}

#[test]
fn reset_forgets_every_slot() {
    let mut f = Fixture {
        ring: [0; N * 8],
        db: [0],
    };
    let mut q = queue(&mut f, cfg(QpType::Rc, 4, 4, 0));
    let s1 = [Sge {
        addr: 0x10,
        length: 8,
        lkey: 1,
    }];
    let s4 = [s1[0]; 4];
    // SAFETY: memory-only ring; SGEs never dereferenced.
    unsafe { q.post_send_raw(&[send_wr(1, &s1), send_wr(2, &s1), send_wr(3, &s1)]) }.unwrap();
    // SAFETY: memory-only ring, never executed by a device.
    unsafe { q.reset() };
    q.enable();
    // New life: WR 10 at counter 0 (2 WQEBBs), WR 11 at counter 2.
    // SAFETY: as above.
    unsafe { q.post_send_raw(&[send_wr(10, &s4), send_wr(11, &s1)]) }.unwrap();
    // SAFETY: memory-only ring, never executed.
    unsafe {
        // Slot 1 still holds WR 2 of the old life (sequence 1, which is
        // inside the new [tail, head)): a stale CQE for it is refused.
        assert_eq!(q.retire(1), Err(CompletionReject::NotInFlight));
        assert_eq!(q.tail(), 0);
        assert_eq!(q.retire(2).map(|r| r.wr_id), Ok(11));
    }
    // set_counters forgets too.
    // SAFETY: memory-only ring.
    unsafe { q.set_counters(5, 7, 0) };
    // SAFETY: as above.
    unsafe { assert_eq!(q.retire(2), Err(CompletionReject::NotInFlight)) };
}

#[test]
fn umr_ending_at_the_ring_end_wraps_before_inline_data() {
    let mut f = Fixture {
        ring: [0; N * 8],
        db: [0],
    };
    let mut q = queue(&mut f, cfg(QpType::Rc, 1, 4, 64));
    // LOCAL_INV at WQEBB 6: ctrl 0x180, UMR control 0x190..0x1c0, mkey
    // context 0x1c0..0x200 = the ring end; the inline data must start
    // at offset 0 (before the fix: off == RING_BYTES, `room`
    // underflowed — a debug panic, a write past the ring in release).
    // SAFETY: memory-only ring, never executed by a device.
    unsafe { q.set_counters(6, 6, 0) };
    let payload: [u8; 8] = core::array::from_fn(|i| 0xa0 + i as u8);
    let sgl = [Sge {
        addr: payload.as_ptr().expose_provenance() as u64,
        length: 8,
        lkey: 0,
    }];
    let wr = SendWr::new(
        1,
        SendOp::LocalInv {
            invalidate_rkey: 0x1234,
        },
        &sgl,
    )
    .with_flags(SendFlags::INLINE | SendFlags::SIGNALED);
    // SAFETY: the inline SGE points at `payload`, alive and readable.
    unsafe { q.post_send_raw(&[wr]) }.unwrap();
    let r = ring_bytes(&f);
    assert_eq!(r[0..4], (8u32 | 0x8000_0000).to_be_bytes());
    assert_eq!(r[4..12], payload);
    // ctrl 1 + UMR 3 + mkey 4 + inline 1 = 9 DS → 3 WQEBBs.
    assert_eq!(r[0x187] & 0x3f, 9);
    assert_eq!(q.cur_post(), 9);
}

#[test]
fn atomic_result_sge_must_cover_eight_writable_bytes() {
    let mut f = Fixture {
        ring: [0; N * 8],
        db: [0],
    };
    let mut q = queue(&mut f, cfg(QpType::Rc, 4, 1, 0));
    let mut mem = [0u64; 2];
    let cpu = NonNull::new(mem.as_mut_ptr().cast::<u8>()).unwrap();
    // SAFETY: `mem` outlives the region; the ring is never executed, so
    // nothing writes through it.
    let mr = unsafe {
        crate::mr::MemoryRegion::new(cpu, 0x9000, 16, 7, 7, crate::mr::Access::LOCAL_WRITE)
    };
    let op = SendOp::FetchAdd {
        remote_addr: 0x5000,
        rkey: 3,
        add: 1,
    };
    // 4 bytes at offset 12 are inside the region, but the device
    // writes 8 bytes there (4 past its end).
    let bad = [Sge {
        addr: 0x900c,
        length: 4,
        lkey: 7,
    }];
    let e = q.post_send(&[SendWr::new(1, op, &bad)], &[mr]).unwrap_err();
    assert_eq!(e.kind, PostErrorKind::SgeOutOfBounds { sge: 0 });
    assert_eq!(q.head(), 0);
    let good = [Sge {
        addr: 0x9008,
        length: 4,
        lkey: 7,
    }];
    q.post_send(&[SendWr::new(2, op, &good)], &[mr]).unwrap();
    assert_eq!(q.head(), 1);
    // A read-only region is refused even when the 8 bytes fit.
    // SAFETY: as above.
    let ro =
        unsafe { crate::mr::MemoryRegion::new(cpu, 0x9000, 16, 8, 8, crate::mr::Access::empty()) };
    let sg = [Sge {
        addr: 0x9000,
        length: 8,
        lkey: 8,
    }];
    let e = q.post_send(&[SendWr::new(3, op, &sg)], &[ro]).unwrap_err();
    assert_eq!(e.kind, PostErrorKind::SgeOutOfBounds { sge: 0 });
}
