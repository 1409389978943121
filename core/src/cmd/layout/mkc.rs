//! `mkc`: the memory key context of CREATE_MKEY and of UMR's mkey
//! segment (`mlx5_ifc.h` `mlx5_ifc_mkc_bits`; [ref §7.12](crate::reference)).

use crate::cmd::bits::{Field, Field64};

/// `a`, `rw`, `rr`, `lw`, `lr`: the five access bits, atomic first
/// ([`crate::wqe::MkeyAccess`] holds them at bits 6..2 of the byte).
pub const ACCESS: Field = Field::new(0, 14, 10);
/// `access_mode_1_0` (1 = MTT, [`ACCESS_MODE_MTT`]).
pub const ACCESS_MODE_1_0: Field = Field::new(0, 9, 8);
/// `access_mode` value of a key translated by an MTT list
/// (`MLX5_MKC_ACCESS_MODE_MTT`).
pub const ACCESS_MODE_MTT: u32 = 1;
/// `qpn` ([`QPN_NONE`] = not bound to a QP).
pub const QPN: Field = Field::new(1, 31, 8);
/// `qpn` of a key no QP owns: all 24 bits set.
pub const QPN_NONE: u32 = 0xff_ffff;
/// `mkey_7_0`: the variant byte of the key.
pub const MKEY_7_0: Field = Field::new(1, 7, 0);
/// `pd`.
pub const PD: Field = Field::new(3, 23, 0);
/// `start_addr`.
pub const START_ADDR: Field64 = Field64::new(0x10);
/// `len`.
pub const LEN: Field64 = Field64::new(0x18);
/// `translations_octword_size`.
pub const TRANSLATIONS_OCTWORD_SIZE: Field = Field::new(13, 31, 0);
/// `log_page_size` (absolute log2 page size): 6 bits, `dw14[5:0]`, as in
/// current `mlx5_ifc.h` (older headers show 5 bits and bit 5 as
/// `reserved_at_1d9`; the driver uses at most
/// [`MKEY_LOG_PAGE_MAX`](crate::cmd::ops::MKEY_LOG_PAGE_MAX) = 31, which
/// leaves bit 5 clear).
pub const LOG_PAGE_SIZE: Field = Field::new(14, 5, 0);
