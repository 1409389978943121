//! Further segment layouts: XRC, masked atomic, Ethernet (+ pad), UMR
//! control, mkey context, KLM, SRQ next and receive signature segments.
//! [ref §1.5, §2.1, §2.2](crate::reference); field names follow `mlx5dv.h (installed)`.

use super::flags::{EthCsFlags, MkeyAccess, MkeyMask, UmrFlags};
use super::seg::{AddressVector, AtomicSeg, Be16, Be32, Be64, CtrlSeg, Segment};
use super::{FmCeSe, Opcode};
use memoffset::offset_of;
use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};

/// XRC segment (16 bytes): remote SRQ number. [ref §1.5](crate::reference).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XrcSeg {
    /// Remote XRC SRQ number (BE32).
    pub xrc_srqn: Be32,
    /// Reserved.
    pub reserved: [u8; 12],
}

impl XrcSeg {
    /// Builds an XRC segment.
    pub const fn new(xrc_srqn: u32) -> Self {
        XrcSeg {
            xrc_srqn: Be32::new(xrc_srqn),
            reserved: [0; 12],
        }
    }
}

/// Masked atomic segment (32 bytes, opcodes 0x14/0x15). [ref §1.5](crate::reference).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaskedAtomicSeg {
    /// Swap (CS) or add (FA) operand.
    pub swap_add: Be64,
    /// Compare operand.
    pub compare: Be64,
    /// Mask applied to `swap_add`.
    pub swap_add_mask: Be64,
    /// Mask applied to `compare`.
    pub compare_mask: Be64,
}

/// Bytes of packet header that fit inside the 32-byte Ethernet segment
/// (`inline_hdr_start` + `inline_hdr`). [ref §1.5](crate::reference).
pub const ETH_L2_INLINE_HEADER_SIZE: usize = 18;

/// Ethernet segment (32 bytes; raw packet and underlay UD). [ref §1.5](crate::reference).
///
/// The inline packet header starts at byte 14 (`inline_hdr_start`) and may
/// continue past byte 32; see [`eth_seg_len`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EthSeg {
    /// Reserved (bytes 0–3).
    pub rsvd0: [u8; 4],
    /// Checksum offload flags ([`EthCsFlags`]).
    pub cs_flags: u8,
    /// Reserved.
    pub rsvd1: u8,
    /// TSO maximum segment size (0 for non-TSO).
    pub mss: Be16,
    /// Reserved (bytes 8–11).
    pub rsvd2: [u8; 4],
    /// Number of inline packet-header bytes.
    pub inline_hdr_sz: Be16,
    /// First two inline header bytes.
    pub inline_hdr_start: [u8; 2],
    /// Next 16 inline header bytes.
    pub inline_hdr: [u8; 16],
}

/// Bytes an Ethernet segment with `inline_hdr_sz` inline header bytes
/// occupies in the WQE: 16 + align(max(sz, 2) − 2, 16). [ref §1.5, §1.7](crate::reference).
pub const fn eth_seg_len(inline_hdr_sz: usize) -> usize {
    let extra = inline_hdr_sz.saturating_sub(2);
    16 + extra.div_ceil(16) * 16
}

impl EthSeg {
    /// The checksum flags, unknown bits retained.
    pub const fn cs(&self) -> EthCsFlags {
        EthCsFlags::from_bits_retain(self.cs_flags)
    }

    /// Writes `cs_flags`, `mss`, `inline_hdr_sz = hdr.len()` and the header
    /// bytes (starting at byte 14, running past byte 32 if longer than 18)
    /// into `buf`, which holds the segment at offset 0. Other bytes are left
    /// untouched (callers zero the segment first). Returns the bytes the
    /// segment occupies ([`eth_seg_len`]), or `None` if `buf` is too short
    /// or the header does not fit the 16-bit size field.
    pub fn set(buf: &mut [u8], cs_flags: u8, mss: u16, hdr: &[u8]) -> Option<usize> {
        let len = eth_seg_len(hdr.len());
        if hdr.len() > u16::MAX as usize || buf.len() < (14 + hdr.len()).max(16) {
            return None;
        }
        buf[4] = cs_flags;
        buf[6..8].copy_from_slice(&mss.to_be_bytes());
        buf[12..14].copy_from_slice(&(hdr.len() as u16).to_be_bytes());
        buf[14..14 + hdr.len()].copy_from_slice(hdr);
        Some(len)
    }
}

/// Ethernet pad (16 bytes of zeros before the Ethernet segment in underlay
/// UD). [ref §1.5](crate::reference).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EthPad {
    /// Reserved, zero.
    pub rsvd: [u8; 16],
}

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

