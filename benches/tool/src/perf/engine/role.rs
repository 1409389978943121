//! Which sides of a run this process drives ([`Role`]): both, on one
//! device (loopback), or one of them with the other on a peer host
//! (perftest's server/client mode), and the stand-in for the side the
//! peer drives ([`RemoteSide`]).

use super::side::SideOps;
use bareverbs::cq::PollError;
use bareverbs::cqe::WorkCompletion;
use bareverbs::sq::{PostError, PostErrorKind, RdmaOp, RdmaWr, SendWr, Sge};

/// The sides of a run this process drives. Side A is always the client's
/// (the requester of a bandwidth test, the first to post in a latency
/// test), side B the server's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Role {
    /// Both sides, on one device (the NIC's loopback).
    #[default]
    Loopback,
    /// Side A; B is a peer host's (perftest's client: a host was named).
    Client,
    /// Side B; A is a peer host's (perftest's server: no host named).
    Server,
}

impl Role {
    /// Whether this process drives side A.
    pub fn drives_a(self) -> bool {
        self != Role::Server
    }
    /// Whether this process drives side B.
    pub fn drives_b(self) -> bool {
        self != Role::Client
    }
    /// Whether the other side is a peer host's.
    pub fn two_hosts(self) -> bool {
        self != Role::Loopback
    }
}

/// The side a peer host drives, as the engine sees it: its QP number (for
/// messages), nothing to poll or arm, and no WR may be posted on it.
#[derive(Debug)]
pub struct RemoteSide {
    /// The peer's QP number.
    pub qpn: u32,
}

impl SideOps for RemoteSide {
    fn qpn(&self) -> u32 {
        self.qpn
    }
    fn post(&mut self, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        Err(not_here(wrs.first().map_or(0, |w| w.sgl.len())))
    }
    unsafe fn post_rdma(&mut self, _op: RdmaOp, wrs: &[RdmaWr<'_>]) -> Result<(), PostError> {
        Err(not_here(wrs.first().map_or(0, |w| w.sgl.len())))
    }
    fn post_recv(&mut self, _wr_id: u64, _sge: Sge) -> anyhow::Result<()> {
        anyhow::bail!("posting a receive on the peer host's side")
    }
    fn poll(&mut self, _out: &mut [WorkCompletion]) -> Result<usize, PollError> {
        Ok(0)
    }
    fn outstanding(&self) -> u32 {
        0
    }
    fn cur_post(&self) -> u32 {
        0
    }
    fn wqe_ds(&self, _wqebb: u32) -> u32 {
        0
    }
    fn arm(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The refusal of a post on the peer's side: this process may not post
/// there, as a queue whose QP state forbids posting.
fn not_here(num: usize) -> PostError {
    PostError {
        index: 0,
        kind: PostErrorKind::TooManySges { num, max: None },
    }
}
