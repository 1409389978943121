//! `create_mkey_in`: the fields of CREATE_MKEY's input outside its
//! [`super::mkc`] (`mlx5_ifc.h` `mlx5_ifc_create_mkey_in_bits`;
//! [ref §7.12](crate::reference)), relative to the start of the message.

use crate::cmd::bits::Field;

/// `translations_octword_actual_size`: the MTT entries sent, in 16-byte
/// units (bit 0x300 of the message).
pub const TRANSLATIONS_OCTWORD_ACTUAL_SIZE: Field = Field::new(24, 31, 0);
