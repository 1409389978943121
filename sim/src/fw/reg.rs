//! ACCESS_REG ([ref §7.6](bareverbs::reference)): the HOST_ENDIANNESS and
//! PMTU registers.

use super::handler::{ok, require, Cmd, Outcome};
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::bits::get16;
use bareverbs::cmd::layout::pmtu;
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
        require!(c.need_in(0x20), CmdStatus::BadInputLen, reason::INPUT_LEN);
        match (get16(input, 0x0a), op_mod) {
            (ops::REG_HOST_ENDIANNESS, ops::ACCESS_REG_WRITE) => {
                self.host_endianness = Some(input[ops::REG_DATA]);
                Outcome::Ok(ok(0x20.min(outlen)))
            }
            (ops::REG_PMTU, ops::ACCESS_REG_READ) if self.cfg.pmtu_supported => {
                require!(outlen >= 0x20, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
                let port = pmtu::LOCAL_PORT.get(input, ops::REG_DATA);
                require!(
                    (1..=cur.num_ports.max(1) as u32).contains(&port),
                    CmdStatus::BadParam,
                    reason::FIELD
                );
                let mut o = ok(0x20);
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
