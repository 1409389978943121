//! # bareverbs-vfio — a real ConnectX through Linux VFIO
//!
//! Opens a PCI function with `vfio-ioctls`, maps BAR0, enables bus
//! mastering, allocates and IOMMU-maps DMA memory and implements the
//! `bareverbs` platform traits ([`bareverbs::cmd::Bar0`],
//! [`bareverbs::device::UarMap`], [`bareverbs::platform::Uar`],
//! [`bareverbs::platform::DmaAllocator`], [`bareverbs::cmd::Clock`]), so
//! the same bring-up and data-path code that runs on the simulator drives
//! hardware.
//!
//! Platform-independent pieces (address parsing, the IOVA allocator,
//! sysfs pre-flight checks, errors) build everywhere and are unit-tested
//! without hardware; the VFIO body is `#[cfg(target_os = "linux")]`.
//! Hardware tests are `#[ignore]`d and read the device address from the
//! environment variable `BAREVERBS_VFIO_BDF`.
#![deny(missing_docs)]
#![deny(missing_debug_implementations)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(clippy::return_self_not_must_use)]

pub mod bdf;
pub mod error;
pub mod iova;
pub mod sysfs;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::*;

pub use bdf::Bdf;
pub use error::VfioHostError;

/// The loopback self-test over VFIO (Linux only).
#[cfg(not(target_os = "linux"))]
pub fn selftest_vfio(
    _bdf: &str,
    _opts: bareverbs::selftest::SelfTestOptions,
) -> Result<bareverbs::selftest::SelfTestReport, VfioHostError> {
    Err(VfioHostError::Unsupported)
}

/// `bareverbs devinfo` over VFIO (Linux only).
#[cfg(not(target_os = "linux"))]
pub fn devinfo_vfio(_bdf: &str) -> Result<bareverbs::device::DevInfo, VfioHostError> {
    Err(VfioHostError::Unsupported)
}
