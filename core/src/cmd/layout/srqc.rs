//! `srqc`: the SRQ context of CREATE_SRQ (`mlx5_ifc.h` `mlx5_ifc_srqc_bits`).

use crate::cmd::bits::{Field, Field64};

/// `log_srq_size`.
pub const LOG_SRQ_SIZE: Field = Field::new(0, 27, 24);
/// `log_rq_stride`: WQE shift − 4.
pub const LOG_RQ_STRIDE: Field = Field::new(1, 26, 24);
/// `cqn`.
pub const CQN: Field = Field::new(2, 23, 0);
/// `log_page_size` (log2 of the ring's page size − 12).
pub const LOG_PAGE_SIZE: Field = Field::new(4, 29, 24);
/// `pd`.
pub const PD: Field = Field::new(6, 23, 0);
/// `lwm`: the limit watermark.
pub const LWM: Field = Field::new(7, 31, 16);
/// `dbr_addr`: the doorbell record's DMA address.
pub const DBR_ADDR: Field64 = Field64::new(0x28);
