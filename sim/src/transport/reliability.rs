//! RC reliability at the requester: acknowledgements (explicit, implicit,
//! and through READ/atomic responses), NAKs (PSN sequence, RNR, remote
//! errors), go-back-N retransmission, and the transport and RNR timers
//! with their retry counters.

use super::{dma_write, psn_diff, PSN_MASK};
use crate::cost::ceil_u64;
use crate::objects::Qp;
use crate::wire::{Body, Nak, Packet, Req};
use crate::world::{cnt2, Event, TraceKind, World};
use bareverbs::cqe::Syndrome;
use bareverbs::qp::QpState;
use bareverbs::wqe::Opcode;

/// RNR NAK timer values by code (µs ×100 to keep integers: code → ns).
/// IBA table: 0 = 655.36 ms, 1 = 0.01 ms … 31 = 491.52 ms (perf ref §3).
pub const RNR_TIMER_NS: [u64; 32] = [
    655_360_000,
    10_000,
    20_000,
    30_000,
    40_000,
    60_000,
    80_000,
    120_000,
    160_000,
    240_000,
    320_000,
    480_000,
    640_000,
    960_000,
    1_280_000,
    1_920_000,
    2_560_000,
    3_840_000,
    5_120_000,
    7_680_000,
    10_240_000,
    15_360_000,
    20_480_000,
    30_720_000,
    40_960_000,
    61_440_000,
    81_920_000,
    122_880_000,
    163_840_000,
    245_760_000,
    327_680_000,
    491_520_000,
];

/// Transport timeout for exponent `t`: 4.096 µs × 2^t (0 = infinite).
pub const fn transport_timeout_ns(t: u8) -> Option<u64> {
    if t == 0 {
        None
    } else {
        Some(4096u64 << (t as u32 & 31))
    }
}

impl World {
    #[inline]
    pub(super) fn arm_retry(&mut self, d: u16, qi: u32, rearm: bool) {
        let Some(q) = self.qp(d, qi) else { return };
        let Some(to) = transport_timeout_ns(q.attr.timeout) else {
            return;
        };
        if q.rnr_wait {
            return;
        }
        if !rearm && q.timer_gen & 1 == 1 {
            return; // already armed (odd generation = armed)
        }
        q.timer_gen = (q.timer_gen | 1) + 2;
        let gen = q.timer_gen;
        let t = self.now + to;
        self.schedule_retry(t, d, qi, gen);
    }

    #[inline]
    fn disarm_retry(&mut self, d: u16, qi: u32) {
        if let Some(q) = self.qp(d, qi) {
            if q.timer_gen & 1 == 1 {
                q.timer_gen += 1;
            }
        }
        self.drop_stale_timer(d, qi);
    }

