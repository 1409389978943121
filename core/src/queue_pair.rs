//! A queue pair as the data path sees it: a send queue and a receive queue
//! (or none, when the QP uses an SRQ) under one QP number, resolving the
//! completions of a CQ back to their `wr_id`s. [ref §1.10, §5.7, §5.8](crate::reference).

use crate::cq::{CompletionReject, RecvDone, SendDone, WrResolver};
use crate::cqe::WcOpcode;
use crate::platform::Uar;
use crate::rq::{RecvQueue, RqSlots, SharedReceiveQueue, SrqSlots};
use crate::sq::{SendLane, SendQueue, SqSlots};

/// Send queue + receive queue of one QP, each with its own record storage
/// (`SS`, `RS`: fixed arrays or run-time sized slices).
pub struct QueuePair<U: Uar, SS: SqSlots, RS: RqSlots> {
    /// QP number (what CQEs carry with CQE version 0).
    pub qpn: u32,
    /// User index (what CQEs carry with CQE version 1).
    pub uidx: u32,
    /// CQE version of the CQs this QP reports to (their
    /// [`CompletionQueue::cqe_version`](crate::cq::CompletionQueue::cqe_version)):
    /// 1 = completions name the QP by `uidx`, 0 = by `qpn`.
    pub cqe_version: u8,
    /// The send queue.
    pub sq: SendQueue<U, SS>,
    /// The receive queue, `None` when receives go to an SRQ.
    pub rq: Option<RecvQueue<RS>>,
}

/// Formats the QP's names and both queues (never their device memory).
impl<U: Uar, SS: SqSlots, RS: RqSlots> core::fmt::Debug for QueuePair<U, SS, RS> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QueuePair")
            .field("qpn", &self.qpn)
            .field("uidx", &self.uidx)
            .field("cqe_version", &self.cqe_version)
            .field("sq", &self.sq)
            .field("rq", &self.rq)
            .finish()
    }
}

impl<U: Uar, SS: SqSlots, RS: RqSlots> QueuePair<U, SS, RS> {
    /// A queue pair named `qpn` / `uidx` whose CQs use `cqe_version`.
    pub fn new(
        qpn: u32,
        uidx: u32,
        cqe_version: u8,
        sq: SendQueue<U, SS>,
        rq: Option<RecvQueue<RS>>,
    ) -> Self {
        QueuePair {
            qpn,
            uidx,
            cqe_version,
            sq,
            rq,
        }
    }

    /// Whether a CQE's QP field names this QP: the user index with CQE
    /// version 1, else the QPN (never either). [ref §5.7](crate::reference). With version 1
    /// the CQE's QPN field (reported as `wc.qp_num`) is not cross-checked
    /// against [`Self::qpn`]: the resolver is only given the routing field.
    #[inline(always)]
    pub fn is(&self, qp: u32) -> bool {
        qp == self.routing()
    }

    /// The value a CQE's QP field carries for this QP: the user index with
    /// CQE version 1, else the QPN. [ref §5.7](crate::reference).
    #[inline(always)]
    pub fn routing(&self) -> u32 {
        if self.cqe_version == 1 {
            self.uidx
        } else {
            self.qpn
        }
    }

    /// Moves both queues to RESET ([`SendQueue::reset`],
    /// [`RecvQueue::reset`]) and purges this QP's unpolled completions
    /// from `cqs` ([`CompletionQueue::clean`](crate::cq::CompletionQueue::clean)),
    /// as rdma-core does on a move to RESET ([ref §5.10, §6.4](crate::reference)). Call it
    /// after the device QP was moved to RESET.
    ///
    /// # Safety
    /// As [`SendQueue::reset`]: the device no longer executes this QP.
    pub unsafe fn reset<const N: usize>(&mut self, cqs: &mut [&mut crate::cq::CompletionQueue<N>]) {
        let id = if self.cqe_version == 1 {
            self.uidx
        } else {
            self.qpn
        };
        for cq in cqs.iter_mut() {
            cq.clean(id);
        }
        // SAFETY: forwarded: the device no longer executes this QP.
        unsafe { self.sq.reset() };
        if let Some(rq) = self.rq.as_mut() {
            // SAFETY: as above.
            unsafe { rq.reset() };
        }
    }
}

