//! Building a completion queue: the entry-count limit, the checks of the
//! ring and doorbell record, and the fixed-size and runtime-sized
//! constructors.

use super::doorbell::DBREC_BYTES;
use super::error::CqError;
use super::CompletionQueue;
use crate::cqe::{CqeSize, MiniCqeFormat};
use crate::platform::DmaBuf;

/// Largest CQ the provider creates (2^24 entries). [ref §3.7](crate::reference).
pub const MAX_CQ_ENTRIES: usize = crate::sizing::PROVIDER_MAX_NCQE as usize;

impl<const N: usize> CompletionQueue<N> {
    /// Compile-time check of `N`: a power of two in `2..=2^24`. [ref §3.7](crate::reference).
    pub const OK: () = assert!(
        N >= 2 && N.is_power_of_two() && N <= MAX_CQ_ENTRIES,
        "CompletionQueue<N>: N must be a power of two in 2..=2^24"
    );

    /// A CQ of `N` entries over `ring` (at least `N × cqe_size` bytes) and
    /// `dbrec` (8 bytes), with CQ number `cqn` and CQE version 0 or 1.
    /// The consumer index starts at 0; call [`Self::init_ring`] unless the
    /// ring already holds initialised entries.
    ///
    /// Refuses (typed [`CqError`]) a bad entry count, short buffers, a ring
    /// or record that is not 8-byte aligned and a CQE version above 1.
    ///
    /// # Safety
    /// For the whole life of the returned value, `ring` and `dbrec` must
    /// be valid for reads and writes of their lengths (the ring is read
    /// with 8-byte volatile loads; its 8-byte alignment is checked here),
    /// must not be
    /// accessed through Rust references, and may be written concurrently
    /// only by the device (and only as the mlx5 CQ protocol allows).
    pub unsafe fn new(
        ring: DmaBuf,
        dbrec: DmaBuf,
        cqn: u32,
        cqe_size: CqeSize,
        cqe_version: u8,
    ) -> Result<Self, CqError> {
        #[allow(clippy::let_unit_value)]
        let () = Self::OK;
        Self::build(N, ring, dbrec, cqn, cqe_size, cqe_version)
    }

    fn build(
        ncqe: usize,
        ring: DmaBuf,
        dbrec: DmaBuf,
        cqn: u32,
        cqe_size: CqeSize,
        cqe_version: u8,
    ) -> Result<Self, CqError> {
        if ncqe < 2 || !ncqe.is_power_of_two() || ncqe > MAX_CQ_ENTRIES {
            return Err(CqError::BadEntryCount { ncqe });
        }
        let need = ncqe * cqe_size.bytes();
        if ring.len < need {
            return Err(CqError::RingTooSmall {
                need,
                have: ring.len,
            });
        }
        if dbrec.len < DBREC_BYTES {
            return Err(CqError::DbrecTooSmall { have: dbrec.len });
        }
        for p in [ring.cpu, dbrec.cpu] {
            if !p.cast::<u64>().as_ptr().is_aligned() {
                return Err(CqError::Misaligned {
                    addr: p.as_ptr().addr(),
                });
            }
        }
        if cqe_version > 1 {
            return Err(CqError::BadCqeVersion {
                version: cqe_version,
            });
        }
        Ok(CompletionQueue {
            ring,
            dbrec,
            ncqe: ncqe as u32,
            ci: 0,
            cqn,
            cqe_size,
            cqe_version,
            arm_sn: 0,
            mini_format: MiniCqeFormat::default(),
            zip: None,
        })
    }
}

impl CompletionQueue<0> {
    /// A runtime-sized CQ of `ncqe` entries (a power of two in
    /// `2..=2^24`); otherwise as [`CompletionQueue::new`].
    ///
    /// # Safety
    /// Same contract as [`CompletionQueue::new`].
    pub unsafe fn with_entries(
        ncqe: usize,
        ring: DmaBuf,
        dbrec: DmaBuf,
        cqn: u32,
        cqe_size: CqeSize,
        cqe_version: u8,
    ) -> Result<Self, CqError> {
        Self::build(ncqe, ring, dbrec, cqn, cqe_size, cqe_version)
    }
}
