//! Why a poll stopped on a CQE ([`PollError`]) and why a CQ could not be
//! built ([`CqError`]), with their messages.

use super::CompletionReject;
use core::fmt;

/// A poll that stopped on a CQE it could not turn into a completion
/// (the provider's CQ_POLL_ERR, `ibv_poll_cq` returning −2). The offending
/// CQE has been consumed: the consumer index is past it and the doorbell
/// record was updated. The first `completions` entries of the output slice
/// hold valid completions consumed before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PollError {
    /// The CQE names a QP/SRQ the resolver does not know.
    UnknownQp {
        /// The user index (CQE version 1) or QPN.
        qp: u32,
        /// Valid completions written before the error.
        completions: usize,
    },
    /// The CQE (or an expanded mini-CQE) names a known queue but no work
    /// request it could complete: see `why`. Nothing was retired. In a
    /// compressed session the rest of the session is consumed without
    /// producing completions.
    Rejected {
        /// The user index (CQE version 1) or QPN.
        qp: u32,
        /// The CQE's `wqe_counter`.
        wqe_counter: u16,
        /// Why the queue refused it.
        why: CompletionReject,
        /// Valid completions written before the error.
        completions: usize,
    },
    /// A compressed-session title with an impossible mini-CQE count.
    BadCompressedSession {
        /// Consumer position of the title.
        position: u32,
        /// The title's count (`byte_cnt`).
        count: u32,
        /// Valid completions written before the error.
        completions: usize,
    },
}

impl PollError {
    /// Valid completions written to the output before the error.
    pub const fn completions(&self) -> usize {
        match *self {
            PollError::UnknownQp { completions, .. }
            | PollError::Rejected { completions, .. }
            | PollError::BadCompressedSession { completions, .. } => completions,
        }
    }

    /// The same error with `completions` set to `n`.
    pub(super) const fn with_completions(self, n: usize) -> Self {
        match self {
            PollError::UnknownQp { qp, .. } => PollError::UnknownQp { qp, completions: n },
            PollError::Rejected {
                qp,
                wqe_counter,
                why,
                ..
            } => PollError::Rejected {
                qp,
                wqe_counter,
                why,
                completions: n,
            },
            PollError::BadCompressedSession {
                position, count, ..
            } => PollError::BadCompressedSession {
                position,
                count,
                completions: n,
            },
        }
    }

    /// The error for a CQE of `qp` / `wqe_counter` refused for `why`.
    pub(super) const fn reject(qp: u32, wqe_counter: u16, why: CompletionReject) -> Self {
        match why {
            CompletionReject::UnknownQp => PollError::UnknownQp { qp, completions: 0 },
            _ => PollError::Rejected {
                qp,
                wqe_counter,
                why,
                completions: 0,
            },
        }
    }
}

impl fmt::Display for PollError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PollError::UnknownQp { qp, .. } => write!(f, "CQE names unknown QP/SRQ {qp:#x}"),
            PollError::Rejected {
                qp,
                wqe_counter,
                why,
                ..
            } => write!(
                f,
                "CQE for QP {qp:#x} with wqe_counter {wqe_counter:#x} rejected: {why}"
            ),
            PollError::BadCompressedSession {
                position, count, ..
            } => {
                write!(
                    f,
                    "compressed CQE title at {position} with bad count {count}"
                )
            }
        }
    }
}

impl core::error::Error for PollError {}

/// Why a completion queue could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CqError {
    /// The entry count is not a power of two in `2..=2^24`. [ref §3.7](crate::reference).
    BadEntryCount {
        /// The count given.
        ncqe: usize,
    },
    /// The ring buffer is shorter than `ncqe × cqe_size`.
    RingTooSmall {
        /// Bytes needed.
        need: usize,
        /// Bytes given.
        have: usize,
    },
    /// The doorbell record is shorter than 8 bytes.
    DbrecTooSmall {
        /// Bytes given.
        have: usize,
    },
    /// The ring or the doorbell record is not 8-byte aligned (CQEs are
    /// copied out with 8-byte loads).
    Misaligned {
        /// The misaligned CPU address.
        addr: usize,
    },
    /// CQE version other than 0 or 1.
    BadCqeVersion {
        /// The version given.
        version: u8,
    },
    /// The queue's entry count is not the one the CQ was created with.
    EntriesDisagree {
        /// Entries of the queue type.
        queue: usize,
        /// Entries the device's CQ has.
        created: u32,
    },
}

impl fmt::Display for CqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CqError::BadEntryCount { ncqe } => {
                write!(f, "CQ entries {ncqe} not a power of two in 2..=2^24")
            }
            CqError::RingTooSmall { need, have } => {
                write!(f, "CQ ring needs {need} bytes, has {have}")
            }
            CqError::DbrecTooSmall { have } => {
                write!(f, "CQ doorbell record needs 8 bytes, has {have}")
            }
            CqError::Misaligned { addr } => {
                write!(f, "CQ memory at {addr:#x} is not 8-byte aligned")
            }
            CqError::EntriesDisagree { queue, created } => write!(
                f,
                "a {queue}-entry completion queue over a CQ created with {created} entries"
            ),
            CqError::BadCqeVersion { version } => write!(f, "CQE version {version} (0 or 1)"),
        }
    }
}

impl core::error::Error for CqError {}
