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
//! only through raw-pointer reads and writes: typed single accesses through
//! `volatile`'s `VolatilePtr` (read-only for what the device writes,
//! write-only for what it reads), byte and word copy loops with
//! `read_volatile`/`write_volatile`.
//!
//! The barriers are rdma-core's (`util/udma_barrier.h`), each named by what
//! it orders: [`to_device_barrier`], [`ordering_write_barrier`],
//! [`from_device_barrier`], [`release_to_device_barrier`],
//! [`mmio_wc_start`], [`mmio_flush_writes`]. They are implemented for
//! x86_64 and aarch64 (outer-shareable `dmb`/`dsb`: the device is not in
//! the CPUs' inner-shareable domain); under miri they are `fence(SeqCst)`,
//! and any other architecture does not compile.

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
    /// Flushes the write-combining buffers of this page: the stores before
    /// it leave the CPU, as their own PCIe writes, before any store after
    /// it. The default is [`mmio_flush_writes`] (x86_64 `sfence`, aarch64
    /// `dsb st`); a platform whose UAR is not CPU MMIO (the simulator)
    /// delivers its buffered stores here.
    #[inline(always)]
    fn flush(&mut self) {
        mmio_flush_writes();
    }
}

// ---------------------------------------------------------------------------
// DMA and MMIO barriers ([ref §4.4](crate::reference)).
//
// Each barrier is named by what it orders, after rdma-core's
// `util/udma_barrier.h`, and is one instruction (or none) per architecture:
//
// | barrier | orders | x86_64 | aarch64 |
// | --- | --- | --- | --- |
// | `to_device_barrier` | CPU stores to DMA memory before a later store the device acts on | compiler barrier | `dmb oshst` |
// | `ordering_write_barrier` | data stores before the store of their valid bit | compiler barrier | `dmb oshst` |
// | `from_device_barrier` | the read of a valid/ownership byte before reads of the rest | `lfence` | `dmb oshld` |
// | `release_to_device_barrier` | reads and writes of ring entries before the store that hands them back | none (`fence(Release)`) | `dmb osh` |
// | `mmio_wc_start` / `mmio_flush_writes` | MMIO/write-combined stores, flushed | `sfence` | `dsb st` |
//
// aarch64 uses the outer-shareable domain (`osh`) because the device is
// not in the inner-shareable domain of the CPUs: `dmb ish` (what
// `fence(SeqCst)` compiles to) does not order anything for a PCIe device.
// Only under miri (which cannot execute inline assembly) do the barriers
// fall back to `fence(SeqCst)`; every other architecture is a compile
// error naming the barriers to write.
// ---------------------------------------------------------------------------

/// Orders this CPU's earlier stores to DMA memory (WQEs, command entries,
/// mailboxes) before a later store that may make the device read them: a
/// doorbell record, an MMIO doorbell, a BAR0 register
/// (`udma_to_device_barrier`). x86_64: a compiler barrier only (stores to
/// write-back memory are not reordered with later stores); aarch64:
/// `dmb oshst`. [ref §4.4](crate::reference).
#[inline(always)]
pub fn to_device_barrier() {
    arch::to_device_barrier()
}

/// Orders the stores that fill a DMA structure before the later store of
/// its valid or ownership bit, so the device never sees the bit with
/// unwritten data (`udma_ordering_write_barrier`, which rdma-core defines
/// as [`to_device_barrier`]: x86_64 a compiler barrier, aarch64
/// `dmb oshst`). It does not make anything visible by itself.
/// [ref §4.4](crate::reference).
#[inline(always)]
pub fn ordering_write_barrier() {
    arch::to_device_barrier()
}

/// Orders the read of a device-written valid or ownership byte (a CQE's
/// `op_own`, an EQE's owner bit, a command entry's ownership bit) before
/// the reads of the entry's other fields, so they see what the device
/// wrote before setting it (`udma_from_device_barrier`). x86_64: `lfence`;
/// aarch64: `dmb oshld`. [ref §4.4](crate::reference).
#[inline(always)]
pub fn from_device_barrier() {
    arch::from_device_barrier()
}

