//! `cqc`: the CQ context of CREATE_CQ (`mlx5_ifc.h` `mlx5_ifc_cqc_bits`;
//! [ref §7.10](crate::reference)).

use crate::cmd::bits::{Field, Field64};

/// `cqe_sz`: 0 = 64-byte CQEs, 1 = 128-byte.
pub const CQE_SZ: Field = Field::new(0, 23, 21);
/// `log_cq_size`.
pub const LOG_CQ_SIZE: Field = Field::new(3, 28, 24);
/// `uar_page`.
pub const UAR_PAGE: Field = Field::new(3, 23, 0);
/// `c_eqn`: the completion EQ.
pub const C_EQN: Field = Field::new(5, 7, 0);
/// `log_page_size` (log2 of the ring's page size − 12).
pub const LOG_PAGE_SIZE: Field = Field::new(6, 28, 24);
/// `dbr_addr`: the doorbell record's DMA address.
pub const DBR_ADDR: Field64 = Field64::new(0x38);
