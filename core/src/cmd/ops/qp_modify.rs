//! The QP transitions RST2INIT_QP, INIT2RTR_QP and RTR2RTS_QP: their
//! attributes and the primary address path they set
//! ([ref §6.2, §6.3, §7.11](crate::reference)).

use super::pas::PAS_OFFSET;
use super::qp::{QPC, QPC_PATH};
use super::{hdr, Req, HDR_LEN};
use crate::cmd::layout::{ads, cmd_in, modify_qp_in, qpc};
use crate::cmd::op;

/// Primary address path fields ([ref §7.11](crate::reference) "ads").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddressPath {
    /// Force loopback.
    pub fl: bool,
    /// P_Key index.
    pub pkey_index: u16,
    /// GRH present.
    pub grh: bool,
    /// Remote LID (IB).
    pub rlid: u16,
    /// Source GID index.
    pub sgid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Remote GID / IP.
    pub rgid: [u8; 16],
    /// UDP source port (RoCEv2).
    pub udp_sport: u16,
    /// Service level.
    pub sl: u8,
    /// Port number (1-based).
    pub port: u8,
    /// Remote MAC (RoCE).
    pub rmac: [u8; 6],
    /// Source LID path bits (`mlid`, InfiniBand, 7 bits).
    pub mlid: u8,
    /// GRH traffic class (`tclass`).
    pub tclass: u8,
    /// GRH flow label (`flow_label`, 20 bits).
    pub flow_label: u32,
    /// IP DSCP (`dscp`, RoCE v2, 6 bits).
    pub dscp: u8,
    /// Ethernet priority (`eth_prio`, RoCE, 3 bits).
    pub eth_prio: u8,
}

/// Lowest UDP source port of RoCE v2 (`IB_ROCE_UDP_ENCAP_VALID_PORT_MIN`).
pub const ROCE_UDP_SPORT_MIN: u16 = 0xc000;

/// The UDP source port a RoCE v2 connection between `lqpn` and `rqpn`
/// uses when the path names neither a port nor a flow label, by the
/// kernel's rule (`ib_verbs.h` `rdma_get_udp_sport` with flow label 0):
/// the 20-bit flow label `rdma_calc_flow_label` derives from the QP
/// numbers (their product, folded by XOR with itself shifted by 20 and by
/// 40), made a port by [`udp_sport_of_flow_label`]. Needed once bring-up
/// has turned on `sw_r_roce_src_udp_port`: firmware then sends what the
/// path says, and a zero would go on the wire as port 0.
/// [ref §7.14](crate::reference).
pub const fn roce_udp_sport(lqpn: u32, rqpn: u32) -> u16 {
    let mut v = lqpn as u64 * rqpn as u64;
    v ^= v >> 20;
    v ^= v >> 40;
    udp_sport_of_flow_label((v & 0xf_ffff) as u32)
}

/// The UDP source port of a 20-bit flow label
/// (`rdma_flow_label_to_udp_sport`): its low 14 bits XOR its high 6, above
/// [`ROCE_UDP_SPORT_MIN`]. [ref §7.16](crate::reference).
pub const fn udp_sport_of_flow_label(flow_label: u32) -> u16 {
    let fl = flow_label & 0xf_ffff;
    let low = (fl & 0x3fff) ^ (fl >> 14);
    (low as u16) | ROCE_UDP_SPORT_MIN
}

fn put_path(b: &mut [u8], p: &AddressPath) {
    let a = QPC_PATH;
    ads::FL.set(b, a, p.fl as u32);
    ads::PKEY_INDEX.set(b, a, p.pkey_index as u32);
    ads::GRH.set(b, a, p.grh as u32);
    ads::MLID.set(b, a, p.mlid as u32);
    ads::RLID.set(b, a, p.rlid as u32);
    ads::SRC_ADDR_INDEX.set(b, a, p.sgid_index as u32);
    ads::HOP_LIMIT.set(b, a, p.hop_limit as u32);
    ads::TCLASS.set(b, a, p.tclass as u32);
    ads::FLOW_LABEL.set(b, a, p.flow_label);
    let rgid = a + ads::RGID_RIP;
    if let Some(d) = b.get_mut(rgid..rgid + ads::RGID_RIP_LEN) {
        d.copy_from_slice(&p.rgid);
    }
    ads::DSCP.set(b, a, p.dscp as u32);
    ads::UDP_SPORT.set(b, a, p.udp_sport as u32);
    ads::ETH_PRIO.set(b, a, p.eth_prio as u32);
    ads::SL.set(b, a, p.sl as u32);
    ads::VHCA_PORT_NUM.set(b, a, p.port as u32);
    let [m0, m1, m2, m3, m4, m5] = p.rmac;
    ads::RMAC_47_32.set(b, a, u16::from_be_bytes([m0, m1]) as u32);
    ads::RMAC_31_0.set(b, a, u32::from_be_bytes([m2, m3, m4, m5]));
}