/// The completion opcode a send slot's `wr_data` override stands for
/// (5 BIND_MW, 6 LOCAL_INV, else SEND = none). [ref §5.7](crate::reference).
#[inline(always)]
pub(crate) fn wc_opcode_of(wr_data: u8) -> WcOpcode {
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
impl<U: Uar, SS: SqSlots, RS: RqSlots> WrResolver for QueuePair<U, SS, RS> {
    #[inline]
    fn send_done(&mut self, qp: u32, wqe_counter: u16) -> Result<SendDone, CompletionReject> {
        if !self.is(qp) {
            return Err(CompletionReject::UnknownQp);
        }
        // SAFETY: the resolver is called by the CQ poller with the counter
        // of a requester CQE the device wrote for this QP; `retire` checks
        // that it names a WQE in flight.
        let r = unsafe { self.sq.retire(wqe_counter) }?;
        Ok(SendDone {
            wr_id: r.wr_id,
            wr_data: wc_opcode_of(r.wr_data),
        })
    }
    #[inline]
    fn recv_done(&mut self, qp: u32, wqe_counter: u16) -> Result<RecvDone, CompletionReject> {
        if !self.is(qp) {
            return Err(CompletionReject::UnknownQp);
        }
        let rq = self.rq.as_mut().ok_or(CompletionReject::NoReceiveQueue)?;
        // SAFETY: as in send_done, for a responder CQE; `retire` checks
        // that it names the oldest outstanding receive.
        let wr_id = unsafe { rq.retire(wqe_counter) }?;
        Ok(RecvDone {
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
    #[inline(always)]
    fn send_lane(&mut self) -> Option<SendLane<'_>> {
        let id = self.routing();
        // SAFETY: `send_done` above retires from `self.sq` exactly the
        // CQEs whose QP field is `self.routing()`.
        unsafe { self.sq.send_lane(id) }
    }
}

/// Several QPs (and optionally one SRQ their receives share) reporting to
/// one CQ: completions are routed by QP number / user index.
pub struct QpSet<'a, U: Uar, SS: SqSlots, RS: RqSlots, SR: SrqSlots> {
    /// The QPs.
    pub qps: &'a mut [QueuePair<U, SS, RS>],
    /// The SRQ receives go to when a QP has no RQ.
    pub srq: Option<&'a mut SharedReceiveQueue<SR>>,
}

impl<U: Uar, SS: SqSlots, RS: RqSlots, SR: SrqSlots> core::fmt::Debug for QpSet<'_, U, SS, RS, SR> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QpSet")
            .field("qps", &self.qps)
            .field("srq", &self.srq)
            .finish()
    }
}

impl<U: Uar, SS: SqSlots, RS: RqSlots, SR: SrqSlots> WrResolver for QpSet<'_, U, SS, RS, SR> {
    fn send_done(&mut self, qp: u32, wqe_counter: u16) -> Result<SendDone, CompletionReject> {
        self.qps
            .iter_mut()
            .find(|q| q.is(qp))
            .ok_or(CompletionReject::UnknownQp)?
            .send_done(qp, wqe_counter)
    }
    fn recv_done(&mut self, qp: u32, wqe_counter: u16) -> Result<RecvDone, CompletionReject> {
        let q = self
            .qps
            .iter_mut()
            .find(|q| q.is(qp))
            .ok_or(CompletionReject::UnknownQp)?;
        if q.rq.is_some() {
            return q.recv_done(qp, wqe_counter);
        }
        let srq = self.srq.as_mut().ok_or(CompletionReject::NoReceiveQueue)?;
        // SAFETY: called by the CQ poller for a responder CQE of a QP that
        // receives through this SRQ; `retire` checks the slot is posted.
        let wr_id = unsafe { srq.retire(wqe_counter) }?;
        Ok(RecvDone {
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
    /// The first QP's send queue (the one [`Self::send_done`] finds first
    /// for its routing value).
    #[inline(always)]
    fn send_lane(&mut self) -> Option<SendLane<'_>> {
        self.qps.first_mut()?.send_lane()
    }
}
