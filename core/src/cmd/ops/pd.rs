//! UAR and protection domain allocation: ALLOC_UAR, DEALLOC_UAR,
//! ALLOC_PD, DEALLOC_PD ([ref §7.8](crate::reference)).

use super::{simple, Req};
use crate::cmd::layout::cmd_in;
use crate::cmd::op;

/// ALLOC_UAR (0x802); output uar index at `dw2[23:0]`. [ref §7.8](crate::reference).
pub fn alloc_uar(b: &mut [u8]) -> Req {
    simple(b, op::ALLOC_UAR, 0)
}

/// DEALLOC_UAR (0x803) of `uar` (`dw2[23:0]`).
pub fn dealloc_uar(b: &mut [u8], uar: u32) -> Req {
    let r = simple(b, op::DEALLOC_UAR, 0);
    cmd_in::OBJ_ID.set(b, 0, uar);
    r
}

/// ALLOC_PD (0x800); output pd at `dw2[23:0]`. [ref §7.8](crate::reference).
pub fn alloc_pd(b: &mut [u8]) -> Req {
    simple(b, op::ALLOC_PD, 0)
}

/// DEALLOC_PD (0x801) of `pd` (`dw2[23:0]`).
pub fn dealloc_pd(b: &mut [u8], pd: u32) -> Req {
    let r = simple(b, op::DEALLOC_PD, 0);
    cmd_in::OBJ_ID.set(b, 0, pd);
    r
}
