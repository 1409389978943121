//! The port as commands see it: QUERY_VPORT_STATE, the NIC vport context
//! (`roce_en`, MTU, MAC, GUIDs), the HCA vport context (InfiniBand port
//! state, GUIDs, LIDs) and QUERY_ADAPTER (vendor id, PSID).

use super::handler::{ok, require, Cmd, Outcome};
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::bits::get32;
use bareverbs::cmd::ops;
use bareverbs::cmd::CmdStatus;

impl SimFirmware {
    /// QUERY_VPORT_STATE: the configured port state.
    pub(super) fn query_vport_state(&mut self) -> Outcome {
        let mut o = ok(16);
        o[0x0f] = (1 << 4) | (self.cfg.port_state & 0xf);
        Outcome::Ok(o)
    }

    /// MODIFY_NIC_VPORT_CONTEXT: only `roce_en` is settable.
    pub(super) fn modify_nic_vport_context(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, .. } = *c;
        let need = ops::MODIFY_VPORT_CTX_OFFSET + 4;
        require!(
            input.len() >= need,
            CmdStatus::BadInputLen,
            reason::INPUT_LEN
        );
        let select = get32(input, 0x0c);
        require!(
            select & !ops::FIELD_SELECT_ROCE_EN == 0,
            CmdStatus::BadParam,
            reason::FIELD
        );
        if select & ops::FIELD_SELECT_ROCE_EN != 0 {
            self.roce_en = get32(input, ops::MODIFY_VPORT_CTX_OFFSET) & 1 != 0;
        }
        Outcome::Ok(ok(16))
    }

    /// QUERY_NIC_VPORT_CONTEXT (Ethernet).
    pub(super) fn query_nic_vport_context(&mut self, c: &Cmd) -> Outcome {
        let Cmd { outlen, .. } = *c;
        let c = ops::QUERY_VPORT_CTX_OFFSET;
        require!(
            outlen >= c + 0x100,
            CmdStatus::BadOutputLen,
            reason::OUTPUT_LEN
        );
        let mut o = ok(c + 0x100);
        o[c + 3] = self.roce_en as u8;
        // The vport MTU is the hardware MTU, as PMTU reports it.
        o[c + 0x26..c + 0x28].copy_from_slice(&self.cfg.port_mtu.to_be_bytes());
        o[c + 0xf6..c + 0xfc].copy_from_slice(&self.cfg.mac);
        let g = c + ops::NIC_VPORT_SYSTEM_IMAGE_GUID;
        o[g..g + 8].copy_from_slice(&self.cfg.system_image_guid.to_be_bytes());
        o[g + 8..g + 16].copy_from_slice(&self.cfg.node_guid.to_be_bytes());
        o[g + 16..g + 24].copy_from_slice(&self.cfg.node_guid.to_be_bytes());
        Outcome::Ok(o)
    }

    /// QUERY_HCA_VPORT_CONTEXT (InfiniBand).
    pub(super) fn query_hca_vport_context(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, outlen, .. } = *c;
        let c = ops::QUERY_HCA_VPORT_CTX_OFFSET;
        let need = c + ops::HCA_VPORT_CTX_LEN;
        require!(outlen >= need, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
        let port = (get32(input, 0x08) >> 16) & 0xf;
        let ports = self.cfg.caps.num_ports as u32;
        require!(
            port <= ports && (port != 0 || ports != 2),
            CmdStatus::BadParam,
            reason::FIELD
        );
        let mut o = ok(need);
        let up = self.cfg.port_state == 1;
        // port_physical_state 5 LinkUp / 3 Disabled; vport_state and
        // port_state 4 Active / 1 Down (IB port states).
        let (phys, state) = if up { (5u32, 4u32) } else { (3, 1) };
        let dw8 = (phys << 12) | (state << 4) | state;
        o[c + 0x20..c + 0x24].copy_from_slice(&dw8.to_be_bytes());
        o[c + 0x28..c + 0x30].copy_from_slice(&self.cfg.system_image_guid.to_be_bytes());
        o[c + 0x30..c + 0x38].copy_from_slice(&self.cfg.node_guid.to_be_bytes());
        o[c + 0x38..c + 0x40].copy_from_slice(&self.cfg.node_guid.to_be_bytes());
        let dw24 = ((self.cfg.lid as u32) << 16) | (((self.cfg.lmc & 7) as u32) << 5) | 18;
        o[c + 0x60..c + 0x64].copy_from_slice(&dw24.to_be_bytes());
        let dw25 = (self.cfg.sm_lid as u32) << 16;
        o[c + 0x64..c + 0x68].copy_from_slice(&dw25.to_be_bytes());
        Outcome::Ok(o)
    }

    /// QUERY_ADAPTER.
    pub(super) fn query_adapter(&mut self, c: &Cmd) -> Outcome {
        let Cmd { outlen, .. } = *c;
        let a = ops::QUERY_ADAPTER_STRUCT;
        let need = a + ops::QUERY_ADAPTER_STRUCT_LEN;
        require!(outlen >= need, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
        let mut o = ok(need);
        let v = a + ops::ADAPTER_IEEE_VENDOR_ID;
        o[v..v + 4].copy_from_slice(&(self.cfg.ieee_vendor_id & 0xff_ffff).to_be_bytes());
        let p = a + ops::ADAPTER_PSID;
        o[p..p + 16].copy_from_slice(&self.cfg.psid);
        Outcome::Ok(o)
    }
}
