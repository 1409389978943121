//! `eqc`: the EQ context of CREATE_EQ (`mlx5_ifc.h` `mlx5_ifc_eqc_bits`;
//! [ref §7.9](crate::reference)).

use crate::cmd::bits::Field;

/// `log_eq_size`.
pub const LOG_EQ_SIZE: Field = Field::new(3, 28, 24);
/// `uar_page`.
pub const UAR_PAGE: Field = Field::new(3, 23, 0);
/// `intr`: the MSI-X vector.
pub const INTR: Field = Field::new(5, 7, 0);
/// `log_page_size` (log2 of the ring's page size − 12).
pub const LOG_PAGE_SIZE: Field = Field::new(6, 28, 24);
