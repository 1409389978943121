//! The interface step sequence ID: QUERY_ISSI, SET_ISSI and the choice
//! between them ([ref §7.6](crate::reference) step 5).

use super::{simple, Req};
use crate::cmd::layout::{query_issi_out, set_issi_in};
use crate::cmd::op;

/// QUERY_ISSI (0x10a). [ref §7.6](crate::reference) step 5.
pub fn query_issi(b: &mut [u8]) -> Req {
    let mut r = simple(b, op::QUERY_ISSI, 0);
    r.out_len = query_issi_out::LEN;
    r
}

/// QUERY_ISSI output: (current_issi at 0x0a, supported_issi_dw0 at 0x6c;
/// [`query_issi_out`]).
pub fn parse_query_issi(out: &[u8]) -> (u16, u32) {
    (
        query_issi_out::CURRENT_ISSI.get(out, 0) as u16,
        query_issi_out::SUPPORTED_ISSI_DW0.get(out, 0),
    )
}

/// SET_ISSI (0x10b) with current_issi at byte 0x0a ([`set_issi_in`]).
/// [ref §7.6](crate::reference) step 5.
pub fn set_issi(b: &mut [u8], issi: u16) -> Req {
    let r = simple(b, op::SET_ISSI, 0);
    set_issi_in::CURRENT_ISSI.set(b, 0, issi as u32);
    r
}

/// Decides the ISSI from `supported_issi_dw0` ([ref §7.6](crate::reference) step 5): bit 1 →
/// 1; bit 0 or an all-zero word → 0; otherwise unsupported (`None`).
pub fn choose_issi(supported: u32) -> Option<u16> {
    if supported & 2 != 0 {
        Some(1)
    } else if supported & 1 != 0 || supported == 0 {
        Some(0)
    } else {
        None
    }
}
