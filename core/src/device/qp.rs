//! Queue pairs created by command: [`QpSpec`], the [`QpHandle`] and its
//! data-path queues, CREATE_QP, QUERY_QP and DESTROY_QP
//! ([ref §3.6, §7.11](crate::reference)). State transitions are in
//! `transitions`.

use super::objects::{Obj, QpLoad};
use super::{Device, DeviceError, HwQpState, Pd, UarMap};
use crate::cmd::{op, ops, Bar0, Clock, CmdError};
use crate::platform::{DmaAllocator, DmaBuf, Uar};
use crate::qp::QpType;
use crate::queue_pair::QueuePair;
use crate::rq::{RecvQueue, RqConfig, RqSlots};
use crate::sq::{SendQueue, SqConfig, SqSlots};

/// QP creation request ([ref §3.6, §7.11](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpSpec {
    /// QP type: RC, UC or UD (the types with a `qpc.st` code,
    /// [`QpType::service_type`]); others are refused.
    pub qp_type: QpType,
    /// Protection domain.
    pub pd: Pd,
    /// Send CQ number.
    pub send_cqn: u32,
    /// Receive CQ number.
    pub recv_cqn: u32,
    /// log2 SQ WQEBBs.
    pub log_sq_size: u8,
    /// log2 RQ WQEs (ignored with an SRQ).
    pub log_rq_size: u8,
    /// RQ WQE shift (log2 stride, ≥ 4).
    pub rq_wqe_shift: u8,
    /// Receive through this SRQ.
    pub srqn: Option<u32>,
    /// User index reported in CQEs (CQE version 1).
    pub user_index: u32,
    /// WRs the send queue may have outstanding (its `max_post`); with
    /// `max_recv_wr`, checked against the CQs' capacity ([ref §3.7](crate::reference): a CQ
    /// must hold a completion for every WR that can be outstanding).
    /// 0 = not counted.
    pub max_send_wr: u32,
    /// WRs the receive queue may have outstanding (0 with an SRQ).
    pub max_recv_wr: u32,
}

/// A QP created by command: number, buffers, geometry, tracked state.
#[derive(Debug, PartialEq, Eq)]
pub struct QpHandle {
    /// QP number.
    pub(crate) qpn: u32,
    /// Whole QP buffer (RQ at 0, SQ at `rq.len`; [ref §3.6](crate::reference)).
    pub(crate) buf: DmaBuf,
    /// Receive part (empty with an SRQ).
    pub(crate) rq: DmaBuf,
    /// Send part.
    pub(crate) sq: DmaBuf,
    /// Doorbell record (8 bytes: RCV, SND).
    pub(crate) dbrec: DmaBuf,
    /// UAR index of the send doorbell.
    pub(crate) uar_index: u32,
    /// The spec it was created from.
    pub(crate) spec: QpSpec,
    /// State the driver believes the QP is in ([ref §6.1](crate::reference)).
    pub(crate) state: HwQpState,
    /// CQE version of the device's CQs (1: completions carry the user
    /// index): how [`QpHandle::queue_pair`] routes completions.
    pub(crate) cqe_version: u8,
}

/// Read-only views of the handle: its fields are the driver's, so safe
/// code cannot change what the driver believes about the object.
impl QpHandle {
    /// QP number.
    pub const fn qpn(&self) -> u32 {
        self.qpn
    }
    /// Whole QP buffer (RQ at 0, SQ at `rq.len`; [ref §3.6](crate::reference)).
    pub const fn buf(&self) -> DmaBuf {
        self.buf
    }
    /// Receive part (empty with an SRQ).
    pub const fn rq(&self) -> DmaBuf {
        self.rq
    }
    /// Send part.
    pub const fn sq(&self) -> DmaBuf {
        self.sq
    }
    /// Doorbell record (8 bytes: RCV, SND).
    pub const fn dbrec(&self) -> DmaBuf {
        self.dbrec
    }
    /// UAR index of the send doorbell.
    pub const fn uar_index(&self) -> u32 {
        self.uar_index
    }
    /// The spec it was created from.
    pub const fn spec(&self) -> QpSpec {
        self.spec
    }
    /// State the driver holds the QP in ([ref §6.1](crate::reference)): the
    /// last transition's, or the device's as [`Device::query_qp`] last
    /// read it (the device moves a QP to ERR on its own after an error
    /// completion; only a query sees that).
    pub const fn state(&self) -> HwQpState {
        self.state
    }
    /// CQE version of the CQs this QP reports to.
    pub const fn cqe_version(&self) -> u8 {
        self.cqe_version
    }
}

