//! The send ring as the WQE builder sees it: [`SqRing`] (base, size, the
//! QPN image of control segments) and its store primitives, every one
//! under the explicit ring-end wrap rule. [ref §1.5, §1.8](crate::reference).

use crate::sge::{data_seg_word0, with_len};
use crate::wqe::{Be32, CtrlSeg, FmCeSe, Segment, ATOMIC_SIZE};
use core::ptr::NonNull;

/// The send ring as the builder sees it: base, size and the QP number
/// stamped into control segments. Every store into the ring goes through
/// it, with the explicit wrap rule of [`SqRing::wrap`].
#[derive(Clone, Copy)]
pub(super) struct SqRing {
    pub(super) base: NonNull<u8>,
    /// Ring bytes (WQEBBs × 64, a power of two).
    pub(super) bytes: usize,
    pub(super) qpn: u32,
    /// The QPN part of every control segment's bytes 4..8
    /// ([`CtrlSeg::qpn_ds_image`] with DS 0).
    pub(super) qpn_image: u32,
    /// WQEBBs − 1.
    pub(super) mask: u32,
    /// A UD QP: WQEs carry the datagram segment.
    pub(super) datagram: bool,
}

impl SqRing {
    /// Ring byte offset after `off`, wrapping at the end ("wrap exact",
    /// [ref §1.8](crate::reference)): a segment never straddles the end, and one that
    /// would start at the end starts at 0.
    #[inline(always)]
    pub(super) fn wrap(self, off: usize) -> usize {
        wrap_at(off, self.bytes)
    }

    /// Stores a segment at ring offset `off`.
    ///
    /// # Safety
    /// `off + G::SIZE <= ring bytes`.
    #[inline(always)]
    pub(super) unsafe fn put<G: Segment>(self, off: usize, seg: G) {
        // SAFETY: the caller keeps the segment inside the ring, which this
        // queue exclusively owns (contract of `SendQueue::new`).
        unsafe { seg.write_to(self.base.as_ptr().add(off)) }
    }

    /// Stores raw bytes at ring offset `off` (within the ring).
    ///
    /// # Safety
    /// `off + bytes.len() <= ring bytes`.
    #[inline(always)]
    pub(super) unsafe fn put_bytes(self, off: usize, bytes: &[u8]) {
        // SAFETY: as `put`; `bytes` is ordinary memory, not the ring.
        unsafe {
            core::ptr::copy_nonoverlapping(bytes.as_ptr(), self.base.as_ptr().add(off), bytes.len())
        }
    }

    /// Stores the data segment naming an SGE (its [`len_key`](crate::sge::len_key) word and
    /// address) at ring offset `off`; the byte count is 8 for an atomic's
    /// result ([ref §1.5](crate::reference)).
    ///
    /// # Safety
    /// `off + 16 <= ring bytes`.
    #[inline(always)]
    pub(super) unsafe fn put_sge(self, off: usize, lk: u64, addr: u64, atomic: bool) {
        let w0 = data_seg_word0(if atomic {
            with_len(lk, ATOMIC_SIZE)
        } else {
            lk
        });
        // SAFETY: forwarded: 16 bytes at `off` inside the ring.
        unsafe {
            let p = self.base.as_ptr().add(off).cast::<u64>();
            p.write_unaligned(w0);
            p.add(1)
                .write_unaligned(u64::from_ne_bytes(addr.to_be_bytes()));
        }
    }

    /// Stores the control segment of the WQE at `ctrl_off` as two words
    /// (its QPN part was formed once, at queue creation).
    ///
    /// # Safety
    /// `ctrl_off` is a WQE's 64-aligned offset inside the ring.
    #[inline(always)]
    pub(super) unsafe fn put_ctrl(
        self,
        ctrl_off: usize,
        cur: u32,
        opcode: u8,
        ds: u32,
        fm_ce_se: u8,
        imm: u32,
    ) {
        let qpn_ds = self.qpn_image | CtrlSeg::ds_image(ds as u8);
        let w0 = CtrlSeg::word0(cur as u16, opcode, qpn_ds);
        // SAFETY: forwarded: 16 bytes at a WQEBB boundary inside the ring.
        unsafe {
            let p = self.base.as_ptr().add(ctrl_off).cast::<u64>();
            p.write_unaligned(w0);
            p.add(1)
                .write_unaligned(CtrlSeg::word1(fm_ce_se, Be32::new(imm)));
        }
    }

    /// ORs the fence `fence` into the `fm_ce_se` byte of the WQE that
    /// starts at WQEBB counter `cur`, if that WQE has no fence of its own
    /// (a WR's own FENCE flag wins over a cached fence, [ref §1.3](crate::reference)).
    ///
    /// # Safety
    /// A WQE was built at `cur` and not yet rung.
    #[inline(always)]
    pub(super) unsafe fn or_first_fence(self, cur: u32, fence: u8) {
        let ctrl = ((cur & self.mask) as usize) << crate::wqe::SEND_WQE_SHIFT;
        // SAFETY: byte 11 (fm_ce_se) of that WQE's control segment, inside
        // the ring this queue owns; not yet rung. Raw reads and writes.
        unsafe {
            let p = self
                .base
                .as_ptr()
                .add(ctrl + core::mem::offset_of!(CtrlSeg, fm_ce_se));
            let b = p.read();
            if b & FmCeSe::FENCE_FIELD == 0 {
                p.write(b | fence);
            }
        }
    }
}

/// Ring byte offset after `off`, wrapping at the end of a ring of
/// `ring_bytes` ("wrap exact", [ref §1.8](crate::reference)).
#[inline(always)]
fn wrap_at(off: usize, ring_bytes: usize) -> usize {
    if off == ring_bytes {
        0
    } else {
        off
    }
}
