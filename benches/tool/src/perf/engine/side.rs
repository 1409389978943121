//! One side's data path as the engine drives it ([`SideOps`]): post,
//! post a receive, poll, and what the ring shows.

use bareverbs::cq::PollError;
use bareverbs::cqe::WorkCompletion;
use bareverbs::sq::{PostError, RdmaOp, RdmaWr, SendWr, Sge};

/// The data path of one side, with the ring size erased.
pub trait SideOps {
    /// QP number.
    fn qpn(&self) -> u32;
    /// Posts through the safe API (SGEs checked against this side's keys).
    fn post(&mut self, wrs: &[SendWr<'_>]) -> Result<(), PostError>;
    /// Posts through the hot path.
    ///
    /// # Safety
    /// Every SGE must lie inside one of this side's registered slots.
    unsafe fn post_rdma(&mut self, op: RdmaOp, wrs: &[RdmaWr<'_>]) -> Result<(), PostError>;
    /// Posts one receive of `sge` (checked against this side's keys).
    fn post_recv(&mut self, wr_id: u64, sge: Sge) -> anyhow::Result<()>;
    /// Polls the side's CQ.
    fn poll(&mut self, out: &mut [WorkCompletion]) -> Result<usize, PollError>;
    /// WRs posted and not yet retired.
    fn outstanding(&self) -> u32;
    /// SQ producer index (WQEBBs).
    fn cur_post(&self) -> u32;
    /// DS count of the WQE whose first WQEBB is `wqebb`, read from the ring.
    fn wqe_ds(&self, wqebb: u32) -> u32;
    /// The side's CQ number (event mode).
    fn cqn(&self) -> u32 {
        0
    }
    /// Arms the side's CQ for its next completion event (event mode).
    fn arm(&mut self) -> anyhow::Result<()> {
        anyhow::bail!("this backend has no completion events")
    }
    /// Records a consumed completion event of the side's CQ.
    fn event_consumed(&mut self) {}
}
