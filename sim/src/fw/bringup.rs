//! Bring-up entry points: a simulated function brought up through the
//! core's [`Device::bring_up`], and `bareverbs devinfo` against it.

use bareverbs::device::{DevInfo, Device, DeviceConfig, DeviceError};
use std::sync::Arc;

use super::{FakeClock, FwConfig, SharedDma, SimBar};
use crate::dma::HeapDma;

/// The device type the simulator runs the core's bring-up on.
pub type SimDevice = Device<SimBar, FakeClock, SharedDma>;

/// Brings up a simulated function with `cfg` through the core's
/// [`Device::bring_up`] (the same code VFIO runs).
pub fn bring_up_sim(cfg: FwConfig) -> Result<SimDevice, DeviceError> {
    bring_up_sim_with(cfg, DeviceConfig::default())
}

/// [`bring_up_sim`] with chosen driver settings (timeouts, async EQ).
pub fn bring_up_sim_with(fw: FwConfig, dev: DeviceConfig) -> Result<SimDevice, DeviceError> {
    let dma = Arc::new(HeapDma::new());
    let bar = SimBar::new(dma.clone(), fw);
    Device::bring_up(bar, FakeClock::default(), SharedDma(dma), dev)
}

/// `bareverbs devinfo` on the simulator: bring-up, QUERY_HCA_CAP,
/// QUERY_VPORT_STATE, a PMTU read (ACCESS_REG) per port and teardown
/// against the firmware model.
pub fn devinfo_sim() -> Result<DevInfo, DeviceError> {
    devinfo_sim_with(FwConfig::default())
}

/// [`devinfo_sim`] with a chosen firmware configuration.
pub fn devinfo_sim_with(cfg: FwConfig) -> Result<DevInfo, DeviceError> {
    let (part, rev) = (cfg.pci_device_id, cfg.pci_revision);
    let mut d = bring_up_sim(cfg)?;
    let info = d.devinfo();
    let _ = d.teardown();
    // The PCI identity is config space, which the host (here: the
    // simulator's) reads, not the command interface.
    info.map(|mut i| {
        i.vendor_part_id = Some(part);
        i.hw_ver = Some(rev);
        i
    })
}
