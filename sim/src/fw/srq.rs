//! Shared receive queues: CREATE_SRQ and DESTROY_SRQ (refused while a QP
//! uses the SRQ).

use super::handler::{ok, require, Cmd, Outcome};
use super::objects::{ObjectEvent, SrqObj};
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::layout::{cmd_in, srqc};
use bareverbs::cmd::ops::{PAS_OFFSET, SRQC};
use bareverbs::cmd::CmdStatus;
use Outcome::{Fail, NeedPages};

impl SimFirmware {
    /// CREATE_SRQ.
    pub(super) fn create_srq(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, cur, .. } = *c;
        if input.len() < PAS_OFFSET {
            return Fail(CmdStatus::BadInputLen, reason::INPUT_LEN);
        }
        let log = srqc::LOG_SRQ_SIZE.get(input, SRQC) as u8;
        let stride = srqc::LOG_RQ_STRIDE.get(input, SRQC) as u8;
        let pd = srqc::PD.get(input, SRQC);
        let dbr = srqc::DBR_ADDR.get(input, SRQC);
        if log > cur.log_max_srq_sz {
            return Fail(CmdStatus::BadParam, reason::SIZE);
        }
        if !self.objects.pds.contains_key(&pd) {
            return Fail(CmdStatus::BadResource, reason::UNKNOWN_OBJECT);
        }
        let npages = ((1usize << log) << (stride + 4)).div_ceil(4096);
        let pages = match self.check_pas(input, npages) {
            Ok(p) => p,
            Err((s, r)) => return Fail(s, r),
        };
        if !self.mapped(dbr, 4) {
            return Fail(CmdStatus::BadParam, reason::ADDRESS);
        }
        if self.objects.srqs.len() as u64 >= 1u64 << cur.log_max_srq.min(32) {
            return Fail(CmdStatus::ExceedLimit, reason::LIMIT);
        }
        if let Err(n) = self.charge() {
            return NeedPages(n);
        }
        let srqn = self.objects.fresh();
        let s = SrqObj {
            srqn,
            log_size: log,
            log_stride: stride,
            pd,
            dbr_addr: dbr,
            pages,
        };
        if !self.admit(ObjectEvent::SrqCreated(s.clone())) {
            self.uncharge();
            return Fail(CmdStatus::BadParam, reason::DATA_PATH);
        }
        self.objects.srqs.insert(srqn, s);
        let mut o = ok(16);
        cmd_in::OBJ_ID.set(&mut o, 0, srqn);
        Outcome::Ok(o)
    }

    /// DESTROY_SRQ.
    pub(super) fn destroy_srq(&mut self, c: &Cmd) -> Outcome {
        let Cmd { id, .. } = *c;
        require!(
            self.objects.srqs.contains_key(&id),
            CmdStatus::BadResource,
            reason::UNKNOWN_OBJECT
        );
        let used = self.objects.qps.values().any(|q| q.srqn == Some(id));
        require!(!used, CmdStatus::BadResState, reason::IN_USE);
        self.objects.srqs.remove(&id);
        self.uncharge();
        self.notify(ObjectEvent::SrqDestroyed(id));
        Outcome::Ok(ok(16))
    }
}
