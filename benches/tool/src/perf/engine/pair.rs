//! One connected QP pair as a backend hands it to the engine: its two
//! sides, its message slots ([`Slot`]) in the four areas ([`Areas`] says
//! which a test uses, [`PairAreas`] holds them), the UD address vector
//! and the two address lines. [`Pair::new`] and [`PairAreas::endpoint`]
//! are the one place every backend builds them.

use super::side::SideOps;
use crate::perftest::format::Endpoint;
use bareverbs::wqe::AddressVector;
use std::ptr::NonNull;

/// One message slot: CPU pointer, device address, key.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// Host address of the slot's first byte (raw: the device may write it).
    pub cpu: NonNull<u8>,
    /// Device (IOVA) address of the slot.
    pub addr: u64,
    /// Memory key (lkey = rkey) covering the slot.
    pub key: u32,
}

/// Which areas a test uses (the others are not allocated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Areas {
    /// A's source slots (WRITE/SEND data, the ping).
    pub a_src: bool,
    /// A's destination slots (READ targets, the pong, atomics' results).
    pub a_dst: bool,
    /// B's source slots (READ sources, the pong, the atomic counter).
    pub b_src: bool,
    /// B's destination slots (WRITE/SEND targets).
    pub b_dst: bool,
}

/// One connected QP pair and its registered slots, made by a
/// [`PerfDevice`](super::PerfDevice); `a` is the requester, `b` the responder.
pub struct Pair {
    /// The requester's data path.
    pub a: Box<dyn SideOps>,
    /// The responder's data path.
    pub b: Box<dyn SideOps>,
    /// A's source slots (empty when [`Areas::a_src`] is off).
    pub a_src: Vec<Slot>,
    /// A's destination slots.
    pub a_dst: Vec<Slot>,
    /// B's source slots.
    pub b_src: Vec<Slot>,
    /// B's destination slots.
    pub b_dst: Vec<Slot>,
    /// UD: the address vector toward the peer.
    pub av: AddressVector,
    /// The `local address` line of this pair (A).
    pub local: Endpoint,
    /// The `remote address` line (B).
    pub remote: Endpoint,
}

/// The four message areas of one pair, as a backend allocated them (an
/// area the test does not use is empty).
#[derive(Debug, Default)]
pub struct PairAreas {
    /// A's source slots.
    pub a_src: Vec<Slot>,
    /// A's destination slots.
    pub a_dst: Vec<Slot>,
    /// B's source slots.
    pub b_src: Vec<Slot>,
    /// B's destination slots.
    pub b_dst: Vec<Slot>,
}

impl PairAreas {
    /// The address line of side A (`a`) or B: `lid`, `qpn` and `psn`,
    /// with the key and address of the side's first destination slot, else
    /// its first source slot (0 without either).
    pub fn endpoint(&self, a: bool, lid: u16, qpn: u32, psn: u32) -> Endpoint {
        let s = if a {
            self.a_dst.first().or(self.a_src.first())
        } else {
            self.b_dst.first().or(self.b_src.first())
        };
        Endpoint {
            lid,
            qpn,
            psn,
            out_reads: 16,
            rkey: s.map_or(0, |s| s.key),
            vaddr: s.map_or(0, |s| s.addr),
            gid: [0; 16],
        }
    }
}

impl Pair {
    /// The pair of the requester `a` and the responder `b` over `areas`,
    /// with the UD address vector `av` toward the peer and the address
    /// lines `local` (A) and `remote` (B).
    pub fn new(
        a: Box<dyn SideOps>,
        b: Box<dyn SideOps>,
        areas: PairAreas,
        av: AddressVector,
        local: Endpoint,
        remote: Endpoint,
    ) -> Pair {
        let PairAreas {
            a_src,
            a_dst,
            b_src,
            b_dst,
        } = areas;
        Pair {
            a,
            b,
            a_src,
            a_dst,
            b_src,
            b_dst,
            av,
            local,
            remote,
        }
    }
}
