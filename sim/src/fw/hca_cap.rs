//! Capabilities ([ref §3.11, §7.6](bareverbs::reference)): QUERY_HCA_CAP
//! (general maximum/current pages and the RoCE page) and SET_HCA_CAP
//! (the settable fields, within the maxima).

use super::handler::{ok, require, Cmd, Outcome};
use super::status::reason;
use super::{HcaState, SimFirmware};
use bareverbs::cmd::caps::{self, HcaCaps, GENERAL_CAP_LEN};
use bareverbs::cmd::layout::roce_cap;
use bareverbs::cmd::ops::{self, CAP_LEN, CAP_OFFSET};
use bareverbs::cmd::CmdStatus;
use Outcome::NeedPages;

/// End of the general capability structure in QUERY_HCA_CAP's output and
/// SET_HCA_CAP's input.
const GENERAL: usize = CAP_OFFSET + GENERAL_CAP_LEN;

impl SimFirmware {
    /// The RoCE capability page, current (`true`) or maximum.
    fn roce_page(&self, current: bool) -> [u8; roce_cap::LEN] {
        let mut p = [0u8; roce_cap::LEN];
        p[0] = self.cfg.roce_cap_byte0;
        if current {
            roce_cap::SW_R_ROCE_SRC_UDP_PORT.set(&mut p, 0, self.roce_sw_src_udp_port as u32);
        }
        roce_cap::QP_TS_FORMAT.set(&mut p, 0, self.cfg.qp_ts_format as u32);
        roce_cap::L3_TYPE.set(&mut p, 0, 0x6); // IPv4 and IPv6
        roce_cap::ROCE_VERSION.set(&mut p, 0, 0x5); // v1 and v2
        roce_cap::R_ROCE_DEST_UDP_PORT.set(&mut p, 0, 4791);
        roce_cap::ROCE_ADDRESS_TABLE_SIZE.set(&mut p, 0, self.cfg.roce_address_table_size as u32);
        p
    }

    /// SET_HCA_CAP of the RoCE page (op_mod 8): the current page sent
    /// back with only `sw_r_roce_src_udp_port` changed, on only where the
    /// maximum allows (as the vendor's `handle_hca_cap_roce` sends it).
    /// Anything else differing from the current page is BAD_PARAM.
    pub(super) fn set_roce_cap(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, .. } = *c;
        require!(
            matches!(self.hca, HcaState::Enabled),
            CmdStatus::BadSysState,
            reason::HCA_STATE
        );
        require!(self.cfg.caps.roce, CmdStatus::BadParam, reason::FIELD);
        let end = CAP_OFFSET + roce_cap::LEN;
        require!(c.need_in(end), CmdStatus::BadInputLen, reason::INPUT_LEN);
        let new = &input[CAP_OFFSET..end];
        let want = roce_cap::SW_R_ROCE_SRC_UDP_PORT.get(new, 0) == 1;
        let max = self.roce_page(false);
        require!(
            !want || roce_cap::SW_R_ROCE_SRC_UDP_PORT.get(&max, 0) == 1,
            CmdStatus::BadParam,
            reason::FIELD
        );
        let mut cur = self.roce_page(true);
        roce_cap::SW_R_ROCE_SRC_UDP_PORT.set(&mut cur, 0, want as u32);
        require!(cur[..] == new[..], CmdStatus::BadParam, reason::FIELD);
        self.roce_sw_src_udp_port = want;
        Outcome::Ok(ok(16))
    }

    /// QUERY_HCA_CAP of the RoCE capability page (op_mod 8 maximum, 9
    /// current).
    pub(super) fn query_roce_cap(&mut self, c: &Cmd) -> Outcome {
        let Cmd { outlen, op_mod, .. } = *c;
        require!(
            self.hca_enabled(),
            CmdStatus::BadSysState,
            reason::HCA_STATE
        );
        require!(self.cfg.caps.roce, CmdStatus::BadParam, reason::FIELD);
        require!(
            outlen >= GENERAL,
            CmdStatus::BadOutputLen,
            reason::OUTPUT_LEN
        );
        let mut o = ok((CAP_OFFSET + CAP_LEN).min(outlen));
        let page = self.roce_page(ops::cap_op_mod_parts(op_mod).1);
        let n = page.len().min(o.len() - CAP_OFFSET);
        o[CAP_OFFSET..CAP_OFFSET + n].copy_from_slice(&page[..n]);
        Outcome::Ok(o)
    }

    /// QUERY_HCA_CAP of the general page (maximum or current); needs the
    /// boot pages.
    pub(super) fn query_hca_cap(&mut self, c: &Cmd) -> Outcome {
        let Cmd { outlen, op_mod, .. } = *c;
        let max_caps = self.cfg.caps;
        require!(
            self.hca_enabled(),
            CmdStatus::BadSysState,
            reason::HCA_STATE
        );
        require!(
            ops::cap_op_mod_parts(op_mod).0 == ops::CapType::General as u16,
            CmdStatus::BadParam,
            reason::FIELD
        );
        require!(
            outlen >= GENERAL,
            CmdStatus::BadOutputLen,
            reason::OUTPUT_LEN
        );
        if (self.pages.len() as u32) < self.cfg.boot_pages {
            return NeedPages(self.cfg.boot_pages - self.pages.len() as u32);
        }
        let mut o = ok((CAP_OFFSET + CAP_LEN).min(outlen));
        if ops::cap_op_mod_parts(op_mod).1 {
            o[CAP_OFFSET..GENERAL].copy_from_slice(&self.cur_caps);
        } else {
            let mut m = [0u8; GENERAL_CAP_LEN];
            max_caps.write(&mut m);
            o[CAP_OFFSET..GENERAL].copy_from_slice(&m);
        }
        Outcome::Ok(o)
    }

    /// SET_HCA_CAP: copies the settable fields, none above its maximum.
    pub(super) fn set_hca_cap(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, op_mod, .. } = *c;
        let max_caps = self.cfg.caps;
        require!(
            matches!(self.hca, HcaState::Enabled),
            CmdStatus::BadSysState,
            reason::HCA_STATE
        );
        require!(
            ops::cap_op_mod_parts(op_mod).0 == ops::CapType::General as u16,
            CmdStatus::BadParam,
            reason::FIELD
        );
        require!(
            c.need_in(GENERAL),
            CmdStatus::BadInputLen,
            reason::INPUT_LEN
        );
        if (self.pages.len() as u32) < self.cfg.boot_pages {
            return NeedPages(self.cfg.boot_pages - self.pages.len() as u32);
        }
        let new = HcaCaps::parse(&input[CAP_OFFSET..GENERAL]);
        require!(
            new.log_max_qp <= max_caps.log_max_qp
                && new.log_max_qp_sz <= max_caps.log_max_qp_sz
                && new.log_max_cq <= max_caps.log_max_cq
                && new.log_max_cq_sz <= max_caps.log_max_cq_sz
                && new.log_max_mkey <= max_caps.log_max_mkey
                && new.log_max_pd <= max_caps.log_max_pd
                && (!new.uar_4k || max_caps.uar_4k)
                && (!new.mkey_by_name || max_caps.mkey_by_name),
            CmdStatus::BadParam,
            reason::SIZE
        );
        // Settable fields only.
        let mut c = self.cur_caps;
        for f in [
            caps::field::CMDIF_CHECKSUM,
            caps::field::LOG_UAR_PAGE_SZ,
            caps::field::LOG_MAX_QP,
            caps::field::UAR_4K,
            caps::field::MKEY_BY_NAME,
            caps::field::PKEY_TABLE_SIZE,
        ] {
            caps::set(&mut c, f, caps::get(&input[CAP_OFFSET..GENERAL], f));
        }
        self.cur_caps = c;
        Outcome::Ok(ok(16))
    }
}

