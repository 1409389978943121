//! Queue pairs: the hardware QP state, CREATE_QP, 2ERR_QP, 2RST_QP and
//! QUERY_QP ([ref §6, §7.11](crate::reference)). The RST→INIT→RTR→RTS
//! transitions are [`super::qp_modify`]'s.

use super::obj::with_obj;
use super::pas::{put_pas, PAS_OFFSET};
use super::{hdr, Req, HDR_LEN};
use crate::cmd::layout::{ads, qpc};
use crate::cmd::op;
use crate::qp::ServiceType;

/// Offset of the qpc in create/modify/query QP messages. [ref §6.3, §7.11](crate::reference).
pub const QPC: usize = 0x18;

/// Offset of the primary address path in a QP message (qpc + 0x18). [ref §7.11](crate::reference).
pub const QPC_PATH: usize = QPC + 0x18;

/// mlx5 hardware QP state, qpc.state ([ref §6.1](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HwQpState {
    /// 0 RST.
    Reset,
    /// 1 INIT.
    Init,
    /// 2 RTR.
    Rtr,
    /// 3 RTS.
    Rts,
    /// 4 SQER.
    SqErr,
    /// 5 SQD.
    Sqd,
    /// 6 ERR.
    Err,
    /// 7 SQ_DRAINING.
    SqDraining,
    /// 9 SUSPENDED.
    Suspended,
    /// Anything else.
    Other(u8),
}

impl HwQpState {
    /// Decodes the 4-bit field. [ref §6.1](crate::reference).
    pub const fn from_bits(v: u8) -> Self {
        match v {
            0 => HwQpState::Reset,
            1 => HwQpState::Init,
            2 => HwQpState::Rtr,
            3 => HwQpState::Rts,
            4 => HwQpState::SqErr,
            5 => HwQpState::Sqd,
            6 => HwQpState::Err,
            7 => HwQpState::SqDraining,
            9 => HwQpState::Suspended,
            o => HwQpState::Other(o),
        }
    }
    /// The 4-bit encoding. [ref §6.1](crate::reference).
    pub const fn bits(self) -> u8 {
        match self {
            HwQpState::Reset => 0,
            HwQpState::Init => 1,
            HwQpState::Rtr => 2,
            HwQpState::Rts => 3,
            HwQpState::SqErr => 4,
            HwQpState::Sqd => 5,
            HwQpState::Err => 6,
            HwQpState::SqDraining => 7,
            HwQpState::Suspended => 9,
            HwQpState::Other(o) => o,
        }
    }
}

/// CREATE_QP parameters. [ref §7.11](crate::reference) ("Kernel create … fills").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpParams {
    /// Service type (`qpc.st`): only the QP types the command path creates
    /// have one ([`crate::qp::QpType::service_type`]; `Device::create_qp`
    /// refuses the others before any command).
    pub st: ServiceType,
    /// Protection domain.
    pub pd: u32,
    /// UAR index for the send doorbell.
    pub uar_page: u32,
    /// log2 SQ WQEBBs (ignored when `no_sq`).
    pub log_sq_size: u8,
    /// No send queue.
    pub no_sq: bool,
    /// log2 RQ WQEs (0 with an SRQ).
    pub log_rq_size: u8,
    /// RQ WQE shift − 4.
    pub log_rq_stride: u8,
    /// Receive through this SRQ instead of an RQ.
    pub srqn: Option<u32>,
    /// `qpc.ts_format` ([`qp_ts_format`](super::qp_ts_format) of the RoCE
    /// capability).
    pub ts_format: u8,
    /// Send CQ.
    pub cqn_snd: u32,
    /// Receive CQ.
    pub cqn_rcv: u32,
    /// Doorbell record DMA address.
    pub dbr_addr: u64,
    /// User index reported in CQEs (CQE version 1).
    pub user_index: u32,
    /// DMA address of the first 4 KiB page of the QP buffer (RQ then SQ).
    pub pages_iova: u64,
    /// Number of 4 KiB pages.
    pub npages: usize,
}

