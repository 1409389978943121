//! Protection domains and memory keys: allocating and adopting PDs,
//! registering regions (by range, under a caller's key, or as the core's
//! [`MemoryRegion`]) and removing keys.

use super::placement::place;
use super::{Device, Pd, SimError};
use crate::objects::Mr;
use bareverbs::mr::{mkey_from_parts, mkey_index, Access, MemoryRegion};
use bareverbs::platform::DmaBuf;
use std::ptr::NonNull;

/// What a registration may key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keys {
    /// Payload buffers only (the safe calls).
    Payload,
    /// Any live allocation (the unchecked call).
    Any,
}

impl Device {
    /// Allocates a protection domain.
    pub fn alloc_pd(&self) -> Pd {
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        d.next_pd += 1;
        Pd(d.next_pd - 1)
    }

    /// Makes PD number `pd` (allocated elsewhere, e.g. by ALLOC_PD) valid
    /// on this device.
    pub fn adopt_pd(&self, pd: Pd) {
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        d.next_pd = d.next_pd.max(pd.0.saturating_add(1));
    }

    /// Registers `[iova, iova + len)` of this device's DMA space under a
    /// new key (lkey = rkey) with `access` (`ibv_access_flags`). Returns
    /// the key.
    ///
    /// The range must lie inside one payload buffer ([`Device::alloc`]):
    /// one outside a live allocation is refused with
    /// [`SimError::BadAddress`], one in driver memory (a queue's ring or
    /// doorbell record, memory allocated through the
    /// [`DmaAllocator`](bareverbs::platform::DmaAllocator) trait) with
    /// [`SimError::DriverMemory`] naming that allocation: a key there
    /// would let a peer write the driver's queues.
    pub fn reg_mr_range(
        &self,
        pd: Pd,
        iova: u64,
        len: u64,
        access: Access,
    ) -> Result<u32, SimError> {
        self.reg_mr_translated(pd, iova, len, access, Keys::Payload)
            .map(|(key, _)| key)
    }

    /// [`Device::reg_mr_range`] over any range inside one live allocation,
    /// driver memory included (a queue's ring or doorbell record): for
    /// tests of what the device and the driver do when a peer writes there.
    ///
    /// # Safety
    /// Until the key is gone, the device — and every peer the key is given
    /// to — may write the range. Nothing may rely on the range being
    /// written only by its owner or only as a queue protocol allows: the
    /// contracts of the core's queue constructors (the device only reads
    /// an SQ ring and its record; a CQ's ring and record are written only
    /// as the mlx5 CQ protocol allows) no longer hold for a queue over it,
    /// so such a queue may be used only in ways that stay sound whatever
    /// bytes land there. No Rust reference may point into the range.
    pub unsafe fn reg_mr_range_unchecked(
        &self,
        pd: Pd,
        iova: u64,
        len: u64,
        access: Access,
    ) -> Result<u32, SimError> {
        self.reg_mr_translated(pd, iova, len, access, Keys::Any)
            .map(|(key, _)| key)
    }

    /// [`Device::reg_mr_range`] (or, with [`Keys::Any`], its unchecked
    /// form), also returning the CPU address the simulator's own DMA table
    /// gives for `iova`.
    fn reg_mr_translated(
        &self,
        pd: Pd,
        iova: u64,
        len: u64,
        access: Access,
        keys: Keys,
    ) -> Result<(u32, NonNull<u8>), SimError> {
        let len_usize = usize::try_from(len).map_err(|_| SimError::BadAddress)?;
        let cpu = match keys {
            Keys::Payload => self.dma.key_payload(iova, len_usize)?,
            Keys::Any => self
                .dma
                .translate(iova, len_usize)
                .ok_or(SimError::BadAddress)?,
        };
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        let idx = d.mrs.len() as u32;
        // Key = index << 8 | variant; never MLX5_INVALID_LKEY (0x100).
        let key = mkey_from_parts(idx, ((idx.wrapping_mul(0x5b) + 0x42) & 0xff) as u8);
        d.mrs.push(Some(Mr {
            key,
            pd: pd.0,
            iova,
            len,
            cpu: cpu.as_ptr(),
            access,
            valid: true,
        }));
        Ok((key, cpu))
    }

