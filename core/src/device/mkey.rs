//! Memory keys: the [`Mkey`] handle, its data-path view, CREATE_MKEY and
//! DESTROY_MKEY ([ref §7.12](crate::reference)).

use super::objects::Obj;
use super::{Device, DeviceError, Pd, UarMap};
use crate::cmd::queue::MAX_MSG;
use crate::cmd::{op, ops, Bar0, Clock};
use crate::mr::{Access, MemoryRegion};
use crate::platform::{DmaAllocator, DmaBuf};
use crate::wqe::MkeyAccess;

/// A memory key over a DMA buffer (CREATE_MKEY). [ref §7.12](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mkey {
    /// mkey index (CREATE_MKEY output).
    pub(crate) index: u32,
    /// lkey = rkey = `(index << 8) | variant`.
    pub(crate) key: u32,
    /// First address SGEs use (the buffer's IOVA).
    pub(crate) addr: u64,
    /// Length in bytes.
    pub(crate) len: u64,
    /// Access rights granted (local read is always granted besides).
    pub(crate) access: Access,
}

/// Read-only views of the handle: its fields are the driver's, so safe
/// code cannot change what the driver believes about the object.
impl Mkey {
    /// mkey index (CREATE_MKEY output).
    pub const fn index(&self) -> u32 {
        self.index
    }
    /// lkey = rkey = `(index << 8) | variant`.
    pub const fn key(&self) -> u32 {
        self.key
    }
    /// First address SGEs use (the buffer's IOVA).
    pub const fn addr(&self) -> u64 {
        self.addr
    }
    /// Length in bytes.
    pub const fn len(&self) -> u64 {
        self.len
    }
    /// Access rights granted (local read is always granted besides).
    pub const fn access(&self) -> Access {
        self.access
    }
    /// Whether the key covers no bytes.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Mkey {
    /// The data-path view of this key over `buf`, for
    /// [`SendQueue::post_send`](crate::sq::SendQueue::post_send)'s SGE
    /// checks: lkey = rkey = [`Mkey::key`], addresses from [`Mkey::addr`].
    /// `None` when `buf` is not the range the key covers.
    ///
    /// # Safety
    /// `buf` must be the buffer this key was created over, and it must stay
    /// allocated while the region (or a WR naming it) is in use.
    pub unsafe fn memory_region(&self, buf: &DmaBuf) -> Option<MemoryRegion> {
        if buf.iova != self.addr || buf.len as u64 != self.len {
            return None;
        }
        // SAFETY: `buf` is live DMA memory (DmaAllocator contract) that the
        // device reaches at `addr + i` under `key` (CREATE_MKEY over exactly
        // this range); the caller keeps it allocated while in use.
        Some(unsafe {
            MemoryRegion::new(
                buf.cpu,
                self.addr,
                self.len,
                self.key,
                self.key,
                self.access,
            )
        })
    }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// CREATE_MKEY over `buf`, addressed by its IOVA ([ref §7.12](crate::reference)).
    ///
    /// `buf` need not be aligned: the MTT lists every page the range
    /// touches, counted from the IOVA's offset in its first page
    /// (`((iova & (page − 1)) + len)` rounded up to pages), starting at the
    /// page holding `iova`. Pages are 4 KiB unless the list would not fit
    /// one command (more than about 600 entries, a 2.4 MiB buffer): then
    /// the smallest power-of-two page size up to 2 GiB whose list fits
    /// (`mkc.log_page_size`). The buffer is contiguous in device address
    /// space, so every page size describes it; the pages' parts outside
    /// the buffer are not reachable through the key, whose start and
    /// length bound every access.
    ///
    /// The key's low byte (`mkey_7_0`, the variant) rotates on every
    /// creation through 1..=255: firmware may hand a destroyed key's index
    /// to a new key, and the new key must not answer to the old lkey/rkey
    /// (a stale key then fails on access instead of reaching the new
    /// buffer). Firmware chooses the index only after the variant is sent,
    /// so the rotation is per device rather than per index: a stale key
    /// aliases a new one only if its index comes back after a multiple of
    /// 255 creations. Variant 0 is skipped, so no key is ever 0x100
    /// (MLX5_INVALID_LKEY, [ref §2.1](crate::reference)) or has a zero low byte.
    ///
    /// The safe way to register memory is
    /// [`Context::reg_mr`](crate::verbs::Context::reg_mr), over a buffer it
    /// owns.
    ///
    /// # Safety
    /// The key lets the device (and, with remote rights, any peer that
    /// learns the key) read and write `[buf.iova, buf.iova + buf.len)`.
    /// `buf` must describe DMA memory the caller owns and may hand to the
    /// device: not a ring, doorbell record, command or event queue page of
    /// any object, and not memory anything else uses. It must stay
    /// allocated, and never be read or written through Rust references
    /// while the device may write it, until the key is destroyed
    /// ([`Device::destroy_mkey`] or teardown).
    pub unsafe fn create_mkey(
        &mut self,
        pd: Pd,
        buf: &DmaBuf,
        access: Access,
    ) -> Result<Mkey, DeviceError> {
        // The key grants exactly the rights CREATE_MKEY encodes.
        let access = MkeyAccess::from_ibv(access).to_ibv();
        if self.objs.is_full() {
            return Err(DeviceError::TableFull { what: "objects" });
        }
        let range = DeviceError::MkeyRange {
            iova: buf.iova,
            len: buf.len,
        };
        // The last byte must be addressable: iova + len − 1 ≤ u64::MAX.
        if buf.len > 0 && buf.iova.checked_add(buf.len as u64 - 1).is_none() {
            return Err(range);
        }
        // The smallest page size whose MTT list fits one command: a buffer
        // is contiguous in device address space, so any page size
        // describes it, and the key's start and length (not the pages)
        // bound what the device may touch.
        // The list is sent rounded up to an even count (`ops::mtt_entries`).
        let max = (((MAX_MSG - ops::PAS_OFFSET) / 16) * 2) as u64;
        let mut log_page = ops::MKEY_LOG_PAGE_MIN;
        let (pages_iova, npages) = loop {
            let Some((first, n)) = ops::mkey_pages(buf.iova, buf.len as u64, log_page) else {
                return Err(range);
            };
            if n <= max {
                break (first, n as usize);
            }
            if log_page == ops::MKEY_LOG_PAGE_MAX {
                return Err(DeviceError::Limit {
                    what: "memory key pages",
                    requested: n,
                    max,
                });
            }
            log_page += 1;
        };
        let variant = match self.mkey_variant {
            255 => 1,
            v => v + 1,
        };
        let p = ops::MkeyParams {
            pd: pd.0,
            access,
            start_addr: buf.iova,
            len: buf.len as u64,
            pages_iova,
            npages,
            log_page_size: log_page,
            variant,
        };
        let r = ops::create_mkey(&mut self.inb, &p);
        self.exec(r)?;
        // Consumed even if the answer is refused below: firmware may have
        // created a key with this variant.
        self.mkey_variant = variant;
        let index = ops::parse_obj_id(&self.outb);
        let key = crate::mr::mkey_from_parts(index, variant);
        self.track(Obj::Mkey(index, key))?;
        Ok(Mkey {
            index,
            key,
            addr: buf.iova,
            len: buf.len as u64,
            access,
        })
    }
    /// DESTROY_MKEY.
    ///
    /// `Mkey` is `Copy`: a stale copy (its index since reused by a new key,
    /// whose variant differs) is refused with [`DeviceError::NotOurs`], so
    /// the new key is never destroyed through an old handle.
    pub fn destroy_mkey(&mut self, mkey: Mkey) -> Result<(), DeviceError> {
        if !self
            .objs
            .iter()
            .any(|o| matches!(o, Obj::Mkey(x, k) if *x == mkey.index && *k == mkey.key))
        {
            return Err(DeviceError::NotOurs {
                what: "mkey",
                number: mkey.key,
            });
        }
        let r = ops::with_obj(&mut self.inb, op::DESTROY_MKEY, mkey.index);
        self.exec(r)?;
        self.untrack(|o| matches!(o, Obj::Mkey(x, _) if *x == mkey.index));
        Ok(())
    }
}
