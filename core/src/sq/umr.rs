//! The UMR segments of LOCAL_INV and BIND_MW WQEs (UMR control, mkey
//! context, inline KLM), written by [`SqRing::umr`]. [ref §1.5, §1.7](crate::reference).

use super::ring::SqRing;
use super::{MwBind, MwType};
use crate::mr::Access;
use crate::wqe::{
    KlmSeg, MkeyAccess, MkeyContextSeg, MkeyMask, Segment, UmrCtrlSeg, UmrFlags, DS_BYTES,
    MKEY_CONTEXT_FREE,
};
use core::mem::offset_of;

/// DS units of the UMR control and mkey context segments every UMR WQE
/// carries.
const UMR_DS: u32 = ((UmrCtrlSeg::SIZE + MkeyContextSeg::SIZE) / DS_BYTES) as u32;
/// Bytes of a bind's inline KLM list: one [`KlmSeg`] padded to 64 bytes.
const KLM_BYTES: usize = 64;
/// DS units (octowords) of the inline KLM list.
const KLM_DS: u32 = (KLM_BYTES / DS_BYTES) as u32;
/// The `qpn_mkey` QPN field (bits 31:8) of an mkey no QP owns: all ones
/// (the mkey context's `qpn`, placed above the variant byte).
const QPN_NONE: u32 = crate::cmd::layout::mkc::QPN_NONE << 8;

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
        let mut flags = UmrFlags::INLINE | UmrFlags::TRANSLATION_OFFSET;
        let mut mask = MkeyMask::FREE | MkeyMask::MKEY;
        if mw_type == MwType::Type2 {
            mask |= MkeyMask::QPN;
        }
        let klm_octowords = if bind {
            if mw_type == MwType::Type2 {
                flags |= UmrFlags::CHECK_FREE;
            }
            mask |= MkeyMask::LEN
                | MkeyMask::START_ADDR
                | MkeyMask::ACCESS_LOCAL_WRITE
                | MkeyMask::ACCESS_REMOTE_READ
                | MkeyMask::ACCESS_REMOTE_WRITE
                | MkeyMask::ACCESS_ATOMIC;
            KLM_DS as u16
        } else {
            if mw_type == MwType::Type2 {
                flags |= UmrFlags::CHECK_QPN;
            }
            0
        };
        let umr: [u8; UmrCtrlSeg::SIZE] = UmrCtrlSeg::new(flags, klm_octowords, mask).to_bytes();
        // SAFETY: the caller guarantees room; each 16-byte piece is placed
        // with the wrap rule of the provider (segments never straddle).
        unsafe {
            for chunk in umr.chunks_exact(DS_BYTES) {
                *off = self.wrap(*off);
                self.put_bytes(*off, chunk);
                *off += DS_BYTES;
            }
            *off = self.wrap(*off);
            // Mkey context segment (64 bytes): only the fields below.
            let m = *off;
            // The new key's variant byte (7:0) and the owning QPN (31:8).
            let qpn_mkey = (new_rkey & 0xff)
                | if mw_type == MwType::Type1 || !bind {
                    QPN_NONE
                } else {
                    self.qpn << 8
                };
            if bind {
                let acc = MkeyAccess::from_ibv(access).bits();
                self.put_bytes(m + offset_of!(MkeyContextSeg, free), &[0]);
                self.put_bytes(m + offset_of!(MkeyContextSeg, access_flags), &[acc]);
                let start = if access.contains(Access::ZERO_BASED) {
                    0
                } else {
                    addr
                };
                self.put_bytes(
                    m + offset_of!(MkeyContextSeg, start_addr),
                    &start.to_be_bytes(),
                );
                self.put_bytes(m + offset_of!(MkeyContextSeg, len), &length.to_be_bytes());
            } else {
                self.put_bytes(m + offset_of!(MkeyContextSeg, free), &[MKEY_CONTEXT_FREE]);
            }
            self.put_bytes(
                m + offset_of!(MkeyContextSeg, qpn_mkey),
                &qpn_mkey.to_be_bytes(),
            );
            *off = m + MkeyContextSeg::SIZE;
            *ds += UMR_DS;
            if bind {
                *off = self.wrap(*off);
                let entry: [u8; KlmSeg::SIZE] =
                    KlmSeg::new(length as u32, mr_lkey, addr).to_bytes();
                let mut klm = [0u8; KLM_BYTES];
                klm[..KlmSeg::SIZE].copy_from_slice(&entry);
                self.put_bytes(*off, &klm);
                *off += KLM_BYTES;
                *ds += KLM_DS;
            }
            // A UMR ending exactly at the ring end: what follows (inline
            // data) starts at offset 0.
            *off = self.wrap(*off);
        }
    }
}
