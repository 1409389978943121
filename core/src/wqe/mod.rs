//! Send and receive WQE formats ([ref §1, §2](crate::reference)).
//!
//! Every segment is a `#[repr(C)]` plain value with big-endian fields. The
//! post path builds a segment by value and stores it into a ring slot with
//! [`Segment::write_to`] (a raw-pointer store: no reference ever points at
//! device-visible memory); parsers copy a segment out of a byte slice with
//! `parse`.
//!
//! On top of the segments: [`Opcode`], the transport [`SendLayout`], the `fm_ce_se` byte
//! as [`FmCeSe`], a no-panic parser ([`SendWqe`], ring-aware via
//! [`SendWqe::parse_ring`]; [`RecvWqe`] for RQ/SRQ), an emitter for whole
//! simple WQEs ([`SendWqeRepr`]) and a dump ([`WqeDump`]).

mod seg;

mod dump;
mod emit;
mod eth_seg;
mod flags;
mod layout;
mod masked_atomic_seg;
mod opcode;
mod parse;
mod recv;
mod recv_seg;
mod umr_seg;
mod xrc_seg;

#[cfg(test)]
mod tests;

pub use dump::{HexLines, WqeDump};
pub use emit::{DataRepr, DataSegVec, EmitError, EthRepr, SendWqeRepr, MAX_WQE_BYTES};
pub use eth_seg::{eth_seg_len, EthPad, EthSeg, ETH_L2_INLINE_HEADER_SIZE};
pub use flags::{
    CompletionMode, EthCsFlags, FenceMode, FmCeSe, MkeyAccess, MkeyMask, UmrFlags,
    MKEY_CONTEXT_FREE,
};
pub use layout::SendLayout;
pub use masked_atomic_seg::MaskedAtomicSeg;
pub use opcode::{opcode_name, Opcode};
pub use parse::{
    ring_wqe_bytes, DataEntries, DataEntry, InlineData, SendWqe, WqeBytes, WqeParseError,
};
pub use recv::RecvWqe;
pub use recv_seg::{RecvSigSeg, SrqNextSeg};
pub use seg::*;
pub use umr_seg::{KlmSeg, MkeyContextSeg, UmrCtrlSeg};
pub use xrc_seg::XrcSeg;

/// Bytes in one send WQE basic block (WQEBB). [ref §1.1](crate::reference).
pub const SEND_WQE_BB: usize = 64;
/// log2 of [`SEND_WQE_BB`]. [ref §1.1](crate::reference).
pub const SEND_WQE_SHIFT: u32 = 6;
/// Bytes in one DS unit (octoword). [ref §1.1](crate::reference).
pub const DS_BYTES: usize = 16;
/// WQEBBs a WQE of `ds` DS units occupies: ceil(`ds`·16 / 64).
/// [ref §1.8](crate::reference).
#[inline(always)]
pub const fn wqebbs_for_ds(ds: u32) -> u32 {
    (ds * DS_BYTES as u32).div_ceil(SEND_WQE_BB as u32)
}
/// Largest DS count the 6-bit field can encode. [ref §1.1](crate::reference).
pub const MAX_DS: u32 = 63;
/// Mask of the control segment's 6-bit DS field (bits 5:0 of `qpn_ds`).
/// [ref §1.3](crate::reference).
pub const DS_MASK: u32 = 0x3f;
/// Inline segment marker in `byte_count` (bit 31). [ref §1.5](crate::reference).
pub const INLINE_SEG: u32 = 0x8000_0000;
/// lkey value that terminates a receive scatter list. [ref §2.1](crate::reference).
pub const INVALID_LKEY: u32 = 0x100;
/// Size of the data buffer an atomic writes back (bytes). [ref §1.5](crate::reference).
pub const ATOMIC_SIZE: u32 = 8;
/// `dqp_dct` flag marking an extended UD address vector. [ref §1.5](crate::reference).
pub const EXTENDED_UD_AV: u32 = 0x8000_0000;
