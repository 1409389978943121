//! Command status codes, delivery status codes and the command error type
//! ([ref §7.3, §7.5](crate::reference)).

use super::initseg::InitSegError;
use super::pages::PageError;
use super::queue::CmdqSetupError;
use core::fmt;

/// Command status from byte 0 of the output header ([ref §7.5](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CmdStatus {
    /// 0x01 internal error.
    InternalError,
    /// 0x02 bad operation (unknown or unsupported opcode / op_mod).
    BadOp,
    /// 0x03 bad parameter.
    BadParam,
    /// 0x04 bad system state.
    BadSysState,
    /// 0x05 bad resource (e.g. an unknown object number).
    BadResource,
    /// 0x06 resource busy.
    ResourceBusy,
    /// 0x08 exceeded limit.
    ExceedLimit,
    /// 0x09 bad resource state.
    BadResState,
    /// 0x0a bad index.
    BadIndex,
    /// 0x0f no resources.
    NoResources,
    /// 0x10 bad QP state.
    BadQpState,
    /// 0x30 bad packet.
    BadPkt,
    /// 0x40 bad size of outstanding CQEs.
    BadSizeOutsCqes,
    /// 0x50 bad input length.
    BadInputLen,
    /// 0x51 bad output length.
    BadOutputLen,
    /// Any other nonzero value.
    Unknown(u8),
}

impl CmdStatus {
    /// Decodes a nonzero status byte; `None` for 0x00 (OK). [ref §7.5](crate::reference).
    pub const fn from_u8(v: u8) -> Option<CmdStatus> {
        Some(match v {
            0x00 => return None,
            0x01 => CmdStatus::InternalError,
            0x02 => CmdStatus::BadOp,
            0x03 => CmdStatus::BadParam,
            0x04 => CmdStatus::BadSysState,
            0x05 => CmdStatus::BadResource,
            0x06 => CmdStatus::ResourceBusy,
            0x08 => CmdStatus::ExceedLimit,
            0x09 => CmdStatus::BadResState,
            0x0a => CmdStatus::BadIndex,
            0x0f => CmdStatus::NoResources,
            0x10 => CmdStatus::BadQpState,
            0x30 => CmdStatus::BadPkt,
            0x40 => CmdStatus::BadSizeOutsCqes,
            0x50 => CmdStatus::BadInputLen,
            0x51 => CmdStatus::BadOutputLen,
            other => CmdStatus::Unknown(other),
        })
    }

    /// The status byte. [ref §7.5](crate::reference).
    pub const fn code(self) -> u8 {
        match self {
            CmdStatus::InternalError => 0x01,
            CmdStatus::BadOp => 0x02,
            CmdStatus::BadParam => 0x03,
            CmdStatus::BadSysState => 0x04,
            CmdStatus::BadResource => 0x05,
            CmdStatus::ResourceBusy => 0x06,
            CmdStatus::ExceedLimit => 0x08,
            CmdStatus::BadResState => 0x09,
            CmdStatus::BadIndex => 0x0a,
            CmdStatus::NoResources => 0x0f,
            CmdStatus::BadQpState => 0x10,
            CmdStatus::BadPkt => 0x30,
            CmdStatus::BadSizeOutsCqes => 0x40,
            CmdStatus::BadInputLen => 0x50,
            CmdStatus::BadOutputLen => 0x51,
            CmdStatus::Unknown(v) => v,
        }
    }

    /// The vendor-style name (`MLX5_CMD_STAT_*` without the prefix).
    pub const fn name(self) -> &'static str {
        match self {
            CmdStatus::InternalError => "INT_ERR",
            CmdStatus::BadOp => "BAD_OP_ERR",
            CmdStatus::BadParam => "BAD_PARAM_ERR",
            CmdStatus::BadSysState => "BAD_SYS_STATE_ERR",
            CmdStatus::BadResource => "BAD_RES_ERR",
            CmdStatus::ResourceBusy => "RES_BUSY",
            CmdStatus::ExceedLimit => "LIM_ERR",
            CmdStatus::BadResState => "BAD_RES_STATE_ERR",
            CmdStatus::BadIndex => "IX_ERR",
            CmdStatus::NoResources => "NO_RES_ERR",
            CmdStatus::BadQpState => "BAD_QP_STATE_ERR",
            CmdStatus::BadPkt => "BAD_PKT_ERR",
            CmdStatus::BadSizeOutsCqes => "BAD_SIZE_OUTS_CQES_ERR",
            CmdStatus::BadInputLen => "BAD_INP_LEN_ERR",
            CmdStatus::BadOutputLen => "BAD_OUTP_LEN_ERR",
            CmdStatus::Unknown(_) => "UNKNOWN",
        }
    }
}