/// Orders this CPU's earlier reads of device-written ring entries, and
/// any writes that re-initialise them (a compressed session's INVALID
/// marks), before the later store that hands those entries back to the
/// device (the CQ's SET_CI doorbell record word): the device may rewrite
/// an entry as soon as it sees the new index. x86_64: no instruction
/// (`fence(Release)`, a compiler barrier: TSO keeps earlier loads and
/// stores before a later store); aarch64: `dmb osh` (earlier loads and
/// stores against later ones, outer shareable). rdma-core's mlx5
/// `update_cons_index` has no barrier of its own; its `__mlx5_cq_clean`
/// puts `udma_to_device_barrier` before the same store.
/// [ref §4.4, §4.5](crate::reference).
#[inline(always)]
pub fn release_to_device_barrier() {
    arch::release_to_device_barrier()
}

/// Opens a write-combined MMIO sequence: earlier stores (to DMA memory and
/// to MMIO) are ordered before the doorbell or BlueFlame stores that
/// follow (`mmio_wc_start`, which rdma-core defines as
/// [`mmio_flush_writes`] and documents as implying
/// `udma_to_device_barrier`). x86_64: `sfence`; aarch64: `dsb st`.
/// [ref §4.3, §4.4](crate::reference).
#[inline(always)]
pub fn mmio_wc_start() {
    arch::mmio_flush_writes()
}

/// Flushes and orders write-combined MMIO stores: after it, the stores
/// before it leave the CPU as their own PCIe writes, before any later one
/// (`mmio_flush_writes`; rdma-core's `mmio_ordered_writes_hack` is the
/// same barrier). x86_64: `sfence`; aarch64: `dsb st`.
/// [ref §4.4](crate::reference).
#[inline(always)]
pub fn mmio_flush_writes() {
    arch::mmio_flush_writes()
}

/// x86_64 (not under miri): exactly the code the post and poll paths were
/// measured with (`scripts/callgrind-post.sh`).
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod arch {
    use core::sync::atomic::{compiler_fence, fence, Ordering};

    #[inline(always)]
    pub(super) fn to_device_barrier() {
        compiler_fence(Ordering::SeqCst);
    }
    #[inline(always)]
    pub(super) fn release_to_device_barrier() {
        fence(Ordering::Release);
    }
    #[inline(always)]
    pub(super) fn from_device_barrier() {
        #[cfg(target_feature = "sse2")]
        // SAFETY: `lfence` has no memory-safety preconditions; the sse2
        // target feature it needs is enabled (cfg above).
        unsafe {
            core::arch::x86_64::_mm_lfence()
        };
        #[cfg(not(target_feature = "sse2"))]
        // SAFETY: `lfence` only orders loads; it reads and writes no
        // register or memory the compiler tracks (the implied memory
        // clobber keeps accesses from moving across it). Every x86_64 CPU
        // has it, also where the target disables SSE registers.
        unsafe {
            core::arch::asm!("lfence", options(nostack, preserves_flags))
        };
    }
    #[inline(always)]
    pub(super) fn mmio_flush_writes() {
        #[cfg(target_feature = "sse")]
        // SAFETY: `sfence` has no memory-safety preconditions; the sse
        // target feature it needs is enabled (cfg above).
        unsafe {
            core::arch::x86_64::_mm_sfence()
        };
        #[cfg(not(target_feature = "sse"))]
        // SAFETY: `sfence` only orders stores; no register or tracked
        // memory changes (memory clobber implied). Every x86_64 CPU has
        // it.
        unsafe {
            core::arch::asm!("sfence", options(nostack, preserves_flags))
        };
    }
}

