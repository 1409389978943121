//! The Linux VFIO implementation of the platform traits ([ref §4.2, §7.2](bareverbs::reference)).

use crate::bdf::Bdf;
use crate::error::VfioHostError;
use crate::iova::IovaAllocator;
use crate::sysfs::{preflight, PciInfo, Roots};
use bareverbs::cmd::{Bar0, Clock};
use bareverbs::device::{DevInfo, Device, DeviceConfig, UarMap};
use bareverbs::platform::{mmio_flush_writes, DmaAllocator, DmaBuf, Uar};
use std::collections::HashMap;
use std::io;
use std::os::unix::io::AsRawFd;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use vfio_bindings::bindings::vfio::{
    VFIO_PCI_BAR0_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX, VFIO_REGION_INFO_FLAG_MMAP,
};
use vfio_ioctls::{VfioContainer, VfioDevice, VfioError, VfioOps};

/// PCI device id offset in config space (PCI spec type 0 header).
const PCI_DEVICE_ID: u64 = 0x02;
/// PCI command register offset in config space.
const PCI_COMMAND: u64 = 0x04;
/// PCI revision id offset in config space.
const PCI_REVISION_ID: u64 = 0x08;
/// Memory space enable | bus master enable ([ref §7.2](bareverbs::reference) step 5: bits 0x6).
const PCI_COMMAND_MEM_MASTER: u16 = 0x6;
/// 2 MiB huge page.
pub const HUGE_PAGE: usize = 2 << 20;
/// Allocations larger than this try huge pages first.
pub const HUGE_THRESHOLD: usize = 64 << 10;
/// IOVA window: 4 GiB .. 4 GiB + 1 TiB.
pub const IOVA_BASE: u64 = 1 << 32;
/// IOVA window size.
pub const IOVA_SPAN: u64 = 1 << 40;

fn vfio_err(what: &'static str, e: VfioError) -> VfioHostError {
    let text = e.to_string();
    match &e {
        VfioError::OpenContainer(io) if io.kind() == io::ErrorKind::PermissionDenied => {
            VfioHostError::Permission {
                path: "/dev/vfio/vfio".into(),
            }
        }
        VfioError::OpenContainer(io) if io.kind() == io::ErrorKind::NotFound => {
            VfioHostError::NoVfio {
                path: "/dev/vfio/vfio".into(),
            }
        }
        VfioError::OpenGroup(io, g) if io.kind() == io::ErrorKind::PermissionDenied => {
            VfioHostError::Permission {
                path: format!("/dev/vfio/{g}").into(),
            }
        }
        VfioError::GroupViable => VfioHostError::GroupNotViable {
            group: 0,
            others: Vec::new(),
        },
        _ => VfioHostError::Vfio { what, detail: text },
    }
}

/// The mmapped BAR0 (unmapped on drop).
struct BarMap {
    ptr: NonNull<u8>,
    len: usize,
    _device: Arc<VfioDevice>,
}

// SAFETY: the mapping is MMIO reached only through volatile raw-pointer
// accesses; moving or sharing the description between threads is sound
// (callers serialise command-queue use through `&mut`).
unsafe impl Send for BarMap {}
// SAFETY: as above.
unsafe impl Sync for BarMap {}

