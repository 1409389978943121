//! The configured CQE size ([`CqeSize`]): 64- or 128-byte entries and
//! where the cqe64 sits in one. [ref §3.7, §5.2](crate::reference).

use super::{CQE128_SIZE, CQE64_SIZE};
use crate::error::ParseError;

/// CQE size as configured at CQ creation (64 default, 128 optional).
/// [ref §3.7, §5.2](crate::reference).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[allow(clippy::exhaustive_enums)] // closed by the format: a CQE is 64 or 128 bytes
pub enum CqeSize {
    /// 64-byte entries; the cqe64 is the entry.
    #[default]
    B64 = 0,
    /// 128-byte entries; the cqe64 is the second half.
    B128 = 1,
}

impl CqeSize {
    /// Entry size in bytes.
    #[inline(always)]
    pub const fn bytes(self) -> usize {
        match self {
            CqeSize::B64 => CQE64_SIZE,
            CqeSize::B128 => CQE128_SIZE,
        }
    }
    /// Offset of the cqe64 inside one entry (0 or 64). [ref §5.2](crate::reference).
    #[inline(always)]
    pub const fn cqe64_offset(self) -> usize {
        match self {
            CqeSize::B64 => 0,
            CqeSize::B128 => 64,
        }
    }
    /// 64 → `B64`, 128 → `B128`, anything else is rejected (EINVAL in the
    /// provider). [ref §3.7](crate::reference).
    pub const fn from_bytes(n: usize) -> Result<Self, ParseError> {
        match n {
            CQE64_SIZE => Ok(CqeSize::B64),
            CQE128_SIZE => Ok(CqeSize::B128),
            _ => Err(ParseError::BadField {
                field: "cqe_size",
                value: n as u32,
            }),
        }
    }
}
