//! Parsing a CQE of either size from a byte buffer ([`parse_any`]).

use super::{Cqe128, Cqe64, CQE128_SIZE, CQE64_SIZE};
use crate::error::ParseError;

/// Splits a 64- or 128-byte buffer into (cqe64, leading 64 bytes for a
/// 128-byte CQE). Any other length is rejected; never panics.
pub fn parse_any(b: &[u8]) -> Result<(Cqe64, Option<[u8; 64]>), ParseError> {
    match b.len() {
        CQE64_SIZE => Ok((Cqe64::parse(b)?, None)),
        CQE128_SIZE => {
            let c = Cqe128::parse(b)?;
            let mut front = [0u8; 64];
            front.copy_from_slice(c.front());
            Ok((c.cqe64(), Some(front)))
        }
        n => Err(ParseError::BadField {
            field: "cqe length",
            value: n as u32,
        }),
    }
}
