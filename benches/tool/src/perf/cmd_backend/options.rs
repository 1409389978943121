//! [`CmdOptions`]: the knobs of the command-path backend (BlueFlame,
//! busy-wait limit, loopback LID, the `--device` label, the addressing
//! of a two-host run).

use super::peer_addr::HostAddr;
use crate::perf::engine::DEFAULT_TIMEOUT_NS;

/// Knobs of the command-path backend.
#[derive(Clone, Debug)]
pub struct CmdOptions {
    /// Copy single inline WQEs through the BlueFlame register (default:
    /// 8-byte doorbells only, the VFIO default: BARs are mapped uncached).
    pub blueflame: bool,
    /// Limit of every busy-wait, in the timer's nanoseconds.
    pub timeout_ns: u64,
    /// LID written in UD address vectors besides force-loopback (the
    /// simulator routes by it; hardware loops back on `fl`).
    pub loopback_lid: u16,
    /// The `--device` string, for names and messages.
    pub label: String,
    /// How this host is addressed toward a peer host (two-host runs).
    pub peer: HostAddr,
}

impl CmdOptions {
    /// Defaults for device `label`.
    pub fn new(label: &str) -> Self {
        CmdOptions {
            blueflame: false,
            timeout_ns: DEFAULT_TIMEOUT_NS,
            loopback_lid: 0,
            label: label.to_string(),
            peer: HostAddr::default(),
        }
    }
}
