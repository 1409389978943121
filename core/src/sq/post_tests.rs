//! Tests of the send-queue post path: refusals the one-compare check must
//! keep, the wrap rule after a datagram or UMR segment, the word stores of
//! the segments, and slot storage whose length changes after `new`.
use super::*;
use crate::platform::MemUar;
use crate::sge::{data_seg_word0, len_key, len_of, with_len};
use crate::wqe::{AddressVector, Be16, Be32};
use bareverbs_sim::rng::Rng;

/// DMA-like memory for one queue (ring of `n` WQEBBs and a doorbell record).
struct Mem {
    ring: Vec<u64>,
    db: Vec<u64>,
}

impl Mem {
    fn new(n: usize) -> Box<Mem> {
        Box::new(Mem {
            ring: vec![0; n * 8],
            db: vec![0],
        })
    }
    fn bufs(&mut self) -> (DmaBuf, DmaBuf) {
        let b = |v: &mut Vec<u64>| DmaBuf {
            cpu: NonNull::new(v.as_mut_ptr().cast::<u8>()).unwrap(),
            iova: 0x1000,
            len: v.len() * 8,
        };
        (b(&mut self.ring), b(&mut self.db))
    }
    fn bytes(&self) -> Vec<u8> {
        self.ring.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }
}

use super::tests::cfg;

type NewQ = SendQueue<MemUar, Vec<SqSlot>>;

fn new_q(m: &mut Mem, n: usize, c: SqConfig) -> NewQ {
    let (r, d) = m.bufs();
    // SAFETY: `m` outlives the queue in every test; memory only.
    let mut q =
        unsafe { SendQueue::new(r, d, MemUar::filled(0xee), c, vec![SqSlot::default(); n]) }
            .unwrap();
    q.enable();
    q
}

fn one_sge() -> [Sge; 1] {
    [Sge {
        addr: 0x1000,
        length: 8,
        lkey: 1,
    }]
}

// ---------------------------------------------------------------------------
// Defect 1: the one-compare "quick" check skips the allowed-opcode check.
// ---------------------------------------------------------------------------

/// An atomic on an RC QP created without atomics must be refused
/// (`AtomicsDisabled`, EOPNOTSUPP) with nothing written, as before cc3884e.
#[test]
fn atomic_on_qp_without_atomics_is_refused() {
    let mut m = Mem::new(8);
    let mut c = cfg(QpType::Rc, 4, 4, 0);
    c.atomics = false;
    let mut q = new_q(&mut m, 8, c);
    let sg = one_sge();
    let wr = SendWr::new(
        1,
        SendOp::FetchAdd {
            remote_addr: 0x5000,
            rkey: 3,
            add: 1,
        },
        &sg,
    );
    // SAFETY: memory-only ring; the SGE is never dereferenced.
    let r = unsafe { q.post_send_raw(&[wr]) };
    assert_eq!(
        r,
        Err(PostError {
            index: 0,
            kind: PostErrorKind::AtomicsDisabled
        })
    );
    assert_eq!(q.cur_post(), 0);
    assert!(m.bytes().iter().all(|&b| b == 0), "nothing written");
}

/// Operations the QP type does not allow (READ on UC, WRITE on a raw
/// packet QP, SEND_WITH_IMM on raw packet, anything on an XRC receive QP)
/// must be refused with `OpNotAllowed`, on every post path.
#[test]
fn op_not_allowed_on_qp_type_is_refused() {
    let sg = one_sge();
    let read = SendOp::Read {
        remote_addr: 0,
        rkey: 0,
    };
    let write = SendOp::Write {
        remote_addr: 0,
        rkey: 0,
    };
    let cases: [(QpType, SendOp); 4] = [
        (QpType::Uc, read),
        (QpType::RawPacket, write),
        (QpType::RawPacket, SendOp::SendImm { imm: 1 }),
        (QpType::XrcRecv, SendOp::Send),
    ];
    for (t, op) in cases {
        let mut m = Mem::new(8);
        let mut q = new_q(&mut m, 8, cfg(t, 4, 4, 0));
        // SAFETY: memory-only ring; the SGE is never dereferenced.
        let r = unsafe { q.post_send_raw(&[SendWr::new(1, op, &sg)]) };
        assert!(
            matches!(
                r,
                Err(PostError {
                    index: 0,
                    kind: PostErrorKind::OpNotAllowed { .. }
                })
            ),
            "{t:?} {}: {r:?}",
            op.name()
        );
        assert_eq!(q.cur_post(), 0, "{t:?} {}", op.name());
    }
    // The hot path too: RDMA READ on a UC QP.
    let mut m = Mem::new(8);
    let mut q = new_q(&mut m, 8, cfg(QpType::Uc, 4, 4, 0));
    let wr = RdmaWr {
        wr_id: 1,
        remote_addr: 0,
        rkey: 0,
        sgl: &sg,
        signaled: true,
    };
    // SAFETY: as above.
    let r = unsafe { q.post_rdma_raw(RdmaOp::Read, &[wr]) };
    assert!(
        matches!(
            r,
            Err(PostError {
                index: 0,
                kind: PostErrorKind::OpNotAllowed { .. }
            })
        ),
        "{r:?}"
    );
    assert_eq!(q.cur_post(), 0);
}

