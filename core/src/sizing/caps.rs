//! The device limits sizing takes as a parameter ([ref §3.1, §3.11](crate::reference)):
//! [`DeviceCaps`] and the fake device of the vector files.

/// Device limits that sizing depends on ([ref §3.1](crate::reference), names of the underlying
/// HCA caps in §3.11). Every sizing function takes these as a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceCaps {
    /// Max send WQE bytes (`cap.max_wqe_sz_sq`, [ref §3.1](crate::reference)).
    pub max_sq_desc_sz: u32,
    /// Max receive WQE bytes (`cap.max_wqe_sz_rq`, [ref §3.1](crate::reference)).
    pub max_rq_desc_sz: u32,
    /// Max WQEBBs per SQ (`1 << cap.log_max_qp_sz`, [ref §3.1](crate::reference)).
    pub max_send_wqebb: u32,
    /// Max receive WQEs per RQ (`1 << cap.log_max_qp_sz`, [ref §3.1](crate::reference)).
    pub max_recv_wr: u32,
    /// Max SRQ WQEs (`1 << cap.log_max_srq_sz`, [ref §3.1](crate::reference)).
    pub max_srq_recv_wr: u32,
    /// Device `max_sge` as `ibv_query_device` reports it (the mlx5 kernel
    /// rule, [`crate::cmd::caps::HcaCaps::max_sge`], [ref §3.10](crate::reference)).
    /// Informational for sizing: the provider's sizing does not check it (it
    /// checks the descriptor sizes instead); the tool refuses SGE counts
    /// above it.
    pub max_sge: u32,
    /// Max CQ **entries** (not a log2, not `entries − 1`): `1 << cap.log_max_cq_sz`
    /// ([ref §3.7, §3.11](crate::reference)). A CQ whose rounded-up entry count `ncqe` exceeds this
    /// is rejected by the kernel. `ibv_query_device` reports `max_cqe − 1`.
    pub max_cqe: u32,
    /// BlueFlame register size in bytes (`1 << cap.log_bf_reg_size`; 0 = no
    /// BlueFlame) ([ref §3.1, §4.2](crate::reference)).
    pub bf_reg_size: u32,
    /// CQE version (0 = QPN in CQE, 1 = user index) ([ref §3.1, §3.11](crate::reference)).
    pub cqe_version: u32,
    /// Host page size used to align queue allocations ([ref §3.6, §3.7](crate::reference)).
    pub page_size: u32,
    /// Cache-line size: one doorbell record per QP/CQ/SRQ occupies one cache
    /// line of the doorbell page ([ref §4.1](crate::reference)).
    pub cache_line_size: u32,
}

impl DeviceCaps {
    /// The fake device of `conformance/vectors/README.md`: 1024-byte send and
    /// 512-byte receive descriptors (kernel `max_sge` 30), 2^15 WQEBBs / receive WQEs / SRQ WQEs,
    /// 512-byte BlueFlame register, 2^22 CQ entries, 4 KiB pages, CQE version 1.
    pub const DEFAULT: DeviceCaps = DeviceCaps {
        max_sq_desc_sz: 1024,
        max_rq_desc_sz: 512,
        max_send_wqebb: 32768,
        max_recv_wr: 32768,
        max_srq_recv_wr: 32768,
        max_sge: 30,
        max_cqe: 1 << 22,
        bf_reg_size: 512,
        cqe_version: 1,
        page_size: 4096,
        cache_line_size: 64,
    };
}

impl Default for DeviceCaps {
    fn default() -> Self {
        Self::DEFAULT
    }
}
