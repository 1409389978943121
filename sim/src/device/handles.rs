//! What object creation takes and returns: a protection domain ([`Pd`]),
//! the CQ, SRQ and QP the device created ([`CqHandle`], [`SrqHandle`],
//! [`QpHandle`]) and the request of a QP ([`QpInit`]).

use super::SimUar;
use bareverbs::platform::DmaBuf;
use bareverbs::qp::QpType;

/// A protection domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pd(pub u32);

/// A CQ the device created: its number and the memory the host polls.
#[derive(Clone, Copy, Debug)]
pub struct CqHandle {
    /// CQ number.
    pub cqn: u32,
    /// The ring (`ncqe` × 64 bytes, entries initialised to op_own 0xF0).
    pub ring: DmaBuf,
    /// The 8-byte doorbell record.
    pub dbrec: DmaBuf,
    /// Entries.
    pub ncqe: u32,
}

/// An SRQ the device created.
#[derive(Clone, Copy, Debug)]
pub struct SrqHandle {
    /// SRQ number.
    pub srqn: u32,
    /// The ring (`nslots << wqe_shift` bytes).
    pub ring: DmaBuf,
    /// The 4-byte doorbell record.
    pub dbrec: DmaBuf,
}

/// What a QP is created with.
#[derive(Clone, Copy, Debug)]
pub struct QpInit {
    /// Transport type (RC, UC, UD).
    pub qp_type: QpType,
    /// Protection domain.
    pub pd: Pd,
    /// CQ of send completions.
    pub send_cq: u32,
    /// CQ of receive completions.
    pub recv_cq: u32,
    /// SRQ the receives come from (no RQ then).
    pub srq: Option<u32>,
    /// SQ ring size in WQEBBs (power of two; 0 = no SQ).
    pub sq_wqebbs: u32,
    /// RQ ring size in WQEs (power of two; 0 = no RQ).
    pub rq_wqes: u32,
    /// log2 of the RQ stride (≥ 4).
    pub rq_wqe_shift: u32,
    /// User index written in CQEs (CQE version 1).
    pub uidx: u32,
}

/// A QP the device created: number, ring memory, doorbell record and the
/// UAR to ring.
#[derive(Debug)]
pub struct QpHandle {
    /// QP number.
    pub qpn: u32,
    /// SQ ring (`sq_wqebbs` × 64 bytes).
    pub sq_ring: Option<DmaBuf>,
    /// RQ ring.
    pub rq_ring: Option<DmaBuf>,
    /// The QP doorbell record (8 bytes: RCV word 0, SND word 1).
    pub dbrec: DmaBuf,
    /// The UAR page this QP's doorbells go to.
    pub uar: SimUar,
}
