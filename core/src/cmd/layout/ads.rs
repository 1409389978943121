//! `ads`: an address path inside the QP context (`mlx5_ifc.h`
//! `mlx5_ifc_ads_bits`; [ref §7.11](crate::reference)), at
//! [`super::qpc::PRI_PATH`] for the primary path.

use crate::cmd::bits::Field;

/// `fl`: force loopback.
pub const FL: Field = Field::new(0, 31, 31);
/// `pkey_index`.
pub const PKEY_INDEX: Field = Field::new(0, 15, 0);
/// `grh`: a GRH is present.
pub const GRH: Field = Field::new(1, 23, 23);
/// `mlid`: the source LID's path bits (InfiniBand, 7 bits).
pub const MLID: Field = Field::new(1, 22, 16);
/// `rlid`: remote LID (InfiniBand).
pub const RLID: Field = Field::new(1, 15, 0);
/// `ack_timeout`.
pub const ACK_TIMEOUT: Field = Field::new(2, 31, 27);
/// `src_addr_index`: the source GID index.
pub const SRC_ADDR_INDEX: Field = Field::new(2, 23, 16);
/// `hop_limit`.
pub const HOP_LIMIT: Field = Field::new(2, 7, 0);
/// `tclass`: the GRH traffic class.
pub const TCLASS: Field = Field::new(3, 27, 20);
/// `flow_label`: the GRH flow label (20 bits).
pub const FLOW_LABEL: Field = Field::new(3, 19, 0);
/// Byte offset of `rgid_rip` (16 bytes: remote GID or IP).
pub const RGID_RIP: usize = 0x10;
/// Bytes of `rgid_rip`.
pub const RGID_RIP_LEN: usize = 16;
/// `ecn`: the IP ECN bits (RoCE v2).
pub const ECN: Field = Field::new(8, 23, 22);
/// `dscp`: the IP DSCP (RoCE v2, 6 bits).
pub const DSCP: Field = Field::new(8, 21, 16);
/// `udp_sport`: the RoCE v2 UDP source port.
pub const UDP_SPORT: Field = Field::new(8, 15, 0);
/// `eth_prio`: the Ethernet priority (PCP, RoCE, 3 bits).
pub const ETH_PRIO: Field = Field::new(9, 30, 28);
/// `sl`: service level (InfiniBand).
pub const SL: Field = Field::new(9, 27, 24);
/// `vhca_port_num`: the 1-based port.
pub const VHCA_PORT_NUM: Field = Field::new(9, 23, 16);
/// `rmac_47_32`: the remote MAC's first two bytes.
pub const RMAC_47_32: Field = Field::new(9, 15, 0);
/// `rmac_31_0`: the remote MAC's last four bytes.
pub const RMAC_31_0: Field = Field::new(10, 31, 0);
