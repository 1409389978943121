//! [`SendBatch`]: the safe API's batch of send WRs — each pushed WR checked
//! by the safe send rules and built at once, one doorbell when the batch
//! is rung (the ring-level [`sq::SendBatch`](crate::sq::SendBatch) under
//! the safe checks of [`QueuePair::post_send`](super::QueuePair::post_send)).

use super::gather::Gather;
use super::send_wr::{check_send, send_sge};
use super::{QueuePair, SendWr};
use crate::platform::Uar;
use crate::sizing::QpType;
use crate::sq::{PostErrorKind, SqSlot};
use core::marker::PhantomData;

/// Send WRs being posted on one [`QueuePair`], one doorbell for all of
/// them. Made by [`QueuePair::send_batch`]; it borrows the QP mutably, so
/// nothing else posts to it or moves its state while the batch is open.
///
/// Each push applies every check [`QueuePair::post_send`] applies (queue
/// full, QP state, SGE count, inline size, WQE size, no window binds or
/// local invalidation, every SGE in the QP's protection domain, device
/// writes only into
/// [`Access::LOCAL_WRITE`](super::Access::LOCAL_WRITE) regions, an
/// atomic's result SGE of 8 bytes) before anything of the WR is written;
/// a refused push writes nothing and the batch stays open. End it with
/// [`ring`](Self::ring) (a drop rings too).
#[must_use = "a batch rings its doorbell when it is rung or dropped"]
pub struct SendBatch<'q, 'a, U: Uar, const SQ: usize> {
    inner: crate::sq::SendBatch<'q, U, [SqSlot; SQ]>,
    qp_type: QpType,
    max_sge: u32,
    /// The QP's protection domain: every SGE's region must be in it.
    domain: u64,
    /// The regions WRs name must outlive the QP (`'a`). Invariant: a
    /// covariant `'a` would let the batch shrink it and accept regions
    /// that die before the QP (the `compile_fail` test in `verbs` proves
    /// the refusal).
    _regions: PhantomData<fn(&'a ()) -> &'a ()>,
}

impl<U: Uar, const SQ: usize> core::fmt::Debug for SendBatch<'_, '_, U, SQ> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SendBatch")
            .field("inner", &self.inner)
            .field("qp_type", &self.qp_type)
            .field("max_sge", &self.max_sge)
            .finish()
    }
}

impl<'a, U: Uar, const SQ: usize, const RQ: usize> QueuePair<'a, U, SQ, RQ> {
    /// Opens a batch of send WRs on this QP (see [`SendBatch`]).
    pub fn send_batch(&mut self) -> SendBatch<'_, 'a, U, SQ> {
        let (qp_type, max_sge, domain) = (self.qp_type(), self.cap().max_send_sge, self.domain);
        SendBatch {
            inner: self.inner.sq.batch(),
            qp_type,
            max_sge,
            domain,
            _regions: PhantomData,
        }
    }
}

impl<'a, U: Uar, const SQ: usize> SendBatch<'_, 'a, U, SQ> {
    /// Checks `wr` and builds its WQE; refused, nothing of it is written.
    #[inline(always)]
    pub fn push(&mut self, wr: &SendWr<'_, 'a>) -> Result<(), PostErrorKind> {
        check_send(wr, self.qp_type)?;
        let (max_sge, domain) = (self.max_sge, self.domain);
        let mut g = Gather::new();
        let items = wr
            .sgl
            .iter()
            .enumerate()
            .map(|(j, s)| send_sge(wr, j, s, domain));
        let too_long = |num| PostErrorKind::TooManySges {
            num,
            max: Some(max_sge),
        };
        // An empty buffer holds any list `append` accepts (None cannot
        // happen; it would be a list too long for any buffer).
        let range = g
            .append(items, too_long)?
            .ok_or_else(|| too_long(wr.sgl.len()))?;
        let raw = crate::sq::SendWr {
            wr_id: wr.wr_id,
            op: wr.op,
            sgl: g.get(range),
            flags: wr.flags,
            ud: wr.ud,
        };
        // SAFETY: every SGE comes from a LocalSge: inside a live region
        // (bounds checked when the token was made) of this QP's PD, so of
        // this QP's device (`send_sge` compared the domains), whose key and
        // buffer outlive this QP ('a), and dropping the QP destroys it on the
        // device first. `check_send`/`send_sge` refused device writes into
        // regions without LOCAL_WRITE, atomics whose result SGE is under 8
        // bytes, and window binds; inline SGEs were translated to CPU
        // addresses inside their region's buffer (exposed provenance),
        // readable now. No Rust reference points at those buffers.
        unsafe { self.inner.push(&raw) }
    }

    /// WRs built so far in this batch.
    pub fn built(&self) -> u32 {
        self.inner.built()
    }

    /// WRs that can still be pushed before the queue is full.
    pub fn room(&self) -> u32 {
        self.inner.room()
    }

    /// Ends the batch: one doorbell for every WR built (nothing when none
    /// was).
    #[inline(always)]
    pub fn ring(self) {
        self.inner.ring();
    }
}
