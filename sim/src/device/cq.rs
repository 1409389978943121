//! Completion queues: creating them (with their memory, over host memory,
//! or under a firmware-chosen number), destroying them, and their state.

use super::memory::Origin;
use super::placement::{place, pow2};
use super::{CqHandle, Device, SimError};
use crate::objects::Cq;
use bareverbs::cqe::{CQE64_SIZE, OP_OWN_INIT, OP_OWN_OFFSET};

impl Device {
    /// Creates a CQ of `ncqe` 64-byte entries (power of two ≥ 2) with CQE
    /// version `cqe_version` (1: CQEs carry the user index), allocating its
    /// ring and doorbell record.
    pub fn create_cq(&self, ncqe: u32, cqe_version: u8) -> Result<CqHandle, SimError> {
        if !pow2(ncqe) || !(2..=1 << 22).contains(&ncqe) {
            return Err(SimError::BadSize);
        }
        let ring = self.alloc_ring(ncqe as usize * 64)?;
        let dbrec = self.alloc_ring(8)?;
        let cqn = self.cq_at(
            None,
            ncqe,
            cqe_version,
            ring.iova,
            dbrec.iova,
            Origin::Driver,
        )?;
        Ok(CqHandle {
            cqn,
            ring,
            dbrec,
            ncqe,
        })
    }

    /// Creates a CQ over host-provided memory named by device addresses
    /// (as CREATE_CQ names its pages): the ring at `ring_iova` (`ncqe` × 64
    /// bytes) and the record at `dbrec_iova` (8 bytes). Both are resolved
    /// through the DMA table; a range outside a live allocation is refused
    /// with [`SimError::BadAddress`] and never touched. Both must lie in
    /// payload buffers ([`Device::alloc`]) that no key has covered
    /// ([`SimError::KeyedMemory`]; driver memory, such as another queue's
    /// ring: [`SimError::DriverMemory`]); they become queue memory, which
    /// [`reg_mr`](Self::reg_mr) refuses to key. Every entry's op_own is
    /// initialised to 0xF0.
    pub fn create_cq_at(
        &self,
        ncqe: u32,
        cqe_version: u8,
        ring_iova: u64,
        dbrec_iova: u64,
    ) -> Result<u32, SimError> {
        self.cq_at(
            None,
            ncqe,
            cqe_version,
            ring_iova,
            dbrec_iova,
            Origin::Caller,
        )
    }

    /// [`create_cq_at`](Self::create_cq_at) under the CQ number `cqn`
    /// chosen by the caller (CREATE_CQ's firmware), which must be free,
    /// over the driver's memory (any live allocation).
    pub(crate) fn create_cq_as(
        &self,
        cqn: u32,
        ncqe: u32,
        cqe_version: u8,
        ring_iova: u64,
        dbrec_iova: u64,
    ) -> Result<(), SimError> {
        self.cq_at(
            Some(cqn),
            ncqe,
            cqe_version,
            ring_iova,
            dbrec_iova,
            Origin::Driver,
        )
        .map(|_| ())
    }

    fn cq_at(
        &self,
        cqn: Option<u32>,
        ncqe: u32,
        cqe_version: u8,
        ring_iova: u64,
        dbrec_iova: u64,
        origin: Origin,
    ) -> Result<u32, SimError> {
        if !pow2(ncqe) || !(2..=1 << 22).contains(&ncqe) {
            return Err(SimError::BadSize);
        }
        let at = self.queue_memory(&[(ring_iova, ncqe as usize * 64), (dbrec_iova, 8)], origin)?;
        let (rp, dp) = (at[0], at[1]);
        for i in 0..ncqe as usize {
            // SAFETY: entry i's op_own byte lies inside the ring just
            // allocated and translated.
            unsafe {
                std::ptr::write_volatile(rp.add(i * CQE64_SIZE + OP_OWN_OFFSET), OP_OWN_INIT)
            };
        }
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        let cq = Cq {
            ring: rp,
            ncqe,
            dbrec: dp,
            cqe_version,
            pi: 0,
            error: false,
            armed: None,
            last_cqe_ns: 0,
        };
        let i = place(&mut d.cqs, cqn.map(|n| n as usize), cq, |_| true)?;
        Ok(i as u32)
    }

    /// Removes CQ `cqn` (DESTROY_CQ). Firmware refuses to destroy a CQ a
    /// QP still reports to, so no QP is left pointing at it.
    pub fn destroy_cq(&self, cqn: u32) {
        let mut w = self.w.borrow_mut();
        if let Some(slot) = w.devs[self.id as usize].cqs.get_mut(cqn as usize) {
            *slot = None;
        }
    }

    /// Whether CQ `cqn` is in error (overrun).
    pub fn cq_in_error(&self, cqn: u32) -> bool {
        let w = self.w.borrow();
        matches!(w.devs[self.id as usize].cqs.get(cqn as usize), Some(Some(c)) if c.error)
    }

    /// Virtual time of the last CQE written to CQ `cqn`.
    pub fn cq_last_cqe_ns(&self, cqn: u32) -> u64 {
        let w = self.w.borrow();
        match w.devs[self.id as usize].cqs.get(cqn as usize) {
            Some(Some(c)) => c.last_cqe_ns,
            _ => 0,
        }
    }
}
