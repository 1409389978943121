//! The IOMMU DMA allocator: [`IommuMap`] (the container's map/unmap),
//! [`VfioDma`] (one IOVA allocator and live-mapping table per container,
//! the core's [`DmaAllocator`]) and [`map_dma_pages`].

use crate::iova::IovaAllocator;
use bareverbs::platform::{DmaAllocator, DmaBuf};
use std::collections::HashMap;
use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, TryLockError};
use vfio_ioctls::{VfioContainer, VfioError};

/// 2 MiB huge page.
pub const HUGE_PAGE: usize = 2 << 20;
/// Allocations larger than this try huge pages first.
pub const HUGE_THRESHOLD: usize = 64 << 10;
/// IOVA window: 4 GiB .. 4 GiB + 1 TiB.
pub const IOVA_BASE: u64 = 1 << 32;
/// IOVA window size.
pub const IOVA_SPAN: u64 = 1 << 40;

#[derive(Debug)]
struct Mapping {
    len: usize,
    iova: u64,
}

struct DmaState {
    iova: IovaAllocator,
    live: HashMap<usize, Mapping>,
}

/// The IOMMU side of a VFIO container as DMA mapping uses it: map and unmap
/// IOVA ranges. Implemented by [`VfioContainer`]; a trait so that the
/// one-allocator-per-container and leak-on-drop rules of [`VfioDma`] are
/// unit-tested without a device.
pub trait IommuMap: Send + Sync {
    /// Maps `[iova, iova + len)` to the host memory at `host`.
    ///
    /// # Safety
    /// `host .. host + len` must stay mapped in this process, and must not be
    /// reused for anything else, until [`IommuMap::unmap`] of the same range
    /// succeeds: the device may read and write it at any time.
    unsafe fn map(&self, iova: u64, len: usize, host: *mut u8) -> Result<(), VfioError>;
    /// Unmaps `[iova, iova + len)`; after `Ok` the device can no longer reach it.
    fn unmap(&self, iova: u64, len: usize) -> Result<(), VfioError>;
}

impl IommuMap for VfioContainer {
    unsafe fn map(&self, iova: u64, len: usize, host: *mut u8) -> Result<(), VfioError> {
        // SAFETY: forwarded contract (see `IommuMap::map`).
        unsafe { self.vfio_dma_map(iova, len, host) }
    }
    fn unmap(&self, iova: u64, len: usize) -> Result<(), VfioError> {
        self.vfio_dma_unmap(iova, len)
    }
}

/// The DMA state of one container: its IOMMU, its single IOVA allocator and
/// the table of live mappings.
struct DmaDomain<M: IommuMap> {
    iommu: Arc<M>,
    state: Mutex<DmaState>,
}

impl<M: IommuMap> Drop for DmaDomain<M> {
    /// The last [`VfioDma`] handle of a container is gone. Buffers still in
    /// the live table were never given back with `free`, so a queue or
    /// object may still own them and the device may still DMA into them:
    /// they are leaked (neither IOMMU-unmapped nor `munmap`ped), never
    /// returned to the allocator or the system.
    fn drop(&mut self) {
        if let Ok(st) = self.state.get_mut() {
            st.live.clear();
        }
    }
}

/// IOMMU-mapped DMA memory of one VFIO container: anonymous mappings (2 MiB
/// huge pages for allocations above [`HUGE_THRESHOLD`], falling back to 4 KiB
/// pages), marked `MADV_DONTFORK` ([`map_dma_pages`]), IOVAs from the
/// container's single [`IovaAllocator`], mapped with `vfio_dma_map`.
///
/// A `VfioDma` is a cheap handle: [`VfioNic::dma`](super::VfioNic::dma) and `clone` return handles
/// to the same container state, so every allocation mapped into a container
/// comes from one IOVA allocator and no two live buffers share an IOVA.
///
/// Lifetime rule: a buffer stays allocated and mapped until it is passed to
/// [`DmaAllocator::free`] (which IOMMU-unmaps it before `munmap`). Dropping
/// handles, even the last one, never unmaps anything: buffers still live then
/// are leaked, because objects the device is still using may own them.
pub struct VfioDma<M: IommuMap = VfioContainer> {
    domain: Arc<DmaDomain<M>>,
}

