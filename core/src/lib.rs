//! # bareverbs — a `no_std`, allocation-free core for mlx5 (ConnectX) RDMA NICs
//!
//! `bareverbs` talks to NVIDIA/Mellanox ConnectX NICs directly: it builds
//! mlx5-format work queue entries (WQEs) straight into DMA rings, rings
//! doorbells (doorbell record, 8-byte doorbell, BlueFlame), parses completion
//! queue entries (CQEs), sizes queues exactly as the vendor's provider does,
//! and speaks the firmware command interface for device bring-up.
//!
//! It never allocates and never touches `std`: every buffer the device sees
//! comes from a [`platform`] implementation (Linux VFIO in `bareverbs-vfio`,
//! the software ConnectX in `bareverbs-sim`, or your own bare-metal code).
//!
//! Module map (each module is named after the hardware concept it owns and
//! cites the section of the hardware [`reference`](mod@reference) it implements, as `ref §N.M`):
//!
//! | module | what | ref |
//! | --- | --- | --- |
//! | [`wqe`] | send/receive WQE segments, opcodes, flags, parse/emit | §1, §2 |
//! | [`cqe`] | 64/128-byte CQEs, error CQEs, status, mini-CQE expansion | §5 |
//! | [`sizing`] | device caps → exact queue geometry, budgets | §3 |
//! | [`platform`] | DMA memory, UAR MMIO, barriers (the host trait) | §4.3, §4.4 |
//! | [`ring`] | explicit ring-wrap helpers | §1.8 |
//! | [`cmd`] | firmware command interface: BAR0, init segment, command queue, mailboxes, commands, EQ, pages | §7 |
//! | [`device`] | bring-up sequence, PD/mkey/CQ/QP/SRQ by command, QP transitions, teardown | §6.3, §7.6 |
//! | [`verbs`] | the safe object model: `Context`, PD, owned DMA buffers, memory regions, CQ/QP/SRQ from verbs caps, checked post and poll | §3, §6.2 |
#![cfg_attr(not(test), no_std)]
#![deny(
    unsafe_op_in_unsafe_fn,
    missing_docs,
    clippy::undocumented_unsafe_blocks
)]
#![warn(clippy::missing_safety_doc)]

pub mod cmd;
pub mod cq;
pub mod cqe;
pub mod device;
pub mod errno;
pub mod error;
pub mod mr;
pub mod platform;
pub mod qp;
pub mod queue_pair;
/// The mlx5 hardware reference (WQE/CQE layouts, sizing, doorbells, QP states,
/// command interface) that the `ref §N.M` citations in this crate point to.
pub mod reference;
pub mod ring;
pub mod rq;
pub mod selftest;
pub mod sge;
pub mod sizing;
pub mod sq;
pub mod verbs;
pub mod wqe;

pub use error::Error;
