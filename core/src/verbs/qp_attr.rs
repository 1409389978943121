//! The verbs QP attribute types: creation capacities and attributes
//! ([`QpCap`], [`QpInitAttr`]) and the per-transition attributes
//! ([`InitAttr`], [`RtrAttr`], [`RtsAttr`], with [`AddressHandle`] and
//! [`GlobalRoute`]), and what a query reads back ([`QpAttr`]).

use super::srq::SrqLink;
use super::{Access, CompletionQueue};
use crate::cmd::ops::{HwQpState, IbMtu};
use crate::sizing::QpType;

/// Queue capacities (`ibv_qp_cap`): what
/// [`Context::create_qp`](super::Context::create_qp) is asked for, and what
/// it reads back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpCap {
    /// Send work requests that may be outstanding.
    pub max_send_wr: u32,
    /// Receive work requests that may be outstanding.
    pub max_recv_wr: u32,
    /// Gather entries per send WR.
    pub max_send_sge: u32,
    /// Scatter entries per receive WR.
    pub max_recv_sge: u32,
    /// Inline payload bytes per send WR.
    pub max_inline_data: u32,
}

impl QpCap {
    /// Capacities with no inline data.
    pub const fn new(
        max_send_wr: u32,
        max_recv_wr: u32,
        max_send_sge: u32,
        max_recv_sge: u32,
    ) -> Self {
        QpCap {
            max_send_wr,
            max_recv_wr,
            max_send_sge,
            max_recv_sge,
            max_inline_data: 0,
        }
    }
    /// The same with `max_inline_data`.
    #[must_use = "returns the changed value; dropping it discards the change"]
    pub const fn with_inline(mut self, max_inline_data: u32) -> Self {
        self.max_inline_data = max_inline_data;
        self
    }
}

/// QP creation attributes (`ibv_qp_init_attr`).
#[derive(Clone, Copy, Debug)]
pub struct QpInitAttr<'a> {
    /// Transport: RC, UC or UD.
    pub qp_type: QpType,
    /// CQ for send completions.
    pub send_cq: &'a CompletionQueue<'a>,
    /// CQ for receive completions (may be the same CQ).
    pub recv_cq: &'a CompletionQueue<'a>,
    /// Requested capacities.
    pub cap: QpCap,
    /// Every send WR generates a completion (`sq_sig_all`).
    pub sq_sig_all: bool,
    /// Receive through this SRQ instead of an own receive queue
    /// ([`QpInitAttr::with_srq`]).
    pub srq: Option<SrqLink<'a>>,
}

impl<'a> QpInitAttr<'a> {
    /// Attributes with `sq_sig_all` off.
    pub fn new(
        qp_type: QpType,
        send_cq: &'a CompletionQueue<'a>,
        recv_cq: &'a CompletionQueue<'a>,
        cap: QpCap,
    ) -> Self {
        QpInitAttr {
            qp_type,
            send_cq,
            recv_cq,
            cap,
            sq_sig_all: false,
            srq: None,
        }
    }
    /// The same attributes, receiving through `srq` (`max_recv_wr` and
    /// `max_recv_sge` are then ignored).
    #[must_use = "returns the changed value; dropping it discards the change"]
    pub fn with_srq<'s: 'a, const N: usize>(
        mut self,
        srq: &'a super::SharedReceiveQueue<'s, N>,
    ) -> Self {
        self.srq = Some(srq.link());
        self
    }
}

/// RESET → INIT attributes (`IBV_QP_STATE | IBV_QP_PKEY_INDEX |
/// IBV_QP_PORT | IBV_QP_ACCESS_FLAGS`, plus `IBV_QP_QKEY` for UD).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InitAttr {
    /// Port number (1-based).
    pub port_num: u8,
    /// P_Key index.
    pub pkey_index: u16,
    /// Remote operations the QP accepts (REMOTE_WRITE/READ/ATOMIC).
    pub qp_access_flags: Access,
    /// Q_Key (UD).
    pub qkey: u32,
}

impl InitAttr {
    /// Port `port_num`, P_Key index 0, remote rights `qp_access_flags`.
    pub const fn new(port_num: u8, qp_access_flags: Access) -> Self {
        InitAttr {
            port_num,
            pkey_index: 0,
            qp_access_flags,
            qkey: 0,
        }
    }
}

/// Global routing (`ibv_global_route`): the GRH fields of an address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlobalRoute {
    /// Destination GID (RoCE: the peer's IP as a GID).
    pub dgid: [u8; 16],
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Source GID table index.
    pub sgid_index: u8,
    /// Hop limit (RoCE v2: the IP TTL).
    pub hop_limit: u8,
    /// Traffic class (RoCE v2: DSCP in its upper six bits, ECN below).
    pub traffic_class: u8,
}

impl GlobalRoute {
    /// Toward `dgid` from source entry `sgid_index`, with perftest's hop
    /// limit (0xff), traffic class 0 and flow label 0.
    pub const fn new(dgid: [u8; 16], sgid_index: u8) -> Self {
        GlobalRoute {
            dgid,
            flow_label: 0,
            sgid_index,
            hop_limit: 0xff,
            traffic_class: 0,
        }
    }
}

