//! A QP capacity request ([`QpCaps`]): the `ibv_qp_init_attr_ex` fields that
//! affect sizing, shared by the SQ, RQ and QP sizing.

use super::ops::SendOps;
use super::qp_type::QpType;

/// A QP capacity request (`ibv_qp_init_attr_ex` fields that affect sizing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpCaps {
    /// QP type.
    pub qp_type: QpType,
    /// Requested send WRs (0 = no SQ).
    pub max_send_wr: u32,
    /// Requested gather entries per send WR.
    pub max_send_sge: u32,
    /// Requested inline bytes per send WR.
    pub max_inline_data: u32,
    /// Requested receive WRs (0 = no RQ).
    pub max_recv_wr: u32,
    /// Requested scatter entries per receive WR.
    pub max_recv_sge: u32,
    /// Explicit send-op list (`send_ops_flags`); `None` = the classic default
    /// set for the QP type ([`SendOps::classic`]).
    pub send_ops: Option<SendOps>,
    /// Max TSO header bytes (0 = none requested) ([ref §3.3](crate::reference) step 3).
    pub max_tso_header: u32,
    /// The QP receives through an SRQ: no RQ ([ref §3.5](crate::reference) step 1).
    pub uses_srq: bool,
}

impl QpCaps {
    /// A request with every capacity 0 and the classic op set.
    pub const fn new(qp_type: QpType) -> QpCaps {
        QpCaps {
            qp_type,
            max_send_wr: 0,
            max_send_sge: 0,
            max_inline_data: 0,
            max_recv_wr: 0,
            max_recv_sge: 0,
            send_ops: None,
            max_tso_header: 0,
            uses_srq: false,
        }
    }

    /// Set the send side (WRs, SGEs, inline bytes).
    #[must_use = "returns the changed value; dropping it discards the change"]
    pub const fn send(mut self, max_send_wr: u32, max_send_sge: u32, max_inline_data: u32) -> Self {
        self.max_send_wr = max_send_wr;
        self.max_send_sge = max_send_sge;
        self.max_inline_data = max_inline_data;
        self
    }

    /// Set the receive side (WRs, SGEs).
    #[must_use = "returns the changed value; dropping it discards the change"]
    pub const fn recv(mut self, max_recv_wr: u32, max_recv_sge: u32) -> Self {
        self.max_recv_wr = max_recv_wr;
        self.max_recv_sge = max_recv_sge;
        self
    }

    /// Restrict the send operations (explicit `send_ops_flags`).
    #[must_use = "returns the changed value; dropping it discards the change"]
    pub const fn ops(mut self, ops: SendOps) -> Self {
        self.send_ops = Some(ops);
        self
    }

    /// The op set sizing uses: the explicit one or [`SendOps::classic`].
    pub const fn effective_ops(&self) -> SendOps {
        match self.send_ops {
            Some(o) => o,
            None => SendOps::classic(self.qp_type),
        }
    }
}