/// The safe API is affected too: `post_send` posts an atomic on a QP
/// without atomics (the device would write into the result SGE).
#[test]
fn safe_post_send_refuses_atomic_without_atomics() {
    let mut m = Mem::new(8);
    let mut c = cfg(QpType::Rc, 4, 4, 0);
    c.atomics = false;
    let mut q = new_q(&mut m, 8, c);
    let mut mem = [0u64; 2];
    let cpu = NonNull::new(mem.as_mut_ptr().cast::<u8>()).unwrap();
    // SAFETY: `mem` outlives the region; the ring is never executed.
    let mr = unsafe {
        crate::mr::MemoryRegion::new(cpu, 0x9000, 16, 7, 7, crate::mr::Access::LOCAL_WRITE)
    };
    let sg = [Sge {
        addr: 0x9000,
        length: 8,
        lkey: 7,
    }];
    let op = SendOp::CompSwap {
        remote_addr: 0x5000,
        rkey: 3,
        compare: 1,
        swap: 2,
    };
    let r = q.post_send(&[SendWr::new(1, op, &sg)], &[mr]);
    assert_eq!(r.map_err(|e| e.kind), Err(PostErrorKind::AtomicsDisabled));
}

// ---------------------------------------------------------------------------
// Defect 2: `off - ctrl_off` in the single-SGE branch underflows when the
// segments before the data segment wrapped to offset 0 (UD AV or UMR
// ending at the ring end): a debug-build panic.
// ---------------------------------------------------------------------------

/// A UD SEND with one SGE whose control segment is the ring's last WQEBB:
/// ctrl + AV fill that WQEBB, the data segment goes to offset 0.
#[test]
fn ud_single_sge_at_the_last_wqebb_wraps() {
    for n in [2usize, 8, 64] {
        let mut m = Mem::new(n);
        let mut q = new_q(&mut m, n, cfg(QpType::Ud, 1, 1, 0));
        // SAFETY: memory-only ring.
        unsafe { q.set_counters(n as u32 - 1, 0, 0) };
        let av = AddressVector {
            rlid: Be16::new(0x12),
            ..Default::default()
        };
        let ud = UdDest {
            av: &av,
            remote_qpn: 0xbeef,
            remote_qkey: 0x1111_1111,
        };
        let sg = [Sge {
            addr: 0x1122_3344_5566_7788,
            length: 0x40,
            lkey: 0x99,
        }];
        // SAFETY: non-inline SGE, never dereferenced.
        unsafe { q.post_send_raw(&[SendWr::new(1, SendOp::Send, &sg).with_ud(ud)]) }.unwrap();
        let r = m.bytes();
        assert_eq!(r[0..4], 0x40u32.to_be_bytes(), "n={n}");
        assert_eq!(r[4..8], 0x99u32.to_be_bytes(), "n={n}");
        assert_eq!(q.cur_post(), n as u32 + 1, "n={n}");
    }
}

/// A LOCAL_INV with one (non-inline) SGE whose UMR segments end exactly at
/// the ring end: same underflow.
#[test]
fn umr_single_sge_at_the_ring_end_wraps() {
    let mut m = Mem::new(8);
    let mut q = new_q(&mut m, 8, cfg(QpType::Rc, 1, 4, 0));
    // SAFETY: memory-only ring.
    unsafe { q.set_counters(6, 0, 0) };
    let sg = one_sge();
    let wr = SendWr::new(
        1,
        SendOp::LocalInv {
            invalidate_rkey: 0x1234,
        },
        &sg,
    );
    // SAFETY: non-inline SGE, never dereferenced.
    unsafe { q.post_send_raw(&[wr]) }.unwrap();
    let r = m.bytes();
    assert_eq!(r[0..4], 8u32.to_be_bytes());
    assert_eq!(q.cur_post(), 9);
}

