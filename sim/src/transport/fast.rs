//! The fused RC RDMA WRITE: one single-packet WRITE executed from fetch to
//! completion in one call, when nothing else can happen in between.
//!
//! The general path turns such a WRITE into a request packet on the event
//! queue, a held-aside retransmission timer, a responder execution that
//! queues an ACK, and an ACK arrival that completes the WQE. When the
//! world holds no other event, no fault can strike the packets, and the
//! device runs until idle right after the fetch (auto progress), the
//! order of those steps is fixed and nothing else runs between them:
//! [`World::fast_rc_write`] applies their effects directly — the same
//! counters, PSNs, timer generation, event sequence numbers, port
//! occupancy, memory, trace entries, CQE and virtual time — without
//! building packets or touching the event queue.
//!
//! Every precondition is checked before anything changes; when one fails
//! the caller runs the general path, which then behaves exactly as if the
//! fused path did not exist. The twin tests (`tests/fast_path.rs`) run
//! randomized operations through both and compare everything observable.

use super::{psn_diff, PSN_MASK};
use crate::cost::ceil_u64;
use crate::objects::access;
use crate::transport::transport_timeout_ns;
use crate::world::{TraceKind, World, QPN_BASE};
use bareverbs::qp::{QpState, QpType};

/// The mlx5 opcode of RDMA WRITE (FACTS §1.6).
const OP_WRITE: u8 = 0x08;
/// DS of the fused shape: control, remote-address and one data segment.
pub(super) const FAST_DS: u8 = 3;
/// The inline flag of a data entry's byte count (FACTS §1.4).
const INLINE_BIT: u32 = 1 << 31;

/// Big-endian u32 of 4 bytes.
#[inline(always)]
fn be32(b: [u8; 4]) -> u32 {
    u32::from_be_bytes(b)
}