impl QpHandle {
    /// SQ WQEBBs.
    pub fn sq_wqebbs(&self) -> u32 {
        1 << self.spec.log_sq_size
    }
    /// RQ WQEs (0 with an SRQ).
    pub fn rq_wqes(&self) -> u32 {
        if self.spec.srqn.is_some() {
            0
        } else {
            1 << self.spec.log_rq_size
        }
    }
    /// The data-path send queue over this QP's SQ and doorbell record
    /// (`dbrec + 4` is the SND word), keeping its per-WQEBB records in
    /// `slots`. `cfg.qpn` is overwritten with the QPN. `None` unless
    /// `slots.len()` is exactly this QP's send ring ([`Self::sq_wqebbs`]):
    /// the queue cannot disagree with the geometry the device was given.
    ///
    /// # Safety
    /// Call at most once per handle; drop the queue before destroying the QP.
    pub unsafe fn send_queue<U: Uar, S: SqSlots>(
        &self,
        uar: U,
        mut cfg: SqConfig,
        slots: S,
    ) -> Option<SendQueue<U, S>> {
        if slots.as_ref().len() != self.sq_wqebbs() as usize {
            return None;
        }
        cfg.qpn = self.qpn;
        // SAFETY: SQ memory and the record are this QP's alone; the caller
        // guarantees one queue object.
        unsafe { SendQueue::new(self.sq, self.dbrec, uar, cfg, slots) }
    }
    /// The data-path receive queue over this QP's RQ; `None` unless
    /// `slots.len()` is exactly this QP's receive ring ([`Self::rq_wqes`]).
    ///
    /// # Safety
    /// As [`QpHandle::send_queue`].
    pub unsafe fn recv_queue<S: RqSlots>(&self, cfg: RqConfig, slots: S) -> Option<RecvQueue<S>> {
        if slots.as_ref().len() != self.rq_wqes() as usize {
            return None;
        }
        // SAFETY: as in `send_queue`.
        unsafe { RecvQueue::new(self.rq, self.dbrec, cfg, slots) }
    }
    /// The data-path queue pair over this QP: its send queue, its receive
    /// queue (none when the QP receives through an SRQ; `rq_slots` is then
    /// dropped), the QPN and the user index CQEs carry. Both queues start
    /// disabled: enable them as the QP reaches INIT (receive) and RTS
    /// (send). `None` when a storage length disagrees with the geometry.
    ///
    /// # Safety
    /// As [`QpHandle::send_queue`]; do not also call `send_queue` or
    /// `recv_queue` on this handle.
    pub unsafe fn queue_pair<U: Uar, SS: SqSlots, RS: RqSlots>(
        &self,
        uar: U,
        sq: SqConfig,
        rq: RqConfig,
        sq_slots: SS,
        rq_slots: RS,
    ) -> Option<QueuePair<U, SS, RS>> {
        // SAFETY: forwarded: one queue object per handle and queue.
        let send = unsafe { self.send_queue(uar, sq, sq_slots) }?;
        let recv = match self.spec.srqn {
            Some(_) => None,
            // SAFETY: as above.
            None => Some(unsafe { self.recv_queue(rq, rq_slots) }?),
        };
        Some(QueuePair {
            qpn: self.qpn,
            uidx: self.spec.user_index,
            cqe_version: self.cqe_version,
            sq: send,
            rq: recv,
        })
    }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// CREATE_QP: allocates the buffer (RQ then SQ, [ref §3.6](crate::reference)) and the
    /// doorbell record, and creates the QP in RESET ([ref §7.11](crate::reference)).
    pub fn create_qp(&mut self, spec: QpSpec) -> Result<QpHandle, DeviceError> {
        let Some(st) = spec.qp_type.service_type() else {
            return Err(DeviceError::UnsupportedQpType(spec.qp_type));
        };
        let lim = self.hca.log_max_qp_sz;
        for (what, v) in [
            ("log_sq_size", spec.log_sq_size),
            ("log_rq_size", spec.log_rq_size),
        ] {
            if v > lim {
                return Err(DeviceError::Limit {
                    what,
                    requested: v as u64,
                    max: lim as u64,
                });
            }
        }
        if spec.rq_wqe_shift < 4 || spec.rq_wqe_shift > 11 {
            return Err(DeviceError::Limit {
                what: "rq_wqe_shift",
                requested: spec.rq_wqe_shift as u64,
                max: 11,
            });
        }
        if self.objs.is_full() {
            return Err(DeviceError::TableFull { what: "objects" });
        }
        let load = QpLoad {
            send_cqn: spec.send_cqn,
            recv_cqn: spec.recv_cqn,
            send: spec.max_send_wr,
            recv: if spec.srqn.is_some() {
                0
            } else {
                spec.max_recv_wr
            },
        };
        self.check_cq_room(&load)?;
        let rq_bytes = if spec.srqn.is_some() {
            0
        } else {
            (1usize << spec.log_rq_size) << spec.rq_wqe_shift
        };
        let sq_bytes = (1usize << spec.log_sq_size) * crate::wqe::SEND_WQE_BB;
        let total = (rq_bytes + sq_bytes).next_multiple_of(4096);
        let npages = total / 4096;
        Self::check_pages(npages)?;
        let buf = self.alloc_dma(total, "QP buffer")?;
        let dbrec = match self.alloc_dma(64, "QP doorbell record") {
            Ok(d) => d,
            Err(e) => {
                self.free_dma(&[buf]);
                return Err(e);
            }
        };
        let p = ops::QpParams {
            st,
            pd: spec.pd.0,
            uar_page: self.uar,
            log_sq_size: spec.log_sq_size,
            no_sq: false,
            log_rq_size: if spec.srqn.is_some() {
                0
            } else {
                spec.log_rq_size
            },
            log_rq_stride: spec.rq_wqe_shift - crate::cmd::layout::qpc::LOG_RQ_STRIDE_BASE,
            srqn: spec.srqn,
            ts_format: ops::qp_ts_format(self.roce.map_or(0, |r| r.qp_ts_format)),
            cqn_snd: spec.send_cqn,
            cqn_rcv: spec.recv_cqn,
            dbr_addr: dbrec.iova,
            user_index: spec.user_index,
            pages_iova: buf.iova,
            npages,
        };
        let r = ops::create_qp(&mut self.inb, &p);
        if let Err(e) = self.exec(r) {
            if !matches!(e, CmdError::Timeout { .. }) {
                self.free_dma(&[buf, dbrec]);
            }
            return Err(e.into());
        }
        let qpn = ops::parse_obj_id(&self.outb);
        self.track(Obj::Qp(qpn, buf, dbrec, load))?;
        self.commit_cq_load(&load, true);
        Ok(QpHandle {
            qpn,
            buf,
            rq: buf.slice(0, rq_bytes).unwrap_or(buf),
            sq: buf.slice(rq_bytes, sq_bytes).unwrap_or(buf),
            dbrec: dbrec.slice(0, 8).unwrap_or(dbrec),
            uar_index: self.uar,
            spec,
            state: HwQpState::Reset,
            cqe_version: self.hca.cqe_version.min(1),
        })
    }

