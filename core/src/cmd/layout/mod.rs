//! Named field tables of the firmware command structures: one module per
//! `mlx5_ifc.h` structure, each field a [`Field`](super::bits::Field) or
//! [`Field64`](super::bits::Field64) named as the vendor header names it
//! (upper case). Offsets are relative to where the structure starts in a
//! message (see the `*_OFFSET`/`QPC`/`CQC`… constants in [`super::ops`]);
//! the `*_in`/`*_out` modules are the command messages themselves, their
//! fields relative to the start of the message.
//!
//! These tables are the one owner of the field positions: the driver's
//! command builders and parsers ([`super::ops`]) and the simulator's
//! firmware both go through them. The general capability fields have their
//! own table in [`super::caps::field`]. [ref §7](crate::reference).

pub mod access_register_in;
pub mod ads;
pub mod cmd_in;
pub mod cmd_out;
pub mod cqc;
pub mod create_eq_in;
pub mod create_mkey_in;
pub mod create_rmp_in;
pub mod eqc;
pub mod eqe;
pub mod hca_vport;
pub mod host_endianness_reg;
pub mod manage_pages_in;
pub mod manage_pages_out;
pub mod mkc;
pub mod modify_nic_vport_context_in;
pub mod modify_qp_in;
pub mod nic_vport;
pub mod pmtu;
pub mod qpc;
pub mod query_adapter_out;
pub mod query_adapter_param_block;
pub mod query_issi_out;
pub mod query_pages_out;
pub mod query_roce_address_in;
pub mod query_roce_address_out;
pub mod query_vport_state_out;
pub mod rmpc;
pub mod roce_addr_layout;
pub mod roce_cap;
pub mod set_issi_in;
pub mod set_roce_address_in;
pub mod srqc;
pub mod teardown_hca_in;
pub mod teardown_hca_out;
pub mod wq;
