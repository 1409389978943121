//! The command-path devices of the perftest engine
//! ([`super::engine`]): `--device vfio:BDF` (a ConnectX through VFIO,
//! wall-clock time) and `--device fw-sim` (the simulator behind the
//! firmware command interface, virtual time).
//!
//! [`CmdBackend`] is generic over the core [`Device`](bareverbs::device::Device), so the code that runs
//! against hardware is the code CI runs against the simulator. For each
//! run it creates, by command, a protection domain, DMA buffers with memory
//! keys ([`Mkey::memory_region`](bareverbs::device::Mkey::memory_region) gives
//! the core's [`MemoryRegion`](bareverbs::mr::MemoryRegion)), one CQ
//! per side and QP pairs on port 1 connected to each other through the
//! NIC's loopback (address path with force-loopback; the simulator routes
//! `fl` to the local port). QP geometry is the exact mlx5 sizing of the
//! run's request ([`qp_layout`](bareverbs::sizing::qp_layout) with the
//! device's own capabilities); a request the device cannot create is
//! refused with the sizing error's text ([`QpRejected`]). Doorbells are
//! 8-byte doorbells by default ([`BlueFlame::doorbell_only`](bareverbs::sq::BlueFlame::doorbell_only));
//! `--blueflame` copies single inline WQEs through the BlueFlame register
//! as the provider does. The data path is the core's queues
//! ([`post_send`](bareverbs::sq::SendQueue::post_send),
//! [`post_rdma_raw`](bareverbs::sq::SendQueue::post_rdma_raw),
//! [`post_recv_raw`](bareverbs::rq::RecvQueue::post_recv_raw),
//! [`CompletionQueue::poll`](bareverbs::cq::CompletionQueue::poll) with the
//! [`QueuePair`](bareverbs::queue_pair::QueuePair) as resolver).
//!
//! Time comes from a [`Timer`]: [`WallTimer`] (monotonic wall clock) on
//! hardware, [`FabricTimer`] (the fabric's virtual clock, which the
//! simulator's cost model drives) on the simulator.
//!
//! One concept per file: [`FabricTimer`] (`fabric_timer`), [`CmdOptions`]
//! (`options`), [`CmdBackend`] and its [`PerfDevice`](super::engine::PerfDevice)
//! impl (`backend`), the bring-ups [`fw_sim`] and [`vfio`] (`bring_up`),
//! what a run created and its teardown (`objects`), message memory in
//! keyed DMA chunks (`memory`), one QP pair step by step (`pair`),
//! connecting a QP by command (`connect`), one side's queues behind
//! `dyn SideOps` (`side`), and for two-host runs this host's addressing
//! ([`HostAddr`], `peer_addr`) and its half of each pair (`half`).

mod backend;
mod bring_up;
mod connect;
mod fabric_timer;
mod half;
mod memory;
mod objects;
mod options;
mod pair;
mod peer_addr;
mod side;
#[cfg(test)]
mod tests;

pub use super::engine::{QpRejected, Timer, WallTimer, DEFAULT_TIMEOUT_NS, RQ_WQES};
pub use backend::CmdBackend;
pub use bring_up::{fw_sim, vfio};
pub use fabric_timer::FabricTimer;
pub use memory::CHUNK_BYTES;
pub use options::CmdOptions;
pub use peer_addr::{mac_of_link_local, HostAddr, MacOfGid};
pub(super) use side::Side;
