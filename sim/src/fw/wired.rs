//! [`bring_up_wired`]: one simulated ConnectX function on the UDP wire —
//! its MAC (and GID) taken from the socket's address, brought up on a
//! fabric by firmware command, its port joined to the wire.

use super::{bring_up_on, FwConfig, SimDevice};
use crate::{Device as SimNic, Fabric, SimError, WireSocket};
use bareverbs::device::{DeviceConfig, DeviceError};
use core::fmt;

/// A function on the wire, as [`bring_up_wired`] made it.
#[derive(Debug)]
pub struct WiredFunction {
    /// The core's device (firmware command path).
    pub dev: SimDevice,
    /// The simulated NIC behind it (the fabric's [`crate::Device`]).
    pub nic: SimNic,
    /// The GID its UDP address names (not yet in its GID table: program
    /// it at the index QPs send from).
    pub gid: [u8; 16],
    /// The MAC its UDP address names (the port's MAC).
    pub mac: [u8; 6],
}

/// Why [`bring_up_wired`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WiredError {
    /// The core's bring-up failed.
    BringUp(DeviceError),
    /// The fabric could not join the port to the wire.
    Join(SimError),
}

impl fmt::Display for WiredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WiredError::BringUp(_) => f.write_str("simulated bring-up failed"),
            WiredError::Join(_) => f.write_str("joining the wire"),
        }
    }
}

/// [`source`](std::error::Error::source) is the wrapped error: the core's
/// [`DeviceError`] or the fabric's [`SimError`]. Both variants are context
/// wrappers ([`bareverbs::error`]): `Display` is only the context, so
/// print the chain ([`bareverbs::error::Chain`]) for the whole message.
impl std::error::Error for WiredError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WiredError::BringUp(e) => Some(e),
            WiredError::Join(e) => Some(e),
        }
    }
}

/// Brings up a function on `fabric` whose port MAC is `sock`'s (`fw`
/// otherwise as given), then joins its port to the wire over `sock`: the
/// fabric's clock follows the wall clock from then on.
pub fn bring_up_wired(
    fabric: &Fabric,
    sock: WireSocket,
    fw: FwConfig,
    cfg: DeviceConfig,
) -> Result<WiredFunction, WiredError> {
    let (gid, mac) = (sock.gid(), sock.mac());
    let fw = FwConfig { mac, ..fw };
    let (dev, nic) = bring_up_on(fabric, fw, cfg).map_err(WiredError::BringUp)?;
    fabric.join_wire(&nic, sock).map_err(WiredError::Join)?;
    Ok(WiredFunction { dev, nic, gid, mac })
}
