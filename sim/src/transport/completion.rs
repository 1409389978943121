//! Completions of the transport: send CQEs written in order as fetched WQEs
//! finish, error CQEs, the moves to ERR and SQE, and the flushes of
//! outstanding, posted and receive WQEs.

use super::rd_be32;
use crate::objects::{Pending, Qp};
use crate::wire::Req;
use crate::world::{vendor, TraceKind, World};
use bareverbs::cqe::{Cqe64, CqeOpcode, Syndrome};
use bareverbs::qp::{QpState, QpType};
use bareverbs::wqe::{CtrlSeg, DS_BYTES, DS_MASK, SEND_WQE_BB};
use std::rc::Rc;

impl World {
    /// Completes head entries that are done (CQE if signaled) and stops at
    /// the first that is not; an entry with an error completes with its
    /// syndrome and moves the QP to ERR (which flushes the rest).
    pub(super) fn drain(&mut self, d: u16, qi: u32) {
        loop {
            let Some(q) = self.qp(d, qi) else { return };
            if q.state == QpState::Err {
                return;
            }
            let Some(head) = q.pend.front() else { return };
            if let Some(s) = head.err {
                let h = q.pend.pop_front().expect("head");
                let (qpn, uidx, scq, ty) = (q.qpn, q.uidx, q.scq, q.ty);
                self.emit_err(d, scq, true, qpn, uidx, h.opcode, h.wqe_counter, s);
                if matches!(ty, QpType::Ud | QpType::Uc) {
                    // UD/UC send errors stop only the send queue (SQE);
                    // receives keep working. IBA 10.3.1.
                    self.qp_to_sqe(d, qi);
                } else {
                    self.qp_to_error(d, qi);
                }
                return;
            }
            if !head.done {
                return;
            }
            let mut h = q.pend.pop_front().expect("head");
            if let Some(mut r) = h.req.take() {
                // Recycle the request cell and its payload buffer once no
                // packet holds them.
                if let Some(req) = Rc::get_mut(&mut r) {
                    if let Req::Send { data, .. } | Req::Write { data, .. } = req {
                        let mut data = std::mem::take(data);
                        if self.buf_pool.len() < 256 && data.capacity() <= 1 << 16 {
                            data.clear();
                            self.buf_pool.push(data);
                        }
                    }
                    if self.req_pool.len() < 256 {
                        self.req_pool.push(r);
                    }
                }
            }
            let Some(q) = self.qp(d, qi) else { return };
            if h.signaled {
                let (qpn, uidx, scq) = (q.qpn, q.uidx, q.scq);
                let c = Self::req_cqe(h.opcode, qpn, h.wqe_counter, uidx, h.byte_cnt);
                self.write_cqe(d, scq, c, false);
                if let Some(q) = self.qp(d, qi) {
                    q.counters.cqes += 1;
                }
            }
        }
    }

    /// The successful requester CQE (REQ, opcode 0) of send WQE `opcode`
    /// with counter `counter` on QP `qpn` (user index `uidx`). [ref §5.1](bareverbs::reference).
    #[inline]
    pub(super) fn req_cqe(opcode: u8, qpn: u32, counter: u16, uidx: u32, byte_cnt: u32) -> Cqe64 {
        let mut c = Cqe64::default();
        c.set_send_wqe_opcode_qpn(opcode, qpn)
            .set_wqe_counter(counter)
            .set_srqn_uidx(uidx & Cqe64::UIDX_MASK)
            .set_byte_cnt(byte_cnt)
            .set_op_own_parts(CqeOpcode::Req as u8, 0, false, 0);
        c
    }

