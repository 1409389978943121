//! Opening a ConnectX function ([`VfioNic`]): pre-flight, VFIO container
//! and device, BAR0 mapping, PCI command and identity registers, and the
//! VFIO error mapping that opening uses.

use super::bar::{BarMap, VfioBar0};
use super::dma::VfioDma;
use super::irq::{Msix, SharedMsix};
use crate::bdf::Bdf;
use crate::error::VfioHostError;
use crate::sysfs::{preflight, PciInfo, Roots};
use std::fmt;
use std::io;
use std::os::unix::io::AsRawFd;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};
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
        _ => VfioHostError::Vfio {
            what,
            detail: text,
            source: Some(Box::new(e)),
        },
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
    /// MSI-X vectors, shared by every BAR0 handle.
    irqs: Arc<Mutex<Msix>>,
}

/// What sysfs said, the device fd, BAR0's mapping (never its contents),
/// the MSI-X vectors and the DMA state (neither waits for its lock).
impl fmt::Debug for VfioNic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VfioNic")
            .field("info", &self.info)
            .field("device_fd", &self.device.as_raw_fd())
            .field("bar0", &*self.bar0)
            .field("irqs", &SharedMsix(&self.irqs))
            .field("dma", &self.dma)
            .finish()
    }
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
        let irqs = Arc::new(Mutex::new(Msix::for_device(&device)));
        let nic = VfioNic {
            info,
            dma: VfioDma::for_container(container),
            device,
            bar0,
            irqs,
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
                source: None,
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

    /// BAR0 with 8-byte doorbells (the VFIO default). Every handle shares
    /// the function's MSI-X vectors ([`bareverbs::device::Interrupts`]).
    pub fn bar0(&self) -> VfioBar0 {
        VfioBar0 {
            map: self.bar0.clone(),
            irqs: self.irqs.clone(),
            blueflame: false,
        }
    }

    /// A handle to the DMA allocator of this device's IOMMU container: every
    /// call returns a handle to the same allocator (see [`VfioDma`]).
    pub fn dma(&self) -> VfioDma {
        self.dma.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    /// A vfio-ioctls failure keeps its whole chain: VfioHostError →
    /// VfioError → io::Error.
    #[test]
    fn vfio_errors_keep_their_chain() {
        let e = vfio_err(
            "opening the container",
            VfioError::OpenContainer(io::Error::from_raw_os_error(libc::EBUSY)),
        );
        assert!(matches!(
            e,
            VfioHostError::Vfio {
                what: "opening the container",
                ..
            }
        ));
        let vfio = e.source().expect("the VfioError");
        assert!(matches!(
            vfio.downcast_ref::<VfioError>(),
            Some(VfioError::OpenContainer(_))
        ));
        let io = vfio.source().expect("the io::Error");
        assert_eq!(
            io.downcast_ref::<io::Error>()
                .and_then(io::Error::raw_os_error),
            Some(libc::EBUSY)
        );
        // The chain says it all, each message once.
        let chain = bareverbs::error::Chain::new(&e).to_string();
        assert!(chain.contains(&vfio.to_string()), "{chain}");
        assert!(!e.to_string().contains(&vfio.to_string()), "{e}");
    }

    /// The mapped variants stay as before (their message is the fix).
    #[test]
    fn permission_and_missing_container_are_mapped() {
        let e = vfio_err(
            "opening the container",
            VfioError::OpenContainer(io::Error::from(io::ErrorKind::NotFound)),
        );
        assert!(matches!(e, VfioHostError::NoVfio { .. }), "{e:?}");
        let e = vfio_err(
            "opening the group",
            VfioError::OpenGroup(
                io::Error::from(io::ErrorKind::PermissionDenied),
                "12".into(),
            ),
        );
        assert!(matches!(e, VfioHostError::Permission { ref path } if path.ends_with("12")));
        let e = vfio_err("opening the group", VfioError::GroupViable);
        assert!(matches!(e, VfioHostError::GroupNotViable { .. }));
    }
}
