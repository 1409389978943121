//! A QP's state: modify-QP (the transition check, the masked attributes
//! and each state's side effects), the user index, and the state and
//! attributes as the device holds them.

use super::{Device, SimError};
use crate::objects::{QpAttr, RespCache};
use crate::world::QPN_BASE;
use bareverbs::qp::{check_transition, QpAttrMask, QpState};

impl Device {
    /// Modifies a QP: checks the transition (core `check_transition`),
    /// applies the masked attributes and the state's side effects (RESET
    /// clears the context; ERR flushes; RTS starts the send queue).
    pub fn modify_qp(&self, qpn: u32, attr: &QpAttr, mask: QpAttrMask) -> Result<(), SimError> {
        let mut w = self.w.borrow_mut();
        let d = self.id;
        let qi = qpn.checked_sub(QPN_BASE).ok_or(SimError::NoSuchObject)?;
        let q = w.qp(d, qi).ok_or(SimError::NoSuchObject)?;
        let from = q.state;
        let to = attr.qp_state;
        check_transition(q.ty, from, to, mask).map_err(SimError::Transition)?;
        if mask.contains(QpAttrMask::CUR_STATE) && attr.cur_qp_state != from {
            return Err(SimError::CurStateMismatch);
        }
        let a = &mut q.attr;
        let m = |f: QpAttrMask| mask.contains(f);
        if m(QpAttrMask::ACCESS_FLAGS) {
            a.qp_access_flags = attr.qp_access_flags;
        }
        if m(QpAttrMask::PKEY_INDEX) {
            a.pkey_index = attr.pkey_index;
        }
        if m(QpAttrMask::PORT) {
            a.port_num = attr.port_num;
        }
        if m(QpAttrMask::QKEY) {
            a.qkey = attr.qkey;
        }
        if m(QpAttrMask::AV) {
            a.dlid = attr.dlid;
            a.grh = attr.grh;
        }
        if m(QpAttrMask::PATH_MTU) {
            a.path_mtu = attr.path_mtu;
        }
        if m(QpAttrMask::TIMEOUT) {
            a.timeout = attr.timeout;
        }
        if m(QpAttrMask::RETRY_CNT) {
            a.retry_cnt = attr.retry_cnt & 7;
        }
        if m(QpAttrMask::RNR_RETRY) {
            a.rnr_retry = attr.rnr_retry & 7;
        }
        if m(QpAttrMask::RQ_PSN) {
            a.rq_psn = attr.rq_psn & 0xff_ffff;
        }
        if m(QpAttrMask::SQ_PSN) {
            a.sq_psn = attr.sq_psn & 0xff_ffff;
        }
        if m(QpAttrMask::MAX_QP_RD_ATOMIC) {
            a.max_rd_atomic = attr.max_rd_atomic;
        }
        if m(QpAttrMask::MAX_DEST_RD_ATOMIC) {
            a.max_dest_rd_atomic = attr.max_dest_rd_atomic;
        }
        if m(QpAttrMask::MIN_RNR_TIMER) {
            a.min_rnr_timer = attr.min_rnr_timer & 31;
        }
        if m(QpAttrMask::DEST_QPN) {
            a.dest_qp_num = attr.dest_qp_num & 0xff_ffff;
        }
        match to {
            QpState::Reset => {
                q.state = QpState::Reset;
                q.sq_fetched = 0;
                q.rq_consumed = 0;
                q.sq_blocked = false;
                q.bf_index = None;
                q.pend.clear();
                q.timer_gen = (q.timer_gen | 1) + 1;
                q.rnr_wait = false;
                q.nak_sent = false;
                q.resp_cache = RespCache::default();
            }
            QpState::Err => {
                w.qp_to_error(d, qi);
                w.settle();
            }
            QpState::Rtr => {
                if from == QpState::Init {
                    q.epsn = q.attr.rq_psn;
                }
                q.state = to;
            }
            QpState::Rts => {
                if from == QpState::Rtr {
                    q.next_psn = q.attr.sq_psn;
                }
                q.retry_left = q.attr.retry_cnt;
                q.rnr_left = q.attr.rnr_retry;
                q.state = to;
                // SQE → RTS resumes the send queue after the failed WQE.
                q.sq_blocked = false;
                // A doorbell rung before RTS is picked up now.
                w.process_sq(d, qi);
                w.settle();
                if w.auto_progress {
                    w.run_until_idle();
                }
            }
            _ => q.state = to,
        }
        Ok(())
    }

    /// Sets the user index CQEs of this QP carry (CQE version 1).
    pub fn set_uidx(&self, qpn: u32, uidx: u32) {
        let mut w = self.w.borrow_mut();
        if let Some(q) = qpn.checked_sub(QPN_BASE).and_then(|qi| w.qp(self.id, qi)) {
            q.uidx = uidx;
        }
    }

    /// The QP's current state.
    pub fn qp_state(&self, qpn: u32) -> Option<QpState> {
        let mut w = self.w.borrow_mut();
        let qi = qpn.checked_sub(QPN_BASE)?;
        w.qp(self.id, qi).map(|q| q.state)
    }

    /// The QP's attributes as the device holds them.
    pub fn qp_attr(&self, qpn: u32) -> Option<QpAttr> {
        let mut w = self.w.borrow_mut();
        let qi = qpn.checked_sub(QPN_BASE)?;
        w.qp(self.id, qi).map(|q| q.attr)
    }
}