#[cfg(test)]
mod tests {
    use super::super::FwConfig;
    use super::*;
    use crate::dma::HeapDma;
    use bareverbs::cmd::ops;
    use std::sync::Arc;

    /// An enabled function (SET_HCA_CAP's state) under `cfg`.
    fn enabled(cfg: FwConfig) -> SimFirmware {
        let mut f = SimFirmware::new(Arc::new(HeapDma::new()), cfg);
        let mut b = [0u8; 16];
        let r = ops::enable_hca(&mut b);
        assert!(matches!(f.execute(&b[..r.in_len], 16), Outcome::Ok(_)));
        f
    }

    /// SET_HCA_CAP op_mod 8 takes the current RoCE page back with only
    /// `sw_r_roce_src_udp_port` changed, on only where the maximum allows.
    #[test]
    fn roce_set_hca_cap_changes_only_the_udp_port_bit() {
        let mut f = enabled(FwConfig::default());
        let cur = f.roce_page(true);
        let max = f.roce_page(false);
        assert_eq!(roce_cap::SW_R_ROCE_SRC_UDP_PORT.get(&cur, 0), 0);
        let mut b = vec![0u8; 0x1010];
        // Another field changed as well: refused.
        let mut page = cur;
        roce_cap::SW_R_ROCE_SRC_UDP_PORT.set(&mut page, 0, 1);
        page[3] ^= 1; // qp_ts_format
        let r = ops::set_hca_cap(&mut b, ops::CapType::Roce, &page);
        assert!(matches!(
            f.execute(&b[..r.in_len], 16),
            Outcome::Fail(CmdStatus::BadParam, reason::FIELD)
        ));
        assert!(!f.roce_sw_src_udp_port);
        // The vendor form: accepted.
        let r = ops::set_roce_src_udp_port(&mut b, &cur, &max).unwrap();
        assert!(matches!(f.execute(&b[..r.in_len], 16), Outcome::Ok(_)));
        assert!(f.roce_sw_src_udp_port);
        // Not settable (maximum 0): refused.
        let mut f = enabled(FwConfig {
            roce_cap_byte0: 0x06,
            ..FwConfig::default()
        });
        let mut page = f.roce_page(true);
        roce_cap::SW_R_ROCE_SRC_UDP_PORT.set(&mut page, 0, 1);
        let r = ops::set_hca_cap(&mut b, ops::CapType::Roce, &page);
        assert!(matches!(
            f.execute(&b[..r.in_len], 16),
            Outcome::Fail(CmdStatus::BadParam, reason::FIELD)
        ));
    }
}
