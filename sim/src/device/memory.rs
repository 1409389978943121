//! The device's DMA memory: its allocator and the translation of device
//! addresses (IOVAs) that every ring, record and region goes through.

use super::{Device, SimError};
use crate::dma::HeapDma;
use bareverbs::platform::{DmaAllocator, DmaBuf};

impl Device {
    /// The device's DMA allocator (device addresses are IOVAs translated
    /// through its table).
    pub fn dma(&self) -> &HeapDma {
        &self.dma
    }
    /// Allocates zeroed DMA memory.
    pub fn alloc(&self, len: usize) -> Result<DmaBuf, SimError> {
        self.dma.alloc(len, 64).ok_or(SimError::NoMemory)
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
