//! One script's queues (a CQ, two QPs, an SRQ) over one [`Mem`], with the
//! model of what they hold, and the script's steps (posts, device CQEs,
//! resets, polls).

use bareverbs::cq::CompletionQueue;
use bareverbs::cqe::{CqeOpcode, CqeSize, MiniCqeFormat};
use bareverbs::platform::MemUar;
use bareverbs::qp::QpType;
use bareverbs::queue_pair::QueuePair;
use bareverbs::rq::{RecvQueue, RecvWr, RqConfig, RqSlot, SharedReceiveQueue, SrqConfig, SrqSlot};
use bareverbs::sq::{SendFlags, SendOp, SendQueue, SendWr, Sge, SqConfig, SqSlot};

use super::check::{check, poll, Trace};
use super::device::{device_cqe, device_session};
use super::mem::{dma, peek, sq_ctrl, Ptrs};
use super::model::{Fifo, Model, RecvRec, SendRec};
use super::{Bytes, Qp, NCQE, QPN, RQ, SQ, SRQ, UIDX};

/// The SGE every posted WR carries (never dereferenced: no device).
pub(super) const SGE: Sge = Sge {
    addr: 0x4000,
    length: 16,
    lkey: 5,
};

/// The send queue configuration of the QP numbered `qpn`.
pub(super) fn sq_cfg(qpn: u32) -> SqConfig {
    SqConfig::new(QpType::Rc, 4, 4).qpn(qpn)
}

/// QP `k` over `p`'s rings, enabled; `with_rq` gives it QP 0's RQ.
///
/// # Safety
/// `p` points into a [`Mem`] that outlives the QP and is accessed only
/// through raw pointers while the QP lives.
pub(super) unsafe fn mk_qp(p: Ptrs, k: usize, with_rq: bool, version: u8) -> Qp {
    // SAFETY: the caller's contract; each QP has its own SQ ring and
    // record.
    let sq = unsafe {
        SendQueue::new(
            dma(p.sq.wrapping_add(k * SQ * 64), SQ * 64),
            dma(p.qp_db.wrapping_add(k * 8), 8),
            MemUar::default(),
            sq_cfg(QPN[k]),
            [SqSlot::default(); SQ],
        )
    }
    .expect("sq");
    let rq = with_rq.then(|| {
        let cfg = RqConfig {
            wqe_shift: 4,
            max_gs: 1,
            max_post: 4,
        };
        // SAFETY: the caller's contract (record word 0 of QP 0).
        unsafe {
            RecvQueue::new(
                dma(p.rq, RQ * 16),
                dma(p.qp_db, 8),
                cfg,
                [RqSlot::default(); RQ],
            )
        }
        .expect("rq")
    });
    let mut q = QueuePair::new(QPN[k], UIDX[k], version, sq, rq);
    q.sq.enable();
    if let Some(r) = q.rq.as_mut() {
        r.enable();
    }
    q
}

/// One script's queues (a CQ, two QPs, an SRQ) over one [`Mem`], and the
/// model of what they hold. Fields drop in the order the original locals
/// did (model first, CQ last).
pub(super) struct Scene {
    pub(super) m: Model,
    pub(super) srq: SharedReceiveQueue<[SrqSlot; SRQ]>,
    pub(super) qps: [Qp; 2],
    pub(super) cq: CompletionQueue<NCQE>,
    pub(super) p: Ptrs,
    pub(super) version: u8,
}

impl Scene {
    /// The queues over `p`: CQE `version`, mini-CQE format `mini`.
    ///
    /// # Safety
    /// `p` points into a [`Mem`] that outlives the scene and is accessed
    /// only through raw pointers while the scene lives.
    pub(super) unsafe fn new(p: Ptrs, version: u8, mini: MiniCqeFormat) -> Scene {
        // SAFETY: the caller's contract.
        let mut cq = unsafe {
            CompletionQueue::<NCQE>::new(
                dma(p.cq, NCQE * 64),
                dma(p.cq_db, 8),
                7,
                CqeSize::B64,
                version,
            )
        }
        .expect("cq");
        cq.init_ring();
        cq.set_mini_cqe_format(mini);
        // SAFETY: the caller's contract.
        let qps = unsafe { [mk_qp(p, 0, true, version), mk_qp(p, 1, false, version)] };
        let srq_cfg = SrqConfig {
            wqe_shift: 5,
            max_gs: 1,
            nwqes: SRQ as u32,
            wait_queue: false,
        };
        // SAFETY: the caller's contract.
        let srq = unsafe {
            SharedReceiveQueue::new(
                dma(p.srq, SRQ * 32),
                dma(p.srq_db, 8),
                srq_cfg,
                [SrqSlot::default(); SRQ],
            )
        }
        .expect("srq");
        let m = Model {
            sends: [Fifo::new(), Fifo::new()],
            recvs: Fifo::new(),
            srq: Fifo::new(),
            next_id: 1,
            dev_rq: 0,
            pi: 0,
            recent: [0; 4],
        };
        Scene {
            m,
            srq,
            qps,
            cq,
            p,
            version,
        }
    }

