//! Heap-backed DMA memory for tests and benchmarks: page-aligned, zeroed,
//! with device addresses distinct from CPU addresses (a fixed IOVA offset),
//! so code that confuses the two fails instead of passing by accident.

use bareverbs::platform::{DmaAllocator, DmaBuf};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;
use std::sync::Mutex;

/// IOVA base of the heap allocator's device address space.
pub const IOVA_BASE: u64 = 0x7f00_0000_0000;

/// One live allocation: CPU address, IOVA, length and layout.
#[derive(Clone, Copy, Debug)]
struct Block {
    cpu: usize,
    iova: u64,
    len: usize,
    layout: Layout,
}

/// A DMA allocator over the process heap. Allocations are page aligned
/// (at least), zeroed, and get IOVAs from a bump allocator starting at
/// [`IOVA_BASE`]; [`HeapDma::translate`] maps an IOVA range back to a CPU
/// pointer, refusing anything outside a live allocation.
#[derive(Debug, Default)]
pub struct HeapDma {
    blocks: Mutex<Vec<Block>>,
    next_iova: Mutex<u64>,
}

impl HeapDma {
    /// An empty allocator.
    pub fn new() -> Self {
        HeapDma {
            blocks: Mutex::new(Vec::new()),
            next_iova: Mutex::new(IOVA_BASE),
        }
    }

    /// CPU pointer for the device range `[iova, iova + len)`, or `None`
    /// when it is not entirely inside one live allocation.
    pub fn translate(&self, iova: u64, len: usize) -> Option<NonNull<u8>> {
        let blocks = self.blocks.lock().ok()?;
        for b in blocks.iter() {
            if iova >= b.iova && iova.checked_add(len as u64)? <= b.iova + b.len as u64 {
                let off = (iova - b.iova) as usize;
                return NonNull::new((b.cpu + off) as *mut u8);
            }
        }
        None
    }

    /// Bytes currently allocated.
    pub fn allocated_bytes(&self) -> usize {
        self.blocks
            .lock()
            .map(|b| b.iter().map(|b| b.len).sum())
            .unwrap_or(0)
    }
}

// SAFETY: `alloc` returns fresh zeroed heap memory of the requested size
// and alignment (at least 4096), never handed out twice until freed; the
// IOVA range is unique (bump allocated) and `translate` maps it back to
// exactly that memory.
unsafe impl DmaAllocator for HeapDma {
    fn alloc(&self, len: usize, align: usize) -> Option<DmaBuf> {
        let len = len.max(1);
        let align = align.max(4096);
        let layout = Layout::from_size_align(len, align).ok()?;
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { alloc_zeroed(layout) };
        let cpu = NonNull::new(p)?;
        let mut next = self.next_iova.lock().ok()?;
        let iova = next.next_multiple_of(align as u64);
        *next = iova + len.next_multiple_of(4096) as u64;
        self.blocks.lock().ok()?.push(Block {
            cpu: p as usize,
            iova,
            len,
            layout,
        });
        Some(DmaBuf { cpu, iova, len })
    }

    unsafe fn free(&self, buf: DmaBuf) {
        let Ok(mut blocks) = self.blocks.lock() else {
            return;
        };
        if let Some(i) = blocks
            .iter()
            .position(|b| b.cpu == buf.cpu.as_ptr() as usize)
        {
            let b = blocks.swap_remove(i);
            // SAFETY: `b` came from `alloc` with this layout and is removed
            // from the table, so it is freed exactly once.
            unsafe { dealloc(b.cpu as *mut u8, b.layout) };
        }
    }
}

impl Drop for HeapDma {
    fn drop(&mut self) {
        if let Ok(blocks) = self.blocks.get_mut() {
            for b in blocks.drain(..) {
                // SAFETY: every block in the table is live and owned here.
                unsafe { dealloc(b.cpu as *mut u8, b.layout) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translate_only_inside_allocations() {
        let d = HeapDma::new();
        let a = d.alloc(100, 64).unwrap();
        assert_ne!(a.iova, a.cpu.as_ptr() as u64);
        assert_eq!(d.translate(a.iova, 100).unwrap(), a.cpu);
        assert!(d.translate(a.iova + 1, 100).is_none());
        assert!(d.translate(a.iova - 1, 1).is_none());
        // SAFETY: `a` came from `d.alloc` and is freed once.
        unsafe { d.free(a) };
        assert!(d.translate(a.iova, 1).is_none());
    }
}