/// aarch64 (not under miri): rdma-core's barriers, outer shareable.
#[cfg(all(target_arch = "aarch64", not(miri)))]
mod arch {
    #[inline(always)]
    pub(super) fn to_device_barrier() {
        // SAFETY: a data memory barrier changes no register, flag or
        // memory; without `nomem` the asm is a compiler memory barrier too.
        unsafe { core::arch::asm!("dmb oshst", options(nostack, preserves_flags)) };
    }
    #[inline(always)]
    pub(super) fn release_to_device_barrier() {
        // SAFETY: as above.
        unsafe { core::arch::asm!("dmb osh", options(nostack, preserves_flags)) };
    }
    #[inline(always)]
    pub(super) fn from_device_barrier() {
        // SAFETY: as above.
        unsafe { core::arch::asm!("dmb oshld", options(nostack, preserves_flags)) };
    }
    #[inline(always)]
    pub(super) fn mmio_flush_writes() {
        // SAFETY: a data synchronization barrier waits for earlier stores
        // to complete; it changes no register, flag or memory.
        unsafe { core::arch::asm!("dsb st", options(nostack, preserves_flags)) };
    }
}

/// Under miri only (it cannot execute inline assembly or the x86
/// intrinsics): the portable `fence(SeqCst)`, on any architecture. This is
/// the one place a language fence stands in for a DMA barrier; it orders
/// nothing for a device, and under miri there is none.
#[cfg(miri)]
mod arch {
    use core::sync::atomic::{fence, Ordering};

    #[inline(always)]
    pub(super) fn to_device_barrier() {
        fence(Ordering::SeqCst);
    }
    #[inline(always)]
    pub(super) fn release_to_device_barrier() {
        fence(Ordering::SeqCst);
    }
    #[inline(always)]
    pub(super) fn from_device_barrier() {
        fence(Ordering::SeqCst);
    }
    #[inline(always)]
    pub(super) fn mmio_flush_writes() {
        fence(Ordering::SeqCst);
    }
}

/// Any other architecture: no silent fallback. The message names the
/// barriers to write and rdma-core's counterparts.
macro_rules! no_barriers_for {
    ($($arch:tt),* $(,)?) => {
        $(
            #[cfg(all(target_arch = $arch, not(miri)))]
            compile_error!(concat!(
                "bareverbs: no DMA barriers for target_arch = \"", $arch, "\": implement ",
                "to_device_barrier (udma_to_device_barrier), ",
                "from_device_barrier (udma_from_device_barrier), ",
                "release_to_device_barrier (earlier loads and stores before a later store, ",
                "seen by the device) and ",
                "mmio_flush_writes (mmio_flush_writes) in core/src/platform.rs"
            ));
        )*
    };
}
no_barriers_for!(
    "x86",
    "arm",
    "riscv32",
    "riscv64",
    "powerpc",
    "powerpc64",
    "loongarch64",
    "s390x",
    "mips",
    "mips64",
    "sparc64",
    "wasm32",
    "wasm64",
);
#[cfg(not(any(
    miri,
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "x86",
    target_arch = "arm",
    target_arch = "riscv32",
    target_arch = "riscv64",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "loongarch64",
    target_arch = "s390x",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc64",
    target_arch = "wasm32",
    target_arch = "wasm64",
)))]
compile_error!(
    "bareverbs: no DMA barriers for this target_arch: implement to_device_barrier \
     (udma_to_device_barrier), from_device_barrier (udma_from_device_barrier), \
     release_to_device_barrier (earlier loads and stores before a later store, seen by the \
     device) and mmio_flush_writes (mmio_flush_writes) in core/src/platform.rs"
);

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
            // SAFETY: `dst` is exactly N bytes inside `self.page` (ordinary
            // memory, borrowed mutably), non-null, alignment 1 as [u8; N];
            // a write-only volatile view keeps the store from being elided,
            // as on MMIO.
            unsafe { crate::devmem::write_only(p) }.write(*bytes);
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
