//! UAR pages: ALLOC_UAR hands out BAR0 page indices from [`FIRST_UAR`],
//! DEALLOC_UAR frees one no queue uses.

use super::handler::{ok, require, Cmd, Outcome};
use super::status::reason;
use super::{SimFirmware, BAR0_SIZE, FIRST_UAR};
use bareverbs::cmd::layout::cmd_in;
use bareverbs::cmd::CmdStatus;
use Outcome::Fail;

impl SimFirmware {
    /// ALLOC_UAR: the lowest free index.
    pub(super) fn alloc_uar(&mut self) -> Outcome {
        let used: Vec<u32> = self.objects.uars.keys().copied().collect();
        let idx = (FIRST_UAR..(BAR0_SIZE / 4096) as u32).find(|i| !used.contains(i));
        let Some(idx) = idx else {
            return Fail(CmdStatus::ExceedLimit, reason::LIMIT);
        };
        self.objects.uars.insert(idx, ());
        let mut o = ok(16);
        cmd_in::OBJ_ID.set(&mut o, 0, idx);
        Outcome::Ok(o)
    }

    /// DEALLOC_UAR: refused while a QP, CQ or EQ uses the page.
    pub(super) fn dealloc_uar(&mut self, c: &Cmd) -> Outcome {
        let Cmd { id, .. } = *c;
        require!(
            self.objects.uars.contains_key(&id),
            CmdStatus::BadResource,
            reason::UNKNOWN_OBJECT
        );
        let used = self.objects.qps.values().any(|q| q.uar == id)
            || self.objects.cqs.values().any(|c| c.uar == id)
            || self.objects.eqs.values().any(|e| e.uar == id);
        require!(!used, CmdStatus::BadResState, reason::IN_USE);
        self.objects.uars.remove(&id);
        Outcome::Ok(ok(16))
    }
}
