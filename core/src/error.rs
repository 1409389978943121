//! Errors returned by the core. Small, `Copy`, `no_std`; each variant names
//! the problem precisely so a caller can act on it.

use core::fmt;

/// A problem detected while parsing bytes (from a device, a file or a fuzzer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// The buffer is shorter than the structure needs.
    Truncated {
        /// Bytes the structure needs.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// A field holds a value the format does not allow.
    BadField {
        /// Name of the field.
        field: &'static str,
        /// The value found.
        value: u32,
    },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Truncated { need, have } => {
                write!(f, "truncated: need {need} bytes, have {have}")
            }
            ParseError::BadField { field, value } => {
                write!(f, "bad value {value:#x} in field `{field}`")
            }
        }
    }
}

impl core::error::Error for ParseError {}

/// The core's top-level error type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// Bytes could not be parsed.
    Parse(ParseError),
}

impl From<ParseError> for Error {
    fn from(e: ParseError) -> Self {
        Error::Parse(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Parse(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for Error {}
