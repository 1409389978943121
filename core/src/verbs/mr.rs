//! Protection domains, memory regions over owned buffers, and the SGE
//! tokens the safe posting API accepts.

use super::{DmaBuffer, Owner};
use crate::device::{Mkey, Pd};
pub use crate::mr::Access;
use crate::sq::Sge;
use core::fmt;
use core::marker::PhantomData;

/// A protection domain (ALLOC_PD); DEALLOC_PD on drop. Regions and QPs
/// made in it borrow it, so it outlives them.
pub struct ProtectionDomain<'a> {
    pub(crate) pd: Pd,
    /// The identity of the context that made it.
    pub(crate) ctx: u64,
    /// Its own identity, unique in the process (PD numbers are per
    /// device): regions carry it into their SGE tokens, and a post refuses
    /// a token whose domain is not the queue's.
    pub(crate) domain: u64,
    owner: &'a dyn Owner,
}

impl fmt::Debug for ProtectionDomain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProtectionDomain({:#x})", self.pd.0)
    }
}

impl<'a> ProtectionDomain<'a> {
    pub(crate) fn new(pd: Pd, ctx: u64, domain: u64, owner: &'a dyn Owner) -> Self {
        ProtectionDomain {
            pd,
            ctx,
            domain,
            owner,
        }
    }
    /// The PD number.
    pub fn pdn(&self) -> u32 {
        self.pd.0
    }
}

impl Drop for ProtectionDomain<'_> {
    fn drop(&mut self) {
        self.owner.dealloc_pd(self.pd);
    }
}

/// A memory key (CREATE_MKEY) over a [`DmaBuffer`], borrowing it: the
/// buffer cannot be freed while the region exists, and dropping the region
/// destroys the key first. lkey = rkey.
pub struct MemoryRegion<'a> {
    mkey: Mkey,
    raw: crate::mr::MemoryRegion,
    access: Access,
    buf: &'a DmaBuffer<'a>,
    /// The identity of the PD it was registered in
    /// ([`ProtectionDomain::domain`]), copied into every [`LocalSge`].
    domain: u64,
    owner: &'a dyn Owner,
    _pd: PhantomData<&'a ProtectionDomain<'a>>,
}

impl fmt::Debug for MemoryRegion<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryRegion")
            .field("key", &format_args!("{:#x}", self.mkey.key))
            .field("iova", &format_args!("{:#x}", self.mkey.addr))
            .field("len", &self.mkey.len)
            .field("access", &self.access)
            .finish()
    }
}

impl<'a> MemoryRegion<'a> {
    /// # Safety
    /// `mkey` was created over exactly `buf`'s memory with `access`, in
    /// the PD whose identity is `domain`.
    pub(crate) unsafe fn new(
        mkey: Mkey,
        access: Access,
        buf: &'a DmaBuffer<'a>,
        domain: u64,
        owner: &'a dyn Owner,
    ) -> Self {
        let b = buf.raw();
        // SAFETY: `b` is live DMA memory owned by `buf`, which this region
        // borrows for its whole life; the device reaches it at
        // `iova + i` under `mkey.key` (caller's contract); the key is
        // destroyed in `drop` before the borrow ends, and a region whose
        // key could not be destroyed pins the buffer (never freed).
        let raw = unsafe {
            crate::mr::MemoryRegion::new(b.cpu, mkey.addr, mkey.len, mkey.key, mkey.key, access)
        };
        buf.add_key();
        MemoryRegion {
            mkey,
            raw,
            access,
            buf,
            domain,
            owner,
            _pd: PhantomData,
        }
    }

    /// Local key.
    pub fn lkey(&self) -> u32 {
        self.mkey.key
    }
    /// Remote key.
    pub fn rkey(&self) -> u32 {
        self.mkey.key
    }
    /// Device address of the first byte.
    pub fn addr(&self) -> u64 {
        self.mkey.addr
    }
    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.mkey.len
    }
    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.mkey.len == 0
    }
    /// Access rights.
    pub fn access(&self) -> Access {
        self.access
    }
    /// The buffer this region covers.
    pub fn buffer(&self) -> &'a DmaBuffer<'a> {
        self.buf
    }

    /// A local SGE for `[offset, offset + length)` of this region, or
    /// `None` when it does not fit. The token borrows the region, so a
    /// work request naming it cannot be posted after the region is gone.
    pub fn sge(&self, offset: u64, length: u32) -> Option<LocalSge<'_>> {
        let sge = self.raw.sge(offset, length)?;
        Some(LocalSge {
            sge,
            region: &self.raw,
            domain: self.domain,
            _mr: PhantomData,
        })
    }

    /// What a peer needs to address `[offset, offset + length)` of this
    /// region with RDMA WRITE/READ/atomics (its address and rkey), or
    /// `None` when it does not fit.
    pub fn remote(&self, offset: u64, length: u64) -> Option<RemoteBuf> {
        let end = offset.checked_add(length)?;
        (end <= self.mkey.len).then_some(RemoteBuf {
            addr: self.mkey.addr + offset,
            rkey: self.mkey.key,
            len: length,
        })
    }
}

impl Drop for MemoryRegion<'_> {
    fn drop(&mut self) {
        let ok = self.owner.destroy_mkey(self.mkey);
        self.buf.remove_key(ok);
    }
}

/// A scatter/gather element inside a live [`MemoryRegion`], made by
/// [`MemoryRegion::sge`]: in bounds by construction, and it borrows the
/// region. It carries its region's protection domain: a queue refuses a
/// token of another PD (of another [`Context`](super::Context), above all)
/// before anything of the WR is written.
#[derive(Clone, Copy, Debug)]
pub struct LocalSge<'m> {
    pub(crate) sge: Sge,
    pub(crate) region: &'m crate::mr::MemoryRegion,
    /// The region's PD identity, read with the token at post (one compare
    /// against the queue's, no pointer chase).
    pub(crate) domain: u64,
    _mr: PhantomData<&'m ()>,
}

impl LocalSge<'_> {
    /// Device address.
    pub fn addr(&self) -> u64 {
        self.sge.addr
    }
    /// Length in bytes.
    pub fn length(&self) -> u32 {
        self.sge.length
    }
    /// Local key.
    pub fn lkey(&self) -> u32 {
        self.sge.lkey
    }
}

/// A remote buffer: address, rkey and length, as a peer's region reports
/// it ([`MemoryRegion::remote`]) or as received out of band. Plain data:
/// the remote side's key checks protect its memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RemoteBuf {
    /// Remote device address.
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
    /// Length in bytes.
    pub len: u64,
}
