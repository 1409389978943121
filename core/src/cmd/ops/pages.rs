//! Firmware pages: QUERY_PAGES and MANAGE_PAGES (give, take, cannot
//! give) ([ref §7.7](crate::reference)).

use super::{hdr, simple, Req, HDR_LEN};
use crate::cmd::bits::{get64, put64};
use crate::cmd::layout::{manage_pages_in, manage_pages_out, query_pages_out};
use crate::cmd::{op, CmdError};

/// QUERY_PAGES op_mod ([ref §7.7](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
#[allow(clippy::exhaustive_enums)] // closed by the PRM: QUERY_PAGES op_mod has exactly these values
pub enum PagesKind {
    /// 1: pages needed before INIT_HCA's capability setup.
    Boot = 1,
    /// 2: pages needed by INIT_HCA.
    Init = 2,
    /// 3: pages wanted after init (kernel).
    PostInit = 3,
}

impl PagesKind {
    /// The kind an op_mod names (`None` for any other value).
    pub const fn from_op_mod(op_mod: u16) -> Option<Self> {
        match op_mod {
            1 => Some(Self::Boot),
            2 => Some(Self::Init),
            3 => Some(Self::PostInit),
            _ => None,
        }
    }
}

/// QUERY_PAGES (0x107). [ref §7.7](crate::reference).
pub fn query_pages(b: &mut [u8], kind: PagesKind) -> Req {
    simple(b, op::QUERY_PAGES, kind as u16)
}

/// QUERY_PAGES output: (function_id, num_pages; negative = FW returns
/// pages; [`query_pages_out`]).
pub fn parse_query_pages(out: &[u8]) -> (u16, i32) {
    (
        query_pages_out::FUNCTION_ID.get(out, 0) as u16,
        query_pages_out::NUM_PAGES.get(out, 0) as i32,
    )
}

/// MANAGE_PAGES op_mod ([ref §7.7](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
#[allow(clippy::exhaustive_enums)] // closed by the PRM: MANAGE_PAGES op_mod has exactly these values
pub enum ManagePagesOp {
    /// 0: driver cannot give pages.
    CantGive = 0,
    /// 1: give pages.
    Give = 1,
    /// 2: take pages back.
    Take = 2,
}

impl ManagePagesOp {
    /// The operation an op_mod names (`None` for any other value).
    pub const fn from_op_mod(op_mod: u16) -> Option<Self> {
        match op_mod {
            0 => Some(Self::CantGive),
            1 => Some(Self::Give),
            2 => Some(Self::Take),
            _ => None,
        }
    }
}

/// Most page addresses one MANAGE_PAGES message carries with the
/// preallocated mailboxes.
pub const MAX_PAGES_PER_CMD: usize = (crate::cmd::queue::MAX_MSG - HDR_LEN) / 8;

/// MANAGE_PAGES GIVE (0x108, op_mod 1) of `pages` (BE64 addresses from 0x10,
/// [`manage_pages_in::PAS`]). At most [`MAX_PAGES_PER_CMD`] are used.
/// [ref §7.7](crate::reference).
pub fn manage_pages_give(b: &mut [u8], function_id: u16, pages: &[u64]) -> Req {
    let n = pages.len().min(MAX_PAGES_PER_CMD);
    let in_len = manage_pages_in::PAS + 8 * n;
    hdr(b, op::MANAGE_PAGES, ManagePagesOp::Give as u16, in_len);
    manage_pages_in::FUNCTION_ID.set(b, 0, function_id as u32);
    manage_pages_in::INPUT_NUM_ENTRIES.set(b, 0, n as u32);
    for (i, p) in pages[..n].iter().enumerate() {
        put64(b, manage_pages_in::PAS + 8 * i, *p);
    }
    Req {
        opcode: op::MANAGE_PAGES,
        in_len,
        out_len: HDR_LEN,
    }
}

/// MANAGE_PAGES TAKE (op_mod 2) asking for `count` pages back. [ref §7.7](crate::reference).
pub fn manage_pages_take(b: &mut [u8], function_id: u16, count: u32) -> Req {
    let n = (count as usize).min(MAX_PAGES_PER_CMD);
    hdr(b, op::MANAGE_PAGES, ManagePagesOp::Take as u16, HDR_LEN);
    manage_pages_in::FUNCTION_ID.set(b, 0, function_id as u32);
    manage_pages_in::INPUT_NUM_ENTRIES.set(b, 0, n as u32);
    Req {
        opcode: op::MANAGE_PAGES,
        in_len: HDR_LEN,
        out_len: manage_pages_out::PAS + 8 * n,
    }
}

/// MANAGE_PAGES CANT_GIVE (op_mod 0): refuse a page request. [ref §7.7](crate::reference).
pub fn manage_pages_cant_give(b: &mut [u8], function_id: u16) -> Req {
    let r = simple(b, op::MANAGE_PAGES, ManagePagesOp::CantGive as u16);
    manage_pages_in::FUNCTION_ID.set(b, 0, function_id as u32);
    r
}

/// MANAGE_PAGES output: the number of returned pages (byte 0x08,
/// [`manage_pages_out::OUTPUT_NUM_ENTRIES`]), bounded by what the output
/// buffer holds; page `i` is at `0x10 + 8·i`.
pub fn parse_manage_pages(out: &[u8]) -> Result<usize, CmdError> {
    let n = manage_pages_out::OUTPUT_NUM_ENTRIES.get(out, 0) as usize;
    let room = out.len().saturating_sub(manage_pages_out::PAS) / 8;
    if n > room {
        return Err(CmdError::BadOutput {
            opcode: op::MANAGE_PAGES,
            field: "output_num_entries",
            value: n as u64,
        });
    }
    Ok(n)
}

/// Page `i` of a MANAGE_PAGES TAKE output.
pub fn manage_pages_entry(out: &[u8], i: usize) -> u64 {
    get64(out, manage_pages_out::PAS + 8 * i)
}