/// The container's DMA state: live buffers and the bytes they map, the
/// IOVA space left. It reads only the bookkeeping (never buffer memory),
/// and prints `<locked>` rather than wait while another thread holds it.
impl<M: IommuMap> fmt::Debug for VfioDma<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("VfioDma");
        d.field("iommu", &std::any::type_name::<M>());
        let st = match self.domain.state.try_lock() {
            Ok(st) => st,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return d.field("state", &format_args!("<locked>")).finish();
            }
        };
        let mapped: usize = st.live.values().map(|m| m.len).sum();
        d.field("live_buffers", &st.live.len())
            .field("mapped_bytes", &mapped)
            .field("iova_free_bytes", &st.iova.free_bytes())
            .field("iova_free_ranges", &st.iova.free_ranges())
            .finish()
    }
}

impl<M: IommuMap> Clone for VfioDma<M> {
    fn clone(&self) -> Self {
        VfioDma {
            domain: self.domain.clone(),
        }
    }
}

impl<M: IommuMap> VfioDma<M> {
    /// The DMA state of a container whose IOMMU is `iommu`, with the default
    /// IOVA window. Create it once per container and clone the handle.
    #[must_use]
    pub fn for_container(iommu: Arc<M>) -> Self {
        VfioDma {
            domain: Arc::new(DmaDomain {
                iommu,
                state: Mutex::new(DmaState {
                    iova: IovaAllocator::new(IOVA_BASE, IOVA_BASE + IOVA_SPAN),
                    live: HashMap::new(),
                }),
            }),
        }
    }

    /// Buffers allocated and not yet freed, over every handle of the container.
    pub fn live_buffers(&self) -> usize {
        self.domain.state.lock().map_or(0, |s| s.live.len())
    }

    /// Whether `other` is a handle to the same container state.
    pub fn same_container(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.domain, &other.domain)
    }
}

/// Maps `len` bytes (a multiple of the page size) of fresh anonymous,
/// zero-filled, pre-faulted memory for DMA (2 MiB huge pages when `huge`) and
/// marks it `MADV_DONTFORK`, as rdma-core's `ibv_dontfork_range` does for
/// every registered or queue buffer: a `fork()` must not turn the pinned,
/// IOMMU-mapped pages copy-on-write, or the parent would write to copies the
/// device never sees. Returns `None` (nothing left mapped) if either step
/// fails. The caller owns the mapping and must `munmap` it.
pub fn map_dma_pages(len: usize, huge: bool) -> Option<NonNull<u8>> {
    let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE;
    if huge {
        flags |= libc::MAP_HUGETLB | (21 << libc::MAP_HUGE_SHIFT);
    }
    // SAFETY: anonymous mapping, no file, kernel chooses the address.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: `p .. p + len` is the mapping just created, owned here.
    if unsafe { libc::madvise(p, len, libc::MADV_DONTFORK) } != 0 {
        // SAFETY: as above; nothing else knows the mapping.
        unsafe { libc::munmap(p, len) };
        return None;
    }
    NonNull::new(p.cast())
}

