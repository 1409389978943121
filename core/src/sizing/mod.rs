//! Queue sizing ([ref §3](crate::reference)): device capabilities + requested capacities → the
//! exact geometry the mlx5 provider gives the hardware, or a typed error naming
//! the limit that was exceeded.
//!
//! Everything here is a `const fn` over plain integers, so a capacity can be
//! checked at compile time (see [`QpGeometry`]). Device limits are always
//! parameters ([`DeviceCaps`]); the only constants are the fixed byte sizes of
//! mlx5 segments ([ref §1.5](crate::reference)) and the provider's own software limits.
//!
//! | item | ref |
//! | --- | --- |
//! | [`DeviceCaps`] | §3.1, §3.11 |
//! | [`sq_overhead`] | §3.2 |
//! | [`send_wqe_size`] | §3.3 |
//! | [`sq_layout`] | §3.4 |
//! | [`rq_layout`] | §3.5 |
//! | [`qp_layout`] | §3.6 |
//! | [`cq_layout`] | §3.7 |
//! | [`srq_layout`] | §3.8 |
//! | [`check_cq_covers`], [`qp_budget`] | §3.7, §4.1 |
//!
//! One concept a file: device limits (`caps`), QP types (`qp_type`), the
//! send-op set (`ops`), rejections (`error`), integer helpers (`math`), the
//! QP request (`qp_caps`), SQ / RQ / QP / CQ / SRQ sizing (`sq`, `rq`, `qp`,
//! `cq`, `srq`), the CQ-covers-outstanding rule (`coverage`), memory budgets
//! (`budget`) and compile-time geometry (`geometry`). The files are private;
//! every item is re-exported here, so `bareverbs::sizing::X` is the path.

/// The provider returns `EINVAL` for every sizing rejection except the CQ
/// buffer overflow, which is `ENOMEM` ([ref §3.4, §3.7](crate::reference)).
pub use crate::errno::{EINVAL, ENOMEM};

/// One send WQE basic block (WQEBB) in bytes, as sizing computes with it.
const SEND_WQE_BB: u32 = crate::wqe::SEND_WQE_BB as u32;
/// Control / data / inline-header segment granule in bytes ([ref §1.5](crate::reference)).
const SEG: u32 = crate::wqe::DS_BYTES as u32;
/// Inline data segment header (byte count) in bytes ([ref §3.3, §3.4](crate::reference)).
const INL_HDR: u32 = 4;

mod budget;
mod caps;
mod coverage;
mod cq;
mod error;
mod geometry;
mod math;
mod ops;
mod qp;
mod qp_caps;
mod qp_type;
mod rq;
mod sq;
mod srq;

pub use budget::{node_budget, qp_budget, send_ops_saving, OpsSaving, QpBudget};
pub use caps::DeviceCaps;
pub use coverage::{check_cq_covers, cqe_for_outstanding, CqAttach};
pub use cq::{cq_layout, cq_provider_layout, CqLayout, PROVIDER_MAX_CQ_BUF, PROVIDER_MAX_NCQE};
pub use error::{Detail, Limit, RejectedBy, SizingError, Stage};
pub use geometry::{ConstCaps, DefaultCaps, QpGeometry, SqGeometry, CLASSIC_OPS};
pub use math::{align_up, ilog32, rup2};
pub use ops::SendOps;
pub use qp::{qp_layout, QpLayout};
pub use qp_caps::QpCaps;
pub use qp_type::{QpType, ServiceType};
pub use rq::{rq_layout, RqLayout};
pub use sq::{send_wqe_size, sq_layout, sq_overhead, SqLayout};
pub use srq::{srq_layout, srq_provider_layout, SrqLayout};

#[cfg(test)]
mod tests;
