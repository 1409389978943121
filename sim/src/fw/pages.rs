//! Firmware pages ([ref §7.7](bareverbs::reference)): QUERY_PAGES,
//! MANAGE_PAGES (give, take, cannot give), what the HCA state and the
//! objects require, per-object charging, and PAGE_REQUEST events.

use super::cmdq::MAX_FW_MSG;
use super::handler::{ok, require, Cmd, Outcome};
use super::status::{reason, syndrome};
use super::{HcaState, SimFirmware};
use bareverbs::cmd::bits::{get64, put64};
use bareverbs::cmd::eq::event;
use bareverbs::cmd::layout::{cmd_out, eqe, manage_pages_in, manage_pages_out, query_pages_out};
use bareverbs::cmd::ops::{ManagePagesOp, PagesKind};
use bareverbs::cmd::queue::layout;
use bareverbs::cmd::CmdStatus;
use Outcome::Fail;

impl SimFirmware {
    /// QUERY_PAGES: boot, init or regular pages still needed.
    pub(super) fn query_pages(&mut self, c: &Cmd) -> Outcome {
        let Cmd { op_mod, .. } = *c;
        require!(
            self.hca_enabled(),
            CmdStatus::BadSysState,
            reason::HCA_STATE
        );
        let held = self.pages.len() as u32;
        let n = match PagesKind::from_op_mod(op_mod) {
            Some(PagesKind::Boot) => self.cfg.boot_pages.saturating_sub(held),
            Some(PagesKind::Init) => match self.cfg.init_pages_reported {
                Some(n) => n,
                None => (self.cfg.boot_pages + self.cfg.init_pages).saturating_sub(held),
            },
            Some(PagesKind::PostInit) => 0,
            None => return Fail(CmdStatus::BadParam, reason::FIELD),
        };
        let mut o = ok(16);
        query_pages_out::NUM_PAGES.set(&mut o, 0, n);
        Outcome::Ok(o)
    }

    /// MANAGE_PAGES: take the pages the driver gives (op_mod 1), return
    /// releasable ones (2), or fail what waits for pages (0).
    pub(super) fn manage_pages(&mut self, c: &Cmd) -> Outcome {
        let Cmd {
            input,
            outlen,
            opcode,
            op_mod,
            ..
        } = *c;
        require!(
            self.hca_enabled() || !self.pages.is_empty(),
            CmdStatus::BadSysState,
            reason::HCA_STATE
        );
        let n = manage_pages_in::INPUT_NUM_ENTRIES.get(input, 0) as usize;
        match ManagePagesOp::from_op_mod(op_mod) {
            Some(ManagePagesOp::Give) => {
                require!(
                    n <= MAX_FW_MSG / 8 && c.need_in(manage_pages_in::PAS + 8 * n),
                    CmdStatus::BadInputLen,
                    reason::INPUT_LEN
                );
                let mut new = Vec::with_capacity(n);
                for i in 0..n {
                    let p = get64(input, manage_pages_in::PAS + 8 * i);
                    require!(
                        p & 0xfff == 0
                            && self.mapped(p, 4096)
                            && !self.pages.contains(&p)
                            && !new.contains(&p),
                        CmdStatus::BadParam,
                        reason::ADDRESS
                    );
                    new.push(p);
                }
                self.pages.extend(new);
                Outcome::Ok(ok(16))
            }
            Some(ManagePagesOp::Take) => {
                let releasable = match self.hca {
                    HcaState::Initialized | HcaState::Enabled => {
                        (self.pages.len() as u32).saturating_sub(self.required_pages()) as usize
                    }
                    _ => self.pages.len(),
                };
                let room = outlen.saturating_sub(manage_pages_out::PAS) / 8;
                let k = n.min(releasable).min(room);
                let mut o = ok(manage_pages_out::PAS + 8 * k);
                manage_pages_out::OUTPUT_NUM_ENTRIES.set(&mut o, 0, k as u32);
                for i in 0..k {
                    let p = self.pages.pop().unwrap_or(0);
                    put64(&mut o, manage_pages_out::PAS + 8 * i, p);
                }
                Outcome::Ok(o)
            }
            Some(ManagePagesOp::CantGive) => {
                // Driver cannot give pages: fail whatever waits for them.
                for s in std::mem::take(&mut self.pending) {
                    let mut o = ok(16);
                    cmd_out::STATUS.set(&mut o, 0, CmdStatus::NoResources.code() as u32);
                    cmd_out::SYNDROME.set(&mut o, 0, syndrome(opcode, reason::CANT_GIVE));
                    if let Some(a) = self
                        .entry_addr(s)
                        .and_then(|b| b.checked_add(layout::OUT as u64))
                    {
                        self.wr(a, &o);
                    }
                    self.finish(s, 0);
                }
                Outcome::Ok(ok(16))
            }
            None => Fail(CmdStatus::BadParam, reason::FIELD),
        }
    }

    /// Posts a PAGE_REQUEST EQE ([ref §7.7](bareverbs::reference)) on an EQ subscribed to it.
    pub(super) fn request_pages(&mut self, num_pages: i32) -> bool {
        let mut e = [0u8; 64];
        e[eqe::EVENT_TYPE] = event::PAGE_REQUEST;
        eqe::PAGE_REQ_FUNC_ID.set(&mut e, 0, 0);
        eqe::PAGE_REQ_NUM_PAGES.set(&mut e, 0, num_pages as u32);
        self.post_eqe(e)
    }

    fn required_pages(&self) -> u32 {
        let mut need = self.cfg.boot_pages;
        if matches!(self.hca, HcaState::Initialized) {
            need += self.cfg.init_pages;
        }
        let charged = self.charged_objects.saturating_sub(self.cfg.free_objects);
        need + charged * self.cfg.pages_per_object
    }

    /// Charges one object's pages; `Err(shortfall)` when firmware lacks pages.
    pub(super) fn charge(&mut self) -> Result<(), u32> {
        self.charged_objects += 1;
        let need = self.required_pages();
        let held = self.pages.len() as u32;
        if held < need {
            self.charged_objects -= 1;
            return Err(need - held);
        }
        Ok(())
    }

    /// Gives back one charged object (a destroy or a refused create).
    pub(super) fn uncharge(&mut self) {
        self.charged_objects = self.charged_objects.saturating_sub(1);
    }
}
