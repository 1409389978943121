//! [`SharedReceiveQueue`]: an SRQ created from verbs capabilities, posted
//! through checked safe calls, shared by the QPs that receive through it.

use super::{Owner, ProtectionDomain, RecvWr};
use crate::cq::CompletionReject;
use crate::device::SrqHandle;
use crate::rq::{RecvError, SrqSlot};
use core::cell::{Cell, RefCell};
use core::fmt;
use core::marker::PhantomData;

/// What a QP needs of the SRQ it receives through (type-erased over `N`).
pub(crate) trait SrqPort {
    /// SRQ number.
    fn srqn(&self) -> u32;
    /// Completes slot `slot` after checking it holds a posted WQE.
    ///
    /// # Safety
    /// Only for a responder CQE the device wrote for a QP receiving through
    /// this SRQ.
    unsafe fn retire(&self, slot: u16) -> Result<u64, CompletionReject>;
    /// QPs receiving through it.
    fn attached(&self) -> &Cell<u32>;
    /// The identity of the context that made it.
    fn ctx(&self) -> u64;
}

/// A QP's link to the SRQ it receives through
/// ([`QpInitAttr::with_srq`](super::QpInitAttr::with_srq)).
#[derive(Clone, Copy)]
pub struct SrqLink<'a>(pub(crate) &'a dyn SrqPort);

impl fmt::Debug for SrqLink<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SrqLink({:#x})", self.0.srqn())
    }
}

/// A shared receive queue (`ibv_srq`) with `N` WQE slots of storage, which
/// must equal the geometry sizing gave the device. QPs that receive through
/// it borrow it; every region its WRs name must outlive it, and dropping it
/// destroys it on the device first.
pub struct SharedReceiveQueue<'a, const N: usize> {
    srq: RefCell<crate::rq::SharedReceiveQueue<[SrqSlot; N]>>,
    handle: Option<SrqHandle>,
    max_wr: u32,
    max_sge: u32,
    attached: Cell<u32>,
    /// The identity of the context that made it.
    ctx: u64,
    /// The identity of its PD: the regions its WRs name must be in it.
    domain: u64,
    owner: &'a dyn Owner,
    _pd: PhantomData<&'a ProtectionDomain<'a>>,
    /// The regions WRs name must outlive the SRQ (`'a`). Invariant:
    /// posting takes `&self`, and a covariant `'a` would let
    /// `&SharedReceiveQueue<'long>` shrink to `&SharedReceiveQueue<'short>`
    /// and accept a region that dies before the SRQ, which the device may
    /// still write into (the `compile_fail` test in `verbs` proves the
    /// refusal).
    _regions: PhantomData<fn(&'a ()) -> &'a ()>,
}

impl<const N: usize> fmt::Debug for SharedReceiveQueue<'_, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedReceiveQueue")
            .field("srqn", &self.srqn())
            .field("max_wr", &self.max_wr)
            .field("max_sge", &self.max_sge)
            .finish()
    }
}

impl<'a, const N: usize> SharedReceiveQueue<'a, N> {
    pub(crate) fn new(
        srq: crate::rq::SharedReceiveQueue<[SrqSlot; N]>,
        handle: SrqHandle,
        max_wr: u32,
        max_sge: u32,
        (ctx, domain): (u64, u64),
        owner: &'a dyn Owner,
    ) -> Self {
        SharedReceiveQueue {
            srq: RefCell::new(srq),
            handle: Some(handle),
            max_wr,
            max_sge,
            attached: Cell::new(0),
            ctx,
            domain,
            owner,
            _pd: PhantomData,
            _regions: PhantomData,
        }
    }

    /// SRQ number.
    pub fn srqn(&self) -> u32 {
        self.handle.as_ref().map_or(0, |h| h.srqn)
    }
    /// Receive WRs that may be outstanding, read back (`srq_attr.max_wr`).
    pub fn max_wr(&self) -> u32 {
        self.max_wr
    }
    /// Scatter entries per WR, read back (`srq_attr.max_sge`).
    pub fn max_sge(&self) -> u32 {
        self.max_sge
    }
    /// The link [`QpInitAttr::with_srq`](super::QpInitAttr::with_srq) takes.
    pub fn link(&self) -> SrqLink<'_> {
        SrqLink(self)
    }

    /// Posts receive WRs. Every SGE must lie in a
    /// [`Access::LOCAL_WRITE`](super::Access::LOCAL_WRITE) region of the
    /// SRQ's protection domain
    /// ([`RecvErrorKind::ForeignSge`](crate::rq::RecvErrorKind::ForeignSge)
    /// otherwise); a refused WR writes nothing, the WRs before it are
    /// posted.
    pub fn post_recv(&self, wrs: &[RecvWr<'_, 'a>]) -> Result<(), RecvError> {
        let mut srq = self.srq.borrow_mut();
        super::recv::post_checked(wrs, self.max_sge, self.domain, |raw| {
            // SAFETY: every SGE is a LocalSge inside a live region with
            // LOCAL_WRITE of this SRQ's PD, so of this SRQ's device (both
            // checked by `post_checked`), whose key and buffer
            // outlive this SRQ ('a); dropping the SRQ destroys it on the
            // device first; no Rust reference points at DmaBuffer memory.
            unsafe { srq.post_recv_raw(raw) }
        })
    }
}

impl<const N: usize> SrqPort for SharedReceiveQueue<'_, N> {
    fn srqn(&self) -> u32 {
        SharedReceiveQueue::srqn(self)
    }
    unsafe fn retire(&self, slot: u16) -> Result<u64, CompletionReject> {
        let mut q = self
            .srq
            .try_borrow_mut()
            .map_err(|_| CompletionReject::NoReceiveQueue)?;
        // SAFETY: forwarded contract (a responder CQE for a QP receiving
        // through this SRQ); `retire` checks the slot holds a posted WQE.
        unsafe { q.retire(slot) }
    }
    fn attached(&self) -> &Cell<u32> {
        &self.attached
    }
    fn ctx(&self) -> u64 {
        self.ctx
    }
}

impl<const N: usize> Drop for SharedReceiveQueue<'_, N> {
    fn drop(&mut self) {
        if self.attached.get() != 0 {
            // A leaked QP still receives through it: never free the ring.
            return;
        }
        if let Some(h) = self.handle.take() {
            self.owner.destroy_srq(h);
        }
    }
}
