//! Shared receive queues ([ref §7.13](bareverbs::reference)): CREATE_RMP
//! and DESTROY_RMP, the form of ISSI 1, and the legacy CREATE_SRQ and
//! DESTROY_SRQ of ISSI 0; destroying is refused while a QP uses the queue.
//! Both forms make the same [`SrqObj`], so the receive data path is one.

use super::handler::{ok, require, Cmd, Outcome};
use super::objects::{ObjectEvent, SrqObj};
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::layout::{cmd_in, create_rmp_in, qpc, rmpc, srqc, wq};
use bareverbs::cmd::ops::{PAS_OFFSET, SRQC};
use bareverbs::cmd::CmdStatus;
use Outcome::{Fail, NeedPages};

impl SimFirmware {
    /// CREATE_SRQ: the ISSI-0 form only. Once ISSI 1 is set it is refused
    /// (BAD_OP): the vendor kernel's `srq_cmd.c` `create_srq_split` never
    /// issues it at ISSI ≥ 1 (a basic SRQ is an RMP there), so a driver
    /// sending it is not vendor-equal. A model choice: real firmware may
    /// still accept the legacy command.
    pub(super) fn create_srq(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, .. } = *c;
        if self.issi >= 1 {
            return Fail(CmdStatus::BadOp, reason::ISSI);
        }
        if input.len() < PAS_OFFSET {
            return Fail(CmdStatus::BadInputLen, reason::INPUT_LEN);
        }
        let q = SrqQueue {
            log: srqc::LOG_SRQ_SIZE.get(input, SRQC) as u8,
            stride: srqc::LOG_RQ_STRIDE.get(input, SRQC) as u8,
            pd: srqc::PD.get(input, SRQC),
            dbr: srqc::DBR_ADDR.get(input, SRQC),
            pas: PAS_OFFSET,
            rmp: false,
        };
        self.make_srq(c, q)
    }

    /// CREATE_RMP: `rmpc.state` RDY, `wq.wq_type` linked list (the SRQ
    /// WQE format the receive path reads), 4 KiB ring pages, an absolute
    /// `log_wq_stride` of 16 to 2048 bytes.
    pub(super) fn create_rmp(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, .. } = *c;
        // The RMP is an ISSI-1 object (the kernel's `create_srq_split`
        // sends CREATE_RMP only at ISSI ≥ 1): refused before SET_ISSI 1,
        // the mirror of CREATE_SRQ's refusal after it (a model choice).
        if self.issi < 1 {
            return Fail(CmdStatus::BadOp, reason::ISSI);
        }
        if input.len() < create_rmp_in::PAS {
            return Fail(CmdStatus::BadInputLen, reason::INPUT_LEN);
        }
        let w = create_rmp_in::WQ;
        let stride = wq::LOG_WQ_STRIDE.get(input, w) as u8;
        if rmpc::STATE.get(input, create_rmp_in::RMPC) != rmpc::STATE_RDY
            || wq::WQ_TYPE.get(input, w) != wq::WQ_TYPE_LINKED_LIST
            || wq::LOG_WQ_PG_SZ.get(input, w) != 0
            || wq::PAGE_OFFSET.get(input, w) != 0
            || !(qpc::LOG_RQ_STRIDE_BASE..=11).contains(&stride)
        {
            return Fail(CmdStatus::BadParam, reason::FIELD);
        }
        let q = SrqQueue {
            log: wq::LOG_WQ_SZ.get(input, w) as u8,
            stride: stride - qpc::LOG_RQ_STRIDE_BASE,
            pd: wq::PD.get(input, w),
            dbr: wq::DBR_ADDR.get(input, w),
            pas: create_rmp_in::PAS,
            rmp: true,
        };
        self.make_srq(c, q)
    }

    /// Checks and records the receive queue `q` of CREATE_SRQ/CREATE_RMP.
    fn make_srq(&mut self, c: &Cmd, q: SrqQueue) -> Outcome {
        let Cmd { input, cur, .. } = *c;
        let SrqQueue {
            log,
            stride,
            pd,
            dbr,
            pas,
            rmp,
        } = q;
        if log > cur.log_max_srq_sz {
            return Fail(CmdStatus::BadParam, reason::SIZE);
        }
        if !self.objects.pds.contains_key(&pd) {
            return Fail(CmdStatus::BadResource, reason::UNKNOWN_OBJECT);
        }
        let npages = ((1usize << log) << (stride + qpc::LOG_RQ_STRIDE_BASE)).div_ceil(4096);
        let pages = match self.check_pas_at(input, pas, npages) {
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
            rmp,
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

    /// DESTROY_SRQ (`rmp` false) or DESTROY_RMP (`rmp` true): each
    /// destroys only a queue its create made.
    pub(super) fn destroy_srq(&mut self, c: &Cmd, rmp: bool) -> Outcome {
        let Cmd { id, .. } = *c;
        require!(
            self.objects.srqs.get(&id).is_some_and(|s| s.rmp == rmp),
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

/// The receive queue a CREATE_SRQ or CREATE_RMP describes.
struct SrqQueue {
    /// log2 WQEs.
    log: u8,
    /// log2 stride − 4.
    stride: u8,
    /// Protection domain.
    pd: u32,
    /// Doorbell record address.
    dbr: u64,
    /// Offset of the `pas[]` list in the input.
    pas: usize,
    /// CREATE_RMP (else CREATE_SRQ).
    rmp: bool,
}
