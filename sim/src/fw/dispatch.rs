//! Command dispatch ([ref §7.3–§7.12](bareverbs::reference)): which
//! handler runs each opcode. The HCA life-cycle, ISSI, page, register and
//! capability commands run in any state (each checks its own); every other
//! command needs an initialized HCA.

use super::handler::{ok, Cmd, Outcome};
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::op;
use bareverbs::cmd::ops;
use bareverbs::cmd::CmdStatus;
use Outcome::Fail;

impl SimFirmware {
    /// Runs the command in `input` with `outlen` output bytes allowed.
    pub(super) fn execute(&mut self, input: &[u8], outlen: usize) -> Outcome {
        let c = Cmd::decode(input, outlen, &self.cur_caps);
        match c.opcode {
            op::ENABLE_HCA => self.enable_hca(),
            op::DISABLE_HCA => self.disable_hca(),
            op::NOP => Outcome::Ok(ok(16)),
            op::QUERY_ISSI => self.query_issi(&c),
            op::SET_ISSI => self.set_issi(&c),
            op::QUERY_PAGES => self.query_pages(&c),
            op::MANAGE_PAGES => self.manage_pages(&c),
            op::ACCESS_REG => self.access_reg(&c),
            op::QUERY_HCA_CAP if ops::cap_op_mod_parts(c.op_mod).0 == ops::CapType::Roce as u16 => {
                self.query_roce_cap(&c)
            }
            op::QUERY_HCA_CAP => self.query_hca_cap(&c),
            // SET_HCA_CAP carries no current bit: op_mod 9 goes to the
            // general handler, which refuses it.
            op::SET_HCA_CAP if c.op_mod == ops::CapType::Roce.set_op_mod() => self.set_roce_cap(&c),
            op::SET_HCA_CAP => self.set_hca_cap(&c),
            op::INIT_HCA => self.init_hca(),
            op::TEARDOWN_HCA => self.teardown_hca(&c),
            _ if !self.hca_initialized() => before_init(c.opcode),
            op::ALLOC_UAR => self.alloc_uar(),
            op::DEALLOC_UAR => self.dealloc_uar(&c),
            op::ALLOC_PD => self.alloc_pd(&c),
            op::DEALLOC_PD => self.dealloc_pd(&c),
            op::CREATE_MKEY => self.create_mkey(&c),
            op::DESTROY_MKEY => self.destroy_mkey(&c),
            op::CREATE_EQ => self.create_eq(&c),
            op::DESTROY_EQ => self.destroy_eq(&c),
            op::CREATE_CQ => self.create_cq(&c),
            op::DESTROY_CQ => self.destroy_cq(&c),
            op::CREATE_QP => self.create_qp(&c),
            op::DESTROY_QP => self.destroy_qp(&c),
            op::RST2INIT_QP
            | op::INIT2INIT_QP
            | op::INIT2RTR_QP
            | op::RTR2RTS_QP
            | op::RTS2RTS_QP
            | op::SQERR2RTS_QP
            | op::SQD_RTS_QP
            | op::QP_2ERR
            | op::QP_2RST => self.modify_qp(&c),
            op::QUERY_QP => self.query_qp(&c),
            op::CREATE_SRQ => self.create_srq(&c),
            op::DESTROY_SRQ => self.destroy_srq(&c, false),
            op::CREATE_RMP => self.create_rmp(&c),
            op::DESTROY_RMP => self.destroy_srq(&c, true),
            op::SET_ROCE_ADDRESS => self.set_roce_address(&c),
            op::QUERY_ROCE_ADDRESS => self.query_roce_address(&c),
            op::QUERY_VPORT_STATE => self.query_vport_state(),
            op::MODIFY_NIC_VPORT_CONTEXT => self.modify_nic_vport_context(&c),
            op::QUERY_NIC_VPORT_CONTEXT => self.query_nic_vport_context(&c),
            op::QUERY_ADAPTER => self.query_adapter(&c),
            op::QUERY_HCA_VPORT_CONTEXT => self.query_hca_vport_context(&c),
            _ => Fail(CmdStatus::BadOp, reason::UNKNOWN_OPCODE),
        }
    }
}

/// A command other than the life-cycle ones before INIT_HCA: a known
/// opcode is in the wrong state, an unknown one is a bad opcode.
fn before_init(opcode: u16) -> Outcome {
    if is_known(opcode) {
        Fail(CmdStatus::BadSysState, reason::HCA_STATE)
    } else {
        Fail(CmdStatus::BadOp, reason::UNKNOWN_OPCODE)
    }
}

fn is_known(opcode: u16) -> bool {
    bareverbs::cmd::opcode_name(opcode) != "UNKNOWN"
}
