//! Purging a QP's unpolled completions when it is reset or destroyed
//! ([ref §5.10](crate::reference)).

use super::ring::read_cqe64;
use super::CompletionQueue;
use crate::cqe::{sw_owns, Cqe64, CqeFormat, OP_OWN_OFFSET};
use crate::devmem;
use crate::platform;
use core::ptr;

impl<const N: usize> CompletionQueue<N> {
    /// Purges the completions of QP `qp` (user index with CQE version 1,
    /// else QPN — the same id the resolvers see) that software owns but
    /// has not polled, as a move to RESET or a destroy requires
    /// ([ref §5.10](crate::reference)): scans from the consumer index over the software-owned
    /// entries (at most `ncqe − 1`, stopping at the first device-owned or
    /// INVALID entry, or at a compressed title), drops those naming `qp`,
    /// moves the surviving older entries forward over the gaps (keeping
    /// their order and giving each the owner bit of its new slot), marks
    /// the freed slots INVALID, advances the consumer index by the number
    /// dropped and republishes SET_CI. `dropped` is called with each
    /// dropped CQE, oldest last (e.g. to free the SRQ slot a receive
    /// consumed). Does nothing while a compressed session is half consumed.
    /// Returns the number of CQEs dropped.
    pub fn clean_with<F: FnMut(&Cqe64)>(&mut self, qp: u32, mut dropped: F) -> u32 {
        if self.zip.is_some() {
            return 0;
        }
        let ncqe = self.ncqe();
        let mut pi = self.ci;
        while pi.wrapping_sub(self.ci) < ncqe - 1 {
            let p = self.cqe64_ptr(pi);
            // SAFETY: p is a cqe64 inside the ring (non-null); one-byte
            // read-only volatile view, no reference.
            let op_own = unsafe { devmem::read_only(p.add(OP_OWN_OFFSET)) }.read();
            if !sw_owns(op_own, pi, ncqe)
                || Cqe64::format_bits(op_own) == CqeFormat::Compressed as u8
            {
                break;
            }
            pi = pi.wrapping_add(1);
        }
        platform::from_device_barrier();
        let sz = self.cqe_size.bytes();
        let off64 = self.cqe_size.cqe64_offset();
        let mut nfreed = 0u32;
        let mut pos = pi;
        while pos != self.ci {
            pos = pos.wrapping_sub(1);
            let p = self.cqe64_ptr(pos);
            // SAFETY: p is a software-owned cqe64 inside the ring.
            let cqe = unsafe { read_cqe64(p) };
            let id = if self.cqe_version == 1 {
                cqe.uidx()
            } else {
                cqe.qpn()
            };
            if id == qp {
                dropped(&cqe);
                nfreed += 1;
            } else if nfreed > 0 {
                let dst_pos = pos.wrapping_add(nfreed);
                let src = p.wrapping_sub(off64);
                let dst = self.cqe64_ptr(dst_pos).wrapping_sub(off64);
                // SAFETY: src and dst are the starts of two distinct entries
                // of the ring (nfreed < ncqe), each valid for `sz` bytes;
                // byte-wise volatile copies need no alignment and create no
                // reference.
                unsafe {
                    for k in 0..sz {
                        ptr::write_volatile(dst.add(k), ptr::read_volatile(src.add(k)));
                    }
                }
                let owner = ((dst_pos & ncqe) != 0) as u8;
                let dp = self.cqe64_ptr(dst_pos);
                // SAFETY: dp is a cqe64 inside the ring (non-null, just
                // written, software-owned); one-byte read-write volatile
                // view, no reference.
                unsafe { devmem::read_write(dp.add(OP_OWN_OFFSET)) }.update(|o| (o & !1) | owner);
            }
        }
        if nfreed > 0 {
            for k in 0..nfreed {
                self.invalidate(self.ci.wrapping_add(k));
            }
            self.ci = self.ci.wrapping_add(nfreed);
            platform::to_device_barrier();
            self.publish_ci();
        }
        nfreed
    }

    /// [`Self::clean_with`] without a callback.
    pub fn clean(&mut self, qp: u32) -> u32 {
        self.clean_with(qp, |_| {})
    }
}
