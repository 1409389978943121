//! The `--device` names every `bareverbs` subcommand takes, parsed in one
//! place with one error message, and the device limits the tool enforces
//! on its input (SGE counts against the device's `max_sge`).
//!
//! | name | device | default of |
//! | --- | --- | --- |
//! | `sim` | the simulated ConnectX | `devinfo`, `selftest`, `perf <test>` |
//! | `fw-sim` | the same simulated ConnectX, driven through the firmware command path | |
//! | `model` | no device: the closed-form cost model only (`perf`, `sweep`) | `sweep` |
//! | `vfio:DDDD:BB:DD.F` | a ConnectX bound to `vfio-pci` | |
//!
//! `devinfo`, `selftest` and `budget --device` query a device, so they
//! refuse `model`; for them `sim` and `fw-sim` are the same device (both
//! run the bring-up and queries through the simulated firmware). `perf`
//! runs its tests on `sim` with the memory-backed simulator backend and on
//! `fw-sim` through the command path; both are the same simulated device
//! and report the same port. `sweep` measures through the command path
//! only, so there `sim` and `fw-sim` both mean that path; its default stays
//! `model` because a sweep is a design-space computation that needs no
//! device unless asked to measure.

use std::fmt;

use crate::args::usage_error;

/// A parsed `--device` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Device {
    /// `sim`: the simulated ConnectX.
    Sim,
    /// `fw-sim`: the simulated ConnectX through the firmware command path.
    FwSim,
    /// `model`: the cost model only, no device.
    Model,
    /// `vfio:BDF`: a ConnectX through VFIO (the PCI address as given; the
    /// VFIO host checks its form).
    Vfio(String),
}

/// An unknown `--device` name (the one message every subcommand prints).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceArgError(pub String);

impl fmt::Display for DeviceArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown device {:?} (--device): use sim (the simulated ConnectX), fw-sim \
             (the same, through the firmware command path), model (cost model only) or \
             vfio:DDDD:BB:DD.F",
            self.0
        )
    }
}

impl std::error::Error for DeviceArgError {}

impl Device {
    /// Parses a `--device` value. Any string is accepted as input;
    /// nothing panics.
    pub fn parse(text: &str) -> Result<Device, DeviceArgError> {
        match text {
            "sim" => Ok(Device::Sim),
            "fw-sim" => Ok(Device::FwSim),
            "model" => Ok(Device::Model),
            t => match t.strip_prefix("vfio:") {
                Some(bdf) if !bdf.is_empty() => Ok(Device::Vfio(bdf.to_string())),
                _ => Err(DeviceArgError(t.to_string())),
            },
        }
    }

    /// The name as the user writes it (`vfio:` and the address for VFIO).
    pub fn name(&self) -> String {
        match self {
            Device::Sim => "sim".into(),
            Device::FwSim => "fw-sim".into(),
            Device::Model => "model".into(),
            Device::Vfio(b) => format!("vfio:{b}"),
        }
    }

    /// The device itself for a subcommand that queries one (`devinfo`,
    /// `selftest`, `budget --device`): `model` is refused as bad input
    /// naming `command`.
    pub fn require_device(&self, command: &str) -> anyhow::Result<()> {
        if *self == Device::Model {
            return Err(usage_error(format!(
                "{command} needs a device, and --device model is the cost model only: \
                 use sim, fw-sim or vfio:DDDD:BB:DD.F"
            )));
        }
        Ok(())
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// [`Device::parse`] with the error as bad input (exit status 2, one line).
pub fn parse_device(text: &str) -> anyhow::Result<Device> {
    Device::parse(text).map_err(usage_error)
}

/// The usage error for an unknown device name (for code that matched the
/// name as text).
pub fn unknown_device(text: &str) -> anyhow::Error {
    usage_error(DeviceArgError(text.to_string()))
}

/// Refuses `n` SGEs for `option` when the device's `max_sge` (as
/// `ibv_devinfo -v` reports it: the mlx5 kernel rule,
/// [`bareverbs::cmd::caps::HcaCaps::max_sge`]) is smaller: a verbs
/// application gets at most `max_sge` per WR from `ibv_query_device`.
pub fn check_sge(option: &str, n: u32, max_sge: u32) -> anyhow::Result<()> {
    if n > max_sge {
        return Err(usage_error(format!(
            "{option} {n} exceeds the device's max_sge {max_sge} (ibv_devinfo -v)"
        )));
    }
    Ok(())
}

/// Refuses the `--sge` count `n` of a memory-backed bench queue (`perf
/// post`, `perf post-recv`): at least 1, and at most the `max_sge` of the
/// default device, which the memory-backed queue stands for.
pub fn check_bench_sge(n: u32) -> anyhow::Result<()> {
    if n < 1 {
        return Err(usage_error("--sge must be >= 1"));
    }
    check_sge("--sge", n, bareverbs::sizing::DeviceCaps::DEFAULT.max_sge)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::is_usage;

    #[test]
    fn names_parse_and_print_back() {
        for n in ["sim", "fw-sim", "model", "vfio:0000:3b:00.0"] {
            assert_eq!(Device::parse(n).unwrap().name(), n);
            assert_eq!(parse_device(n).unwrap().name(), n);
        }
        assert_eq!(
            Device::parse("vfio:3b:00.0"),
            Ok(Device::Vfio("3b:00.0".into()))
        );
        for bad in ["", "nic", "SIM", "vfio:", "vfio", "fw_sim", "sim ", "é"] {
            let e = Device::parse(bad).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("unknown device {bad:?} (--device): use sim")),
                "{e}"
            );
            assert!(!e.contains('\n'));
        }
        assert!(is_usage(&unknown_device("nic")));
        assert!(is_usage(&parse_device("nic").unwrap_err()));
    }

    #[test]
    fn model_is_refused_where_a_device_is_needed() {
        let e = Device::Model.require_device("devinfo").unwrap_err();
        assert!(is_usage(&e));
        assert!(e.to_string().starts_with("devinfo needs a device"), "{e}");
        for d in [Device::Sim, Device::FwSim, Device::Vfio("x".into())] {
            d.require_device("devinfo").unwrap();
        }
    }

    #[test]
    fn sge_limit() {
        check_sge("--sge", 30, 30).unwrap();
        let e = check_sge("--max-send-sge", 31, 30).unwrap_err();
        assert!(is_usage(&e));
        assert_eq!(
            e.to_string(),
            "--max-send-sge 31 exceeds the device's max_sge 30 (ibv_devinfo -v)"
        );
    }
}