    /// One script step: op `op`, further bytes from `b`.
    pub(super) fn step(&mut self, op: u8, b: &mut Bytes<'_>, trace: &mut Trace) {
        match op % 9 {
            0 => self.post_sends(op, b),
            1 => self.post_recv(),
            2 => self.post_srq_recv(),
            3 => self.honest_send_cqe(op, b),
            4 => self.honest_recv_cqe(op, b),
            5 => self.hostile_cqe(op, b),
            6 => self.compressed_session(op, b),
            7 => self.reset_qp0(op),
            _ => {
                let ne = 1 + (op >> 4) as usize % 4;
                self.poll(ne, trace);
            }
        }
    }

    /// Polls up to `ne` completions; see [`poll`].
    pub(super) fn poll(&mut self, ne: usize, trace: &mut Trace) {
        let Scene {
            cq,
            qps,
            srq,
            m,
            version,
            ..
        } = self;
        poll(cq, qps, srq, m, ne, *version, trace);
    }

    /// The invariants; see [`check`].
    pub(super) fn check(&self) {
        let p = self.p;
        check(&self.qps, &self.srq, &self.m, p.sq, p.rq, p.srq);
    }

    /// Op 0: post 1..3 sends on QP k (`op >> 4 & 1`), each 1 or 2 WQEBBs.
    pub(super) fn post_sends(&mut self, op: u8, b: &mut Bytes<'_>) {
        let Scene { qps, m, p, .. } = self;
        let sq_p = p.sq;
        let k = (op >> 4) as usize & 1;
        let n = 1 + (b.u8() % 3) as usize;
        for _ in 0..n {
            let shape = b.u8();
            let sgl = [SGE; 4];
            let nsge = if shape & 1 != 0 { 4 } else { 1 };
            let mut wr = SendWr::new(m.next_id, SendOp::Send, &sgl[..nsge]);
            if shape & 2 != 0 {
                wr = wr.with_flags(SendFlags::SIGNALED);
            }
            let q = &mut qps[k];
            let (ctr, seq) = (q.sq.cur_post() as u16, q.sq.head());
            // SAFETY: memory-only ring; the SGEs are never
            // dereferenced (not inline, no device).
            match unsafe { q.sq.post_send_raw(&[wr]) } {
                Ok(()) => {
                    m.sends[k].push(SendRec {
                        id: m.next_id,
                        seq,
                        ctr,
                        ctrl: sq_ctrl(sq_p, k, ctr),
                    });
                    m.next_id += 1;
                }
                Err(_) => assert_eq!(m.sends[k].n, 4, "refused with room"),
            }
        }
    }

    /// Op 1: post a receive on QP 0's RQ.
    pub(super) fn post_recv(&mut self) {
        let Scene { qps, m, p, .. } = self;
        let rq_p = p.rq;
        let rq = qps[0].rq.as_mut().expect("rq");
        let slot = (rq.head() as usize & (RQ - 1)) as u16;
        let sgl = [SGE];
        // SAFETY: memory-only ring; the SGE is never dereferenced (no
        // device).
        match unsafe {
            rq.post_recv_raw(&[RecvWr {
                wr_id: m.next_id,
                sgl: &sgl,
            }])
        } {
            Ok(()) => {
                m.recvs.push(RecvRec {
                    id: m.next_id,
                    slot,
                    seg: peek::<16>(rq_p.wrapping_add(slot as usize * 16)),
                });
                m.next_id += 1;
            }
            Err(_) => assert_eq!(m.recvs.n, 4, "RQ refused with room"),
        }
    }

    /// Op 2: post a receive on the SRQ.
    pub(super) fn post_srq_recv(&mut self) {
        let Scene { srq, m, p, .. } = self;
        let srq_p = p.srq;
        let slot = srq.head() as u16;
        let sgl = [SGE];
        // SAFETY: memory-only ring; the SGE is never dereferenced (no
        // device).
        match unsafe {
            srq.post_recv_raw(&[RecvWr {
                wr_id: m.next_id,
                sgl: &sgl,
            }])
        } {
            Ok(()) => {
                m.srq.push(RecvRec {
                    id: m.next_id,
                    slot,
                    seg: peek::<16>(srq_p.wrapping_add(slot as usize * 32 + 16)),
                });
                m.next_id += 1;
            }
            Err(_) => assert_eq!(m.srq.n, 3, "SRQ refused with room"),
        }
    }