/// Where the peer is (`ibv_ah_attr`); [`AddressHandle::path`] turns it
/// into the mlx5 address path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddressHandle {
    /// Destination LID (InfiniBand).
    pub dlid: u16,
    /// Service level (InfiniBand: 0–15; RoCE: the Ethernet priority,
    /// 0–7).
    pub sl: u8,
    /// Local port (1-based).
    pub port_num: u8,
    /// Global route (`is_global`).
    pub grh: Option<GlobalRoute>,
    /// Destination MAC (RoCE).
    pub dmac: [u8; 6],
    /// UDP source port (RoCE v2 sources, RC and UC; a bareverbs extension
    /// over `ibv_ah_attr`). 0: the kernel's rule — the flow label's port
    /// when the GRH has one, else, once bring-up has turned on
    /// `sw_r_roce_src_udp_port`, the driver fills in the QP pair's port at
    /// INIT2RTR.
    pub udp_sport: u16,
    /// Loop packets back inside this function (force-loopback).
    pub force_loopback: bool,
}

impl AddressHandle {
    /// An InfiniBand-routed address: local port `port_num`, peer LID
    /// `dlid`, service level 0, no GRH.
    pub const fn ib(port_num: u8, dlid: u16) -> Self {
        AddressHandle {
            dlid,
            sl: 0,
            port_num,
            grh: None,
            dmac: [0; 6],
            udp_sport: 0,
            force_loopback: false,
        }
    }

    /// A RoCE address: local port `port_num`, the peer's GID `dgid` and
    /// MAC `dmac`, sent from GID table entry `sgid_index` (the index
    /// `ib_write_bw -x` / `ibv_rc_pingpong -g` name), priority 0.
    pub const fn roce(port_num: u8, dgid: [u8; 16], dmac: [u8; 6], sgid_index: u8) -> Self {
        AddressHandle {
            dlid: 0,
            sl: 0,
            port_num,
            grh: Some(GlobalRoute::new(dgid, sgid_index)),
            dmac,
            udp_sport: 0,
            force_loopback: false,
        }
    }

    /// This function's own QPs on `port_num` through the force-loopback
    /// path (no address is needed or used).
    pub const fn loopback(port_num: u8) -> Self {
        AddressHandle {
            force_loopback: true,
            ..AddressHandle::ib(port_num, 0)
        }
    }
}

/// INIT → RTR attributes (`IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
/// IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtrAttr {
    /// Path MTU.
    pub path_mtu: IbMtu,
    /// The peer's QP number (24 bits).
    pub dest_qp_num: u32,
    /// First PSN expected from the peer (24 bits).
    pub rq_psn: u32,
    /// RDMA READ/atomic requests the peer may have outstanding here.
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer code (0–31).
    pub min_rnr_timer: u8,
    /// The peer's address.
    pub ah: AddressHandle,
}

impl RtrAttr {
    /// Toward QP `dest_qp_num` at `ah`, expecting PSN `rq_psn`, with the
    /// values `ibv_rc_pingpong` uses for the rest (one READ/atomic in
    /// flight, RNR timer code 12).
    pub const fn new(path_mtu: IbMtu, dest_qp_num: u32, rq_psn: u32, ah: AddressHandle) -> Self {
        RtrAttr {
            path_mtu,
            dest_qp_num,
            rq_psn,
            max_dest_rd_atomic: 1,
            min_rnr_timer: 12,
            ah,
        }
    }
}

/// RTR → RTS attributes (`IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
/// IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtsAttr {
    /// First PSN sent (24 bits).
    pub sq_psn: u32,
    /// Local ACK timeout code (0–31: 4.096 µs × 2^timeout).
    pub timeout: u8,
    /// Transport retries (0–7).
    pub retry_cnt: u8,
    /// RNR retries (0–7, 7 = infinite).
    pub rnr_retry: u8,
    /// RDMA READ/atomic requests this QP may have outstanding.
    pub max_rd_atomic: u8,
}

impl RtsAttr {
    /// Sending from PSN `sq_psn`, with the values `ibv_rc_pingpong` uses for
    /// the rest (timeout code 14, 7 retries, 7 RNR retries, one READ/atomic
    /// in flight).
    pub const fn new(sq_psn: u32) -> Self {
        RtsAttr {
            sq_psn,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            max_rd_atomic: 1,
        }
    }
}

impl Default for RtsAttr {
    fn default() -> Self {
        RtsAttr::new(0)
    }
}

/// A QP's attributes as the device reports them
/// ([`QueuePair::query_qp`](super::QueuePair::query_qp), `ibv_query_qp`'s
/// `ibv_qp_attr`): the fields QUERY_QP returns that a user sets or needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct QpAttr {
    /// The state the device holds the QP in (`qp_state`): ERR after the
    /// device failed a WR on an RC QP, SQE after a UD/UC send failed.
    pub qp_state: HwQpState,
    /// Path MTU (`path_mtu`); `None` before INIT → RTR sets it.
    pub path_mtu: Option<IbMtu>,
    /// The peer's QP number (`dest_qp_num`).
    pub dest_qp_num: u32,
    /// Next receive PSN (`rq_psn`).
    pub rq_psn: u32,
    /// Next send PSN (`sq_psn`).
    pub sq_psn: u32,
    /// Local port (`port_num`).
    pub port_num: u8,
}
