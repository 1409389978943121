//! The port's RoCE GID table ([ref §7.15](bareverbs::reference)):
//! SET_ROCE_ADDRESS stores an entry, QUERY_ROCE_ADDRESS reads it back;
//! the table holds `roce_address_table_size` entries, all zero at first.

use super::handler::{ok, require, Cmd, Outcome};
use super::objects::ObjectEvent;
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::layout::{
    query_roce_address_in, query_roce_address_out, roce_addr_layout, set_roce_address_in,
};
use bareverbs::cmd::CmdStatus;

/// `cmd_hca_cap.port_type` of an Ethernet port.
const PORT_TYPE_ETHERNET: u8 = 1;

impl SimFirmware {
    /// The checks both commands make: an Ethernet port (the kernel's
    /// `mlx5_core_roce_gid_set` refuses others), `vhca_port_num` 0 when
    /// the device has no vHCA ports, the index inside the table (BAD_PARAM
    /// otherwise: the PRM's status for an out-of-range field).
    fn gid_slot(&mut self, index: u32, port: u32) -> Result<usize, Outcome> {
        let caps = self.current_caps();
        if caps.port_type != PORT_TYPE_ETHERNET || !caps.roce {
            return Err(Outcome::Fail(CmdStatus::BadParam, reason::FIELD));
        }
        if port != 0 && caps.num_vhca_ports == 0 {
            return Err(Outcome::Fail(CmdStatus::BadParam, reason::FIELD));
        }
        let size = self.cfg.roce_address_table_size as usize;
        if index as usize >= size {
            return Err(Outcome::Fail(CmdStatus::BadParam, reason::GID_INDEX));
        }
        if self.gids.len() < size {
            self.gids.resize(size, [0u8; roce_addr_layout::LEN]);
        }
        Ok(index as usize)
    }

    /// SET_ROCE_ADDRESS.
    pub(super) fn set_roce_address(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, .. } = *c;
        require!(
            c.need_in(set_roce_address_in::LEN),
            CmdStatus::BadInputLen,
            reason::INPUT_LEN
        );
        let index = set_roce_address_in::ROCE_ADDRESS_INDEX.get(input, 0);
        let port = set_roce_address_in::VHCA_PORT_NUM.get(input, 0);
        let i = match self.gid_slot(index, port) {
            Ok(i) => i,
            Err(o) => return o,
        };
        let at = set_roce_address_in::ROCE_ADDRESS;
        self.gids[i].copy_from_slice(&input[at..at + roce_addr_layout::LEN]);
        let e = bareverbs::cmd::ops::parse_roce_address(&self.gids[i], 0);
        self.notify(ObjectEvent::GidSet {
            index: i as u32,
            gid: e.gid,
            mac: e.mac,
        });
        Outcome::Ok(ok(16))
    }

    /// QUERY_ROCE_ADDRESS.
    pub(super) fn query_roce_address(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, outlen, .. } = *c;
        require!(
            c.need_in(query_roce_address_in::LEN),
            CmdStatus::BadInputLen,
            reason::INPUT_LEN
        );
        require!(
            outlen >= query_roce_address_out::LEN,
            CmdStatus::BadOutputLen,
            reason::OUTPUT_LEN
        );
        let index = query_roce_address_in::ROCE_ADDRESS_INDEX.get(input, 0);
        let port = query_roce_address_in::VHCA_PORT_NUM.get(input, 0);
        let i = match self.gid_slot(index, port) {
            Ok(i) => i,
            Err(o) => return o,
        };
        let mut o = ok(query_roce_address_out::LEN);
        let at = query_roce_address_out::ROCE_ADDRESS;
        o[at..at + roce_addr_layout::LEN].copy_from_slice(&self.gids[i]);
        Outcome::Ok(o)
    }

    /// GID table entry `index` as stored (`None` beyond the entries
    /// written so far: those are all zero).
    pub fn gid_entry(&self, index: usize) -> Option<[u8; roce_addr_layout::LEN]> {
        self.gids.get(index).copied()
    }
}