/// CREATE_QP (0x500); output qpn at `dw2[23:0]`. [ref §7.11](crate::reference).
pub fn create_qp(b: &mut [u8], p: &QpParams) -> Req {
    let in_len = PAS_OFFSET + 8 * p.npages;
    hdr(b, op::CREATE_QP, 0, in_len);
    qpc::ST.set(b, QPC, p.st.code() as u32);
    qpc::PM_STATE.set(b, QPC, qpc::PM_STATE_MIGRATED);
    qpc::PD.set(b, QPC, p.pd);
    qpc::LOG_RQ_SIZE.set(b, QPC, p.log_rq_size as u32);
    qpc::LOG_RQ_STRIDE.set(b, QPC, p.log_rq_stride as u32);
    qpc::NO_SQ.set(b, QPC, p.no_sq as u32);
    if !p.no_sq {
        qpc::LOG_SQ_SIZE.set(b, QPC, p.log_sq_size as u32);
    }
    qpc::TS_FORMAT.set(b, QPC, p.ts_format as u32);
    qpc::UAR_PAGE.set(b, QPC, p.uar_page);
    qpc::USER_INDEX.set(b, QPC, p.user_index);
    qpc::LOG_PAGE_SIZE.set(b, QPC, 0);
    qpc::CQN_SND.set(b, QPC, p.cqn_snd);
    qpc::CQN_RCV.set(b, QPC, p.cqn_rcv);
    qpc::DBR_ADDR.set(b, QPC, p.dbr_addr);
    if let Some(srqn) = p.srqn {
        qpc::RQ_TYPE.set(b, QPC, qpc::RQ_TYPE_SRQ);
        qpc::SRQN_RMPN_XRQN.set(b, QPC, srqn);
    }
    put_pas(b, PAS_OFFSET, p.pages_iova, p.npages, 0);
    Req {
        opcode: op::CREATE_QP,
        in_len,
        out_len: HDR_LEN,
    }
}

/// 2ERR_QP (0x507). [ref §6.3](crate::reference).
pub fn qp_2err(b: &mut [u8], qpn: u32) -> Req {
    with_obj(b, op::QP_2ERR, qpn)
}

/// 2RST_QP (0x50a). [ref §6.3](crate::reference).
pub fn qp_2rst(b: &mut [u8], qpn: u32) -> Req {
    with_obj(b, op::QP_2RST, qpn)
}

/// QUERY_QP (0x50b); output qpc at byte 0x18.
pub fn query_qp(b: &mut [u8], qpn: u32) -> Req {
    let mut r = with_obj(b, op::QUERY_QP, qpn);
    r.out_len = PAS_OFFSET;
    r
}

/// The QUERY_QP fields the driver uses ([ref §7.11](crate::reference) offsets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpQuery {
    /// State.
    pub state: HwQpState,
    /// Service type (qpc.st).
    pub st: u8,
    /// Protection domain.
    pub pd: u32,
    /// MTU enum.
    pub mtu: u8,
    /// Remote QPN.
    pub remote_qpn: u32,
    /// Next send PSN.
    pub sq_psn: u32,
    /// Next receive PSN.
    pub rq_psn: u32,
    /// Send CQ.
    pub cqn_snd: u32,
    /// Receive CQ.
    pub cqn_rcv: u32,
    /// Port.
    pub port: u8,
}

/// Parses a QUERY_QP output.
pub fn parse_query_qp(out: &[u8]) -> QpQuery {
    QpQuery {
        state: HwQpState::from_bits(qpc::STATE.get(out, QPC) as u8),
        st: qpc::ST.get(out, QPC) as u8,
        pd: qpc::PD.get(out, QPC),
        mtu: qpc::MTU.get(out, QPC) as u8,
        remote_qpn: qpc::REMOTE_QPN.get(out, QPC),
        sq_psn: qpc::NEXT_SEND_PSN.get(out, QPC),
        rq_psn: qpc::NEXT_RCV_PSN.get(out, QPC),
        cqn_snd: qpc::CQN_SND.get(out, QPC),
        cqn_rcv: qpc::CQN_RCV.get(out, QPC),
        port: ads::VHCA_PORT_NUM.get(out, QPC_PATH) as u8,
    }
}
