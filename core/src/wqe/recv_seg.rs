//! Receive-side segments: SRQ next ([`SrqNextSeg`]) and receive
//! signature ([`RecvSigSeg`]). [ref §1.5, §2.1, §2.2](crate::reference).

use super::seg::{Be16, Segment};
use core::mem::offset_of;
use static_assertions::{assert_eq_size, const_assert_eq};

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

// SAFETY: (this and the one below) `#[repr(C)]` structs of `u8`, byte arrays and the
// `Be16`/`Be32`/`Be64` byte-array wrappers only: alignment 1, hence no
// padding (sizes pinned below), every bit pattern valid, no interior
// mutability; `SIZE` is left at its default.
unsafe impl Segment for SrqNextSeg {}
// SAFETY: see above.
unsafe impl Segment for RecvSigSeg {}

// Layout pins (ref §1.5, §2.2; `mlx5dv.h (installed)`).
assert_eq_size!(SrqNextSeg, [u8; 16]);
assert_eq_size!(RecvSigSeg, [u8; 16]);
const_assert_eq!(offset_of!(SrqNextSeg, next_wqe_index), 2);
const_assert_eq!(offset_of!(SrqNextSeg, signature), 4);
const_assert_eq!(offset_of!(RecvSigSeg, signature), 4);
