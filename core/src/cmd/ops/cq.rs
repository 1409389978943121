//! Completion queues: CREATE_CQ ([ref §7.10](crate::reference)).

use super::pas::{put_pas, PAS_OFFSET};
use super::{hdr, Req, HDR_LEN};
use crate::cmd::layout::cqc;
use crate::cmd::op;

/// Offset of the cqc in create_cq_in. [ref §7.10](crate::reference).
pub const CQC: usize = 0x10;

/// CREATE_CQ parameters. [ref §7.10](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqParams {
    /// log2 number of CQEs.
    pub log_cq_size: u8,
    /// 0 = 64-byte CQEs, 1 = 128-byte.
    pub cqe_sz: u8,
    /// UAR index used for arming.
    pub uar_page: u32,
    /// Completion EQ number.
    pub c_eqn: u8,
    /// Doorbell record DMA address.
    pub dbr_addr: u64,
    /// DMA address of the first 4 KiB page of the ring.
    pub pages_iova: u64,
    /// Number of 4 KiB pages.
    pub npages: usize,
}

/// CREATE_CQ (0x400); output cqn at `dw2[23:0]`. [ref §7.10](crate::reference).
pub fn create_cq(b: &mut [u8], p: &CqParams) -> Req {
    let in_len = PAS_OFFSET + 8 * p.npages;
    hdr(b, op::CREATE_CQ, 0, in_len);
    cqc::CQE_SZ.set(b, CQC, p.cqe_sz as u32);
    cqc::LOG_CQ_SIZE.set(b, CQC, p.log_cq_size as u32);
    cqc::UAR_PAGE.set(b, CQC, p.uar_page);
    cqc::C_EQN.set(b, CQC, p.c_eqn as u32);
    cqc::LOG_PAGE_SIZE.set(b, CQC, 0);
    cqc::DBR_ADDR.set(b, CQC, p.dbr_addr);
    put_pas(b, PAS_OFFSET, p.pages_iova, p.npages, 0);
    Req {
        opcode: op::CREATE_CQ,
        in_len,
        out_len: HDR_LEN,
    }
}
