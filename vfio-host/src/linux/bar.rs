//! BAR0 and UAR mapping: the mmapped BAR0 region ([`BarMap`]), the core's
//! [`Bar0`] / [`UarMap`] / [`Interrupts`] on it ([`VfioBar0`]) and one UAR
//! page ([`VfioUar`]). [ref §4.2](bareverbs::reference).

use super::irq::{lock, wait_eventfd, Msix, SharedMsix};
use bareverbs::cmd::Bar0;
use bareverbs::device::{Interrupts, UarMap};
use bareverbs::platform::{mmio_flush_writes, Uar};
use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};
use vfio_ioctls::VfioDevice;

/// The mmapped BAR0 (unmapped on drop).
pub(super) struct BarMap {
    pub(super) ptr: NonNull<u8>,
    pub(super) len: usize,
    /// Keeps the device (and so the region) open while mapped.
    pub(super) _device: Arc<VfioDevice>,
}

// SAFETY: the mapping is MMIO reached only through volatile raw-pointer
// accesses; moving or sharing the description between threads is sound
// (callers serialise command-queue use through `&mut`).
unsafe impl Send for BarMap {}
// SAFETY: as above.
unsafe impl Sync for BarMap {}

/// Where BAR0 is mapped and how long it is (never its contents).
impl fmt::Debug for BarMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BarMap")
            .field("ptr", &self.ptr)
            .field("len", &format_args!("{:#x}", self.len))
            .finish_non_exhaustive()
    }
}

impl Drop for BarMap {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from a successful mmap and nothing uses the
        // mapping after the last Arc is dropped.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// BAR0 of a VFIO-mapped ConnectX: the core's [`Bar0`], [`UarMap`] and
/// [`Interrupts`] (MSI-X through VFIO eventfds). Clones, and every BAR0
/// handle of the same [`super::VfioNic`], share one set of MSI-X vectors.
#[derive(Clone)]
pub struct VfioBar0 {
    pub(super) map: Arc<BarMap>,
    /// The function's MSI-X vectors and their eventfds (shared by clones).
    pub(super) irqs: Arc<Mutex<Msix>>,
    /// Give UARs BlueFlame-capable stores (`write_bf` as eight 8-byte
    /// stores). Off by default: VFIO maps BARs uncached, so BlueFlame
    /// copies get no write-combining; the 8-byte doorbell is the default.
    pub blueflame: bool,
}

/// The mapping (address and length, never device memory), the MSI-X
/// vectors (without waiting for their lock) and the doorbell mode.
impl fmt::Debug for VfioBar0 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VfioBar0")
            .field("map", &*self.map)
            .field("irqs", &SharedMsix(&self.irqs))
            .field("blueflame", &self.blueflame)
            .finish()
    }
}

impl VfioBar0 {
    /// BAR0 length.
    pub fn len(&self) -> usize {
        self.map.len
    }
    /// Never empty once mapped.
    pub fn is_empty(&self) -> bool {
        self.map.len == 0
    }
}

// SAFETY: each call is one aligned 4-byte volatile access inside the
// mapping; out-of-range offsets are refused (reads return all-ones).
unsafe impl Bar0 for VfioBar0 {
    fn read32(&self, off: usize) -> u32 {
        if !off.is_multiple_of(4) || off.checked_add(4).is_none_or(|e| e > self.map.len) {
            return 0xffff_ffff;
        }
        // SAFETY: in range and 4-aligned (BAR base is page aligned).
        let v = unsafe { std::ptr::read_volatile(self.map.ptr.as_ptr().add(off).cast::<u32>()) };
        u32::from_be(v)
    }
    fn write32(&mut self, off: usize, v: u32) {
        if !off.is_multiple_of(4) || off.checked_add(4).is_none_or(|e| e > self.map.len) {
            return;
        }
        // SAFETY: as in read32.
        unsafe {
            std::ptr::write_volatile(self.map.ptr.as_ptr().add(off).cast::<u32>(), v.to_be())
        };
    }
}

