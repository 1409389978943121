//! Sizing rejections: the stage, the component and the limit that refused
//! a request ([`SizingError`]) and its one-line message.

use core::fmt;

use super::{EINVAL, ENOMEM};

/// Which sizing stage rejected a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stage {
    /// Send queue ([ref §3.3, §3.4](crate::reference)).
    Sq,
    /// Receive queue ([ref §3.5](crate::reference)).
    Rq,
    /// Completion queue ([ref §3.7](crate::reference)) and the CQ-covers-outstanding rule.
    Cq,
    /// Shared receive queue ([ref §3.8](crate::reference)).
    Srq,
}

impl Stage {
    /// Lower-case name as in the vectors' `fail_stage` column (`sq`, `rq`, `cq`, `srq`).
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Sq => "sq",
            Stage::Rq => "rq",
            Stage::Cq => "cq",
            Stage::Srq => "srq",
        }
    }
}

/// Which component rejects the request (the vectors' `rejected_by` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectedBy {
    /// The userspace provider's own checks (rdma-core mlx5).
    Provider,
    /// The kernel / firmware limits (`mlx5_ib`), modelled from device caps.
    Kernel,
}

impl RejectedBy {
    /// Name as in the vectors (`provider`, `kernel-model`).
    pub const fn name(self) -> &'static str {
        match self {
            RejectedBy::Provider => "provider",
            RejectedBy::Kernel => "kernel-model",
        }
    }
}

/// The limit a request exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Limit {
    /// `max_send_sge` above the gather entries left in a send descriptor
    /// ([ref §3.3](crate::reference) step 4).
    MaxSendSge,
    /// Send WQE (with inline data / SGEs) larger than `max_sq_desc_sz`
    /// ([ref §3.3](crate::reference) step 6, §3.4 step 2).
    MaxSqDescSz,
    /// `max_send_wr > 0x7fffffff / max_sq_desc_sz` (overflow guard, [ref §3.4](crate::reference)
    /// step 4).
    MaxSendWrOverflow,
    /// SQ WQEBB count above `max_send_wqebb` ([ref §3.4](crate::reference) step 6).
    MaxSendWqebb,
    /// `max_recv_wr` above the device's `max_recv_wr` ([ref §3.5](crate::reference) step 2).
    MaxRecvWr,
    /// Receive WQE larger than `max_rq_desc_sz` ([ref §3.5](crate::reference) step 3).
    MaxRqDescSz,
    /// CQ of 0 entries requested ([ref §3.7](crate::reference)).
    CqeZero,
    /// Rounded CQ entries above the provider's 2^24 limit ([ref §3.7](crate::reference)).
    ProviderMaxCqe,
    /// CQ buffer above `INT_MAX` bytes (ENOMEM) ([ref §3.7](crate::reference)).
    CqBufBytes,
    /// Rounded CQ entries above the device's `max_cqe` ([ref §3.7](crate::reference), kernel).
    MaxCqe,
    /// SRQ `max_wr` above `max_srq_recv_wr` ([ref §3.8](crate::reference) step 1).
    MaxSrqRecvWr,
    /// SRQ `max_sge` above `max_rq_desc_sz / 16` ([ref §3.8](crate::reference) step 1).
    MaxSrqSge,
    /// SRQ WQE size above the device's `max_recv_wr` (provider quirk, [ref §3.8](crate::reference)
    /// step 3).
    SrqWqeSize,
    /// Kernel: SRQ `max_wr` (= srq.max − 1) not below `max_srq_recv_wr`.
    KernelSrqWr,
    /// Kernel: SRQ `max_sge` (= max_gs) above `max_rq_desc_sz / 16`.
    KernelSrqSge,
    /// A CQ's usable entries are fewer than the WRs that may be outstanding on it.
    CqCoverage,
    /// A derived count or size does not fit the 32-bit field that holds it
    /// (e.g. an RQ of more than 2^31 WQEs, or a receive WQE above 2^31
    /// bytes, from caps near `u32::MAX`): refused instead of wrapping.
    SizeOverflow,
    /// `DeviceCaps::page_size` is not a power of two (0 included): queue
    /// allocations cannot be aligned to it.
    PageSize,
}

