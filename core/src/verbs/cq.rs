//! [`CompletionQueue`]: a CQ created by command, polled through the core's
//! validated poll path, destroyed on drop.

use super::Owner;
use super::QueuePair;
use crate::cq::{CompletionReject, DynCompletionQueue, PollError, RecvDone, SendDone, WrResolver};
use crate::cqe::{Completion, WorkCompletion};
use crate::device::CqHandle;
use crate::platform::Uar;
use crate::sq::SendLane;
use core::cell::{Cell, RefCell};
use core::fmt;

/// A completion queue (`ibv_cq`). QPs that report to it borrow it, so it
/// outlives them; polling takes `&self` (the ring state sits in a
/// `RefCell`), so several QPs can hold it at once.
pub struct CompletionQueue<'a> {
    pub(crate) cq: RefCell<DynCompletionQueue>,
    handle: Option<CqHandle>,
    cqe: u32,
    vector: Option<u16>,
    /// QPs attached (a leaked QP keeps this up: the CQ is then leaked too).
    pub(crate) attached: Cell<u32>,
    /// The identity of the context that made it.
    pub(crate) ctx: u64,
    owner: &'a dyn Owner,
}

impl fmt::Debug for CompletionQueue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionQueue")
            .field("cqn", &self.cqn())
            .field("cqe", &self.cqe)
            .field("attached", &self.attached.get())
            .finish()
    }
}

impl<'a> CompletionQueue<'a> {
    pub(crate) fn new(
        cq: DynCompletionQueue,
        handle: CqHandle,
        cqe: u32,
        vector: Option<u16>,
        ctx: u64,
        owner: &'a dyn Owner,
    ) -> Self {
        CompletionQueue {
            cq: RefCell::new(cq),
            handle: Some(handle),
            cqe,
            vector,
            attached: Cell::new(0),
            ctx,
            owner,
        }
    }

    /// CQ number.
    pub fn cqn(&self) -> u32 {
        self.handle.as_ref().map_or(0, |h| h.cqn)
    }
    /// Usable entries, as `ibv_create_cq` reports `cq->cqe` (the ring
    /// holds one more).
    pub fn cqe(&self) -> u32 {
        self.cqe
    }
    /// The MSI-X vector its completion events arrive on
    /// ([`Context::create_cq_on`](super::Context::create_cq_on); `None`:
    /// the async EQ's, which this layer does not wait on).
    pub fn comp_vector(&self) -> Option<u16> {
        self.vector
    }

    /// Arms the CQ for one completion event (`ibv_req_notify_cq`): the
    /// device writes an event when the next CQE arrives (with
    /// `solicited_only`, the next solicited or error CQE), once; arm again
    /// after each event. Events are taken by
    /// [`Context::get_cq_event`](super::Context::get_cq_event).
    pub fn req_notify(&self, solicited_only: bool) -> Result<(), super::Error> {
        if self.vector.is_none() {
            return Err(super::Error::Unsupported {
                what: "arming a CQ without a completion vector (create it with create_cq_on)",
            });
        }
        let mut q = self.cq.borrow_mut();
        Ok(self.owner.arm_cq(&mut q, solicited_only)?)
    }

    /// Records a consumed completion event (the arm sequence number moves
    /// on, as `ibv_get_cq_event` does).
    pub(crate) fn event_consumed(&self) {
        self.cq.borrow_mut().event_consumed();
    }

    /// Polls up to `out.len()` completions of `qp` (which must report to
    /// this CQ). Every CQE is validated against the work in flight before it
    /// retires anything: a CQE that fails (for another QP, a WQE not in
    /// flight, a receive not outstanding …) is consumed and reported as a
    /// [`PollError`] after the completions before it
    /// ([`PollError::completions`]); the next call continues after it.
    pub fn poll<U: Uar, const SQ: usize, const RQ: usize>(
        &self,
        qp: &mut QueuePair<'_, U, SQ, RQ>,
        out: &mut [WorkCompletion],
    ) -> Result<usize, PollError> {
        self.poll_any(&mut [qp], out)
    }

