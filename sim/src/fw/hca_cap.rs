//! Capabilities ([ref §3.11, §7.6](bareverbs::reference)): QUERY_HCA_CAP
//! (general maximum/current pages and the RoCE page) and SET_HCA_CAP
//! (the settable fields, within the maxima).

use super::handler::{ok, require, Cmd, Outcome};
use super::status::reason;
use super::{HcaState, SimFirmware};
use bareverbs::cmd::caps::{self, HcaCaps, GENERAL_CAP_LEN};
use bareverbs::cmd::ops::{CAP_LEN, CAP_OFFSET};
use bareverbs::cmd::CmdStatus;
use Outcome::NeedPages;

/// End of the general capability structure in QUERY_HCA_CAP's output and
/// SET_HCA_CAP's input.
const GENERAL: usize = CAP_OFFSET + GENERAL_CAP_LEN;

impl SimFirmware {
    /// QUERY_HCA_CAP of the RoCE capability page.
    pub(super) fn query_roce_cap(&mut self, c: &Cmd) -> Outcome {
        let Cmd { outlen, .. } = *c;
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
        o[CAP_OFFSET] = self.cfg.roce_cap_byte0;
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
        require!(op_mod >> 1 == 0, CmdStatus::BadParam, reason::FIELD);
        require!(
            outlen >= GENERAL,
            CmdStatus::BadOutputLen,
            reason::OUTPUT_LEN
        );
        if (self.pages.len() as u32) < self.cfg.boot_pages {
            return NeedPages(self.cfg.boot_pages - self.pages.len() as u32);
        }
        let mut o = ok((CAP_OFFSET + CAP_LEN).min(outlen));
        if op_mod & 1 == 1 {
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
        require!(op_mod >> 1 == 0, CmdStatus::BadParam, reason::FIELD);
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
