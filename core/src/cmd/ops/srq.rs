//! Shared receive queues: CREATE_RMP, the form at ISSI 1, and the legacy
//! CREATE_SRQ of ISSI 0 (linux `mlx5_ifc.h` create_rmp_in, create_srq_in;
//! [ref §7.13](crate::reference)).

use super::pas::{put_pas, PAS_OFFSET};
use super::{hdr, Req, HDR_LEN};
use crate::cmd::layout::{create_rmp_in, rmpc, srqc, wq};
use crate::cmd::op;

/// Offset of the srqc in create_srq_in (linux `mlx5_ifc.h`
/// create_srq_in: after the 16-byte header; pas[] at 0x110).
pub const SRQC: usize = 0x10;

/// CREATE_SRQ parameters (srqc per linux `mlx5_ifc.h` srqc_bits:
/// log_srq_size `dw0[27:24]`, log_rq_stride `dw1[26:24]`, cqn `dw2[23:0]`,
/// log_page_size `dw4[29:24]`, pd `dw6[23:0]`, lwm `dw7[31:16]`, dbr_addr byte 0x28).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqParams {
    /// log2 number of WQEs.
    pub log_srq_size: u8,
    /// WQE shift − 4.
    pub log_rq_stride: u8,
    /// Protection domain.
    pub pd: u32,
    /// CQ (for XRC; 0 otherwise).
    pub cqn: u32,
    /// Limit watermark.
    pub lwm: u16,
    /// Doorbell record DMA address.
    pub dbr_addr: u64,
    /// DMA address of the first 4 KiB page.
    pub pages_iova: u64,
    /// Number of 4 KiB pages.
    pub npages: usize,
}

/// CREATE_SRQ (0x700); output srqn at `dw2[23:0]`.
pub fn create_srq(b: &mut [u8], p: &SrqParams) -> Req {
    let in_len = PAS_OFFSET + 8 * p.npages;
    hdr(b, op::CREATE_SRQ, 0, in_len);
    srqc::LOG_SRQ_SIZE.set(b, SRQC, p.log_srq_size as u32);
    srqc::LOG_RQ_STRIDE.set(b, SRQC, p.log_rq_stride as u32);
    srqc::CQN.set(b, SRQC, p.cqn);
    srqc::LOG_PAGE_SIZE.set(b, SRQC, 0);
    srqc::PD.set(b, SRQC, p.pd);
    srqc::LWM.set(b, SRQC, p.lwm as u32);
    srqc::DBR_ADDR.set(b, SRQC, p.dbr_addr);
    put_pas(b, PAS_OFFSET, p.pages_iova, p.npages, 0);
    Req {
        opcode: op::CREATE_SRQ,
        in_len,
        out_len: HDR_LEN,
    }
}

/// CREATE_RMP parameters: an SRQ as a receive memory pool whose `wq` is a
/// linked list of the SRQ WQE format. [ref §7.13](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmpParams {
    /// log2 number of WQEs (`wq.log_wq_sz`).
    pub log_wq_sz: u8,
    /// log2 of the WQE stride in bytes, absolute (`wq.log_wq_stride`).
    pub log_wq_stride: u8,
    /// Protection domain.
    pub pd: u32,
    /// Limit watermark (`wq.lwm`).
    pub lwm: u16,
    /// Doorbell record DMA address.
    pub dbr_addr: u64,
    /// DMA address of the first 4 KiB page.
    pub pages_iova: u64,
    /// Number of 4 KiB pages.
    pub npages: usize,
}

/// CREATE_RMP (0x90c): `rmpc.state` RDY, `wq.wq_type` linked list, the
/// ring in 4 KiB pages (`log_wq_pg_sz` 0); output `rmpn` at `dw2[23:0]`,
/// the number QPs name as their SRQ. [ref §7.13](crate::reference).
pub fn create_rmp(b: &mut [u8], p: &RmpParams) -> Req {
    let in_len = create_rmp_in::PAS + 8 * p.npages;
    hdr(b, op::CREATE_RMP, 0, in_len);
    rmpc::STATE.set(b, create_rmp_in::RMPC, rmpc::STATE_RDY);
    let w = create_rmp_in::WQ;
    wq::WQ_TYPE.set(b, w, wq::WQ_TYPE_LINKED_LIST);
    wq::LWM.set(b, w, p.lwm as u32);
    wq::PD.set(b, w, p.pd);
    wq::DBR_ADDR.set(b, w, p.dbr_addr);
    wq::LOG_WQ_STRIDE.set(b, w, p.log_wq_stride as u32);
    wq::LOG_WQ_PG_SZ.set(b, w, 0);
    wq::LOG_WQ_SZ.set(b, w, p.log_wq_sz as u32);
    put_pas(b, create_rmp_in::PAS, p.pages_iova, p.npages, 0);
    Req {
        opcode: op::CREATE_RMP,
        in_len,
        out_len: HDR_LEN,
    }
}
