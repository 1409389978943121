//! Why a send WR was refused: [`PostErrorKind`] (with the vendor's errno)
//! and [`PostError`] (the refused index), with their messages.

use crate::errno;
use crate::qp::QpType;
use core::fmt;

/// Why a send WR was refused. Nothing of the refused WR reaches the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PostErrorKind {
    /// The queue holds `outstanding` WRs and allows `max_post`.
    QueueFull {
        /// WRs posted and not yet completed (including this batch).
        outstanding: u32,
        /// The queue's `max_post`.
        max_post: u32,
    },
    /// More SGEs than the queue's `max_send_sge` (or posting disabled in
    /// this QP state, when `max` is `None`).
    TooManySges {
        /// SGEs in the WR.
        num: usize,
        /// The queue's limit, or `None` while the QP state forbids posting.
        max: Option<u32>,
    },
    /// Inline payload larger than the queue's `max_inline_data`.
    InlineTooLarge {
        /// Bytes requested.
        len: u64,
        /// The queue's read-back `max_inline_data`.
        max: u32,
    },
    /// The operation is not valid on this QP type.
    OpNotAllowed {
        /// Verbs name of the operation.
        op: &'static str,
        /// The QP type.
        qp_type: QpType,
    },
    /// Atomics are not enabled on this QP.
    AtomicsDisabled,
    /// A UD send without a destination.
    MissingUdDest,
    /// A memory-window bind longer than the 2 GiB a KLM can describe.
    BindTooLong {
        /// Requested window length.
        length: u64,
    },
    /// The WQE would be larger than the slot the queue's geometry reserves
    /// per WR (ring bytes / `max_post`); posting it could overrun WQEs in
    /// flight.
    WqeTooLarge {
        /// Worst-case bytes of this WQE.
        bytes: u32,
        /// Bytes reserved per WR.
        slot: u32,
    },
    /// An SGE is outside every registered region it names (safe API).
    SgeOutOfBounds {
        /// Index of the SGE in the WR.
        sge: usize,
    },
    /// An inline SGE refers to memory that is not registered (safe API).
    InlineNotReadable {
        /// Index of the SGE in the WR.
        sge: usize,
    },
    /// An SGE names a region of another protection domain than the QP's —
    /// of another [`Context`](crate::verbs::Context), or another PD of this
    /// one (safe API; the device would not check another context's key).
    ForeignSge {
        /// Index of the SGE in the WR.
        sge: usize,
    },
}

impl PostErrorKind {
    /// The errno the vendor's provider returns for the same failure.
    pub const fn errno(&self) -> i32 {
        match self {
            PostErrorKind::QueueFull { .. }
            | PostErrorKind::TooManySges { .. }
            | PostErrorKind::InlineTooLarge { .. } => errno::ENOMEM,
            PostErrorKind::AtomicsDisabled | PostErrorKind::BindTooLong { .. } => errno::EOPNOTSUPP,
            _ => errno::EINVAL,
        }
    }
}

/// A refused WR: its index in the batch and the reason. WRs before `index`
/// were posted and the doorbell was rung for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PostError {
    /// Index of the first WR not posted.
    pub index: usize,
    /// Why.
    pub kind: PostErrorKind,
}

impl fmt::Display for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WR {} not posted: {}", self.index, self.kind)
    }
}

impl fmt::Display for PostErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PostErrorKind::QueueFull {
                outstanding,
                max_post,
            } => {
                write!(
                    f,
                    "send queue full ({outstanding} outstanding, max_post {max_post})"
                )
            }
            PostErrorKind::TooManySges { num, max: Some(m) } => {
                write!(f, "{num} SGEs, the queue allows {m} (max_send_sge)")
            }
            PostErrorKind::TooManySges { max: None, .. } => {
                write!(f, "the QP state does not allow posting (move it to RTS)")
            }
            PostErrorKind::InlineTooLarge { len, max } => {
                write!(
                    f,
                    "{len} inline bytes, the queue allows {max} (max_inline_data)"
                )
            }
            PostErrorKind::OpNotAllowed { op, qp_type } => {
                write!(f, "{op} is not allowed on a {qp_type:?} QP")
            }
            PostErrorKind::AtomicsDisabled => write!(f, "atomics are not enabled on this QP"),
            PostErrorKind::MissingUdDest => write!(f, "UD send without a destination"),
            PostErrorKind::BindTooLong { length } => {
                write!(
                    f,
                    "window of {length} bytes exceeds the 2 GiB a KLM describes"
                )
            }
            PostErrorKind::WqeTooLarge { bytes, slot } => {
                write!(
                    f,
                    "a {bytes}-byte WQE exceeds the {slot} bytes reserved per WR"
                )
            }
            PostErrorKind::SgeOutOfBounds { sge } => {
                write!(f, "SGE {sge} is outside its registered memory region")
            }
            PostErrorKind::InlineNotReadable { sge } => {
                write!(f, "inline SGE {sge} is not in registered host memory")
            }
            PostErrorKind::ForeignSge { sge } => write!(
                f,
                "SGE {sge} names a region outside the QP's protection domain \
                 (another PD, or another Context's)"
            ),
        }
    }
}

impl core::error::Error for PostError {}

impl core::error::Error for PostErrorKind {}
