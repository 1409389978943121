//! [`DmaBuffer`]: DMA memory owned by one value, freed on drop.

use super::Owner;
use crate::platform::DmaBuf;
use core::cell::Cell;
use core::fmt;

/// DMA-visible memory allocated from a [`Context`](super::Context)'s
/// allocator and owned by this value: dropping it frees the memory — unless
/// a memory key still covers it (a [`MemoryRegion`](super::MemoryRegion)
/// that was leaked with `mem::forget`, or whose DESTROY_MKEY failed), in
/// which case the memory is leaked rather than handed back while the device
/// may still reach it.
///
/// The device may write this memory at any time a key allows it, so there
/// is no `&[u8]` view of it: bytes go in and out by copy ([`write`],
/// [`read`]), with volatile accesses. It is neither `Send` nor `Sync`.
///
/// [`write`]: DmaBuffer::write
/// [`read`]: DmaBuffer::read
pub struct DmaBuffer<'a> {
    /// The whole allocation (whole pages).
    raw: DmaBuf,
    /// Bytes the user asked for (`<= raw.len`).
    len: usize,
    /// The identity of the context whose allocator it came from.
    pub(crate) ctx: u64,
    owner: &'a dyn Owner,
    /// Live memory keys over this buffer.
    regs: Cell<u32>,
    /// A key over it could not be destroyed: never free the memory.
    pinned: Cell<bool>,
}

impl fmt::Debug for DmaBuffer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DmaBuffer")
            .field("iova", &self.raw.iova)
            .field("len", &self.len)
            .field("keys", &self.regs.get())
            .finish()
    }
}

impl<'a> DmaBuffer<'a> {
    /// Takes ownership of `raw`.
    ///
    /// # Safety
    /// `raw` was just allocated from `owner`'s allocator, is not yet known
    /// to the device, and nothing else refers to it; `ctx` is `owner`'s
    /// identity. `len <= raw.len` is the usable length.
    pub(crate) unsafe fn from_raw(raw: DmaBuf, len: usize, ctx: u64, owner: &'a dyn Owner) -> Self {
        DmaBuffer {
            raw,
            len: len.min(raw.len),
            ctx,
            owner,
            regs: Cell::new(0),
            pinned: Cell::new(false),
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Device (IO virtual) address of the first byte.
    pub fn iova(&self) -> u64 {
        self.raw.iova
    }
    /// Memory keys currently registered over this buffer.
    pub fn keys(&self) -> u32 {
        self.regs.get()
    }

    fn check(&self, offset: usize, len: usize) -> Result<(), super::Error> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(super::Error::OutOfBounds {
                offset: offset as u64,
                len: len as u64,
                size: self.len as u64,
            }),
        }
    }

    /// Copies `bytes` into the buffer at `offset` (volatile stores).
    pub fn write(&self, offset: usize, bytes: &[u8]) -> Result<(), super::Error> {
        self.check(offset, bytes.len())?;
        let base = self.raw.cpu.as_ptr();
        for (i, b) in bytes.iter().enumerate() {
            // SAFETY: offset + i < len (checked), inside the allocation this
            // value owns; a raw volatile byte store, no reference is formed.
            unsafe { core::ptr::write_volatile(base.add(offset + i), *b) };
        }
        Ok(())
    }

    /// Copies `out.len()` bytes from `offset` into `out` (volatile loads).
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), super::Error> {
        self.check(offset, out.len())?;
        let base = self.raw.cpu.as_ptr();
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: offset + i < len (checked), inside the allocation this
            // value owns; a raw volatile byte load, no reference is formed.
            *b = unsafe { core::ptr::read_volatile(base.add(offset + i)) };
        }
        Ok(())
    }

    /// Sets `len` bytes from `offset` to `byte`.
    pub fn fill(&self, offset: usize, len: usize, byte: u8) -> Result<(), super::Error> {
        self.check(offset, len)?;
        let base = self.raw.cpu.as_ptr();
        for i in 0..len {
            // SAFETY: as in `write`.
            unsafe { core::ptr::write_volatile(base.add(offset + i), byte) };
        }
        Ok(())
    }

    /// The usable range, for the key registration.
    pub(crate) fn raw(&self) -> DmaBuf {
        DmaBuf {
            len: self.len,
            ..self.raw
        }
    }
    /// A key now covers the buffer.
    pub(crate) fn add_key(&self) {
        self.regs.set(self.regs.get().saturating_add(1));
    }
    /// A key over the buffer was destroyed (`ok`) or may still be live.
    pub(crate) fn remove_key(&self, ok: bool) {
        if ok {
            self.regs.set(self.regs.get().saturating_sub(1));
        } else {
            self.pinned.set(true);
        }
    }
}

impl Drop for DmaBuffer<'_> {
    fn drop(&mut self) {
        if self.regs.get() == 0 && !self.pinned.get() {
            // SAFETY: allocated from this owner (from_raw contract); no key
            // covers it any more (every key over it was destroyed), so the
            // device cannot reach it.
            unsafe { self.owner.free_dma(self.raw) };
        }
    }
}
