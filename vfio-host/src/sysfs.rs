//! Pre-flight checks against sysfs and `/dev/vfio`, so failures come with
//! instructions instead of a bare `ENOENT`. The roots are parameters, so
//! tests run against a fake tree in a temporary directory.

use crate::bdf::Bdf;
use crate::error::VfioHostError;
use std::fs;
use std::path::{Path, PathBuf};

/// Mellanox/NVIDIA PCI vendor id.
pub const MELLANOX_VENDOR: u16 = 0x15b3;

/// Where to look: `/sys` and `/dev` on a real system.
#[derive(Clone, Debug)]
pub struct Roots {
    /// sysfs root (normally `/sys`).
    pub sys: PathBuf,
    /// dev root (normally `/dev`).
    pub dev: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Roots {
            sys: PathBuf::from("/sys"),
            dev: PathBuf::from("/dev"),
        }
    }
}

/// What the pre-flight found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PciInfo {
    /// Address.
    pub bdf: Bdf,
    /// Vendor id.
    pub vendor: u16,
    /// Device id.
    pub device: u16,
    /// Bound driver, if any.
    pub driver: Option<String>,
    /// IOMMU group, if any.
    pub iommu_group: Option<u32>,
    /// sysfs directory of the function.
    pub sysfs_path: PathBuf,
}

fn read_hex(path: &Path) -> Result<u16, VfioHostError> {
    let s = fs::read_to_string(path).map_err(|err| VfioHostError::Io {
        path: path.to_path_buf(),
        err,
    })?;
    let t = s.trim().trim_start_matches("0x");
    u16::from_str_radix(t, 16).map_err(|_| VfioHostError::Io {
        path: path.to_path_buf(),
        err: std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not hex: {s:?}")),
    })
}

