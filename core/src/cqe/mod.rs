//! Completion queue entries: the 64-byte CQE, the error-CQE view, 128-byte
//! CQEs, ownership, opcodes, syndromes → work-completion status, requester
//! and responder field mapping, the lean [`Completion`], compressed (mini)
//! CQE expansion and a readable dump. [ref §5](crate::reference).
//!
//! Everything here works on *copies*: the poll path (`crate::cq`) copies a
//! CQE out of device memory with raw-pointer reads and hands the bytes to
//! [`Cqe64::from_bytes`]. No type in this module ever refers to
//! device-visible memory, and no accessor can panic on any byte pattern.

mod completion;
mod cqe128;
mod cqe64;
mod dump;
mod err;
mod format;
mod mini;
mod opcode;
mod owner;
mod parse;
mod size;
mod status;

pub use completion::{Completion, CompletionFlags};
pub use dump::CqeDump;
pub use mini::{MiniCqe, MiniCqeExpander, MiniCqeFormat, MiniCqeIter, MINI_CQES_PER_SLOT};
pub use status::{
    req_completion, syndrome_to_status, ReqCompletion, Syndrome, WcFlags, WcOpcode, WcStatus,
    WorkCompletion, WrittenFields,
};

pub use cqe128::Cqe128;
pub use cqe64::Cqe64;
pub use err::ErrCqe;
pub use format::CqeFormat;
pub use opcode::CqeOpcode;
pub use owner::{owner_bit_for, sw_owns};
pub use parse::parse_any;
pub use size::CqeSize;

/// Bytes in the `mlx5_cqe64` structure. [ref §5.1](crate::reference).
pub const CQE64_SIZE: usize = 64;
/// Bytes in a 128-byte CQE (cqe64 at offset 64). [ref §5.2](crate::reference).
pub const CQE128_SIZE: usize = 128;
/// `op_own` value every entry gets at CQ creation: opcode INVALID, owner 0.
/// [ref §3.7, §5.3](crate::reference).
pub const OP_OWN_INIT: u8 = 0xF0;
/// Offset of `op_own` inside the cqe64. [ref §5.1](crate::reference).
pub const OP_OWN_OFFSET: usize = 63;
/// Inline-scatter format 1 holds at most this many bytes (cqe64 bytes
/// 0–31). [ref §5.1](crate::reference).
pub const INLINE_SCATTER_32_MAX: usize = 32;
/// Inline-scatter format 2 holds at most this many bytes (the 64 bytes
/// before the cqe64 in a 128-byte CQE). [ref §5.1, §5.2](crate::reference).
pub const INLINE_SCATTER_64_MAX: usize = 64;
/// vendor_err_synd marking an ODP page fault (with syndrome 0x22). [ref §5.6](crate::reference).
pub const VENDOR_SYNDROME_ODP_PFAULT: u8 = 0x93;

#[cfg(test)]
mod tests;
