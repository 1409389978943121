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
    /// Records GID table entry `index` of this device's port (firmware's
    /// SET_ROCE_ADDRESS; an all-zero `gid` clears it).
    pub fn set_roce_gid(&self, index: usize, gid: [u8; 16], mac: [u8; 6]) {
        let mut w = self.w.borrow_mut();
        let t = &mut w.devs[self.id as usize].roce_gids;
        if t.len() <= index {
            t.resize(index + 1, ([0; 16], [0; 6]));
        }
        t[index] = (gid, mac);
    }
    /// The LID of the port a RoCE packet to `gid` at MAC `mac` reaches:
    /// the first device whose GID table holds that GID with that MAC.
    /// An all-zero GID, or a GID whose MAC differs (the frame goes to
    /// another station), reaches nobody.
    pub fn roce_lid(&self, gid: &[u8; 16], mac: &[u8; 6]) -> Option<u16> {
        if *gid == [0; 16] {
            return None;
        }
        let w = self.w.borrow();
        w.devs
            .iter()
            .find(|d| d.roce_gids.iter().any(|(g, m)| g == gid && m == mac))
            .map(|d| d.lid)
    }
    /// The LID of the wired peer at (`gid`, `mac`) when this device's
    /// fabric is wired and no local port holds that address
    /// ([`crate::udp_wire`]).
    pub fn wire_lid(&self, gid: &[u8; 16], mac: &[u8; 6]) -> Option<u16> {
        self.w.borrow_mut().wire_lid(gid, mac)
    }
    /// Index of the device in the fabric.
    pub fn index(&self) -> usize {
        self.id as usize
    }
    /// The port's LID (what address vectors name).
    pub fn lid(&self) -> u16 {
        self.id + 1
    }
}
