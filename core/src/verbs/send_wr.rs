//! The safe API's send work request [`SendWr`] and the WR-level rules the
//! send path applies to it before the ring sees it.

use super::LocalSge;
use crate::sizing::QpType;
use crate::sq::{PostErrorKind, SendFlags, SendOp, Sge, UdDest};

/// A send work request of the safe API (`ibv_send_wr`): its SGEs are
/// [`LocalSge`] tokens of live regions.
#[derive(Clone, Copy, Debug)]
pub struct SendWr<'w, 'm> {
    /// Caller's identifier, returned in the completion.
    pub wr_id: u64,
    /// Operation and its fields (remote address/rkey for RDMA and atomics).
    pub op: SendOp,
    /// Gather list (the inline source with [`SendFlags::INLINE`]).
    pub sgl: &'w [LocalSge<'m>],
    /// Flags.
    pub flags: SendFlags,
    /// UD destination (UD QPs only).
    pub ud: Option<UdDest<'w>>,
}

impl<'w, 'm> SendWr<'w, 'm> {
    /// A WR with no flags.
    pub const fn new(wr_id: u64, op: SendOp, sgl: &'w [LocalSge<'m>]) -> Self {
        SendWr {
            wr_id,
            op,
            sgl,
            flags: SendFlags::empty(),
            ud: None,
        }
    }
    /// The same WR, signaled (generates a completion on success).
    ///
    /// It returns the changed WR and leaves `self` as it was:
    ///
    /// ```
    /// use bareverbs::sq::{SendFlags, SendOp};
    /// use bareverbs::verbs::SendWr;
    /// let wr = SendWr::new(1, SendOp::Send, &[]);
    /// let wr = wr.signaled();
    /// assert!(wr.flags.contains(SendFlags::SIGNALED));
    /// ```
    ///
    /// so dropping the result is refused (the WR posted would complete
    /// silently, and a poll loop waiting for it would wait forever):
    ///
    /// ```compile_fail
    /// #![deny(unused_must_use)]
    /// use bareverbs::sq::SendOp;
    /// use bareverbs::verbs::SendWr;
    /// let wr = SendWr::new(1, SendOp::Send, &[]);
    /// wr.signaled();
    /// ```
    #[must_use = "returns the changed value; dropping it discards the change"]
    pub const fn signaled(mut self) -> Self {
        self.flags = self.flags.union(SendFlags::SIGNALED);
        self
    }
    /// The same WR with `flags` added.
    #[must_use = "returns the changed value; dropping it discards the change"]
    pub const fn with_flags(mut self, flags: SendFlags) -> Self {
        self.flags = self.flags.union(flags);
        self
    }
    /// The same WR with a UD destination.
    #[must_use = "returns the changed value; dropping it discards the change"]
    pub const fn with_ud(mut self, ud: UdDest<'w>) -> Self {
        self.ud = Some(ud);
        self
    }
}

/// WR-level rules of the safe send path: no window binds or local
/// invalidation (they change what keys reach), and an atomic's first SGE
/// holds the 8-byte result.
pub(super) fn check_send(wr: &SendWr<'_, '_>, qp_type: QpType) -> Result<(), PostErrorKind> {
    if matches!(wr.op, SendOp::BindMw { .. } | SendOp::LocalInv { .. }) {
        return Err(PostErrorKind::OpNotAllowed {
            op: wr.op.name(),
            qp_type,
        });
    }
    let atomic = matches!(wr.op, SendOp::CompSwap { .. } | SendOp::FetchAdd { .. });
    if atomic && wr.sgl.first().is_none_or(|s| s.sge.length < 8) {
        return Err(PostErrorKind::SgeOutOfBounds { sge: 0 });
    }
    Ok(())
}

/// SGE `j` of a send WR for the ring: its region is in the QP's
/// protection domain `domain` (one compare of a field of the token); the
/// device writes only into LOCAL_WRITE regions (READ destinations, atomic
/// results); an inline source becomes the CPU address of its bytes inside
/// the region's buffer.
pub(super) fn send_sge(
    wr: &SendWr<'_, '_>,
    j: usize,
    s: &LocalSge<'_>,
    domain: u64,
) -> Result<Sge, PostErrorKind> {
    if s.domain != domain {
        return Err(PostErrorKind::ForeignSge { sge: j });
    }
    let writes = matches!(
        wr.op,
        SendOp::Read { .. } | SendOp::CompSwap { .. } | SendOp::FetchAdd { .. }
    );
    if writes && s.sge.length != 0 && !s.region.access().allows(crate::mr::Access::LOCAL_WRITE) {
        return Err(PostErrorKind::SgeOutOfBounds { sge: j });
    }
    if wr.flags.contains(SendFlags::INLINE) {
        let p = s
            .region
            .cpu_of(&s.sge)
            .ok_or(PostErrorKind::InlineNotReadable { sge: j })?;
        return Ok(Sge {
            addr: p.as_ptr().expose_provenance() as u64,
            ..s.sge
        });
    }
    Ok(s.sge)
}

impl super::gather::Gathers for SendWr<'_, '_> {
    fn sgl(&self) -> &[LocalSge<'_>] {
        self.sgl
    }
}