// SAFETY: memory comes from fresh anonymous mmaps (zeroed), page aligned
// (huge-page aligned for align > 4 KiB), exclusively owned until `free`, and
// IOMMU-mapped at an IOVA from the container's single allocator, so the
// device reaches byte i at iova + i and no other live buffer of the
// container shares that IOVA.
unsafe impl<M: IommuMap> DmaAllocator for VfioDma<M> {
    fn alloc(&self, len: usize, align: usize) -> Option<DmaBuf> {
        if len == 0 || align > HUGE_PAGE || !align.is_power_of_two() {
            return None;
        }
        let want_huge = len > HUGE_THRESHOLD || align > 4096;
        let (ptr, mapped) = match want_huge
            .then(|| {
                let l = len.checked_next_multiple_of(HUGE_PAGE)?;
                map_dma_pages(l, true).map(|p| (p, l))
            })
            .flatten()
        {
            Some(x) => x,
            None if align <= 4096 => {
                let l = len.checked_next_multiple_of(4096)?;
                (map_dma_pages(l, false)?, l)
            }
            None => return None,
        };
        let d = &*self.domain;
        let Ok(mut st) = d.state.lock() else {
            // SAFETY: fresh mapping of `mapped` bytes, never shared.
            unsafe { libc::munmap(ptr.as_ptr().cast(), mapped) };
            return None;
        };
        let Ok(iova) = st.iova.alloc(mapped as u64, align.max(4096) as u64) else {
            // SAFETY: fresh mapping of `mapped` bytes, never shared.
            unsafe { libc::munmap(ptr.as_ptr().cast(), mapped) };
            return None;
        };
        // SAFETY: the range stays mapped until `free` unmaps it from the
        // IOMMU before munmap, or forever if it is leaked; the core touches
        // it only through raw pointers (no references).
        if unsafe { d.iommu.map(iova, mapped, ptr.as_ptr()) }.is_err() {
            let _ = st.iova.free(iova, mapped as u64);
            // SAFETY: not mapped into the IOMMU; never shared.
            unsafe { libc::munmap(ptr.as_ptr().cast(), mapped) };
            return None;
        }
        st.live
            .insert(ptr.as_ptr() as usize, Mapping { len: mapped, iova });
        Some(DmaBuf {
            cpu: ptr,
            iova,
            len,
        })
    }