impl Drop for BarMap {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from a successful mmap and nothing uses the
        // mapping after the last Arc is dropped.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// BAR0 of a VFIO-mapped ConnectX: the core's [`Bar0`] and [`UarMap`].
#[derive(Clone)]
pub struct VfioBar0 {
    map: Arc<BarMap>,
    /// Give UARs BlueFlame-capable stores (`write_bf` as eight 8-byte
    /// stores). Off by default: VFIO maps BARs uncached, so BlueFlame
    /// copies get no write-combining; the 8-byte doorbell is the default.
    pub blueflame: bool,
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

/// One 4 KiB UAR page of BAR0 ([ref §4.2](bareverbs::reference): BAR0 + index · 4 KiB).
#[derive(Clone)]
pub struct VfioUar {
    map: Arc<BarMap>,
    base: usize,
    blueflame: bool,
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

#[derive(Debug)]
struct Mapping {
    len: usize,
    iova: u64,
}

struct DmaState {
    iova: IovaAllocator,
    live: HashMap<usize, Mapping>,
}

/// The IOMMU side of a VFIO container as DMA mapping uses it: map and unmap
/// IOVA ranges. Implemented by [`VfioContainer`]; a trait so that the
/// one-allocator-per-container and leak-on-drop rules of [`VfioDma`] are
/// unit-tested without a device.
pub trait IommuMap: Send + Sync {
    /// Maps `[iova, iova + len)` to the host memory at `host`.
    ///
    /// # Safety
    /// `host .. host + len` must stay mapped in this process, and must not be
    /// reused for anything else, until [`IommuMap::unmap`] of the same range
    /// succeeds: the device may read and write it at any time.
    unsafe fn map(&self, iova: u64, len: usize, host: *mut u8) -> Result<(), VfioError>;
    /// Unmaps `[iova, iova + len)`; after `Ok` the device can no longer reach it.
    fn unmap(&self, iova: u64, len: usize) -> Result<(), VfioError>;
}

impl IommuMap for VfioContainer {
    unsafe fn map(&self, iova: u64, len: usize, host: *mut u8) -> Result<(), VfioError> {
        // SAFETY: forwarded contract (see `IommuMap::map`).
        unsafe { self.vfio_dma_map(iova, len, host) }
    }
    fn unmap(&self, iova: u64, len: usize) -> Result<(), VfioError> {
        self.vfio_dma_unmap(iova, len)
    }
}

/// The DMA state of one container: its IOMMU, its single IOVA allocator and
/// the table of live mappings.
struct DmaDomain<M: IommuMap> {
    iommu: Arc<M>,
    state: Mutex<DmaState>,
}

impl<M: IommuMap> Drop for DmaDomain<M> {
    /// The last [`VfioDma`] handle of a container is gone. Buffers still in
    /// the live table were never given back with `free`, so a queue or
    /// object may still own them and the device may still DMA into them:
    /// they are leaked (neither IOMMU-unmapped nor `munmap`ped), never
    /// returned to the allocator or the system.
    fn drop(&mut self) {
        if let Ok(st) = self.state.get_mut() {
            st.live.clear();
        }
    }
}

/// IOMMU-mapped DMA memory of one VFIO container: anonymous mappings (2 MiB
/// huge pages for allocations above [`HUGE_THRESHOLD`], falling back to 4 KiB
/// pages), marked `MADV_DONTFORK` ([`map_dma_pages`]), IOVAs from the
/// container's single [`IovaAllocator`], mapped with `vfio_dma_map`.
///
/// A `VfioDma` is a cheap handle: [`VfioNic::dma`] and `clone` return handles
/// to the same container state, so every allocation mapped into a container
/// comes from one IOVA allocator and no two live buffers share an IOVA.
///
/// Lifetime rule: a buffer stays allocated and mapped until it is passed to
/// [`DmaAllocator::free`] (which IOMMU-unmaps it before `munmap`). Dropping
/// handles, even the last one, never unmaps anything: buffers still live then
/// are leaked, because objects the device is still using may own them.
pub struct VfioDma<M: IommuMap = VfioContainer> {
    domain: Arc<DmaDomain<M>>,
}

impl<M: IommuMap> Clone for VfioDma<M> {
    fn clone(&self) -> Self {
        VfioDma {
            domain: self.domain.clone(),
        }
    }
}

impl<M: IommuMap> VfioDma<M> {
    /// The DMA state of a container whose IOMMU is `iommu`, with the default
    /// IOVA window. Create it once per container and clone the handle.
    pub fn for_container(iommu: Arc<M>) -> Self {
        VfioDma {
            domain: Arc::new(DmaDomain {
                iommu,
                state: Mutex::new(DmaState {
                    iova: IovaAllocator::new(IOVA_BASE, IOVA_BASE + IOVA_SPAN),
                    live: HashMap::new(),
                }),
            }),
        }
    }

    /// Buffers allocated and not yet freed, over every handle of the container.
    pub fn live_buffers(&self) -> usize {
        self.domain.state.lock().map_or(0, |s| s.live.len())
    }

