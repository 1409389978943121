//! The UMR segments of LOCAL_INV and BIND_MW WQEs (UMR control, mkey
//! context, inline KLM), written by [`SqRing::umr`]. [ref §1.5, §1.7](crate::reference).

use super::build::SqRing;
use super::{MwBind, MwType};
use crate::mr::Access;
use crate::wqe::MkeyAccess;

impl SqRing {
    /// Writes the UMR control, mkey context and (for a bind with a length)
    /// the inline KLM of a LOCAL_INV / BIND_MW WQE. [ref §1.5, §1.7](crate::reference).
    ///
    /// # Safety
    /// `*off` is a 16-aligned ring offset with room for the UMR segments.
    #[inline(never)]
    pub(super) unsafe fn umr(self, off: &mut usize, ds: &mut u32, b: &MwBind) {
        let MwBind {
            mw_type,
            new_rkey,
            mr_lkey,
            addr,
            length,
            access,
        } = *b;
        let bind = length != 0;
        // UMR control segment (48 bytes, all written).
        let mut flags: u8 = 0x80 | 0x10; // INLINE | TRANSLATION_OFFSET
        let mut mask: u64 = (1 << 29) | (1 << 13); // FREE | MKEY
        if mw_type == MwType::Type2 {
            mask |= 1 << 14; // QPN
        }
        let klm_octowords: u16 = if bind {
            if mw_type == MwType::Type2 {
                flags |= 0x20; // CHECK_FREE
            }
            // LEN | START_ADDR | LOCAL_WRITE | REMOTE_READ | REMOTE_WRITE | ATOMIC
            mask |= 1 | (1 << 6) | (0xf << 18);
            4
        } else {
            if mw_type == MwType::Type2 {
                flags |= 0x08; // CHECK_QPN
            }
            0
        };
        let mut umr = [0u8; 48];
        umr[0] = flags;
        umr[4..6].copy_from_slice(&klm_octowords.to_be_bytes());
        umr[8..16].copy_from_slice(&mask.to_be_bytes());
        // SAFETY: the caller guarantees room; each 16-byte piece is placed
        // with the wrap rule of the provider (segments never straddle).
        unsafe {
            for chunk in umr.chunks_exact(16) {
                *off = self.wrap(*off);
                self.put_bytes(*off, chunk);
                *off += 16;
            }
            *off = self.wrap(*off);
            // Mkey context segment (64 bytes): only the fields below.
            let m = *off;
            let qpn_mkey = (new_rkey & 0xff)
                | if mw_type == MwType::Type1 || !bind {
                    0xffff_ff00
                } else {
                    self.qpn << 8
                };
            if bind {
                let acc = MkeyAccess::from_ibv(access).bits();
                self.put_bytes(m, &[0]);
                self.put_bytes(m + 2, &[acc]);
                let start = if access.contains(Access::ZERO_BASED) {
                    0
                } else {
                    addr
                };
                self.put_bytes(m + 16, &start.to_be_bytes());
                self.put_bytes(m + 24, &length.to_be_bytes());
            } else {
                self.put_bytes(m, &[0x40]); // FREE
            }
            self.put_bytes(m + 4, &qpn_mkey.to_be_bytes());
            *off = m + 64;
            *ds += 3 + 4;
            if bind {
                *off = self.wrap(*off);
                let mut klm = [0u8; 64];
                klm[0..4].copy_from_slice(&(length as u32).to_be_bytes());
                klm[4..8].copy_from_slice(&mr_lkey.to_be_bytes());
                klm[8..16].copy_from_slice(&addr.to_be_bytes());
                self.put_bytes(*off, &klm);
                *off += 64;
                *ds += 4;
            }
            // A UMR ending exactly at the ring end: what follows (inline
            // data) starts at offset 0.
            *off = self.wrap(*off);
        }
    }
}
