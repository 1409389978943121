//! Event queues: CREATE_EQ and DESTROY_EQ ([ref §7.9](crate::reference)).
//! The EQ itself is [`crate::cmd::eq`].

use super::pas::{put_pas, PAS_OFFSET};
use super::{hdr, simple, Req, HDR_LEN};
use crate::cmd::layout::{cmd_in, create_eq_in, eqc};
use crate::cmd::op;

/// Offset of the eqc in create_eq_in. [ref §7.9](crate::reference).
pub const EQC: usize = 0x10;

/// CREATE_EQ parameters. [ref §7.9](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EqParams {
    /// log2 number of EQEs.
    pub log_eq_size: u8,
    /// UAR used for the EQ doorbell.
    pub uar_page: u32,
    /// MSI-X vector.
    pub intr: u8,
    /// Event types 0–63 as bits (`1 << type`).
    pub event_bitmask: u64,
    /// DMA address of the first 4 KiB page of the ring.
    pub pages_iova: u64,
    /// Number of 4 KiB pages.
    pub npages: usize,
}

/// CREATE_EQ (0x301); output eq number at byte 0x0b. [ref §7.9](crate::reference).
pub fn create_eq(b: &mut [u8], p: &EqParams) -> Req {
    let in_len = PAS_OFFSET + 8 * p.npages;
    hdr(b, op::CREATE_EQ, 0, in_len);
    eqc::LOG_EQ_SIZE.set(b, EQC, p.log_eq_size as u32);
    eqc::UAR_PAGE.set(b, EQC, p.uar_page);
    eqc::INTR.set(b, EQC, p.intr as u32);
    eqc::LOG_PAGE_SIZE.set(b, EQC, 0);
    create_eq_in::EVENT_BITMASK.set(b, 0, p.event_bitmask);
    put_pas(b, PAS_OFFSET, p.pages_iova, p.npages, 0);
    Req {
        opcode: op::CREATE_EQ,
        in_len,
        out_len: HDR_LEN,
    }
}

/// CREATE_EQ output: eq number (byte 0x0b).
pub fn parse_create_eq(out: &[u8]) -> u8 {
    cmd_in::EQ_NUMBER.get(out, 0) as u8
}

/// DESTROY_EQ (0x302) of `eqn` (byte 0x0b).
pub fn destroy_eq(b: &mut [u8], eqn: u8) -> Req {
    let r = simple(b, op::DESTROY_EQ, 0);
    cmd_in::EQ_NUMBER.set(b, 0, eqn as u32);
    r
}
