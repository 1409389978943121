//! The command queue in driver memory ([ref §7.3–§7.4](bareverbs::reference)):
//! entry addresses, the ownership/delivery byte, and the input and output
//! mailbox chains.

use super::SimFirmware;
use bareverbs::cmd::bits::{get32, get64};
use bareverbs::cmd::queue::{
    layout, mailbox, status_own_byte, MAILBOX_BYTES, MAILBOX_DATA, MAILBOX_STRIDE,
};
use bareverbs::cmd::DeliveryStatus;

/// Largest message the model accepts (1 MiB); longer is a length error.
pub(super) const MAX_FW_MSG: usize = 1 << 20;

/// Low address bits a mailbox block pointer must have clear (blocks are
/// [`MAILBOX_STRIDE`]-aligned).
const MAILBOX_ALIGN_MASK: u64 = MAILBOX_STRIDE as u64 - 1;

impl SimFirmware {
    /// Device address of command entry `slot`; `None` when the driver's
    /// queue address plus the slot offset does not fit in 64 bits (such a
    /// queue is not mapped).
    pub(super) fn entry_addr(&self, slot: u8) -> Option<u64> {
        (((self.cmdq_h as u64) << 32) | self.cmdq_l as u64)
            .checked_add((slot as u64) << self.cfg.log_cmdq_stride)
    }

    /// Hands entry `slot` back to the driver with delivery status
    /// `delivery`.
    pub(super) fn finish(&mut self, slot: u8, delivery: u8) {
        if let Some(a) = self
            .entry_addr(slot)
            .and_then(|b| b.checked_add(layout::STATUS_OWN as u64))
        {
            self.wr(a, &[status_own_byte(delivery)]);
        }
    }

    /// Reads a mailbox chain of `len` data bytes starting at `ptr`.
    pub(super) fn read_chain(&self, mut ptr: u64, len: usize, out: &mut Vec<u8>) -> Result<(), u8> {
        let mut i = 0u32;
        let mut left = len;
        while left > 0 {
            if ptr & MAILBOX_ALIGN_MASK != 0 {
                return Err(DeliveryStatus::InPtrAlign.code());
            }
            let b = self
                .rd(ptr, MAILBOX_BYTES)
                .ok_or(DeliveryStatus::BadCmdDescriptor.code())?;
            if get32(&b, mailbox::BLOCK_NUM) != i {
                return Err(DeliveryStatus::BadBlockNumber.code());
            }
            let take = left.min(MAILBOX_DATA);
            out.extend_from_slice(&b[..take]);
            left -= take;
            ptr = get64(&b, mailbox::NEXT);
            i += 1;
        }
        Ok(())
    }

    /// Writes `data` into the output mailbox chain starting at `ptr`.
    pub(super) fn write_chain(&mut self, mut ptr: u64, data: &[u8]) -> Result<(), u8> {
        for (i, chunk) in data.chunks(MAILBOX_DATA).enumerate() {
            let i = i as u32;
            if ptr & MAILBOX_ALIGN_MASK != 0 {
                return Err(DeliveryStatus::OutPtrAlign.code());
            }
            let b = self
                .rd(ptr, MAILBOX_BYTES)
                .ok_or(DeliveryStatus::BadCmdDescriptor.code())?;
            if get32(&b, mailbox::BLOCK_NUM) != i {
                return Err(DeliveryStatus::BadBlockNumber.code());
            }
            self.wr(ptr, chunk);
            if std::mem::take(&mut self.faults.corrupt_out_block_num) {
                self.wr(ptr + mailbox::BLOCK_NUM as u64, &(i + 7).to_be_bytes());
            }
            ptr = get64(&b, mailbox::NEXT);
        }
        Ok(())
    }
}