impl Limit {
    /// Short snake_case name (used in JSON output).
    pub const fn name(self) -> &'static str {
        match self {
            Limit::MaxSendSge => "max_send_sge",
            Limit::MaxSqDescSz => "max_sq_desc_sz",
            Limit::MaxSendWrOverflow => "max_send_wr_overflow",
            Limit::MaxSendWqebb => "max_send_wqebb",
            Limit::MaxRecvWr => "max_recv_wr",
            Limit::MaxRqDescSz => "max_rq_desc_sz",
            Limit::CqeZero => "cqe_zero",
            Limit::ProviderMaxCqe => "provider_max_cqe",
            Limit::CqBufBytes => "cq_buf_bytes",
            Limit::MaxCqe => "max_cqe",
            Limit::MaxSrqRecvWr => "max_srq_recv_wr",
            Limit::MaxSrqSge => "max_srq_sge",
            Limit::SrqWqeSize => "srq_wqe_size",
            Limit::KernelSrqWr => "kernel_srq_max_wr",
            Limit::KernelSrqSge => "kernel_srq_max_sge",
            Limit::CqCoverage => "cq_coverage",
            Limit::SizeOverflow => "size_overflow",
            Limit::PageSize => "page_size",
        }
    }
}

/// Extra numbers an error carries so that its message (and the vector
/// columns that are filled even on error rows) can be reproduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Detail {
    /// Nothing more.
    None,
    /// A QP sizing error: the SQ overhead (always computed, [ref §3.2](crate::reference)), the
    /// send WQE slot size if it was computed before the failure (else 0), and
    /// the requested `max_send_wr` / `max_recv_wr`.
    Qp {
        /// Per-WQE SQ overhead in bytes.
        sq_overhead: u32,
        /// Send WQE slot bytes (0 when the failure happened before it was known).
        send_wqe_size: u32,
        /// Requested `max_send_wr`.
        max_send_wr: u32,
        /// Requested `max_recv_wr`.
        max_recv_wr: u32,
    },
    /// A CQ-coverage error: the outstanding send and receive WRs.
    Outstanding {
        /// Send WRs that may be outstanding (sum of SQ `max_post`).
        send: u32,
        /// Receive WRs that may be outstanding (sum of RQ `max_post`).
        recv: u32,
    },
}

/// A sizing rejection: which stage, which limit, what was asked, what is
/// allowed. `Copy`, allocation-free; [`fmt::Display`] explains it in one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SizingError {
    /// The stage that failed.
    pub stage: Stage,
    /// The limit that was exceeded.
    pub limit: Limit,
    /// The requested (or derived) value that exceeded it.
    pub requested: u64,
    /// The largest allowed value.
    pub allowed: u64,
    /// Provider or kernel.
    pub rejected_by: RejectedBy,
    /// Context for the message / vector columns.
    pub detail: Detail,
}

impl SizingError {
    pub(super) const fn new(stage: Stage, limit: Limit, requested: u64, allowed: u64) -> Self {
        SizingError {
            stage,
            limit,
            requested,
            allowed,
            rejected_by: RejectedBy::Provider,
            detail: Detail::None,
        }
    }

    pub(super) const fn kernel(mut self) -> Self {
        self.rejected_by = RejectedBy::Kernel;
        self
    }

    pub(super) const fn with_detail(mut self, detail: Detail) -> Self {
        self.detail = detail;
        self
    }

    /// The errno the provider / kernel would set: EINVAL (22) for everything
    /// except a CQ buffer above `INT_MAX` bytes, which is ENOMEM (12)
    /// ([ref §3.7](crate::reference)).
    pub const fn errno(&self) -> i32 {
        match self.limit {
            Limit::CqBufBytes => ENOMEM,
            _ => EINVAL,
        }
    }

