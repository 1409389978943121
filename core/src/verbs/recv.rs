//! Receive work requests of the safe API: checked once, converted to the
//! ring-level form, and posted a few at a time (RQ and SRQ alike).

use super::LocalSge;
use crate::rq::{RecvError, RecvErrorKind};

/// A receive work request of the safe API (`ibv_recv_wr`): every SGE must
/// lie in a region with [`Access::LOCAL_WRITE`](super::Access::LOCAL_WRITE).
#[derive(Clone, Copy, Debug)]
pub struct RecvWr<'w, 'm> {
    /// Caller's identifier, returned in the completion.
    pub wr_id: u64,
    /// Scatter list.
    pub sgl: &'w [LocalSge<'m>],
}

impl<'w, 'm> RecvWr<'w, 'm> {
    /// A receive WR.
    pub const fn new(wr_id: u64, sgl: &'w [LocalSge<'m>]) -> Self {
        RecvWr { wr_id, sgl }
    }
}

impl super::gather::Gathers for RecvWr<'_, '_> {
    fn sgl(&self) -> &[LocalSge<'_>] {
        self.sgl
    }
}

/// Checks `wrs` (list length, every SGE in a LOCAL_WRITE region of the
/// queue's protection domain `domain`) and hands the WRs before the first
/// refused one, converted, to `post` a chunk at a time. `max_sge` is what
/// a too-long list is reported against. Returns the first refusal (ours or
/// `post`'s), with its index in `wrs`.
pub(crate) fn post_checked(
    wrs: &[RecvWr<'_, '_>],
    max_sge: u32,
    domain: u64,
    mut post: impl FnMut(&[crate::rq::RecvWr<'_>]) -> Result<(), RecvError>,
) -> Result<(), RecvError> {
    super::gather::post_chunked(
        wrs,
        |_| Ok(()),
        |_, j, s| {
            if s.domain != domain {
                Err(RecvErrorKind::ForeignSge { sge: j })
            } else if s.region.access().allows(crate::mr::Access::LOCAL_WRITE) {
                Ok(s.sge)
            } else {
                Err(RecvErrorKind::SgeOutOfBounds { sge: j })
            }
        },
        |num| RecvErrorKind::TooManySges {
            num,
            max: Some(max_sge),
        },
        |chunk, lists| {
            let raw: heapless::Vec<crate::rq::RecvWr<'_>, { super::gather::CHUNK }> = chunk
                .iter()
                .zip(lists)
                .map(|(wr, sgl)| crate::rq::RecvWr {
                    wr_id: wr.wr_id,
                    sgl,
                })
                .collect();
            post(&raw)
        },
        |index, kind| RecvError { index, kind },
        |e, by| RecvError {
            index: e.index + by,
            kind: e.kind,
        },
    )
}
