//! Host-memory budgets ([ref §3.6, §3.7, §4.1](crate::reference)): what one QP
//! and a node of QPs cost ([`QpBudget`], [`node_budget`]) and the saving of a
//! narrower send-op set ([`OpsSaving`]).

use super::caps::DeviceCaps;
use super::cq::CqLayout;
use super::error::SizingError;
use super::ops::SendOps;
use super::qp::{qp_layout, QpLayout};
use super::qp_caps::QpCaps;

/// Host memory one QP costs ([ref §3.6, §3.7, §4.1](crate::reference)).
///
/// Doorbell records: the provider carves doorbell pages into one cache-line
/// (`caps.cache_line_size`, 64 B) record per QP and per CQ ([ref §4.1](crate::reference)), so each
/// QP costs one record and each CQ one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QpBudget {
    /// Page-aligned QP queue buffer(s) ([`QpLayout::alloc_bytes`]).
    pub queue_bytes: u64,
    /// The QP's doorbell record (one cache line).
    pub qp_doorbell_bytes: u64,
    /// This QP's share of its CQ: CQ alloc bytes + CQ doorbell record, divided
    /// (rounding up) by the number of QPs sharing the CQ; 0 without a CQ.
    pub cq_share_bytes: u64,
    /// Sum of the above.
    pub total_bytes: u64,
}

/// Bytes per QP: queue buffer + one doorbell record + the share of a CQ that
/// `qps_per_cq` QPs share (send and receive completions in the same CQ).
pub const fn qp_budget(
    layout: &QpLayout,
    cq: Option<&CqLayout>,
    qps_per_cq: u32,
    caps: &DeviceCaps,
) -> QpBudget {
    let db = caps.cache_line_size as u64;
    let share = match cq {
        Some(c) => {
            let n = if qps_per_cq == 0 { 1 } else { qps_per_cq } as u64;
            (c.alloc_bytes + db).div_ceil(n)
        }
        None => 0,
    };
    QpBudget {
        queue_bytes: layout.alloc_bytes,
        qp_doorbell_bytes: db,
        cq_share_bytes: share,
        total_bytes: layout.alloc_bytes + db + share,
    }
}

/// Bytes for `qps` identical QPs on a node, each group of `qps_per_cq` QPs
/// sharing one CQ (if `cq` is given): `qps · (queue + doorbell)` +
/// `ceil(qps / qps_per_cq) · (CQ alloc + CQ doorbell)`.
pub const fn node_budget(
    layout: &QpLayout,
    cq: Option<&CqLayout>,
    qps_per_cq: u32,
    qps: u64,
    caps: &DeviceCaps,
) -> u64 {
    let db = caps.cache_line_size as u64;
    let per_qp = layout.alloc_bytes + db;
    let cqs = match cq {
        Some(c) => {
            let n = if qps_per_cq == 0 { 1 } else { qps_per_cq } as u64;
            qps.div_ceil(n) * (c.alloc_bytes + db)
        }
        None => 0,
    };
    qps * per_qp + cqs
}

/// Queue bytes (page-aligned allocation) under the classic op set and under
/// `ops`, for the same request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpsSaving {
    /// `alloc_bytes` with the classic op set ([`SendOps::classic`]).
    pub classic_bytes: u64,
    /// `alloc_bytes` with the narrower set.
    pub narrow_bytes: u64,
}

impl OpsSaving {
    /// Bytes saved per QP (`classic − narrow`; negative if `ops` is wider).
    pub const fn saved(&self) -> i64 {
        self.classic_bytes as i64 - self.narrow_bytes as i64
    }
}

/// The saving from declaring a narrower send-op set ([ref §3.2](crate::reference)): both layouts
/// must be valid; returns the first error otherwise (classic first).
pub const fn send_ops_saving(
    req: &QpCaps,
    ops: SendOps,
    caps: &DeviceCaps,
) -> Result<OpsSaving, SizingError> {
    let mut classic = *req;
    classic.send_ops = None;
    let c = match qp_layout(&classic, caps) {
        Ok(l) => l,
        Err(e) => return Err(e),
    };
    let n = match qp_layout(&req.ops(ops), caps) {
        Ok(l) => l,
        Err(e) => return Err(e),
    };
    Ok(OpsSaving {
        classic_bytes: c.alloc_bytes,
        narrow_bytes: n.alloc_bytes,
    })
}
