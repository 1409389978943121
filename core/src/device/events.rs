//! The async event queue: creating it at bring-up and serving its page
//! requests ([`Device::serve_events`], [ref §4.6, §7.7](crate::reference)).

use super::{Device, DeviceError, Step, UarMap};
use crate::cmd::eq::{Eqe, EventQueue, ASYNC_EQ_ENTRIES, EQE_BYTES, NUM_SPARE_EQE};
use crate::cmd::queue::SlotKind;
use crate::cmd::{ops, Bar0, Clock};
use crate::platform::DmaAllocator;

/// What one [`Device::serve_events`] call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventsServed {
    /// EQEs taken from the ring (at most the EQ's size).
    pub handled: usize,
    /// The per-call bound stopped the call while the next EQE already
    /// looked valid: call again (a device flooding the EQ cannot keep one
    /// call running forever).
    pub more: bool,
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// Creates an EQ of `nent` entries (power of two) interrupting on
    /// `intr` with the event subscriptions `mask`: its ring (every owner
    /// bit 1), CREATE_EQ on the function's UAR page, the number firmware
    /// returned. The caller arms it. A failed command is
    /// [`DeviceError::Cmd`]; the ring is freed unless the command timed out
    /// (firmware may still write it then).
    pub(super) fn open_eq(
        &mut self,
        nent: u32,
        intr: u8,
        mask: u64,
        what: &'static str,
    ) -> Result<(EventQueue, B::Uar), DeviceError> {
        let bytes = nent as usize * EQE_BYTES;
        let npages = bytes.div_ceil(4096);
        Self::check_pages(npages)?;
        let ring = self.alloc_dma(npages * 4096, what)?;
        let Some(uar) = self.bar.map_uar(self.uar) else {
            self.free_dma(&[ring]);
            return Err(DeviceError::NoUar { index: self.uar });
        };
        // SAFETY: fresh ring owned by the EQ, not yet given to the device.
        let Some(mut eq) = (unsafe { EventQueue::new(ring, nent) }) else {
            self.free_dma(&[ring]);
            return Err(DeviceError::OutOfDmaMemory { what });
        };
        let p = ops::EqParams {
            log_eq_size: nent.trailing_zeros() as u8,
            uar_page: self.uar,
            intr,
            event_bitmask: mask,
            pages_iova: ring.iova,
            npages,
        };
        let r = ops::create_eq(&mut self.inb, &p);
        if let Err(e) = self.exec(r) {
            if !matches!(e, crate::cmd::CmdError::Timeout { .. }) {
                self.free_dma(&[ring]);
            }
            return Err(e.into());
        }
        eq.set_eqn(ops::parse_create_eq(&self.outb));
        Ok((eq, uar))
    }

    pub(super) fn create_async_eq(&mut self) -> Result<(), DeviceError> {
        let mask = 1u64 << crate::cmd::eq::event::PAGE_REQUEST;
        let (eq, mut uar) = match self.open_eq(ASYNC_EQ_ENTRIES, 0, mask, "async EQ") {
            Err(DeviceError::Cmd(err)) => {
                return Err(DeviceError::BringUp {
                    step: Step::AsyncEq,
                    err,
                })
            }
            r => r?,
        };
        eq.update_ci(&mut uar, true);
        self.eq = Some((eq, uar));
        Ok(())
    }

    /// Serves the async EQ: answers page requests on the page slot
    /// ([ref §7.7](crate::reference)), at most one EQ's worth of entries per call.
    ///
    /// The bound matters because the EQ ring is device-writable: a device
    /// that keeps producing EQEs (or keeps every owner bit looking valid)
    /// would otherwise keep this loop, and the command wait that calls it,
    /// spinning forever. After `nent` entries the call stops, publishes
    /// the consumer index and re-arms the EQ ([ref §4.6](crate::reference)), and reports
    /// [`EventsServed::more`] so the caller knows to call again; the
    /// remaining entries stay in the ring for the next call.
    pub fn serve_events(&mut self) -> EventsServed {
        let mut served = EventsServed::default();
        let budget = match self.eq.as_ref() {
            Some((eq, _)) => eq.nent() as usize,
            None => return served,
        };
        loop {
            let Some((eq, _)) = self.eq.as_mut() else {
                return served;
            };
            if served.handled >= budget {
                served.more = eq.peek_valid();
                break;
            }
            let Some(ev) = eq.poll() else {
                break;
            };
            served.handled += 1;
            // Publish the consumer index (no re-arm) at least every 0x80
            // EQEs while draining (ref §4.6).
            if served.handled % NUM_SPARE_EQE as usize == 0 {
                if let Some((eq, uar)) = self.eq.as_mut() {
                    eq.update_ci(uar, false);
                }
            }
            if let Eqe::PageRequest {
                function_id,
                num_pages,
            } = ev
            {
                self.page_events += 1;
                if num_pages > 0 {
                    if self
                        .give_pages(function_id, num_pages as u32, SlotKind::Pages)
                        .is_err()
                    {
                        let r = ops::manage_pages_cant_give(&mut self.pgin, function_id);
                        let _ = self.exec_slot(SlotKind::Pages, r);
                    }
                } else if num_pages < 0 {
                    let _ = self.take_pages(function_id, num_pages.unsigned_abs(), SlotKind::Pages);
                }
            }
        }
        if let Some((eq, uar)) = self.eq.as_mut() {
            eq.update_ci(uar, true);
        }
        served
    }
}
