//! The verbs layer's error type.

use crate::cq::CqError;
use crate::device::DeviceError;
use crate::sizing::SizingError;
use core::fmt;

/// Why a verbs-level call failed. Each variant names the problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// A device command or driver-side check failed.
    Device(DeviceError),
    /// The requested capacities do not fit the device (the provider's
    /// sizing rules, with the limit that was exceeded).
    Sizing(SizingError),
    /// The completion queue could not be built over its ring.
    Cq(CqError),
    /// The queue storage the QP type provides does not match the geometry
    /// the device was given.
    Storage {
        /// Which queue.
        queue: &'static str,
        /// Entries the geometry has (WQEBBs for the send queue, WQEs for the
        /// receive queue).
        need: u32,
        /// Entries the type parameter holds.
        have: u32,
    },
    /// An access outside a buffer.
    OutOfBounds {
        /// Offset asked for.
        offset: u64,
        /// Length asked for.
        len: u64,
        /// Size of the buffer.
        size: u64,
    },
    /// A transition attribute outside its field.
    InvalidAttr {
        /// Verbs name of the attribute.
        attr: &'static str,
        /// Value given.
        value: u64,
        /// Largest value allowed.
        max: u64,
    },
    /// The request is not supported by this layer (yet).
    Unsupported {
        /// What.
        what: &'static str,
    },
}

impl From<DeviceError> for Error {
    fn from(e: DeviceError) -> Self {
        Error::Device(e)
    }
}
impl From<SizingError> for Error {
    fn from(e: SizingError) -> Self {
        Error::Sizing(e)
    }
}
impl From<CqError> for Error {
    fn from(e: CqError) -> Self {
        Error::Cq(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Device(e) => write!(f, "{e}"),
            Error::Sizing(e) => write!(f, "{e}"),
            Error::Cq(e) => write!(f, "{e}"),
            Error::Storage { queue, need, have } => write!(
                f,
                "the {queue} queue has {need} entries; the QueuePair type holds {have} \
                 (use {need} as its const parameter)"
            ),
            Error::OutOfBounds { offset, len, size } => write!(
                f,
                "{len} bytes at offset {offset} do not fit a {size}-byte buffer"
            ),
            Error::InvalidAttr { attr, value, max } => {
                write!(f, "{attr} = {value} is out of range (at most {max})")
            }
            Error::Unsupported { what } => write!(f, "{what} is not supported"),
        }
    }
}

impl core::error::Error for Error {}

impl core::error::Error for crate::sq::PostError {}
impl core::error::Error for crate::rq::RecvError {}
impl core::error::Error for crate::device::DeviceError {}
