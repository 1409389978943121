//! ACCESS_REG ([ref §7.6](bareverbs::reference)): the HOST_ENDIANNESS and
//! PMTU registers.

use super::handler::{ok, require, Cmd, Outcome};
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::layout::{access_register_in, host_endianness_reg, pmtu};
use bareverbs::cmd::ops;
use bareverbs::cmd::CmdStatus;
use Outcome::Fail;

impl SimFirmware {
    /// ACCESS_REG: writes HOST_ENDIANNESS, reads PMTU.
    pub(super) fn access_reg(&mut self, c: &Cmd) -> Outcome {
        let Cmd {
            input,
            outlen,
            op_mod,
            cur,
            ..
        } = *c;
        // Register id at byte 0x0a, data from 0x10 (ref §7.6
        // step 7; op_mod 0 = write, 1 = read). HOST_ENDIANNESS
        // (write only) and PMTU (read only, linux `mlx5_ifc.h`
        // pmtu_reg) are modelled; any other register or direction is
        // BAD_PARAM.
        require!(
            self.hca_enabled(),
            CmdStatus::BadSysState,
            reason::HCA_STATE
        );
        // Both registers are 16 bytes.
        let reg_end = ops::REG_DATA + host_endianness_reg::LEN;
        require!(
            c.need_in(reg_end),
            CmdStatus::BadInputLen,
            reason::INPUT_LEN
        );
        let register_id = access_register_in::REGISTER_ID.get(input, 0) as u16;
        match (register_id, op_mod) {
            (ops::REG_HOST_ENDIANNESS, ops::ACCESS_REG_WRITE) => {
                let he = host_endianness_reg::HE.get(input, ops::REG_DATA) as u8;
                self.host_endianness = Some(he);
                Outcome::Ok(ok(reg_end.min(outlen)))
            }
            (ops::REG_PMTU, ops::ACCESS_REG_READ) if self.cfg.pmtu_supported => {
                let reg_end = ops::REG_DATA + ops::PMTU_LEN;
                require!(
                    outlen >= reg_end,
                    CmdStatus::BadOutputLen,
                    reason::OUTPUT_LEN
                );
                let port = pmtu::LOCAL_PORT.get(input, ops::REG_DATA);
                require!(
                    (1..=cur.num_ports.max(1) as u32).contains(&port),
                    CmdStatus::BadParam,
                    reason::FIELD
                );
                let mut o = ok(reg_end);
                let r = ops::REG_DATA;
                pmtu::LOCAL_PORT.set(&mut o, r, port);
                pmtu::MAX_MTU.set(&mut o, r, self.cfg.port_max_mtu as u32);
                pmtu::ADMIN_MTU.set(&mut o, r, self.cfg.port_mtu as u32);
                pmtu::OPER_MTU.set(&mut o, r, self.cfg.port_mtu as u32);
                Outcome::Ok(o)
            }
            _ => Fail(CmdStatus::BadParam, reason::FIELD),
        }
    }
}
