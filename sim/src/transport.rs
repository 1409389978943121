//! The transport engine: send-queue fetch and execution (requester),
//! request execution (responder), RC acknowledgements, RNR NAK, the
//! retransmission timer, UC and UD, error completions and flushes.
//!
//! Messages are modelled as one wire event each; a message of `len` bytes
//! consumes `max(1, ceil(len / path_mtu))` PSNs as its packets would, so
//! PSN arithmetic matches the wire. RC uses go-back-N: a gap makes the
//! responder NAK (PSN sequence error) once, and the requester resends from
//! the NAK'd PSN; lost ACKs are recovered by the transport timer
//! (4.096 µs × 2^timeout) and the responder re-ACKs duplicates. READ
//! duplicates are re-executed, atomic duplicates replayed from a cache.
//!
//! Atomics operate on big-endian 64-bit values in memory, and the original
//! value is written big-endian to the local buffer (ConnectX byte order).
//!
//! The engine is split by role, each part an `impl World` block:
//!
//! | module | role |
//! | --- | --- |
//! | `requester` | doorbells, SQ fetch, WQE checks and gather, request packets |
//! | `responder` | incoming requests: PSN checks, execution, READ/atomic responses, duplicates; its child `receive` consumes receive WQEs |
//! | `reliability` | ACK/NAK and READ/atomic responses at the requester, retransmission, the transport and RNR timers |
//! | `completion` | send CQEs in order, error CQEs, ERR/SQE and flushes |
//! | `fast` | the fused RC WRITE doorbell |
//!
//! This module keeps what they share: PSN arithmetic, DMA copies, QP
//! lookup, the port's transmitter and the dispatch of arriving packets.
//! The messages themselves are the types of the leaf module `crate::wire`;
//! the QP-context state the transport keeps (outstanding send WQEs, the
//! responder's atomic cache) is in [`crate::objects`].

use crate::cost::ceil_u64;
use crate::objects::Qp;
use crate::wire::{Body, Packet};
use crate::world::{cnt2, TraceKind, World};

mod completion;
mod fast;
mod reliability;
mod requester;
mod responder;

pub use reliability::{transport_timeout_ns, RNR_TIMER_NS};

const PSN_MASK: u32 = 0x00ff_ffff;

/// Signed distance `a - b` in 24-bit PSN space.
fn psn_diff(a: u32, b: u32) -> i32 {
    ((a.wrapping_sub(b) << 8) as i32) >> 8
}

/// Reads `n` bytes of DMA memory at `p` into a vector.
///
/// # Safety
/// `p` must be valid for reads of `n` bytes (a range checked against a
/// memory region or an object created through the DMA table).
unsafe fn dma_read(p: *const u8, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    // SAFETY: forwarded contract; `v` is fresh host memory.
    unsafe { std::ptr::copy(p, v.as_mut_ptr(), n) };
    v
}

/// Writes `src` to DMA memory at `p`.
///
/// # Safety
/// `p` must be valid for writes of `src.len()` bytes (checked range).
unsafe fn dma_write(p: *mut u8, src: &[u8]) {
    // SAFETY: forwarded contract; `copy` tolerates overlap with the source.
    unsafe { std::ptr::copy(src.as_ptr(), p, src.len()) };
}

fn rd_be32(p: *const u8) -> u32 {
    // SAFETY: callers pass doorbell-record words translated at creation.
    u32::from_be_bytes(unsafe { std::ptr::read_volatile(p.cast::<[u8; 4]>()) })
}

impl World {
    pub(crate) fn qp(&mut self, d: u16, qi: u32) -> Option<&mut Qp> {
        self.devs
            .get_mut(d as usize)?
            .qps
            .get_mut(qi as usize)?
            .as_mut()
    }

    fn find_qp(&self, d: u16, qpn: u32) -> Option<u32> {
        let qi = qpn.checked_sub(crate::world::QPN_BASE)?;
        let dev = self.devs.get(d as usize)?;
        matches!(dev.qps.get(qi as usize), Some(Some(_))).then_some(qi)
    }

    fn dev_by_lid(&self, lid: u16) -> Option<u16> {
        self.devs
            .iter()
            .position(|x| x.lid == lid)
            .map(|i| i as u16)
            .or_else(|| self.wire_dev_of_lid(lid))
    }

    /// Transmits a packet from device `d`, serialising on its port.
    /// Returns when its last bit leaves the port.
    #[inline]
    fn send_packet(
        &mut self,
        d: u16,
        qi: u32,
        ready: u64,
        pkt: Packet,
        payload: u64,
        rexmit: bool,
    ) -> u64 {
        let wire = ceil_u64(self.params().t_wire(payload + 64));
        let dev = &mut self.devs[d as usize];
        let depart = ready.max(dev.tx_free);
        dev.tx_free = depart + wire;
        cnt2(self, d, qi, |c, _| {
            c.packets_tx += 1;
            c.payload_tx_bytes += payload;
            if rexmit {
                c.retransmits += 1;
            }
        });
        self.transmit(depart, pkt);
        depart + wire
    }

    pub(crate) fn deliver(&mut self, pkt: Packet) {
        let d = pkt.dst_dev;
        if d >= crate::udp_wire::WIRE_DEV_BASE {
            // A wired peer's: its fate is decided, it leaves as datagrams.
            self.wire_out(pkt);
            return;
        }
        self.trace(TraceKind::Arrive, d, pkt.dst_qpn, pkt.psn());
        let Some(qi) = self.find_qp(d, pkt.dst_qpn) else {
            return;
        };
        match pkt.body {
            Body::Req {
                psn,
                npkts,
                req,
                ud_qkey,
                grh,
                solicited,
            } => self.on_request(
                d,
                qi,
                pkt.src_dev,
                pkt.src_qpn,
                psn,
                npkts,
                req,
                ud_qkey,
                grh,
                solicited,
            ),
            Body::Ack { psn } => self.on_ack(d, qi, psn),
            Body::Nak { psn, nak } => self.on_nak(d, qi, psn, nak),
            Body::ReadResp { psn, data } => self.on_read_resp(d, qi, psn, &data),
            Body::AtomicResp { psn, orig } => self.on_atomic_resp(d, qi, psn, orig),
        }
    }
}
