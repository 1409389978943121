//! Registered memory regions as the safe posting API sees them: a key pair
//! and bounds, created under a contract, then used to check every SGE.
//! The rules are in `docs/architecture.md` in the repository, §4 and §5
//! ("Memory safety at the boundary").

use crate::sge::Sge;
use core::ptr::NonNull;

bitflags::bitflags! {
    /// Access rights of a memory region, window or QP (`ibv_access_flags`
    /// values): the one owner of these bits in the workspace.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct Access: u32 {
        /// The device may write (receives, READ responses, atomic results).
        const LOCAL_WRITE = 1;
        /// Remote peers may RDMA WRITE.
        const REMOTE_WRITE = 2;
        /// Remote peers may RDMA READ.
        const REMOTE_READ = 4;
        /// Remote peers may perform atomics.
        const REMOTE_ATOMIC = 8;
        /// Memory-window binds: addresses are offsets from the window start.
        const ZERO_BASED = 0x20;
    }
}

impl Access {
    /// Whether every right in `need` is granted.
    pub const fn allows(self, need: Access) -> bool {
        self.contains(need)
    }
}

/// A registered memory region: `len` bytes at CPU address `cpu`, known to
/// the device as `[iova, iova + len)` under `lkey`/`rkey`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryRegion {
    cpu: NonNull<u8>,
    iova: u64,
    len: u64,
    lkey: u32,
    rkey: u32,
    access: Access,
}

// SAFETY: a MemoryRegion is a description (keys and bounds); all access to
// the memory goes through the device or unsafe raw-pointer code.
unsafe impl Send for MemoryRegion {}
// SAFETY: as above; it has no interior mutability.
unsafe impl Sync for MemoryRegion {}

impl MemoryRegion {
    /// Describes a region.
    ///
    /// # Safety
    /// `cpu` must be valid for reads and writes of `len` bytes, the device
    /// must reach byte `i` at `iova + i` under `lkey`/`rkey`, and the memory
    /// must stay valid, registered, and free of live Rust references where
    /// the device writes, for as long as any queue posts SGEs in it or any
    /// posted WR naming it is outstanding.
    pub const unsafe fn new(
        cpu: NonNull<u8>,
        iova: u64,
        len: u64,
        lkey: u32,
        rkey: u32,
        access: Access,
    ) -> Self {
        MemoryRegion {
            cpu,
            iova,
            len,
            lkey,
            rkey,
            access,
        }
    }
    /// Local key.
    pub const fn lkey(&self) -> u32 {
        self.lkey
    }
    /// Remote key.
    pub const fn rkey(&self) -> u32 {
        self.rkey
    }
    /// Device address of the first byte.
    pub const fn iova(&self) -> u64 {
        self.iova
    }
    /// Length in bytes.
    pub const fn len(&self) -> u64 {
        self.len
    }
    /// Whether the region is empty.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Access rights.
    pub const fn access(&self) -> Access {
        self.access
    }
    /// An SGE for `[offset, offset + length)` of this region, or `None`
    /// when it does not fit.
    pub fn sge(&self, offset: u64, length: u32) -> Option<Sge> {
        let end = offset.checked_add(length as u64)?;
        (end <= self.len).then_some(Sge {
            addr: self.iova + offset,
            length,
            lkey: self.lkey,
        })
    }
    /// Whether `sge` lies inside this region under its lkey.
    pub fn contains(&self, sge: &Sge) -> bool {
        sge.lkey == self.lkey
            && sge.addr >= self.iova
            && sge
                .addr
                .checked_add(sge.length as u64)
                .is_some_and(|end| end <= self.iova + self.len)
    }
    /// CPU pointer of `sge`'s first byte when it lies inside this region.
    pub fn cpu_of(&self, sge: &Sge) -> Option<NonNull<u8>> {
        if !self.contains(sge) {
            return None;
        }
        // SAFETY: `contains` proved addr - iova < len (or == len for a
        // zero-length SGE), so the pointer stays within (or one past) the
        // region.
        Some(unsafe {
            NonNull::new_unchecked(self.cpu.as_ptr().add((sge.addr - self.iova) as usize))
        })
    }
}

/// Finds the region that holds `sge`.
pub fn find<'a>(mrs: &'a [MemoryRegion], sge: &Sge) -> Option<&'a MemoryRegion> {
    mrs.iter().find(|m| m.contains(sge))
}

/// The memory key (lkey = rkey) of mkey object `index` with variant byte
/// `variant`: `index << 8 | variant`, the one owner of that layout.
#[inline(always)]
pub const fn mkey_from_parts(index: u32, variant: u8) -> u32 {
    (index << 8) | variant as u32
}

/// The mkey object index of memory key `key`: `key >> 8` (the inverse of
/// [`mkey_from_parts`] without the variant byte).
#[inline(always)]
pub const fn mkey_index(key: u32) -> u32 {
    key >> 8
}