    pub(crate) fn retry_timer(&mut self, d: u16, qi: u32, gen: u64) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.timer_gen != gen || q.state != QpState::Rts || q.rnr_wait {
            return;
        }
        q.timer_gen = (q.timer_gen | 1) + 1; // disarmed
        let Some(first) = q.pend.iter().position(|p| !p.done && p.err.is_none()) else {
            return;
        };
        let qpn = q.qpn;
        q.counters.timeouts += 1;
        self.devs[d as usize].counters.timeouts += 1;
        let psn = self.qp(d, qi).expect("qp").pend[first].psn;
        self.trace(TraceKind::Timeout, d, qpn, psn);
        let q = self.qp(d, qi).expect("qp");
        if q.retry_left == 0 {
            q.pend[first].err = Some(Syndrome::TransportRetryExcErr.as_u8());
            return self.drain(d, qi);
        }
        q.retry_left -= 1;
        self.resend_from(d, qi, first);
        self.arm_retry(d, qi, true);
    }

    pub(crate) fn rnr_timer(&mut self, d: u16, qi: u32, gen: u64) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.timer_gen != gen || q.state != QpState::Rts || !q.rnr_wait {
            return;
        }
        q.rnr_wait = false;
        q.timer_gen = (q.timer_gen | 1) + 1;
        let qpn = q.qpn;
        let Some(first) = q.pend.iter().position(|p| !p.done && p.err.is_none()) else {
            return;
        };
        let psn = q.pend[first].psn;
        self.trace(TraceKind::RnrRetry, d, qpn, psn);
        self.resend_from(d, qi, first);
        self.arm_retry(d, qi, true);
    }

    /// Go-back-N: resends every incomplete request from entry `first`.
    fn resend_from(&mut self, d: u16, qi: u32, first: usize) {
        let q = self.qp(d, qi).expect("qp");
        let (src_qpn, dlid, dqpn, grh) = (q.qpn, q.attr.dlid, q.attr.dest_qp_num, q.attr.grh);
        let mut pkts = Vec::new();
        for p in q.pend.iter().skip(first) {
            if p.done || p.err.is_some() {
                continue;
            }
            if let Some(r) = &p.req {
                let len = match &**r {
                    Req::Send { data, .. } | Req::Write { data, .. } => data.len() as u64,
                    _ => 0,
                };
                pkts.push((p.psn, p.npkts, r.clone(), p.solicited, len));
            }
        }
        let Some(dd) = self.dev_by_lid(dlid) else {
            return;
        };
        let now = self.now;
        for (psn, npkts, req, solicited, len) in pkts {
            let pkt = Packet {
                src_dev: d,
                src_qpn,
                dst_dev: dd,
                dst_qpn: dqpn,
                body: Body::Req {
                    psn,
                    npkts,
                    req,
                    ud_qkey: None,
                    grh,
                    solicited,
                },
            };
            // A retransmission gathers the payload again.
            let t = now + ceil_u64(self.params().t_rd(len));
            self.send_packet(d, qi, t, pkt, len, true);
        }
    }

    pub(super) fn on_ack(&mut self, d: u16, qi: u32, psn: u32) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.state != QpState::Rts && q.state != QpState::Sqd {
            return;
        }
        let mut progress = false;
        // By index: the queue is short and this runs for every ACK.
        for i in 0..q.pend.len() {
            let p = &mut q.pend[i];
            if p.done || p.err.is_some() {
                continue;
            }
            if p.opcode == Opcode::RdmaRead.bits()
                || p.opcode == Opcode::AtomicCs.bits()
                || p.opcode == Opcode::AtomicFa.bits()
            {
                break;
            }
            let last = (p.psn + p.npkts - 1) & PSN_MASK;
            if psn_diff(last, psn) <= 0 {
                p.done = true;
                progress = true;
            } else {
                break;
            }
        }
        if progress {
            self.progress(d, qi);
        }
    }

    /// Forward progress: reset the retry counter and the timer, complete.
    fn progress(&mut self, d: u16, qi: u32) {
        let q = self.qp(d, qi).expect("qp");
        q.retry_left = q.attr.retry_cnt;
        q.rnr_left = q.attr.rnr_retry;
        let more = (0..q.pend.len()).any(|i| {
            let p = &q.pend[i];
            !p.done && p.err.is_none()
        });
        if more {
            self.arm_retry(d, qi, true);
        } else {
            self.disarm_retry(d, qi);
        }
        self.drain(d, qi);
    }

    /// Marks every incomplete non-READ/atomic entry before PSN `psn` done
    /// (implicit acknowledgement). Returns the index of the entry at `psn`.
    fn implicit_ack(q: &mut Qp, psn: u32) -> Option<usize> {
        let mut at = None;
        for (i, p) in q.pend.iter_mut().enumerate() {
            if p.done || p.err.is_some() {
                continue;
            }
            if p.psn == psn {
                at = Some(i);
                break;
            }
            let last = (p.psn + p.npkts - 1) & PSN_MASK;
            if psn_diff(last, psn) < 0 {
                if p.opcode == Opcode::RdmaRead.bits()
                    || p.opcode == Opcode::AtomicCs.bits()
                    || p.opcode == Opcode::AtomicFa.bits()
                {
                    // A READ/atomic cannot be acknowledged implicitly here.
                    return None;
                }
                p.done = true;
            } else {
                return None;
            }
        }
        at
    }

    pub(super) fn on_nak(&mut self, d: u16, qi: u32, psn: u32, nak: Nak) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.state != QpState::Rts {
            return;
        }
        let Some(i) = Self::implicit_ack(q, psn) else {
            return;
        };
        match nak {
            Nak::Seq => {
                q.retry_left = q.attr.retry_cnt;
                self.resend_from(d, qi, i);
                self.arm_retry(d, qi, true);
                self.drain(d, qi);
            }
            Nak::Rnr(code) => {
                q.counters.rnr_naks += 1;
                if q.rnr_left == 0 {
                    q.pend[i].err = Some(Syndrome::RnrRetryExcErr.as_u8());
                    return self.drain(d, qi);
                }
                if q.attr.rnr_retry != 7 {
                    q.rnr_left -= 1;
                }
                q.rnr_wait = true;
                q.timer_gen = (q.timer_gen | 1) + 2;
                let gen = q.timer_gen;
                let t = self.now + RNR_TIMER_NS[(code & 31) as usize];
                self.schedule(t, Event::RnrTimer { dev: d, qi, gen });
                self.drain(d, qi);
            }
            Nak::RemAccess | Nak::InvReq | Nak::RemOp => {
                q.pend[i].err = Some(match nak {
                    Nak::RemAccess => Syndrome::RemoteAccessErr.as_u8(),
                    Nak::InvReq => Syndrome::RemoteInvalReqErr.as_u8(),
                    _ => Syndrome::RemoteOpErr.as_u8(),
                });
                self.drain(d, qi);
            }
        }
    }

    pub(super) fn on_read_resp(&mut self, d: u16, qi: u32, psn: u32, data: &[u8]) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.state != QpState::Rts {
            return;
        }
        let Some(i) = Self::implicit_ack(q, psn) else {
            return;
        };
        if q.pend[i].opcode != Opcode::RdmaRead.bits() {
            return;
        }
        // A response of another length than the READ asked for is not
        // this READ's: dropped (the requester retries, as on a lost one).
        let asked: u64 = q.pend[i].local.iter().map(|&(_, len)| u64::from(len)).sum();
        if asked != data.len() as u64 {
            return;
        }
        let mut off = 0usize;
        let targets = q.pend[i].local.clone();
        for (p, len) in targets {
            if off >= data.len() {
                break;
            }
            let n = (len as usize).min(data.len() - off);
            // SAFETY: the target was checked against a registered region
            // with LOCAL_WRITE when the WQE was fetched.
            unsafe { dma_write(p, &data[off..off + n]) };
            off += n;
            cnt2(self, d, qi, |c, pp| c.dma_write(pp, n as u64));
        }
        let now = self.now;
        let q = self.qp(d, qi).expect("qp");
        q.pend[i].done = true;
        q.last_rx_ns = now;
        q.counters.payload_rx_bytes += data.len() as u64;
        self.progress(d, qi);
    }

    pub(super) fn on_atomic_resp(&mut self, d: u16, qi: u32, psn: u32, orig: u64) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.state != QpState::Rts {
            return;
        }
        let Some(i) = Self::implicit_ack(q, psn) else {
            return;
        };
        if !(q.pend[i].opcode == Opcode::AtomicCs.bits()
            || q.pend[i].opcode == Opcode::AtomicFa.bits())
        {
            return;
        }
        if let Some((p, _)) = q.pend[i].local.first().copied() {
            // SAFETY: 8 bytes checked inside a LOCAL_WRITE region at fetch.
            unsafe { std::ptr::write_unaligned(p.cast::<[u8; 8]>(), orig.to_be_bytes()) };
        }
        q.pend[i].done = true;
        cnt2(self, d, qi, |c, pp| c.dma_write(pp, 8));
        self.progress(d, qi);
    }
}
