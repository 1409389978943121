//! # bareverbs-sim — a software ConnectX
//!
//! Implements the `bareverbs` platform traits over process memory, executes
//! SQ/RQ/SRQ rings when their doorbells are rung, writes real mlx5 CQEs,
//! joins devices through an in-process fabric on virtual time with a seeded
//! fault plan, and keeps the PCIe cost model of perf ref §2.3.
//! Tests, fuzzers and benchmarks run on it without hardware.
//!
//! Citations of the form `perf ref §N` (for example `perf ref §2.3`) name a
//! section of `docs/performance-reference.md` in the repository: the
//! performance anchors, cost-model parameters and software-RDMA behaviours
//! this crate follows, each with its public source. `ref §N` citations point
//! to the hardware reference, [`bareverbs::reference`].
//!
//! | module | what |
//! | --- | --- |
//! | [`device`] | [`Fabric`], [`Device`], [`SimUar`], object creation, modify-QP |
//! | [`objects`] | device-side tables: MR (mkey), CQ, SRQ, QP contexts |
//! | [`transport`] | SQ fetch/execute, RC/UC/UD, ACK/NAK/RNR, timers, flush |
//! | `wire` | the messages between requester and responder (crate-internal) |
//! | [`udp_wire`] | a port joined to other processes' simulated ports over UDP ([`Fabric::join_wire`]), in wall-clock time |
//! | [`world`] | the event queue, fabric delivery, CQE writer, syndromes |
//! | [`fault`] | seeded fault plans |
//! | [`rng`] | the deterministic test and simulation generator [`Rng`] (not cryptographic) |
//! | [`cost`] | the cost model: parameters, formula, the closed-form cost of a posted WQE ([`cost::nic`]), counters |
//! | [`harness`] | endpoints over the core's queues, connection helpers |
//! | [`perf`] | perftest-like runs and the loopback rate |
//! | [`fw`] | firmware behind an emulated BAR0: the command interface, pages, EQs; [`fw::bring_up_on`] puts command-created objects on the data path |
//!
//! ```
//! use bareverbs::qp::QpType;
//! use bareverbs::sq::{SendFlags, SendOp, SendWr};
//! use bareverbs_sim::harness::{connect, ConnOpts, EpConfig, Endpoint};
//! use bareverbs_sim::Fabric;
//!
//! let fabric = Fabric::new(42); // seed of the fault plan's generator
//! let (da, db) = (fabric.add_device(), fabric.add_device());
//! let mut a: Endpoint = Endpoint::new(&da, &EpConfig::new(QpType::Rc)).unwrap();
//! let mut b: Endpoint = Endpoint::new(&db, &EpConfig::new(QpType::Rc)).unwrap();
//! connect(&mut a, &mut b, &ConnOpts::default()).unwrap(); // RESET → INIT → RTR → RTS
//! a.write(0, b"hello");
//! let sge = [a.sge(0, 5)];
//! let op = SendOp::Write { remote_addr: b.addr(0), rkey: b.mr().rkey() };
//! let wr = SendWr::new(1, op, &sge).with_flags(SendFlags::SIGNALED);
//! a.post_send(&[wr], &[*a.mr()]).unwrap(); // doorbell → the device executes
//! let wcs = a.drain(); // the core's CompletionQueue::poll over real mlx5 CQEs
//! assert_eq!(wcs[0].wr_id, 1);
//! assert_eq!(b.read(0, 5), b"hello");
//! ```
//!
//! # Model notes
//!
//! * **Time** is virtual (ns) and advances only through events; with
//!   auto progress (default) a doorbell runs the world until idle, so a post
//!   has completed when it returns. Stale timers never move the clock.
//! * **Wire**: one event per message; a message of `len` bytes takes
//!   `max(1, ceil(len / path_mtu))` PSNs. RC is go-back-N with one
//!   sequence NAK per gap, the transport timer 4.096 µs × 2^timeout,
//!   `retry_cnt`, RNR NAK with the IBA timer table and `rnr_retry` (7 =
//!   infinite). UC drops on a gap; UD checks the Q_Key and puts 40 GRH bytes
//!   in front of the payload (IBA).
//! * **Errors**: local errors are reported when the failing WQE reaches
//!   the head of the send queue, in order; RC QPs go to ERR (everything
//!   outstanding and posted is flushed in order, RQ too), UD/UC send
//!   errors go to SQE. Vendor syndromes: see [`world::vendor`] (only
//!   WR_FLUSH's 0xF9 is confirmed from hardware logs).
//! * **Fused fast path**: a doorbell for one single-packet RC WRITE, with
//!   no other event queued, no fault plan and auto progress, is executed
//!   in one step with exactly the effects of the event-driven path (same
//!   counters, trace, CQE, memory and virtual time);
//!   [`Fabric::set_fast_paths`] turns it off, and twin tests compare both.
//! * **Atomics** operate on big-endian 64-bit memory (ConnectX order).
//! * **Two ways to create objects**: the Rust API of [`Device`] (tests,
//!   benchmarks), or the firmware command interface ([`fw`]): the core's
//!   `Device::bring_up` and CREATE_MKEY / CREATE_CQ / CREATE_QP / modify-QP
//!   commands over an emulated BAR0, whose objects [`fw::FabricPath`] makes
//!   the ones the data path executes (same numbers, rings and records).
//! * **Two processes** ([`udp_wire`]): a port joined to a UDP socket
//!   ([`Fabric::join_wire`]) sends each packet addressed to a wired peer as
//!   datagrams (a header naming GIDs, MAC and QPs, the body in fragments
//!   of at most 60,000 bytes) and takes in what arrives, checked as a RoCE
//!   port checks it (the sender's GID names its address, the destination
//!   GID and MAC are in this port's table, the QP is connected to the
//!   sender); what fails is dropped and counted ([`WireStats`]). A wired
//!   fabric's clock is the wall clock; the fault plan still applies to
//!   what leaves. RC only is exercised across the wire.
//! * **Not modelled yet**: fences and `max_rd_atomic` limits, UMR / memory
//!   windows / LOCAL_INV, XRC, raw packet QPs, 128-byte and compressed
//!   CQEs, scatter-to-CQE, the WQE cache and the IOTLB (the QP-context
//!   cache is modelled).
#![deny(
    missing_docs,
    missing_debug_implementations,
    clippy::undocumented_unsafe_blocks,
    clippy::exhaustive_enums,
    clippy::return_self_not_must_use
)]

pub mod cost;
pub mod device;
pub mod dma;
pub mod fault;
pub mod fuzzing;
pub mod fw;
pub mod harness;
pub mod objects;
pub mod perf;
pub mod rng;
pub mod transport;
pub mod udp_wire;
mod wire;
pub mod world;

pub use cost::{Counters, ModelParams};
pub use device::{CqHandle, Device, Fabric, Pd, QpHandle, QpInit, SimError, SimUar, SrqHandle};
pub use fault::{FaultPlan, Stall, Window};
pub use objects::{AsyncEvent, QpAttr};
pub use rng::Rng;
pub use udp_wire::{wire_addr_of_gid, wire_gid, wire_mac, wire_mac_of_gid, WireSocket, WireStats};
pub use world::{vendor, TraceEvent, TraceKind};
