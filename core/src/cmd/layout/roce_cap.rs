//! `roce_cap`: the RoCE capability page (QUERY_HCA_CAP / SET_HCA_CAP cap
//! type 4; `mlx5_ifc.h` `mlx5_ifc_roce_cap_bits`; [ref §7.14](crate::reference)),
//! relative to the start of the capability (message byte 0x10).

use crate::cmd::bits::Field;

/// Bytes of the RoCE capability (`DEVX_ST_SZ_BYTES(roce_cap)`): what
/// SET_HCA_CAP op_mod 8 carries back.
pub const LEN: usize = 0x100;
/// `roce_apm` (`dw0[31]`).
pub const ROCE_APM: Field = Field::new(0, 31, 31);
/// `sw_r_roce_src_udp_port` (`dw0[27]`): software sets the RoCE v2 UDP
/// source port (settable: the driver turns it on when the maximum allows).
pub const SW_R_ROCE_SRC_UDP_PORT: Field = Field::new(0, 27, 27);
/// `fl_rc_qp_when_roce_disabled` (`dw0[26]`).
pub const FL_RC_QP_WHEN_ROCE_DISABLED: Field = Field::new(0, 26, 26);
/// `fl_rc_qp_when_roce_enabled` (`dw0[25]`).
pub const FL_RC_QP_WHEN_ROCE_ENABLED: Field = Field::new(0, 25, 25);
/// `qp_ts_format` (`dw0[1:0]`): the QP timestamp formats the device
/// takes, [`TS_CAP_FREE_RUNNING`], [`TS_CAP_REAL_TIME`] or
/// [`TS_CAP_FREE_RUNNING_AND_REAL_TIME`].
pub const QP_TS_FORMAT: Field = Field::new(0, 1, 0);
/// `l3_type` (`dw4[19:16]`): bit 1 IPv4, bit 2 IPv6.
pub const L3_TYPE: Field = Field::new(4, 19, 16);
/// `roce_version` (`dw4[7:0]`): bit 0 RoCE v1, bit 2 RoCE v2.
pub const ROCE_VERSION: Field = Field::new(4, 7, 0);
/// `r_roce_dest_udp_port` (`dw5[15:0]`).
pub const R_ROCE_DEST_UDP_PORT: Field = Field::new(5, 15, 0);
/// `roce_address_table_size` (`dw7[15:0]`): GID table entries per port.
pub const ROCE_ADDRESS_TABLE_SIZE: Field = Field::new(7, 15, 0);
/// `MLX5_TIMESTAMP_FORMAT_CAP_FREE_RUNNING`: free-running only.
pub const TS_CAP_FREE_RUNNING: u32 = 0;
/// `MLX5_TIMESTAMP_FORMAT_CAP_REAL_TIME`: real-time only.
pub const TS_CAP_REAL_TIME: u32 = 1;
/// `MLX5_TIMESTAMP_FORMAT_CAP_FREE_RUNNING_AND_REAL_TIME`: both.
pub const TS_CAP_FREE_RUNNING_AND_REAL_TIME: u32 = 2;
