//! The CQ doorbell record's layout and the arm commands written to it
//! ([ref §4.1, §4.5](crate::reference)).

/// Index of the SET_CI word in the CQ doorbell record (MLX5_CQ_SET_CI).
/// [ref §4.1](crate::reference).
pub const DBREC_SET_CI: usize = 0;
/// Index of the ARM word in the CQ doorbell record (MLX5_CQ_ARM_DB).
/// [ref §4.1](crate::reference).
pub const DBREC_ARM: usize = 1;
/// Bytes of a CQ doorbell record (two BE32 words). [ref §4.1](crate::reference).
pub const DBREC_BYTES: usize = 8;
/// Arm command: next solicited completion only (MLX5_CQ_DB_REQ_NOT_SOL).
/// [ref §4.5](crate::reference).
pub const CQ_DB_REQ_NOT_SOL: u32 = 1 << 24;
/// Arm command: next completion (MLX5_CQ_DB_REQ_NOT). [ref §4.5](crate::reference).
pub const CQ_DB_REQ_NOT: u32 = 0;
