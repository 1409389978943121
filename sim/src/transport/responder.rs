//! The responder: an arriving request is checked (state, connection,
//! expected PSN, Q_Key), executed (SEND, RDMA WRITE, RDMA READ, atomic) and
//! answered (ACK, NAK, READ or atomic response); duplicates are re-ACKed,
//! READs re-executed and atomics replayed from the QP's cache. Receive WQE
//! consumption is the child module `receive`.

use super::{dma_read, dma_write, psn_diff, PSN_MASK};
use crate::cost::ceil_u64;
use crate::wire::{Body, Nak, Packet, Req};
use crate::world::{cnt2, World};
use bareverbs::cqe::CqeOpcode;
use bareverbs::mr::{mkey_index, Access};
use bareverbs::qp::QpType;
use std::rc::Rc;

mod receive;

/// What a successful responder execution answers.
enum Resp {
    Ack,
    Read(Vec<u8>, u64),
    Atomic(u64, u64),
}

impl World {
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn reply(
        &mut self,
        d: u16,
        qi: u32,
        src_dev: u16,
        src_qpn: u32,
        body: Body,
        payload: u64,
        extra_ns: u64,
    ) {
        let my_qpn = self.qp(d, qi).map(|q| q.qpn).unwrap_or(0);
        let pkt = Packet {
            src_dev: d,
            src_qpn: my_qpn,
            dst_dev: src_dev,
            dst_qpn: src_qpn,
            body,
        };
        let t = self.now + extra_ns;
        self.send_packet(d, qi, t, pkt, payload, false);
    }