/// Delivery status from `status_own >> 1` of a command queue entry
/// ([ref §7.3](crate::reference)): the transport, not the command, failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeliveryStatus {
    /// 1 signature error.
    Signature,
    /// 2 token error.
    Token,
    /// 3 bad mailbox block number.
    BadBlockNumber,
    /// 4 output pointer not aligned.
    OutPtrAlign,
    /// 5 input pointer not aligned.
    InPtrAlign,
    /// 6 firmware internal error.
    FwInternal,
    /// 7 input length error.
    InputLen,
    /// 8 output length error.
    OutputLen,
    /// 9 a reserved field was not cleared.
    ResFieldNotCleared,
    /// 0x10 bad command descriptor.
    BadCmdDescriptor,
    /// Any other nonzero value.
    Unknown(u8),
}

impl DeliveryStatus {
    /// Decodes `status_own >> 1`; `None` for 0 (delivered). [ref §7.3](crate::reference).
    pub const fn from_u8(v: u8) -> Option<DeliveryStatus> {
        Some(match v {
            0 => return None,
            1 => DeliveryStatus::Signature,
            2 => DeliveryStatus::Token,
            3 => DeliveryStatus::BadBlockNumber,
            4 => DeliveryStatus::OutPtrAlign,
            5 => DeliveryStatus::InPtrAlign,
            6 => DeliveryStatus::FwInternal,
            7 => DeliveryStatus::InputLen,
            8 => DeliveryStatus::OutputLen,
            9 => DeliveryStatus::ResFieldNotCleared,
            0x10 => DeliveryStatus::BadCmdDescriptor,
            other => DeliveryStatus::Unknown(other),
        })
    }

    /// The 7-bit code. [ref §7.3](crate::reference).
    pub const fn code(self) -> u8 {
        match self {
            DeliveryStatus::Signature => 1,
            DeliveryStatus::Token => 2,
            DeliveryStatus::BadBlockNumber => 3,
            DeliveryStatus::OutPtrAlign => 4,
            DeliveryStatus::InPtrAlign => 5,
            DeliveryStatus::FwInternal => 6,
            DeliveryStatus::InputLen => 7,
            DeliveryStatus::OutputLen => 8,
            DeliveryStatus::ResFieldNotCleared => 9,
            DeliveryStatus::BadCmdDescriptor => 0x10,
            DeliveryStatus::Unknown(v) => v,
        }
    }
}

/// Why a mailbox chain read back from the device was rejected ([ref §7.4](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MailboxProblem {
    /// `block_num` differs from the block's position in the chain.
    BlockNumber {
        /// Position in the chain.
        expected: u32,
        /// `block_num` found.
        found: u32,
    },
    /// `next` differs from the address the driver linked.
    NextPointer {
        /// Position in the chain.
        block: u32,
        /// Address found.
        found: u64,
    },
}

/// The command layer's error: a command failed (every such variant names
/// the opcode), or the command interface itself could not be used — the
/// initialization segment, the command queue's setup or the firmware page
/// pool, each wrapped with its own error as
/// [`source`](core::error::Error::source).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CmdError {
    /// Firmware executed the command and returned a nonzero status ([ref §7.5](crate::reference)).
    Failed {
        /// Command opcode.
        opcode: u16,
        /// Status byte.
        status: CmdStatus,
        /// Firmware-specific syndrome (for diagnosis).
        syndrome: u32,
    },
    /// The command queue entry reported a delivery error ([ref §7.3](crate::reference)).
    Delivery {
        /// Command opcode.
        opcode: u16,
        /// Delivery status.
        status: DeliveryStatus,
    },
    /// Ownership did not return to software in time ([ref §7.3](crate::reference)).
    Timeout {
        /// Command opcode.
        opcode: u16,
        /// Microseconds waited.
        waited_us: u64,
    },
    /// The slot is still owned by hardware from an earlier timed-out command.
    SlotBusy {
        /// Command opcode that could not be posted.
        opcode: u16,
        /// Slot index.
        slot: u8,
    },
    /// Input or output length exceeds what the preallocated mailboxes hold.
    TooLong {
        /// Command opcode.
        opcode: u16,
        /// Requested length in bytes.
        len: usize,
        /// Maximum supported length.
        max: usize,
    },
    /// The output mailbox chain was corrupted ([ref §7.4](crate::reference)).
    Mailbox {
        /// Command opcode.
        opcode: u16,
        /// What was wrong.
        problem: MailboxProblem,
    },
    /// The output carried a value the driver cannot accept.
    BadOutput {
        /// Command opcode.
        opcode: u16,
        /// Field name.
        field: &'static str,
        /// Value found.
        value: u64,
    },
    /// The requested slot does not exist in this command queue ([ref §7.2](crate::reference)).
    BadSlot {
        /// Slot index requested.
        slot: u8,
        /// Number of slots.
        slots: u8,
    },
    /// The initialization segment was rejected ([ref §7.1](crate::reference)).
    InitSeg(InitSegError),
    /// The command queue could not be set up ([ref §7.2](crate::reference)).
    CmdqSetup(CmdqSetupError),
    /// The pool of pages lent to firmware failed ([ref §7.7](crate::reference)).
    Pages(PageError),
}