// ---------------------------------------------------------------------------
// seg.rs additions: the word stores equal the plain memory image.
// ---------------------------------------------------------------------------

fn image<G: crate::wqe::Segment>(g: G) -> [u8; 16] {
    assert_eq!(core::mem::size_of::<G>(), 16);
    let mut out = [0u8; 16];
    // SAFETY: 16 bytes of `out`, G is 16 bytes of plain data.
    unsafe { core::ptr::write_unaligned(out.as_mut_ptr().cast::<G>(), g) };
    out
}

fn written<G: crate::wqe::Segment>(g: G) -> [u8; 16] {
    let mut out = [0u8; 16];
    // SAFETY: 16 writable bytes.
    unsafe { g.write_to(out.as_mut_ptr()) };
    out
}

#[test]
fn segment_word_stores_equal_the_memory_image() {
    use crate::wqe::{CtrlSeg, DataSeg, RaddrSeg};
    let mut r = Rng::new(0xfeed);
    for _ in 0..if cfg!(miri) { 50 } else { 20000 } {
        let (idx, op, qpn, ds, fm, imm) = (
            r.next_u64() as u16,
            r.next_u64() as u8,
            r.next_u64() as u32,
            r.below(64) as u8,
            r.next_u64() as u8,
            Be32::new(r.next_u64() as u32),
        );
        let c = CtrlSeg::new(0, idx, op, qpn, ds, fm, imm);
        assert_eq!(written(c), image(c));
        let w0 = CtrlSeg::word0(
            idx,
            op,
            CtrlSeg::qpn_ds_image(qpn, 0) | CtrlSeg::ds_image(ds),
        );
        let w1 = CtrlSeg::word1(fm, imm);
        let mut both = [0u8; 16];
        both[..8].copy_from_slice(&w0.to_ne_bytes());
        both[8..].copy_from_slice(&w1.to_ne_bytes());
        assert_eq!(both, image(c), "idx {idx} op {op} qpn {qpn:#x} ds {ds}");
        assert_eq!(
            CtrlSeg::qpn_ds_image(qpn, ds),
            CtrlSeg::qpn_ds_image(qpn, 0) | CtrlSeg::ds_image(ds)
        );
        let a = RaddrSeg::new(r.next_u64(), r.next_u64() as u32);
        assert_eq!(written(a), image(a));
        let d = DataSeg::new(r.next_u64() as u32, r.next_u64() as u32, r.next_u64());
        assert_eq!(written(d), image(d));
        // The SGE word helpers against DataSeg.
        let s = Sge {
            addr: r.next_u64(),
            length: r.next_u64() as u32,
            lkey: r.next_u64() as u32,
        };
        let lk = len_key(&s);
        assert_eq!(len_of(lk), s.length);
        let mut got = [0u8; 16];
        got[..8].copy_from_slice(&data_seg_word0(lk).to_ne_bytes());
        got[8..].copy_from_slice(&s.addr.to_be_bytes());
        assert_eq!(got, image(DataSeg::new(s.length, s.lkey, s.addr)));
        assert_eq!(len_of(with_len(lk, 8)), 8);
    }
}

// ---------------------------------------------------------------------------
// Slot storage whose `AsMut` answer shrinks after `new` (perverse but safe
// code): no out-of-bounds write (run under Miri), and the doc's claim.
// ---------------------------------------------------------------------------

struct Shrinking {
    v: Vec<SqSlot>,
    calls: core::cell::Cell<usize>,
    keep: usize,
}
impl AsRef<[SqSlot]> for Shrinking {
    fn as_ref(&self) -> &[SqSlot] {
        &self.v
    }
}
impl AsMut<[SqSlot]> for Shrinking {
    fn as_mut(&mut self) -> &mut [SqSlot] {
        let c = self.calls.get();
        self.calls.set(c + 1);
        // Full length for `new`'s fill, then `keep` entries.
        if c == 0 {
            &mut self.v
        } else {
            &mut self.v[..self.keep]
        }
    }
}

