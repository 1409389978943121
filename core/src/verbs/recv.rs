//! Receive work requests of the safe API: checked once, converted to the
//! ring-level form, and posted a few at a time (RQ and SRQ alike).

use super::LocalSge;
use crate::rq::{RecvError, RecvErrorKind};
use crate::sq::Sge;

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

/// Largest scatter list per WR the safe API carries (the device's
/// `max_sge` is below this on every ConnectX).
const MAX_SGE: usize = 64;
/// WRs converted per call of the raw post.
const CHUNK: usize = 4;

/// Checks `wrs` (scatter list length, every SGE in a LOCAL_WRITE region)
/// and hands the WRs before the first refused one, converted, to `post` a
/// few at a time. `max_sge` is what a too-long list is reported against.
/// Returns the first refusal (ours or `post`'s), with its index in `wrs`.
pub(crate) fn post_checked(
    wrs: &[RecvWr<'_, '_>],
    max_sge: u32,
    mut post: impl FnMut(&[crate::rq::RecvWr<'_>]) -> Result<(), RecvError>,
) -> Result<(), RecvError> {
    let mut done = 0;
    while done < wrs.len() {
        let n = (wrs.len() - done).min(CHUNK);
        let mut sges = [[Sge::default(); MAX_SGE]; CHUNK];
        let mut bad = None;
        'wrs: for (k, wr) in wrs[done..done + n].iter().enumerate() {
            if wr.sgl.len() > MAX_SGE {
                bad = Some(RecvError {
                    index: done + k,
                    kind: RecvErrorKind::TooManySges {
                        num: wr.sgl.len(),
                        max: Some(max_sge),
                    },
                });
                break;
            }
            for (j, s) in wr.sgl.iter().enumerate() {
                if !s.region.access().allows(crate::mr::Access::LOCAL_WRITE) {
                    bad = Some(RecvError {
                        index: done + k,
                        kind: RecvErrorKind::SgeOutOfBounds { sge: j },
                    });
                    break 'wrs;
                }
                sges[k][j] = s.sge;
            }
        }
        let good = bad.map_or(n, |e| e.index - done);
        let mut raw = [crate::rq::RecvWr { wr_id: 0, sgl: &[] }; CHUNK];
        for (k, wr) in wrs[done..done + good].iter().enumerate() {
            raw[k] = crate::rq::RecvWr {
                wr_id: wr.wr_id,
                sgl: &sges[k][..wr.sgl.len()],
            };
        }
        post(&raw[..good]).map_err(|e| RecvError {
            index: e.index + done,
            kind: e.kind,
        })?;
        if let Some(e) = bad {
            return Err(e);
        }
        done += n;
    }
    Ok(())
}