impl UarMap for VfioBar0 {
    type Uar = VfioUar;
    fn map_uar(&mut self, index: u32) -> Option<VfioUar> {
        let base = (index as usize).checked_mul(4096)?;
        if base.checked_add(4096)? > self.map.len {
            return None;
        }
        Some(VfioUar {
            map: self.map.clone(),
            base,
            blueflame: self.blueflame,
        })
    }
}

/// MSI-X through VFIO (docs/two-hosts-facts.md §5.7): `enable_irq`
/// attaches an eventfd to the vector (the first attach covers every vector,
/// −1 for the others), `wait_irq` polls it and reads its counter.
impl Interrupts for VfioBar0 {
    fn irq_vectors(&self) -> u16 {
        lock(&self.irqs).vectors()
    }
    fn enable_irq(&mut self, vector: u16) -> bool {
        lock(&self.irqs).enable(vector)
    }
    fn wait_irq(&mut self, vector: u16, timeout_us: u64) -> bool {
        // Take the eventfd out and wait without the lock, so other clones
        // can enable or wait on their vectors meanwhile.
        let Some(efd) = lock(&self.irqs).eventfd(vector) else {
            return false;
        };
        wait_eventfd(&efd, timeout_us)
    }
}

/// One 4 KiB UAR page of BAR0 ([ref §4.2](bareverbs::reference): BAR0 + index · 4 KiB).
#[derive(Clone)]
pub struct VfioUar {
    map: Arc<BarMap>,
    base: usize,
    blueflame: bool,
}

/// The UAR index, its offset in BAR0 and the doorbell mode (never device
/// memory).
impl fmt::Debug for VfioUar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VfioUar")
            .field("index", &(self.base / 4096))
            .field("bar0_offset", &format_args!("{:#x}", self.base))
            .field("blueflame", &self.blueflame)
            .field("map", &*self.map)
            .finish()
    }
}

impl VfioUar {
    fn at(&self, offset: usize, width: usize) -> Option<*mut u8> {
        if !offset.is_multiple_of(width) || offset + width > 4096 {
            return None;
        }
        // SAFETY: base + 4096 <= len (checked in map_uar), offset + width <= 4096.
        Some(unsafe { self.map.ptr.as_ptr().add(self.base + offset) })
    }
}

// SAFETY: write64 is one aligned 8-byte volatile store (one TLP on x86_64
// with a 64-bit mov; an open item to check on hardware, docs/architecture.md
// §8); write32 one 4-byte store; write_bf eight ordered 8-byte stores.
// Out-of-page offsets are ignored.
unsafe impl Uar for VfioUar {
    fn write64(&mut self, offset: usize, bytes: [u8; 8]) {
        if let Some(p) = self.at(offset, 8) {
            // SAFETY: aligned, inside the UAR page.
            unsafe { std::ptr::write_volatile(p.cast::<u64>(), u64::from_ne_bytes(bytes)) };
        }
    }
    fn write32(&mut self, offset: usize, bytes: [u8; 4]) {
        if let Some(p) = self.at(offset, 4) {
            // SAFETY: aligned, inside the UAR page.
            unsafe { std::ptr::write_volatile(p.cast::<u32>(), u32::from_ne_bytes(bytes)) };
        }
    }
    fn write_bf(&mut self, offset: usize, chunk: &[u8; 64]) {
        if !self.blueflame {
            // Doorbell mode: only the first 8 bytes (the ctrl segment head).
            let mut b = [0u8; 8];
            b.copy_from_slice(&chunk[..8]);
            return self.write64(offset, b);
        }
        for i in 0..8 {
            let mut b = [0u8; 8];
            b.copy_from_slice(&chunk[i * 8..i * 8 + 8]);
            self.write64(offset + i * 8, b);
        }
    }
    fn flush(&mut self) {
        mmio_flush_writes();
    }
}
