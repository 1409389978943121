//! Receive consumption at the responder: the next receive WQE of the QP's
//! RQ or SRQ is taken, a SEND is scattered into its buffers (UD with 40 GRH
//! bytes in front), and the responder CQE is written; an RDMA WRITE with
//! immediate consumes a WQE without placing data in it.

use super::Resp;
use crate::transport::{dma_write, rd_be32};
use crate::wire::Nak;
use crate::world::{cnt2, World};
use bareverbs::cqe::{Cqe64, CqeOpcode, Syndrome};
use bareverbs::mr::Access;
use bareverbs::qp::QpType;
use bareverbs::wqe::{RecvWqe, INVALID_LKEY};

/// One receive data segment: (byte_count, lkey, addr).
type RecvSeg = (u32, u32, u64);

impl World {
    pub(super) fn recv_available(&self, d: u16, qi: u32) -> bool {
        let dev = &self.devs[d as usize];
        let Some(q) = dev.qps[qi as usize].as_ref() else {
            return false;
        };
        if let Some(si) = q.srq {
            let Some(Some(s)) = dev.srqs.get(si) else {
                return false;
            };
            !s.error && (rd_be32(s.dbrec) as u16).wrapping_sub(s.consumed) != 0
        } else if q.rq_nwqe > 0 {
            (rd_be32(q.dbrec) as u16).wrapping_sub(q.rq_consumed) != 0
        } else {
            false
        }
    }