/// SRQ next segment (16 bytes), first in every SRQ WQE. [ref §2.2](crate::reference).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqNextSeg {
    /// Reserved.
    pub rsvd0: [u8; 2],
    /// Index of the next free WQE (free-list link).
    pub next_wqe_index: Be16,
    /// WQE signature.
    pub signature: u8,
    /// Reserved.
    pub rsvd1: [u8; 11],
}

impl SrqNextSeg {
    /// Builds a next segment.
    pub const fn new(next_wqe_index: u16) -> Self {
        SrqNextSeg {
            rsvd0: [0; 2],
            next_wqe_index: Be16::new(next_wqe_index),
            signature: 0,
            rsvd1: [0; 11],
        }
    }
}

/// Receive signature segment `mlx5_rwqe_sig` (16 bytes, first in an RQ WQE
/// when WQE signatures are on). [ref §1.5, §2.1](crate::reference).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecvSigSeg {
    /// Reserved.
    pub rsvd0: [u8; 4],
    /// Signature byte.
    pub signature: u8,
    /// Reserved.
    pub rsvd1: [u8; 11],
}

// SAFETY: (this and the eight below) `#[repr(C)]` structs of `u8`, byte arrays and the
// `Be16`/`Be32`/`Be64` byte-array wrappers only: alignment 1, hence no
// padding (sizes pinned below), every bit pattern valid, no interior
// mutability; `SIZE` is left at its default.
unsafe impl Segment for XrcSeg {}
// SAFETY: see above.
unsafe impl Segment for MaskedAtomicSeg {}
// SAFETY: see above.
unsafe impl Segment for EthSeg {}
// SAFETY: see above.
unsafe impl Segment for EthPad {}
// SAFETY: see above.
unsafe impl Segment for UmrCtrlSeg {}
// SAFETY: see above.
unsafe impl Segment for MkeyContextSeg {}
// SAFETY: see above.
unsafe impl Segment for KlmSeg {}
// SAFETY: see above.
unsafe impl Segment for SrqNextSeg {}
// SAFETY: see above.
unsafe impl Segment for RecvSigSeg {}

// Layout pins (ref §1.5, §2.2; `mlx5dv.h (installed)`).
assert_eq_size!(XrcSeg, [u8; 16]);
assert_eq_size!(MaskedAtomicSeg, [u8; 32]);
assert_eq_size!(EthSeg, [u8; 32]);
assert_eq_size!(EthPad, [u8; 16]);
assert_eq_size!(UmrCtrlSeg, [u8; 48]);
assert_eq_size!(MkeyContextSeg, [u8; 64]);
assert_eq_size!(KlmSeg, [u8; 16]);
assert_eq_size!(SrqNextSeg, [u8; 16]);
assert_eq_size!(RecvSigSeg, [u8; 16]);
assert_eq_align!(EthSeg, u8);
assert_eq_align!(MkeyContextSeg, u8);
assert_eq_align!(UmrCtrlSeg, u8);
const_assert_eq!(offset_of!(XrcSeg, xrc_srqn), 0);
const_assert_eq!(offset_of!(MaskedAtomicSeg, compare), 8);
const_assert_eq!(offset_of!(MaskedAtomicSeg, swap_add_mask), 16);
const_assert_eq!(offset_of!(MaskedAtomicSeg, compare_mask), 24);
const_assert_eq!(offset_of!(EthSeg, cs_flags), 4);
const_assert_eq!(offset_of!(EthSeg, mss), 6);
const_assert_eq!(offset_of!(EthSeg, inline_hdr_sz), 12);
const_assert_eq!(offset_of!(EthSeg, inline_hdr_start), 14);
const_assert_eq!(offset_of!(EthSeg, inline_hdr), 16);
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
const_assert_eq!(offset_of!(SrqNextSeg, next_wqe_index), 2);
const_assert_eq!(offset_of!(SrqNextSeg, signature), 4);
const_assert_eq!(offset_of!(RecvSigSeg, signature), 4);
// Pins for the pre-existing segments' remaining fields.
const_assert_eq!(offset_of!(CtrlSeg, qpn_ds), 4);
const_assert_eq!(offset_of!(CtrlSeg, signature), 8);
const_assert_eq!(offset_of!(CtrlSeg, dci_stream_channel_id), 9);
const_assert_eq!(offset_of!(AtomicSeg, compare), 8);
const_assert_eq!(offset_of!(AddressVector, stat_rate_sl), 12);
const_assert_eq!(offset_of!(AddressVector, fl_mlid), 13);
const_assert_eq!(offset_of!(AddressVector, tclass), 26);
const_assert_eq!(offset_of!(AddressVector, hop_limit), 27);

// Additions to the existing segment types (kept out of `seg.rs`).

