//! Protection domains: ALLOC_PD (within `log_max_pd`) and DEALLOC_PD.

use super::handler::{ok, require, Cmd, Outcome};
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::layout::cmd_in;
use bareverbs::cmd::CmdStatus;

impl SimFirmware {
    /// ALLOC_PD: a fresh number.
    pub(super) fn alloc_pd(&mut self, c: &Cmd) -> Outcome {
        let Cmd { cur, .. } = *c;
        require!(
            (self.objects.pds.len() as u64) < 1u64 << cur.log_max_pd.min(32),
            CmdStatus::ExceedLimit,
            reason::LIMIT
        );
        let pd = self.objects.fresh();
        self.objects.pds.insert(pd, ());
        let mut o = ok(16);
        cmd_in::OBJ_ID.set(&mut o, 0, pd);
        Outcome::Ok(o)
    }

    /// DEALLOC_PD: refused while a QP, memory key or SRQ uses it.
    pub(super) fn dealloc_pd(&mut self, c: &Cmd) -> Outcome {
        let Cmd { id, .. } = *c;
        require!(
            self.objects.pds.contains_key(&id),
            CmdStatus::BadResource,
            reason::UNKNOWN_OBJECT
        );
        let used = self.objects.qps.values().any(|q| q.pd == id)
            || self.objects.mkeys.values().any(|m| m.pd == id)
            || self.objects.srqs.values().any(|s| s.pd == id);
        require!(!used, CmdStatus::BadResState, reason::IN_USE);
        self.objects.pds.remove(&id);
        Outcome::Ok(ok(16))
    }
}
