//! The device's DMA memory: its allocator and the translation of device
//! addresses (IOVAs) that every ring, record and region goes through.

use super::{Device, SimError};

/// Who provides a queue's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Origin {
    /// A caller of a safe `*_at` method: payload buffers, checked and claimed.
    Caller,
    /// The device's own allocation, or the firmware's (CREATE_CQ/QP/SRQ
    /// naming the driver's pages).
    Driver,
}
use crate::dma::HeapDma;
use bareverbs::platform::{DmaAllocator, DmaBuf};

impl Device {
    /// The device's DMA allocator (device addresses are IOVAs translated
    /// through its table).
    pub fn dma(&self) -> &HeapDma {
        &self.dma
    }
    /// Allocates a zeroed payload buffer ([`HeapDma::alloc_payload`]):
    /// memory [`reg_mr`](Self::reg_mr) may key, or (if no key has covered
    /// it) [`create_cq_at`](Self::create_cq_at) and
    /// [`create_qp_at`](Self::create_qp_at) may make a queue's, but not
    /// both.
    pub fn alloc(&self, len: usize) -> Result<DmaBuf, SimError> {
        self.dma.alloc_payload(len, 64).ok_or(SimError::NoMemory)
    }
    /// Allocates zeroed driver memory for a queue's ring or record: no safe
    /// call keys it.
    pub(super) fn alloc_ring(&self, len: usize) -> Result<DmaBuf, SimError> {
        self.dma.alloc(len, 64).ok_or(SimError::NoMemory)
    }
    /// The CPU addresses of a queue's ranges (IOVA, length). Memory a
    /// caller provides ([`Origin::Caller`]) must be payload buffers no key
    /// has covered, and becomes queue memory that no safe call keys
    /// ([`HeapDma::claim_for_queue`]; claimed even if the object is then
    /// refused); the device's own rings and the firmware's (driver memory)
    /// are only translated.
    pub(super) fn queue_memory(
        &self,
        ranges: &[(u64, usize)],
        origin: Origin,
    ) -> Result<Vec<*mut u8>, SimError> {
        match origin {
            Origin::Caller => self.dma.claim_for_queue(ranges).map_err(SimError::from),
            Origin::Driver => ranges
                .iter()
                .map(|&(iova, len)| self.translate_iova(iova, len))
                .collect(),
        }
    }
    /// The CPU address of device range `[iova, iova + len)`, if it lies
    /// inside one live allocation.
    pub(super) fn translate_iova(&self, iova: u64, len: usize) -> Result<*mut u8, SimError> {
        self.dma
            .translate(iova, len)
            .map(|p| p.as_ptr())
            .ok_or(SimError::BadAddress)
    }
    /// The CPU address of `buf`'s device range (see
    /// [`translate_iova`](Self::translate_iova)).
    pub(super) fn translate(&self, buf: &DmaBuf) -> Result<*mut u8, SimError> {
        self.translate_iova(buf.iova, buf.len)
    }
}
