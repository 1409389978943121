//! `create_eq_in`: the fields of CREATE_EQ's input outside its [`super::eqc`]
//! (`mlx5_ifc.h` `mlx5_ifc_create_eq_in_bits`; [ref §7.9](crate::reference)),
//! relative to the start of the message.

use crate::cmd::bits::Field64;

/// `event_bitmask[0]`: the event types 0–63 the EQ takes, as bits
/// (`1 << type`; bit 0x2c0 of the message).
pub const EVENT_BITMASK: Field64 = Field64::new(0x58);