    /// As [`poll`](Self::poll) for several QPs reporting to this CQ:
    /// completions are routed by QP (user index with CQE version 1, else
    /// QPN), and only to the side (send/receive) a QP reports here.
    pub fn poll_any<U: Uar, const SQ: usize, const RQ: usize>(
        &self,
        qps: &mut [&mut QueuePair<'_, U, SQ, RQ>],
        out: &mut [WorkCompletion],
    ) -> Result<usize, PollError> {
        let mut r = Bound {
            qps,
            cq: self as *const Self as *const (),
        };
        self.cq.borrow_mut().poll(&mut r, out)
    }

    /// As [`poll`](Self::poll), writing lean [`Completion`]s (the same
    /// CQEs, checks and errors; see
    /// [`poll_completions`](crate::cq::CompletionQueue::poll_completions)).
    pub fn poll_completions<U: Uar, const SQ: usize, const RQ: usize>(
        &self,
        qp: &mut QueuePair<'_, U, SQ, RQ>,
        out: &mut [Completion],
    ) -> Result<usize, PollError> {
        self.poll_any_completions(&mut [qp], out)
    }

    /// As [`poll_any`](Self::poll_any), writing lean [`Completion`]s.
    pub fn poll_any_completions<U: Uar, const SQ: usize, const RQ: usize>(
        &self,
        qps: &mut [&mut QueuePair<'_, U, SQ, RQ>],
        out: &mut [Completion],
    ) -> Result<usize, PollError> {
        let mut r = Bound {
            qps,
            cq: self as *const Self as *const (),
        };
        self.cq.borrow_mut().poll_completions(&mut r, out)
    }
}

/// Routes one CQ's completions to the verbs QPs that really report to it.
struct Bound<'q, 'r, 'c, U: Uar, const SQ: usize, const RQ: usize> {
    qps: &'q mut [&'r mut QueuePair<'c, U, SQ, RQ>],
    /// The CQ being polled (compared by address only).
    cq: *const (),
}

impl<U: Uar, const SQ: usize, const RQ: usize> Bound<'_, '_, '_, U, SQ, RQ> {
    /// The QP named `qp` whose `send` (or receive) side reports here.
    fn find(&self, qp: u32, send: bool) -> Result<usize, CompletionReject> {
        self.qps
            .iter()
            .position(|q| {
                let side = if send { q.send_cq } else { q.recv_cq };
                q.named(qp) && core::ptr::eq(side as *const CompletionQueue as *const (), self.cq)
            })
            .ok_or(CompletionReject::UnknownQp)
    }
}

impl<U: Uar, const SQ: usize, const RQ: usize> WrResolver for Bound<'_, '_, '_, U, SQ, RQ> {
    fn send_done(&mut self, qp: u32, c: u16) -> Result<SendDone, CompletionReject> {
        let i = self.find(qp, true)?;
        self.qps[i].send_done(qp, c)
    }
    fn recv_done(&mut self, qp: u32, c: u16) -> Result<RecvDone, CompletionReject> {
        let i = self.find(qp, false)?;
        self.qps[i].recv_done(qp, c)
    }
    // bareverbs creates QPs with scatter-to-CQE off: data in a CQE is not
    // copied anywhere (LOC_LEN_ERR), as the core's own resolvers do.
    fn scatter_to_send(&mut self, _qp: u32, _c: u16, _data: &[u8]) -> bool {
        false
    }
    fn scatter_to_recv(&mut self, _qp: u32, _c: u16, _data: &[u8]) -> bool {
        false
    }
    /// The first QP whose send side reports here: [`Self::send_done`]
    /// finds that QP first for its routing value.
    fn send_lane(&mut self) -> Option<SendLane<'_>> {
        let cq = self.cq;
        self.qps
            .iter_mut()
            .find(|q| core::ptr::eq(q.send_cq as *const CompletionQueue as *const (), cq))?
            .send_lane()
    }
}

impl Drop for CompletionQueue<'_> {
    fn drop(&mut self) {
        if self.attached.get() != 0 {
            // A QP still reports here (it was leaked): the device may still
            // write CQEs, so the ring is never freed.
            return;
        }
        if let Some(h) = self.handle.take() {
            self.owner.destroy_cq(h);
        }
    }
}
