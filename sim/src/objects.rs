//! Device-side object tables: memory regions (mkeys), completion queues,
//! shared receive queues and QP contexts, as the firmware would keep them.
//! Each table is indexed by the object number's low bits so a later
//! command interface (CREATE_MKEY / CREATE_CQ / CREATE_QP / CREATE_SRQ) can
//! fill the same slots. A QP context also holds the transport's state of
//! the QP: its fetched, not yet completed send WQEs (`Pending`) and the
//! responder's cache of atomic results (`RespCache`).

use crate::cost::Counters;
use crate::wire::Req;
use bareverbs::mr::Access;
use bareverbs::qp::{QpState, QpType};
use std::collections::VecDeque;
use std::rc::Rc;

/// A memory key (MR): protection domain, bounds, access, CPU mapping.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mr {
    pub key: u32,
    pub pd: u32,
    pub iova: u64,
    pub len: u64,
    /// CPU address of byte 0 (resolved through the DMA table at
    /// registration; never an address taken from a WQE).
    pub cpu: *mut u8,
    pub access: Access,
    /// Invalidated (SEND with invalidate / LOCAL_INV) or deregistered.
    pub valid: bool,
}

impl Mr {
    /// CPU pointer for `[addr, addr + len)` when it lies inside the region.
    pub fn range(&self, addr: u64, len: u64) -> Option<*mut u8> {
        let end = addr.checked_add(len)?;
        // `iova`/`len` of a caller-chosen key (CREATE_MKEY) are guest values:
        // a region whose end does not fit in 64 bits matches nothing.
        if addr < self.iova || end > self.iova.checked_add(self.len)? {
            return None;
        }
        Some(self.cpu.wrapping_add((addr - self.iova) as usize))
    }
}

/// A completion queue context.
#[derive(Debug)]
pub(crate) struct Cq {
    pub ring: *mut u8,
    pub ncqe: u32,
    pub dbrec: *mut u8,
    pub cqe_version: u8,
    /// Producer index (free running, 24-bit arithmetic against SET_CI).
    pub pi: u32,
    /// Overrun detected: the CQ is in error and accepts no more CQEs.
    pub error: bool,
    /// Armed for a completion event (`Some(solicited_only)`).
    pub armed: Option<bool>,
    /// Virtual time of the last CQE written.
    pub last_cqe_ns: u64,
}

impl Cq {
    /// Entries written and not yet released by the consumer index in the
    /// doorbell record (SET_CI, 24-bit arithmetic against `pi`).
    #[inline]
    pub fn used(&self) -> u32 {
        // SAFETY: dbrec was translated at CQ creation to 8 bytes of live
        // DMA memory; a raw volatile read of the SET_CI word.
        let ci =
            u32::from_be_bytes(unsafe { std::ptr::read_volatile(self.dbrec.cast::<[u8; 4]>()) })
                & 0x00ff_ffff;
        self.pi.wrapping_sub(ci) & 0x00ff_ffff
    }
}

/// A shared receive queue context.
#[derive(Debug)]
pub(crate) struct Srq {
    pub ring: *mut u8,
    pub nslots: u32,
    pub shift: u32,
    pub dbrec: *mut u8,
    pub pd: u32,
    /// Next slot the device consumes (follows `next_wqe_index`).
    pub head_slot: u16,
    /// WQEs consumed (16-bit, compared with the doorbell counter).
    pub consumed: u16,
    /// Limit for the SRQ-limit event (0 = disarmed).
    pub limit: u32,
    /// Error (a WQE whose next index leaves the ring).
    pub error: bool,
}

/// Attributes of a QP as modify-QP sets them (ibv names and values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpAttr {
    /// Target state (IBV_QP_STATE).
    pub qp_state: QpState,
    /// Asserted current state (IBV_QP_CUR_STATE).
    pub cur_qp_state: QpState,
    /// Remote access flags (IBV_QP_ACCESS_FLAGS): REMOTE_WRITE 2,
    /// REMOTE_READ 4, REMOTE_ATOMIC 8.
    pub qp_access_flags: Access,
    /// P_Key index.
    pub pkey_index: u16,
    /// Port number (1-based).
    pub port_num: u8,
    /// Q_Key (UD).
    pub qkey: u32,
    /// Destination LID of the address vector (IBV_QP_AV).
    pub dlid: u16,
    /// The address vector carries a GRH.
    pub grh: bool,
    /// Path MTU as `ibv_mtu` (1 = 256 … 5 = 4096).
    pub path_mtu: u8,
    /// Local ACK timeout exponent: 4.096 µs × 2^timeout (0 = infinite).
    pub timeout: u8,
    /// Transport retry count (0–7).
    pub retry_cnt: u8,
    /// RNR retry count (7 = infinite).
    pub rnr_retry: u8,
    /// Receive PSN (24 bits).
    pub rq_psn: u32,
    /// Send PSN (24 bits).
    pub sq_psn: u32,
    /// Outstanding RDMA READ/atomic as initiator.
    pub max_rd_atomic: u8,
    /// Outstanding RDMA READ/atomic as responder.
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer code (0–31).
    pub min_rnr_timer: u8,
    /// Destination QP number.
    pub dest_qp_num: u32,
}