    /// Op 3: honest send completion (or flush) of a WR in flight.
    pub(super) fn honest_send_cqe(&mut self, op: u8, b: &mut Bytes<'_>) {
        let Scene { cq, m, p, .. } = self;
        let cq_p = p.cq;
        let k = (op >> 4) as usize & 1;
        let it = m.sends[k].items();
        if !it.is_empty() {
            let r = it[b.u8() as usize % it.len()];
            let opc = if op & 0x20 != 0 {
                CqeOpcode::ReqErr as u8
            } else {
                CqeOpcode::Req as u8
            };
            m.recent[(r.ctr & 3) as usize] = r.ctr;
            device_cqe(cq_p, &mut m.pi, cq.consumer_index(), opc, k, r.ctr);
        }
    }

    /// Op 4: honest receive completion (RQ in order, or an SRQ slot).
    pub(super) fn honest_recv_cqe(&mut self, op: u8, b: &mut Bytes<'_>) {
        let Scene { cq, qps, m, p, .. } = self;
        let cq_p = p.cq;
        if op & 0x10 == 0 {
            let tail = qps[0].rq.as_ref().expect("rq").tail() as u16;
            if m.dev_rq.wrapping_sub(tail) > 8 {
                m.dev_rq = tail;
            }
            let c = m.dev_rq;
            m.dev_rq = m.dev_rq.wrapping_add(1);
            let opc = if op & 0x20 != 0 {
                CqeOpcode::RespErr as u8
            } else {
                CqeOpcode::RespSend as u8
            };
            device_cqe(cq_p, &mut m.pi, cq.consumer_index(), opc, 0, c);
        } else if m.srq.n > 0 {
            let r = m.srq.items()[b.u8() as usize % m.srq.n];
            device_cqe(
                cq_p,
                &mut m.pi,
                cq.consumer_index(),
                CqeOpcode::RespSend as u8,
                1,
                r.slot,
            );
        }
    }

    /// Op 5: hostile CQE: any opcode, any QP, any counter.
    pub(super) fn hostile_cqe(&mut self, op: u8, b: &mut Bytes<'_>) {
        let Scene { cq, qps, m, p, .. } = self;
        let cq_p = p.cq;
        let opc = match b.u8() % 6 {
            0 | 1 => CqeOpcode::Req as u8,
            2 => CqeOpcode::RespSend as u8,
            3 => CqeOpcode::ReqErr as u8,
            4 => CqeOpcode::RespErr as u8,
            _ => b.u8() >> 4,
        };
        let k = b.u8() as usize % 3;
        let ctr = match b.u8() % 4 {
            0 => b.u16(),
            1 => m.recent[(op >> 4) as usize & 3],
            2 => qps[k & 1].sq.cur_post() as u16,
            _ => (qps[k & 1].sq.cur_post() as u16).wrapping_sub(1 + (op >> 5) as u16),
        };
        device_cqe(cq_p, &mut m.pi, cq.consumer_index(), opc, k, ctr);
    }

    /// Op 6: compressed session of any count, send or receive.
    pub(super) fn compressed_session(&mut self, op: u8, b: &mut Bytes<'_>) {
        let Scene { cq, qps, m, p, .. } = self;
        let cq_p = p.cq;
        let count = 1 + (b.u8() as u32 % 12);
        let k = b.u8() as usize % 3;
        let opc = [
            CqeOpcode::Req,
            CqeOpcode::RespSend,
            CqeOpcode::ReqErr,
            CqeOpcode::RespErr,
            CqeOpcode::Resize,
        ][(op >> 4) as usize % 5] as u8;
        let first = match b.u8() % 3 {
            0 => b.u16(),
            1 => qps[0].rq.as_ref().expect("rq").tail() as u16,
            _ => m.sends[k & 1].items().first().map_or(0, |r| r.ctr),
        };
        let mut arr = [0u8; 64];
        for (i, x) in arr.iter_mut().enumerate() {
            *x = if i % 8 < 2 && b.u8() & 1 == 0 {
                // SendInfo counters near the first one.
                (first.wrapping_add((i / 8) as u16).to_be_bytes())[i % 8]
            } else {
                b.u8()
            };
        }
        device_session(
            cq_p,
            &mut m.pi,
            cq.consumer_index(),
            opc,
            k,
            first,
            count,
            &arr,
        );
    }

    /// Op 7: reset QP 0 (clean the CQ), then reuse it.
    pub(super) fn reset_qp0(&mut self, op: u8) {
        let Scene { cq, qps, m, .. } = self;
        if op & 0x30 == 0 {
            // SAFETY: memory-only queues; no device executes them.
            unsafe { qps[0].reset(&mut [&mut *cq]) };
            qps[0].sq.enable();
            qps[0].rq.as_mut().expect("rq").enable();
            m.sends[0].n = 0;
            m.recvs.n = 0;
            m.dev_rq = 0;
            assert_eq!(cq.read_dbrec(0), cq.consumer_index() & 0xff_ffff);
            // The device continues behind the cleaned entries.
            if m.pi.wrapping_sub(cq.consumer_index()) > NCQE as u32 {
                m.pi = cq.consumer_index();
            }
        }
    }
}
