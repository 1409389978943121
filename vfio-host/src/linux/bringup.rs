//! The core run on real hardware: [`VfioMlx5`], [`bring_up_vfio`] and the
//! `devinfo` / self-test commands built on it.

use super::bar::VfioBar0;
use super::clock::StdClock;
use super::dma::VfioDma;
use super::nic::VfioNic;
use crate::error::VfioHostError;
use bareverbs::device::{DevInfo, Device, DeviceConfig};

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