    /// Whether `other` is a handle to the same container state.
    pub fn same_container(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.domain, &other.domain)
    }
}

/// Maps `len` bytes (a multiple of the page size) of fresh anonymous,
/// zero-filled, pre-faulted memory for DMA (2 MiB huge pages when `huge`) and
/// marks it `MADV_DONTFORK`, as rdma-core's `ibv_dontfork_range` does for
/// every registered or queue buffer: a `fork()` must not turn the pinned,
/// IOMMU-mapped pages copy-on-write, or the parent would write to copies the
/// device never sees. Returns `None` (nothing left mapped) if either step
/// fails. The caller owns the mapping and must `munmap` it.
pub fn map_dma_pages(len: usize, huge: bool) -> Option<NonNull<u8>> {
    let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE;
    if huge {
        flags |= libc::MAP_HUGETLB | (21 << libc::MAP_HUGE_SHIFT);
    }
    // SAFETY: anonymous mapping, no file, kernel chooses the address.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: `p .. p + len` is the mapping just created, owned here.
    if unsafe { libc::madvise(p, len, libc::MADV_DONTFORK) } != 0 {
        // SAFETY: as above; nothing else knows the mapping.
        unsafe { libc::munmap(p, len) };
        return None;
    }
    NonNull::new(p.cast())
}

// SAFETY: memory comes from fresh anonymous mmaps (zeroed), page aligned
// (huge-page aligned for align > 4 KiB), exclusively owned until `free`, and
// IOMMU-mapped at an IOVA from the container's single allocator, so the
// device reaches byte i at iova + i and no other live buffer of the
// container shares that IOVA.
unsafe impl<M: IommuMap> DmaAllocator for VfioDma<M> {
    fn alloc(&self, len: usize, align: usize) -> Option<DmaBuf> {
        if len == 0 || align > HUGE_PAGE || !align.is_power_of_two() {
            return None;
        }
        let want_huge = len > HUGE_THRESHOLD || align > 4096;
        let (ptr, mapped) = match want_huge
            .then(|| {
                let l = len.checked_next_multiple_of(HUGE_PAGE)?;
                map_dma_pages(l, true).map(|p| (p, l))
            })
            .flatten()
        {
            Some(x) => x,
            None if align <= 4096 => {
                let l = len.checked_next_multiple_of(4096)?;
                (map_dma_pages(l, false)?, l)
            }
            None => return None,
        };
        let d = &*self.domain;
        let Ok(mut st) = d.state.lock() else {
            // SAFETY: fresh mapping of `mapped` bytes, never shared.
            unsafe { libc::munmap(ptr.as_ptr().cast(), mapped) };
            return None;
        };
        let Ok(iova) = st.iova.alloc(mapped as u64, align.max(4096) as u64) else {
            // SAFETY: fresh mapping of `mapped` bytes, never shared.
            unsafe { libc::munmap(ptr.as_ptr().cast(), mapped) };
            return None;
        };
        // SAFETY: the range stays mapped until `free` unmaps it from the
        // IOMMU before munmap, or forever if it is leaked; the core touches
        // it only through raw pointers (no references).
        if unsafe { d.iommu.map(iova, mapped, ptr.as_ptr()) }.is_err() {
            let _ = st.iova.free(iova, mapped as u64);
            // SAFETY: not mapped into the IOMMU; never shared.
            unsafe { libc::munmap(ptr.as_ptr().cast(), mapped) };
            return None;
        }
        st.live
            .insert(ptr.as_ptr() as usize, Mapping { len: mapped, iova });
        Some(DmaBuf {
            cpu: ptr,
            iova,
            len,
        })
    }