    /// Takes the next receive WQE: returns (wqe counter, its data segments
    /// copied out, report-to uidx/srqn).
    fn take_recv(&mut self, d: u16, qi: u32) -> Option<(u16, Vec<RecvSeg>)> {
        if !self.recv_available(d, qi) {
            return None;
        }
        let dev = &mut self.devs[d as usize];
        let q = dev.qps[qi as usize].as_mut()?;
        let mut segs = Vec::new();
        if let Some(si) = q.srq {
            let s = dev.srqs.get_mut(si)?.as_mut()?;
            let slot = s.head_slot;
            if slot as u32 >= s.nslots {
                s.error = true;
                return None;
            }
            let stride = 1usize << s.shift;
            let mut buf = vec![0u8; stride];
            // SAFETY: slot < nslots, so the stride lies inside the SRQ ring
            // translated at creation.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    s.ring.add(slot as usize * stride),
                    buf.as_mut_ptr(),
                    stride,
                )
            };
            let w = RecvWqe::parse_srq(&buf).ok()?;
            for ds in w.data_segs() {
                if ds.lkey.get() == INVALID_LKEY {
                    break;
                }
                segs.push((ds.byte_count.get(), ds.lkey.get(), ds.addr.get()));
            }
            s.head_slot = w.next.map(|n| n.next_wqe_index.get()).unwrap_or(0);
            s.consumed = s.consumed.wrapping_add(1);
            let left = (rd_be32(s.dbrec) as u16).wrapping_sub(s.consumed) as u32;
            if s.limit > 0 && left < s.limit {
                s.limit = 0;
                dev.events
                    .push(crate::objects::AsyncEvent::SrqLimit { srqn: si as u32 });
            }
            Some((slot, segs))
        } else {
            let c = q.rq_consumed;
            let stride = 1usize << q.rq_shift;
            let slot = (c as usize) & (q.rq_nwqe as usize - 1);
            let mut buf = vec![0u8; stride];
            // SAFETY: slot < rq_nwqe: the stride lies inside the RQ ring.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    q.rq_ring.add(slot * stride),
                    buf.as_mut_ptr(),
                    stride,
                )
            };
            q.rq_consumed = c.wrapping_add(1);
            let w = RecvWqe::parse_rq(&buf, false).ok()?;
            for ds in w.data_segs() {
                if ds.lkey.get() == INVALID_LKEY {
                    break;
                }
                segs.push((ds.byte_count.get(), ds.lkey.get(), ds.addr.get()));
            }
            Some((c, segs))
        }
    }

    /// A SEND (op 2/3/4) arriving: scatter into the next receive WQE.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn receive(
        &mut self,
        d: u16,
        qi: u32,
        src_qpn: u32,
        data: &[u8],
        op: u8,
        extra: Option<[u8; 4]>,
        grh: bool,
        solicited: bool,
    ) -> Result<Resp, Nak> {
        let (ty, min_rnr, pd) = {
            let dev = &self.devs[d as usize];
            let q = dev.qps[qi as usize].as_ref().expect("qp");
            // Receive buffers are checked against the PD of the queue that
            // holds the WQE: the SRQ's when the QP uses one.
            let pd = match q.srq.and_then(|s| dev.srqs.get(s)).and_then(|s| s.as_ref()) {
                Some(s) => s.pd,
                None => q.pd,
            };
            (q.ty, q.attr.min_rnr_timer, pd)
        };
        let Some((counter, segs)) = self.take_recv(d, qi) else {
            return Err(Nak::Rnr(min_rnr));
        };
        // UD: the first 40 bytes of the buffer receive the GRH (or stay
        // unused), and byte_len counts them.
        let grh_len = if ty == QpType::Ud { 40usize } else { 0 };
        let mut msg = Vec::with_capacity(grh_len + data.len());
        msg.resize(grh_len, 0);
        msg.extend_from_slice(data);
        // Resolve every entry before writing anything.
        let dev = &self.devs[d as usize];
        let mut targets = Vec::new();
        let mut cap = 0u64;
        let mut prot = false;
        for (len, lkey, addr) in &segs {
            if *len == 0 {
                continue;
            }
            match dev
                .mr(*lkey)
                .filter(|m| m.pd == pd && m.access.contains(Access::LOCAL_WRITE))
                .and_then(|m| m.range(*addr, *len as u64))
            {
                Some(p) => {
                    targets.push((p, *len));
                    cap += *len as u64;
                }
                None => {
                    prot = true;
                    break;
                }
            }
        }
        let (qpn, uidx, rcq) = {
            let q = self.qp(d, qi).expect("qp");
            (q.qpn, q.uidx, q.rcq)
        };
        let fault = if prot {
            Some((Syndrome::LocalProtErr, Nak::RemOp))
        } else if (msg.len() as u64) > cap {
            Some((Syndrome::LocalLengthErr, Nak::InvReq))
        } else {
            None
        };
        if let Some((syn, nak)) = fault {
            self.emit_err(d, rcq, false, qpn, uidx, 0, counter, syn.as_u8());
            self.to_error.push((d, qi));
            return Err(nak);
        }
        let mut off = 0usize;
        for (p, len) in targets {
            if off >= msg.len() {
                break;
            }
            let n = (len as usize).min(msg.len() - off);
            // SAFETY: `p..p+len` was checked inside a registered region with
            // LOCAL_WRITE, and n <= len.
            unsafe { dma_write(p, &msg[off..off + n]) };
            off += n;
            cnt2(self, d, qi, |c, pp| c.dma_write(pp, n as u64));
        }
        let n = data.len() as u64;
        let now = self.now;
        if let Some(q) = self.qp(d, qi) {
            q.counters.payload_rx_bytes += n;
            q.last_rx_ns = now;
        }
        self.devs[d as usize].counters.payload_rx_bytes += n;
        let mut c = Cqe64::default();
        let mut rqpn = src_qpn & Cqe64::QPN_MASK;
        if grh && ty == QpType::Ud {
            rqpn |= Cqe64::FLAGS_RQPN_GRH;
        }
        c.set_flags_rqpn(rqpn)
            .set_srqn_uidx(uidx & Cqe64::UIDX_MASK)
            .set_byte_cnt(msg.len() as u32)
            .set_sop_drop_qpn(qpn)
            .set_wqe_counter(counter)
            .set_op_own_parts(op, 0, solicited, 0);
        if let Some(x) = extra {
            c.set_imm_inval_pkey_raw(x);
        }
        self.write_cqe(d, rcq, c, false);
        if let Some(q) = self.qp(d, qi) {
            q.counters.cqes += 1;
        }
        Ok(Resp::Ack)
    }

    pub(super) fn receive_imm_write(
        &mut self,
        d: u16,
        qi: u32,
        src_qpn: u32,
        len: u32,
        imm: [u8; 4],
        solicited: bool,
    ) -> Result<Resp, Nak> {
        let min_rnr = self.qp(d, qi).map(|q| q.attr.min_rnr_timer).unwrap_or(0);
        let Some((counter, _segs)) = self.take_recv(d, qi) else {
            return Err(Nak::Rnr(min_rnr));
        };
        let (qpn, uidx, rcq) = {
            let q = self.qp(d, qi).expect("qp");
            (q.qpn, q.uidx, q.rcq)
        };
        let mut c = Cqe64::default();
        c.set_flags_rqpn(src_qpn & Cqe64::QPN_MASK)
            .set_srqn_uidx(uidx & Cqe64::UIDX_MASK)
            .set_byte_cnt(len)
            .set_sop_drop_qpn(qpn)
            .set_wqe_counter(counter)
            .set_op_own_parts(CqeOpcode::RespWrImm as u8, 0, solicited, 0);
        c.set_imm_inval_pkey_raw(imm);
        self.write_cqe(d, rcq, c, false);
        Ok(Resp::Ack)
    }
}
