//! The UMR segments: UMR control ([`UmrCtrlSeg`]), mkey context
//! ([`MkeyContextSeg`]) and KLM ([`KlmSeg`]) of BIND_MW / LOCAL_INV UMR
//! WQEs. [ref §1.5, §1.7](crate::reference); field names follow `mlx5dv.h (installed)`.

use super::flags::{MkeyAccess, MkeyMask, UmrFlags};
use super::seg::{Be16, Be32, Be64, Segment};
use core::mem::offset_of;
use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};

/// UMR control segment (48 bytes), second segment of rdma-core's BIND_MW
/// and LOCAL_INV UMR WQEs. [ref §1.5](crate::reference) (size), §1.7; fields per
/// `mlx5dv.h (installed)` `mlx5_wqe_umr_ctrl_seg`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UmrCtrlSeg {
    /// [`UmrFlags`] (BIND_MW 0xb0, LOCAL_INV 0x98).
    pub flags: u8,
    /// Reserved.
    pub rsvd0: [u8; 3],
    /// Translation (KLM) size in 16-byte octowords (a.k.a. xlt_octowords).
    pub klm_octowords: Be16,
    /// Translation offset (or BSF octowords).
    pub translation_offset: Be16,
    /// [`MkeyMask`]: which mkey-context fields are modified.
    pub mkey_mask: Be64,
    /// Reserved.
    pub rsvd1: [u8; 32],
}

impl UmrCtrlSeg {
    /// Builds a UMR control segment.
    pub const fn new(flags: UmrFlags, klm_octowords: u16, mkey_mask: MkeyMask) -> Self {
        UmrCtrlSeg {
            flags: flags.bits(),
            rsvd0: [0; 3],
            klm_octowords: Be16::new(klm_octowords),
            translation_offset: Be16::new(0),
            mkey_mask: Be64::new(mkey_mask.bits()),
            rsvd1: [0; 32],
        }
    }
    /// The flags, unknown bits retained.
    pub const fn umr_flags(&self) -> UmrFlags {
        UmrFlags::from_bits_retain(self.flags)
    }
    /// The mkey mask, unknown bits retained.
    pub const fn mask(&self) -> MkeyMask {
        MkeyMask::from_bits_retain(self.mkey_mask.get())
    }
}

/// Mkey context segment (64 bytes), third segment of BIND_MW / LOCAL_INV
/// UMR WQEs. [ref §1.5](crate::reference) (size); fields per `mlx5dv.h (installed)`
/// `mlx5_wqe_mkey_context_seg`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MkeyContextSeg {
    /// 0x40 = free (LOCAL_INV).
    pub free: u8,
    /// Reserved.
    pub reserved1: u8,
    /// [`MkeyAccess`] flags.
    pub access_flags: u8,
    /// sf byte.
    pub sf: u8,
    /// QPN (31:8) | mkey variant byte (7:0).
    pub qpn_mkey: Be32,
    /// Reserved.
    pub reserved2: Be32,
    /// Flags | PD.
    pub flags_pd: Be32,
    /// Start virtual address.
    pub start_addr: Be64,
    /// Length in bytes.
    pub len: Be64,
    /// BSF size in octowords.
    pub bsf_octword_size: Be32,
    /// Reserved.
    pub reserved3: [u8; 16],
    /// Translation size in octowords.
    pub translations_octword_size: Be32,
    /// Reserved.
    pub reserved4: [u8; 3],
    /// log2 of the page size.
    pub log_page_size: u8,
    /// Reserved.
    pub reserved5: Be32,
}

impl MkeyContextSeg {
    /// The access flags, unknown bits retained.
    pub const fn access(&self) -> MkeyAccess {
        MkeyAccess::from_bits_retain(self.access_flags)
    }
    /// QPN (bits 31:8 of `qpn_mkey`).
    pub const fn qpn(&self) -> u32 {
        self.qpn_mkey.get() >> 8
    }
    /// Mkey variant byte (bits 7:0 of `qpn_mkey`).
    pub const fn mkey_variant(&self) -> u8 {
        self.qpn_mkey.get() as u8
    }
}

/// KLM entry (16 bytes) of an inline UMR translation. [ref §1.5](crate::reference).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KlmSeg {
    /// Length in bytes.
    pub byte_count: Be32,
    /// Memory key.
    pub mkey: Be32,
    /// Virtual address.
    pub address: Be64,
}

impl KlmSeg {
    /// Builds a KLM entry.
    pub const fn new(byte_count: u32, mkey: u32, address: u64) -> Self {
        KlmSeg {
            byte_count: Be32::new(byte_count),
            mkey: Be32::new(mkey),
            address: Be64::new(address),
        }
    }
}

// SAFETY: (this and the two below) `#[repr(C)]` structs of `u8`, byte arrays and the
// `Be16`/`Be32`/`Be64` byte-array wrappers only: alignment 1, hence no
// padding (sizes pinned below), every bit pattern valid, no interior
// mutability; `SIZE` is left at its default.
unsafe impl Segment for UmrCtrlSeg {}
// SAFETY: see above.
unsafe impl Segment for MkeyContextSeg {}
// SAFETY: see above.
unsafe impl Segment for KlmSeg {}

// Layout pins (ref §1.5, §2.2; `mlx5dv.h (installed)`).
assert_eq_size!(UmrCtrlSeg, [u8; 48]);
assert_eq_size!(MkeyContextSeg, [u8; 64]);
assert_eq_size!(KlmSeg, [u8; 16]);
assert_eq_align!(MkeyContextSeg, u8);
assert_eq_align!(UmrCtrlSeg, u8);
const_assert_eq!(offset_of!(UmrCtrlSeg, klm_octowords), 4);
const_assert_eq!(offset_of!(UmrCtrlSeg, translation_offset), 6);
const_assert_eq!(offset_of!(UmrCtrlSeg, mkey_mask), 8);
const_assert_eq!(offset_of!(UmrCtrlSeg, rsvd1), 16);
const_assert_eq!(offset_of!(MkeyContextSeg, access_flags), 2);
const_assert_eq!(offset_of!(MkeyContextSeg, sf), 3);
const_assert_eq!(offset_of!(MkeyContextSeg, qpn_mkey), 4);
const_assert_eq!(offset_of!(MkeyContextSeg, flags_pd), 12);
const_assert_eq!(offset_of!(MkeyContextSeg, start_addr), 16);
const_assert_eq!(offset_of!(MkeyContextSeg, len), 24);
const_assert_eq!(offset_of!(MkeyContextSeg, bsf_octword_size), 32);
const_assert_eq!(offset_of!(MkeyContextSeg, translations_octword_size), 52);
const_assert_eq!(offset_of!(MkeyContextSeg, log_page_size), 59);
const_assert_eq!(offset_of!(KlmSeg, mkey), 4);
const_assert_eq!(offset_of!(KlmSeg, address), 8);
