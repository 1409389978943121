//! What a work queue answers when the completion queue asks it to retire
//! the work a CQE names: the retired request ([`SendDone`], [`RecvDone`]) or
//! why it refused ([`CompletionReject`]). A leaf shared by the queues
//! ([`crate::sq`], [`crate::rq`]) and the poller ([`crate::cq`]), which
//! re-exports these types. [ref §5.7](crate::reference).

use crate::cqe::WcOpcode;
use core::fmt;

/// What the send queue reports for a requester CQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SendDone {
    /// `wr_id` of the WR whose first WQEBB is the completed WQE.
    pub wr_id: u64,
    /// The `wr_data` opcode recorded for that slot at post time
    /// ([`WcOpcode::Send`], i.e. 0, unless the WR was a UMR-based operation
    /// such as bind-MW or local-invalidate). Reported as `wc.opcode` for
    /// UMR, SET_PSV, NOP and MMO WQEs. [ref §1.10, §5.7](crate::reference).
    pub wr_data: WcOpcode,
}

/// What the receive queue (or SRQ) reports for a responder CQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecvDone {
    /// `wr_id` of the consumed receive WQE.
    pub wr_id: u64,
    /// The QP validates receive checksums (raw packet QP with RX checksum
    /// offload): the poller then derives [`WcFlags::IP_CSUM_OK`](crate::cqe::WcFlags::IP_CSUM_OK). [ref §5.8](crate::reference).
    pub rx_csum: bool,
}

/// Why a queue refused to retire a work request for a CQE: the device
/// named something that is not a WQE in flight (a phantom, repeated, stale
/// or out-of-order completion) or a queue that does not exist. The CQ
/// reports it as [`PollError::UnknownQp`](crate::cq::PollError::UnknownQp) (for [`Self::UnknownQp`]) or
/// [`PollError::Rejected`](crate::cq::PollError::Rejected); nothing is retired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CompletionReject {
    /// No QP/SRQ with that user index / QPN is known to the resolver.
    UnknownQp,
    /// Send side: `wqe_counter` is not the first WQEBB of a WQE in flight
    /// (never posted, already retired, or overwritten since).
    NotInFlight,
    /// Receive side: no receive WQE is outstanding.
    NothingOutstanding,
    /// Receive side (own RQ): `wqe_counter` does not name the oldest
    /// outstanding receive WQE (`expected` is its index in the ring).
    NotOldest {
        /// Ring index of the oldest outstanding receive
        /// (`tail & (wqe_cnt - 1)`).
        expected: u16,
    },
    /// SRQ: the slot number is outside the queue.
    SlotOutOfRange,
    /// SRQ: the slot holds no posted receive WQE.
    SlotNotPosted,
    /// The QP has no receive queue and no SRQ is attached to the resolver.
    NoReceiveQueue,
    /// A compressed session expanded to a CQE that completes no work
    /// request (e.g. a RESIZE_CQ or undefined opcode in a title).
    NoWorkRequest,
}

impl CompletionReject {
    /// A short name of the reason.
    pub const fn name(&self) -> &'static str {
        match self {
            CompletionReject::UnknownQp => "unknown QP",
            CompletionReject::NotInFlight => "names no send WQE in flight",
            CompletionReject::NothingOutstanding => "no receive outstanding",
            CompletionReject::NotOldest { .. } => "not the oldest outstanding receive",
            CompletionReject::SlotOutOfRange => "SRQ slot out of range",
            CompletionReject::SlotNotPosted => "SRQ slot holds no posted WQE",
            CompletionReject::NoReceiveQueue => "QP has no receive queue",
            CompletionReject::NoWorkRequest => "compressed CQE completes no work request",
        }
    }
}

impl fmt::Display for CompletionReject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompletionReject::NotOldest { expected } => {
                write!(f, "{} (expected index {expected})", self.name())
            }
            _ => f.write_str(self.name()),
        }
    }
}
