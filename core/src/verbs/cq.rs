//! [`CompletionQueue`]: a CQ created by command, polled through the core's
//! validated poll path, destroyed on drop.

use super::Owner;
use crate::cq::{DynCompletionQueue, PollError, WrResolver};
use crate::cqe::WorkCompletion;
use crate::device::CqHandle;
use core::cell::{Cell, RefCell};
use core::fmt;

/// A completion queue (`ibv_cq`). QPs that report to it borrow it, so it
/// outlives them; polling takes `&self` (the ring state sits in a
/// `RefCell`), so several QPs can hold it at once.
pub struct CompletionQueue<'a> {
    pub(crate) cq: RefCell<DynCompletionQueue>,
    handle: Option<CqHandle>,
    cqe: u32,
    /// QPs attached (a leaked QP keeps this up: the CQ is then leaked too).
    pub(crate) attached: Cell<u32>,
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
        owner: &'a dyn Owner,
    ) -> Self {
        CompletionQueue {
            cq: RefCell::new(cq),
            handle: Some(handle),
            cqe,
            attached: Cell::new(0),
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

    /// Polls up to `out.len()` completions of the QPs `r` resolves (a
    /// [`QueuePair`](super::QueuePair), or a slice of them). Every CQE is
    /// validated against the work in flight before it retires anything; a
    /// CQE that fails is consumed and reported as a [`PollError`] after the
    /// completions before it (`PollError::completions`), and the next call
    /// continues after it.
    pub fn poll<R: WrResolver + ?Sized>(
        &self,
        r: &mut R,
        out: &mut [WorkCompletion],
    ) -> Result<usize, PollError> {
        self.cq.borrow_mut().poll(r, out)
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
