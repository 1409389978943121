//! Receive-post refusals: why a WR was refused ([`RecvErrorKind`], with the
//! vendor's errno) and which ([`RecvError`]), with its message.

use core::fmt;

/// Why a receive WR was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecvErrorKind {
    /// The queue is full (`outstanding` of `max_post` WRs posted).
    QueueFull {
        /// WRs outstanding including this batch.
        outstanding: u32,
        /// Capacity.
        max_post: u32,
    },
    /// More SGEs than the WQE stride holds (or posting disabled in this QP
    /// state, when `max` is `None`).
    TooManySges {
        /// SGEs in the WR.
        num: usize,
        /// Limit, or `None` while the QP state forbids posting.
        max: Option<u32>,
    },
    /// An SGE is outside its registered region (safe API).
    SgeOutOfBounds {
        /// Index of the SGE.
        sge: usize,
    },
    /// An SGE names a region of another protection domain than the
    /// queue's — of another [`Context`](crate::verbs::Context), or another
    /// PD of this one (safe API).
    ForeignSge {
        /// Index of the SGE.
        sge: usize,
    },
}

impl RecvErrorKind {
    /// The errno the vendor's provider returns for the same failure.
    pub const fn errno(&self) -> i32 {
        match self {
            RecvErrorKind::QueueFull { .. } => crate::errno::ENOMEM,
            _ => crate::errno::EINVAL,
        }
    }
}

/// A refused receive WR; WRs before `index` were posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvError {
    /// Index of the first WR not posted.
    pub index: usize,
    /// Why.
    pub kind: RecvErrorKind,
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "receive WR {} not posted: {}", self.index, self.kind)
    }
}

impl fmt::Display for RecvErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RecvErrorKind::QueueFull {
                outstanding,
                max_post,
            } => {
                write!(
                    f,
                    "queue full ({outstanding} outstanding, capacity {max_post})"
                )
            }
            RecvErrorKind::TooManySges { num, max: Some(m) } => {
                write!(f, "{num} SGEs, the queue allows {m}")
            }
            RecvErrorKind::TooManySges { max: None, .. } => {
                write!(
                    f,
                    "the QP state does not allow receive posting (move it to INIT)"
                )
            }
            RecvErrorKind::SgeOutOfBounds { sge } => {
                write!(f, "SGE {sge} is outside its registered memory region")
            }
            RecvErrorKind::ForeignSge { sge } => write!(
                f,
                "SGE {sge} names a region outside the queue's protection domain \
                 (another PD, or another Context's)"
            ),
        }
    }
}

impl core::error::Error for RecvError {}

impl core::error::Error for RecvErrorKind {}