    /// QUERY_QP; also refreshes the tracked state with the device's (a
    /// QP the device moved to ERR after an error completion is held in
    /// ERR from here on). The output is checked first: a state code
    /// outside the QP state table ([`HwQpState::Other`], SQ draining or
    /// suspended, which no command here enters), a service type other
    /// than the QP's, or an MTU code other than 0 (unset) and 1 … 5 is
    /// [`DeviceError::BadQpQuery`], and the tracked state is left as it
    /// was.
    pub fn query_qp(&mut self, qp: &mut QpHandle) -> Result<ops::QpQuery, DeviceError> {
        let r = ops::query_qp(&mut self.inb, qp.qpn);
        self.exec(r)?;
        let q = ops::parse_query_qp(&self.outb[..r.out_len]);
        let bad = |field, value: u32| DeviceError::BadQpQuery {
            qpn: qp.qpn,
            field,
            value,
        };
        if matches!(
            q.state,
            HwQpState::Other(_) | HwQpState::SqDraining | HwQpState::Suspended
        ) {
            return Err(bad("state", q.state.bits() as u32));
        }
        if qp.spec.qp_type.service_type().map(|s| s.code()) != Some(q.st) {
            return Err(bad("st", q.st as u32));
        }
        if q.mtu > 5 {
            return Err(bad("mtu", q.mtu as u32));
        }
        qp.state = q.state;
        Ok(q)
    }
    /// DESTROY_QP and free its memory.
    pub fn destroy_qp(&mut self, qp: QpHandle) -> Result<(), DeviceError> {
        let r = ops::with_obj(&mut self.inb, op::DESTROY_QP, qp.qpn);
        self.exec(r)?;
        if let Some(Obj::Qp(_, a, b, load)) =
            self.untrack(|o| matches!(o, Obj::Qp(x, ..) if *x == qp.qpn))
        {
            self.commit_cq_load(&load, false);
            self.free_dma(&[a, b]);
        }
        Ok(())
    }
}
