//! An IO virtual address allocator for the IOMMU mappings of one container.
//!
//! First fit over a sorted free list with coalescing; every range is
//! aligned to at least 4 KiB. Pure bookkeeping: no system calls, so it is
//! unit-tested without hardware.

use crate::error::VfioHostError;

/// Smallest granule (IOMMU page).
pub const IOVA_PAGE: u64 = 4096;

/// Allocator over `[base, limit)`.
#[derive(Clone, Debug)]
pub struct IovaAllocator {
    /// Free ranges `(start, end)`, sorted, non-adjacent.
    free: Vec<(u64, u64)>,
    base: u64,
    limit: u64,
}

impl IovaAllocator {
    /// An allocator over `[base, limit)`; `base` is rounded up to 4 KiB.
    /// The default window used by the VFIO host starts at 4 GiB (above
    /// any 32-bit MSI doorbell window) and spans 1 TiB.
    #[must_use]
    pub fn new(base: u64, limit: u64) -> Self {
        let base = base.next_multiple_of(IOVA_PAGE);
        let free = if base < limit {
            vec![(base, limit)]
        } else {
            vec![]
        };
        IovaAllocator { free, base, limit }
    }

    /// Allocates `len` bytes (rounded up to 4 KiB) aligned to `align`
    /// (a power of two, at least 4 KiB).
    pub fn alloc(&mut self, len: u64, align: u64) -> Result<u64, VfioHostError> {
        if len == 0 || !align.is_power_of_two() {
            return Err(VfioHostError::OutOfIova { len, align });
        }
        let align = align.max(IOVA_PAGE);
        let len = len
            .checked_next_multiple_of(IOVA_PAGE)
            .ok_or(VfioHostError::OutOfIova { len, align })?;
        for i in 0..self.free.len() {
            let (s, e) = self.free[i];
            let Some(start) = s.checked_next_multiple_of(align) else {
                continue;
            };
            let Some(end) = start.checked_add(len) else {
                continue;
            };
            if end > e {
                continue;
            }
            // Split [s, e) into [s, start) + used + [end, e).
            let mut repl = Vec::with_capacity(2);
            if s < start {
                repl.push((s, start));
            }
            if end < e {
                repl.push((end, e));
            }
            self.free.splice(i..=i, repl);
            return Ok(start);
        }
        Err(VfioHostError::OutOfIova { len, align })
    }

    /// Returns `[iova, iova + len)` (len rounded up to 4 KiB). Ranges that
    /// are outside the window or overlap free space are refused.
    pub fn free(&mut self, iova: u64, len: u64) -> Result<(), VfioHostError> {
        let len = len.next_multiple_of(IOVA_PAGE);
        let end = iova
            .checked_add(len)
            .ok_or(VfioHostError::BadIovaFree { iova, len })?;
        if iova < self.base || end > self.limit || !iova.is_multiple_of(IOVA_PAGE) || len == 0 {
            return Err(VfioHostError::BadIovaFree { iova, len });
        }
        let i = self.free.partition_point(|&(s, _)| s < iova);
        if i > 0 && self.free[i - 1].1 > iova {
            return Err(VfioHostError::BadIovaFree { iova, len });
        }
        if i < self.free.len() && self.free[i].0 < end {
            return Err(VfioHostError::BadIovaFree { iova, len });
        }
        self.free.insert(i, (iova, end));
        // Coalesce with neighbours.
        if i + 1 < self.free.len() && self.free[i].1 == self.free[i + 1].0 {
            self.free[i].1 = self.free[i + 1].1;
            self.free.remove(i + 1);
        }
        if i > 0 && self.free[i - 1].1 == self.free[i].0 {
            self.free[i - 1].1 = self.free[i].1;
            self.free.remove(i);
        }
        Ok(())
    }

    /// Free bytes.
    pub fn free_bytes(&self) -> u64 {
        self.free.iter().map(|(s, e)| e - s).sum()
    }

    /// Number of free ranges (fragmentation).
    pub fn free_ranges(&self) -> usize {
        self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bareverbs_sim::rng::Rng;

    #[test]
    fn aligned_disjoint_and_reusable() {
        let mut a = IovaAllocator::new(1 << 32, (1 << 32) + (64 << 20));
        let total = a.free_bytes();
        assert_eq!(total, 64 << 20);
        let x = a.alloc(100, 4096).unwrap();
        assert_eq!(x, 1 << 32);
        let y = a.alloc(2 << 20, 2 << 20).unwrap();
        assert_eq!(y % (2 << 20), 0);
        assert!(y >= x + 4096);
        let z = a.alloc(4096, 4096).unwrap();
        assert_eq!(
            z,
            x + 4096,
            "first fit uses the gap before the aligned block"
        );
        assert_eq!(a.free_bytes(), total - 4096 - (2 << 20) - 4096);
        a.free(y, 2 << 20).unwrap();
        a.free(x, 100).unwrap();
        a.free(z, 4096).unwrap();
        assert_eq!(a.free_bytes(), total);
        assert_eq!(a.free_ranges(), 1, "fully coalesced");
    }

    #[test]
    fn exhaustion_and_bad_frees() {
        let mut a = IovaAllocator::new(0x10000, 0x10000 + 3 * 4096);
        let p = a.alloc(4096, 4096).unwrap();
        let _q = a.alloc(8192, 4096).unwrap();
        assert!(matches!(
            a.alloc(1, 4096),
            Err(VfioHostError::OutOfIova { .. })
        ));
        assert!(matches!(
            a.alloc(0, 4096),
            Err(VfioHostError::OutOfIova { .. })
        ));
        assert!(matches!(
            a.alloc(10, 3),
            Err(VfioHostError::OutOfIova { .. })
        ));
        a.free(p, 4096).unwrap();
        // Double free and out-of-window frees are refused.
        assert!(a.free(p, 4096).is_err());
        assert!(a.free(0, 4096).is_err());
        assert!(a.free(u64::MAX - 10, 4096).is_err());
        assert_eq!(a.alloc(4096, 4096).unwrap(), p);
    }

    #[test]
    fn many_random_allocs_never_overlap() {
        let mut a = IovaAllocator::new(1 << 32, (1 << 32) + (256 << 20));
        let mut live: Vec<(u64, u64)> = Vec::new();
        let mut rng = Rng::new(0x1234_5678);
        for i in 0..2000 {
            if i % 3 == 2 && !live.is_empty() {
                let (s, l) = live.swap_remove(rng.below(live.len() as u64) as usize);
                a.free(s, l).unwrap();
                continue;
            }
            let len = rng.below(512 << 10) + 1;
            let align = 4096u64 << rng.below(10);
            if let Ok(s) = a.alloc(len, align) {
                assert_eq!(s % align, 0);
                let l = len.next_multiple_of(4096);
                for &(t, m) in &live {
                    assert!(s + l <= t || t + m <= s, "overlap");
                }
                live.push((s, l));
            }
        }
        for (s, l) in live {
            a.free(s, l).unwrap();
        }
        assert_eq!(a.free_ranges(), 1);
    }
}
