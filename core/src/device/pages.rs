//! Lending pages to firmware and taking them back (MANAGE_PAGES GIVE /
//! TAKE, [ref §7.7](crate::reference)), in either command-queue slot.

use super::{Device, DeviceError, UarMap};
use crate::cmd::queue::SlotKind;
use crate::cmd::{ops, Bar0, Clock, CmdError};
use crate::platform::DmaAllocator;

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// Gives `count` pages to firmware with MANAGE_PAGES GIVE ([ref §7.7](crate::reference)).
    pub(super) fn give_pages(
        &mut self,
        func: u16,
        count: u32,
        slot: SlotKind,
    ) -> Result<(), DeviceError> {
        if (self.pages.held() as u64 + count as u64) > self.cfg.max_fw_pages as u64 {
            return Err(DeviceError::TooManyPages {
                requested: count as i64,
            });
        }
        let mut left = count as usize;
        let mut list = [0u64; 64];
        while left > 0 {
            let n = left.min(list.len());
            let got = self
                .pages
                .take_for_fw(&self.alloc, &mut list[..n])
                .map_err(DeviceError::Pages)?;
            let res = match slot {
                SlotKind::Regular => {
                    let r = ops::manage_pages_give(&mut self.inb, func, &list[..got]);
                    self.exec(r).map(|_| ())
                }
                SlotKind::Pages => {
                    let r = ops::manage_pages_give(&mut self.pgin, func, &list[..got]);
                    self.exec_slot(SlotKind::Pages, r).map(|_| ())
                }
            };
            if let Err(e) = res {
                if !matches!(e, CmdError::Timeout { .. }) {
                    self.pages.undo(&list[..got]);
                }
                return Err(DeviceError::Cmd(e));
            }
            left -= got;
        }
        Ok(())
    }

    /// Takes up to `count` pages back (MANAGE_PAGES TAKE). Returns how many
    /// firmware returned.
    pub(super) fn take_pages(
        &mut self,
        func: u16,
        count: u32,
        slot: SlotKind,
    ) -> Result<usize, DeviceError> {
        let r = match slot {
            SlotKind::Regular => ops::manage_pages_take(&mut self.inb, func, count),
            SlotKind::Pages => ops::manage_pages_take(&mut self.pgin, func, count),
        };
        self.exec_slot(slot, r)?;
        let out = match slot {
            SlotKind::Regular => &self.outb[..r.out_len],
            SlotKind::Pages => &self.pgout[..r.out_len],
        };
        let n = ops::parse_manage_pages(out)?;
        let mut bad = None;
        for i in 0..n {
            let p = ops::manage_pages_entry(out, i);
            if let Err(e) = self.pages.returned(p) {
                bad = Some(e);
            }
        }
        if let Some(e) = bad {
            return Err(DeviceError::Pages(e));
        }
        Ok(n)
    }
}
