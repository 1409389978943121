//! The 128-byte CQE [`Cqe128`]: inline-scatter-64 data in front of the
//! cqe64. [ref §5.2](crate::reference).

use super::{Cqe64, CqeFormat, CQE128_SIZE, INLINE_SCATTER_32_MAX, INLINE_SCATTER_64_MAX};
use crate::error::ParseError;

/// A copy of one 128-byte CQE: bytes 0–63 hold inline-scatter-64 data
/// (format 2), bytes 64–127 the cqe64. [ref §5.2](crate::reference).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cqe128([u8; 128]);

impl Cqe128 {
    /// Wraps 128 bytes.
    #[inline(always)]
    pub const fn from_bytes(b: [u8; 128]) -> Self {
        Cqe128(b)
    }
    /// Copies the first 128 bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self, ParseError> {
        match b.get(..CQE128_SIZE) {
            Some(s) => {
                let mut a = [0u8; 128];
                a.copy_from_slice(s);
                Ok(Cqe128(a))
            }
            None => Err(ParseError::Truncated {
                need: CQE128_SIZE,
                have: b.len(),
            }),
        }
    }
    /// Builds from the leading 64 bytes and the cqe64.
    pub fn from_parts(front: [u8; 64], cqe: Cqe64) -> Self {
        let mut a = [0u8; 128];
        a[..64].copy_from_slice(&front);
        a[64..].copy_from_slice(cqe.as_bytes());
        Cqe128(a)
    }
    /// The raw bytes.
    #[inline(always)]
    pub const fn as_bytes(&self) -> &[u8; 128] {
        &self.0
    }
    /// The cqe64 (bytes 64–127).
    pub fn cqe64(&self) -> Cqe64 {
        let mut a = [0u8; 64];
        a.copy_from_slice(&self.0[64..]);
        Cqe64::from_bytes(a)
    }
    /// The leading 64 bytes (inline-scatter-64 area).
    pub fn front(&self) -> &[u8] {
        &self.0[..64]
    }
    /// Inline-scattered data: format 1 → cqe64 bytes 0..min(byte_cnt, 32);
    /// format 2 → bytes 0..min(byte_cnt, 64) of the entry. [ref §5.1](crate::reference).
    pub fn inline_data(&self) -> Option<&[u8]> {
        let c = self.cqe64();
        let n = c.byte_cnt() as usize;
        match c.format_kind() {
            CqeFormat::InlineScatter32 => self.0.get(64..64 + n.min(INLINE_SCATTER_32_MAX)),
            CqeFormat::InlineScatter64 => self.0.get(..n.min(INLINE_SCATTER_64_MAX)),
            _ => None,
        }
    }
}

impl core::fmt::Debug for Cqe128 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Cqe128").field(&self.cqe64()).finish()
    }
}

static_assertions::assert_eq_size!(Cqe128, [u8; 128]);
