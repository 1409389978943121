//! The posting path: the three entry points (raw, checked against
//! memory regions, the fixed-operation hot path), the one posting engine
//! behind them and the refusals it reports.

use super::{PostError, PostErrorKind, RdmaOp, RdmaWr, SendOp, SendQueue, SendWr, SqSlots};
use crate::platform::Uar;
use crate::sge::Sge;
use crate::wqe::ATOMIC_SIZE;

impl<U: Uar, S: SqSlots> SendQueue<U, S> {
    /// Posts `wrs` whose SGEs name raw device addresses, writing one WQE
    /// per WR and ringing one doorbell for the batch.
    ///
    /// On error, WRs before the failing index are posted and rung; the
    /// failing WR and those after it are not, and nothing of them is
    /// written to the ring.
    ///
    /// # Safety
    /// The device will read (SEND/WRITE) or write (READ/atomic) every SGE:
    /// each must name memory registered under its lkey that stays valid,
    /// and unaliased by Rust references where the device writes, until the
    /// WR's completion is polled. For [`SendFlags::INLINE`](super::SendFlags::INLINE), each SGE's
    /// `addr` must be a CPU address readable for `length` bytes now, whose
    /// provenance was exposed (`ptr as u64` or `ptr.expose_provenance()`).
    pub unsafe fn post_send_raw(&mut self, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        // SAFETY: forwarded contract; inline SGE addresses are CPU addresses.
        unsafe {
            self.post_engine(
                wrs,
                |w: &SendWr<'_>| *w,
                |s: &Sge| core::ptr::with_exposed_provenance::<u8>(s.addr as usize),
            )
        }
    }

    /// Posts `wrs` after checking every SGE against the registered regions
    /// `mrs`: each SGE must lie inside a region under its lkey, and
    /// operations the device writes into (READ, atomics) need
    /// `LOCAL_WRITE`. Inline payloads are read through the region's CPU
    /// mapping. An atomic's result SGE must cover the 8 bytes the device
    /// writes (whatever its `length`). The first WR that fails a check is reported as
    /// [`PostErrorKind::SgeOutOfBounds`]; the WRs before it are posted.
    pub fn post_send(
        &mut self,
        wrs: &[SendWr<'_>],
        mrs: &[crate::mr::MemoryRegion],
    ) -> Result<(), PostError> {
        let mut bad = None;
        'outer: for (i, wr) in wrs.iter().enumerate() {
            let writes = matches!(
                wr.op,
                SendOp::Read { .. } | SendOp::CompSwap { .. } | SendOp::FetchAdd { .. }
            );
            let atomic = wr.op.is_atomic();
            for (j, s) in wr.sgl.iter().enumerate() {
                if s.length == 0 {
                    continue;
                }
                // An atomic's data segment always says 8 bytes (whatever
                // `length` is): the device writes the 8-byte result there.
                let extent = if atomic {
                    Sge {
                        length: ATOMIC_SIZE,
                        ..*s
                    }
                } else {
                    *s
                };
                let ok = crate::mr::find(mrs, &extent)
                    .is_some_and(|m| !writes || m.access().allows(crate::mr::Access::LOCAL_WRITE));
                if !ok {
                    bad = Some(PostError {
                        index: i,
                        kind: PostErrorKind::SgeOutOfBounds { sge: j },
                    });
                    break 'outer;
                }
            }
        }
        let upto = bad.map_or(wrs.len(), |e| e.index);
        // SAFETY: every SGE of wrs[..upto] lies inside a region whose
        // contract (MemoryRegion::new) keeps it valid and registered while
        // WRs naming it are outstanding; inline sources are translated to
        // CPU pointers inside those regions.
        let r = unsafe {
            self.post_engine(
                &wrs[..upto],
                |w: &SendWr<'_>| *w,
                |s: &Sge| {
                    crate::mr::find(mrs, s)
                        .and_then(|m| m.cpu_of(s))
                        .map_or(core::ptr::null(), |p| p.as_ptr() as *const u8)
                },
            )
        };
        r.and(bad.map_or(Ok(()), Err))
    }

    /// The batch form for the most common work: RDMA WRITE, RDMA READ or
    /// SEND with pointer SGEs, one operation for the whole batch. The same
    /// engine and builder as [`post_send_raw`](Self::post_send_raw) (every
    /// check, the same WQEs), instantiated for a fixed operation so the
    /// per-WR decisions that depend only on it fold away.
    ///
    /// # Safety
    /// As [`post_send_raw`](Self::post_send_raw) for non-inline SGEs.
    #[inline(always)]
    pub unsafe fn post_rdma_raw(
        &mut self,
        op: RdmaOp,
        wrs: &[RdmaWr<'_>],
    ) -> Result<(), PostError> {
        // One loop per operation, each with its operation a constant (so
        // the per-WR decisions that depend only on it fold away).
        // SAFETY: forwarded contract.
        unsafe {
            match op {
                RdmaOp::Write => self.post_rdma_fixed(RdmaOp::Write, wrs),
                RdmaOp::Read => self.post_rdma_fixed(RdmaOp::Read, wrs),
                RdmaOp::Send => self.post_rdma_fixed(RdmaOp::Send, wrs),
            }
        }
    }

    /// The loop of [`post_rdma_raw`](Self::post_rdma_raw) for one `op`.
    ///
    /// # Safety
    /// As `post_rdma_raw`.
    #[inline(always)]
    unsafe fn post_rdma_fixed(&mut self, op: RdmaOp, wrs: &[RdmaWr<'_>]) -> Result<(), PostError> {
        // The same loop as `post_engine`, over the WR of `push_rdma`.
        // SAFETY: forwarded contract; no WR is inline, so the source
        // translation is never called.
        unsafe {
            self.post_engine(
                wrs,
                |w: &RdmaWr<'_>| w.with_op(op.send_op(w.remote_addr, w.rkey)),
                |_: &Sge| core::ptr::null::<u8>(),
            )
        }
    }

    /// The posting engine behind every list post: one [`SendBatch`]
    /// (`view` turns the caller's form into a [`SendWr`]) pushed WR by WR
    /// and rung once. `cpu_of` gives the CPU address inline payloads are
    /// copied from. On a refusal the WRs before it stay built and are rung;
    /// the refused WR and those after it are not.
    ///
    /// # Safety
    /// As `post_send_raw`, with `cpu_of(sge)` readable for `sge.length`
    /// bytes for every inline SGE.
    #[inline(always)]
    unsafe fn post_engine<T, V, F>(
        &mut self,
        wrs: &[T],
        view: V,
        cpu_of: F,
    ) -> Result<(), PostError>
    where
        V: Fn(&T) -> SendWr<'_>,
        F: Fn(&Sge) -> *const u8,
    {
        let mut batch = self.batch();
        // The WRs that fit; the one after them (if any) is refused as
        // queue full once those before it were built.
        let fits = wrs.len().min(batch.room() as usize);
        let mut refused = None;
        for item in &wrs[..fits] {
            // SAFETY: forwarded contract; the queue has room for each.
            if let Err(kind) = unsafe { batch.push_fitting(&view(item), &cpu_of) } {
                refused = Some(kind);
                break;
            }
        }
        // Every WR before the refused one was built.
        let index = batch.built() as usize;
        if refused.is_none() && index < wrs.len() {
            refused = Some(batch.queue_full());
        }
        batch.ring();
        match refused {
            None => Ok(()),
            Some(kind) => Err(PostError { index, kind }),
        }
    }
}
