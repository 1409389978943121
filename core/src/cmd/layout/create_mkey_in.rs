//! `create_mkey_in`: the fields of CREATE_MKEY's input outside its
//! [`super::mkc`] (`mlx5_ifc.h` `mlx5_ifc_create_mkey_in_bits`;
//! [ref §7.12](crate::reference)), relative to the start of the message.

use crate::cmd::bits::Field;

/// `pg_access` (dword 3 bit 31, byte 0x0c mask 0x80): the MTT entries
/// carry per-page access flags (read bit 0, write bit 1) that the device
/// honours; with it clear the entries' low bits must be zero.
pub const PG_ACCESS: Field = Field::new(3, 31, 31);

/// `translations_octword_actual_size`: the MTT entries sent, in 16-byte
/// units (bit 0x300 of the message).
pub const TRANSLATIONS_OCTWORD_ACTUAL_SIZE: Field = Field::new(24, 31, 0);
