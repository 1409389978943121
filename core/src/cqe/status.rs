//! Verbs vocabulary for completions: `ibv_wc_status`, `ibv_wc_opcode`,
//! `ibv_wc_flags` values, the mlx5 syndrome table, the requester opcode
//! mapping and the work-completion record. [ref §5.6–§5.8](crate::reference).

use crate::error::ParseError;
use bitflags::bitflags;

macro_rules! repr_enum {
    (
        $(#[$m:meta])* pub enum $name:ident : $repr:ty {
            $($(#[$vm:meta])* $v:ident = $n:expr => $s:expr, $d:expr;)*
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        #[repr($repr)]
        pub enum $name {
            $($(#[$vm])* $v = $n,)*
        }
        impl $name {
            /// Every value, in numeric order.
            pub const ALL: &'static [$name] = &[$($name::$v,)*];
            /// The verbs name without prefix (e.g. `"SUCCESS"`).
            pub const fn name(self) -> &'static str {
                match self { $($name::$v => $s,)* }
            }
            /// The verbs description string (`ibv_*_str` wording).
            pub const fn description(self) -> &'static str {
                match self { $($name::$v => $d,)* }
            }
            /// The numeric value.
            #[inline(always)]
            pub const fn as_raw(self) -> $repr {
                self as $repr
            }
            /// Checked conversion from the numeric value.
            pub const fn from_raw(v: $repr) -> Option<Self> {
                match v { $($n => Some($name::$v),)* _ => None }
            }
            /// Lookup by verbs name (`"LOC_PROT_ERR"`, with or without the
            /// `IBV_WC_` prefix).
            pub fn from_name(s: &str) -> Option<Self> {
                let s = s.strip_prefix("IBV_WC_").unwrap_or(s);
                Self::ALL.iter().copied().find(|v| v.name() == s)
            }
        }
        impl TryFrom<$repr> for $name {
            type Error = ParseError;
            fn try_from(v: $repr) -> Result<Self, ParseError> {
                Self::from_raw(v).ok_or(ParseError::BadField { field: stringify!($name), value: v as u32 })
            }
        }
        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

repr_enum! {
    /// Work-completion status with `enum ibv_wc_status` numbering. [ref §5.6](crate::reference).
    #[non_exhaustive]
    pub enum WcStatus: u32 {
        /// Success.
        #[default]
        Success = 0 => "SUCCESS", "success";
        /// Local length error.
        LocLenErr = 1 => "LOC_LEN_ERR", "local length error";
        /// Local QP operation error.
        LocQpOpErr = 2 => "LOC_QP_OP_ERR", "local QP operation error";
        /// Local EE context operation error.
        LocEecOpErr = 3 => "LOC_EEC_OP_ERR", "local EE context operation error";
        /// Local protection error.
        LocProtErr = 4 => "LOC_PROT_ERR", "local protection error";
        /// Work request flushed.
        WrFlushErr = 5 => "WR_FLUSH_ERR", "Work Request Flushed Error";
        /// Memory window bind error.
        MwBindErr = 6 => "MW_BIND_ERR", "memory management operation error";
        /// Bad response.
        BadRespErr = 7 => "BAD_RESP_ERR", "bad response error";
        /// Local access error.
        LocAccessErr = 8 => "LOC_ACCESS_ERR", "local access error";
        /// Remote invalid request.
        RemInvReqErr = 9 => "REM_INV_REQ_ERR", "remote invalid request error";
        /// Remote access error.
        RemAccessErr = 10 => "REM_ACCESS_ERR", "remote access error";
        /// Remote operation error.
        RemOpErr = 11 => "REM_OP_ERR", "remote operation error";
        /// Transport retry counter exceeded.
        RetryExcErr = 12 => "RETRY_EXC_ERR", "transport retry counter exceeded";
        /// RNR retry counter exceeded.
        RnrRetryExcErr = 13 => "RNR_RETRY_EXC_ERR", "RNR retry counter exceeded";
        /// Local RDD violation.
        LocRddViolErr = 14 => "LOC_RDD_VIOL_ERR", "local RDD violation error";
        /// Remote invalid RD request.
        RemInvRdReqErr = 15 => "REM_INV_RD_REQ_ERR", "remote invalid RD request";
        /// Remote aborted.
        RemAbortErr = 16 => "REM_ABORT_ERR", "aborted error";
        /// Invalid EE context number.
        InvEecnErr = 17 => "INV_EECN_ERR", "invalid EE context number";
        /// Invalid EE context state.
        InvEecStateErr = 18 => "INV_EEC_STATE_ERR", "invalid EE context state";
        /// Fatal error.
        FatalErr = 19 => "FATAL_ERR", "fatal error";
        /// Response timeout.
        RespTimeoutErr = 20 => "RESP_TIMEOUT_ERR", "response timeout error";
        /// General error (every unknown syndrome).
        GeneralErr = 21 => "GENERAL_ERR", "general error";
        /// Tag matching error.
        TmErr = 22 => "TM_ERR", "TM error";
        /// Tag matching rendezvous incomplete.
        TmRndvIncomplete = 23 => "TM_RNDV_INCOMPLETE", "TM software rendezvous";
    }
}

repr_enum! {
    /// Work-completion opcode with `enum ibv_wc_opcode` numbering.
    /// [ref §5.7, §5.8](crate::reference).
    #[non_exhaustive]
    pub enum WcOpcode: u32 {
        /// Send.
        #[default]
        Send = 0 => "SEND", "send";
        /// RDMA write.
        RdmaWrite = 1 => "RDMA_WRITE", "RDMA write";
        /// RDMA read.
        RdmaRead = 2 => "RDMA_READ", "RDMA read";
        /// Compare and swap.
        CompSwap = 3 => "COMP_SWAP", "compare and swap";
        /// Fetch and add.
        FetchAdd = 4 => "FETCH_ADD", "fetch and add";
        /// Memory window bind.
        BindMw = 5 => "BIND_MW", "bind memory window";
        /// Local invalidate.
        LocalInv = 6 => "LOCAL_INV", "local invalidate";
        /// TCP segmentation offload send.
        Tso = 7 => "TSO", "TSO";
        /// Flush.
        Flush = 8 => "FLUSH", "flush";
        /// Atomic write.
        AtomicWrite = 9 => "ATOMIC_WRITE", "atomic write";
        /// Receive (send, send with immediate, send with invalidate).
        Recv = 128 => "RECV", "receive";
        /// Receive of an RDMA write with immediate.
        RecvRdmaWithImm = 129 => "RECV_RDMA_WITH_IMM", "receive RDMA write with immediate";
        /// Tag matching: add.
        TmAdd = 130 => "TM_ADD", "TM add";
        /// Tag matching: delete.
        TmDel = 131 => "TM_DEL", "TM delete";
        /// Tag matching: sync.
        TmSync = 132 => "TM_SYNC", "TM sync";
        /// Tag matching: receive.
        TmRecv = 133 => "TM_RECV", "TM receive";
        /// Tag matching: no tag.
        TmNoTag = 134 => "TM_NO_TAG", "TM no tag";
        /// Driver-defined operation 1.
        Driver1 = 135 => "DRIVER1", "driver op 1";
        /// Driver-defined operation 2.
        Driver2 = 136 => "DRIVER2", "driver op 2";
        /// Driver-defined operation 3.
        Driver3 = 137 => "DRIVER3", "driver op 3";
    }
}

bitflags! {
    /// Work-completion flags with `enum ibv_wc_flags` values.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct WcFlags: u32 {
        /// A GRH is present (flags_rqpn bits 29:28 nonzero). [ref §5.8](crate::reference).
        const GRH = 1 << 0;
        /// `imm_data` is valid.
        const WITH_IMM = 1 << 1;
        /// IP checksum verified (raw packet QPs).
        const IP_CSUM_OK = 1 << 2;
        /// `invalidated_rkey` is valid.
        const WITH_INV = 1 << 3;
        /// Tag matching: sync request.
        const TM_SYNC_REQ = 1 << 4;
        /// Tag matching: match.
        const TM_MATCH = 1 << 5;
        /// Tag matching: data valid.
        const TM_DATA_VALID = 1 << 6;
    }
}

bitflags! {
    /// Which [`WorkCompletion`] fields the provider writes for a given CQE
    /// (the others keep whatever the caller's array held). The vector files
    /// mark the unwritten ones `<not written by provider>`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct WrittenFields: u32 {
        /// `wr_id`.
        const WR_ID = 1 << 0;
        /// `status`.
        const STATUS = 1 << 1;
        /// `opcode`.
        const OPCODE = 1 << 2;
        /// `vendor_err`.
        const VENDOR_ERR = 1 << 3;
        /// `byte_len`.
        const BYTE_LEN = 1 << 4;
        /// `imm_data` (the verbs union member; see `invalidated_rkey`).
        const IMM_DATA = 1 << 5;
        /// `invalidated_rkey` (same storage as `imm_data` in verbs).
        const INVALIDATED_RKEY = 1 << 6;
        /// `qp_num`.
        const QP_NUM = 1 << 7;
        /// `src_qp`.
        const SRC_QP = 1 << 8;
        /// `wc_flags`.
        const WC_FLAGS = 1 << 9;
        /// `pkey_index`.
        const PKEY_INDEX = 1 << 10;
        /// `slid`.
        const SLID = 1 << 11;
        /// `sl`.
        const SL = 1 << 12;
        /// `dlid_path_bits`.
        const DLID_PATH_BITS = 1 << 13;
        /// Fields of every responder success: byte_len, src_qp, pkey_index,
        /// slid, sl, dlid_path_bits (plus the common ones). [ref §5.8](crate::reference).
        const RESPONDER = Self::BYTE_LEN.bits() | Self::SRC_QP.bits() | Self::PKEY_INDEX.bits()
            | Self::SLID.bits() | Self::SL.bits() | Self::DLID_PATH_BITS.bits();
        /// Written for every completion the poller reports: qp_num, wc_flags.
        const COMMON = Self::QP_NUM.bits() | Self::WC_FLAGS.bits();
    }
}

/// One work completion in verbs vocabulary (`struct ibv_wc`), plus the set
/// of fields the provider actually wrote for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WorkCompletion {
    /// The work request id.
    pub wr_id: u64,
    /// Completion status.
    pub status: WcStatus,
    /// Operation.
    pub opcode: WcOpcode,
    /// Vendor syndrome (error CQEs).
    pub vendor_err: u32,
    /// Bytes transferred (responder; RDMA read; 8 for atomics).
    pub byte_len: u32,
    /// Immediate data exactly as stored in the CQE: `imm_data.to_ne_bytes()`
    /// are the wire bytes (verbs' `__be32`); host value `u32::from_be(imm_data)`.
    pub imm_data: u32,
    /// Invalidated rkey (host order), valid with [`WcFlags::WITH_INV`].
    pub invalidated_rkey: u32,
    /// Local QP number.
    pub qp_num: u32,
    /// Remote QP number (responder).
    pub src_qp: u32,
    /// Flags.
    pub wc_flags: WcFlags,
    /// P_Key index (GSI QPs).
    pub pkey_index: u16,
    /// Source LID.
    pub slid: u16,
    /// Service level.
    pub sl: u8,
    /// DLID path bits.
    pub dlid_path_bits: u8,
    /// Which of the fields above were written for this completion.
    pub written: WrittenFields,
}

impl WorkCompletion {
    /// The verbs `imm_data`/`invalidated_rkey` union as a `u32` the way
    /// ibverbs stores it on this host: the invalidated rkey when
    /// [`WcFlags::WITH_INV`] is set, else the raw immediate.
    pub fn imm_union(&self) -> u32 {
        if self.wc_flags.contains(WcFlags::WITH_INV) {
            self.invalidated_rkey
        } else {
            self.imm_data
        }
    }
}

/// mlx5 error syndrome (error CQE byte 55). [ref §5.6](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Syndrome {
    /// 0x01.
    LocalLengthErr,
    /// 0x02.
    LocalQpOpErr,
    /// 0x04.
    LocalProtErr,
    /// 0x05.
    WrFlushErr,
    /// 0x06.
    MwBindErr,
    /// 0x10.
    BadRespErr,
    /// 0x11.
    LocalAccessErr,
    /// 0x12.
    RemoteInvalReqErr,
    /// 0x13.
    RemoteAccessErr,
    /// 0x14.
    RemoteOpErr,
    /// 0x15.
    TransportRetryExcErr,
    /// 0x16.
    RnrRetryExcErr,
    /// 0x22.
    RemoteAbortedErr,
    /// Any other value (maps to GENERAL_ERR).
    Unknown(u8),
}

impl Syndrome {
    /// The 13 defined syndromes.
    pub const KNOWN: [Syndrome; 13] = [
        Syndrome::LocalLengthErr,
        Syndrome::LocalQpOpErr,
        Syndrome::LocalProtErr,
        Syndrome::WrFlushErr,
        Syndrome::MwBindErr,
        Syndrome::BadRespErr,
        Syndrome::LocalAccessErr,
        Syndrome::RemoteInvalReqErr,
        Syndrome::RemoteAccessErr,
        Syndrome::RemoteOpErr,
        Syndrome::TransportRetryExcErr,
        Syndrome::RnrRetryExcErr,
        Syndrome::RemoteAbortedErr,
    ];
    /// Decodes a syndrome byte (total).
    pub const fn from_u8(v: u8) -> Self {
        match v {
            0x01 => Syndrome::LocalLengthErr,
            0x02 => Syndrome::LocalQpOpErr,
            0x04 => Syndrome::LocalProtErr,
            0x05 => Syndrome::WrFlushErr,
            0x06 => Syndrome::MwBindErr,
            0x10 => Syndrome::BadRespErr,
            0x11 => Syndrome::LocalAccessErr,
            0x12 => Syndrome::RemoteInvalReqErr,
            0x13 => Syndrome::RemoteAccessErr,
            0x14 => Syndrome::RemoteOpErr,
            0x15 => Syndrome::TransportRetryExcErr,
            0x16 => Syndrome::RnrRetryExcErr,
            0x22 => Syndrome::RemoteAbortedErr,
            v => Syndrome::Unknown(v),
        }
    }
    /// The byte value.
    pub const fn as_u8(self) -> u8 {
        match self {
            Syndrome::LocalLengthErr => 0x01,
            Syndrome::LocalQpOpErr => 0x02,
            Syndrome::LocalProtErr => 0x04,
            Syndrome::WrFlushErr => 0x05,
            Syndrome::MwBindErr => 0x06,
            Syndrome::BadRespErr => 0x10,
            Syndrome::LocalAccessErr => 0x11,
            Syndrome::RemoteInvalReqErr => 0x12,
            Syndrome::RemoteAccessErr => 0x13,
            Syndrome::RemoteOpErr => 0x14,
            Syndrome::TransportRetryExcErr => 0x15,
            Syndrome::RnrRetryExcErr => 0x16,
            Syndrome::RemoteAbortedErr => 0x22,
            Syndrome::Unknown(v) => v,
        }
    }
    /// The mlx5 name (`MLX5_CQE_SYNDROME_` suffix), `"UNKNOWN"` otherwise.
    pub const fn name(self) -> &'static str {
        match self {
            Syndrome::LocalLengthErr => "LOCAL_LENGTH_ERR",
            Syndrome::LocalQpOpErr => "LOCAL_QP_OP_ERR",
            Syndrome::LocalProtErr => "LOCAL_PROT_ERR",
            Syndrome::WrFlushErr => "WR_FLUSH_ERR",
            Syndrome::MwBindErr => "MW_BIND_ERR",
            Syndrome::BadRespErr => "BAD_RESP_ERR",
            Syndrome::LocalAccessErr => "LOCAL_ACCESS_ERR",
            Syndrome::RemoteInvalReqErr => "REMOTE_INVAL_REQ_ERR",
            Syndrome::RemoteAccessErr => "REMOTE_ACCESS_ERR",
            Syndrome::RemoteOpErr => "REMOTE_OP_ERR",
            Syndrome::TransportRetryExcErr => "TRANSPORT_RETRY_EXC_ERR",
            Syndrome::RnrRetryExcErr => "RNR_RETRY_EXC_ERR",
            Syndrome::RemoteAbortedErr => "REMOTE_ABORTED_ERR",
            Syndrome::Unknown(_) => "UNKNOWN",
        }
    }
    /// The completion status (unknown → GENERAL_ERR). [ref §5.6](crate::reference).
    pub const fn status(self) -> WcStatus {
        match self {
            Syndrome::LocalLengthErr => WcStatus::LocLenErr,
            Syndrome::LocalQpOpErr => WcStatus::LocQpOpErr,
            Syndrome::LocalProtErr => WcStatus::LocProtErr,
            Syndrome::WrFlushErr => WcStatus::WrFlushErr,
            Syndrome::MwBindErr => WcStatus::MwBindErr,
            Syndrome::BadRespErr => WcStatus::BadRespErr,
            Syndrome::LocalAccessErr => WcStatus::LocAccessErr,
            Syndrome::RemoteInvalReqErr => WcStatus::RemInvReqErr,
            Syndrome::RemoteAccessErr => WcStatus::RemAccessErr,
            Syndrome::RemoteOpErr => WcStatus::RemOpErr,
            Syndrome::TransportRetryExcErr => WcStatus::RetryExcErr,
            Syndrome::RnrRetryExcErr => WcStatus::RnrRetryExcErr,
            Syndrome::RemoteAbortedErr => WcStatus::RemAbortErr,
            Syndrome::Unknown(_) => WcStatus::GeneralErr,
        }
    }
}

