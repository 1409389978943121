//! The CQE format field ([`CqeFormat`], `op_own` bits 3:2).
//! [ref §5.1, §5.9](crate::reference).

use crate::error::ParseError;

/// CQE format (`op_own` bits 3:2). [ref §5.1, §5.9](crate::reference).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(clippy::exhaustive_enums)] // closed by the format: the 2-bit field has these four values
pub enum CqeFormat {
    /// Plain CQE.
    Plain = 0,
    /// MLX5_INLINE_SCATTER_32: up to 32 data bytes in cqe64 bytes 0–31.
    InlineScatter32 = 1,
    /// MLX5_INLINE_SCATTER_64: up to 64 data bytes in the 64 bytes before
    /// the cqe64 (128-byte CQEs only).
    InlineScatter64 = 2,
    /// Compressed-session title CQE (mini CQEs follow).
    Compressed = 3,
}

impl CqeFormat {
    /// Decodes the 2-bit field (total: every value has a meaning).
    #[inline(always)]
    pub const fn from_bits(v: u8) -> Self {
        match v & 3 {
            0 => CqeFormat::Plain,
            1 => CqeFormat::InlineScatter32,
            2 => CqeFormat::InlineScatter64,
            _ => CqeFormat::Compressed,
        }
    }
}

impl TryFrom<u8> for CqeFormat {
    type Error = ParseError;
    fn try_from(v: u8) -> Result<Self, ParseError> {
        if v > 3 {
            return Err(ParseError::BadField {
                field: "cqe format",
                value: v as u32,
            });
        }
        Ok(CqeFormat::from_bits(v))
    }
}
