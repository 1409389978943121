//! The safe, verbs-level object model: a brought-up [`Device`](crate::device::Device) becomes a
//! [`Context`] (`ibv_context`), and every object made through it —
//! [`ProtectionDomain`], [`DmaBuffer`], [`MemoryRegion`],
//! [`CompletionQueue`], [`QueuePair`] — borrows it, so the compiler checks
//! what the device may touch and for how long:
//!
//! * a [`DmaBuffer`] owns its DMA memory and frees it on drop; a
//!   [`MemoryRegion`] borrows the buffer it covers, so the buffer cannot be
//!   freed while the key exists, and dropping the region destroys the key
//!   (DESTROY_MKEY) before the borrow ends;
//! * a [`QueuePair`] borrows its CQs and PD, and every region its work
//!   requests name must outlive it: dropping the QP destroys it on the
//!   device (DESTROY_QP) first, so no posted WR can outlive its memory;
//! * no object can outlive its [`Context`], and dropping the context tears
//!   the function down in order ([`Device::teardown`](crate::device::Device::teardown));
//! * an object is accepted only by the [`Context`] that made it: every
//!   context takes an identity unique in the process, which each object it
//!   makes records, and [`Context::reg_mr`] (PD and buffer),
//!   [`Context::create_qp`] (PD, both CQs, SRQ), [`Context::create_srq`]
//!   (PD) and [`Context::get_cq_event`] (CQs) refuse another context's with
//!   [`Error::ForeignObject`], creating nothing. Two contexts number their
//!   objects alike (PDs, CQs, keys, IOVAs, QP user indices from 1), so the
//!   device could not tell: a foreign buffer would be registered at an
//!   IOVA this device maps to its own memory, a foreign CQ would have its
//!   completions retire this context's work requests;
//! * a work request names only regions of its queue's protection domain:
//!   each PD also takes a unique identity, its regions copy it into every
//!   [`LocalSge`] they make, and [`QueuePair::post_send`],
//!   [`SendBatch::push`], [`QueuePair::post_recv`] and
//!   [`SharedReceiveQueue::post_recv`] refuse an SGE of another PD — of
//!   another context above all — before anything of its WR is written
//!   (`ForeignSge` in [`PostErrorKind`](crate::sq::PostErrorKind) and
//!   [`RecvErrorKind`](crate::rq::RecvErrorKind); the WRs before it are
//!   posted). The check is one compare per SGE of a field of the token.
//!
//! Driver rings and doorbell records are never handed out as
//! [`DmaBuffer`]s, so no safe call can register a key over them.
//!
//! Sizes are stated once, in verbs terms: [`Context::create_qp`] takes
//! [`QpInitAttr`] (`max_send_wr`, `max_send_sge`, … as `ibv_create_qp`
//! does), runs [`crate::sizing::qp_layout`] itself, creates the QP by
//! command and reports the read-back capabilities; its queues are built
//! from that geometry. Transitions take verbs attributes and enable the
//! queues themselves.
//!
//! What `mem::forget` can do: forgetting an object leaks it (its firmware
//! object and memory stay until [`Context`] teardown) but never lets the
//! device reach freed memory: a forgotten region keeps its buffer's
//! registration count up, so the buffer is leaked, not freed.
//!
//! ```
//! use bareverbs::verbs::{Context, QpInitAttr, QpCap, InitAttr, Access};
//! use bareverbs::sizing::QpType;
//! # use bareverbs::cmd::{Bar0, Clock}; use bareverbs::device::UarMap;
//! # use bareverbs::platform::DmaAllocator;
//! fn setup<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
//!     ctx: &Context<B, C, A>,
//! ) -> Result<(), bareverbs::verbs::Error> {
//!     let pd = ctx.alloc_pd()?;
//!     let buf = ctx.alloc_buffer(4096)?;
//!     let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
//!     let cq = ctx.create_cq(64)?;
//!     let attr = QpInitAttr::new(QpType::Rc, &cq, &cq, QpCap::new(16, 1, 16, 1));
//!     let mut qp = ctx.create_qp::<64, 16>(&pd, &attr)?;
//!     qp.to_init(&InitAttr::new(1, Access::REMOTE_WRITE))?;
//!     let _sge = mr.sge(0, 64).unwrap();
//!     Ok(())
//! }
//! ```
//!
//! # What the compiler refuses
//!
//! Each refusal below is a `compile_fail` test, next to the same code
//! without the mistake, which compiles. The prelude shared by all of them:
//! a function generic over the platform, handed a [`Context`].
//!
//! **A region cannot outlive its buffer** (the buffer cannot be freed while
//! a key covers it):
//!
//! ```compile_fail,E0505
//! # use bareverbs::verbs::*; use bareverbs::cmd::{Bar0, Clock};
//! # use bareverbs::device::UarMap; use bareverbs::platform::DmaAllocator;
//! fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(ctx: &Context<B, C, A>) -> Result<(), Error> {
//!     let pd = ctx.alloc_pd()?;
//!     let buf = ctx.alloc_buffer(4096)?;
//!     let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE)?;
//!     drop(buf); // error[E0505]: cannot move out of `buf` because it is borrowed
//!     let _ = mr.lkey();
//!     Ok(())
//! }
//! ```
//! ```
//! # use bareverbs::verbs::*; use bareverbs::cmd::{Bar0, Clock};
//! # use bareverbs::device::UarMap; use bareverbs::platform::DmaAllocator;
//! fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(ctx: &Context<B, C, A>) -> Result<(), Error> {
//!     let pd = ctx.alloc_pd()?;
//!     let buf = ctx.alloc_buffer(4096)?;
//!     let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE)?;
//!     let _ = mr.lkey();
//!     drop(mr); // the key is destroyed first ...
//!     drop(buf); // ... then the memory is freed
//!     Ok(())
//! }
//! ```
//!
//! **No queue outlives its device** (the context cannot be dropped or
//! moved while an object borrows it):
//!
//! ```compile_fail,E0505
//! # use bareverbs::verbs::*; use bareverbs::cmd::{Bar0, Clock};
//! # use bareverbs::device::UarMap; use bareverbs::platform::DmaAllocator;
//! fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(ctx: Context<B, C, A>) -> Result<(), Error> {
//!     let cq = ctx.create_cq(16)?;
//!     drop(ctx); // error[E0505]: cannot move out of `ctx` because it is borrowed
//!     let _ = cq.cqn();
//!     Ok(())
//! }
//! ```
//! ```
//! # use bareverbs::verbs::*; use bareverbs::cmd::{Bar0, Clock};
//! # use bareverbs::device::UarMap; use bareverbs::platform::DmaAllocator;
//! fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(ctx: Context<B, C, A>) -> Result<(), Error> {
//!     let cq = ctx.create_cq(16)?;
//!     let _ = cq.cqn();
//!     drop(cq);
//!     drop(ctx); // tears the device down
//!     Ok(())
//! }
//! ```
//!
//! **A posted work request cannot outlive the memory it names** (every
//! region a QP's WRs use outlives the QP, whose drop destroys it on the
//! device first):
//!
//! ```compile_fail,E0597
//! # use bareverbs::verbs::*; use bareverbs::cmd::{Bar0, Clock};
//! # use bareverbs::device::UarMap; use bareverbs::platform::DmaAllocator;
//! # use bareverbs::sizing::QpType;
//! fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(ctx: &Context<B, C, A>) -> Result<(), Error> {
//!     let pd = ctx.alloc_pd()?;
//!     let cq = ctx.create_cq(64)?;
//!     let attr = QpInitAttr::new(QpType::Rc, &cq, &cq, QpCap::new(16, 16, 1, 1));
//!     let mut qp = ctx.create_qp::<64, 16>(&pd, &attr)?;
//!     {
//!         let buf = ctx.alloc_buffer(4096)?;
//!         let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE)?;
//!         let _ = qp.post_recv(&[RecvWr::new(1, &[mr.sge(0, 64).unwrap()])]);
//!     } // error[E0597]: `mr` does not live long enough
//!     drop(qp);
//!     Ok(())
//! }
//! ```
//! ```
//! # use bareverbs::verbs::*; use bareverbs::cmd::{Bar0, Clock};
//! # use bareverbs::device::UarMap; use bareverbs::platform::DmaAllocator;
//! # use bareverbs::sizing::QpType;
//! fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(ctx: &Context<B, C, A>) -> Result<(), Error> {
//!     let pd = ctx.alloc_pd()?;
//!     let cq = ctx.create_cq(64)?;
//!     let buf = ctx.alloc_buffer(4096)?;
//!     let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE)?;
//!     let attr = QpInitAttr::new(QpType::Rc, &cq, &cq, QpCap::new(16, 16, 1, 1));
//!     let mut qp = ctx.create_qp::<64, 16>(&pd, &attr)?;
//!     let _ = qp.post_recv(&[RecvWr::new(1, &[mr.sge(0, 64).unwrap()])]);
//!     drop(qp); // DESTROY_QP first; the region and buffer go after
//!     Ok(())
//! }
//! ```
//!
//! **A batch holds its QP**: while a [`SendBatch`] is open nothing else
//! posts to the QP or changes its state (here: a reset, which would make
//! the queue forget WRs the batch is building), and a pushed WR's regions
//! must outlive the QP as a posted one's must:
//!
//! ```compile_fail,E0499
//! # use bareverbs::verbs::*; use bareverbs::cmd::{Bar0, Clock};
//! # use bareverbs::device::UarMap; use bareverbs::platform::DmaAllocator;
//! # use bareverbs::sizing::QpType; use bareverbs::sq::SendOp;
//! fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(ctx: &Context<B, C, A>) -> Result<(), Error> {
//!     let pd = ctx.alloc_pd()?;
//!     let cq = ctx.create_cq(64)?;
//!     let buf = ctx.alloc_buffer(4096)?;
//!     let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE)?;
//!     let attr = QpInitAttr::new(QpType::Rc, &cq, &cq, QpCap::new(16, 16, 1, 1));
//!     let mut qp = ctx.create_qp::<64, 16>(&pd, &attr)?;
//!     let mut batch = qp.send_batch();
//!     let _ = batch.push(&SendWr::new(1, SendOp::Send, &[mr.sge(0, 64).unwrap()]));
//!     qp.to_reset()?; // error[E0499]: cannot borrow `qp` as mutable more than once
//!     batch.ring();
//!     Ok(())
//! }
//! ```
//! ```compile_fail,E0597
//! # use bareverbs::verbs::*; use bareverbs::cmd::{Bar0, Clock};
//! # use bareverbs::device::UarMap; use bareverbs::platform::DmaAllocator;
//! # use bareverbs::sizing::QpType; use bareverbs::sq::SendOp;
//! fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(ctx: &Context<B, C, A>) -> Result<(), Error> {
//!     let pd = ctx.alloc_pd()?;
//!     let cq = ctx.create_cq(64)?;
//!     let attr = QpInitAttr::new(QpType::Rc, &cq, &cq, QpCap::new(16, 16, 1, 1));
//!     let mut qp = ctx.create_qp::<64, 16>(&pd, &attr)?;
//!     {
//!         let buf = ctx.alloc_buffer(4096)?;
//!         let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE)?;
//!         let mut batch = qp.send_batch();
//!         let _ = batch.push(&SendWr::new(1, SendOp::Send, &[mr.sge(0, 64).unwrap()]));
//!         batch.ring();
//!     } // error[E0597]: `mr` does not live long enough
//!     drop(qp);
//!     Ok(())
//! }
//! ```
//! ```
//! # use bareverbs::verbs::*; use bareverbs::cmd::{Bar0, Clock};
//! # use bareverbs::device::UarMap; use bareverbs::platform::DmaAllocator;
//! # use bareverbs::sizing::QpType; use bareverbs::sq::SendOp;
//! fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(ctx: &Context<B, C, A>) -> Result<(), Error> {
//!     let pd = ctx.alloc_pd()?;
//!     let cq = ctx.create_cq(64)?;
//!     let buf = ctx.alloc_buffer(4096)?;
//!     let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE)?;
//!     let attr = QpInitAttr::new(QpType::Rc, &cq, &cq, QpCap::new(16, 16, 1, 1));
//!     let mut qp = ctx.create_qp::<64, 16>(&pd, &attr)?;
//!     let mut batch = qp.send_batch();
//!     let _ = batch.push(&SendWr::new(1, SendOp::Send, &[mr.sge(0, 64).unwrap()]));
//!     batch.ring(); // the batch ends here ...
//!     qp.to_reset()?; // ... so the QP is free again
//!     drop(qp);
//!     Ok(())
//! }
//! ```
//!
//! **A receive posted through a shared receive queue cannot outlive the
//! memory it names** (every region its WRs use outlives the SRQ, whose drop
//! destroys it on the device first; posting takes `&self`, so the SRQ is
//! invariant in that lifetime: a shared borrow cannot shrink it):
//!
//! ```compile_fail,E0597
//! # use bareverbs::verbs::*; use bareverbs::cmd::{Bar0, Clock};
//! # use bareverbs::device::UarMap; use bareverbs::platform::DmaAllocator;
//! fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(ctx: &Context<B, C, A>) -> Result<(), Error> {
//!     let pd = ctx.alloc_pd()?;
//!     let srq = ctx.create_srq::<64>(&pd, 16, 1)?;
//!     {
//!         let buf = ctx.alloc_buffer(4096)?;
//!         let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE)?;
//!         let _ = srq.post_recv(&[RecvWr::new(1, &[mr.sge(0, 64).unwrap()])]);
//!     } // error[E0597]: `mr` does not live long enough
//!     drop(srq);
//!     Ok(())
//! }
//! ```
//! ```
//! # use bareverbs::verbs::*; use bareverbs::cmd::{Bar0, Clock};
//! # use bareverbs::device::UarMap; use bareverbs::platform::DmaAllocator;
//! # use bareverbs::sizing::QpType;
//! fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(ctx: &Context<B, C, A>) -> Result<(), Error> {
//!     let pd = ctx.alloc_pd()?;
//!     let cq = ctx.create_cq(64)?;
//!     let buf = ctx.alloc_buffer(4096)?;
//!     let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE)?;
//!     let srq = ctx.create_srq::<64>(&pd, 16, 1)?;
//!     let attr = QpInitAttr::new(QpType::Rc, &cq, &cq, QpCap::new(16, 16, 1, 1)).with_srq(&srq);
//!     let qp = ctx.create_qp::<64, 16>(&pd, &attr)?;
//!     let _ = srq.post_recv(&[RecvWr::new(1, &[mr.sge(0, 64).unwrap()])]);
//!     drop(qp); // the QP receiving through the SRQ goes first ...
//!     drop(srq); // ... then DESTROY_SRQ; the region and buffer go after
//!     Ok(())
//! }
//! ```
//!
//! **No key can be registered over a driver ring**: registration takes a
//! [`DmaBuffer`], which only [`Context::alloc_buffer`] makes; rings,
//! doorbell records and raw [`DmaBuf`] descriptions are not buffers:
//!
//! ```compile_fail,E0308
//! # use bareverbs::verbs::*; use bareverbs::cmd::{Bar0, Clock};
//! # use bareverbs::device::UarMap; use bareverbs::platform::{DmaAllocator, DmaBuf};
//! fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(ctx: &Context<B, C, A>, ring: DmaBuf) -> Result<(), Error> {
//!     let pd = ctx.alloc_pd()?;
//!     let _ = ctx.reg_mr(&pd, &ring, Access::REMOTE_WRITE)?; // error[E0308]: mismatched types
//!     Ok(())
//! }
//! ```
//! ```
//! # use bareverbs::verbs::*; use bareverbs::cmd::{Bar0, Clock};
//! # use bareverbs::device::UarMap; use bareverbs::platform::{DmaAllocator, DmaBuf};
//! fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(ctx: &Context<B, C, A>, _ring: DmaBuf) -> Result<(), Error> {
//!     let pd = ctx.alloc_pd()?;
//!     let buf = ctx.alloc_buffer(4096)?;
//!     let _ = ctx.reg_mr(&pd, &buf, Access::REMOTE_WRITE)?;
//!     Ok(())
//! }
//! ```