/// Syndrome byte → completion status (unknown → GENERAL_ERR; the vendor
/// syndrome is reported separately as `vendor_err`). [ref §5.6](crate::reference).
#[inline]
pub const fn syndrome_to_status(syndrome: u8) -> WcStatus {
    Syndrome::from_u8(syndrome).status()
}

/// What a successful requester CQE reports, by send WQE opcode. [ref §5.7](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReqCompletion {
    /// `wc.opcode`, or `None` when the provider leaves it unwritten (send
    /// opcodes outside the [ref §5.7](crate::reference) table).
    pub opcode: Option<WcOpcode>,
    /// Flags (WITH_IMM for RDMA_WRITE_IMM / SEND_IMM).
    pub flags: WcFlags,
    /// `wc.byte_len`, when written: byte_cnt for RDMA_READ, 8 for atomics.
    pub byte_len: Option<u32>,
}

/// Maps a requester CQE's send WQE opcode (`sop_drop_qpn >> 24`) to the
/// verbs opcode, flags and byte length. `wr_data` is the value the SQ
/// stored for the WQE slot (used for UMR, SET_PSV, NOP and MMO), `byte_cnt`
/// the CQE's byte count. [ref §5.7, §1.6, §1.10](crate::reference).
#[inline]
pub const fn req_completion(wqe_opcode: u8, wr_data: WcOpcode, byte_cnt: u32) -> ReqCompletion {
    let (opcode, flags, byte_len) = match wqe_opcode {
        0x08 => (Some(WcOpcode::RdmaWrite), WcFlags::empty(), None),
        0x09 => (Some(WcOpcode::RdmaWrite), WcFlags::WITH_IMM, None),
        0x0a | 0x01 => (Some(WcOpcode::Send), WcFlags::empty(), None),
        0x0b => (Some(WcOpcode::Send), WcFlags::WITH_IMM, None),
        0x10 => (Some(WcOpcode::RdmaRead), WcFlags::empty(), Some(byte_cnt)),
        0x11 => (Some(WcOpcode::CompSwap), WcFlags::empty(), Some(8)),
        0x12 => (Some(WcOpcode::FetchAdd), WcFlags::empty(), Some(8)),
        // UMR, SET_PSV, NOP, MMO: the opcode recorded at post time.
        0x25 | 0x20 | 0x00 | 0x2f => (Some(wr_data), WcFlags::empty(), None),
        0x0e => (Some(WcOpcode::Tso), WcFlags::empty(), None),
        _ => (None, WcFlags::empty(), None),
    };
    ReqCompletion {
        opcode,
        flags,
        byte_len,
    }
}
