//! Why the simulated device refused a request ([`SimError`]).

use bareverbs::qp::QpTransitionError;
use std::fmt;

/// Why the device refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SimError {
    /// An address range is not inside a live DMA allocation.
    BadAddress,
    /// A size is not a power of two, too small or too large.
    BadSize,
    /// No such object (QP, CQ, SRQ, PD).
    NoSuchObject,
    /// The modify-QP is not a legal transition with this mask.
    Transition(QpTransitionError),
    /// IBV_QP_CUR_STATE did not match the current state.
    CurStateMismatch,
    /// Out of memory in the DMA allocator.
    NoMemory,
    /// The object number asked for is taken or out of the table's range.
    NumberUnavailable,
    /// A memory key was asked for over driver memory: a queue's ring or
    /// doorbell record, or memory the driver allocated (through the
    /// [`DmaAllocator`](bareverbs::platform::DmaAllocator) trait). A key
    /// there would let the device, and a peer through the rkey, write the
    /// driver's queues. Names the allocation the range overlaps.
    DriverMemory {
        /// Device address of the allocation.
        iova: u64,
        /// Its length in bytes.
        len: u64,
    },
    /// A queue was asked for over memory a memory key has covered (the key
    /// would reach the ring). Names the allocation the range overlaps.
    KeyedMemory {
        /// Device address of the allocation.
        iova: u64,
        /// Its length in bytes.
        len: u64,
    },
}

impl From<crate::dma::UseError> for SimError {
    fn from(e: crate::dma::UseError) -> Self {
        use crate::dma::UseError;
        match e {
            UseError::BadAddress => SimError::BadAddress,
            UseError::DriverMemory { iova, len } => SimError::DriverMemory { iova, len },
            UseError::KeyedMemory { iova, len } => SimError::KeyedMemory { iova, len },
        }
    }
}

/// The variant's name; [`SimError::Transition`] is a context wrapper (see
/// [`bareverbs::error`]): it prints `Transition` and its
/// [`source`](std::error::Error::source) says which transition.
impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Transition(_) => f.write_str("Transition"),
            e => write!(f, "{e:?}"),
        }
    }
}

/// [`source`](std::error::Error::source) is the core's
/// [`QpTransitionError`] of [`SimError::Transition`].
impl std::error::Error for SimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SimError::Transition(e) => Some(e),
            _ => None,
        }
    }
}
