//! The device's place on the fabric: its index, its port's LID and the
//! GID an address path names it by ([`sim_gid`]).

use super::Device;

/// The GID the simulator gives the port with LID `lid`: link-local
/// `fe80::<lid>`. An address path with a GRH and no LID is routed to the
/// device whose GID this is.
pub const fn sim_gid(lid: u16) -> [u8; 16] {
    let l = lid.to_be_bytes();
    [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, l[0], l[1]]
}

impl Device {
    /// Index of the device in the fabric.
    pub fn index(&self) -> usize {
        self.id as usize
    }
    /// The port's LID (what address vectors name).
    pub fn lid(&self) -> u16 {
        self.id + 1
    }
}