    unsafe fn free(&self, buf: DmaBuf) {
        let d = &*self.domain;
        let Ok(mut st) = d.state.lock() else {
            return;
        };
        let Some(m) = st.live.remove(&(buf.cpu.as_ptr() as usize)) else {
            return;
        };
        if d.iommu.unmap(m.iova, m.len).is_ok() {
            let _ = st.iova.free(m.iova, m.len as u64);
            // SAFETY: unmapped from the IOMMU; caller guarantees no use.
            unsafe { libc::munmap(buf.cpu.as_ptr().cast(), m.len) };
        }
        // If the IOMMU unmap failed the device may still reach the pages:
        // leak them (and their IOVA) rather than reuse them.
    }
}

/// A monotonic clock; delays of 1 ms or more sleep, shorter ones spin.
#[derive(Debug)]
pub struct StdClock {
    start: Instant,
}

impl Default for StdClock {
    fn default() -> Self {
        StdClock {
            start: Instant::now(),
        }
    }
}

impl Clock for StdClock {
    fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }
    fn delay_us(&mut self, us: u32) {
        if us >= 1000 {
            std::thread::sleep(Duration::from_micros(us as u64));
        } else {
            let t = Instant::now();
            while t.elapsed() < Duration::from_micros(us as u64) {
                std::hint::spin_loop();
            }
        }
    }
}

/// An opened ConnectX function: VFIO container, device, BAR0 mapping.
pub struct VfioNic {
    /// What sysfs said about it.
    pub info: PciInfo,
    /// The container's one DMA state (IOVA allocator, live mappings).
    dma: VfioDma,
    device: Arc<VfioDevice>,
    bar0: Arc<BarMap>,
}

impl VfioNic {
    /// Opens `bdf` (e.g. `"0000:3b:00.0"`): pre-flight checks, VFIO
    /// container and device, BAR0 mapping, bus mastering.
    pub fn open(bdf: &str) -> Result<VfioNic, VfioHostError> {
        Self::open_with(bdf.parse()?, &Roots::default())
    }

    /// [`VfioNic::open`] with explicit sysfs/dev roots for the pre-flight.
    pub fn open_with(bdf: Bdf, roots: &Roots) -> Result<VfioNic, VfioHostError> {
        let info = preflight(roots, bdf)?;
        let container =
            Arc::new(VfioContainer::new(None).map_err(|e| vfio_err("opening the container", e))?);
        let ops: Arc<dyn VfioOps> = container.clone();
        let device = Arc::new(
            VfioDevice::new(&info.sysfs_path, ops, false)
                .map_err(|e| vfio_err("opening the device", e))?,
        );
        let bar0 = Self::map_bar0(&device, bdf)?;
        let nic = VfioNic {
            info,
            dma: VfioDma::for_container(container),
            device,
            bar0,
        };
        nic.enable_bus_master()?;
        Ok(nic)
    }

    fn map_bar0(device: &Arc<VfioDevice>, bdf: Bdf) -> Result<Arc<BarMap>, VfioHostError> {
        let idx = VFIO_PCI_BAR0_REGION_INDEX;
        let flags = device.get_region_flags(idx);
        let size = device.get_region_size(idx) as usize;
        let offset = device.get_region_offset(idx);
        let bad = |detail: String| VfioHostError::BarNotMappable {
            bdf: bdf.to_string(),
            detail,
        };
        if flags & VFIO_REGION_INFO_FLAG_MMAP == 0 {
            return Err(bad(format!(
                "region flags 0x{flags:x} lack VFIO_REGION_INFO_FLAG_MMAP"
            )));
        }
        if size < 0x2010 {
            return Err(bad(format!("BAR0 is only {size} bytes")));
        }
        // SAFETY: maps the device fd's BAR0 region (offset/size from VFIO);
        // the result is MMIO, accessed only with volatile raw pointers.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                device.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(bad(format!("mmap failed: {}", io::Error::last_os_error())));
        }
        let ptr = NonNull::new(p.cast()).ok_or_else(|| bad("mmap returned null".into()))?;
        Ok(Arc::new(BarMap {
            ptr,
            len: size,
            _device: device.clone(),
        }))
    }

