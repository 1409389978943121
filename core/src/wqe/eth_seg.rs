//! The Ethernet segment ([`EthSeg`], its inline header and
//! [`eth_seg_len`]) and the Ethernet pad ([`EthPad`]) of raw packet and
//! underlay UD WQEs. [ref §1.5](crate::reference); field names follow `mlx5dv.h (installed)`.

use super::flags::EthCsFlags;
use super::seg::{Be16, Segment};
use core::mem::offset_of;
use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};

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

// SAFETY: (this and the one below) `#[repr(C)]` structs of `u8`, byte arrays and the
// `Be16`/`Be32`/`Be64` byte-array wrappers only: alignment 1, hence no
// padding (sizes pinned below), every bit pattern valid, no interior
// mutability; `SIZE` is left at its default.
unsafe impl Segment for EthSeg {}
// SAFETY: see above.
unsafe impl Segment for EthPad {}

// Layout pins (ref §1.5, §2.2; `mlx5dv.h (installed)`).
assert_eq_size!(EthSeg, [u8; 32]);
assert_eq_size!(EthPad, [u8; 16]);
assert_eq_align!(EthSeg, u8);
const_assert_eq!(offset_of!(EthSeg, cs_flags), 4);
const_assert_eq!(offset_of!(EthSeg, mss), 6);
const_assert_eq!(offset_of!(EthSeg, inline_hdr_sz), 12);
const_assert_eq!(offset_of!(EthSeg, inline_hdr_start), 14);
const_assert_eq!(offset_of!(EthSeg, inline_hdr), 16);
