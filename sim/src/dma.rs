//! Heap-backed DMA memory for tests and benchmarks: page-aligned, zeroed,
//! with device addresses distinct from CPU addresses (a fixed IOVA offset),
//! so code that confuses the two fails instead of passing by accident.
//!
//! Every allocation has a use: memory handed out through the
//! [`DmaAllocator`] trait (the driver's rings, records, mailboxes, pages)
//! and the rings the simulator allocates for its queues are driver memory;
//! [`HeapDma::alloc_payload`] hands out payload buffers. The simulator's
//! safe registration calls key payload buffers only, and its safe
//! queue-over-host-memory calls take payload buffers no key has covered:
//! no safe call can put a key over memory a queue owns.

use bareverbs::platform::{DmaAllocator, DmaBuf};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;
use std::sync::Mutex;

/// Why a range may not take the use asked of it (the simulator's device
/// turns it into its `SimError` of the same name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UseError {
    /// The range is not inside one live allocation.
    BadAddress,
    /// The range overlaps driver memory (a ring, record, mailbox or page):
    /// the allocation's IOVA and length.
    DriverMemory { iova: u64, len: u64 },
    /// A key has covered the buffer: it cannot become a queue's memory.
    KeyedMemory { iova: u64, len: u64 },
}

/// IOVA base of the heap allocator's device address space.
pub const IOVA_BASE: u64 = 0x7f00_0000_0000;

/// What an allocation is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Use {
    /// Driver memory: handed out through the [`DmaAllocator`] trait, or a
    /// ring or record the simulator allocated for one of its queues.
    Driver,
    /// A payload buffer ([`HeapDma::alloc_payload`]) nothing uses yet.
    Payload,
    /// A payload buffer a safe registration has keyed (until it is freed:
    /// a key that was deregistered may still be in a WQE in flight).
    Keyed,
    /// A payload buffer a safe call made a queue's ring or record.
    Queue,
}

/// One live allocation: CPU address, IOVA, length, layout and use.
#[derive(Clone, Copy, Debug)]
struct Block {
    cpu: usize,
    iova: u64,
    len: usize,
    layout: Layout,
    used: Use,
}