    /// Sets memory-space and bus-master enable in the PCI command register
    /// ([ref §7.2](bareverbs::reference) step 5) through the config-space region.
    pub fn enable_bus_master(&self) -> Result<(), VfioHostError> {
        let idx = VFIO_PCI_CONFIG_REGION_INDEX;
        let mut b = [0u8; 2];
        self.device.region_read(idx, &mut b, PCI_COMMAND);
        let cmd = u16::from_le_bytes(b) | PCI_COMMAND_MEM_MASTER;
        self.device
            .region_write(idx, &cmd.to_le_bytes(), PCI_COMMAND);
        self.device.region_read(idx, &mut b, PCI_COMMAND);
        if u16::from_le_bytes(b) & PCI_COMMAND_MEM_MASTER != PCI_COMMAND_MEM_MASTER {
            return Err(VfioHostError::Vfio {
                what: "enabling bus mastering",
                detail: format!("PCI command register reads 0x{:04x}", u16::from_le_bytes(b)),
            });
        }
        Ok(())
    }

    /// The PCI device id (config offset 0x02) and revision id (0x08),
    /// which the kernel reports as `vendor_part_id` and `hw_ver`.
    pub fn pci_identity(&self) -> (u16, u8) {
        let idx = VFIO_PCI_CONFIG_REGION_INDEX;
        let mut id = [0u8; 2];
        self.device.region_read(idx, &mut id, PCI_DEVICE_ID);
        let mut rev = [0u8; 1];
        self.device.region_read(idx, &mut rev, PCI_REVISION_ID);
        (u16::from_le_bytes(id), rev[0])
    }

    /// BAR0 with 8-byte doorbells (the VFIO default).
    pub fn bar0(&self) -> VfioBar0 {
        VfioBar0 {
            map: self.bar0.clone(),
            blueflame: false,
        }
    }

    /// A handle to the DMA allocator of this device's IOMMU container: every
    /// call returns a handle to the same allocator (see [`VfioDma`]).
    pub fn dma(&self) -> VfioDma {
        self.dma.clone()
    }
}

/// The device type VFIO runs the core's bring-up on.
pub type VfioMlx5 = Device<VfioBar0, StdClock, VfioDma>;

/// Opens `bdf` and runs the core's bring-up (the same code the simulator
/// tests). The returned device keeps the VFIO mappings alive.
pub fn bring_up_vfio(bdf: &str, cfg: DeviceConfig) -> Result<(VfioNic, VfioMlx5), VfioHostError> {
    let nic = VfioNic::open(bdf)?;
    let d = Device::bring_up(nic.bar0(), StdClock::default(), nic.dma(), cfg)?;
    Ok((nic, d))
}

/// `bareverbs devinfo` on real hardware: bring-up, QUERY_HCA_CAP,
/// QUERY_VPORT_STATE, teardown.
pub fn devinfo_vfio(bdf: &str) -> Result<DevInfo, VfioHostError> {
    let (nic, mut d) = bring_up_vfio(bdf, DeviceConfig::default())?;
    let info = d.devinfo();
    let (rep, ..) = d.teardown();
    let mut info = info?;
    let (part, rev) = nic.pci_identity();
    info.vendor_part_id = Some(part);
    info.hw_ver = Some(rev);
    if let Some(e) = rep.first_error {
        return Err(VfioHostError::Device(bareverbs::device::DeviceError::Cmd(
            e,
        )));
    }
    Ok(info)
}

