//! `qpc`: the QP context of CREATE_QP, the *2*_QP transitions and
//! QUERY_QP (`mlx5_ifc.h` `mlx5_ifc_qpc_bits`; [ref §6.3, §7.11](crate::reference)).
//! The primary address path inside it is [`super::ads`] at [`PRI_PATH`].

use crate::cmd::bits::{Field, Field64};

/// `state`: the hardware QP state.
pub const STATE: Field = Field::new(0, 31, 28);
/// `st`: the service type (RC 0, UC 1, UD 2 …).
pub const ST: Field = Field::new(0, 23, 16);
/// `pm_state`: path migration state ([`PM_STATE_MIGRATED`]).
pub const PM_STATE: Field = Field::new(0, 12, 11);
/// `pm_state` value 3: migrated (no alternate path armed).
pub const PM_STATE_MIGRATED: u32 = 3;
/// `pd`.
pub const PD: Field = Field::new(1, 23, 0);
/// `mtu` (`enum ib_mtu`).
pub const MTU: Field = Field::new(2, 31, 29);
/// `log_msg_max`.
pub const LOG_MSG_MAX: Field = Field::new(2, 28, 24);
/// `log_rq_size`: log2 RQ WQEs.
pub const LOG_RQ_SIZE: Field = Field::new(2, 22, 19);
/// `log_rq_stride`: RQ WQE shift − [`LOG_RQ_STRIDE_BASE`].
pub const LOG_RQ_STRIDE: Field = Field::new(2, 18, 16);
/// What `log_rq_stride` (and `srqc.log_rq_stride`) counts from: strides
/// are given in 16-byte units, log2(stride bytes) − 4.
pub const LOG_RQ_STRIDE_BASE: u8 = 4;
/// `no_sq`.
pub const NO_SQ: Field = Field::new(2, 15, 15);
/// `log_sq_size`: log2 SQ WQEBBs.
pub const LOG_SQ_SIZE: Field = Field::new(2, 14, 11);
/// `ts_format` (`dw2[7:6]`): the QP's timestamp format,
/// [`TS_FORMAT_FREE_RUNNING`], [`TS_FORMAT_DEFAULT`] or
/// [`TS_FORMAT_REAL_TIME`] ([ref §7.14](crate::reference)).
pub const TS_FORMAT: Field = Field::new(2, 7, 6);
/// `MLX5_QPC_TIMESTAMP_FORMAT_FREE_RUNNING`.
pub const TS_FORMAT_FREE_RUNNING: u32 = 0;
/// `MLX5_QPC_TIMESTAMP_FORMAT_DEFAULT`.
pub const TS_FORMAT_DEFAULT: u32 = 1;
/// `MLX5_QPC_TIMESTAMP_FORMAT_REAL_TIME`.
pub const TS_FORMAT_REAL_TIME: u32 = 2;
/// `uar_page`.
pub const UAR_PAGE: Field = Field::new(3, 23, 0);
/// `user_index` (reported in CQEs with CQE version 1).
pub const USER_INDEX: Field = Field::new(4, 23, 0);
/// `log_page_size` (log2 of the buffer page size − 12).
pub const LOG_PAGE_SIZE: Field = Field::new(5, 28, 24);
/// `remote_qpn`.
pub const REMOTE_QPN: Field = Field::new(5, 23, 0);
/// Byte offset of `primary_address_path` (an [`super::ads`]).
pub const PRI_PATH: usize = 0x18;
/// `log_ack_req_freq`.
pub const LOG_ACK_REQ_FREQ: Field = Field::new(28, 31, 28);
/// `log_sra_max`: log2 outstanding RDMA READ/atomic as requester.
pub const LOG_SRA_MAX: Field = Field::new(28, 23, 21);
/// `retry_count`.
pub const RETRY_COUNT: Field = Field::new(28, 18, 16);
/// `rnr_retry`.
pub const RNR_RETRY: Field = Field::new(28, 15, 13);
/// `next_send_psn`.
pub const NEXT_SEND_PSN: Field = Field::new(30, 23, 0);
/// `cqn_snd`.
pub const CQN_SND: Field = Field::new(31, 23, 0);
/// `log_rra_max`: log2 outstanding RDMA READ/atomic as responder.
pub const LOG_RRA_MAX: Field = Field::new(36, 23, 21);
/// `rre`: remote read enable.
pub const RRE: Field = Field::new(36, 15, 15);
/// `rwe`: remote write enable.
pub const RWE: Field = Field::new(36, 14, 14);
/// `rae`: remote atomic enable.
pub const RAE: Field = Field::new(36, 13, 13);
/// `min_rnr_nak`.
pub const MIN_RNR_NAK: Field = Field::new(37, 28, 24);
/// `next_rcv_psn`.
pub const NEXT_RCV_PSN: Field = Field::new(37, 23, 0);
/// `cqn_rcv`.
pub const CQN_RCV: Field = Field::new(39, 23, 0);
/// `dbr_addr`: the doorbell record's DMA address.
pub const DBR_ADDR: Field64 = Field64::new(0xa0);
/// `q_key`: the Q_Key of a UD QP.
pub const Q_KEY: Field = Field::new(42, 31, 0);
/// `rq_type` ([`RQ_TYPE_REGULAR`], [`RQ_TYPE_SRQ`]).
pub const RQ_TYPE: Field = Field::new(43, 26, 24);
/// `rq_type` 0: the QP's own receive queue (`NON_ZERO_RQ`).
pub const RQ_TYPE_REGULAR: u32 = 0;
/// `rq_type` 1: receives through the SRQ/RMP `srqn_rmpn_xrqn` names
/// (`SRQ_RQ`).
pub const RQ_TYPE_SRQ: u32 = 1;
/// `srqn_rmpn_xrqn`.
pub const SRQN_RMPN_XRQN: Field = Field::new(43, 23, 0);