impl Block {
    /// The CPU address of `[iova, iova + len)` if it lies inside this block.
    fn cpu_of(&self, iova: u64, len: usize) -> Option<NonNull<u8>> {
        let end = iova.checked_add(len as u64)?;
        if iova >= self.iova && end <= self.iova + self.len as u64 {
            NonNull::new((self.cpu + (iova - self.iova) as usize) as *mut u8)
        } else {
            None
        }
    }
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
        blocks.iter().find_map(|b| b.cpu_of(iova, len))
    }

    /// Allocates a zeroed payload buffer (alignment at least 4096): memory
    /// the simulator's safe registration calls may key. Ring memory comes
    /// from the [`DmaAllocator`] trait instead, and is never keyed by them.
    pub fn alloc_payload(&self, len: usize, align: usize) -> Option<DmaBuf> {
        self.alloc_for(len, align, Use::Payload)
    }

    /// For a safe registration: the CPU address of `[iova, iova + len)`,
    /// which must lie inside one payload buffer; the buffer is marked keyed
    /// (so no safe call makes it a ring while it is allocated).
    ///
    /// Refused: [`UseError::BadAddress`] when the range is not inside one
    /// live allocation, [`UseError::DriverMemory`] (naming the allocation)
    /// when it is driver memory or a queue's.
    pub(crate) fn key_payload(&self, iova: u64, len: usize) -> Result<NonNull<u8>, UseError> {
        let mut blocks = self.blocks.lock().map_err(|_| UseError::BadAddress)?;
        let (b, cpu) = blocks
            .iter_mut()
            .find_map(|b| b.cpu_of(iova, len).map(|p| (b, p)))
            .ok_or(UseError::BadAddress)?;
        match b.used {
            Use::Payload | Use::Keyed => {
                b.used = Use::Keyed;
                Ok(cpu)
            }
            Use::Driver | Use::Queue => Err(UseError::DriverMemory {
                iova: b.iova,
                len: b.len as u64,
            }),
        }
    }

    /// For a safe queue over host memory: the CPU addresses of `ranges`
    /// (IOVA, length), each inside one payload buffer that no safe
    /// registration has keyed; all their buffers are then marked as queue
    /// memory, which no safe registration keys. All or nothing.
    ///
    /// Refused: [`UseError::BadAddress`] when a range is not inside one
    /// live allocation, [`UseError::DriverMemory`] when it is driver memory
    /// (another queue's ring, say), [`UseError::KeyedMemory`] when a key
    /// has covered it. Nothing is marked then.
    pub(crate) fn claim_for_queue(
        &self,
        ranges: &[(u64, usize)],
    ) -> Result<Vec<*mut u8>, UseError> {
        let mut blocks = self.blocks.lock().map_err(|_| UseError::BadAddress)?;
        let mut at = Vec::with_capacity(ranges.len());
        for &(iova, len) in ranges {
            let (i, cpu) = blocks
                .iter()
                .enumerate()
                .find_map(|(i, b)| b.cpu_of(iova, len).map(|p| (i, p)))
                .ok_or(UseError::BadAddress)?;
            let b = &blocks[i];
            let (iova, len) = (b.iova, b.len as u64);
            match b.used {
                Use::Payload | Use::Queue => at.push((i, cpu.as_ptr())),
                Use::Driver => return Err(UseError::DriverMemory { iova, len }),
                Use::Keyed => return Err(UseError::KeyedMemory { iova, len }),
            }
        }
        Ok(at
            .into_iter()
            .map(|(i, cpu)| {
                blocks[i].used = Use::Queue;
                cpu
            })
            .collect())
    }

    /// [`DmaAllocator::alloc`] for `used`.
    fn alloc_for(&self, len: usize, align: usize, used: Use) -> Option<DmaBuf> {
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
            used,
        });
        Some(DmaBuf { cpu, iova, len })
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
// exactly that memory. It is driver memory: the simulator's safe calls
// never key it (`key_payload`) nor make it a queue (`claim_for_queue`).
unsafe impl DmaAllocator for HeapDma {
    fn alloc(&self, len: usize, align: usize) -> Option<DmaBuf> {
        self.alloc_for(len, align, Use::Driver)
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

    #[test]
    fn driver_memory_is_never_keyed_and_keyed_memory_never_a_queue() {
        let d = HeapDma::new();
        let ring = d.alloc(8192, 64).unwrap();
        let whole = UseError::DriverMemory {
            iova: ring.iova,
            len: 8192,
        };
        assert_eq!(d.key_payload(ring.iova, 8192), Err(whole));
        assert_eq!(d.key_payload(ring.iova + 4096, 8), Err(whole));
        assert_eq!(d.claim_for_queue(&[(ring.iova, 64)]), Err(whole));
        let p = d.alloc_payload(4096, 64).unwrap();
        let q = d.alloc_payload(4096, 64).unwrap();
        assert_eq!(
            d.key_payload(p.iova + 8, 8),
            Ok(d.translate(p.iova + 8, 8).unwrap())
        );
        let keyed = UseError::KeyedMemory {
            iova: p.iova,
            len: 4096,
        };
        // All or nothing: `q` is not claimed when `p` is refused.
        assert_eq!(d.claim_for_queue(&[(q.iova, 64), (p.iova, 64)]), Err(keyed));
        assert!(d.key_payload(q.iova, 64).is_ok());
        let r = d.alloc_payload(4096, 64).unwrap();
        assert_eq!(
            d.claim_for_queue(&[(r.iova, 64), (r.iova + 64, 8)])
                .unwrap()
                .len(),
            2
        );
        assert_eq!(
            d.key_payload(r.iova + 1024, 8),
            Err(UseError::DriverMemory {
                iova: r.iova,
                len: 4096
            })
        );
        assert_eq!(d.key_payload(r.iova + 4090, 8), Err(UseError::BadAddress));
    }
}
