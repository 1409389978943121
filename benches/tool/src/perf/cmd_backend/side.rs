//! [`Side`]: one side's core queues (QP, CQ, registered regions, send
//! ring) behind the engine's [`SideOps`], and [`make_side`], which builds
//! it over a command-created QP and CQ and erases it to `dyn SideOps`.

use crate::perf::engine::SideOps;
use anyhow::{anyhow, bail};
use bareverbs::cq::{CompletionQueue, DynCompletionQueue, PollError};
use bareverbs::cqe::WorkCompletion;
use bareverbs::device::{CqHandle, QpHandle};
use bareverbs::mr::MemoryRegion;
use bareverbs::platform::{DmaBuf, Uar};
use bareverbs::queue_pair::QueuePair;
use bareverbs::rq::{RecvError, RecvWr, RqConfig, RqSlot};
use bareverbs::sq::{PostError, RdmaOp, RdmaWr, SendWr, Sge, SqConfig, SqSlot};
use bareverbs::wqe::DS_MASK;

/// One side's queues over runtime-sized storage (shared with the direct
/// simulator device, [`crate::perf::sim_backend`]).
pub(in crate::perf) struct Side<U: Uar> {
    /// The QP's host queues.
    pub(in crate::perf) qp: QueuePair<U, Vec<SqSlot>, Vec<RqSlot>>,
    /// The side's CQ (sends and receives).
    pub(in crate::perf) cq: DynCompletionQueue,
    /// The side's registered regions.
    pub(in crate::perf) mrs: Vec<MemoryRegion>,
    /// The send ring (WQEs are read back from it).
    pub(in crate::perf) ring: DmaBuf,
    /// The UAR page the CQ is armed through (event mode; `None` on the
    /// direct simulator device).
    pub(in crate::perf) cq_uar: Option<U>,
}

impl<U: Uar> SideOps for Side<U> {
    fn qpn(&self) -> u32 {
        self.qp.qpn
    }
    fn post(&mut self, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        self.qp.sq.post_send(wrs, &self.mrs)
    }
    unsafe fn post_rdma(&mut self, op: RdmaOp, wrs: &[RdmaWr<'_>]) -> Result<(), PostError> {
        // SAFETY: forwarded: the SGEs lie in this side's registered slots,
        // which stay allocated until the queues are dropped.
        unsafe { self.qp.sq.post_rdma_raw(op, wrs) }
    }
    fn post_recv(&mut self, wr_id: u64, sge: Sge) -> anyhow::Result<()> {
        if bareverbs::mr::find(&self.mrs, &sge).is_none() {
            bail!("receive buffer outside the registered memory");
        }
        let rq = self
            .qp
            .rq
            .as_mut()
            .ok_or_else(|| anyhow!("the QP has no receive queue"))?;
        let sgl = [sge];
        // SAFETY: the SGE lies inside a registered region of this side
        // (checked above) that outlives the queue.
        unsafe { rq.post_recv_raw(&[RecvWr { wr_id, sgl: &sgl }]) }
            .map_err(|e: RecvError| anyhow!("posting a receive on QP {:#x}: {e}", self.qp.qpn))
    }
    fn poll(&mut self, out: &mut [WorkCompletion]) -> Result<usize, PollError> {
        self.cq.poll(&mut self.qp, out)
    }
    fn outstanding(&self) -> u32 {
        self.qp.sq.outstanding()
    }
    fn cur_post(&self) -> u32 {
        self.qp.sq.cur_post()
    }
    fn cqn(&self) -> u32 {
        self.cq.cqn()
    }
    fn arm(&mut self) -> anyhow::Result<()> {
        let uar = self
            .cq_uar
            .as_mut()
            .ok_or_else(|| anyhow!("this device has no completion events"))?;
        self.cq.arm(false, uar);
        Ok(())
    }
    fn event_consumed(&mut self) {
        self.cq.event_consumed();
    }
    fn wqe_ds(&self, wqebb: u32) -> u32 {
        let n = self.ring.len / 64;
        let off = (wqebb as usize & (n - 1)) * 64 + 7;
        // SAFETY: off < n * 64 = the ring's length; a raw byte read of the
        // control segment's DS field, which only the host writes.
        (unsafe { std::ptr::read_volatile(self.ring.cpu.as_ptr().add(off)) }) as u32 & DS_MASK
    }
}

/// The data-path queues over one side's command-created QP and CQ.
pub(super) fn make_side<U: Uar + 'static>(
    uar: U,
    cq_uar: U,
    qp: &QpHandle,
    cq: &CqHandle,
    sqc: SqConfig,
    rqc: RqConfig,
    mrs: Vec<MemoryRegion>,
) -> anyhow::Result<Box<dyn SideOps>> {
    // SAFETY: one queue object per handle; the returned side is dropped
    // before the QP and CQ are destroyed (execute returns before
    // Objects::destroy runs).
    let (qpair, mut cqq) = unsafe {
        (
            qp.queue_pair(
                uar,
                sqc,
                rqc,
                vec![SqSlot::default(); qp.sq_wqebbs() as usize],
                vec![RqSlot::default(); qp.rq_wqes() as usize],
            ),
            CompletionQueue::<0>::with_entries(
                cq.ncqe() as usize,
                cq.ring(),
                cq.dbrec(),
                cq.cqn(),
                cq.cqe_size(),
                cq.cqe_version(),
            ),
        )
    };
    let mut qpair =
        qpair.ok_or_else(|| anyhow!("send or receive queue geometry refused by the core"))?;
    let cqq_ok = cqq.as_mut().map_err(|e| anyhow!("CQ: {e}"))?;
    cqq_ok.init_ring();
    // The QP is in RTS already: both queues may post.
    qpair.sq.enable();
    if let Some(rq) = qpair.rq.as_mut() {
        rq.enable();
    }
    Ok(Box::new(Side {
        qp: qpair,
        cq: cqq.map_err(|e| anyhow!("CQ: {e}"))?,
        mrs,
        ring: qp.sq(),
        cq_uar: Some(cq_uar),
    }))
}