    /// Registers a memory key chosen by the caller (as CREATE_MKEY does):
    /// WQEs name bytes `[va, va + len)` under `key`; they live at device
    /// address `dev_addr`, which must lie inside one live DMA allocation.
    /// The key's index ([`mkey_index`]) must be free. Any live allocation
    /// may be keyed, as real firmware keys whatever pages the driver names:
    /// the driver (whose command runner is `unsafe`) answers for them.
    pub(crate) fn reg_mr_as(
        &self,
        key: u32,
        pd: Pd,
        va: u64,
        len: u64,
        dev_addr: u64,
        access: Access,
    ) -> Result<(), SimError> {
        let cpu = usize::try_from(len)
            .ok()
            .and_then(|l| self.dma.translate(dev_addr, l))
            .ok_or(SimError::BadAddress)?;
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        let mr = Mr {
            key,
            pd: pd.0,
            iova: va,
            len,
            cpu: cpu.as_ptr(),
            access,
            valid: true,
        };
        place(&mut d.mrs, Some(mkey_index(key) as usize), mr, |m| m.valid)?;
        Ok(())
    }

    /// Removes the memory key with index `index` (DESTROY_MKEY).
    pub fn destroy_mr_index(&self, index: u32) {
        let mut w = self.w.borrow_mut();
        if let Some(slot) = w.devs[self.id as usize].mrs.get_mut(index as usize) {
            *slot = None;
        }
    }

    /// Registers the device range `[buf.iova, buf.iova + buf.len)` and
    /// returns the core's [`MemoryRegion`] for it.
    ///
    /// Only `buf.iova` and `buf.len` are used: the region's CPU address comes
    /// from the simulator's own DMA translation of the IOVA, never from
    /// `buf.cpu`, so a caller-built `DmaBuf` cannot point the region (and the
    /// host-side copies the core makes through it, such as inline sends) at
    /// memory outside the device's allocations. A range that is not inside
    /// one live allocation is refused with [`SimError::BadAddress`].
    ///
    /// Only payload buffers are keyed, as by [`Device::reg_mr_range`]: a
    /// `DmaBuf` naming a queue's ring or doorbell record (such as an
    /// endpoint's [`sq_ring`](crate::harness::Endpoint::sq_ring)), or any
    /// other driver memory, is refused with [`SimError::DriverMemory`].
    ///
    /// ```
    /// # use bareverbs::mr::Access;
    /// # use bareverbs::qp::QpType;
    /// # use bareverbs_sim::harness::{Endpoint, EpConfig};
    /// # use bareverbs_sim::SimError;
    /// # let fabric = bareverbs_sim::Fabric::new(1);
    /// # let dev = fabric.add_device();
    /// let ep: Endpoint = Endpoint::new(&dev, &EpConfig::new(QpType::Rc)).unwrap();
    /// let ring = ep.sq_ring();
    /// let r = dev.reg_mr(ep.pd(), ring, Access::REMOTE_WRITE);
    /// assert!(matches!(r, Err(SimError::DriverMemory { iova, .. }) if iova == ring.iova));
    /// assert!(dev.reg_mr(ep.pd(), ep.buf(), Access::REMOTE_WRITE).is_ok());
    /// ```
    pub fn reg_mr(&self, pd: Pd, buf: DmaBuf, access: Access) -> Result<MemoryRegion, SimError> {
        let len = buf.len as u64;
        let (key, cpu) = self.reg_mr_translated(pd, buf.iova, len, access, Keys::Payload)?;
        // SAFETY: `cpu` is the simulator's translation of `buf.iova`: byte i
        // of `[cpu, cpu + len)` is the live allocation byte the device reaches
        // at `iova + i` under `key`. The allocator keeps it valid until it is
        // freed, which the user must not do while the region is in use (the
        // contract of MemoryRegion::new, forwarded to the caller by
        // documentation).
        Ok(unsafe { MemoryRegion::new(cpu, buf.iova, len, key, key, access) })
    }

    /// Invalidates a key (deregistration).
    pub fn dereg_mr(&self, key: u32) {
        let mut w = self.w.borrow_mut();
        if let Some(Some(m)) = w.devs[self.id as usize]
            .mrs
            .get_mut(mkey_index(key) as usize)
        {
            if m.key == key {
                m.valid = false;
            }
        }
    }
}
