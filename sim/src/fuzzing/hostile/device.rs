//! The device as an adversary: it writes honest, hostile and compressed
//! CQEs into the ring at its producer index, ownership byte last.

use bareverbs::cqe::{Cqe64, CqeFormat, CqeOpcode, Syndrome};
use bareverbs::wqe::Opcode;

use super::{NCQE, QPN, UIDX};

/// Writes one CQE at the device producer index (if the ring has room).
pub(super) fn device_cqe(cq: *mut u8, pi: &mut u32, ci: u32, opc: u8, k: usize, ctr: u16) {
    if room(pi, ci) == 0 {
        return;
    }
    let (qpn, uidx) = qp_ids(k);
    let mut c = Cqe64::ZERO;
    c.set_send_wqe_opcode_qpn(Opcode::Send.bits(), qpn)
        .set_srqn_uidx(uidx)
        .set_wqe_counter(ctr)
        .set_byte_cnt(16);
    if opc == CqeOpcode::ReqErr as u8 || opc == CqeOpcode::RespErr as u8 {
        c.set_syndrome(Syndrome::WrFlushErr.as_u8());
    }
    let owner = ((*pi as usize & NCQE) != 0) as u8;
    c.set_op_own_parts(opc, 0, false, owner);
    write_entry(cq, *pi, c.as_bytes());
    *pi = pi.wrapping_add(1);
}

/// Free entries the device may write. A consumer that ran ahead of the
/// device (it took garbage bytes beyond the producer for a CQE, e.g. a
/// mini-CQE array slot) pulls the producer along.
pub(super) fn room(pi: &mut u32, ci: u32) -> u32 {
    let used = pi.wrapping_sub(ci);
    if used > NCQE as u32 {
        *pi = ci;
        return NCQE as u32;
    }
    NCQE as u32 - used
}

/// (QPN, user index) a device CQE for QP `k` carries; `k == 2` names
/// nobody.
pub(super) fn qp_ids(k: usize) -> (u32, u32) {
    match k {
        0 | 1 => (QPN[k], UIDX[k]),
        _ => (0x300, 3),
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn device_session(
    cq: *mut u8,
    pi: &mut u32,
    ci: u32,
    opc: u8,
    k: usize,
    first: u16,
    count: u32,
    arr: &[u8; 64],
) {
    // The session and its arrays must fit in the free part of the ring.
    let span = count.max(2);
    if room(pi, ci) < span {
        return;
    }
    let (qpn, uidx) = qp_ids(k);
    // Arrays: group 0 at title + 1, group g at title + 8g.
    let groups = count.div_ceil(8);
    for g in 0..groups {
        let off = if g == 0 { 1 } else { 8 * g };
        write_entry(cq, pi.wrapping_add(off), arr);
    }
    let mut t = Cqe64::ZERO;
    t.set_send_wqe_opcode_qpn(Opcode::Send.bits(), qpn)
        .set_srqn_uidx(uidx)
        .set_wqe_counter(first)
        .set_byte_cnt(count);
    let owner = ((*pi as usize & NCQE) != 0) as u8;
    t.set_op_own_parts(opc, CqeFormat::Compressed as u8, false, owner);
    write_entry(cq, *pi, t.as_bytes());
    *pi = pi.wrapping_add(count);
}

pub(super) fn write_entry(cq: *mut u8, pos: u32, bytes: &[u8; 64]) {
    let base = (pos as usize & (NCQE - 1)) * 64;
    // Ownership byte last, as a device publishes an entry.
    for i in (0..64).rev() {
        // SAFETY: inside the CQ ring of `Mem`; raw volatile byte store.
        unsafe { core::ptr::write_volatile(cq.add(base + i), bytes[i]) };
    }
}
