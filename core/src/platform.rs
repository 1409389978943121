//! The host platform trait: DMA-visible memory, UAR MMIO and the barriers a
//! doorbell needs ([ref §4.3, §4.4](crate::reference)).
//!
//! Two implementations ship with the workspace: `bareverbs-vfio` (a real
//! ConnectX mapped through Linux VFIO) and `bareverbs-sim` (a software
//! ConnectX). [`MemUar`] is an ordinary-memory UAR page for tests and
//! benchmarks: the same stores and barriers as on hardware, into RAM.
//!
//! Rule: no Rust reference ever points at device-visible memory. DMA memory
//! is handed around as [`DmaBuf`] (raw pointer + device address) and touched
//! only through raw-pointer reads and writes.

use core::ptr::NonNull;

/// A block of DMA-visible memory: CPU pointer, device (IO virtual) address
/// and length. `Copy`: it is a description, not an owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaBuf {
    /// CPU address of the first byte.
    pub cpu: NonNull<u8>,
    /// Address the device uses for the first byte.
    pub iova: u64,
    /// Length in bytes.
    pub len: usize,
}

// SAFETY: a DmaBuf is only a description of memory (pointer, address,
// length); it grants no access by itself, every access through it is an
// `unsafe` raw-pointer operation whose caller upholds the aliasing rules.
unsafe impl Send for DmaBuf {}

impl DmaBuf {
    /// A sub-range `[offset, offset + len)` of this buffer, or `None` when it
    /// does not fit.
    pub fn slice(&self, offset: usize, len: usize) -> Option<DmaBuf> {
        let end = offset.checked_add(len)?;
        if end > self.len {
            return None;
        }
        Some(DmaBuf {
            // `wrapping_add`: a description may name memory that is not an
            // allocation of this program (its fields are public), so no
            // in-bounds pointer arithmetic is claimed; nothing is accessed.
            cpu: NonNull::new(self.cpu.as_ptr().wrapping_add(offset))?,
            iova: self.iova.checked_add(offset as u64)?,
            len,
        })
    }
}

/// Allocator of DMA-visible memory.
///
/// # Implementation safety
/// `alloc` must return memory that is zeroed, aligned to at least `align`,
/// valid for reads and writes of `len` bytes until passed to `free`, not
/// aliased by any other allocation, and mapped so that the device reaches
/// byte `i` at `iova + i`.
pub unsafe trait DmaAllocator {
    /// Allocates `len` zeroed bytes aligned to `align` (a power of two).
    fn alloc(&self, len: usize, align: usize) -> Option<DmaBuf>;
    /// Releases memory returned by `alloc`.
    ///
    /// # Safety
    /// `buf` must come from `alloc` on this allocator, must not be freed
    /// twice, and the device must no longer access it.
    unsafe fn free(&self, buf: DmaBuf);
}

/// Bytes of one UAR page (the doorbell and BlueFlame registers of a
/// UAR index). [ref §4.2](crate::reference).
pub const UAR_PAGE_BYTES: usize = 4096;
/// Offset of the first doorbell/BlueFlame register in a 4 KiB UAR page
/// (MLX5_BF_OFFSET). [ref §4.2](crate::reference).
pub const BF_OFFSET: usize = 0x800;
/// Offset of the CQ arm doorbell in a UAR page. [ref §4.2](crate::reference).
pub const CQ_DOORBELL: usize = 0x20;
/// Offset of the EQ arm + update-CI doorbell. [ref §4.6](crate::reference).
pub const EQ_DOORBELL_ARM: usize = 0x40;
/// Offset of the EQ update-CI-only doorbell. [ref §4.6](crate::reference).
pub const EQ_DOORBELL_NO_ARM: usize = 0x48;

/// The MMIO window of one UAR page: where doorbells and BlueFlame copies go.
///
/// Offsets are bytes from the start of the UAR page. Values are stored as
/// given (already in the device's byte order).
///
/// # Implementation safety
/// Each `write64` must reach the device as one 8-byte store (single-copy
/// atomic on hardware); `write_bf` must store its 64 bytes in order as one
/// write-combined line where the platform supports it. Implementations must
/// not reorder these stores relative to each other.
pub unsafe trait Uar {
    /// One 8-byte store at `offset` (8-aligned).
    fn write64(&mut self, offset: usize, bytes: [u8; 8]);
    /// One 4-byte store at `offset` (4-aligned).
    fn write32(&mut self, offset: usize, bytes: [u8; 4]);
    /// One 64-byte BlueFlame chunk at `offset` (64-aligned).
    fn write_bf(&mut self, offset: usize, chunk: &[u8; 64]);
    /// Flushes write-combining buffers (x86 `sfence`, arm64 `dsb st`).
    #[inline(always)]
    fn flush(&mut self) {
        mmio_flush_writes();
    }
}

