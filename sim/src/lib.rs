//! # bareverbs-sim — a software ConnectX
//!
//! Implements the `bareverbs` platform traits over process memory, executes
//! SQ/RQ/SRQ rings when their doorbells are rung, writes real mlx5 CQEs,
//! models the firmware command interface, a fabric between ports, faults
//! and a PCIe cost model. Tests, fuzzers and benchmarks run on it without
//! hardware. (Filled by the simulator issue.)
#![deny(missing_docs)]

pub mod dma;
pub mod fuzzing;
pub mod fw;
