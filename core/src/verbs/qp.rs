//! [`QueuePair`]: a QP created from verbs capabilities, moved through its
//! states with verbs attributes, posting and completing through checked,
//! safe calls.

use super::qp_attr::{InitAttr, QpAttr, QpCap, RtrAttr, RtsAttr};
use super::send_wr::{check_send, send_sge, SendWr};
use super::srq::SrqLink;
use super::{Access, CompletionQueue, Error, Owner, ProtectionDomain, RecvWr};
use crate::cmd::ops::{HwQpState, IbMtu, Init2Rtr, Rst2Init, Rtr2Rts};
use crate::cq::{CompletionReject, RecvDone, SendDone, WrResolver};
use crate::device::QpHandle;
use crate::platform::Uar;
use crate::rq::RqSlot;
use crate::rq::{RecvError, RecvErrorKind};
use crate::sizing::QpType;
use crate::sq::{PostError, PostErrorKind, SqSlot};
use core::fmt;
use core::marker::PhantomData;

/// A transition by command (what the context is asked to run).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Modify {
    Init(Rst2Init),
    Rtr(Init2Rtr),
    Rts(Rtr2Rts),
    Err,
    Reset,
}

/// A queue pair (`ibv_qp`) with `SQ` send WQEBBs and `RQ` receive WQEs of
/// storage, which must equal the geometry sizing gave the device.
///
/// It borrows its PD and CQs, and every region its WRs name must outlive it
/// (`'a`): dropping it destroys the QP on the device before any of them can
/// go.
pub struct QueuePair<'a, U: Uar, const SQ: usize, const RQ: usize> {
    pub(super) inner: crate::queue_pair::QueuePair<U, [SqSlot; SQ], [RqSlot; RQ]>,
    handle: Option<QpHandle>,
    qp_type: QpType,
    cap: QpCap,
    log_msg_max: u8,
    pub(crate) send_cq: &'a CompletionQueue<'a>,
    pub(crate) recv_cq: &'a CompletionQueue<'a>,
    srq: Option<SrqLink<'a>>,
    /// The identity of its PD: the regions its WRs name must be in it.
    pub(super) domain: u64,
    owner: &'a dyn Owner,
    _pd: PhantomData<&'a ProtectionDomain<'a>>,
}

impl<U: Uar, const SQ: usize, const RQ: usize> fmt::Debug for QueuePair<'_, U, SQ, RQ> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueuePair")
            .field("qpn", &self.qp_num())
            .field("qp_type", &self.qp_type)
            .field("state", &self.state())
            .field("cap", &self.cap)
            .finish()
    }
}

fn check(attr: &'static str, value: u64, max: u64) -> Result<(), Error> {
    if value > max {
        return Err(Error::InvalidAttr { attr, value, max });
    }
    Ok(())
}

/// `log2` of a verbs RDMA READ/atomic depth, rounded up (0 and 1 give 0).
fn log_depth(n: u8) -> u8 {
    if n <= 1 {
        0
    } else {
        (u8::BITS - (n - 1).leading_zeros()) as u8
    }
}

