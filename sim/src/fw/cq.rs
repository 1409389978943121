//! Completion queues ([ref §7.10](bareverbs::reference)): CREATE_CQ and
//! DESTROY_CQ (refused while a QP uses the CQ).

use super::handler::{ok, require, Cmd, Outcome};
use super::objects::{CqObj, ObjectEvent};
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::layout::{cmd_in, cqc};
use bareverbs::cmd::ops::CQC;
use bareverbs::cmd::CmdStatus;
use Outcome::{Fail, NeedPages};

impl SimFirmware {
    /// CREATE_CQ.
    pub(super) fn create_cq(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, cur, .. } = *c;
        let cqe_sz = cqc::CQE_SZ.get(input, CQC) as u8;
        let log = cqc::LOG_CQ_SIZE.get(input, CQC) as u8;
        let uar = cqc::UAR_PAGE.get(input, CQC);
        let eqn = cqc::C_EQN.get(input, CQC) as u8;
        let dbr = cqc::DBR_ADDR.get(input, CQC);
        if cqe_sz > 1 || log > cur.log_max_cq_sz || log == 0 {
            return Fail(CmdStatus::BadParam, reason::SIZE);
        }
        if !self.objects.uars.contains_key(&uar) {
            return Fail(CmdStatus::BadParam, reason::UNKNOWN_OBJECT);
        }
        // `c_eqn` must name an EQ CREATE_EQ made, also when there is none
        // (a CQ naming "EQ 0" of a function without EQs names nothing).
        // BAD_PARAM: the context's field names no object, the status the
        // model gives every unknown object number inside a context.
        if !self.objects.eqs.contains_key(&eqn) {
            return Fail(CmdStatus::BadParam, reason::UNKNOWN_OBJECT);
        }
        let npages = ((1usize << log) * (64 << cqe_sz)).div_ceil(4096);
        let pages = match self.check_pas(input, npages) {
            Ok(p) => p,
            Err((s, r)) => return Fail(s, r),
        };
        if !self.mapped(dbr, 8) {
            return Fail(CmdStatus::BadParam, reason::ADDRESS);
        }
        if self.objects.cqs.len() as u64 >= 1u64 << cur.log_max_cq.min(32) {
            return Fail(CmdStatus::ExceedLimit, reason::LIMIT);
        }
        if let Err(n) = self.charge() {
            return NeedPages(n);
        }
        let cqn = self.objects.fresh();
        let c = CqObj {
            cqn,
            log_size: log,
            cqe_sz,
            uar,
            eqn,
            dbr_addr: dbr,
            pages,
        };
        if !self.admit(ObjectEvent::CqCreated(c.clone())) {
            self.uncharge();
            return Fail(CmdStatus::BadParam, reason::DATA_PATH);
        }
        self.objects.cqs.insert(cqn, c);
        let mut o = ok(16);
        cmd_in::OBJ_ID.set(&mut o, 0, cqn);
        Outcome::Ok(o)
    }

    /// DESTROY_CQ.
    pub(super) fn destroy_cq(&mut self, c: &Cmd) -> Outcome {
        let Cmd { id, .. } = *c;
        require!(
            self.objects.cqs.contains_key(&id),
            CmdStatus::BadResource,
            reason::UNKNOWN_OBJECT
        );
        let used = self
            .objects
            .qps
            .values()
            .any(|q| q.cqn_snd == id || q.cqn_rcv == id);
        require!(!used, CmdStatus::BadResState, reason::IN_USE);
        self.objects.cqs.remove(&id);
        self.uncharge();
        self.notify(ObjectEvent::CqDestroyed(id));
        Outcome::Ok(ok(16))
    }
}
