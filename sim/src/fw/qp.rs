//! Queue pairs ([ref §6, §7.11](bareverbs::reference)): CREATE_QP, the
//! state transitions (RST2INIT … 2RST) with the attributes each one sets,
//! QUERY_QP and DESTROY_QP.

use super::handler::{ok, require, Cmd, Outcome};
use super::objects::{ObjectEvent, QpObj};
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::bits::Field;
use bareverbs::cmd::layout::{ads, cmd_in, qpc, roce_cap};
use bareverbs::cmd::op;
use bareverbs::cmd::ops::{HwQpState, PAS_OFFSET, QPC, QPC_PATH};
use bareverbs::cmd::CmdStatus;
use bareverbs::qp::ServiceType;
use bareverbs::wqe::SEND_WQE_BB;
use Outcome::{Fail, NeedPages};

impl SimFirmware {
    /// CREATE_QP: a QP in RESET.
    pub(super) fn create_qp(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, cur, .. } = *c;
        if input.len() < PAS_OFFSET {
            return Fail(CmdStatus::BadInputLen, reason::INPUT_LEN);
        }
        let g = |f: Field| f.get(input, QPC);
        let stype = ServiceType::from_code(g(qpc::ST) as u8);
        let pd = g(qpc::PD);
        let log_rq = g(qpc::LOG_RQ_SIZE) as u8;
        let log_stride = g(qpc::LOG_RQ_STRIDE) as u8;
        let no_sq = g(qpc::NO_SQ) != 0;
        let log_sq = g(qpc::LOG_SQ_SIZE) as u8;
        let uar = g(qpc::UAR_PAGE);
        let cqn_snd = g(qpc::CQN_SND);
        let cqn_rcv = g(qpc::CQN_RCV);
        let rq_type = g(qpc::RQ_TYPE);
        let srqn = g(qpc::SRQN_RMPN_XRQN);
        let dbr = qpc::DBR_ADDR.get(input, QPC);
        let stype = match (stype, rq_type) {
            (Some(st), qpc::RQ_TYPE_REGULAR | qpc::RQ_TYPE_SRQ) => st,
            _ => return Fail(CmdStatus::BadParam, reason::FIELD),
        };
        // ts_format within the RoCE capability `qp_ts_format` (the PRM:
        // a QP may use only a format the device reports): real-time-only
        // devices (cap 1) refuse FREE_RUNNING, free-running-only ones
        // (cap 0) refuse REAL_TIME; value 3 is reserved.
        let ts = g(qpc::TS_FORMAT);
        let ts_ok = match self.cfg.qp_ts_format as u32 {
            roce_cap::TS_CAP_FREE_RUNNING => ts != qpc::TS_FORMAT_REAL_TIME,
            roce_cap::TS_CAP_REAL_TIME => ts != qpc::TS_FORMAT_FREE_RUNNING,
            _ => true,
        };
        if !ts_ok || ts > qpc::TS_FORMAT_REAL_TIME {
            return Fail(CmdStatus::BadParam, reason::FIELD);
        }
        if log_sq > cur.log_max_qp_sz || log_rq > cur.log_max_qp_sz {
            return Fail(CmdStatus::BadParam, reason::SIZE);
        }
        if !self.objects.pds.contains_key(&pd)
            || !self.objects.cqs.contains_key(&cqn_snd)
            || !self.objects.cqs.contains_key(&cqn_rcv)
            || (rq_type == qpc::RQ_TYPE_SRQ && !self.objects.srqs.contains_key(&srqn))
        {
            return Fail(CmdStatus::BadResource, reason::UNKNOWN_OBJECT);
        }
        if !self.objects.uars.contains_key(&uar) {
            return Fail(CmdStatus::BadParam, reason::UNKNOWN_OBJECT);
        }
        let rq_bytes = if rq_type == qpc::RQ_TYPE_SRQ {
            0
        } else {
            (1usize << log_rq) << (log_stride + qpc::LOG_RQ_STRIDE_BASE)
        };
        let sq_bytes = if no_sq { 0 } else { SEND_WQE_BB << log_sq };
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
            user_index: g(qpc::USER_INDEX),
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
            rmac: [0; 6],
            roce: false,
            log_rra_max: 0,
            log_sra_max: 0,
        };
        if !self.admit(ObjectEvent::QpCreated(q.clone())) {
            self.uncharge();
            return Fail(CmdStatus::BadParam, reason::DATA_PATH);
        }
        self.objects.qps.insert(qpn, q);
        let mut o = ok(16);
        cmd_in::OBJ_ID.set(&mut o, 0, qpn);
        Outcome::Ok(o)
    }

    /// The QP state transitions (RST2INIT … 2RST): the legal source
    /// states of each and the attributes it sets.
    pub(super) fn modify_qp(&mut self, c: &Cmd) -> Outcome {
        let Cmd {
            input, opcode, cur, ..
        } = *c;
        use HwQpState as S;
        let qpn = cmd_in::OBJ_ID.get(input, 0);
        let with_qpc = !matches!(opcode, op::QP_2ERR | op::QP_2RST);
        if with_qpc && input.len() < PAS_OFFSET {
            return Fail(CmdStatus::BadInputLen, reason::INPUT_LEN);
        }
        let num_ports = cur.num_ports;
        self.sync_qp_state(qpn);
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
        let g = |f: Field| f.get(input, QPC);
        let p = |f: Field| f.get(input, QPC_PATH);
        match opcode {
            op::RST2INIT_QP => {
                let port = p(ads::VHCA_PORT_NUM) as u8;
                if port == 0 || port > num_ports {
                    return Fail(CmdStatus::BadParam, reason::FIELD);
                }
                if cur.port_type == bareverbs::device::PORT_TYPE_ETHERNET && !self.roce_en {
                    return Fail(CmdStatus::BadParam, reason::ROCE_DISABLED);
                }
                q.port = port;
                q.pkey_index = p(ads::PKEY_INDEX) as u16;
                q.rre = g(qpc::RRE) != 0;
                q.rwe = g(qpc::RWE) != 0;
                q.rae = g(qpc::RAE) != 0;
                q.qkey = g(qpc::Q_KEY);
            }
            op::INIT2RTR_QP => {
                let mtu = g(qpc::MTU) as u8;
                if !(1..=5).contains(&mtu) {
                    return Fail(CmdStatus::BadParam, reason::FIELD);
                }
                q.mtu = mtu;
                q.remote_qpn = g(qpc::REMOTE_QPN);
                q.rq_psn = g(qpc::NEXT_RCV_PSN);
                q.min_rnr_nak = g(qpc::MIN_RNR_NAK) as u8;
                q.log_rra_max = g(qpc::LOG_RRA_MAX) as u8;
                // A connected QP on an Ethernet (RoCE) port routes by GID
                // (the kernel's mlx5_set_path leaves `grh` and `rlid` 0
                // there) and sends from the GID table entry the path names
                // (`src_addr_index`): refused (BAD_PARAM) when that entry
                // was never programmed (SET_ROCE_ADDRESS). A force-loopback
                // path (`fl`) uses no address.
                let connected = matches!(q.st, ServiceType::Rc | ServiceType::Uc);
                let roce = cur.port_type == bareverbs::device::PORT_TYPE_ETHERNET
                    && connected
                    && p(ads::FL) == 0;
                if roce {
                    let i = p(ads::SRC_ADDR_INDEX) as usize;
                    let programmed = self.gids.get(i).is_some_and(|e| e.iter().any(|&b| b != 0));
                    if !programmed {
                        return Fail(CmdStatus::BadParam, reason::GID_INDEX);
                    }
                    // With `sw_r_roce_src_udp_port` on, the UDP source port
                    // goes on the wire as the path gives it; port 0 is no
                    // valid source port, so the model refuses it (a model
                    // choice: the vendor drivers always fill one in).
                    if self.roce_sw_src_udp_port && p(ads::UDP_SPORT) == 0 {
                        return Fail(CmdStatus::BadParam, reason::FIELD);
                    }
                }
                q.fl = p(ads::FL) != 0;
                q.roce = roce;
                let m = (p(ads::RMAC_47_32) as u16).to_be_bytes();
                let l = p(ads::RMAC_31_0).to_be_bytes();
                q.rmac = [m[0], m[1], l[0], l[1], l[2], l[3]];
                q.grh = p(ads::GRH) != 0;
                q.rlid = p(ads::RLID) as u16;
                let rgid = QPC_PATH + ads::RGID_RIP;
                q.rgid.copy_from_slice(
                    input
                        .get(rgid..rgid + ads::RGID_RIP_LEN)
                        .unwrap_or(&[0; 16]),
                );
            }
            op::RTR2RTS_QP => {
                q.sq_psn = g(qpc::NEXT_SEND_PSN);
                q.retry_count = g(qpc::RETRY_COUNT) as u8;
                q.rnr_retry = g(qpc::RNR_RETRY) as u8;
                q.ack_timeout = p(ads::ACK_TIMEOUT) as u8;
                q.log_sra_max = g(qpc::LOG_SRA_MAX) as u8;
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

    /// QUERY_QP: the QP context as the model holds it, with the state the
    /// data path moved it to on its own (ERR after an error completion).
    pub(super) fn query_qp(&mut self, c: &Cmd) -> Outcome {
        let Cmd { outlen, id, .. } = *c;
        require!(outlen >= 0x100, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
        self.sync_qp_state(id);
        let Some(q) = self.objects.qps.get(&id) else {
            return Fail(CmdStatus::BadResource, reason::UNKNOWN_OBJECT);
        };
        let mut o = ok(PAS_OFFSET);
        for (f, v) in [
            (qpc::STATE, q.state.bits() as u32),
            (qpc::ST, q.st.code() as u32),
            (qpc::PM_STATE, qpc::PM_STATE_MIGRATED),
            (qpc::PD, q.pd),
            (qpc::MTU, q.mtu as u32),
            (qpc::LOG_RQ_SIZE, q.log_rq_size as u32),
            (qpc::LOG_RQ_STRIDE, q.log_rq_stride as u32),
            (qpc::LOG_SQ_SIZE, q.log_sq_size as u32),
            (qpc::UAR_PAGE, q.uar),
            (qpc::REMOTE_QPN, q.remote_qpn),
        ] {
            f.set(&mut o, QPC, v);
        }
        for (f, v) in [
            (ads::FL, q.fl as u32),
            (ads::PKEY_INDEX, q.pkey_index as u32),
            (ads::ACK_TIMEOUT, q.ack_timeout as u32),
            (ads::VHCA_PORT_NUM, q.port as u32),
        ] {
            f.set(&mut o, QPC_PATH, v);
        }
        for (f, v) in [
            (qpc::RETRY_COUNT, q.retry_count as u32),
            (qpc::RNR_RETRY, q.rnr_retry as u32),
            (qpc::NEXT_SEND_PSN, q.sq_psn),
            (qpc::CQN_SND, q.cqn_snd),
            (qpc::RRE, q.rre as u32),
            (qpc::RWE, q.rwe as u32),
            (qpc::RAE, q.rae as u32),
            (qpc::MIN_RNR_NAK, q.min_rnr_nak as u32),
            (qpc::NEXT_RCV_PSN, q.rq_psn),
            (qpc::CQN_RCV, q.cqn_rcv),
        ] {
            f.set(&mut o, QPC, v);
        }
        qpc::DBR_ADDR.set(&mut o, QPC, q.dbr_addr);
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