fn link_name(path: &Path) -> Option<String> {
    let t = fs::read_link(path).ok()?;
    t.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// Reads vendor, device, driver and IOMMU group of `bdf`.
pub fn read_pci(roots: &Roots, bdf: Bdf) -> Result<PciInfo, VfioHostError> {
    let dir = roots.sys.join("bus/pci/devices").join(bdf.to_string());
    if !dir.exists() {
        return Err(VfioHostError::NoSuchDevice {
            bdf: bdf.to_string(),
            path: dir,
        });
    }
    Ok(PciInfo {
        bdf,
        vendor: read_hex(&dir.join("vendor"))?,
        device: read_hex(&dir.join("device"))?,
        driver: link_name(&dir.join("driver")),
        iommu_group: link_name(&dir.join("iommu_group")).and_then(|g| g.parse().ok()),
        sysfs_path: dir,
    })
}

/// Runs every check VFIO needs before opening the device: VFIO present,
/// Mellanox vendor, bound to vfio-pci, IOMMU group exists and is viable
/// (every member bound to vfio-pci or unbound).
pub fn preflight(roots: &Roots, bdf: Bdf) -> Result<PciInfo, VfioHostError> {
    let info = read_pci(roots, bdf)?;
    if info.vendor != MELLANOX_VENDOR {
        return Err(VfioHostError::NotMellanox {
            bdf: bdf.to_string(),
            vendor: info.vendor,
        });
    }
    let container = roots.dev.join("vfio/vfio");
    if !container.exists() {
        return Err(VfioHostError::NoVfio { path: container });
    }
    let Some(group) = info.iommu_group else {
        return Err(VfioHostError::NoIommuGroup {
            bdf: bdf.to_string(),
        });
    };
    if info.driver.as_deref() != Some("vfio-pci") {
        return Err(VfioHostError::NotBoundToVfio {
            bdf: bdf.to_string(),
            driver: info.driver.clone(),
            vendor: info.vendor,
            device: info.device,
        });
    }
    let members = roots
        .sys
        .join("kernel/iommu_groups")
        .join(group.to_string())
        .join("devices");
    let mut others = Vec::new();
    if let Ok(rd) = fs::read_dir(&members) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name == bdf.to_string() {
                continue;
            }
            let drv = link_name(&roots.sys.join("bus/pci/devices").join(&name).join("driver"));
            if let Some(d) = drv {
                if d != "vfio-pci" && d != "pcieport" {
                    others.push((name, d));
                }
            }
        }
    }
    others.sort();
    if !others.is_empty() {
        return Err(VfioHostError::GroupNotViable { group, others });
    }
    Ok(info)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Fake {
        _dir: tempfile::TempDir,
        roots: Roots,
    }

    fn fake(driver: Option<&str>, vendor: &str, group: Option<u32>, vfio: bool) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let sys = dir.path().join("sys");
        let dev = dir.path().join("dev");
        let d = sys.join("bus/pci/devices/0000:3b:00.0");
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("vendor"), format!("{vendor}\n")).unwrap();
        fs::write(d.join("device"), "0x1017\n").unwrap();
        if let Some(drv) = driver {
            let dd = sys.join("bus/pci/drivers").join(drv);
            fs::create_dir_all(&dd).unwrap();
            symlink(&dd, d.join("driver")).unwrap();
        }
        if let Some(g) = group {
            let gd = sys.join(format!("kernel/iommu_groups/{g}/devices"));
            fs::create_dir_all(&gd).unwrap();
            symlink(&d, gd.join("0000:3b:00.0")).unwrap();
            symlink(
                sys.join(format!("kernel/iommu_groups/{g}")),
                d.join("iommu_group"),
            )
            .unwrap();
        }
        fs::create_dir_all(dev.join("vfio")).unwrap();
        if vfio {
            fs::write(dev.join("vfio/vfio"), "").unwrap();
        }
        Fake {
            _dir: dir,
            roots: Roots { sys, dev },
        }
    }

    fn bdf() -> Bdf {
        "0000:3b:00.0".parse().unwrap()
    }

    #[test]
    fn ready_device_passes() {
        let f = fake(Some("vfio-pci"), "0x15b3", Some(12), true);
        let i = preflight(&f.roots, bdf()).unwrap();
        assert_eq!((i.vendor, i.device), (0x15b3, 0x1017));
        assert_eq!(i.driver.as_deref(), Some("vfio-pci"));
        assert_eq!(i.iommu_group, Some(12));
    }

    #[test]
    fn bound_to_mlx5_core_says_how_to_bind() {
        let f = fake(Some("mlx5_core"), "0x15b3", Some(12), true);
        let e = preflight(&f.roots, bdf()).unwrap_err();
        let t = e.to_string();
        assert!(matches!(e, VfioHostError::NotBoundToVfio { .. }));
        assert!(t.contains("bound to mlx5_core"), "{t}");
        assert!(
            t.contains("echo 0000:3b:00.0 > /sys/bus/pci/devices/0000:3b:00.0/driver/unbind"),
            "{t}"
        );
        assert!(
            t.contains("echo 15b3 1017 > /sys/bus/pci/drivers/vfio-pci/new_id"),
            "{t}"
        );
        assert!(t.contains("driver_override"), "{t}");
        // Unbound: no unbind step.
        let f = fake(None, "0x15b3", Some(12), true);
        let t = preflight(&f.roots, bdf()).unwrap_err().to_string();
        assert!(
            t.contains("not bound to any driver") && !t.contains("unbind"),
            "{t}"
        );
    }

    #[test]
    fn missing_vfio_iommu_and_device() {
        let f = fake(Some("vfio-pci"), "0x15b3", Some(3), false);
        let e = preflight(&f.roots, bdf()).unwrap_err();
        assert!(matches!(e, VfioHostError::NoVfio { .. }));
        let t = e.to_string();
        assert!(
            t.contains("vfio/vfio is missing") && t.contains("intel_iommu=on"),
            "{t}"
        );
        let f = fake(Some("vfio-pci"), "0x15b3", None, true);
        let t = preflight(&f.roots, bdf()).unwrap_err().to_string();
        assert!(t.contains("no IOMMU group"), "{t}");
        let e = preflight(&f.roots, "0000:3c:00.0".parse().unwrap()).unwrap_err();
        assert!(matches!(e, VfioHostError::NoSuchDevice { .. }));
        let f = fake(Some("vfio-pci"), "0x8086", Some(3), true);
        let t = preflight(&f.roots, bdf()).unwrap_err().to_string();
        assert!(t.contains("0x8086") && t.contains("0x15b3"), "{t}");
    }

    #[test]
    fn group_with_a_foreign_driver_is_not_viable() {
        let f = fake(Some("vfio-pci"), "0x15b3", Some(7), true);
        let other = f.roots.sys.join("bus/pci/devices/0000:3b:00.1");
        fs::create_dir_all(&other).unwrap();
        let drv = f.roots.sys.join("bus/pci/drivers/mlx5_core");
        fs::create_dir_all(&drv).unwrap();
        symlink(&drv, other.join("driver")).unwrap();
        symlink(
            &other,
            f.roots
                .sys
                .join("kernel/iommu_groups/7/devices/0000:3b:00.1"),
        )
        .unwrap();
        let e = preflight(&f.roots, bdf()).unwrap_err();
        let t = e.to_string();
        assert!(matches!(e, VfioHostError::GroupNotViable { group: 7, .. }));
        assert!(t.contains("0000:3b:00.1 (mlx5_core)"), "{t}");
    }

    #[test]
    fn permission_text() {
        let t = VfioHostError::Permission {
            path: "/dev/vfio/12".into(),
        }
        .to_string();
        assert!(t.contains("/dev/vfio/12") && t.contains("ulimit -l"), "{t}");
    }
}
