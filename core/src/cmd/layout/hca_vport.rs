//! `hca_vport_context` (`mlx5_ifc.h` `mlx5_ifc_hca_vport_context_bits`),
//! as QUERY_HCA_VPORT_CONTEXT returns it for an InfiniBand port.

use crate::cmd::bits::{Field, Field64};

/// `other_vport` of QUERY_HCA_VPORT_CONTEXT's *input* (`dw2[31:31]` of
/// `query_hca_vport_context_in`): 0 = the function's own vport.
pub const IN_OTHER_VPORT: Field = Field::new(2, 31, 31);
/// `port_num` of QUERY_HCA_VPORT_CONTEXT's *input* (`dw2[19:16]` of
/// `query_hca_vport_context_in`), set only on two-port devices.
pub const IN_PORT_NUM: Field = Field::new(2, 19, 16);
/// `vport_number` of QUERY_HCA_VPORT_CONTEXT's *input* (`dw2[15:0]` of
/// `query_hca_vport_context_in`; only with `other_vport`).
pub const IN_VPORT_NUMBER: Field = Field::new(2, 15, 0);

/// `port_physical_state`.
pub const PORT_PHYSICAL_STATE: Field = Field::new(8, 15, 12);
/// `port_state`.
pub const PORT_STATE: Field = Field::new(8, 7, 4);
/// `vport_state`.
pub const VPORT_STATE: Field = Field::new(8, 3, 0);
/// `system_image_guid`.
pub const SYSTEM_IMAGE_GUID: Field64 = Field64::new(0x28);
/// `port_guid`.
pub const PORT_GUID: Field64 = Field64::new(0x30);
/// `node_guid`.
pub const NODE_GUID: Field64 = Field64::new(0x38);
/// `cap_mask1`.
pub const CAP_MASK1: Field = Field::new(16, 31, 0);
/// `lid`.
pub const LID: Field = Field::new(24, 31, 16);
/// `init_type_reply`.
pub const INIT_TYPE_REPLY: Field = Field::new(24, 11, 8);
/// `lmc`.
pub const LMC: Field = Field::new(24, 7, 5);
/// `subnet_timeout`.
pub const SUBNET_TIMEOUT: Field = Field::new(24, 4, 0);
/// `sm_lid`.
pub const SM_LID: Field = Field::new(25, 31, 16);
/// `sm_sl`.
pub const SM_SL: Field = Field::new(25, 15, 12);
/// `qkey_violation_counter`.
pub const QKEY_VIOLATION_COUNTER: Field = Field::new(26, 31, 16);
/// `pkey_violation_counter`.
pub const PKEY_VIOLATION_COUNTER: Field = Field::new(26, 15, 0);
