//! A queue pair as the data path sees it: a send queue and a receive queue
//! (or none, when the QP uses an SRQ) under one QP number, resolving the
//! completions of a CQ back to their `wr_id`s. FACTS §1.10, §5.7, §5.8.

use crate::cq::{RecvDone, SendDone, WrResolver};
use crate::cqe::WcOpcode;
use crate::platform::Uar;
use crate::rq::{RecvQueue, SharedReceiveQueue};
use crate::sq::SendQueue;

/// Send queue + receive queue of one QP. `SQ` is the send ring in WQEBBs,
/// `RQ` the receive ring in WQEs.
pub struct QueuePair<U: Uar, const SQ: usize, const RQ: usize> {
    /// QP number (what CQEs carry with CQE version 0).
    pub qpn: u32,
    /// User index (what CQEs carry with CQE version 1).
    pub uidx: u32,
    /// The send queue.
    pub sq: SendQueue<U, SQ>,
    /// The receive queue, `None` when receives go to an SRQ.
    pub rq: Option<RecvQueue<RQ>>,
}

impl<U: Uar, const SQ: usize, const RQ: usize> QueuePair<U, SQ, RQ> {
    /// Whether a CQE's QP field (`uidx` or QPN) names this QP.
    #[inline(always)]
    pub fn is(&self, qp: u32) -> bool {
        qp == self.uidx || qp == self.qpn
    }
}

#[inline(always)]
fn wc_opcode_of(wr_data: u8) -> WcOpcode {
    match wr_data {
        5 => WcOpcode::BindMw,
        6 => WcOpcode::LocalInv,
        _ => WcOpcode::Send,
    }
}

/// A single QP resolves the completions of a CQ only it reports to.
///
/// Inline scatter (scatter-to-CQE) is not supported by this resolver:
/// bareverbs creates QPs with scatter-to-CQE disabled (`cs_req = cs_res =
/// 0`), so a CQE that carries inline data anyway is reported with
/// `LOC_LEN_ERR` rather than copied to an address the host cannot map.
impl<U: Uar, const SQ: usize, const RQ: usize> WrResolver for QueuePair<U, SQ, RQ> {
    #[inline]
    fn send_done(&mut self, qp: u32, wqe_counter: u16) -> Option<SendDone> {
        if !self.is(qp) {
            return None;
        }
        let r = self.sq.retire(wqe_counter);
        Some(SendDone {
            wr_id: r.wr_id,
            wr_data: wc_opcode_of(r.wr_data),
        })
    }
    #[inline]
    fn recv_done(&mut self, qp: u32, wqe_counter: u16) -> Option<RecvDone> {
        if !self.is(qp) {
            return None;
        }
        let wr_id = self.rq.as_mut()?.retire(wqe_counter);
        Some(RecvDone {
            wr_id,
            rx_csum: false,
        })
    }
    fn scatter_to_send(&mut self, _qp: u32, _wqe_counter: u16, _data: &[u8]) -> bool {
        false
    }
    fn scatter_to_recv(&mut self, _qp: u32, _wqe_counter: u16, _data: &[u8]) -> bool {
        false
    }
}

/// Several QPs (and optionally one SRQ their receives share) reporting to
/// one CQ: completions are routed by QP number / user index.
pub struct QpSet<'a, U: Uar, const SQ: usize, const RQ: usize, const SRQ: usize> {
    /// The QPs.
    pub qps: &'a mut [QueuePair<U, SQ, RQ>],
    /// The SRQ receives go to when a QP has no RQ.
    pub srq: Option<&'a mut SharedReceiveQueue<SRQ>>,
}

impl<U: Uar, const SQ: usize, const RQ: usize, const SRQ: usize> WrResolver
    for QpSet<'_, U, SQ, RQ, SRQ>
{
    fn send_done(&mut self, qp: u32, wqe_counter: u16) -> Option<SendDone> {
        self.qps
            .iter_mut()
            .find(|q| q.is(qp))?
            .send_done(qp, wqe_counter)
    }
    fn recv_done(&mut self, qp: u32, wqe_counter: u16) -> Option<RecvDone> {
        let q = self.qps.iter_mut().find(|q| q.is(qp))?;
        match q.rq.as_mut() {
            Some(rq) => Some(RecvDone {
                wr_id: rq.retire(wqe_counter),
                rx_csum: false,
            }),
            None => {
                let wr_id = self.srq.as_mut()?.retire(wqe_counter)?;
                Some(RecvDone {
                    wr_id,
                    rx_csum: false,
                })
            }
        }
    }
    fn scatter_to_send(&mut self, _qp: u32, _wqe_counter: u16, _data: &[u8]) -> bool {
        false
    }
    fn scatter_to_recv(&mut self, _qp: u32, _wqe_counter: u16, _data: &[u8]) -> bool {
        false
    }
}
