//! The two ways to a [`CmdBackend`]: `--device fw-sim` ([`fw_sim`], the
//! simulator behind the firmware command interface) and `--device
//! vfio:BDF` ([`vfio`], a ConnectX through VFIO).

use super::backend::CmdBackend;
use super::fabric_timer::FabricTimer;
use super::options::CmdOptions;
use crate::perf::backend::PerfBackend;
#[cfg(target_os = "linux")]
use crate::perf::engine::WallTimer;
use anyhow::anyhow;
use bareverbs::device::DeviceConfig;
use bareverbs::error::Chain;

/// `--device fw-sim`: a simulated ConnectX brought up through the core's
/// command interface ([`bareverbs_sim::fw::bring_up_on`]) on a fabric
/// seeded with `seed`; with `wire`, its port joined over UDP at that
/// address to other processes' simulated ports
/// ([`bareverbs_sim::udp_wire`], wall-clock time).
pub fn fw_sim(
    seed: u64,
    mut opts: CmdOptions,
    wire: Option<std::net::SocketAddrV4>,
) -> anyhow::Result<Box<dyn PerfBackend>> {
    let fabric = bareverbs_sim::Fabric::new(seed);
    let fw = bareverbs_sim::fw::FwConfig::default();
    let cfg = DeviceConfig::default();
    let (dev, nic) = match wire {
        None => bareverbs_sim::fw::bring_up_on(&fabric, fw, cfg)
            .map_err(|e| anyhow!("simulated bring-up failed: {}", Chain::new(&e)))?,
        Some(a) => {
            // A wired port's MAC and GID follow from its UDP address.
            let sock = bareverbs_sim::WireSocket::bind(a)
                .map_err(|e| anyhow!("--wire {a}: binding the UDP socket: {e}"))?;
            let w = bareverbs_sim::fw::bring_up_wired(&fabric, sock, fw, cfg)
                .map_err(|e| anyhow!("{}", Chain::new(&e)))?;
            opts.peer.fixed = Some((w.gid, w.mac));
            opts.peer.mac_of_gid = Some(bareverbs_sim::wire_mac_of_gid);
            (w.dev, w.nic)
        }
    };
    // The backend drives time itself (FabricTimer::relax).
    fabric.set_auto_progress(false);
    opts.loopback_lid = nic.lid();
    let timer = FabricTimer::new(fabric, nic);
    Ok(Box::new(CmdBackend::new(dev, timer, opts, None)))
}

/// `--device vfio:BDF`: the ConnectX at `bdf` through VFIO
/// ([`bareverbs_vfio::bring_up_vfio`]). Errors are the VFIO host's own
/// (e.g. how to bind the function to vfio-pci).
#[cfg(target_os = "linux")]
pub fn vfio(bdf: &str, opts: CmdOptions) -> anyhow::Result<Box<dyn PerfBackend>> {
    let (nic, mut dev) = bareverbs_vfio::bring_up_vfio(bdf, DeviceConfig::default())
        .map_err(|e| anyhow!("{}", Chain::new(&e)))?;
    // UARs mapped from now on copy whole BlueFlame chunks when asked to.
    // SAFETY: the BlueFlame switch only chooses how the host copies its own
    // stores into UAR pages mapped later; it touches no BAR register, and
    // the device's DMA targets stay those the driver programmed.
    unsafe { dev.bar_mut() }.blueflame = opts.blueflame;
    Ok(Box::new(CmdBackend::new(
        dev,
        WallTimer::default(),
        opts,
        Some(Box::new(nic)),
    )))
}

/// `--device vfio:BDF` (VFIO is Linux-only).
#[cfg(not(target_os = "linux"))]
pub fn vfio(_bdf: &str, _opts: CmdOptions) -> anyhow::Result<Box<dyn PerfBackend>> {
    Err(anyhow!("{}", bareverbs_vfio::VfioHostError::Unsupported))
}
