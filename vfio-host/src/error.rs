//! Errors of the VFIO host, each with an actionable message.

use bareverbs::device::DeviceError;
use std::error::Error;
use std::fmt;
use std::path::PathBuf;

/// A VFIO host failure.
///
/// `Display` gives an actionable message. A variant that wraps another
/// error (`Io`, `Vfio` with a source, `Device`, `SelfTest`) is a context
/// wrapper, as the core's errors are ([`bareverbs::error`]): `Display`
/// says what was being done and [`Error::source`] returns the wrapped
/// error, whose text `Display` does not repeat. Print the whole chain
/// ([`bareverbs::error::Chain`], anyhow's `{:#}`) for the full message.
/// More variants may be added.
#[derive(Debug)]
#[non_exhaustive]
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
        /// The error text: the source's message when there is a source
        /// (`Display` then leaves it to the source), else the only detail
        /// (`Display` prints it).
        detail: String,
        /// The `vfio_ioctls::VfioError` (or other error) it came from, if
        /// any; what [`Error::source`] returns.
        source: Option<Box<dyn Error + Send + Sync + 'static>>,
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
            Vfio {
                what,
                source: Some(_),
                ..
            } => write!(f, "VFIO: {what} failed"),
            Vfio {
                what,
                detail,
                source: None,
            } => write!(f, "VFIO: {what} failed: {detail}"),
            Io { path, .. } => write!(f, "reading {}", path.display()),
            Device(_) => f.write_str("device"),
            SelfTest(_) => f.write_str("loopback self-test"),
            Unsupported => write!(f, "VFIO is only available on Linux"),
        }
    }
}

impl Error for VfioHostError {
    /// The wrapped error: the I/O error of [`VfioHostError::Io`], the
    /// vfio-ioctls error of [`VfioHostError::Vfio`], the self-test error of
    /// [`VfioHostError::SelfTest`], the core's error of
    /// [`VfioHostError::Device`]; `None` for the variants that wrap none.
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        use VfioHostError::*;
        match self {
            Io { err, .. } => Some(err),
            Vfio { source, .. } => source.as_deref().map(|e| e as &(dyn Error + 'static)),
            SelfTest(e) => Some(e),
            Device(e) => Some(e),
            BadAddress { .. }
            | NoSuchDevice { .. }
            | NotMellanox { .. }
            | NoVfio { .. }
            | NoIommuGroup { .. }
            | NotBoundToVfio { .. }
            | GroupNotViable { .. }
            | Permission { .. }
            | BarNotMappable { .. }
            | OutOfIova { .. }
            | BadIovaFree { .. }
            | Unsupported => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bareverbs::error::Chain;
    use bareverbs::selftest::SelfTestError;
    use std::io;

    fn is_error_send_sync_static<T: Error + Send + Sync + 'static>() {}

    #[test]
    fn is_a_send_sync_static_error() {
        is_error_send_sync_static::<VfioHostError>();
        let b: Box<dyn Error + Send + Sync> = Box::new(VfioHostError::Unsupported);
        assert_eq!(b.to_string(), "VFIO is only available on Linux");
    }

    #[test]
    fn io_source_is_the_io_error() {
        let e = VfioHostError::Io {
            path: "/sys/bus/pci/devices/x/vendor".into(),
            err: io::Error::new(io::ErrorKind::NotFound, "gone"),
        };
        let src = e.source().expect("Io wraps an io::Error");
        let io = src.downcast_ref::<io::Error>().expect("an io::Error");
        assert_eq!(io.kind(), io::ErrorKind::NotFound);
        assert!(Chain::new(&e).to_string().contains("gone"), "{e}");
        assert!(!e.to_string().contains("gone"), "{e}");
    }

    #[test]
    fn vfio_source_is_the_boxed_error_and_its_chain() {
        let inner = io::Error::from_raw_os_error(libc::EBUSY);
        let e = VfioHostError::Vfio {
            what: "opening the device",
            detail: inner.to_string(),
            source: Some(Box::new(inner)),
        };
        let src = e.source().expect("Vfio keeps its source");
        assert_eq!(
            src.downcast_ref::<io::Error>()
                .and_then(io::Error::raw_os_error),
            Some(libc::EBUSY)
        );
        assert!(Chain::new(&e)
            .to_string()
            .starts_with("VFIO: opening the device failed: "));
        assert_eq!(e.to_string(), "VFIO: opening the device failed");
        let none = VfioHostError::Vfio {
            what: "enabling bus mastering",
            detail: "PCI command register reads 0x0000".into(),
            source: None,
        };
        assert!(none.source().is_none());
        assert_eq!(
            none.to_string(),
            "VFIO: enabling bus mastering failed: PCI command register reads 0x0000"
        );
    }

    #[test]
    fn selftest_source_is_the_selftest_error() {
        let e = VfioHostError::SelfTest(SelfTestError::LoopbackUnsupported);
        let src = e.source().expect("SelfTest wraps its error");
        assert!(matches!(
            src.downcast_ref::<SelfTestError>(),
            Some(SelfTestError::LoopbackUnsupported)
        ));
    }

    /// `Device` is a context wrapper: `Display` says "device", the
    /// source is the core's error, and the chain reads as one message.
    #[test]
    fn device_error_is_the_source() {
        let d = DeviceError::NoUar { index: 9 };
        let e = VfioHostError::from(d);
        assert!(matches!(e, VfioHostError::Device(x) if x == d));
        assert_eq!(Chain::new(&e).to_string(), format!("device: {d}"));
        assert_eq!(e.to_string(), "device");
        let src = e.source().expect("Device has a source");
        assert_eq!(src.downcast_ref::<DeviceError>(), Some(&d));
    }

    #[test]
    fn variants_without_a_wrapped_error_have_no_source() {
        let all = [
            VfioHostError::BadAddress {
                input: "3b:00".into(),
                problem: "no function",
            },
            VfioHostError::NoSuchDevice {
                bdf: "0000:3b:00.0".into(),
                path: "/sys/bus/pci/devices/0000:3b:00.0".into(),
            },
            VfioHostError::NotMellanox {
                bdf: "0000:3b:00.0".into(),
                vendor: 0x8086,
            },
            VfioHostError::NoVfio {
                path: "/dev/vfio/vfio".into(),
            },
            VfioHostError::NoIommuGroup {
                bdf: "0000:3b:00.0".into(),
            },
            VfioHostError::NotBoundToVfio {
                bdf: "0000:3b:00.0".into(),
                driver: Some("mlx5_core".into()),
                vendor: 0x15b3,
                device: 0x101d,
            },
            VfioHostError::GroupNotViable {
                group: 7,
                others: vec![],
            },
            VfioHostError::Permission {
                path: "/dev/vfio/7".into(),
            },
            VfioHostError::BarNotMappable {
                bdf: "0000:3b:00.0".into(),
                detail: "x".into(),
            },
            VfioHostError::OutOfIova { len: 1, align: 3 },
            VfioHostError::BadIovaFree { iova: 0, len: 4096 },
            VfioHostError::Unsupported,
        ];
        for e in &all {
            assert!(e.source().is_none(), "{e:?}");
            assert!(!e.to_string().is_empty());
        }
    }
}