    /// Name of the errno (`EINVAL` / `ENOMEM`).
    pub const fn errno_name(&self) -> &'static str {
        match self.errno() {
            ENOMEM => "ENOMEM",
            _ => "EINVAL",
        }
    }

    /// SQ overhead carried by a QP error (0 for other errors).
    pub const fn sq_overhead(&self) -> u32 {
        match self.detail {
            Detail::Qp { sq_overhead, .. } => sq_overhead,
            _ => 0,
        }
    }

    /// Send WQE size carried by a QP error (0 if not computed).
    pub const fn send_wqe_size(&self) -> u32 {
        match self.detail {
            Detail::Qp { send_wqe_size, .. } => send_wqe_size,
            _ => 0,
        }
    }
}

impl fmt::Display for SizingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (r, a) = (self.requested, self.allowed);
        let (wr, wqe, ovh) = match self.detail {
            Detail::Qp {
                max_send_wr,
                send_wqe_size,
                sq_overhead,
                ..
            } => (max_send_wr, send_wqe_size, sq_overhead),
            _ => (0, 0, 0),
        };
        match self.limit {
            Limit::MaxSendSge => write!(
                f,
                "SQ requests {r} SGEs but a {ovh}-byte WQE overhead leaves room for {a} in the \
                 device's send descriptor"
            ),
            Limit::MaxSqDescSz => write!(
                f,
                "SQ needs {r}-byte WQEs ({ovh}-byte overhead + SGEs/inline); the device allows {a}"
            ),
            Limit::MaxSendWrOverflow => write!(
                f,
                "SQ requests {r} WRs; the provider's overflow guard allows {a}"
            ),
            Limit::MaxSendWqebb => write!(
                f,
                "SQ needs {r} WQEBBs ({wr} WRs × {wqe}-byte WQEs); the device allows {a}"
            ),
            Limit::MaxRecvWr => write!(f, "RQ requests {r} WRs; the device allows {a}"),
            Limit::MaxRqDescSz => {
                write!(f, "RQ needs {r}-byte receive WQEs; the device allows {a}")
            }
            Limit::CqeZero => write!(f, "CQ of 0 entries requested; at least 1 is needed"),
            Limit::ProviderMaxCqe => write!(f, "CQ needs {r} entries; the provider allows {a}"),
            Limit::CqBufBytes => write!(f, "CQ buffer needs {r} bytes; the provider allows {a}"),
            Limit::MaxCqe => write!(f, "CQ needs {r} entries; the device allows {a}"),
            Limit::MaxSrqRecvWr => write!(f, "SRQ requests {r} WRs; the device allows {a}"),
            Limit::MaxSrqSge => write!(f, "SRQ requests {r} SGEs; the device allows {a}"),
            Limit::SrqWqeSize => write!(
                f,
                "SRQ needs {r}-byte WQEs; the provider compares that with max_recv_wr {a}"
            ),
            Limit::KernelSrqWr => write!(
                f,
                "SRQ needs {r} WQEs in the kernel command; the device allows fewer than {a}"
            ),
            Limit::KernelSrqSge => write!(f, "SRQ WQEs hold {r} SGEs; the kernel allows {a}"),
            Limit::SizeOverflow => write!(
                f,
                "a derived size of {r} exceeds the largest representable value {a}"
            ),
            Limit::PageSize => write!(f, "page size {r} is not a power of two"),
            Limit::CqCoverage => {
                let (s, rc) = match self.detail {
                    Detail::Outstanding { send, recv } => (send, recv),
                    _ => (0, 0),
                };
                write!(
                    f,
                    "CQ with {a} usable entries cannot hold {s} send + {rc} receive outstanding WRs"
                )
            }
        }
    }
}

impl core::error::Error for SizingError {}