impl<'a, U: Uar, const SQ: usize, const RQ: usize> QueuePair<'a, U, SQ, RQ> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        inner: crate::queue_pair::QueuePair<U, [SqSlot; SQ], [RqSlot; RQ]>,
        handle: QpHandle,
        qp_type: QpType,
        cap: QpCap,
        log_msg_max: u8,
        send_cq: &'a CompletionQueue<'a>,
        recv_cq: &'a CompletionQueue<'a>,
        srq: Option<SrqLink<'a>>,
        domain: u64,
        owner: &'a dyn Owner,
    ) -> Self {
        send_cq.attached.set(send_cq.attached.get() + 1);
        recv_cq.attached.set(recv_cq.attached.get() + 1);
        if let Some(l) = srq {
            let a = l.0.attached();
            a.set(a.get() + 1);
        }
        QueuePair {
            inner,
            handle: Some(handle),
            qp_type,
            cap,
            log_msg_max,
            send_cq,
            recv_cq,
            srq,
            domain,
            owner,
            _pd: PhantomData,
        }
    }

    /// QP number.
    pub fn qp_num(&self) -> u32 {
        self.inner.qpn
    }
    /// Transport.
    pub fn qp_type(&self) -> QpType {
        self.qp_type
    }
    /// The capacities read back (as `ibv_create_qp` rewrites `cap`).
    pub fn cap(&self) -> QpCap {
        self.cap
    }
    /// The state the driver holds the QP in: a cached software view, set
    /// by the transitions (`to_init` … `to_reset`) and refreshed by
    /// [`QueuePair::query_qp`]. The device moves a QP to ERR on its own
    /// (an RC WR that completes in error, e.g. a remote access error):
    /// this says so only after a query has seen it.
    pub fn state(&self) -> HwQpState {
        self.handle.as_ref().map_or(HwQpState::Reset, |h| h.state)
    }

    /// Asks the device for the QP's attributes (QUERY_QP, `ibv_query_qp`)
    /// and refreshes [`QueuePair::state`] with the state it reports: after
    /// a query that sees ERR, the QP is held in ERR (further transitions
    /// are checked from ERR, as after [`QueuePair::to_err`]). The output
    /// is checked ([`DeviceError::BadQpQuery`](crate::device::DeviceError::BadQpQuery)
    /// for a state code outside the state table, another QP type's
    /// service type, or an invalid MTU code); on error the cached state is
    /// unchanged.
    pub fn query_qp(&mut self) -> Result<QpAttr, Error> {
        let h = self.handle.as_mut().ok_or(Error::Unsupported {
            what: "a destroyed QP",
        })?;
        let q = self.owner.query_qp(h)?;
        Ok(QpAttr {
            qp_state: q.state,
            path_mtu: IbMtu::from_code(q.mtu),
            dest_qp_num: q.remote_qpn,
            rq_psn: q.rq_psn,
            sq_psn: q.sq_psn,
            port_num: q.port,
        })
    }
    /// Send WRs posted and not yet completed.
    pub fn send_outstanding(&self) -> u32 {
        self.inner.sq.outstanding()
    }

    fn modify(&mut self, m: Modify) -> Result<(), Error> {
        let h = self.handle.as_mut().ok_or(Error::Unsupported {
            what: "a destroyed QP",
        })?;
        self.owner.modify_qp(h, m)?;
        Ok(())
    }

    /// RESET → INIT; receives may be posted from here on.
    pub fn to_init(&mut self, a: &InitAttr) -> Result<(), Error> {
        let f = a.qp_access_flags;
        self.modify(Modify::Init(Rst2Init {
            port: a.port_num,
            pkey_index: a.pkey_index,
            remote_read: f.contains(Access::REMOTE_READ),
            remote_write: f.contains(Access::REMOTE_WRITE),
            remote_atomic: f.contains(Access::REMOTE_ATOMIC),
            qkey: a.qkey,
        }))?;
        if let Some(rq) = self.inner.rq.as_mut() {
            rq.enable();
        }
        Ok(())
    }

    /// INIT → RTR toward the peer in `a`.
    pub fn to_rtr(&mut self, a: &RtrAttr) -> Result<(), Error> {
        check("dest_qp_num", a.dest_qp_num as u64, 0xff_ffff)?;
        check("rq_psn", a.rq_psn as u64, 0xff_ffff)?;
        check("min_rnr_timer", a.min_rnr_timer as u64, 31)?;
        let path = self.owner.address_path(&a.ah, self.qp_type)?;
        self.modify(Modify::Rtr(Init2Rtr {
            mtu: a.path_mtu as u8,
            log_msg_max: self.log_msg_max,
            remote_qpn: a.dest_qp_num,
            rq_psn: a.rq_psn,
            log_rra_max: log_depth(a.max_dest_rd_atomic),
            min_rnr_nak: a.min_rnr_timer,
            path,
        }))
    }

    /// RTR → RTS; sends may be posted from here on.
    pub fn to_rts(&mut self, a: &RtsAttr) -> Result<(), Error> {
        check("sq_psn", a.sq_psn as u64, 0xff_ffff)?;
        check("timeout", a.timeout as u64, 31)?;
        check("retry_cnt", a.retry_cnt as u64, 7)?;
        check("rnr_retry", a.rnr_retry as u64, 7)?;
        self.modify(Modify::Rts(Rtr2Rts {
            sq_psn: a.sq_psn,
            retry_count: a.retry_cnt,
            rnr_retry: a.rnr_retry,
            ack_timeout: a.timeout,
            log_sra_max: log_depth(a.max_rd_atomic),
        }))?;
        self.inner.sq.enable();
        Ok(())
    }

    /// Any state → ERR: outstanding work completes with flush errors.
    pub fn to_err(&mut self) -> Result<(), Error> {
        self.modify(Modify::Err)
    }

    /// Any state → RESET: this QP's completions still in its CQs are
    /// dropped (an SRQ receive one of them consumed goes back to the SRQ,
    /// its WR discarded), the queues forget every WR, and posting stops
    /// until the QP is brought up again (error → reset → reuse).
    pub fn to_reset(&mut self) -> Result<(), Error> {
        self.modify(Modify::Reset)?;
        // The QP's completions still in its CQs are dropped (as
        // `mlx5_cq_clean` does at reset), then the queues forget their WRs.
        // SAFETY: 2RST succeeded: the device no longer executes the QP.
        unsafe { self.purge_completions() };
        // SAFETY: 2RST succeeded: the device no longer executes the QP.
        unsafe { self.inner.sq.reset() };
        if let Some(rq) = self.inner.rq.as_mut() {
            // SAFETY: as above.
            unsafe { rq.reset() };
        }
        Ok(())
    }

    /// Posts send WRs; one doorbell per few WRs. Checked before anything is
    /// written: the QP state, queue room, SGE count, inline size, WQE size,
    /// that every SGE is in a region of this QP's protection domain
    /// ([`PostErrorKind::ForeignSge`]: not another PD's, not another
    /// [`Context`](super::Context)'s), and that the device writes only into
    /// [`Access::LOCAL_WRITE`] regions (RDMA READ destinations; an atomic's
    /// 8-byte result, which its first SGE must hold). Memory-window binds
    /// and local invalidation are not offered here (they change what keys
    /// reach); the raw queue has them. On error, the WRs before `index`
    /// were posted.
    pub fn post_send(&mut self, wrs: &[SendWr<'_, 'a>]) -> Result<(), PostError> {
        let (qp_type, max_sge, domain) = (self.qp_type, self.cap.max_send_sge, self.domain);
        let sq = &mut self.inner.sq;
        super::gather::post_chunked(
            wrs,
            |wr| check_send(wr, qp_type),
            |wr, j, s| send_sge(wr, j, s, domain),
            |num| PostErrorKind::TooManySges {
                num,
                max: Some(max_sge),
            },
            |chunk, lists| {
                let raw: heapless::Vec<crate::sq::SendWr<'_>, { super::gather::CHUNK }> = chunk
                    .iter()
                    .zip(lists)
                    .map(|(wr, sgl)| crate::sq::SendWr {
                        wr_id: wr.wr_id,
                        op: wr.op,
                        sgl,
                        flags: wr.flags,
                        ud: wr.ud,
                    })
                    .collect();
                // SAFETY: every SGE comes from a LocalSge: inside a live
                // region (bounds checked when the token was made) of this
                // QP's PD, so of this QP's device (`send_sge` compared the
                // domains), whose key and buffer outlive this QP ('a), and
                // dropping the QP destroys it on the device first.
                // `check_send`/`send_sge` refused device writes into regions
                // without LOCAL_WRITE, atomics whose result SGE is under 8
                // bytes, and window binds; inline SGEs were translated to CPU
                // addresses inside their region's buffer (exposed
                // provenance), readable now.
                // No Rust reference points at those buffers.
                unsafe { sq.post_send_raw(&raw) }
            },
            |index, kind| PostError { index, kind },
            |e, by| PostError {
                index: e.index + by,
                kind: e.kind,
            },
        )
    }

    /// Posts receive WRs (the QP must be in INIT or later). Every SGE must
    /// lie in a [`Access::LOCAL_WRITE`] region of this QP's protection
    /// domain ([`RecvErrorKind::ForeignSge`] otherwise); a refused WR writes
    /// nothing, the WRs before it are posted.
    pub fn post_recv(&mut self, wrs: &[RecvWr<'_, 'a>]) -> Result<(), RecvError> {
        let Some(rq) = self.inner.rq.as_mut() else {
            // Receives go through the SRQ: post them there.
            return Err(RecvError {
                index: 0,
                kind: RecvErrorKind::TooManySges {
                    num: wrs.first().map_or(0, |w| w.sgl.len()),
                    max: None,
                },
            });
        };
        super::recv::post_checked(wrs, self.cap.max_recv_sge, self.domain, |raw| {
            // SAFETY: every SGE is a LocalSge inside a live region with
            // LOCAL_WRITE of this QP's PD, so of this QP's device (both
            // checked by `post_checked`), whose key and buffer
            // outlive this QP ('a); dropping the QP destroys it on the
            // device first; no Rust reference points at DmaBuffer memory.
            unsafe { rq.post_recv_raw(raw) }
        })
    }
}