mod address;
mod buffer;
mod context;
mod cq;
mod error;
mod gather;
mod mr;
mod qp;
mod qp_attr;
mod recv;
mod send_batch;
mod send_wr;
mod srq;

pub use address::MAX_UNICAST_LID;
pub use buffer::DmaBuffer;
pub use context::Context;
pub use cq::CompletionQueue;
pub use error::Error;
pub use mr::{Access, LocalSge, MemoryRegion, ProtectionDomain, RemoteBuf};
pub use qp::QueuePair;
pub use qp_attr::{
    AddressHandle, GlobalRoute, InitAttr, QpAttr, QpCap, QpInitAttr, RtrAttr, RtsAttr,
};
pub use recv::RecvWr;
pub use send_batch::SendBatch;
pub use send_wr::SendWr;
pub use srq::{SharedReceiveQueue, SrqLink};

use crate::device::{CqHandle, DeviceError, Mkey, Pd, QpHandle, SrqHandle};
use crate::platform::DmaBuf;

/// What the objects ask of the context that made them (type-erased so the
/// object types carry no platform parameters). Only the control path goes
/// through it.
pub(crate) trait Owner {
    /// Returns DMA memory to the allocator.
    ///
    /// # Safety
    /// `raw` came from this context's allocator and the device can no
    /// longer reach it.
    unsafe fn free_dma(&self, raw: DmaBuf);
    /// DEALLOC_PD; `false` if it failed (the PD is then leaked).
    fn dealloc_pd(&self, pd: Pd) -> bool;
    /// DESTROY_MKEY; `false` if it failed (the key may still be live).
    fn destroy_mkey(&self, m: Mkey) -> bool;
    /// DESTROY_CQ and free its ring; `false` if it failed (ring leaked).
    fn destroy_cq(&self, h: CqHandle) -> bool;
    /// DESTROY_QP and free its buffer; `false` if it failed (leaked).
    fn destroy_qp(&self, h: QpHandle) -> bool;
    /// DESTROY_SRQ and free its ring; `false` if it failed (leaked).
    fn destroy_srq(&self, h: SrqHandle) -> bool;
    /// A QP state transition by command.
    fn modify_qp(&self, h: &mut QpHandle, m: qp::Modify) -> Result<(), DeviceError>;
    /// QUERY_QP, checked, refreshing the state `h` holds
    /// ([`crate::device::Device::query_qp`]).
    fn query_qp(&self, h: &mut QpHandle) -> Result<crate::cmd::ops::QpQuery, DeviceError>;
    /// Arms `cq` for its next completion event through the context's UAR.
    fn arm_cq(
        &self,
        cq: &mut crate::cq::DynCompletionQueue,
        solicited_only: bool,
    ) -> Result<(), DeviceError>;
    /// The address path of a `ty` QP toward `ah` on this device's port
    /// ([`AddressHandle::path`] with its link layer and GID record).
    fn address_path(
        &self,
        ah: &AddressHandle,
        ty: crate::sizing::QpType,
    ) -> Result<crate::cmd::ops::AddressPath, DeviceError>;
}
