//! Object numbers: the 24-bit number ALLOC/CREATE outputs return in
//! dword 2, and the destroy-style commands that carry one
//! ([ref §7.8](crate::reference) "Simple outputs").

use super::{simple, Req};
use crate::cmd::layout::{cmd_in, cmd_out};

/// Largest object number: QPN, CQN, SRQN, PD, UAR index and mkey index are
/// 24-bit fields ([ref §7.8](crate::reference) "Simple outputs", §1.2 `qpn_ds`, §7.12).
pub const OBJ_NUMBER_MAX: u32 = 0x00ff_ffff;

/// Reads the object number word dw2 of an output (ALLOC_PD, ALLOC_UAR,
/// CREATE_CQ/QP/MKEY/SRQ; [ref §7.8](crate::reference) "Simple outputs": the number is
/// `dw2[23:0]`).
///
/// The whole word is returned, reserved bits 31:24 included, so that a
/// device writing them is noticed rather than masked away: a value above
/// [`OBJ_NUMBER_MAX`] does not fit the field the number is used in and the
/// caller must refuse it (the device layer does, as
/// `DeviceError::BadObjectNumber`).
pub fn parse_obj_id(out: &[u8]) -> u32 {
    cmd_out::OBJ_ID_DWORD.get(out, 0)
}

/// Destroy-style command carrying a 24-bit object number at `dw2[23:0]`
/// (DESTROY_MKEY/CQ/QP/SRQ, 2ERR_QP, 2RST_QP, QUERY_QP).
pub fn with_obj(b: &mut [u8], opcode: u16, id: u32) -> Req {
    let r = simple(b, opcode, 0);
    cmd_in::OBJ_ID.set(b, 0, id);
    r
}
