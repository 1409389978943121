//! Errors of the VFIO host, each with an actionable message.

use bareverbs::device::DeviceError;
use std::fmt;
use std::path::PathBuf;

/// A VFIO host failure.
#[derive(Debug)]
pub enum VfioHostError {
    /// The PCI address could not be parsed.
    BadAddress {
        /// What was given.
        input: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// `/sys/bus/pci/devices/<bdf>` does not exist.
    NoSuchDevice {
        /// Address.
        bdf: String,
        /// Path looked at.
        path: PathBuf,
    },
    /// The function is not a Mellanox/NVIDIA device (vendor 0x15b3).
    NotMellanox {
        /// Address.
        bdf: String,
        /// Vendor id found.
        vendor: u16,
    },
    /// `/dev/vfio/vfio` is missing: no VFIO driver or no IOMMU.
    NoVfio {
        /// Path looked at.
        path: PathBuf,
    },
    /// The device has no IOMMU group (IOMMU disabled).
    NoIommuGroup {
        /// Address.
        bdf: String,
    },
    /// The device is bound to another driver (or none).
    NotBoundToVfio {
        /// Address.
        bdf: String,
        /// Current driver, if any.
        driver: Option<String>,
        /// Vendor id.
        vendor: u16,
        /// Device id.
        device: u16,
    },
    /// Another device of the IOMMU group is bound to a non-VFIO driver.
    GroupNotViable {
        /// Group number.
        group: u32,
        /// Offending devices and their drivers.
        others: Vec<(String, String)>,
    },
    /// Permission denied opening a VFIO node or locking memory.
    Permission {
        /// Path or resource.
        path: PathBuf,
    },
    /// BAR0 cannot be mmapped (no `VFIO_REGION_INFO_FLAG_MMAP`, or mmap failed).
    BarNotMappable {
        /// Address.
        bdf: String,
        /// Detail.
        detail: String,
    },
    /// IOVA space exhausted (or a bad request).
    OutOfIova {
        /// Requested length.
        len: u64,
        /// Requested alignment.
        align: u64,
    },
    /// An IOVA range freed that was not allocated.
    BadIovaFree {
        /// Start.
        iova: u64,
        /// Length.
        len: u64,
    },
    /// A vfio-ioctls call failed.
    Vfio {
        /// What was being done.
        what: &'static str,
        /// The error text.
        detail: String,
    },
    /// Reading sysfs failed.
    Io {
        /// Path.
        path: PathBuf,
        /// Error.
        err: std::io::Error,
    },
    /// The core's bring-up or a command failed.
    Device(DeviceError),
    /// The loopback self-test failed (the device came up).
    SelfTest(bareverbs::selftest::SelfTestError),
    /// VFIO is Linux-only.
    Unsupported,
}

impl From<DeviceError> for VfioHostError {
    fn from(e: DeviceError) -> Self {
        VfioHostError::Device(e)
    }
}

impl fmt::Display for VfioHostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use VfioHostError::*;
        match self {
            BadAddress { input, problem } => write!(
                f,
                "bad PCI address {input:?}: {problem} (expected the form 0000:3b:00.0, as `lspci -D` prints)"
            ),
            NoSuchDevice { bdf, path } => write!(
                f,
                "no PCI function {bdf}: {} does not exist (check `lspci -D -d 15b3:`)",
                path.display()
            ),
            NotMellanox { bdf, vendor } => write!(
                f,
                "{bdf} has vendor id 0x{vendor:04x}, not a Mellanox/NVIDIA ConnectX (0x15b3)"
            ),
            NoVfio { path } => write!(
                f,
                "{} is missing: VFIO is not available. Enable the IOMMU in firmware and on the kernel \
                 command line (intel_iommu=on or amd_iommu=on, optionally iommu=pt) and load the driver \
                 with `modprobe vfio-pci`",
                path.display()
            ),
            NoIommuGroup { bdf } => write!(
                f,
                "{bdf} has no IOMMU group: the IOMMU is off. Enable VT-d/AMD-Vi in firmware and boot with \
                 intel_iommu=on or amd_iommu=on"
            ),
            NotBoundToVfio {
                bdf,
                driver,
                vendor,
                device,
            } => {
                let now = match driver {
                    Some(d) => format!("bound to {d}"),
                    None => "not bound to any driver".to_string(),
                };
                write!(
                    f,
                    "{bdf} is {now}, not vfio-pci. Bind it (as root): `modprobe vfio-pci; "
                )?;
                if driver.is_some() {
                    write!(f, "echo {bdf} > /sys/bus/pci/devices/{bdf}/driver/unbind; ")?;
                }
                write!(
                    f,
                    "echo {:04x} {:04x} > /sys/bus/pci/drivers/vfio-pci/new_id` \
                     (or `echo vfio-pci > /sys/bus/pci/devices/{bdf}/driver_override; \
                     echo {bdf} > /sys/bus/pci/drivers_probe`)",
                    vendor, device
                )
            }
            GroupNotViable { group, others } => {
                write!(
                    f,
                    "IOMMU group {group} is not viable: every device in it must be bound to vfio-pci \
                     (or unbound); still bound:"
                )?;
                for (d, drv) in others {
                    write!(f, " {d} ({drv})")?;
                }
                write!(f, ". Bind them to vfio-pci too, or move the NIC to a slot with its own group")
            }
            Permission { path } => write!(
                f,
                "permission denied on {}: run as root, or give your user the VFIO group node \
                 (`chown $USER /dev/vfio/<group>`) and a large enough locked-memory limit (`ulimit -l`)",
                path.display()
            ),
            BarNotMappable { bdf, detail } => write!(
                f,
                "BAR0 of {bdf} cannot be mapped: {detail}"
            ),
            OutOfIova { len, align } => write!(
                f,
                "no IOVA range of {len} bytes aligned to {align} is free"
            ),
            BadIovaFree { iova, len } => write!(
                f,
                "IOVA range 0x{iova:x}+0x{len:x} was not allocated"
            ),
            Vfio { what, detail } => write!(f, "VFIO: {what} failed: {detail}"),
            Io { path, err } => write!(f, "reading {}: {err}", path.display()),
            Device(e) => write!(f, "device: {e}"),
            SelfTest(e) => write!(f, "loopback self-test: {e}"),
            Unsupported => write!(f, "VFIO is only available on Linux"),
        }
    }
}

impl std::error::Error for VfioHostError {}
