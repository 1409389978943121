//! The pool of 4 KiB pages handed to firmware with MANAGE_PAGES ([ref §7.7](crate::reference)).
//!
//! Pages are carved from chunks obtained from the platform's
//! [`DmaAllocator`]; a bitmap per chunk records which pages firmware holds.
//! A chunk is returned to the allocator only when firmware holds none of
//! its pages. Bounded: at most [`MAX_CHUNKS`] chunks of at most
//! [`CHUNK_PAGES`] pages (256 MiB).

use crate::platform::{DmaAllocator, DmaBuf};

/// Firmware page size. [ref §7.7](crate::reference).
pub const FW_PAGE: usize = 4096;
/// Most pages per chunk (2 MiB, a huge page on VFIO).
pub const CHUNK_PAGES: usize = 512;
/// Most chunks.
pub const MAX_CHUNKS: usize = 128;

#[derive(Clone, Copy, Debug)]
struct Chunk {
    buf: DmaBuf,
    pages: usize,
    held: [u64; CHUNK_PAGES / 64],
}

impl Chunk {
    fn count(&self) -> usize {
        self.held.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// Page pool error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PageError {
    /// The DMA allocator returned nothing.
    OutOfDmaMemory,
    /// All chunk slots are in use.
    TooManyChunks,
    /// Firmware returned an address the pool never gave.
    UnknownPage {
        /// The address.
        iova: u64,
    },
}

impl core::fmt::Display for PageError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            PageError::OutOfDmaMemory => f.write_str("out of DMA memory for firmware pages"),
            PageError::TooManyChunks => f.write_str("every page-pool chunk slot is in use"),
            PageError::UnknownPage { iova } => {
                write!(
                    f,
                    "firmware returned page 0x{iova:x}, which the pool never gave"
                )
            }
        }
    }
}

impl core::error::Error for PageError {}

/// Pages lent to firmware.
#[derive(Debug, Default)]
pub struct PagePool {
    chunks: heapless::Vec<Chunk, MAX_CHUNKS>,
}

// SAFETY: the pool exclusively owns the chunk descriptions.
unsafe impl Send for PagePool {}

impl PagePool {
    /// An empty pool.
    pub const fn new() -> Self {
        PagePool {
            chunks: heapless::Vec::new(),
        }
    }

    /// Pages firmware currently holds.
    pub fn held(&self) -> usize {
        self.chunks.iter().map(Chunk::count).sum()
    }

    /// Takes up to `out.len()` pages not held by firmware (allocating chunks
    /// as needed), marks them held and writes their IOVAs to `out`. Returns
    /// how many were written; an error only if none could be provided.
    pub fn take_for_fw<A: DmaAllocator>(
        &mut self,
        alloc: &A,
        out: &mut [u64],
    ) -> Result<usize, PageError> {
        let mut n = 0;
        for c in self.chunks.iter_mut() {
            for p in 0..c.pages {
                if n == out.len() {
                    return Ok(n);
                }
                let (w, b) = (p / 64, p % 64);
                if c.held[w] & (1 << b) == 0 {
                    c.held[w] |= 1 << b;
                    out[n] = c.buf.iova + (p * FW_PAGE) as u64;
                    n += 1;
                }
            }
        }
        while n < out.len() {
            let want = (out.len() - n).clamp(16, CHUNK_PAGES);
            if self.chunks.is_full() {
                return if n > 0 {
                    Ok(n)
                } else {
                    Err(PageError::TooManyChunks)
                };
            }
            let Some(buf) = alloc.alloc(want * FW_PAGE, FW_PAGE) else {
                return if n > 0 {
                    Ok(n)
                } else {
                    Err(PageError::OutOfDmaMemory)
                };
            };
            let mut c = Chunk {
                buf,
                pages: want,
                held: [0; CHUNK_PAGES / 64],
            };
            for p in 0..want {
                if n == out.len() {
                    break;
                }
                c.held[p / 64] |= 1 << (p % 64);
                out[n] = buf.iova + (p * FW_PAGE) as u64;
                n += 1;
            }
            // Cannot fail: checked `is_full` above.
            let _ = self.chunks.push(c);
        }
        Ok(n)
    }

    /// Un-marks pages that a failed MANAGE_PAGES GIVE did not deliver.
    pub fn undo(&mut self, pages: &[u64]) {
        for &p in pages {
            let _ = self.returned(p);
        }
    }

    /// Firmware returned the page at `iova` (MANAGE_PAGES TAKE output).
    pub fn returned(&mut self, iova: u64) -> Result<(), PageError> {
        for c in self.chunks.iter_mut() {
            let start = c.buf.iova;
            let end = start + (c.pages * FW_PAGE) as u64;
            if iova >= start && iova < end && (iova - start).is_multiple_of(FW_PAGE as u64) {
                let p = ((iova - start) / FW_PAGE as u64) as usize;
                let bit = 1u64 << (p % 64);
                if c.held[p / 64] & bit == 0 {
                    return Err(PageError::UnknownPage { iova });
                }
                c.held[p / 64] &= !bit;
                return Ok(());
            }
        }
        Err(PageError::UnknownPage { iova })
    }

    /// Returns every chunk firmware holds no page of to `alloc`.
    ///
    /// # Safety
    /// Pages not held by firmware must really be unused by the device (they
    /// were never given, or firmware returned them).
    pub unsafe fn release_unused<A: DmaAllocator>(&mut self, alloc: &A) {
        let mut i = 0;
        while i < self.chunks.len() {
            if self.chunks[i].count() == 0 {
                let c = self.chunks.swap_remove(i);
                // SAFETY: the chunk came from `alloc` and the device holds
                // none of its pages (caller's contract).
                unsafe { alloc.free(c.buf) };
            } else {
                i += 1;
            }
        }
    }
}
