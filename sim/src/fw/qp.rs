//! Queue pairs ([ref §6, §7.11](bareverbs::reference)): CREATE_QP, the
//! state transitions (RST2INIT … 2RST) with the attributes each one sets,
//! QUERY_QP and DESTROY_QP.

use super::handler::{ok, require, Cmd, Outcome};
use super::objects::{ObjectEvent, QpObj};
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::bits::{get32, get64, get_bits, put64, set_bits};
use bareverbs::cmd::op;
use bareverbs::cmd::ops::{HwQpState, PAS_OFFSET, QPC, QPC_PATH};
use bareverbs::cmd::CmdStatus;
use Outcome::{Fail, NeedPages};

impl SimFirmware {
    /// CREATE_QP: a QP in RESET.
    pub(super) fn create_qp(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, cur, .. } = *c;
        if input.len() < PAS_OFFSET {
            return Fail(CmdStatus::BadInputLen, reason::INPUT_LEN);
        }
        let g = |dw, hi, lo| get_bits(input, QPC, dw, hi, lo);
        let stype = g(0, 23, 16) as u8;
        let pd = g(1, 23, 0);
        let log_rq = g(2, 22, 19) as u8;
        let log_stride = g(2, 18, 16) as u8;
        let no_sq = g(2, 15, 15) != 0;
        let log_sq = g(2, 14, 11) as u8;
        let uar = g(3, 23, 0);
        let cqn_snd = g(31, 23, 0);
        let cqn_rcv = g(39, 23, 0);
        let rq_type = g(43, 26, 24);
        let srqn = g(43, 23, 0);
        let dbr = get64(input, QPC + 0xa0);
        if stype > 2 || rq_type > 1 {
            return Fail(CmdStatus::BadParam, reason::FIELD);
        }
        if log_sq > cur.log_max_qp_sz || log_rq > cur.log_max_qp_sz {
            return Fail(CmdStatus::BadParam, reason::SIZE);
        }
        if !self.objects.pds.contains_key(&pd)
            || !self.objects.cqs.contains_key(&cqn_snd)
            || !self.objects.cqs.contains_key(&cqn_rcv)
            || (rq_type == 1 && !self.objects.srqs.contains_key(&srqn))
        {
            return Fail(CmdStatus::BadResource, reason::UNKNOWN_OBJECT);
        }
        if !self.objects.uars.contains_key(&uar) {
            return Fail(CmdStatus::BadParam, reason::UNKNOWN_OBJECT);
        }
        let rq_bytes = if rq_type == 1 {
            0
        } else {
            (1usize << log_rq) << (log_stride + 4)
        };
        let sq_bytes = if no_sq { 0 } else { 64usize << log_sq };
        let npages = (rq_bytes + sq_bytes).div_ceil(4096).max(1);
        let pages = match self.check_pas(input, npages) {
            Ok(p) => p,
            Err((s, r)) => return Fail(s, r),
        };
        if !self.mapped(dbr, 8) {
            return Fail(CmdStatus::BadParam, reason::ADDRESS);
        }
        if self.objects.qps.len() as u64 >= 1u64 << cur.log_max_qp.min(32) {
            return Fail(CmdStatus::ExceedLimit, reason::LIMIT);
        }
        if let Err(n) = self.charge() {
            return NeedPages(n);
        }
        let qpn = self.objects.fresh_qpn();
        let q = QpObj {
            qpn,
            st: stype,
            state: HwQpState::Reset,
            pd,
            cqn_snd,
            cqn_rcv,
            log_sq_size: log_sq,
            log_rq_size: log_rq,
            log_rq_stride: log_stride,
            no_sq,
            srqn: (rq_type == 1).then_some(srqn),
            uar,
            user_index: g(4, 23, 0),
            dbr_addr: dbr,
            pages,
            port: 0,
            pkey_index: 0,
            rre: false,
            rwe: false,
            rae: false,
            qkey: 0,
            mtu: 0,
            remote_qpn: 0,
            rq_psn: 0,
            min_rnr_nak: 0,
            fl: false,
            sq_psn: 0,
            retry_count: 0,
            rnr_retry: 0,
            ack_timeout: 0,
            rlid: 0,
            grh: false,
            rgid: [0; 16],
            log_rra_max: 0,
            log_sra_max: 0,
        };
        if !self.admit(ObjectEvent::QpCreated(q.clone())) {
            self.uncharge();
            return Fail(CmdStatus::BadParam, reason::DATA_PATH);
        }
        self.objects.qps.insert(qpn, q);
        let mut o = ok(16);
        set_bits(&mut o, 0, 2, 23, 0, qpn);
        Outcome::Ok(o)
    }

    /// The QP state transitions (RST2INIT … 2RST): the legal source
    /// states of each and the attributes it sets.
    pub(super) fn modify_qp(&mut self, c: &Cmd) -> Outcome {
        let Cmd {
            input, opcode, cur, ..
        } = *c;
        use HwQpState as S;
        let qpn = get_bits(input, 0, 2, 23, 0);
        let with_qpc = !matches!(opcode, op::QP_2ERR | op::QP_2RST);
        if with_qpc && input.len() < PAS_OFFSET {
            return Fail(CmdStatus::BadInputLen, reason::INPUT_LEN);
        }
        let num_ports = cur.num_ports;
        let Some(mut q) = self.objects.qps.get(&qpn).cloned() else {
            return Fail(CmdStatus::BadResource, reason::UNKNOWN_OBJECT);
        };
        let (from, to): (&[S], S) = match opcode {
            op::RST2INIT_QP => (&[S::Reset], S::Init),
            op::INIT2INIT_QP => (&[S::Init], S::Init),
            op::INIT2RTR_QP => (&[S::Init], S::Rtr),
            op::RTR2RTS_QP => (&[S::Rtr], S::Rts),
            op::RTS2RTS_QP => (&[S::Rts], S::Rts),
            op::SQERR2RTS_QP => (&[S::SqErr], S::Rts),
            op::SQD_RTS_QP => (&[S::Sqd], S::Rts),
            op::QP_2ERR => (&[], S::Err),
            _ => (&[], S::Reset),
        };
        if !from.is_empty() && !from.contains(&q.state) {
            return Fail(CmdStatus::BadQpState, reason::QP_STATE);
        }
        let g = |dw, hi, lo| get_bits(input, QPC, dw, hi, lo);
        let p = |dw, hi, lo| get_bits(input, QPC_PATH, dw, hi, lo);
        match opcode {
            op::RST2INIT_QP => {
                let port = p(9, 23, 16) as u8;
                if port == 0 || port > num_ports {
                    return Fail(CmdStatus::BadParam, reason::FIELD);
                }
                if cur.port_type == bareverbs::device::PORT_TYPE_ETHERNET && !self.roce_en {
                    return Fail(CmdStatus::BadParam, reason::ROCE_DISABLED);
                }
                q.port = port;
                q.pkey_index = p(0, 15, 0) as u16;
                q.rre = g(36, 15, 15) != 0;
                q.rwe = g(36, 14, 14) != 0;
                q.rae = g(36, 13, 13) != 0;
                q.qkey = get32(input, QPC + 0xa8);
            }
            op::INIT2RTR_QP => {
                let mtu = g(2, 31, 29) as u8;
                if !(1..=5).contains(&mtu) {
                    return Fail(CmdStatus::BadParam, reason::FIELD);
                }
                q.mtu = mtu;
                q.remote_qpn = g(5, 23, 0);
                q.rq_psn = g(37, 23, 0);
                q.min_rnr_nak = g(37, 28, 24) as u8;
                q.log_rra_max = g(36, 23, 21) as u8;
                q.fl = p(0, 31, 31) != 0;
                q.grh = p(1, 23, 23) != 0;
                q.rlid = p(1, 15, 0) as u16;
                q.rgid.copy_from_slice(
                    input
                        .get(QPC_PATH + 0x10..QPC_PATH + 0x20)
                        .unwrap_or(&[0; 16]),
                );
            }
            op::RTR2RTS_QP => {
                q.sq_psn = g(30, 23, 0);
                q.retry_count = g(28, 18, 16) as u8;
                q.rnr_retry = g(28, 15, 13) as u8;
                q.ack_timeout = p(2, 31, 27) as u8;
                q.log_sra_max = g(28, 23, 21) as u8;
            }
            _ => {}
        }
        q.state = to;
        if to == S::Reset {
            q.remote_qpn = 0;
        }
        if !self.admit(ObjectEvent::QpModified(q.clone())) {
            return Fail(CmdStatus::BadParam, reason::DATA_PATH);
        }
        self.objects.qps.insert(qpn, q);
        Outcome::Ok(ok(16))
    }

    /// QUERY_QP: the QP context as the model holds it.
    pub(super) fn query_qp(&mut self, c: &Cmd) -> Outcome {
        let Cmd { outlen, id, .. } = *c;
        require!(outlen >= 0x100, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
        let Some(q) = self.objects.qps.get(&id) else {
            return Fail(CmdStatus::BadResource, reason::UNKNOWN_OBJECT);
        };
        let mut o = ok(PAS_OFFSET);
        set_bits(&mut o, QPC, 0, 31, 28, q.state.bits() as u32);
        set_bits(&mut o, QPC, 0, 23, 16, q.st as u32);
        set_bits(&mut o, QPC, 0, 12, 11, 3);
        set_bits(&mut o, QPC, 1, 23, 0, q.pd);
        set_bits(&mut o, QPC, 2, 31, 29, q.mtu as u32);
        set_bits(&mut o, QPC, 2, 22, 19, q.log_rq_size as u32);
        set_bits(&mut o, QPC, 2, 18, 16, q.log_rq_stride as u32);
        set_bits(&mut o, QPC, 2, 14, 11, q.log_sq_size as u32);
        set_bits(&mut o, QPC, 3, 23, 0, q.uar);
        set_bits(&mut o, QPC, 5, 23, 0, q.remote_qpn);
        set_bits(&mut o, QPC_PATH, 0, 31, 31, q.fl as u32);
        set_bits(&mut o, QPC_PATH, 0, 15, 0, q.pkey_index as u32);
        set_bits(&mut o, QPC_PATH, 2, 31, 27, q.ack_timeout as u32);
        set_bits(&mut o, QPC_PATH, 9, 23, 16, q.port as u32);
        set_bits(&mut o, QPC, 28, 18, 16, q.retry_count as u32);
        set_bits(&mut o, QPC, 28, 15, 13, q.rnr_retry as u32);
        set_bits(&mut o, QPC, 30, 23, 0, q.sq_psn);
        set_bits(&mut o, QPC, 31, 23, 0, q.cqn_snd);
        set_bits(&mut o, QPC, 36, 15, 15, q.rre as u32);
        set_bits(&mut o, QPC, 36, 14, 14, q.rwe as u32);
        set_bits(&mut o, QPC, 36, 13, 13, q.rae as u32);
        set_bits(&mut o, QPC, 37, 28, 24, q.min_rnr_nak as u32);
        set_bits(&mut o, QPC, 37, 23, 0, q.rq_psn);
        set_bits(&mut o, QPC, 39, 23, 0, q.cqn_rcv);
        put64(&mut o, QPC + 0xa0, q.dbr_addr);
        o.truncate(outlen.min(PAS_OFFSET));
        Outcome::Ok(o)
    }

    /// DESTROY_QP.
    pub(super) fn destroy_qp(&mut self, c: &Cmd) -> Outcome {
        let Cmd { id, .. } = *c;
        require!(
            self.objects.qps.remove(&id).is_some(),
            CmdStatus::BadResource,
            reason::UNKNOWN_OBJECT
        );
        self.uncharge();
        self.notify(ObjectEvent::QpDestroyed(id));
        Outcome::Ok(ok(16))
    }
}
