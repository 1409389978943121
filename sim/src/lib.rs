//! # bareverbs-sim — a software ConnectX
//!
//! Implements the `bareverbs` platform traits over process memory, executes
//! SQ/RQ/SRQ rings when their doorbells are rung, writes real mlx5 CQEs,
//! joins devices through an in-process fabric on virtual time with a seeded
//! fault plan, and keeps the PCIe cost model of PERF_AND_SIM.md §2.3.
//! Tests, fuzzers and benchmarks run on it without hardware.
//!
//! | module | what |
//! | --- | --- |
//! | [`device`] | [`Fabric`], [`Device`], [`SimUar`], object creation, modify-QP |
//! | [`objects`] | device-side tables: MR (mkey), CQ, SRQ, QP contexts |
//! | [`transport`] | SQ fetch/execute, RC/UC/UD, ACK/NAK/RNR, timers, flush |
//! | [`world`] | the event queue, fabric delivery, CQE writer, syndromes |
//! | [`fault`] | seeded fault plans |
//! | [`cost`] | cost-model parameters and counters |
//! | [`harness`] | endpoints over the core's queues, connection helpers |
//! | [`perf`] | perftest-like runs and the loopback rate |
#![deny(missing_docs)]

pub mod cost;
pub mod device;
pub mod dma;
pub mod fault;
pub mod fuzzing;
pub mod harness;
pub mod objects;
pub mod perf;
pub mod transport;
pub mod world;

pub use cost::{Counters, ModelParams};
pub use device::{CqHandle, Device, Fabric, Pd, QpHandle, QpInit, SimError, SimUar, SrqHandle};
pub use fault::{FaultPlan, Rng, Stall, Window};
pub use objects::{access, AsyncEvent, QpAttr};
pub use world::{syndrome, vendor, TraceEvent, TraceKind};
