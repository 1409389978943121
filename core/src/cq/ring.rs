//! Access to the CQ ring's entries: the cqe64 of a consumer position, the
//! 64-byte copy-out, initialisation, invalidation and peeking
//! ([ref §3.7, §5.3](crate::reference)).

use super::CompletionQueue;
use crate::cqe::{sw_owns, Cqe64, OP_OWN_INIT, OP_OWN_OFFSET};
use crate::devmem;
use crate::platform;

/// Copies the 64-byte CQE at `p` out of the ring with eight 8-byte
/// volatile loads (a byte-wise volatile copy costs ~120 instructions).
///
/// # Safety
/// `p` must be valid for reads of 64 bytes and 8-byte aligned (CQ rings
/// are page aligned and entries are 64 or 128 bytes).
#[inline(always)]
pub(super) unsafe fn read_cqe64(p: *const u8) -> Cqe64 {
    let q = p.cast::<u64>();
    let mut w = [0u64; 8];
    for (i, x) in w.iter_mut().enumerate() {
        // SAFETY: i < 8, so q + i is inside the 64 readable, aligned
        // bytes (non-null); a read-only volatile view, no reference.
        *x = unsafe { devmem::read_only(q.add(i)) }.read();
    }
    // SAFETY: [u64; 8] and [u8; 64] have the same size and every bit
    // pattern is valid for both.
    Cqe64::from_bytes(unsafe { core::mem::transmute::<[u64; 8], [u8; 64]>(w) })
}

impl<const N: usize> CompletionQueue<N> {
    /// Pointer to the cqe64 of the entry at consumer position `pos`.
    #[inline(always)]
    pub(super) fn cqe64_ptr(&self, pos: u32) -> *mut u8 {
        let idx = (pos & (self.ncqe() - 1)) as usize;
        let off = idx * self.cqe_size.bytes() + self.cqe_size.cqe64_offset();
        // SAFETY: idx < ncqe and the ring holds ncqe × cqe_size bytes
        // (checked at construction), so off + 64 <= ring.len.
        unsafe { self.ring.cpu.as_ptr().add(off) }
    }

    /// Writes every entry as zeros with `op_own = 0xF0` (opcode INVALID,
    /// owner 0) in the cqe64 (offset 0, or 64 for 128-byte CQEs) and resets
    /// nothing else. [ref §3.7](crate::reference).
    pub fn init_ring(&mut self) {
        let words = self.cqe_size.bytes() / 8;
        // The word holding op_own (byte 63 of the cqe64) and its bytes.
        let own_word = (self.cqe_size.cqe64_offset() + OP_OWN_OFFSET) / 8;
        let mut own = [0u8; 8];
        own[OP_OWN_OFFSET % 8] = OP_OWN_INIT;
        let own = u64::from_ne_bytes(own);
        for i in 0..self.ncqe() {
            let base = self
                .cqe64_ptr(i)
                .wrapping_sub(self.cqe_size.cqe64_offset())
                .cast::<u64>();
            for k in 0..words {
                let v = if k == own_word { own } else { 0 };
                // SAFETY: `base` is the start of entry i, valid for the
                // entry's 64 or 128 bytes of writes and 8-byte aligned
                // (construction checks the ring's alignment; entries are
                // multiples of 64 bytes), so word k < bytes / 8 is inside
                // it (non-null); a write-only volatile view creates no
                // reference. The stored bytes are the same on any host
                // (from_ne_bytes of a byte array).
                unsafe { devmem::write_only(base.add(k)) }.write(v);
            }
        }
    }

    /// Returns a copy of the CQE at the consumer index if software owns
    /// it, without consuming it.
    pub fn peek(&self) -> Option<Cqe64> {
        let p = self.cqe64_ptr(self.ci);
        // SAFETY: p is a valid cqe64 of the ring (cqe64_ptr, non-null);
        // one byte through a read-only volatile view.
        let op_own = unsafe { devmem::read_only(p.add(OP_OWN_OFFSET)) }.read();
        if !sw_owns(op_own, self.ci, self.ncqe()) {
            return None;
        }
        platform::from_device_barrier();
        // SAFETY: 64 bytes at p are inside the ring; [u8; 64] has
        // alignment 1; a read-only volatile view, no reference.
        Some(Cqe64::from_bytes(
            unsafe { devmem::read_only(p.cast::<[u8; 64]>()) }.read(),
        ))
    }

    /// Marks the entry at consumer position `pos` INVALID (owner bit 0).
    #[inline(always)]
    pub(super) fn invalidate(&mut self, pos: u32) {
        let p = self.cqe64_ptr(pos);
        // SAFETY: p is a cqe64 inside the ring (non-null), owned by
        // software until the consumer index is published past it; one
        // byte through a write-only volatile view.
        unsafe { devmem::write_only(p.add(OP_OWN_OFFSET)) }.write(OP_OWN_INIT);
    }
}