impl From<InitSegError> for CmdError {
    fn from(e: InitSegError) -> Self {
        CmdError::InitSeg(e)
    }
}

impl From<CmdqSetupError> for CmdError {
    fn from(e: CmdqSetupError) -> Self {
        CmdError::CmdqSetup(e)
    }
}

impl From<PageError> for CmdError {
    fn from(e: PageError) -> Self {
        CmdError::Pages(e)
    }
}

impl CmdError {
    /// The firmware status if the command itself failed.
    pub fn status(&self) -> Option<CmdStatus> {
        match self {
            CmdError::Failed { status, .. } => Some(*status),
            _ => None,
        }
    }
}

impl fmt::Display for CmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = super::opcode_name;
        match *self {
            CmdError::Failed {
                opcode,
                status,
                syndrome,
            } => write!(
                f,
                "command {} (0x{opcode:x}) failed: status 0x{:02x} {} syndrome 0x{syndrome:08x}",
                name(opcode),
                status.code(),
                status.name()
            ),
            CmdError::Delivery { opcode, status } => write!(
                f,
                "command {} (0x{opcode:x}) not delivered: delivery status 0x{:x} ({status:?})",
                name(opcode),
                status.code()
            ),
            CmdError::Timeout { opcode, waited_us } => write!(
                f,
                "command {} (0x{opcode:x}) timed out after {waited_us} us (firmware still owns the slot)",
                name(opcode)
            ),
            CmdError::SlotBusy { opcode, slot } => write!(
                f,
                "command {} (0x{opcode:x}): slot {slot} still owned by firmware after an earlier timeout",
                name(opcode)
            ),
            CmdError::TooLong { opcode, len, max } => write!(
                f,
                "command {} (0x{opcode:x}): message of {len} bytes exceeds the {max}-byte mailbox capacity",
                name(opcode)
            ),
            CmdError::Mailbox { opcode, problem } => write!(
                f,
                "command {} (0x{opcode:x}): corrupt output mailbox chain: {problem}",
                name(opcode)
            ),
            CmdError::BadOutput {
                opcode,
                field,
                value,
            } => write!(
                f,
                "command {} (0x{opcode:x}): output field {field} has unusable value 0x{value:x}",
                name(opcode)
            ),
            CmdError::BadSlot { slot, slots } => {
                write!(f, "command slot {slot} does not exist (queue has {slots})")
            }
            CmdError::InitSeg(_) => f.write_str("initialization segment"),
            CmdError::CmdqSetup(_) => f.write_str("command queue setup"),
            CmdError::Pages(_) => f.write_str("firmware pages"),
        }
    }
}

/// [`source`](core::error::Error::source) is the wrapped initialization
/// segment, command queue setup or page pool error (those variants print
/// only their context: "initialization segment", "command queue setup",
/// "firmware pages"); a failed command has none.
impl core::error::Error for CmdError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            CmdError::InitSeg(e) => Some(e),
            CmdError::CmdqSetup(e) => Some(e),
            CmdError::Pages(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for MailboxProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MailboxProblem::BlockNumber { expected, found } => {
                write!(f, "block {expected} carries block_num {found}")
            }
            MailboxProblem::NextPointer { block, found } => {
                write!(f, "block {block} links to 0x{found:x}, not the next block")
            }
        }
    }
}
