//! The platform adapters the core's driver runs on in the simulator: the
//! emulated BAR0 ([`SimBar`]) and its UAR pages ([`SimUar`]), a DMA
//! allocator shared with the firmware model ([`SharedDma`]) and a clock
//! that never sleeps ([`FakeClock`]).

use bareverbs::cmd::{Bar0, Clock};
use bareverbs::device::{Interrupts, UarMap};
use bareverbs::platform::{DmaAllocator, DmaBuf, Uar};
use std::cell::{RefCell, RefMut};
use std::rc::Rc;
use std::sync::Arc;

use super::{FwConfig, SimFirmware, BAR0_SIZE, FIRST_UAR};
use crate::dma::HeapDma;

/// The emulated BAR0: a handle to the shared firmware model.
#[derive(Clone)]
pub struct SimBar {
    fw: Rc<RefCell<SimFirmware>>,
}

/// The firmware's HCA state, when the model is not busy.
impl std::fmt::Debug for SimBar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("SimBar");
        if let Ok(fw) = self.fw.try_borrow() {
            d.field("hca", &fw.hca);
        }
        d.finish_non_exhaustive()
    }
}

impl SimBar {
    /// A BAR over a fresh firmware model.
    pub fn new(dma: Arc<HeapDma>, cfg: FwConfig) -> Self {
        SimBar {
            fw: Rc::new(RefCell::new(SimFirmware::new(dma, cfg))),
        }
    }
    /// The firmware model (to inject faults or inspect objects). The
    /// borrow must end before the driver touches the BAR again.
    pub fn fw(&self) -> RefMut<'_, SimFirmware> {
        self.fw.borrow_mut()
    }
}

// SAFETY: every access is one whole 32-bit register operation on the model
// (one borrow each, single-threaded: SimBar is neither Send nor Sync);
// out-of-range reads return all-ones and writes are ignored.
unsafe impl Bar0 for SimBar {
    fn read32(&self, off: usize) -> u32 {
        self.fw().read_reg(off)
    }
    fn write32(&mut self, off: usize, v: u32) {
        self.fw().write_reg(off, v)
    }
}

impl UarMap for SimBar {
    type Uar = SimUar;
    fn map_uar(&mut self, index: u32) -> Option<SimUar> {
        if (index as usize + 1) * 4096 > BAR0_SIZE || index < FIRST_UAR {
            return None;
        }
        Some(SimUar {
            fw: self.fw.clone(),
            index,
        })
    }
}

/// MSI-X vectors of the simulated function (the control vector and eight
/// completion vectors).
pub const SIM_MSIX_VECTORS: u16 = 9;

/// Interrupts as the simulated device raises them: a vector fires when an
/// armed EQ naming it (`eqc.intr`) gets an EQE. The simulation runs in
/// virtual time at each doorbell, so a wait never sleeps: it posts the
/// completion events the data path raised, then reports whether the
/// vector fired (false is an immediate timeout).
impl Interrupts for SimBar {
    fn irq_vectors(&self) -> u16 {
        SIM_MSIX_VECTORS
    }
    fn enable_irq(&mut self, vector: u16) -> bool {
        if vector >= SIM_MSIX_VECTORS {
            return false;
        }
        self.fw().irq_enabled |= 1 << vector;
        true
    }
    fn wait_irq(&mut self, vector: u16, _timeout_us: u64) -> bool {
        let mut fw = self.fw();
        if vector >= SIM_MSIX_VECTORS || fw.irq_enabled & (1 << vector) == 0 {
            return false;
        }
        fw.raise_completions();
        fw.take_irq(vector)
    }
}

/// A UAR page of the emulated BAR0: stores are forwarded to the firmware
/// model (EQ doorbells) and the data-path hook.
#[derive(Clone)]
pub struct SimUar {
    fw: Rc<RefCell<SimFirmware>>,
    index: u32,
}

/// The UAR index (the firmware model is not borrowed).
impl std::fmt::Debug for SimUar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimUar")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl SimUar {
    fn fw(&self) -> RefMut<'_, SimFirmware> {
        self.fw.borrow_mut()
    }
    fn store(&mut self, offset: usize, bytes: &[u8]) {
        let index = self.index;
        self.fw().uar_store(index, offset, bytes);
    }
}

// SAFETY: every store is delivered whole and in program order to the model
// (one borrow each, single-threaded).
unsafe impl Uar for SimUar {
    fn write64(&mut self, offset: usize, bytes: [u8; 8]) {
        self.store(offset, &bytes)
    }
    fn write32(&mut self, offset: usize, bytes: [u8; 4]) {
        self.store(offset, &bytes)
    }
    fn write_bf(&mut self, offset: usize, chunk: &[u8; 64]) {
        self.store(offset, chunk)
    }
    fn flush(&mut self) {
        let index = self.index;
        self.fw().uar_flush(index);
    }
}

/// A DMA allocator sharing one [`HeapDma`] with the firmware model.
#[derive(Clone, Debug)]
pub struct SharedDma(pub Arc<HeapDma>);

// SAFETY: delegates to HeapDma, which upholds the DmaAllocator contract.
unsafe impl DmaAllocator for SharedDma {
    fn alloc(&self, len: usize, align: usize) -> Option<DmaBuf> {
        self.0.alloc(len, align)
    }
    unsafe fn free(&self, buf: DmaBuf) {
        // SAFETY: forwarded caller contract.
        unsafe { self.0.free(buf) }
    }
}

/// A fake clock: `delay_us` advances time, nothing sleeps.
#[derive(Clone, Debug, Default)]
pub struct FakeClock {
    /// Current time in microseconds.
    pub now: u64,
    /// Total delay requested.
    pub delays: u64,
}

impl Clock for FakeClock {
    fn now_us(&self) -> u64 {
        self.now
    }
    fn delay_us(&mut self, us: u32) {
        self.now += us as u64;
        self.delays += 1;
    }
}
