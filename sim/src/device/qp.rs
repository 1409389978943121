//! Queue pairs: checking a request against the device's tables, creating
//! a QP in RESET (with its memory, over host memory, or under a
//! firmware-chosen number) and destroying it.

use super::memory::Origin;
use super::placement::{place, pow2, MAX_PLACED_INDEX};
use super::{Device, QpHandle, QpInit, SimError};
use crate::cost::Counters;
use crate::objects::{Qp, QpAttr, RespCache};
use crate::world::QPN_BASE;
use bareverbs::qp::QpState;
use std::collections::VecDeque;

impl Device {
    /// Checks a QP request against the device's tables: ring sizes,
    /// existing CQs / SRQ / PD. Returns whether the QP has its own RQ.
    fn check_qp_init(&self, init: &QpInit) -> Result<bool, SimError> {
        if init.sq_wqebbs != 0 && (!pow2(init.sq_wqebbs) || init.sq_wqebbs > 1 << 16) {
            return Err(SimError::BadSize);
        }
        let has_rq = init.srq.is_none() && init.rq_wqes != 0;
        if has_rq
            && (!pow2(init.rq_wqes)
                || init.rq_wqes > 1 << 16
                || !(4..=16).contains(&init.rq_wqe_shift))
        {
            return Err(SimError::BadSize);
        }
        {
            let w = self.w.borrow();
            let d = &w.devs[self.id as usize];
            let ok_cq = |c: u32| matches!(d.cqs.get(c as usize), Some(Some(_)));
            if !ok_cq(init.send_cq) || !ok_cq(init.recv_cq) {
                return Err(SimError::NoSuchObject);
            }
            if let Some(s) = init.srq {
                if !matches!(d.srqs.get(s as usize), Some(Some(_))) {
                    return Err(SimError::NoSuchObject);
                }
            }
            if init.pd.0 == 0 || init.pd.0 >= d.next_pd {
                return Err(SimError::NoSuchObject);
            }
        }
        Ok(has_rq)
    }

    /// Creates a QP in RESET, allocating its rings and doorbell record.
    pub fn create_qp(&self, init: &QpInit) -> Result<QpHandle, SimError> {
        let has_rq = self.check_qp_init(init)?;
        let sq_ring = if init.sq_wqebbs > 0 {
            Some(self.alloc_ring(init.sq_wqebbs as usize * 64)?)
        } else {
            None
        };
        let rq_ring = if has_rq {
            Some(self.alloc_ring((init.rq_wqes as usize) << init.rq_wqe_shift)?)
        } else {
            None
        };
        let dbrec = self.alloc_ring(8)?;
        let qpn = self.qp_at(
            None,
            init,
            sq_ring.map(|b| b.iova),
            rq_ring.map(|b| b.iova),
            dbrec.iova,
            Origin::Driver,
        )?;
        Ok(QpHandle {
            qpn,
            sq_ring,
            rq_ring,
            dbrec,
            uar: self.uar(),
        })
    }

    /// Creates a QP in RESET over host-provided memory named by device
    /// addresses (as CREATE_QP names its pages and `dbr_addr`): the SQ ring
    /// (`sq_wqebbs` × 64 bytes), the RQ ring (`rq_wqes << rq_wqe_shift`
    /// bytes, unless the QP uses an SRQ) and the 8-byte doorbell record.
    /// Each range is resolved through the DMA table; a bad one is refused
    /// with [`SimError::BadAddress`] and never touched. Each must lie in a
    /// payload buffer ([`Device::alloc`]) that no key has covered
    /// ([`SimError::KeyedMemory`]; driver memory, such as another queue's
    /// ring: [`SimError::DriverMemory`]); they become queue memory, which
    /// [`reg_mr`](Self::reg_mr) refuses to key.
    pub fn create_qp_at(
        &self,
        init: &QpInit,
        sq_ring_iova: Option<u64>,
        rq_ring_iova: Option<u64>,
        dbrec_iova: u64,
    ) -> Result<u32, SimError> {
        self.qp_at(
            None,
            init,
            sq_ring_iova,
            rq_ring_iova,
            dbrec_iova,
            Origin::Caller,
        )
    }

