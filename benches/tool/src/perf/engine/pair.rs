//! One connected QP pair as a backend hands it to the engine: its two
//! sides, its message slots ([`Slot`]) in the four areas ([`Areas`] says
//! which a test uses, [`PairAreas`] holds them), the UD address vector
//! and the two address lines. [`Pair::new`], [`Pair::half`] and
//! [`PairAreas::endpoint`] are the one place every backend builds them.

use super::role::{RemoteSide, Role};
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
    /// Which sides this process drives (the other's slots are the peer's).
    pub role: Role,
    /// What the CPU pointers of the peer's slots name: a local buffer of
    /// one slot, so that no pointer of a [`Slot`] is ever dangling (the
    /// engine reads and writes only the slots of the sides it drives).
    _scratch: Option<Box<[u8]>>,
}

/// The slots, address vector, address lines and role (the sides are trait
/// objects and are not asked: a side's state may be borrowed).
impl std::fmt::Debug for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pair")
            .field("a_src", &self.a_src)
            .field("a_dst", &self.a_dst)
            .field("b_src", &self.b_src)
            .field("b_dst", &self.b_dst)
            .field("av", &self.av)
            .field("local", &self.local)
            .field("remote", &self.remote)
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
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
            role: Role::Loopback,
            _scratch: None,
        }
    }

    /// The half of a pair this process drives in a two-host run: `role`
    /// says which side `local` is ([`Role::Client`]: A, [`Role::Server`]:
    /// B), `areas` holds that side's slots (the other side's are empty).
    /// The peer's side is `peer` (its QP and the buffer it exposes, as its
    /// key message named them): its slots are `slots` consecutive
    /// `slot_bytes` at `peer.vaddr` under `peer.rkey`, in both of its
    /// areas `used` names. `mine` is this side's address line.
    #[allow(clippy::too_many_arguments)]
    pub fn half(
        role: Role,
        local: Box<dyn SideOps>,
        mut areas: PairAreas,
        used: Areas,
        peer: &Endpoint,
        slots: usize,
        slot_bytes: usize,
        mine: Endpoint,
    ) -> Pair {
        let mut scratch = vec![0u8; slot_bytes.max(1)].into_boxed_slice();
        let at = NonNull::new(scratch.as_mut_ptr()).unwrap_or(NonNull::dangling());
        let remote_slots = |on: bool| -> Vec<Slot> {
            if !on {
                return Vec::new();
            }
            (0..slots)
                .map(|k| Slot {
                    cpu: at,
                    addr: peer.vaddr.wrapping_add((k * slot_bytes) as u64),
                    key: peer.rkey,
                })
                .collect()
        };
        let other: Box<dyn SideOps> = Box::new(RemoteSide { qpn: peer.qpn });
        let (a, b, local_ep, remote_ep) = match role {
            Role::Server => {
                areas.a_src = remote_slots(used.a_src);
                areas.a_dst = remote_slots(used.a_dst);
                (other, local, peer.clone(), mine)
            }
            _ => {
                areas.b_src = remote_slots(used.b_src);
                areas.b_dst = remote_slots(used.b_dst);
                (local, other, mine, peer.clone())
            }
        };
        let mut p = Pair::new(a, b, areas, AddressVector::default(), local_ep, remote_ep);
        p.role = role;
        p._scratch = Some(scratch);
        p
    }
}
