//! Named field tables of the firmware command structures: one module per
//! `mlx5_ifc.h` structure, each field a [`Field`] or
//! [`Field64`](super::bits::Field64) named as the vendor header names it
//! (upper case). Offsets are relative to where the structure starts in a
//! message (see the `*_OFFSET`/`QPC`/`CQC`… constants in [`super::ops`]).
//!
//! These tables are the one owner of the field positions: the driver's
//! command builders and parsers ([`super::ops`]) and the simulator's
//! firmware both go through them. The general capability fields have their
//! own table in [`super::caps::field`]. [ref §7](crate::reference).

pub mod ads;
pub mod cqc;
pub mod eqc;
pub mod hca_vport;
pub mod mkc;
pub mod nic_vport;
pub mod pmtu;
pub mod qpc;
pub mod srqc;

use super::bits::Field;

/// Fields of the command header common to every input (`mbox_in`):
/// `opcode` and `op_mod` as [ref §7.5](crate::reference) lays them out, and
/// the 24-bit object number most object commands take in `dw2`.
pub mod cmd_in {
    use super::Field;

    /// `opcode` (`dw0[31:16]`).
    pub const OPCODE: Field = Field::new(0, 31, 16);
    /// `op_mod` (`dw1[15:0]`).
    pub const OP_MOD: Field = Field::new(1, 15, 0);
    /// The object number (qpn, cqn, srqn, pd, uar, mkey index …) of
    /// DESTROY/QUERY/MODIFY commands and of CREATE outputs (`dw2[23:0]`).
    pub const OBJ_ID: Field = Field::new(2, 23, 0);
}