impl Default for QpAttr {
    fn default() -> Self {
        QpAttr {
            qp_state: QpState::Reset,
            cur_qp_state: QpState::Reset,
            qp_access_flags: Access::empty(),
            pkey_index: 0,
            port_num: 1,
            qkey: 0,
            dlid: 0,
            grh: false,
            path_mtu: 5,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            rq_psn: 0,
            sq_psn: 0,
            max_rd_atomic: 16,
            max_dest_rd_atomic: 16,
            min_rnr_timer: 12,
            dest_qp_num: 0,
        }
    }
}

impl QpAttr {
    /// Path MTU in bytes.
    pub fn mtu_bytes(&self) -> u32 {
        256u32 << (self.path_mtu.clamp(1, 5) - 1)
    }
}

/// A QP context.
#[derive(Debug)]
pub(crate) struct Qp {
    pub qpn: u32,
    pub uidx: u32,
    pub ty: QpType,
    pub state: QpState,
    pub pd: u32,
    pub sq_ring: *mut u8,
    /// SQ ring size in WQEBBs (0 = no SQ).
    pub sq_nbb: u32,
    /// WQEBB counter of the next WQE to fetch (16-bit compared).
    pub sq_fetched: u16,
    /// WQE index delivered by the last BlueFlame write, if not yet fetched.
    pub bf_index: Option<u16>,
    /// The SQ stopped at a WQE that failed; nothing more is fetched.
    pub sq_blocked: bool,
    pub rq_ring: *mut u8,
    pub rq_nwqe: u32,
    pub rq_shift: u32,
    pub rq_consumed: u16,
    pub srq: Option<usize>,
    pub dbrec: *mut u8,
    pub scq: usize,
    pub rcq: usize,
    pub attr: QpAttr,
    // Requester.
    pub next_psn: u32,
    pub pend: VecDeque<Pending>,
    pub retry_left: u8,
    pub rnr_left: u8,
    /// Timer generation: odd = the timer of this generation is armed
    /// (retransmission, or RNR with `rnr_wait`), even = no timer.
    pub timer_gen: u64,
    pub rnr_wait: bool,
    // Responder.
    pub epsn: u32,
    pub nak_sent: bool,
    pub resp_cache: RespCache,
    /// Virtual time the responder last placed data.
    pub last_rx_ns: u64,
    pub counters: Counters,
    /// QP-context cache links (intrusive LRU list of the device).
    pub lru_prev: Option<u32>,
    pub lru_next: Option<u32>,
    pub in_qpc: bool,
}

/// An SQ WQE the device has fetched and not yet completed.
#[derive(Debug)]
pub(crate) struct Pending {
    pub wqe_counter: u16,
    pub opcode: u8,
    pub signaled: bool,
    pub psn: u32,
    pub npkts: u32,
    pub req: Option<Rc<Req>>,
    pub solicited: bool,
    /// Local buffers a READ response / atomic result is scattered to.
    pub local: Vec<(*mut u8, u32)>,
    pub byte_cnt: u32,
    pub done: bool,
    pub err: Option<u8>,
}

/// Responder resources for duplicate atomics: (psn, original value).
#[derive(Debug, Default)]
pub(crate) struct RespCache {
    atomics: VecDeque<(u32, u64)>,
}

impl RespCache {
    /// The original value of the atomic with PSN `psn`, if cached.
    pub fn find(&self, psn: u32) -> Option<u64> {
        self.atomics
            .iter()
            .find(|(p, _)| *p == psn)
            .map(|(_, v)| *v)
    }
    /// Caches the original value `v` of the atomic with PSN `psn` (the
    /// latest 64 are kept).
    pub fn push(&mut self, psn: u32, v: u64) {
        if self.atomics.len() >= 64 {
            self.atomics.pop_front();
        }
        self.atomics.push_back((psn, v));
    }
}

/// An asynchronous event the device reports (the EQ is not modelled yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AsyncEvent {
    /// A CQ overran: the consumer did not free room in time (CQ error).
    CqError {
        /// The CQ.
        cqn: u32,
    },
    /// A QP entered ERR because of a CQ error or a transport error
    /// (LOCAL_WQ_CATASTROPHIC_ERROR class).
    QpFatal {
        /// The QP.
        qpn: u32,
    },
    /// An SRQ dropped below its limit.
    SrqLimit {
        /// The SRQ.
        srqn: u32,
    },
    /// A completion event on an armed CQ.
    Completion {
        /// The CQ.
        cqn: u32,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key whose guest-chosen bounds end past 2^64 (CREATE_MKEY takes
    /// `start`/`len` from the command) matches nothing instead of
    /// overflowing `iova + len`.
    #[test]
    fn range_of_a_region_ending_past_u64_max_is_none() {
        let mut backing = [0u8; 16];
        let m = Mr {
            key: 0x100,
            pd: 1,
            iova: u64::MAX - 0xfff,
            len: 0x2000,
            cpu: backing.as_mut_ptr(),
            access: Access::empty(),
            valid: true,
        };
        assert_eq!(m.range(u64::MAX - 0xfff, 16), None);
        assert_eq!(m.range(u64::MAX, 1), None);
        let ok = Mr {
            iova: 0x1000,
            len: 16,
            ..m
        };
        assert_eq!(ok.range(0x1000, 16), Some(backing.as_mut_ptr()));
        assert_eq!(ok.range(0x1001, 16), None);
        assert_eq!(ok.range(0x1000, u64::MAX), None);
    }
}
