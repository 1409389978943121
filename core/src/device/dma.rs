//! DMA memory for queue objects: allocating rings and doorbell records,
//! freeing them, and bounding a buffer's page list to one command.

use super::{Device, DeviceError, UarMap};
use crate::cmd::queue::MAX_MSG;
use crate::cmd::{ops, Bar0, Clock};
use crate::platform::{DmaAllocator, DmaBuf};

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    pub(super) fn alloc_dma(
        &mut self,
        len: usize,
        what: &'static str,
    ) -> Result<DmaBuf, DeviceError> {
        self.alloc
            .alloc(len, 4096)
            .ok_or(DeviceError::OutOfDmaMemory { what })
    }
    pub(super) fn free_dma(&mut self, bufs: &[DmaBuf]) {
        for b in bufs {
            // SAFETY: callers pass buffers the device was never given or
            // whose object firmware destroyed.
            unsafe { self.alloc.free(*b) };
        }
    }
    pub(super) fn check_pages(npages: usize) -> Result<(), DeviceError> {
        let max = (MAX_MSG - ops::PAS_OFFSET) / 8;
        if npages > max {
            return Err(DeviceError::Limit {
                what: "queue buffer pages",
                requested: npages as u64,
                max: max as u64,
            });
        }
        Ok(())
    }
}