    unsafe fn free(&self, buf: DmaBuf) {
        let d = &*self.domain;
        let Ok(mut st) = d.state.lock() else {
            return;
        };
        let Some(m) = st.live.remove(&(buf.cpu.as_ptr() as usize)) else {
            return;
        };
        if d.iommu.unmap(m.iova, m.len).is_ok() {
            let _ = st.iova.free(m.iova, m.len as u64);
            // SAFETY: unmapped from the IOMMU; caller guarantees no use.
            unsafe { libc::munmap(buf.cpu.as_ptr().cast(), m.len) };
        }
        // If the IOMMU unmap failed the device may still reach the pages:
        // leak them (and their IOVA) rather than reuse them.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An IOMMU that records what it was asked to do.
    #[derive(Default)]
    struct FakeIommu {
        maps: Mutex<Vec<(u64, usize)>>,
        unmaps: AtomicUsize,
    }

    impl IommuMap for FakeIommu {
        unsafe fn map(&self, iova: u64, len: usize, _host: *mut u8) -> Result<(), VfioError> {
            self.maps.lock().unwrap().push((iova, len));
            Ok(())
        }
        fn unmap(&self, _iova: u64, _len: usize) -> Result<(), VfioError> {
            self.unmaps.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    /// The `VmFlags` line of the `/proc/self/smaps` entry starting at `addr`.
    fn vm_flags(addr: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            // Entry headers start with `start-end`; field lines with `Name:`.
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some(start) = first
                .split_once('-')
                .and_then(|(s, _)| usize::from_str_radix(s, 16).ok())
            {
                inside = start == addr;
            } else if inside && line.starts_with("VmFlags:") {
                return line.to_string();
            }
        }
        panic!("no smaps entry at {addr:#x}");
    }

    #[test]
    fn dma_pages_are_dontfork() {
        let len = 3 * 4096;
        let p = map_dma_pages(len, false).expect("anonymous mapping");
        let flags = vm_flags(p.as_ptr() as usize);
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(p.as_ptr().cast(), len) };
        assert!(
            flags.split_whitespace().any(|f| f == "dc"),
            "MADV_DONTFORK missing: {flags}"
        );
    }

    #[test]
    fn allocator_buffers_are_dontfork() {
        let dma = VfioDma::for_container(Arc::new(FakeIommu::default()));
        let b = dma.alloc(4096, 4096).unwrap();
        let flags = vm_flags(b.cpu.as_ptr() as usize);
        // SAFETY: allocated above, never handed to anything.
        unsafe { dma.free(b) };
        assert!(flags.split_whitespace().any(|f| f == "dc"), "{flags}");
    }

    #[test]
    fn handles_of_one_container_share_one_iova_allocator() {
        let iommu = Arc::new(FakeIommu::default());
        // As `VfioNic::dma()` hands them out: clones of the container's state.
        let nic_dma = VfioDma::for_container(iommu.clone());
        let a = nic_dma.clone();
        let b = nic_dma.clone();
        assert!(a.same_container(&b));
        let mut bufs = Vec::new();
        for i in 0..24 {
            let h = if i % 2 == 0 { &a } else { &b };
            let len = 4096 * (1 + i % 5);
            bufs.push((i % 2, h.alloc(len, 4096).unwrap()));
        }
        let maps = iommu.maps.lock().unwrap().clone();
        assert_eq!(maps.len(), 24);
        for (i, &(s, l)) in maps.iter().enumerate() {
            for &(t, m) in &maps[i + 1..] {
                assert!(
                    s + l as u64 <= t || t + m as u64 <= s,
                    "IOVA ranges {s:#x}+{l:#x} and {t:#x}+{m:#x} overlap"
                );
            }
        }
        assert_eq!(a.live_buffers(), 24);
        // Freed through either handle, an IOVA is reused only after its free.
        let (_, first) = bufs.remove(0);
        // SAFETY: allocated above, never handed to anything.
        unsafe { b.free(first) };
        assert_eq!(a.live_buffers(), 23);
        assert_eq!(iommu.unmaps.load(Ordering::SeqCst), 1);
        for (k, buf) in bufs {
            // SAFETY: as above.
            unsafe {
                if k == 0 {
                    a.free(buf)
                } else {
                    b.free(buf)
                }
            };
        }
        assert_eq!(nic_dma.live_buffers(), 0);
    }

    #[test]
    fn dropping_the_last_handle_leaks_live_buffers() {
        let iommu = Arc::new(FakeIommu::default());
        let dma = VfioDma::for_container(iommu.clone());
        let buf = dma.alloc(8192, 4096).unwrap();
        let p = buf.cpu.as_ptr();
        // SAFETY: live, exclusively owned DMA memory; raw-pointer write.
        unsafe { p.add(100).write_volatile(0x5a) };
        drop(dma);
        assert_eq!(
            iommu.unmaps.load(Ordering::SeqCst),
            0,
            "a live buffer was IOMMU-unmapped when the allocator went away"
        );
        // The pages are still mapped (leaked, not munmapped): still readable.
        // SAFETY: the leaked mapping is never unmapped.
        assert_eq!(unsafe { p.add(100).read_volatile() }, 0x5a);
        assert!(vm_flags(p as usize).contains("dc"));
    }

    /// Debug reports the bookkeeping (live buffers, mapped bytes, IOVA
    /// left) and never blocks on the state lock.
    #[test]
    fn debug_shows_bookkeeping_without_blocking() {
        let dma = VfioDma::for_container(Arc::new(FakeIommu::default()));
        let a = dma.alloc(4096, 4096).unwrap();
        let b = dma.alloc(3 * 4096, 4096).unwrap();
        let d = format!("{dma:?}");
        assert!(d.starts_with("VfioDma {"), "{d}");
        assert!(d.contains("FakeIommu"), "{d}");
        assert!(d.contains("live_buffers: 2"), "{d}");
        assert!(d.contains("mapped_bytes: 16384"), "{d}");
        let free = IOVA_SPAN - 4 * 4096;
        assert!(d.contains(&format!("iova_free_bytes: {free}")), "{d}");
        {
            let _held = dma.domain.state.lock().unwrap();
            let d = format!("{:?}", dma.clone());
            assert!(d.contains("<locked>") && !d.contains("live_buffers"), "{d}");
        }
        // SAFETY: allocated above, never handed to anything.
        unsafe {
            dma.free(a);
            dma.free(b);
        }
        assert!(format!("{dma:?}").contains("live_buffers: 0"));
    }
}
