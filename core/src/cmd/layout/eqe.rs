//! `eqe`: the 64-byte event queue entry (`mlx5_ifc.h`
//! `mlx5_ifc_eqe_bits`; linux `include/linux/mlx5/device.h` and
//! rdma-core `providers/mlx5/mlx5_vfio.h` `struct mlx5_eqe`; [ref §7.7,
//! §7.9](crate::reference)) and the event data the driver reads: the
//! completion event (`mlx5_ifc_comp_event_bits`, `struct mlx5_eqe_comp`),
//! the command completion event (`mlx5_ifc_cmd_inter_comp_event_bits`,
//! `struct mlx5_eqe_cmd`) and the page request (`struct
//! mlx5_eqe_page_req`). The event data starts at byte 0x20; every field
//! here is relative to the start of the EQE.

use crate::cmd::bits::Field;

/// Byte offset of `event_type` (one byte; [`crate::cmd::eq::event`]).
pub const EVENT_TYPE: usize = 0x01;
/// Byte offset of `event_sub_type` (one byte).
pub const EVENT_SUB_TYPE: usize = 0x03;
/// Byte offset of the byte holding `owner` (bit 0; the last byte).
pub const OWNER: usize = 0x3f;

/// The first dword of the event data (`dw8`, byte 0x20).
pub const EVENT_DATA_DW0: Field = Field::new(8, 31, 0);
/// Command completion: `command_completion_vector` (`vector`), the
/// bitmask of finished slots (`dw8`, byte 0x20).
pub const CMD_VECTOR: Field = Field::new(8, 31, 0);
/// Page request: `func_id` (`dw8[15:0]`, byte 0x22).
pub const PAGE_REQ_FUNC_ID: Field = Field::new(8, 15, 0);
/// Page request: `num_pages` (`dw9`, byte 0x24): signed; negative =
/// firmware returns pages.
pub const PAGE_REQ_NUM_PAGES: Field = Field::new(9, 31, 0);
/// Completion: `cq_number` (`cqn`; `dw14[23:0]`, byte 0x38).
pub const COMP_CQ_NUMBER: Field = Field::new(14, 23, 0);
