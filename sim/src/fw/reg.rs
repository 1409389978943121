//! ACCESS_REG ([ref §7.6](bareverbs::reference)): the HOST_ENDIANNESS and
//! PMTU registers.

use super::handler::{ok, require, Cmd, Outcome};
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::bits::{get16, get_bits, set_bits};
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
                self.host_endianness = Some(input[0x10]);
                Outcome::Ok(ok(0x20.min(outlen)))
            }
            (ops::REG_PMTU, ops::ACCESS_REG_READ) if self.cfg.pmtu_supported => {
                require!(outlen >= 0x20, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
                let port = get_bits(input, ops::REG_DATA, 0, 23, 16);
                require!(
                    (1..=cur.num_ports.max(1) as u32).contains(&port),
                    CmdStatus::BadParam,
                    reason::FIELD
                );
                let mut o = ok(0x20);
                let r = ops::REG_DATA;
                set_bits(&mut o, r, 0, 23, 16, port);
                set_bits(&mut o, r, 1, 31, 16, self.cfg.port_max_mtu as u32);
                set_bits(&mut o, r, 2, 31, 16, self.cfg.port_mtu as u32);
                set_bits(&mut o, r, 3, 31, 16, self.cfg.port_mtu as u32);
                Outcome::Ok(o)
            }
            _ => Fail(CmdStatus::BadParam, reason::FIELD),
        }
    }
}
