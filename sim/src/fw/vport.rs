//! The port as commands see it: QUERY_VPORT_STATE, the NIC vport context
//! (`roce_en`, MTU, MAC, GUIDs), the HCA vport context (InfiniBand port
//! state, GUIDs, LIDs) and QUERY_ADAPTER (vendor id, PSID).

use super::handler::{ok, require, Cmd, Outcome};
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::layout::{
    hca_vport, modify_nic_vport_context_in, nic_vport, query_adapter_param_block,
    query_vport_state_out,
};
use bareverbs::cmd::ops;
use bareverbs::cmd::CmdStatus;

impl SimFirmware {
    /// QUERY_VPORT_STATE: the configured port state.
    pub(super) fn query_vport_state(&mut self) -> Outcome {
        let mut o = ok(16);
        query_vport_state_out::ADMIN_STATE.set(&mut o, 0, 1);
        query_vport_state_out::STATE.set(&mut o, 0, (self.cfg.port_state & 0xf) as u32);
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
        let select = modify_nic_vport_context_in::FIELD_SELECT.get(input, 0);
        require!(
            select & !ops::FIELD_SELECT_ROCE_EN == 0,
            CmdStatus::BadParam,
            reason::FIELD
        );
        if select & ops::FIELD_SELECT_ROCE_EN != 0 {
            self.roce_en = nic_vport::ROCE_EN.get(input, ops::MODIFY_VPORT_CTX_OFFSET) != 0;
        }
        Outcome::Ok(ok(16))
    }

    /// QUERY_NIC_VPORT_CONTEXT (Ethernet).
    pub(super) fn query_nic_vport_context(&mut self, c: &Cmd) -> Outcome {
        let Cmd { outlen, .. } = *c;
        let c = ops::QUERY_VPORT_CTX_OFFSET;
        require!(
            outlen >= c + ops::VPORT_CTX_LEN,
            CmdStatus::BadOutputLen,
            reason::OUTPUT_LEN
        );
        let mut o = ok(c + ops::VPORT_CTX_LEN);
        nic_vport::ROCE_EN.set(&mut o, c, self.roce_en as u32);
        // The vport MTU is the hardware MTU, as PMTU reports it.
        nic_vport::MTU.set(&mut o, c, self.cfg.port_mtu as u32);
        let mac = c + nic_vport::PERMANENT_MAC;
        o[mac..mac + 6].copy_from_slice(&self.cfg.mac);
        nic_vport::SYSTEM_IMAGE_GUID.set(&mut o, c, self.cfg.system_image_guid);
        nic_vport::PORT_GUID.set(&mut o, c, self.cfg.node_guid);
        nic_vport::NODE_GUID.set(&mut o, c, self.cfg.node_guid);
        Outcome::Ok(o)
    }

    /// QUERY_HCA_VPORT_CONTEXT (InfiniBand).
    pub(super) fn query_hca_vport_context(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, outlen, .. } = *c;
        let c = ops::QUERY_HCA_VPORT_CTX_OFFSET;
        let need = c + ops::HCA_VPORT_CTX_LEN;
        require!(outlen >= need, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
        let port = hca_vport::IN_PORT_NUM.get(input, 0);
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
        use hca_vport as h;
        h::PORT_PHYSICAL_STATE.set(&mut o, c, phys);
        h::PORT_STATE.set(&mut o, c, state);
        h::VPORT_STATE.set(&mut o, c, state);
        h::SYSTEM_IMAGE_GUID.set(&mut o, c, self.cfg.system_image_guid);
        h::PORT_GUID.set(&mut o, c, self.cfg.node_guid);
        h::NODE_GUID.set(&mut o, c, self.cfg.node_guid);
        h::LID.set(&mut o, c, self.cfg.lid as u32);
        h::LMC.set(&mut o, c, (self.cfg.lmc & 7) as u32);
        h::SUBNET_TIMEOUT.set(&mut o, c, 18);
        h::SM_LID.set(&mut o, c, self.cfg.sm_lid as u32);
        Outcome::Ok(o)
    }

    /// QUERY_ADAPTER.
    pub(super) fn query_adapter(&mut self, c: &Cmd) -> Outcome {
        let Cmd { outlen, .. } = *c;
        let a = ops::QUERY_ADAPTER_STRUCT;
        let need = a + ops::QUERY_ADAPTER_STRUCT_LEN;
        require!(outlen >= need, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
        let mut o = ok(need);
        use query_adapter_param_block as q;
        q::IEEE_VENDOR_ID.set(&mut o, a, self.cfg.ieee_vendor_id & 0xff_ffff);
        let p = a + q::VSD_CONTD_PSID;
        o[p..p + q::VSD_CONTD_PSID_LEN].copy_from_slice(&self.cfg.psid);
        Outcome::Ok(o)
    }
}