impl World {
    /// Executes the WQE at byte `off` of QP `qi`'s SQ ring (WQE counter
    /// `idx`, fetched at a cost of `fetch_ns`) as a fused RC WRITE, if it
    /// has the fused shape and every precondition holds; returns false,
    /// having changed nothing, otherwise.
    ///
    /// The caller has done the fetch (counters, QP-context cache, the
    /// fetched counter) and guarantees: auto progress is on, the WQE is the
    /// last one the doorbell record covers, its DS byte is [`FAST_DS`],
    /// and after it returns the world settles and runs until idle.
    #[inline]
    pub(super) fn fast_rc_write(
        &mut self,
        d: u16,
        qi: u32,
        off: usize,
        idx: u16,
        fetch_ns: f64,
    ) -> bool {
        if !self.fast_ok() {
            return false;
        }
        let p = self.params;
        let now0 = self.now;
        let dev = &self.devs[d as usize];
        let Some(Some(q)) = dev.qps.get(qi as usize) else {
            return false;
        };
        if q.ty != QpType::Rc
            || q.state != QpState::Rts
            || q.sq_blocked
            || !q.pend.is_empty()
            || q.rnr_wait
            || q.timer_gen & 1 == 1
            || q.qpn != QPN_BASE + qi
        {
            return false;
        }
        // SAFETY: the ring was translated at QP creation to sq_nbb * 64
        // bytes of live DMA memory; `off` is a WQEBB offset inside it and
        // the 48 bytes read lie in that WQEBB. By-value reads, no
        // reference into DMA memory.
        let w: [u8; 48] = unsafe { std::ptr::read_volatile(q.sq_ring.add(off).cast()) };
        if w[3] != OP_WRITE || w[7] != FAST_DS {
            return false;
        }
        let signaled = w[11] & 0x08 != 0;
        let raddr = u64::from_be_bytes([w[16], w[17], w[18], w[19], w[20], w[21], w[22], w[23]]);
        let rkey = be32([w[24], w[25], w[26], w[27]]);
        let len = be32([w[32], w[33], w[34], w[35]]);
        let lkey = be32([w[36], w[37], w[38], w[39]]);
        let laddr = u64::from_be_bytes([w[40], w[41], w[42], w[43], w[44], w[45], w[46], w[47]]);
        // One pointer entry of 1..=MTU bytes: one packet, one gather.
        if len & INLINE_BIT != 0 || len == 0 || len > q.attr.mtu_bytes() {
            return false;
        }
        let Some(src) = dev
            .mr(lkey)
            .filter(|m| m.pd == q.pd)
            .and_then(|m| m.range(laddr, len as u64))
        else {
            return false;
        };
        // The responder: reached by LID and QPN, executing, connected back
        // to this QP, expecting exactly this PSN, and granting the write.
        let psn = q.next_psn;
        let src_qpn = q.qpn;
        let dqpn = q.attr.dest_qp_num;
        let Some(dd) = self.dev_by_lid(q.attr.dlid) else {
            return false;
        };
        let Some(qi2) = self.find_qp(dd, dqpn) else {
            return false;
        };
        let rdev = &self.devs[dd as usize];
        let Some(Some(r)) = rdev.qps.get(qi2 as usize) else {
            return false;
        };
        if !r.state.rq_executes()
            || r.ty != QpType::Rc
            || r.attr.dest_qp_num != src_qpn
            || psn_diff(psn, r.epsn) != 0
            || r.attr.qp_access_flags & access::REMOTE_WRITE == 0
        {
            return false;
        }
        let Some(dst) = rdev
            .mr(rkey)
            .filter(|m| m.pd == r.pd && m.access & access::REMOTE_WRITE != 0)
            .and_then(|m| m.range(raddr, len as u64))
        else {
            return false;
        };
        let r_qpn = r.qpn;
        // Times, as the general path computes them: the request leaves
        // after fetch and gather, serialised on the requester's port; the
        // ACK leaves when the request is placed, on the responder's port.
        let gather = p.t_rd(len as u64) + (1u32 - 1) as f64 * p.t_sge_ns;
        let ready = ceil_u64(now0 as f64 + fetch_ns + gather);
        let wire1 = ceil_u64(p.t_wire(len as u64 + 64));
        let depart1 = ready.max(self.devs[d as usize].tx_free);
        let t1 = (depart1 + p.t_base_ns as u64).max(now0);
        let wire2 = ceil_u64(p.t_wire(64));
        let tx_free_r = if dd == d {
            depart1 + wire1
        } else {
            self.devs[dd as usize].tx_free
        };
        let depart2 = t1.max(tx_free_r);
        let t_ack = (depart2 + p.t_base_ns as u64).max(t1);
        if t_ack > now0.saturating_add(self.horizon_ns) {
            return false;
        }
        let q = self.devs[d as usize].qps[qi as usize].as_ref().expect("qp");
        let timer = transport_timeout_ns(q.attr.timeout);
        if let Some(to) = timer {
            // The retransmission timer must not fire before the ACK.
            if now0 + to <= t_ack {
                return false;
            }
        }
        // The CQE must fit (overrun is the general path's business).
        let (scq, uidx) = (q.scq, q.uidx);
        if signaled && !self.cq_has_room(d, scq) {
            return false;
        }

        // Commit. Requester at fetch time: gather, PSN, request on the
        // wire, timer armed.
        let n = len as u64;
        {
            let dv = &mut self.devs[d as usize];
            dv.tx_free = depart1 + wire1;
            let q = dv.qps[qi as usize].as_mut().expect("qp");
            q.next_psn = (psn + 1) & PSN_MASK;
            if timer.is_some() {
                // Armed (odd), then disarmed by the ACK (even).
                q.timer_gen = (q.timer_gen | 1) + 3;
            }
            q.retry_left = q.attr.retry_cnt;
            q.rnr_left = q.attr.rnr_retry;
            let gather_wire = p.tlp_req_overhead as u64
                + n
                + n.div_ceil(p.read_cpl_bytes as u64).max(1) * p.tlp_cpl_overhead as u64;
            for c in [&mut dv.counters, &mut q.counters] {
                c.pcie_reads += 1;
                c.pcie_read_bytes += n;
                c.pcie_wire_bytes += gather_wire;
                c.packets_tx += 1;
                c.payload_tx_bytes += n;
            }
        }
        self.bump_seq(if timer.is_some() { 3 } else { 2 });
        self.trace(TraceKind::Send, d, src_qpn, psn);
        // Responder at t1: placement and ACK.
        self.now = t1;
        self.trace(TraceKind::Arrive, dd, dqpn, psn);
        // SAFETY: `src..src+len` lies inside a registered region of the
        // requester and `dst..dst+len` inside one of the responder granting
        // REMOTE_WRITE (both checked above), whose memory was translated at
        // registration. `copy` is a memmove: with overlapping ranges the
        // result is that of gathering first and placing later.
        unsafe { std::ptr::copy(src, dst, len as usize) };
        let ack_psn = psn & PSN_MASK;
        {
            let rv = &mut self.devs[dd as usize];
            rv.tx_free = depart2 + wire2;
            let r = rv.qps[qi2 as usize].as_mut().expect("qp");
            r.epsn = (psn + 1) & PSN_MASK;
            r.nak_sent = false;
            r.last_rx_ns = t1;
            let write_wire = p.tlp_req_overhead as u64 + n;
            for c in [&mut rv.counters, &mut r.counters] {
                c.pcie_writes += 1;
                c.pcie_write_bytes += n;
                c.pcie_wire_bytes += write_wire;
                c.payload_rx_bytes += n;
                c.packets_tx += 1;
            }
        }
        self.trace(TraceKind::Send, dd, r_qpn, ack_psn);
        // Requester at t_ack: the ACK completes the WQE.
        self.now = t_ack;
        self.trace(TraceKind::Arrive, d, src_qpn, ack_psn);
        if signaled {
            let c = Self::req_cqe(OP_WRITE, src_qpn, idx, uidx, 0);
            self.write_cqe(d, scq, c, false);
            if let Some(q) = self.qp(d, qi) {
                q.counters.cqes += 1;
            }
        }
        true
    }

    /// Whether CQ `cqn` of device `d` takes one more CQE without overrun.
    fn cq_has_room(&self, d: u16, cqn: usize) -> bool {
        let Some(Some(cq)) = self.devs[d as usize].cqs.get(cqn) else {
            return false;
        };
        if cq.error {
            return false;
        }
        // SAFETY: dbrec was translated at CQ creation to 8 bytes of live
        // DMA memory; a raw volatile read of the SET_CI word.
        let ci = u32::from_be_bytes(unsafe { std::ptr::read_volatile(cq.dbrec.cast::<[u8; 4]>()) })
            & 0x00ff_ffff;
        cq.pi.wrapping_sub(ci) & 0x00ff_ffff < cq.ncqe
    }
}
