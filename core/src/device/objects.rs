//! The object table: every live PD, memory key, CQ, QP and SRQ the device
//! created, keyed by kind and number, with the CQ-capacity accounting of
//! the QPs reporting to each CQ ([ref §3.7](crate::reference)).

use super::{Device, DeviceError, UarMap};
use crate::cmd::{ops, Bar0, Clock};
use crate::platform::{DmaAllocator, DmaBuf};

/// Most live objects of each kind the device tracks.
pub const MAX_OBJECTS: usize = 64;

/// One live object in the table: its kind, number and (for queues) the
/// DMA memory its destruction frees.
#[derive(Clone, Copy, Debug)]
pub(super) enum Obj {
    Pd(u32),
    /// Index and the whole key (index and variant) handed out.
    Mkey(u32, u32),
    Cq(u32, DmaBuf, DmaBuf, CqLoad),
    Qp(u32, DmaBuf, DmaBuf, QpLoad),
    Srq(u32, DmaBuf, DmaBuf),
}

impl Obj {
    /// Kind and number: the key of the object table (numbers are unique
    /// per kind, not across kinds).
    pub(super) fn id(&self) -> (&'static str, u32) {
        match self {
            Obj::Pd(n) => ("PD", *n),
            Obj::Mkey(n, _) => ("mkey", *n),
            Obj::Cq(n, ..) => ("CQ", *n),
            Obj::Qp(n, ..) => ("QP", *n),
            Obj::Srq(n, ..) => ("SRQ", *n),
        }
    }
}

/// A CQ's capacity and the outstanding WRs of the QPs reporting to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct CqLoad {
    pub(super) ncqe: u32,
    pub(super) committed: u32,
    /// The EQ the CQ names (`c_eqn`).
    pub(super) eqn: u8,
}

/// The outstanding WRs a QP may have, and the CQs they complete into.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct QpLoad {
    pub(super) send_cqn: u32,
    pub(super) recv_cqn: u32,
    pub(super) send: u32,
    pub(super) recv: u32,
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// Records an object the device just created, keyed by the number the
    /// device returned — which is not trusted: a number above 24 bits
    /// ([`DeviceError::BadObjectNumber`]) or one already live for the same
    /// kind ([`DeviceError::DuplicateObjectNumber`]) is refused and nothing
    /// is recorded. The caller then returns that error without handing out
    /// a handle and without freeing the create command's DMA memory (the
    /// device may use it: leaked on purpose) or destroying anything (the
    /// number names an object the driver already owns).
    pub(super) fn track(&mut self, o: Obj) -> Result<(), DeviceError> {
        let (what, number) = o.id();
        if number > ops::OBJ_NUMBER_MAX {
            return Err(DeviceError::BadObjectNumber { what, number });
        }
        if self.objs.iter().any(|x| x.id() == (what, number)) {
            return Err(DeviceError::DuplicateObjectNumber { what, number });
        }
        self.objs
            .push(o)
            .map_err(|_| DeviceError::TableFull { what: "objects" })
    }
    /// The capacity and committed load of CQ `cqn`, if it is ours.
    pub(super) fn cq_load(&self, cqn: u32) -> Option<CqLoad> {
        self.objs.iter().find_map(|o| match o {
            Obj::Cq(n, _, _, l) if *n == cqn => Some(*l),
            _ => None,
        })
    }

    /// Adds (or removes) a QP's outstanding WRs to the load of its CQs.
    pub(super) fn commit_cq_load(&mut self, q: &QpLoad, add: bool) {
        for o in self.objs.iter_mut() {
            if let Obj::Cq(n, _, _, l) = o {
                let mut d = 0;
                if *n == q.send_cqn {
                    d += q.send;
                }
                if *n == q.recv_cqn {
                    d += q.recv;
                }
                l.committed = if add {
                    l.committed.saturating_add(d)
                } else {
                    l.committed.saturating_sub(d)
                };
            }
        }
    }

    /// The CQ-covers-outstanding rule ([ref §3.7](crate::reference)): every WR that can be
    /// outstanding on the QPs reporting to a CQ needs a CQE slot, counting
    /// the QPs already attached. Refused with the sizing error that says so.
    pub(super) fn check_cq_room(&self, q: &QpLoad) -> Result<(), DeviceError> {
        use crate::sizing::{check_cq_covers, CqAttach};
        let (Some(sc), Some(rc)) = (self.cq_load(q.send_cqn), self.cq_load(q.recv_cqn)) else {
            return Ok(()); // unknown CQ numbers are refused by firmware
        };
        let attach = if q.send_cqn == q.recv_cqn {
            CqAttach::Shared {
                cqe: sc.ncqe - 1 - sc.committed.min(sc.ncqe - 1),
            }
        } else {
            CqAttach::Separate {
                send_cqe: sc.ncqe - 1 - sc.committed.min(sc.ncqe - 1),
                recv_cqe: rc.ncqe - 1 - rc.committed.min(rc.ncqe - 1),
            }
        };
        check_cq_covers(attach, q.send, q.recv).map_err(DeviceError::CqTooSmall)
    }

    pub(super) fn untrack(&mut self, f: impl Fn(&Obj) -> bool) -> Option<Obj> {
        let i = self.objs.iter().position(f)?;
        Some(self.objs.remove(i))
    }
}
