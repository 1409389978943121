//! The boundary between the CQ poller and the queues that own work
//! requests: [`WrResolver`].

use super::{CompletionReject, RecvDone, SendDone};
use crate::sq::SendLane;

/// The boundary between the CQ poller and the queues that own work
/// requests. Implemented by whoever owns the QPs/SRQs attached to the CQ.
///
/// `qp` names the queue pair: the user index (`srqn_uidx & 0xffffff`) with
/// CQE version 1, else the QPN (`sop_drop_qpn & 0xffffff`). [ref §5.7](crate::reference).
///
/// The device is not trusted: `*_done` must check that `wqe_counter` names
/// a WR really in flight and return the [`CompletionReject`] reason
/// otherwise, retiring nothing. A rejected CQE is consumed and reported as
/// a [`PollError`](super::PollError); it never becomes a completion.
///
/// For one CQE the poller calls at most one `scatter_*` method, always
/// *before* the matching `*_done`, so the WQE's buffers are still owned by
/// the queue when the data is copied; a resolver that scatters must apply
/// the same in-flight check there (the CQE may still be rejected).
pub trait WrResolver {
    /// A requester CQE (success or REQ_ERR) for `qp`. If `wqe_counter` is
    /// the first WQEBB of a WQE in flight, retire every WR up to and
    /// including it (`sq.tail = wqe_head[idx] + 1`, idx = `wqe_counter &
    /// (sq.wqe_cnt − 1)`) and return its `wr_id` and `wr_data`; else
    /// retire nothing and say why ([`CompletionReject::UnknownQp`] for an
    /// unknown QP: CQ_POLL_ERR). [ref §1.10, §5.7](crate::reference).
    fn send_done(&mut self, qp: u32, wqe_counter: u16) -> Result<SendDone, CompletionReject>;

    /// A responder CQE (success or RESP_ERR) for `qp`. Non-SRQ: the oldest
    /// outstanding receive, idx = `wqe_counter & (rq.wqe_cnt − 1)`, `wr_id
    /// = rq.wrid[idx]`, `rq.tail += 1`. SRQ: slot = `wqe_counter`
    /// (unmasked), which must hold a posted WQE; free it. Otherwise retire
    /// nothing and say why. [ref §5.8](crate::reference).
    fn recv_done(&mut self, qp: u32, wqe_counter: u16) -> Result<RecvDone, CompletionReject>;

    /// Inline scatter on a requester CQE (small RDMA-read response or
    /// atomic result): copy `data` into the local SGEs of the send WQE at
    /// `wqe_counter` ([ref §5.7](crate::reference)). `data` is the completion's byte count
    /// (byte_cnt for RDMA_READ, 8 for atomics) taken from the start of the
    /// inline area, as the provider copies it, bounded by the CQE entry.
    /// Return `false` if it does not fit (the completion then reports
    /// [`WcStatus::LocLenErr`](crate::cqe::WcStatus::LocLenErr)), the QP is unknown or the WQE is not in
    /// flight (copy nothing then).
    fn scatter_to_send(&mut self, qp: u32, wqe_counter: u16, data: &[u8]) -> bool;

    /// Inline scatter on a responder CQE: copy `data` into the buffers of
    /// the receive WQE (RQ index or SRQ slot from `wqe_counter`, as in
    /// [`Self::recv_done`]). Return `false` if it does not fit
    /// ([`WcStatus::LocLenErr`](crate::cqe::WcStatus::LocLenErr)), the QP is unknown or the WQE is not
    /// outstanding. [ref §5.8](crate::reference).
    fn scatter_to_recv(&mut self, qp: u32, wqe_counter: u16, data: &[u8]) -> bool;

    /// The send queue most of this CQ's requester CQEs are for, as a
    /// [`SendLane`] (its completion state in registers for a run of CQEs),
    /// or `None` (the default: every CQE goes through [`Self::send_done`]).
    /// The lean poller ([`CompletionQueue::poll_completions`](super::CompletionQueue::poll_completions)) retires a
    /// requester CQE whose QP field equals the lane's routing value through
    /// the lane, which applies exactly the checks `send_done` applies for
    /// that QP; a lane must therefore be the queue `send_done` would use
    /// for that value (a lane can only be made that way: the constructor,
    /// [`SendQueue::send_lane`](crate::sq::SendQueue::send_lane), is
    /// `unsafe` with that contract, and `QueuePair`'s own lane keeps it).
    #[inline(always)]
    fn send_lane(&mut self) -> Option<SendLane<'_>> {
        None
    }
}

impl<R: WrResolver + ?Sized> WrResolver for &mut R {
    fn send_done(&mut self, qp: u32, wqe_counter: u16) -> Result<SendDone, CompletionReject> {
        (**self).send_done(qp, wqe_counter)
    }
    fn recv_done(&mut self, qp: u32, wqe_counter: u16) -> Result<RecvDone, CompletionReject> {
        (**self).recv_done(qp, wqe_counter)
    }
    fn scatter_to_send(&mut self, qp: u32, wqe_counter: u16, data: &[u8]) -> bool {
        (**self).scatter_to_send(qp, wqe_counter, data)
    }
    fn scatter_to_recv(&mut self, qp: u32, wqe_counter: u16, data: &[u8]) -> bool {
        (**self).scatter_to_recv(qp, wqe_counter, data)
    }
    #[inline(always)]
    fn send_lane(&mut self) -> Option<SendLane<'_>> {
        (**self).send_lane()
    }
}
