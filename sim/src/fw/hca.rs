//! The HCA life cycle ([ref §7.6](bareverbs::reference)): ENABLE_HCA,
//! DISABLE_HCA, QUERY_ISSI/SET_ISSI, INIT_HCA and TEARDOWN_HCA (which
//! destroys every object).

use super::handler::{ok, require, Cmd, Outcome};
use super::objects::ObjectEvent;
use super::status::reason;
use super::{HcaState, SimFirmware};
use bareverbs::cmd::layout::{query_issi_out, set_issi_in, teardown_hca_in};
use bareverbs::cmd::CmdStatus;

impl SimFirmware {
    /// Whether the HCA is enabled (any state but disabled).
    pub(super) fn hca_enabled(&self) -> bool {
        !matches!(self.hca, HcaState::Disabled)
    }

    /// Whether INIT_HCA has run (and TEARDOWN_HCA not since).
    pub(super) fn hca_initialized(&self) -> bool {
        matches!(self.hca, HcaState::Initialized)
    }

    /// ENABLE_HCA: a disabled HCA becomes enabled.
    pub(super) fn enable_hca(&mut self) -> Outcome {
        if self.hca == HcaState::Disabled {
            self.hca = HcaState::Enabled;
        }
        Outcome::Ok(ok(16))
    }

    /// DISABLE_HCA: back to disabled, ISSI 0.
    pub(super) fn disable_hca(&mut self) -> Outcome {
        self.hca = HcaState::Disabled;
        self.issi = 0;
        Outcome::Ok(ok(16))
    }

    /// QUERY_ISSI: the current and the supported ISSIs.
    pub(super) fn query_issi(&mut self, c: &Cmd) -> Outcome {
        let Cmd { outlen, .. } = *c;
        require!(
            self.hca_enabled(),
            CmdStatus::BadSysState,
            reason::HCA_STATE
        );
        require!(
            outlen >= query_issi_out::LEN,
            CmdStatus::BadOutputLen,
            reason::OUTPUT_LEN
        );
        let mut o = ok(query_issi_out::LEN);
        query_issi_out::CURRENT_ISSI.set(&mut o, 0, self.issi as u32);
        query_issi_out::SUPPORTED_ISSI_DW0.set(&mut o, 0, self.cfg.supported_issi);
        Outcome::Ok(o)
    }

    /// SET_ISSI: one of the supported ISSIs.
    pub(super) fn set_issi(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, .. } = *c;
        require!(
            self.hca_enabled(),
            CmdStatus::BadSysState,
            reason::HCA_STATE
        );
        let v = set_issi_in::CURRENT_ISSI.get(input, 0) as u16;
        require!(
            v < 32 && self.cfg.supported_issi & (1 << v) != 0,
            CmdStatus::BadParam,
            reason::FIELD
        );
        self.issi = v;
        Outcome::Ok(ok(16))
    }

    /// INIT_HCA: needs the boot and init pages.
    pub(super) fn init_hca(&mut self) -> Outcome {
        require!(
            matches!(self.hca, HcaState::Enabled),
            CmdStatus::BadSysState,
            reason::HCA_STATE
        );
        let need = self.cfg.boot_pages + self.cfg.init_pages;
        require!(
            self.pages.len() as u32 >= need,
            CmdStatus::NoResources,
            reason::PAGES
        );
        self.hca = HcaState::Initialized;
        Outcome::Ok(ok(16))
    }

    /// TEARDOWN_HCA: destroys every object (announcing each) and keeps
    /// the number counters.
    pub(super) fn teardown_hca(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, .. } = *c;
        require!(
            self.hca_initialized(),
            CmdStatus::BadSysState,
            reason::HCA_STATE
        );
        let profile = teardown_hca_in::PROFILE.get(input, 0) as u16;
        require!(
            profile == 0 || profile == 2,
            CmdStatus::BadParam,
            reason::FIELD
        );
        let objs = std::mem::take(&mut self.objects);
        for q in objs.qps.keys() {
            self.notify(ObjectEvent::QpDestroyed(*q));
        }
        for c in objs.cqs.keys() {
            self.notify(ObjectEvent::CqDestroyed(*c));
        }
        for s in objs.srqs.keys() {
            self.notify(ObjectEvent::SrqDestroyed(*s));
        }
        for m in objs.mkeys.keys() {
            self.notify(ObjectEvent::MkeyDestroyed(*m));
        }
        // The GID table does not survive the function's teardown.
        for index in 0..std::mem::take(&mut self.gids).len() as u32 {
            self.notify(ObjectEvent::GidSet {
                index,
                gid: [0; 16],
                mac: [0; 6],
            });
        }
        self.objects.next_id = objs.next_id;
        self.objects.next_qpn = objs.next_qpn;
        self.charged_objects = 0;
        self.hca = HcaState::TornDown;
        Outcome::Ok(ok(16))
    }
}
