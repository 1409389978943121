//! Named field tables of the firmware command structures: one module per
//! `mlx5_ifc.h` structure, each field a [`Field`](super::bits::Field) or
//! [`Field64`](super::bits::Field64) named as the vendor header names it
//! (upper case). Offsets are relative to where the structure starts in a
//! message (see the `*_OFFSET`/`QPC`/`CQC`… constants in [`super::ops`]).
//!
//! These tables are the one owner of the field positions: the driver's
//! command builders and parsers ([`super::ops`]) and the simulator's
//! firmware both go through them. The general capability fields have their
//! own table in [`super::caps::field`]. [ref §7](crate::reference).

pub mod ads;
pub mod cmd_in;
pub mod cqc;
pub mod create_eq_in;
pub mod create_mkey_in;
pub mod eqc;
pub mod hca_vport;
pub mod mkc;
pub mod nic_vport;
pub mod pmtu;
pub mod qpc;
pub mod srqc;
