//! The CQE opcode ([`CqeOpcode`], `op_own >> 4`) and its names.
//! [ref §5.4](crate::reference).

use crate::error::ParseError;

/// CQE opcode (`op_own >> 4`). [ref §5.4](crate::reference).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CqeOpcode {
    /// MLX5_CQE_REQ: requester success.
    Req = 0,
    /// MLX5_CQE_RESP_WR_IMM: RDMA write with immediate consumed an RQ WQE.
    RespWrImm = 1,
    /// MLX5_CQE_RESP_SEND: responder send.
    RespSend = 2,
    /// MLX5_CQE_RESP_SEND_IMM: responder send with immediate.
    RespSendImm = 3,
    /// MLX5_CQE_RESP_SEND_INV: responder send with invalidate.
    RespSendInv = 4,
    /// MLX5_CQE_RESIZE_CQ: resize marker.
    Resize = 5,
    /// MLX5_CQE_NO_PACKET: tag matching / no data.
    NoPacket = 6,
    /// MLX5_CQE_SIG_ERR: signature error.
    SigErr = 12,
    /// MLX5_CQE_REQ_ERR: requester error.
    ReqErr = 13,
    /// MLX5_CQE_RESP_ERR: responder error.
    RespErr = 14,
    /// MLX5_CQE_INVALID: software init value, never written by hardware.
    Invalid = 15,
}

impl CqeOpcode {
    /// The mlx5 name (without the `MLX5_CQE_` prefix).
    pub const fn name(self) -> &'static str {
        match self {
            CqeOpcode::Req => "REQ",
            CqeOpcode::RespWrImm => "RESP_WR_IMM",
            CqeOpcode::RespSend => "RESP_SEND",
            CqeOpcode::RespSendImm => "RESP_SEND_IMM",
            CqeOpcode::RespSendInv => "RESP_SEND_INV",
            CqeOpcode::Resize => "RESIZE_CQ",
            CqeOpcode::NoPacket => "NO_PACKET",
            CqeOpcode::SigErr => "SIG_ERR",
            CqeOpcode::ReqErr => "REQ_ERR",
            CqeOpcode::RespErr => "RESP_ERR",
            CqeOpcode::Invalid => "INVALID",
        }
    }
    /// The name of any 4-bit opcode value (`"UNKNOWN"` for 7–11).
    pub fn name_of(raw: u8) -> &'static str {
        CqeOpcode::try_from(raw)
            .map(CqeOpcode::name)
            .unwrap_or("UNKNOWN")
    }
    /// Responder opcodes (1–4) that consume a receive WQE. [ref §5.8](crate::reference).
    pub const fn is_responder(self) -> bool {
        matches!(
            self,
            CqeOpcode::RespWrImm
                | CqeOpcode::RespSend
                | CqeOpcode::RespSendImm
                | CqeOpcode::RespSendInv
        )
    }
}

impl TryFrom<u8> for CqeOpcode {
    type Error = ParseError;
    fn try_from(v: u8) -> Result<Self, ParseError> {
        Ok(match v {
            0 => CqeOpcode::Req,
            1 => CqeOpcode::RespWrImm,
            2 => CqeOpcode::RespSend,
            3 => CqeOpcode::RespSendImm,
            4 => CqeOpcode::RespSendInv,
            5 => CqeOpcode::Resize,
            6 => CqeOpcode::NoPacket,
            12 => CqeOpcode::SigErr,
            13 => CqeOpcode::ReqErr,
            14 => CqeOpcode::RespErr,
            15 => CqeOpcode::Invalid,
            _ => {
                return Err(ParseError::BadField {
                    field: "cqe opcode",
                    value: v as u32,
                })
            }
        })
    }
}
