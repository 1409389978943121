//! Typed builders and parsers for each command ([ref §6.3, §7.5–§7.12](crate::reference)).
//!
//! A builder zeroes the front of an input buffer, writes the header and
//! fields, and returns a [`Req`] naming the opcode and the input and output
//! lengths. A parser takes the output bytes (the status has already been
//! checked by [`super::queue::CmdQueue::complete`]) and never panics.
//!
//! One file per command family:
//!
//! | module | commands |
//! | --- | --- |
//! | `hca` | ENABLE_HCA, DISABLE_HCA, INIT_HCA, TEARDOWN_HCA |
//! | `issi` | QUERY_ISSI, SET_ISSI, the ISSI choice |
//! | `pages` | QUERY_PAGES, MANAGE_PAGES |
//! | `caps` | QUERY_HCA_CAP, SET_HCA_CAP, RoCE capability bits |
//! | `register` | ACCESS_REG: HOST_ENDIANNESS, PMTU |
//! | `pd` | ALLOC/DEALLOC_UAR, ALLOC/DEALLOC_PD |
//! | `obj` | object numbers of outputs, destroy-style commands |
//! | `pas` | the `pas[]` page lists of the CREATE inputs |
//! | `mkey` | CREATE_MKEY and the MTT page geometry |
//! | `eq` | CREATE_EQ, DESTROY_EQ |
//! | `cq` | CREATE_CQ |
//! | `qp` | hardware QP state, CREATE_QP, 2ERR_QP, 2RST_QP, QUERY_QP |
//! | `qp_modify` | RST2INIT_QP, INIT2RTR_QP, RTR2RTS_QP and the address path |
//! | `srq` | CREATE_RMP (ISSI 1), CREATE_SRQ (ISSI 0) |
//! | `roce_addr` | SET_ROCE_ADDRESS, QUERY_ROCE_ADDRESS, GIDs of a port |
//! | `vport` | QUERY_VPORT_STATE, QUERY/MODIFY_NIC_VPORT_CONTEXT |
//! | `hca_vport` | QUERY_HCA_VPORT_CONTEXT |
//! | `adapter` | QUERY_ADAPTER |
//! | `mtu` | IB MTU enum, RoCE MTU of a netdev or hardware MTU |
//!
//! Every item is re-exported here, so `cmd::ops::X` is the path to use; the
//! field positions are [`super::layout`]'s.

use super::bits::put16;
use super::layout::cmd_in;

mod adapter;
mod caps;
mod cq;
mod eq;
mod hca;
mod hca_vport;
mod issi;
mod mkey;
mod mtu;
mod obj;
mod pages;
mod pas;
mod pd;
mod qp;
mod qp_modify;
mod register;
mod roce_addr;
mod srq;
mod vport;

pub use adapter::*;
pub use caps::*;
pub use cq::*;
pub use eq::*;
pub use hca::*;
pub use hca_vport::*;
pub use issi::*;
pub use mkey::*;
pub use mtu::*;
pub use obj::*;
pub use pages::*;
pub use pas::*;
pub use pd::*;
pub use qp::*;
pub use qp_modify::*;
pub use register::*;
pub use roce_addr::*;
pub use srq::*;
pub use vport::*;

/// A built command: opcode, input bytes to send, output bytes to expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Req {
    /// Opcode ([ref §7.8](crate::reference)).
    pub opcode: u16,
    /// Input length in bytes (header included).
    pub in_len: usize,
    /// Output length in bytes (header included).
    pub out_len: usize,
}

/// Length of a header-only input or output ([ref §7.5](crate::reference)).
pub const HDR_LEN: usize = 0x10;

/// Zeroes the first `in_len` bytes and writes `opcode` and `op_mod`
/// ([`cmd_in::OPCODE`], [`cmd_in::OP_MOD`]) as the two 16-bit stores at
/// bytes 0 and 6, so that a buffer shorter than a dword still gets its
/// opcode.
fn hdr(b: &mut [u8], opcode: u16, op_mod: u16, in_len: usize) {
    let n = in_len.min(b.len());
    b[..n].fill(0);
    put16(b, cmd_in::OPCODE.dw * 4, opcode);
    put16(b, cmd_in::OP_MOD.dw * 4 + 2, op_mod);
}

/// A header-only command of `opcode`/`op_mod` ([`HDR_LEN`] in and out).
fn simple(b: &mut [u8], opcode: u16, op_mod: u16) -> Req {
    hdr(b, opcode, op_mod, HDR_LEN);
    Req {
        opcode,
        in_len: HDR_LEN,
        out_len: HDR_LEN,
    }
}