#[test]
fn shrinking_slot_storage_is_never_written_out_of_bounds() {
    for keep in [0usize, 1, 4, 7] {
        let n = 8;
        let mut m = Mem::new(n);
        let (rb, db) = m.bufs();
        let s = Shrinking {
            v: vec![SqSlot::default(); n],
            calls: core::cell::Cell::new(0),
            keep,
        };
        // SAFETY: memory-only; `m` outlives the queue.
        let mut q =
            unsafe { SendQueue::new(rb, db, MemUar::filled(0), cfg(QpType::Rc, 4, 2, 0), s) }
                .unwrap();
        q.enable();
        let sg = one_sge();
        for round in 0..6u64 {
            let wrs = [send(round * 2, &sg), send(round * 2 + 1, &sg)];
            // SAFETY: memory-only ring; SGEs never dereferenced.
            let _ = unsafe { q.post_send_raw(&wrs) };
            // SAFETY: as above.
            unsafe {
                for c in 0..16u16 {
                    let _ = q.retire(c);
                }
                q.record_raw_post(99, 1);
                q.reset();
            }
            q.enable();
        }
        assert!(q.slots.v.len() == n);
    }
}

fn send(wr_id: u64, sgl: &[Sge]) -> SendWr<'_> {
    SendWr::new(wr_id, SendOp::Send, sgl).with_flags(SendFlags::SIGNALED)
}

// ---------------------------------------------------------------------------
// Slot storage that shrinks after `new`.
// ---------------------------------------------------------------------------

/// Storage that shrank leaves the queue no room (see `SendQueue::batch`):
/// the post is refused as queue full. And `new` must leave every record
/// forgotten: a record left as `SqSlot::default()` (counter 0, sequence 0)
/// would let a completion for counter 0 retire and return `wr_id` 0, an
/// id never posted.
#[test]
fn shrunk_storage_never_reports_a_wr_id_that_was_not_posted() {
    let n = 8;
    let mut m = Mem::new(n);
    let (rb, db) = m.bufs();
    let s = Shrinking {
        v: vec![SqSlot::default(); n],
        calls: core::cell::Cell::new(0),
        keep: 0,
    };
    // SAFETY: memory-only; `m` outlives the queue.
    let mut q =
        unsafe { SendQueue::new(rb, db, MemUar::filled(0), cfg(QpType::Rc, 4, 2, 0), s) }.unwrap();
    q.enable();
    let sg = one_sge();
    // SAFETY: memory-only ring; SGEs never dereferenced.
    let posted = unsafe { q.post_send_raw(&[send(100, &sg), send(101, &sg)]) };
    // Records that cannot be reached leave no room: the post is refused.
    assert!(
        matches!(
            posted,
            Err(PostError {
                index: 0,
                kind: PostErrorKind::QueueFull { .. }
            })
        ),
        "{posted:?}"
    );
    // SAFETY: as above.
    let r = unsafe { q.retire(0) };
    assert!(
        !matches!(r, Ok(SendRetired { wr_id: 0, .. })),
        "retired a WR with an id never posted: {r:?}"
    );
}

/// A cached fence (after a UMR) is consumed once the first WR passes the
/// queue-full and SGE checks, even when a later check refuses it — on the
/// batch path exactly as on the general one ([ref §1.3](crate::reference)).
#[test]
fn cached_fence_is_consumed_by_a_refused_wqe_on_both_paths() {
    let c = cfg(QpType::Rc, 2, 20, 0); // 8 WQEBBs, slot 256 bytes: max_ds 16
    let (mut ma, mut mb) = (Mem::new(8), Mem::new(8));
    let (mut a, mut b) = (new_q(&mut ma, 8, c), new_q(&mut mb, 8, c));
    let inv = SendWr::new(1, SendOp::LocalInv { invalidate_rkey: 9 }, &[]);
    let sg = [one_sge()[0]; 15]; // WRITE: 2 + 15 = 17 DS > 16
    let wr = RdmaWr {
        wr_id: 2,
        remote_addr: 0,
        rkey: 0,
        sgl: &sg,
        signaled: true,
    };
    // SAFETY: memory-only rings; SGEs never dereferenced.
    unsafe {
        a.post_send_raw(&[inv]).unwrap();
        b.post_send_raw(&[inv]).unwrap();
        assert_eq!((a.fm_cache, b.fm_cache), (0x20, 0x20));
        let x = a.post_rdma_raw(RdmaOp::Write, &[wr]).unwrap_err();
        let y = b
            .post_send_raw(&[wr.to_send_wr(RdmaOp::Write)])
            .unwrap_err();
        assert_eq!(x, y);
        assert!(matches!(x.kind, PostErrorKind::WqeTooLarge { .. }));
    }
    assert_eq!((a.fm_cache, b.fm_cache), (0, 0));
    // A WR refused before the SGE check passes keeps it.
    let many = [one_sge()[0]; 21];
    // SAFETY: as above; everything posted so far counts as completed.
    unsafe {
        a.set_counters(a.cur_post(), a.head(), a.bf_offset());
        a.post_send_raw(&[inv]).unwrap();
        let e = a
            .post_send_raw(&[SendWr::new(3, SendOp::Send, &many)])
            .unwrap_err();
        assert!(matches!(e.kind, PostErrorKind::TooManySges { .. }));
    }
    assert_eq!(a.fm_cache, 0x20);
}