    /// [`create_qp_at`](Self::create_qp_at) under the QP number `qpn`
    /// chosen by the caller (CREATE_QP's firmware); it must be free and at
    /// least [`QPN_BASE`]; its memory is the driver's (any live allocation).
    pub(crate) fn create_qp_as(
        &self,
        qpn: u32,
        init: &QpInit,
        sq_ring_iova: Option<u64>,
        rq_ring_iova: Option<u64>,
        dbrec_iova: u64,
    ) -> Result<(), SimError> {
        let qi = qpn
            .checked_sub(QPN_BASE)
            .ok_or(SimError::NumberUnavailable)?;
        self.qp_at(
            Some(qi),
            init,
            sq_ring_iova,
            rq_ring_iova,
            dbrec_iova,
            Origin::Driver,
        )
        .map(|_| ())
    }

    /// Removes QP `qpn` (DESTROY_QP): it leaves the QP-context cache, and
    /// packets or timers still naming it are dropped on arrival.
    pub fn destroy_qp(&self, qpn: u32) {
        let Some(qi) = qpn.checked_sub(QPN_BASE) else {
            return;
        };
        let mut w = self.w.borrow_mut();
        // A held-aside timer naming this slot goes to the heap first, where
        // it meets whatever QP holds the slot when it is due.
        w.flush_deferred();
        let d = &mut w.devs[self.id as usize];
        d.qpc_forget(qi);
        if let Some(slot) = d.qps.get_mut(qi as usize) {
            *slot = None;
        }
    }

    fn qp_at(
        &self,
        qi: Option<u32>,
        init: &QpInit,
        sq_ring_iova: Option<u64>,
        rq_ring_iova: Option<u64>,
        dbrec_iova: u64,
        origin: Origin,
    ) -> Result<u32, SimError> {
        let has_rq = self.check_qp_init(init)?;
        let sq = match (init.sq_wqebbs, sq_ring_iova) {
            (0, _) => None,
            (n, Some(a)) => Some((a, n as usize * 64)),
            (_, None) => return Err(SimError::BadAddress),
        };
        let rq = match (has_rq, rq_ring_iova) {
            (false, _) => None,
            (true, Some(a)) => Some((a, (init.rq_wqes as usize) << init.rq_wqe_shift)),
            (true, None) => return Err(SimError::BadAddress),
        };
        let ranges: Vec<(u64, usize)> = sq.into_iter().chain(rq).chain([(dbrec_iova, 8)]).collect();
        let mut at = self.queue_memory(&ranges, origin)?.into_iter();
        let mut next = || at.next().ok_or(SimError::BadAddress);
        let sqp = if sq.is_some() {
            next()?
        } else {
            std::ptr::null_mut()
        };
        let rqp = if rq.is_some() {
            next()?
        } else {
            std::ptr::null_mut()
        };
        let dp = next()?;
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        let qi = match qi {
            Some(i) => {
                if matches!(d.qps.get(i as usize), Some(Some(_))) || i as usize > MAX_PLACED_INDEX {
                    return Err(SimError::NumberUnavailable);
                }
                i
            }
            None => d.qps.len() as u32,
        };
        let qpn = QPN_BASE + qi;
        let attr = QpAttr::default();
        let qp = Qp {
            qpn,
            uidx: init.uidx,
            ty: init.qp_type,
            state: QpState::Reset,
            pd: init.pd.0,
            sq_ring: sqp,
            sq_nbb: init.sq_wqebbs,
            sq_fetched: 0,
            bf_index: None,
            sq_blocked: false,
            rq_ring: rqp,
            rq_nwqe: if has_rq { init.rq_wqes } else { 0 },
            rq_shift: init.rq_wqe_shift,
            rq_consumed: 0,
            srq: init.srq.map(|s| s as usize),
            dbrec: dp,
            scq: init.send_cq as usize,
            rcq: init.recv_cq as usize,
            attr,
            next_psn: 0,
            pend: VecDeque::new(),
            retry_left: attr.retry_cnt,
            rnr_left: attr.rnr_retry,
            timer_gen: 0,
            rnr_wait: false,
            epsn: 0,
            nak_sent: false,
            resp_cache: RespCache::default(),
            last_rx_ns: 0,
            counters: Counters::default(),
            lru_prev: None,
            lru_next: None,
            in_qpc: false,
        };
        place(&mut d.qps, Some(qi as usize), qp, |_| true)?;
        Ok(qpn)
    }
}
