//! Shared receive queues: creating them (with their memory, or under a
//! firmware-chosen number over host memory), destroying them and arming
//! their limit event.

use super::placement::{place, pow2};
use super::{Device, Pd, SimError, SrqHandle};
use crate::objects::Srq;

impl Device {
    /// Creates an SRQ of `nslots` WQEs (power of two) with stride
    /// `1 << wqe_shift`; `limit` arms the SRQ-limit event (0 = off).
    pub fn create_srq(
        &self,
        pd: Pd,
        nslots: u32,
        wqe_shift: u32,
        limit: u32,
    ) -> Result<SrqHandle, SimError> {
        if !pow2(nslots) || !(5..=16).contains(&wqe_shift) {
            return Err(SimError::BadSize);
        }
        let ring = self.alloc_ring((nslots as usize) << wqe_shift)?;
        let dbrec = self.alloc_ring(4)?;
        let rp = self.translate(&ring)?;
        let dp = self.translate(&dbrec)?;
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        let srqn = d.srqs.len() as u32;
        d.srqs.push(Some(Srq {
            ring: rp,
            nslots,
            shift: wqe_shift,
            dbrec: dp,
            pd: pd.0,
            head_slot: 0,
            consumed: 0,
            limit,
            error: false,
        }));
        Ok(SrqHandle { srqn, ring, dbrec })
    }

    /// Creates SRQ `srqn` (chosen by the caller, as CREATE_SRQ's firmware
    /// does) over host memory named by device addresses: the ring at
    /// `ring_iova` (`nslots << wqe_shift` bytes) and the 4-byte record at
    /// `dbrec_iova`, both resolved through the DMA table (the driver's
    /// memory: any live allocation).
    pub(crate) fn create_srq_as(
        &self,
        srqn: u32,
        pd: Pd,
        nslots: u32,
        wqe_shift: u32,
        ring_iova: u64,
        dbrec_iova: u64,
    ) -> Result<(), SimError> {
        if !pow2(nslots) || !(4..=16).contains(&wqe_shift) {
            return Err(SimError::BadSize);
        }
        let rp = self.translate_iova(ring_iova, (nslots as usize) << wqe_shift)?;
        let dp = self.translate_iova(dbrec_iova, 4)?;
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        let srq = Srq {
            ring: rp,
            nslots,
            shift: wqe_shift,
            dbrec: dp,
            pd: pd.0,
            head_slot: 0,
            consumed: 0,
            limit: 0,
            error: false,
        };
        place(&mut d.srqs, Some(srqn as usize), srq, |_| true)?;
        Ok(())
    }

    /// Removes SRQ `srqn` (DESTROY_SRQ; firmware refuses while a QP uses it).
    pub fn destroy_srq(&self, srqn: u32) {
        let mut w = self.w.borrow_mut();
        if let Some(slot) = w.devs[self.id as usize].srqs.get_mut(srqn as usize) {
            *slot = None;
        }
    }

    /// Re-arms the SRQ limit event.
    pub fn arm_srq_limit(&self, srqn: u32, limit: u32) {
        let mut w = self.w.borrow_mut();
        if let Some(Some(s)) = w.devs[self.id as usize].srqs.get_mut(srqn as usize) {
            s.limit = limit;
        }
    }
}