impl CtrlSeg {
    /// The `fm_ce_se` byte as flags (unknown bits retained). [ref §1.3](crate::reference).
    pub const fn flags(&self) -> FmCeSe {
        FmCeSe::from_bits_retain(self.fm_ce_se)
    }
    /// The opcode byte decoded; unknown values as `Err(byte)`. [ref §1.6](crate::reference).
    pub fn op(&self) -> Result<Opcode, u8> {
        Opcode::try_from(self.opcode())
    }
    /// The same segment with the signature byte set. [ref §1.12](crate::reference).
    pub const fn with_signature(mut self, signature: u8) -> Self {
        self.signature = signature;
        self
    }
    /// Number of WQEBBs the WQE occupies: ceil(DS·16 / 64). [ref §1.8](crate::reference).
    pub const fn wqebbs(&self) -> u32 {
        (self.ds() as u32 * 16).div_ceil(64)
    }
    /// Byte offset of the opcode in the segment: the low byte of the
    /// big-endian `opmod_idx_opcode` dword. [ref §1.3](crate::reference).
    pub const OPCODE_BYTE: usize = offset_of!(CtrlSeg, opmod_idx_opcode) + 3;
    /// Byte offset of the DS count in the segment: the low byte of the
    /// big-endian `qpn_ds` dword (masked with [`super::DS_MASK`]). [ref §1.3](crate::reference).
    pub const DS_BYTE: usize = offset_of!(CtrlSeg, qpn_ds) + 3;
    /// Byte offset of the `fm_ce_se` flags byte. [ref §1.3](crate::reference).
    pub const FM_CE_SE_BYTE: usize = offset_of!(CtrlSeg, fm_ce_se);
}

impl AtomicSeg {
    /// Builds an atomic segment. [ref §1.5](crate::reference).
    pub const fn new(swap_add: u64, compare: u64) -> Self {
        AtomicSeg {
            swap_add: Be64::new(swap_add),
            compare: Be64::new(compare),
        }
    }
}

impl MaskedAtomicSeg {
    /// Builds a masked atomic segment. [ref §1.5](crate::reference).
    pub const fn new(swap_add: u64, compare: u64, swap_add_mask: u64, compare_mask: u64) -> Self {
        MaskedAtomicSeg {
            swap_add: Be64::new(swap_add),
            compare: Be64::new(compare),
            swap_add_mask: Be64::new(swap_add_mask),
            compare_mask: Be64::new(compare_mask),
        }
    }
}

impl AddressVector {
    /// Builds a datagram segment the way `mlx5dv_set_dgram_seg` defines its
    /// inputs: `key` fills all 8 key bytes (UD: qkey << 32), `dqp_dct` is
    /// OR-ed with `ext << 31` ([`super::EXTENDED_UD_AV`]). [ref §1.5](crate::reference).
    #[allow(clippy::too_many_arguments)]
    pub const fn datagram(
        key: u64,
        dqp_dct: u32,
        ext: bool,
        stat_rate_sl: u8,
        fl_mlid: u8,
        rlid: u16,
        rmac: [u8; 6],
        tclass: u8,
        hop_limit: u8,
        grh_gid_fl: u32,
        rgid: [u8; 16],
    ) -> Self {
        AddressVector {
            key: key.to_be_bytes(),
            dqp_dct: Be32::new(dqp_dct | if ext { super::EXTENDED_UD_AV } else { 0 }),
            stat_rate_sl,
            fl_mlid,
            rlid: Be16::new(rlid),
            reserved0: [0; 4],
            rmac,
            tclass,
            hop_limit,
            grh_gid_fl: Be32::new(grh_gid_fl),
            rgid,
        }
    }
    /// UD qkey (bytes 0–3). [ref §1.5](crate::reference).
    pub const fn qkey(&self) -> u32 {
        u32::from_be_bytes([self.key[0], self.key[1], self.key[2], self.key[3]])
    }
    /// Remote QPN / DCT number (24 bits of `dqp_dct`).
    pub const fn dqpn(&self) -> u32 {
        self.dqp_dct.get() & 0x00ff_ffff
    }
    /// Whether the extended-AV bit (31) of `dqp_dct` is set.
    pub const fn extended(&self) -> bool {
        self.dqp_dct.get() & super::EXTENDED_UD_AV != 0
    }
    /// Whether a GRH is present (bit 30 of `grh_gid_fl`).
    pub const fn grh(&self) -> bool {
        self.grh_gid_fl.get() & (1 << 30) != 0
    }
    /// Source GID index (bits 27:20 of `grh_gid_fl`).
    pub const fn sgid_index(&self) -> u8 {
        (self.grh_gid_fl.get() >> 20) as u8
    }
    /// Flow label (bits 19:0 of `grh_gid_fl`).
    pub const fn flow_label(&self) -> u32 {
        self.grh_gid_fl.get() & 0xf_ffff
    }
}
