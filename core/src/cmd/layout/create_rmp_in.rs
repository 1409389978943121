//! `create_rmp_in`: CREATE_RMP's input (`mlx5_ifc.h`
//! `mlx5_ifc_create_rmp_in_bits`; [ref §7.13](crate::reference)): the
//! header, then the [`super::rmpc`] at [`RMPC`], whose [`super::wq`]
//! starts at [`WQ`] and whose `pas[]` at 0x110.

use super::{rmpc, wq};

/// Offset of the `rmpc` (`ctx`) in the message (after 0x20 bytes).
pub const RMPC: usize = 0x20;
/// Offset of the context's `wq` in the message.
pub const WQ: usize = RMPC + rmpc::WQ;
/// Offset of `wq.pas[]` in the message.
pub const PAS: usize = WQ + wq::PAS;