// ---------------------------------------------------------------------------
// Multi-SGE data segments: the no-wrap store (the WQE cannot reach the ring
// end) and the wrapping one give the layout of the rule (ref §1.5: a
// zero-length SGE is skipped; §1.8: a segment that would start at the ring
// end starts at 0).
// ---------------------------------------------------------------------------

/// The 16 bytes of a data segment as the rule lays them out:
/// BE32(length), BE32(lkey), BE64(addr).
fn data_seg_bytes(s: &Sge) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&s.length.to_be_bytes());
    b[4..8].copy_from_slice(&s.lkey.to_be_bytes());
    b[8..16].copy_from_slice(&s.addr.to_be_bytes());
    b
}

#[test]
fn multi_sge_layout_with_and_without_the_ring_end() {
    // 8 WQEBBs, max_post 1: a 512-byte slot (max_ds 32), up to 8 SGEs.
    let sges: [Sge; 8] = core::array::from_fn(|i| Sge {
        addr: 0x1111_0000_0000 + 0x100 * i as u64,
        length: if i == 2 { 0 } else { 0x40 + i as u32 },
        lkey: 0x70 + i as u32,
    });
    // Six SGEs, none empty.
    let six: Vec<Sge> = sges
        .iter()
        .copied()
        .filter(|s| s.length != 0)
        .take(6)
        .collect();
    let write = |sgl| RdmaWr {
        wr_id: 5,
        remote_addr: 0xabc0,
        rkey: 9,
        sgl,
        signaled: true,
    };
    // (start counter, SGEs, ring offsets of the data segments expected)
    let cases: [(u32, &[Sge], Vec<usize>); 4] = [
        // Far from the end: ctrl 0x000, raddr 0x010, data from 0x020.
        (0, &sges, (0..7).map(|k| 0x20 + 16 * k).collect()),
        // Crossing the end: ctrl 0x180, data 0x1a0..0x1f0, then 0x000.
        (
            6,
            &sges,
            vec![0x1a0, 0x1b0, 0x1c0, 0x1d0, 0x1e0, 0x1f0, 0x000],
        ),
        // Ending exactly at the end: six segments from 0x1a0 to 0x200.
        (6, &six, vec![0x1a0, 0x1b0, 0x1c0, 0x1d0, 0x1e0, 0x1f0]),
        // The same six with an empty seventh: 7 × 16 bytes would cross
        // the end, but only six segments are stored, the last at 0x1f0.
        (
            6,
            &sges[..7],
            vec![0x1a0, 0x1b0, 0x1c0, 0x1d0, 0x1e0, 0x1f0],
        ),
    ];
    for (start, sgl, offs) in cases {
        let want: Vec<Sge> = sgl.iter().copied().filter(|s| s.length != 0).collect();
        assert_eq!(want.len(), offs.len());
        let mut m = Mem::new(8);
        let mut q = new_q(&mut m, 8, cfg(QpType::Rc, 1, 8, 0));
        // SAFETY: memory-only ring, never executed by a device.
        unsafe { q.set_counters(start, start, 0) };
        // SAFETY: memory-only ring; the SGEs are never dereferenced.
        unsafe { q.post_rdma_raw(RdmaOp::Write, &[write(sgl)]) }.unwrap();
        let r = m.bytes();
        let ctrl = (start as usize % 8) * 64;
        for (s, &o) in want.iter().zip(&offs) {
            assert_eq!(
                r[o..o + 16],
                data_seg_bytes(s),
                "start {start}, seg at {o:#x}"
            );
        }
        // DS: ctrl + raddr + the non-zero SGEs; WQEBBs = ceil(DS / 4).
        let ds = 2 + want.len();
        assert_eq!(r[ctrl + 7] & 0x3f, ds as u8, "start {start}");
        assert_eq!(q.cur_post(), start + ds.div_ceil(4) as u32, "start {start}");
    }
}