    /// A request arriving at QP `qi`: checked ([`Self::admit`]), executed,
    /// and answered ([`Self::answer`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_request(
        &mut self,
        d: u16,
        qi: u32,
        src_dev: u16,
        src_qpn: u32,
        psn: u32,
        npkts: u32,
        req: Rc<Req>,
        ud_qkey: Option<u32>,
        grh: bool,
        solicited: bool,
    ) {
        let Some(ty) = self.admit(d, qi, src_dev, src_qpn, psn, npkts, &req, ud_qkey) else {
            return;
        };
        let res = self.execute(d, qi, src_qpn, psn, &req, grh, solicited);
        self.answer(d, qi, ty, src_dev, src_qpn, psn, npkts, res);
    }

    /// Whether the request at `psn` is executed; returns the QP type when
    /// it is. A QP that does not execute drops it; RC checks the
    /// connection and the expected PSN (a gap is NAK'd once, a duplicate
    /// answered again), UC resyncs on a gap, UD checks the Q_Key.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn admit(
        &mut self,
        d: u16,
        qi: u32,
        src_dev: u16,
        src_qpn: u32,
        psn: u32,
        npkts: u32,
        req: &Rc<Req>,
        ud_qkey: Option<u32>,
    ) -> Option<QpType> {
        let q = self.qp(d, qi).expect("qp");
        if !q.state.rq_executes() {
            return None; // silently dropped (RESET/INIT/ERR)
        }
        let ty = q.ty;
        match ty {
            QpType::Rc => {
                if q.attr.dest_qp_num != src_qpn {
                    return None;
                }
                let diff = psn_diff(psn, q.epsn);
                if diff > 0 {
                    if !q.nak_sent {
                        q.nak_sent = true;
                        let e = q.epsn;
                        self.reply(
                            d,
                            qi,
                            src_dev,
                            src_qpn,
                            Body::Nak {
                                psn: e,
                                nak: Nak::Seq,
                            },
                            0,
                            0,
                        );
                    }
                    return None;
                }
                if diff < 0 {
                    self.duplicate(d, qi, src_dev, src_qpn, psn, npkts, req);
                    return None;
                }
            }
            QpType::Uc => {
                if psn != q.epsn {
                    // A gap: the message in progress is lost; resync.
                    q.epsn = (psn + npkts) & PSN_MASK;
                    if !matches!(&**req, Req::Send { .. } | Req::Write { .. }) {
                        return None;
                    }
                }
            }
            QpType::Ud => {
                if ud_qkey != Some(q.attr.qkey) {
                    return None; // Q_Key mismatch: silently dropped
                }
            }
            _ => return None,
        }
        Some(ty)
    }

    /// Answers the execution `res` of the request at `psn` (`npkts` PSNs)
    /// on a QP of type `ty`: a connected QP expects the next PSN; RC sends
    /// the ACK, READ or atomic response, or the NAK (any but RNR also
    /// queues the QP for ERR); UC/UD drop a request that failed.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn answer(
        &mut self,
        d: u16,
        qi: u32,
        ty: QpType,
        src_dev: u16,
        src_qpn: u32,
        psn: u32,
        npkts: u32,
        res: Result<Resp, Nak>,
    ) {
        let q = self.qp(d, qi).expect("qp");
        match res {
            Ok(resp) => {
                if ty != QpType::Ud {
                    q.epsn = (psn + npkts) & PSN_MASK;
                    q.nak_sent = false;
                }
                if ty == QpType::Rc {
                    let last = (psn + npkts - 1) & PSN_MASK;
                    match resp {
                        Resp::Ack => {
                            self.reply(d, qi, src_dev, src_qpn, Body::Ack { psn: last }, 0, 0)
                        }
                        Resp::Read(data, cost) => {
                            let n = data.len() as u64;
                            self.reply(
                                d,
                                qi,
                                src_dev,
                                src_qpn,
                                Body::ReadResp {
                                    psn,
                                    data: Rc::new(data),
                                },
                                n,
                                cost,
                            )
                        }
                        Resp::Atomic(orig, cost) => self.reply(
                            d,
                            qi,
                            src_dev,
                            src_qpn,
                            Body::AtomicResp { psn, orig },
                            8,
                            cost,
                        ),
                    }
                }
            }
            Err(nak) => {
                if ty != QpType::Rc {
                    if matches!(nak, Nak::Rnr(_)) {
                        return; // UC/UD: dropped when no receive is posted
                    }
                    // UC/UD responder errors: the message is dropped.
                    return;
                }
                if let Nak::Rnr(_) = nak {
                    q.counters.rnr_naks += 1;
                    self.devs[d as usize].counters.rnr_naks += 1;
                }
                self.reply(d, qi, src_dev, src_qpn, Body::Nak { psn, nak }, 0, 0);
                if !matches!(nak, Nak::Rnr(_)) {
                    self.to_error.push((d, qi));
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn duplicate(
        &mut self,
        d: u16,
        qi: u32,
        sd: u16,
        sq: u32,
        psn: u32,
        npkts: u32,
        req: &Rc<Req>,
    ) {
        match &**req {
            Req::Read { raddr, rkey, len } => {
                // Re-execute the READ (idempotent).
                if let Ok(data) = self
                    .remote_range(d, qi, *rkey, *raddr, *len as u64, Access::REMOTE_READ)
                    .map(|p| {
                        // SAFETY: checked range inside a registered region.
                        unsafe { dma_read(p, *len as usize) }
                    })
                {
                    let n = data.len() as u64;
                    self.reply(
                        d,
                        qi,
                        sd,
                        sq,
                        Body::ReadResp {
                            psn,
                            data: Rc::new(data),
                        },
                        n,
                        0,
                    );
                }
            }
            Req::Atomic { .. } => {
                let cached = self.qp(d, qi).and_then(|q| q.resp_cache.find(psn));
                if let Some(orig) = cached {
                    self.reply(d, qi, sd, sq, Body::AtomicResp { psn, orig }, 8, 0);
                }
            }
            _ => {
                let last = (psn + npkts - 1) & PSN_MASK;
                self.reply(d, qi, sd, sq, Body::Ack { psn: last }, 0, 0);
            }
        }
    }

    /// Checks an rkey access for this responder QP and returns the CPU
    /// pointer of the range.
    #[inline]
    fn remote_range(
        &self,
        d: u16,
        qi: u32,
        rkey: u32,
        addr: u64,
        len: u64,
        need: Access,
    ) -> Result<*mut u8, Nak> {
        let dev = &self.devs[d as usize];
        let q = dev.qps[qi as usize].as_ref().ok_or(Nak::RemAccess)?;
        if !q.attr.qp_access_flags.contains(need) {
            return Err(Nak::RemAccess);
        }
        let m = dev.mr(rkey).ok_or(Nak::RemAccess)?;
        if m.pd != q.pd || !m.access.contains(need) {
            return Err(Nak::RemAccess);
        }
        m.range(addr, len).ok_or(Nak::RemAccess)
    }

    /// Executes request `req` (at `psn`, from QP `src_qpn`) at responder
    /// QP `qi`: what to answer, or the NAK.
    #[allow(clippy::too_many_arguments)]
    fn execute(
        &mut self,
        d: u16,
        qi: u32,
        src_qpn: u32,
        psn: u32,
        req: &Req,
        grh: bool,
        solicited: bool,
    ) -> Result<Resp, Nak> {
        match req {
            Req::Send { data, imm, inv } => {
                self.execute_send(d, qi, src_qpn, data, *imm, *inv, grh, solicited)
            }
            Req::Write {
                raddr,
                rkey,
                data,
                imm,
            } => self.execute_write(d, qi, src_qpn, *raddr, *rkey, data, *imm, solicited),
            Req::Read { raddr, rkey, len } => self.execute_read(d, qi, *raddr, *rkey, *len),
            Req::Atomic {
                raddr,
                rkey,
                cs,
                swap_add,
                compare,
            } => {
                let op = (*cs, *swap_add, *compare);
                self.execute_atomic(d, qi, psn, *raddr, *rkey, op)
            }
        }
    }

    /// A SEND (with immediate `imm` or the key `inv` to invalidate):
    /// placed in the next receive WQE.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn execute_send(
        &mut self,
        d: u16,
        qi: u32,
        src_qpn: u32,
        data: &[u8],
        imm: Option<[u8; 4]>,
        inv: Option<u32>,
        grh: bool,
        solicited: bool,
    ) -> Result<Resp, Nak> {
        let op = if imm.is_some() {
            CqeOpcode::RespSendImm
        } else if inv.is_some() {
            CqeOpcode::RespSendInv
        } else {
            CqeOpcode::RespSend
        } as u8;
        // The key to invalidate must name a valid region of this
        // QP's PD; it is invalidated once the message is placed.
        let inv_slot = match inv {
            Some(k) => {
                let dev = &self.devs[d as usize];
                let pd = dev.qps[qi as usize].as_ref().map(|q| q.pd);
                match dev.mr(k) {
                    Some(m) if Some(m.pd) == pd => Some(mkey_index(k) as usize),
                    _ => return Err(Nak::InvReq),
                }
            }
            None => None,
        };
        let extra = imm.or(inv.map(|k| k.to_be_bytes()));
        let r = self.receive(d, qi, src_qpn, data, op, extra, grh, solicited)?;
        if let Some(i) = inv_slot {
            if let Some(Some(m)) = self.devs[d as usize].mrs.get_mut(i) {
                m.valid = false;
            }
        }
        Ok(r)
    }

    /// An RDMA WRITE of `data` to `raddr` under `rkey`; with immediate
    /// `imm` it also consumes a receive WQE.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn execute_write(
        &mut self,
        d: u16,
        qi: u32,
        src_qpn: u32,
        raddr: u64,
        rkey: u32,
        data: &[u8],
        imm: Option<[u8; 4]>,
        solicited: bool,
    ) -> Result<Resp, Nak> {
        if !data.is_empty() {
            let ptr =
                self.remote_range(d, qi, rkey, raddr, data.len() as u64, Access::REMOTE_WRITE)?;
            if let Some(imm) = imm {
                // Check a receive exists before placing anything.
                if !self.recv_available(d, qi) {
                    let code = self.qp(d, qi).map(|q| q.attr.min_rnr_timer).unwrap_or(0);
                    return Err(Nak::Rnr(code));
                }
                let _ = imm;
            }
            // SAFETY: checked range inside a registered region.
            unsafe { dma_write(ptr, data) };
            let n = data.len() as u64;
            cnt2(self, d, qi, |c, p| {
                c.dma_write(p, n);
                c.payload_rx_bytes += n;
            });
            let now = self.now;
            if let Some(q) = self.qp(d, qi) {
                q.last_rx_ns = now;
            }
        }
        if let Some(imm) = imm {
            // Consumes a receive: CQE RESP_WR_IMM with the length.
            return self.receive_imm_write(d, qi, src_qpn, data.len() as u32, imm, solicited);
        }
        Ok(Resp::Ack)
    }

    /// An RDMA READ of `len` bytes at `raddr` under `rkey`: the data and
    /// the time to read it.
    #[inline]
    fn execute_read(
        &mut self,
        d: u16,
        qi: u32,
        raddr: u64,
        rkey: u32,
        len: u32,
    ) -> Result<Resp, Nak> {
        let ptr = if len == 0 {
            std::ptr::null_mut()
        } else {
            self.remote_range(d, qi, rkey, raddr, len as u64, Access::REMOTE_READ)?
        };
        let data = if len == 0 {
            Vec::new()
        } else {
            // SAFETY: checked range inside a registered region.
            unsafe { dma_read(ptr, len as usize) }
        };
        let n = len as u64;
        cnt2(self, d, qi, |c, p| c.dma_read(p, n));
        Ok(Resp::Read(data, ceil_u64(self.params().t_rd(n))))
    }

    /// An atomic at `raddr` under `rkey` (`op` = compare-and-swap, swap or
    /// add value, compare value): the original value, cached for a
    /// duplicate at `psn`, and the time to read it.
    #[inline]
    fn execute_atomic(
        &mut self,
        d: u16,
        qi: u32,
        psn: u32,
        raddr: u64,
        rkey: u32,
        op: (bool, u64, u64),
    ) -> Result<Resp, Nak> {
        let (cs, swap_add, compare) = op;
        if !raddr.is_multiple_of(8) {
            return Err(Nak::InvReq);
        }
        let ptr = self.remote_range(d, qi, rkey, raddr, 8, Access::REMOTE_ATOMIC)?;
        // SAFETY: 8 bytes inside a registered region (checked).
        let orig = u64::from_be_bytes(unsafe { std::ptr::read_unaligned(ptr.cast::<[u8; 8]>()) });
        let new = if cs {
            if orig == compare {
                swap_add
            } else {
                orig
            }
        } else {
            orig.wrapping_add(swap_add)
        };
        // SAFETY: as above.
        unsafe { std::ptr::write_unaligned(ptr.cast::<[u8; 8]>(), new.to_be_bytes()) };
        cnt2(self, d, qi, |c, p| {
            c.dma_read(p, 8);
            c.dma_write(p, 8);
        });
        if let Some(q) = self.qp(d, qi) {
            q.resp_cache.push(psn, orig);
        }
        Ok(Resp::Atomic(orig, ceil_u64(self.params().t_rd(8))))
    }
}