fn modify(b: &mut [u8], opcode: u16, qpn: u32) -> Req {
    let in_len = PAS_OFFSET;
    hdr(b, opcode, 0, in_len);
    cmd_in::OBJ_ID.set(b, 0, qpn);
    // No optional parameters (ref §7.11 minimal sequence).
    modify_qp_in::OPT_PARAM_MASK.set(b, 0, 0);
    Req {
        opcode,
        in_len,
        out_len: HDR_LEN,
    }
}

/// RESET → INIT attributes ([ref §6.2](crate::reference): PKEY_INDEX, PORT, ACCESS_FLAGS; UD:
/// QKEY).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rst2Init {
    /// Port (1-based).
    pub port: u8,
    /// P_Key index.
    pub pkey_index: u16,
    /// Remote read enable.
    pub remote_read: bool,
    /// Remote write enable.
    pub remote_write: bool,
    /// Remote atomic enable.
    pub remote_atomic: bool,
    /// Q_Key (UD only).
    pub qkey: u32,
}

/// RST2INIT_QP (0x502). [ref §6.3, §7.11](crate::reference).
pub fn rst2init(b: &mut [u8], qpn: u32, a: &Rst2Init) -> Req {
    let r = modify(b, op::RST2INIT_QP, qpn);
    qpc::PM_STATE.set(b, QPC, qpc::PM_STATE_MIGRATED);
    ads::PKEY_INDEX.set(b, QPC_PATH, a.pkey_index as u32);
    ads::VHCA_PORT_NUM.set(b, QPC_PATH, a.port as u32);
    qpc::RRE.set(b, QPC, a.remote_read as u32);
    qpc::RWE.set(b, QPC, a.remote_write as u32);
    qpc::RAE.set(b, QPC, a.remote_atomic as u32);
    qpc::Q_KEY.set(b, QPC, a.qkey);
    r
}

/// INIT → RTR attributes ([ref §6.2](crate::reference) RC: AV, PATH_MTU, DEST_QPN, RQ_PSN,
/// MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Init2Rtr {
    /// IB MTU enum (1 = 256 … 5 = 4096).
    pub mtu: u8,
    /// log2 max message size.
    pub log_msg_max: u8,
    /// Destination QP number.
    pub remote_qpn: u32,
    /// Receive PSN.
    pub rq_psn: u32,
    /// log2 max_dest_rd_atomic.
    pub log_rra_max: u8,
    /// Minimum RNR NAK timer.
    pub min_rnr_nak: u8,
    /// Address vector.
    pub path: AddressPath,
}

/// INIT2RTR_QP (0x503). [ref §6.3, §7.11](crate::reference).
pub fn init2rtr(b: &mut [u8], qpn: u32, a: &Init2Rtr) -> Req {
    let r = modify(b, op::INIT2RTR_QP, qpn);
    qpc::MTU.set(b, QPC, a.mtu as u32);
    qpc::LOG_MSG_MAX.set(b, QPC, a.log_msg_max as u32);
    qpc::REMOTE_QPN.set(b, QPC, a.remote_qpn);
    put_path(b, &a.path);
    qpc::LOG_RRA_MAX.set(b, QPC, a.log_rra_max as u32);
    qpc::MIN_RNR_NAK.set(b, QPC, a.min_rnr_nak as u32);
    qpc::NEXT_RCV_PSN.set(b, QPC, a.rq_psn);
    r
}

/// RTR → RTS attributes ([ref §6.2](crate::reference) RC: TIMEOUT, RETRY_CNT, RNR_RETRY,
/// SQ_PSN, MAX_QP_RD_ATOMIC).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rtr2Rts {
    /// Send PSN.
    pub sq_psn: u32,
    /// Transport retry count (3 bits).
    pub retry_count: u8,
    /// RNR retry count (3 bits).
    pub rnr_retry: u8,
    /// Local ACK timeout (5 bits).
    pub ack_timeout: u8,
    /// log2 max_rd_atomic.
    pub log_sra_max: u8,
}

/// RTR2RTS_QP (0x504). [ref §6.3, §7.11](crate::reference).
pub fn rtr2rts(b: &mut [u8], qpn: u32, a: &Rtr2Rts) -> Req {
    let r = modify(b, op::RTR2RTS_QP, qpn);
    ads::ACK_TIMEOUT.set(b, QPC_PATH, a.ack_timeout as u32);
    qpc::LOG_ACK_REQ_FREQ.set(b, QPC, 0);
    qpc::LOG_SRA_MAX.set(b, QPC, a.log_sra_max as u32);
    qpc::RETRY_COUNT.set(b, QPC, a.retry_count as u32);
    qpc::RNR_RETRY.set(b, QPC, a.rnr_retry as u32);
    qpc::NEXT_SEND_PSN.set(b, QPC, a.sq_psn);
    r
}