    /// Writes an error CQE (REQ_ERR or RESP_ERR). [ref §5.5](bareverbs::reference).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn emit_err(
        &mut self,
        d: u16,
        cq: usize,
        req: bool,
        qpn: u32,
        uidx: u32,
        opcode: u8,
        counter: u16,
        s: u8,
    ) {
        let mut c = Cqe64::default();
        let cqe_op = if req {
            CqeOpcode::ReqErr
        } else {
            CqeOpcode::RespErr
        };
        c.set_srqn_uidx(uidx & Cqe64::UIDX_MASK)
            .set_syndrome(s)
            .set_vendor_err_synd(vendor::of(s))
            .set_send_wqe_opcode_qpn(if req { opcode } else { 0 }, qpn)
            .set_wqe_counter(counter)
            .set_op_own_parts(cqe_op as u8, 0, false, 0);
        self.write_cqe(d, cq, c, true);
        if let Some(qi) = self.find_qp(d, qpn) {
            if let Some(q) = self.qp(d, qi) {
                q.counters.cqes += 1;
                q.counters.err_cqes += 1;
            }
        }
    }

    /// Moves a QP to ERR and flushes every outstanding and posted WQE in
    /// order: fetched SQ WQEs, then posted ones, then the RQ. [ref §5.10](bareverbs::reference).
    pub(crate) fn qp_to_error(&mut self, d: u16, qi: u32) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.state == QpState::Err {
            return;
        }
        let qpn = q.qpn;
        q.state = QpState::Err;
        q.timer_gen = (q.timer_gen | 1) + 1; // no timer armed
        q.rnr_wait = false;
        self.any_error = true;
        self.trace(TraceKind::QpError, d, qpn, 0);
        let q = self.qp(d, qi).expect("qp");
        let pend: Vec<Pending> = q.pend.drain(..).collect();
        let (uidx, scq) = (q.uidx, q.scq);
        for h in pend {
            let s = h.err.unwrap_or(Syndrome::WrFlushErr.as_u8());
            self.emit_err(d, scq, true, qpn, uidx, h.opcode, h.wqe_counter, s);
        }
        self.flush_sq_posted(d, qi);
        self.flush_rq(d, qi);
    }

    /// Moves a UD/UC QP to SQE: the rest of the send queue is flushed in
    /// order; the receive queue is untouched.
    fn qp_to_sqe(&mut self, d: u16, qi: u32) {
        let Some(q) = self.qp(d, qi) else { return };
        q.state = QpState::Sqe;
        q.timer_gen = (q.timer_gen | 1) + 1;
        let pend: Vec<Pending> = q.pend.drain(..).collect();
        let (qpn, uidx, scq) = (q.qpn, q.uidx, q.scq);
        for h in pend {
            self.emit_err(
                d,
                scq,
                true,
                qpn,
                uidx,
                h.opcode,
                h.wqe_counter,
                Syndrome::WrFlushErr.as_u8(),
            );
        }
        self.flush_sq_posted(d, qi);
    }

    /// Flushes SQ WQEs posted (doorbell record) but not yet fetched.
    pub(super) fn flush_sq_posted(&mut self, d: u16, qi: u32) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.sq_nbb == 0 {
            return;
        }
        let pi = rd_be32(q.dbrec.wrapping_add(4)) as u16;
        let (qpn, uidx, scq) = (q.qpn, q.uidx, q.scq);
        let mut guard = 0;
        let limit = self.pass_limit;
        loop {
            let q = self.qp(d, qi).expect("qp");
            let avail = pi.wrapping_sub(q.sq_fetched);
            if avail == 0 || guard >= limit {
                break;
            }
            guard += 1;
            let idx = q.sq_fetched;
            let off = (idx as usize & (q.sq_nbb as usize - 1)) * SEND_WQE_BB;
            // SAFETY: ctrl bytes of a slot inside the translated SQ ring.
            let (op, ds) = unsafe {
                (
                    std::ptr::read_volatile(q.sq_ring.add(off + CtrlSeg::OPCODE_BYTE)),
                    std::ptr::read_volatile(q.sq_ring.add(off + CtrlSeg::DS_BYTE)) as u32 & DS_MASK,
                )
            };
            let bbs =
                ((ds * DS_BYTES as u32).div_ceil(SEND_WQE_BB as u32).max(1) as u16).min(avail);
            q.sq_fetched = idx.wrapping_add(bbs);
            self.emit_err(
                d,
                scq,
                true,
                qpn,
                uidx,
                op,
                idx,
                Syndrome::WrFlushErr.as_u8(),
            );
        }
    }

    /// Whether [`Self::flush_rq`] of QP `q` would flush nothing.
    pub(crate) fn rq_flushed(q: &Qp) -> bool {
        q.rq_nwqe == 0 || q.srq.is_some() || rd_be32(q.dbrec) as u16 == q.rq_consumed
    }

    /// Flushes every posted receive WQE of a QP with its own RQ.
    pub(crate) fn flush_rq(&mut self, d: u16, qi: u32) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.rq_nwqe == 0 || q.srq.is_some() {
            return;
        }
        let posted = rd_be32(q.dbrec) as u16;
        let (qpn, uidx, rcq) = (q.qpn, q.uidx, q.rcq);
        let mut guard = 0;
        let limit = self.pass_limit;
        loop {
            let q = self.qp(d, qi).expect("qp");
            if q.rq_consumed == posted || guard >= limit {
                break;
            }
            guard += 1;
            let c = q.rq_consumed;
            q.rq_consumed = c.wrapping_add(1);
            self.emit_err(d, rcq, false, qpn, uidx, 0, c, Syndrome::WrFlushErr.as_u8());
        }
    }
}
