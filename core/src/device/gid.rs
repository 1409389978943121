//! The port's RoCE GID table: programming, clearing and reading an entry
//! (SET_ROCE_ADDRESS, QUERY_ROCE_ADDRESS; [ref §7.15](crate::reference)),
//! the kernel's layout for an IP address and perftest's choice of index.

use super::gid_table::{GidPair, GID_SLOTS};
use super::{Device, DeviceError, UarMap, PORT_TYPE_ETHERNET};
use crate::cmd::layout::query_roce_address_out;
use crate::cmd::ops::{
    self, gid_ipv4_mapped, gid_link_local_eui64, RoceAddress, RoceAddressEntry, RoceVersion,
};
use crate::cmd::{Bar0, Clock};
use crate::platform::DmaAllocator;
use core::net::IpAddr;

/// The port a single-port function names in `vhca_port_num`.
const PORT: u8 = 1;

/// Whether `mac` can be a RoCE source or destination: not all-zero, not
/// multicast (I/G bit of the first byte clear).
pub(crate) fn unicast_mac(mac: [u8; 6]) -> bool {
    mac != [0; 6] && mac[0] & 1 == 0
}

/// The GID of an IP address: IPv4 as `::ffff:a.b.c.d`, IPv6 as is.
pub fn gid_of_ip(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => gid_ipv4_mapped(v4.octets()),
        IpAddr::V6(v6) => v6.octets(),
    }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// Programs GID table entry `index` with `addr` (SET_ROCE_ADDRESS):
    /// the GID, MAC, optional VLAN and RoCE version, the L3 type derived
    /// from the GID (IPv4-mapped or not, RoCE v2 only), `vhca_port_num`
    /// only on a device with `num_vhca_ports` > 0 — as the kernel's
    /// `mlx5_core_roce_gid_set` does. Refused before any command on a
    /// port that is not Ethernet, for an index beyond the RoCE
    /// capability's `roce_address_table_size` or the driver's record
    /// ([`GID_SLOTS`]), an all-zero GID (the table's empty entry), a MAC
    /// that is not unicast, or a VLAN id ≥ 0x1000. On success the driver
    /// records the entry ([`Device::gid`]).
    pub fn set_gid(&mut self, index: u16, addr: &RoceAddress) -> Result<(), DeviceError> {
        self.check_gid_index(index)?;
        if let Some(v) = addr.vlan.filter(|&v| v >= 0x1000) {
            return Err(DeviceError::Limit {
                what: "VLAN id",
                requested: v as u64,
                max: 0xfff,
            });
        }
        if addr.gid == [0; 16] {
            return Err(DeviceError::BadPath {
                why: "an all-zero GID is the empty entry; clear_gid removes one",
            });
        }
        if !unicast_mac(addr.mac) {
            return Err(DeviceError::BadMac {
                mac: addr.mac,
                what: "GID entry MAC",
            });
        }
        let port = self.vhca_port();
        let r = ops::set_roce_address(&mut self.inb, index, port, Some(addr));
        if let Err(e) = self.exec(r) {
            // The device may hold the old entry, the new one or neither.
            self.gids.forget(index);
            return Err(e.into());
        }
        self.gids.put(index, Some(*addr));
        Ok(())
    }

    /// Clears GID table entry `index` (SET_ROCE_ADDRESS with an all-zero
    /// entry, the kernel's delete) and its record.
    pub fn clear_gid(&mut self, index: u16) -> Result<(), DeviceError> {
        self.check_gid_index(index)?;
        let port = self.vhca_port();
        let r = ops::set_roce_address(&mut self.inb, index, port, None);
        if let Err(e) = self.exec(r) {
            self.gids.forget(index);
            return Err(e.into());
        }
        self.gids.put(index, None);
        Ok(())
    }

    /// Reads GID table entry `index` back from the device
    /// (QUERY_ROCE_ADDRESS). What the device answers is reported as is;
    /// the driver decides nothing on it ([`Device::gid`] is its record).
    pub fn query_gid(&mut self, index: u16) -> Result<RoceAddressEntry, DeviceError> {
        self.check_gid_index(index)?;
        let port = self.vhca_port();
        let r = ops::query_roce_address(&mut self.inb, index, port);
        self.exec(r)?;
        Ok(ops::parse_roce_address(
            &self.outb,
            query_roce_address_out::ROCE_ADDRESS,
        ))
    }

    /// Entry `index` as this driver programmed it (`None`: empty).
    pub fn gid(&self, index: u16) -> Option<RoceAddress> {
        self.gids.get(index)
    }

    /// The programmed entries in index order (`show_gids`).
    pub fn gids(&self) -> impl Iterator<Item = (u16, RoceAddress)> + '_ {
        self.gids.iter()
    }

    /// The GID index perftest picks when `-x` is not given
    /// ([`gid_score`](super::gid_score): address family, then global
    /// scope, then RoCE v2 over v1; the lowest index among equals), over
    /// the programmed entries. `None` when none is programmed.
    pub fn best_gid_index(&self, prefer_ipv6: bool) -> Option<u16> {
        self.gids.best_index(prefer_ipv6)
    }

    /// The function's permanent MAC (QUERY_NIC_VPORT_CONTEXT
    /// `permanent_address`), refused unless it is a unicast address.
    pub fn permanent_mac(&mut self) -> Result<[u8; 6], DeviceError> {
        let mac = self.query_nic_vport_context()?.permanent_mac;
        if !unicast_mac(mac) {
            return Err(DeviceError::BadMac {
                mac,
                what: "the device's permanent address",
            });
        }
        Ok(mac)
    }

    /// Adds `ip` to the GID table as the kernel's GID cache does for an
    /// address of the port's netdev: the port's default entries (the
    /// link-local GID of the MAC, RoCE v1 at 0 and v2 at 1) are programmed
    /// first where missing, then the address takes one RoCE v1 and one
    /// RoCE v2 entry, each the lowest free index from 2. So the first IPv4
    /// address lands at 2 (v1) and 3 (v2), the index `ib_write_bw -x 3`
    /// and `ibv_rc_pingpong -g 3` name on a kernel host. `mac` defaults to
    /// the function's [permanent address](Device::permanent_mac). An
    /// address already present keeps its entries (only a missing version
    /// is added). A table of fewer than 4 entries cannot hold the layout
    /// and is refused before any command; if the second entry of the
    /// address cannot be written, the first one written by this call is
    /// cleared again.
    pub fn add_ip_gids(
        &mut self,
        ip: IpAddr,
        mac: Option<[u8; 6]>,
        vlan: Option<u16>,
    ) -> Result<GidPair, DeviceError> {
        let size = self.gid_table_size()?;
        if size < 4 {
            return Err(DeviceError::Limit {
                what: "GID table entries (the kernel's layout needs 4)",
                requested: 4,
                max: size as u64,
            });
        }
        let mac = match mac {
            Some(m) => m,
            None => self.permanent_mac()?,
        };
        let ll = gid_link_local_eui64(mac);
        for (index, version) in [(0, RoceVersion::V1), (1, RoceVersion::V2)] {
            if self.gids.get(index).is_none() {
                self.set_gid(index, &Self::entry(ll, mac, vlan, version))?;
            }
        }
        let gid = gid_of_ip(ip);
        let mut pair = [0u16; 2];
        let mut written = None;
        for (k, version) in [RoceVersion::V1, RoceVersion::V2].into_iter().enumerate() {
            if let Some(i) = self.gids.find(&gid, version) {
                pair[k] = i;
                continue;
            }
            let other = (k == 1).then_some(pair[0]);
            let Some(index) = self.gids.free_index(size, other) else {
                self.undo(written);
                return Err(DeviceError::TableFull {
                    what: "GID entries",
                });
            };
            if let Err(e) = self.set_gid(index, &Self::entry(gid, mac, vlan, version)) {
                self.undo(written);
                return Err(e);
            }
            written = Some(index);
            pair[k] = index;
        }
        Ok(GidPair {
            v1: pair[0],
            v2: pair[1],
        })
    }

    fn entry(gid: [u8; 16], mac: [u8; 6], vlan: Option<u16>, version: RoceVersion) -> RoceAddress {
        RoceAddress {
            gid,
            mac,
            vlan,
            version,
        }
    }

    /// Clears the entry `add_ip_gids` wrote before a later step failed
    /// (best effort: a failed clear leaves it recorded as unknown).
    fn undo(&mut self, written: Option<u16>) {
        if let Some(i) = written {
            let _ = self.clear_gid(i);
        }
    }

    /// `vhca_port_num` of GID commands: the port only when the device has
    /// `num_vhca_ports` > 0.
    fn vhca_port(&self) -> Option<u8> {
        (self.hca.num_vhca_ports > 0).then_some(PORT)
    }

    /// The usable table size: the RoCE capability's
    /// `roce_address_table_size`, at most the driver's record. GID table
    /// entries exist on Ethernet ports only (none without the RoCE page).
    fn gid_table_size(&self) -> Result<u16, DeviceError> {
        if self.hca.port_type != PORT_TYPE_ETHERNET {
            return Err(DeviceError::NotEthernet {
                what: "GID table entry",
            });
        }
        // Without the RoCE capability page (no `roce` cap, or firmware that
        // refused the query) there is no table size to bound the index by
        // and no RoCE to address: refuse before sending anything.
        let Some(size) = self.roce.map(|r| r.roce_address_table_size) else {
            return Err(DeviceError::NotEthernet {
                what: "GID table entry (the device reports no RoCE capability page)",
            });
        };
        Ok(size.min(GID_SLOTS as u16))
    }

    fn check_gid_index(&self, index: u16) -> Result<(), DeviceError> {
        let size = self.gid_table_size()?;
        if index >= size {
            return Err(DeviceError::Limit {
                what: "GID index",
                requested: index as u64,
                max: size.saturating_sub(1) as u64,
            });
        }
        Ok(())
    }
}