/// The loopback self-test on real hardware: bring-up, then
/// [`Device::loopback_selftest`] (WRITE, SEND/RECV, READ between two RC
/// QPs looped back on the port, bytes verified), then teardown.
pub fn selftest_vfio(
    bdf: &str,
    opts: bareverbs::selftest::SelfTestOptions,
) -> Result<bareverbs::selftest::SelfTestReport, VfioHostError> {
    let (_nic, mut d) = bring_up_vfio(bdf, DeviceConfig::default())?;
    let r = d.loopback_selftest(opts);
    let (rep, ..) = d.teardown();
    let r = r.map_err(VfioHostError::SelfTest)?;
    if let Some(e) = rep.first_error {
        return Err(VfioHostError::Device(bareverbs::device::DeviceError::Cmd(
            e,
        )));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An IOMMU that records what it was asked to do.
    #[derive(Default)]
    struct FakeIommu {
        maps: Mutex<Vec<(u64, usize)>>,
        unmaps: AtomicUsize,
    }

    impl IommuMap for FakeIommu {
        unsafe fn map(&self, iova: u64, len: usize, _host: *mut u8) -> Result<(), VfioError> {
            self.maps.lock().unwrap().push((iova, len));
            Ok(())
        }
        fn unmap(&self, _iova: u64, _len: usize) -> Result<(), VfioError> {
            self.unmaps.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    /// The `VmFlags` line of the `/proc/self/smaps` entry starting at `addr`.
    fn vm_flags(addr: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            // Entry headers start with `start-end`; field lines with `Name:`.
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some(start) = first
                .split_once('-')
                .and_then(|(s, _)| usize::from_str_radix(s, 16).ok())
            {
                inside = start == addr;
            } else if inside && line.starts_with("VmFlags:") {
                return line.to_string();
            }
        }
        panic!("no smaps entry at {addr:#x}");
    }

    #[test]
    fn dma_pages_are_dontfork() {
        let len = 3 * 4096;
        let p = map_dma_pages(len, false).expect("anonymous mapping");
        let flags = vm_flags(p.as_ptr() as usize);
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(p.as_ptr().cast(), len) };
        assert!(
            flags.split_whitespace().any(|f| f == "dc"),
            "MADV_DONTFORK missing: {flags}"
        );
    }

    #[test]
    fn allocator_buffers_are_dontfork() {
        let dma = VfioDma::for_container(Arc::new(FakeIommu::default()));
        let b = dma.alloc(4096, 4096).unwrap();
        let flags = vm_flags(b.cpu.as_ptr() as usize);
        // SAFETY: allocated above, never handed to anything.
        unsafe { dma.free(b) };
        assert!(flags.split_whitespace().any(|f| f == "dc"), "{flags}");
    }

    #[test]
    fn handles_of_one_container_share_one_iova_allocator() {
        let iommu = Arc::new(FakeIommu::default());
        // As `VfioNic::dma()` hands them out: clones of the container's state.
        let nic_dma = VfioDma::for_container(iommu.clone());
        let a = nic_dma.clone();
        let b = nic_dma.clone();
        assert!(a.same_container(&b));
        let mut bufs = Vec::new();
        for i in 0..24 {
            let h = if i % 2 == 0 { &a } else { &b };
            let len = 4096 * (1 + i % 5);
            bufs.push((i % 2, h.alloc(len, 4096).unwrap()));
        }
        let maps = iommu.maps.lock().unwrap().clone();
        assert_eq!(maps.len(), 24);
        for (i, &(s, l)) in maps.iter().enumerate() {
            for &(t, m) in &maps[i + 1..] {
                assert!(
                    s + l as u64 <= t || t + m as u64 <= s,
                    "IOVA ranges {s:#x}+{l:#x} and {t:#x}+{m:#x} overlap"
                );
            }
        }
        assert_eq!(a.live_buffers(), 24);
        // Freed through either handle, an IOVA is reused only after its free.
        let (_, first) = bufs.remove(0);
        // SAFETY: allocated above, never handed to anything.
        unsafe { b.free(first) };
        assert_eq!(a.live_buffers(), 23);
        assert_eq!(iommu.unmaps.load(Ordering::SeqCst), 1);
        for (k, buf) in bufs {
            // SAFETY: as above.
            unsafe {
                if k == 0 {
                    a.free(buf)
                } else {
                    b.free(buf)
                }
            };
        }
        assert_eq!(nic_dma.live_buffers(), 0);
    }

    #[test]
    fn dropping_the_last_handle_leaks_live_buffers() {
        let iommu = Arc::new(FakeIommu::default());
        let dma = VfioDma::for_container(iommu.clone());
        let buf = dma.alloc(8192, 4096).unwrap();
        let p = buf.cpu.as_ptr();
        // SAFETY: live, exclusively owned DMA memory; raw-pointer write.
        unsafe { p.add(100).write_volatile(0x5a) };
        drop(dma);
        assert_eq!(
            iommu.unmaps.load(Ordering::SeqCst),
            0,
            "a live buffer was IOMMU-unmapped when the allocator went away"
        );
        // The pages are still mapped (leaked, not munmapped): still readable.
        // SAFETY: the leaked mapping is never unmapped.
        assert_eq!(unsafe { p.add(100).read_volatile() }, 0x5a);
        assert!(vm_flags(p as usize).contains("dc"));
    }
}
