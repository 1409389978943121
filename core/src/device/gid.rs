//! The port's RoCE GID table: programming, clearing and reading an entry
//! (SET_ROCE_ADDRESS, QUERY_ROCE_ADDRESS; [ref §7.15](crate::reference)).

use super::{Device, DeviceError, UarMap, PORT_TYPE_ETHERNET};
use crate::cmd::layout::query_roce_address_out;
use crate::cmd::ops::{self, RoceAddress, RoceAddressEntry};
use crate::cmd::{Bar0, Clock};
use crate::platform::DmaAllocator;

/// The port a single-port function names in `vhca_port_num`.
const PORT: u8 = 1;

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// Programs GID table entry `index` with `addr` (SET_ROCE_ADDRESS):
    /// the GID, MAC, optional VLAN and RoCE version, the L3 type derived
    /// from the GID (IPv4-mapped or not, RoCE v2 only), `vhca_port_num`
    /// only on a device with `num_vhca_ports` > 0 — as the kernel's
    /// `mlx5_core_roce_gid_set` does. Refused before any command on a
    /// port that is not Ethernet, for an index beyond the RoCE
    /// capability's `roce_address_table_size`, or a VLAN id ≥ 0x1000.
    pub fn set_gid(&mut self, index: u16, addr: &RoceAddress) -> Result<(), DeviceError> {
        self.check_gid_index(index)?;
        if let Some(v) = addr.vlan.filter(|&v| v >= 0x1000) {
            return Err(DeviceError::Limit {
                what: "VLAN id",
                requested: v as u64,
                max: 0xfff,
            });
        }
        let port = self.vhca_port();
        let r = ops::set_roce_address(&mut self.inb, index, port, Some(addr));
        self.exec(r)?;
        Ok(())
    }

    /// Clears GID table entry `index` (SET_ROCE_ADDRESS with an all-zero
    /// entry, the kernel's delete).
    pub fn clear_gid(&mut self, index: u16) -> Result<(), DeviceError> {
        self.check_gid_index(index)?;
        let port = self.vhca_port();
        let r = ops::set_roce_address(&mut self.inb, index, port, None);
        self.exec(r)?;
        Ok(())
    }

    /// Reads GID table entry `index` back (QUERY_ROCE_ADDRESS).
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

    /// `vhca_port_num` of GID commands: the port only when the device has
    /// `num_vhca_ports` > 0.
    fn vhca_port(&self) -> Option<u8> {
        (self.hca.num_vhca_ports > 0).then_some(PORT)
    }

    /// GID table entries exist on Ethernet ports only, below the RoCE
    /// capability's table size (none without the RoCE page).
    fn check_gid_index(&self, index: u16) -> Result<(), DeviceError> {
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