/// Whether a CQE of opcode `op` consumed a receive WQE: the responder
/// opcodes (RESP_WR_IMM, RESP_SEND, RESP_SEND_IMM, RESP_SEND_INV) and
/// RESP_ERR, the CQEs the poller retires through `recv_done`
/// ([`crate::cq`]'s `complete`).
fn consumes_receive(op: u8) -> bool {
    matches!(op, 1..=4 | 14)
}

impl<U: Uar, const SQ: usize, const RQ: usize> QueuePair<'_, U, SQ, RQ> {
    /// Drops this QP's unpolled completions from its CQs (as
    /// `mlx5_cq_clean` does at reset and destroy). With an SRQ, each
    /// dropped completion that consumed an SRQ receive (a responder CQE in
    /// the receive CQ, as the poller would retire it) gives its slot back
    /// to the SRQ's free list; its WR is discarded. The slot is checked:
    /// one that holds no posted WQE (a lying or repeated CQE) frees
    /// nothing, so each slot goes back at most once. A CQ in use (borrowed)
    /// is left alone.
    ///
    /// # Safety
    /// The device no longer executes this QP (2RST or DESTROY_QP
    /// succeeded).
    unsafe fn purge_completions(&self) {
        let key = if self.inner.cqe_version == 1 {
            self.inner.uidx
        } else {
            self.inner.qpn
        };
        let srq = self.srq;
        let free_srq_slot = |c: &crate::cqe::Cqe64| {
            if let Some(l) = srq.filter(|_| consumes_receive(c.opcode())) {
                // SAFETY: `c` is a software-owned CQE of this QP's receive
                // CQ naming this QP, with a responder opcode: one the
                // device wrote for a QP receiving through this SRQ (the
                // completion the poller would retire through it); the
                // device no longer executes the QP (caller's contract),
                // and `retire` frees the slot only if it holds a posted
                // WQE. Dropped with the CQE, the WR is never reported.
                let _ = unsafe { l.0.retire(c.wqe_counter()) };
            }
        };
        if let Ok(mut q) = self.recv_cq.cq.try_borrow_mut() {
            q.clean_with(key, free_srq_slot);
        }
        if !core::ptr::eq(self.send_cq, self.recv_cq) {
            if let Ok(mut q) = self.send_cq.cq.try_borrow_mut() {
                // A responder CQE here would not be this QP's receive
                // (the poller refuses it): dropped, no SRQ slot freed.
                q.clean(key);
            }
        }
    }

    /// Whether a CQE's QP field names this QP (user index with CQE
    /// version 1, else QPN).
    pub(crate) fn named(&self, qp: u32) -> bool {
        self.inner.is(qp)
    }
    /// A requester CQE for this QP.
    pub(crate) fn send_done(&mut self, qp: u32, c: u16) -> Result<SendDone, CompletionReject> {
        self.inner.send_done(qp, c)
    }
    /// This QP's send queue as a lane for the lean poller (the queue
    /// [`Self::send_done`] retires from).
    pub(crate) fn send_lane(&mut self) -> Option<crate::sq::SendLane<'_>> {
        self.inner.send_lane()
    }
    /// A responder CQE for this QP: its own RQ or its SRQ.
    pub(crate) fn recv_done(&mut self, qp: u32, c: u16) -> Result<RecvDone, CompletionReject> {
        match self.srq {
            // SAFETY: called by the CQ poller for a responder CQE of this
            // QP, which receives through this SRQ; `retire` checks that
            // the slot holds a posted WQE.
            Some(l) => unsafe { l.0.retire(c) }.map(|wr_id| RecvDone {
                wr_id,
                rx_csum: false,
            }),
            None => self.inner.recv_done(qp, c),
        }
    }
}

impl<U: Uar, const SQ: usize, const RQ: usize> Drop for QueuePair<'_, U, SQ, RQ> {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            if self.owner.destroy_qp(h) {
                // Destroyed: nothing reports to the CQs any more. Its
                // unpolled completions go, freeing the SRQ slots they
                // name (other QPs may go on using the SRQ).
                // SAFETY: DESTROY_QP succeeded: the device no longer
                // executes the QP.
                unsafe { self.purge_completions() };
                let s = self.send_cq.attached.get();
                self.send_cq.attached.set(s.saturating_sub(1));
                let r = self.recv_cq.attached.get();
                self.recv_cq.attached.set(r.saturating_sub(1));
                if let Some(l) = self.srq {
                    let a = l.0.attached();
                    a.set(a.get().saturating_sub(1));
                }
            }
        }
    }
}
