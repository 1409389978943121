//! The CQE writer: one CQE into a CQ ring, with the owner bit, overrun
//! detection against the consumer index and its consequences.

use super::{TraceKind, World};
use crate::objects::AsyncEvent;
use bareverbs::cqe::Cqe64;
use bareverbs::qp::QpState;

impl World {
    /// Writes one CQE (owner bit added here) into CQ `cqn` of device `d`.
    /// Detects overrun against the consumer index in the doorbell record:
    /// on overrun the CQ enters error, an async CQ error event is raised,
    /// every QP reporting to it is queued for ERR, and `false` is returned.
    pub fn write_cqe(&mut self, d: u16, cqn: usize, cqe: Cqe64, is_err: bool) -> bool {
        self.put_cqe(d, cqn, cqe, is_err)
    }

    /// [`Self::write_cqe`], inlined into its caller (the fused paths).
    #[inline(always)]
    pub(crate) fn put_cqe(&mut self, d: u16, cqn: usize, mut cqe: Cqe64, is_err: bool) -> bool {
        let now = self.now;
        let params = self.params;
        let dev = &mut self.devs[d as usize];
        let Some(Some(cq)) = dev.cqs.get_mut(cqn) else {
            return false;
        };
        if cq.error {
            return false;
        }
        if cq.used() >= cq.ncqe {
            cq.error = true;
            dev.events.push(AsyncEvent::CqError { cqn: cqn as u32 });
            let mut victims = Vec::new();
            for (qi, q) in dev.qps.iter().enumerate() {
                if let Some(q) = q {
                    if (q.scq == cqn || q.rcq == cqn) && q.state != QpState::Err {
                        victims.push((d, qi as u32));
                        dev.events.push(AsyncEvent::QpFatal { qpn: q.qpn });
                    }
                }
            }
            self.to_error.extend(victims);
            self.trace(TraceKind::CqOverrun, d, cqn as u32, 0);
            return false;
        }
        if cq.cqe_version == 0 {
            // Version 0 CQEs carry the SRQ number, not the user index.
            cqe.set_srqn_uidx(0);
        }
        let owner = u8::from(cq.pi & cq.ncqe != 0);
        let op_own = cqe.op_own();
        cqe.set_op_own((op_own & 0xfe) | owner);
        if !is_err {
            // Error CQEs use bytes 52..55 for the syndromes (ref §5.5).
            cqe.set_timestamp(now);
        }
        let slot = (cq.pi & (cq.ncqe - 1)) as usize * 64;
        let bytes = cqe.into_bytes();
        // SAFETY: the ring was translated at creation to ncqe * 64 bytes of
        // live DMA memory and slot + 64 <= ncqe * 64. Bytes 0..63 are
        // written before the ownership byte, as the device must.
        unsafe {
            let p = cq.ring.add(slot);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, 63);
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            std::ptr::write_volatile(p.add(63), bytes[63]);
        }
        cq.pi = cq.pi.wrapping_add(1);
        cq.last_cqe_ns = now;
        if let Some(_sol) = cq.armed.take() {
            dev.events.push(AsyncEvent::Completion { cqn: cqn as u32 });
        }
        dev.counters.cqes += 1;
        if is_err {
            dev.counters.err_cqes += 1;
        }
        dev.counters.dma_write(&params, 64);
        let wc = cqe.wqe_counter() as u32 | (cqe.syndrome() as u32) << 16;
        let qpn = cqe.qpn();
        self.trace(TraceKind::Cqe, d, qpn, wc);
        true
    }
}
