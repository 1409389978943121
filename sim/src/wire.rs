//! The messages that travel between a requester and a responder: requests
//! (SEND, RDMA WRITE, RDMA READ, atomic) and their answers (ACK, NAK, READ
//! and atomic responses), each carried as one [`Packet`] addressed by
//! device and QP number.
//!
//! A leaf module: it uses nothing else of the crate, so the QP contexts
//! ([`crate::objects`]), the event queue ([`crate::world`]) and the
//! transport ([`crate::transport`]) all name these types without depending
//! on one another.

use std::rc::Rc;

/// What a request message carries.
#[derive(Debug)]
pub(crate) enum Req {
    Send {
        data: Vec<u8>,
        imm: Option<[u8; 4]>,
        inv: Option<u32>,
    },
    Write {
        raddr: u64,
        rkey: u32,
        data: Vec<u8>,
        imm: Option<[u8; 4]>,
    },
    Read {
        raddr: u64,
        rkey: u32,
        len: u32,
    },
    Atomic {
        raddr: u64,
        rkey: u32,
        cs: bool,
        swap_add: u64,
        compare: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Nak {
    Rnr(u8),
    Seq,
    RemAccess,
    InvReq,
    RemOp,
}

#[derive(Clone, Debug)]
pub(crate) enum Body {
    Req {
        psn: u32,
        npkts: u32,
        req: Rc<Req>,
        ud_qkey: Option<u32>,
        grh: bool,
        solicited: bool,
    },
    Ack {
        psn: u32,
    },
    Nak {
        psn: u32,
        nak: Nak,
    },
    ReadResp {
        psn: u32,
        data: Rc<Vec<u8>>,
    },
    AtomicResp {
        psn: u32,
        orig: u64,
    },
}

/// A message on the wire.
#[derive(Clone, Debug)]
pub(crate) struct Packet {
    pub src_dev: u16,
    pub src_qpn: u32,
    pub dst_dev: u16,
    pub dst_qpn: u32,
    pub body: Body,
}

impl Packet {
    pub fn psn(&self) -> u32 {
        match &self.body {
            Body::Req { psn, .. }
            | Body::Ack { psn }
            | Body::Nak { psn, .. }
            | Body::ReadResp { psn, .. }
            | Body::AtomicResp { psn, .. } => *psn,
        }
    }
}
