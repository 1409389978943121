//! The XRC segment ([`XrcSeg`]): the remote SRQ number of an XRC send.
//! [ref §1.5](crate::reference).

use super::seg::{Be32, Segment};
use core::mem::offset_of;
use static_assertions::{assert_eq_size, const_assert_eq};

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

// SAFETY: a `#[repr(C)]` struct of `u8`, byte arrays and the
// `Be16`/`Be32`/`Be64` byte-array wrappers only: alignment 1, hence no
// padding (sizes pinned below), every bit pattern valid, no interior
// mutability; `SIZE` is left at its default.
unsafe impl Segment for XrcSeg {}

// Layout pins (ref §1.5, §2.2; `mlx5dv.h (installed)`).
assert_eq_size!(XrcSeg, [u8; 16]);
const_assert_eq!(offset_of!(XrcSeg, xrc_srqn), 0);
