//! `wq`: the work queue description inside an RMP (and RQ/SQ) context
//! (`mlx5_ifc.h` `mlx5_ifc_wq_bits`; [ref §7.13](crate::reference)),
//! relative to the start of the `wq`; its `pas[]` list follows at
//! [`PAS`].

use crate::cmd::bits::{Field, Field64};

/// `wq_type` (`dw0[31:28]`): [`WQ_TYPE_LINKED_LIST`] for an SRQ's ring.
pub const WQ_TYPE: Field = Field::new(0, 31, 28);
/// `wq_signature` (`dw0[27]`).
pub const WQ_SIGNATURE: Field = Field::new(0, 27, 27);
/// `end_padding_mode` (`dw0[26:25]`).
pub const END_PADDING_MODE: Field = Field::new(0, 26, 25);
/// `page_offset` (`dw1[20:16]`).
pub const PAGE_OFFSET: Field = Field::new(1, 20, 16);
/// `lwm` (`dw1[15:0]`): the limit watermark.
pub const LWM: Field = Field::new(1, 15, 0);
/// `pd` (`dw2[23:0]`).
pub const PD: Field = Field::new(2, 23, 0);
/// `uar_page` (`dw3[23:0]`).
pub const UAR_PAGE: Field = Field::new(3, 23, 0);
/// `dbr_addr` (byte 0x10): the doorbell record's DMA address.
pub const DBR_ADDR: Field64 = Field64::new(0x10);
/// `log_wq_stride` (`dw8[19:16]`): the **absolute** log2 of the WQE stride
/// in bytes (unlike `srqc.log_rq_stride`, which counts from 16 bytes).
pub const LOG_WQ_STRIDE: Field = Field::new(8, 19, 16);
/// `log_wq_pg_sz` (`dw8[12:8]`): log2 of the ring's page size − 12.
pub const LOG_WQ_PG_SZ: Field = Field::new(8, 12, 8);
/// `log_wq_sz` (`dw8[4:0]`): log2 of the WQE count.
pub const LOG_WQ_SZ: Field = Field::new(8, 4, 0);
/// Offset of `pas[]` after the 0xc0-byte `wq`.
pub const PAS: usize = 0xc0;
/// `MLX5_WQ_TYPE_LINKED_LIST`: WQEs chained through their next segment,
/// the SRQ WQE format ([ref §2.2](crate::reference)).
pub const WQ_TYPE_LINKED_LIST: u32 = 0;