/// Orders host-memory writes (WQEs) before the doorbell record and before
/// the device may read them (`udma_to_device_barrier`). [ref §4.4](crate::reference).
#[inline(always)]
pub fn to_device_barrier() {
    #[cfg(target_arch = "x86_64")]
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    #[cfg(not(target_arch = "x86_64"))]
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
}

/// Orders the read of a CQE's ownership byte before reads of its other
/// fields (`udma_from_device_barrier`: x86 `lfence`). [ref §4.4](crate::reference).
#[inline(always)]
pub fn from_device_barrier() {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: lfence has no memory-safety preconditions.
    unsafe {
        core::arch::x86_64::_mm_lfence()
    };
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
}

/// Flushes/orders write-combined MMIO stores (`mmio_flush_writes`, x86
/// `sfence`). [ref §4.4](crate::reference).
#[inline(always)]
pub fn mmio_flush_writes() {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: sfence has no memory-safety preconditions.
    unsafe {
        core::arch::x86_64::_mm_sfence()
    };
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
}

/// A UAR page in ordinary memory, for tests and benchmarks. Stores are
/// volatile, in the same order and width as on hardware.
#[derive(Clone)]
pub struct MemUar {
    page: [u8; 4096],
    /// Number of 8-byte doorbell writes seen.
    pub doorbells: u64,
    /// Number of 64-byte BlueFlame chunks seen.
    pub bf_chunks: u64,
}

impl Default for MemUar {
    fn default() -> Self {
        Self::filled(0)
    }
}

/// The counters only, not the 4 KiB page.
impl core::fmt::Debug for MemUar {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MemUar")
            .field("doorbells", &self.doorbells)
            .field("bf_chunks", &self.bf_chunks)
            .finish_non_exhaustive()
    }
}

impl MemUar {
    /// A page with every byte set to `fill` (the vectors pre-fill 0xEE).
    pub const fn filled(fill: u8) -> Self {
        MemUar {
            page: [fill; 4096],
            doorbells: 0,
            bf_chunks: 0,
        }
    }
    /// The page contents.
    pub fn bytes(&self) -> &[u8; 4096] {
        &self.page
    }
    /// One volatile N-byte store at `offset`; ignored (nothing written, no
    /// panic) when `[offset, offset + N)` is not inside the page, including
    /// when `offset + N` overflows.
    #[inline(always)]
    fn store<const N: usize>(&mut self, offset: usize, bytes: &[u8; N]) {
        let Some(end) = offset.checked_add(N) else {
            return;
        };
        if let Some(dst) = self.page.get_mut(offset..end) {
            let p = dst.as_mut_ptr().cast::<[u8; N]>();
            // SAFETY: `dst` is exactly N bytes inside `self.page`; a volatile
            // store keeps the write from being elided, as on MMIO.
            unsafe { core::ptr::write_volatile(p, *bytes) };
        }
    }
}

// SAFETY: stores go to ordinary memory in program order with the requested
// width; out-of-range offsets are ignored (never written).
unsafe impl Uar for MemUar {
    #[inline(always)]
    fn write64(&mut self, offset: usize, bytes: [u8; 8]) {
        self.doorbells += 1;
        self.store(offset, &bytes);
    }
    #[inline(always)]
    fn write32(&mut self, offset: usize, bytes: [u8; 4]) {
        self.store(offset, &bytes);
    }
    #[inline(always)]
    fn write_bf(&mut self, offset: usize, chunk: &[u8; 64]) {
        self.bf_chunks += 1;
        self.store(offset, chunk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A description may name memory this program does not own (its
    /// fields are public): slicing it does no in-bounds pointer arithmetic
    /// (miri flags `add` past an allocation) and wraps to `None`, never to a
    /// null pointer.
    #[test]
    fn slicing_a_forged_description_is_not_undefined() {
        let forged = DmaBuf {
            cpu: NonNull::dangling(),
            iova: 0,
            len: usize::MAX,
        };
        let s = forged.slice(1 << 40, 16).expect("in the claimed range");
        assert_eq!((s.len, s.iova), (16, 1 << 40));
        let high = DmaBuf {
            iova: u64::MAX - 8,
            ..forged
        };
        assert!(high.slice(16, 16).is_none(), "iova would overflow");
        let near_null = DmaBuf {
            cpu: NonNull::new(usize::MAX as *mut u8).expect("non-null"),
            iova: 0,
            len: usize::MAX,
        };
        assert!(near_null.slice(1, 1).is_none(), "would wrap to null");
        assert!(near_null.slice(usize::MAX, 1).is_none());
    }
}
