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
//!
//! ## A walk-through: platform → bring-up → objects → post/poll
//!
//! 1. **Platform.** The host implements [`platform::DmaAllocator`] (DMA
//!    memory the device may address), [`cmd::Bar0`] (the function's
//!    registers), [`device::UarMap`] (doorbell pages) and [`cmd::Clock`].
//!    `bareverbs-vfio` does this for a real ConnectX through Linux VFIO;
//!    `bareverbs-sim` for a simulated one. Nothing else in the core touches
//!    the host.
//! 2. **Bring-up.** [`device::Device::bring_up`] runs the vendor's sequence
//!    by firmware command (wait for the init segment, ENABLE_HCA, ISSI,
//!    boot and init pages, capabilities, INIT_HCA, UAR, event queue) and
//!    validates every answer the device gives.
//! 3. **Objects.** [`verbs::Context`] owns the device; protection domains,
//!    DMA buffers, memory regions, CQs and QPs borrow from it, so none can
//!    outlive what the device would still read or write. Queues are sized
//!    from verbs capabilities exactly as the vendor's provider sizes them.
//! 4. **Post and poll.** `post_send`/`post_recv` build WQEs straight into
//!    the rings and ring the doorbell; `poll` validates each CQE against
//!    the work in flight before it becomes a [`cqe::WorkCompletion`].
//!
//! Every error a verbs call returns converts into [`verbs::Error`], so the
//! whole flow propagates with `?` (each layer's error type and what it
//! wraps: [`error`]).
//!
//! Here on the simulated ConnectX (a dev-dependency), one RC QP pair on one
//! function, connected to each other over RoCE v2 (the function's GID table
//! programmed with an IPv4 address, as the kernel lays it out), moves 256
//! bytes with an RDMA WRITE:
//!
//! ```
//! use bareverbs::cmd::ops::IbMtu;
//! use bareverbs::cqe::{WcStatus, WorkCompletion};
//! use bareverbs::device::DeviceConfig;
//! use bareverbs::qp::QpType;
//! use bareverbs::sq::SendOp;
//! use bareverbs::verbs::{
//!     Access, AddressHandle, Context, InitAttr, QpCap, QpInitAttr, RtrAttr, RtsAttr, SendWr,
//! };
//! use bareverbs_sim::fw::{bring_up_on, FwConfig, SimUar};
//! use bareverbs_sim::Fabric;
//!
//! # fn main() -> Result<(), bareverbs::verbs::Error> {
//! // 1 + 2: a simulated function on a fabric, brought up by firmware command.
//! let fabric = Fabric::new(1);
//! let (dev, _nic) = bring_up_on(&fabric, FwConfig::default(), DeviceConfig::default())?;
//! let ctx = Context::new(dev);
//! let gids = ctx.add_ip_gids(std::net::Ipv4Addr::new(192, 168, 1, 10).into())?;
//! let me = ctx.gid(gids.v2).expect("GID entry"); // index 3: RoCE v2, ::ffff:192.168.1.10
//!
//! // 3: objects, each borrowing from the context.
//! let pd = ctx.alloc_pd()?;
//! let buf = ctx.alloc_buffer(4096)?;
//! let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
//! let cq = ctx.create_cq(64)?;
//! let attr = QpInitAttr::new(QpType::Rc, &cq, &cq, QpCap::new(16, 16, 1, 1));
//! let mut a: bareverbs::verbs::QueuePair<'_, SimUar, 64, 16> = ctx.create_qp(&pd, &attr)?;
//! let mut b: bareverbs::verbs::QueuePair<'_, SimUar, 64, 16> = ctx.create_qp(&pd, &attr)?;
//! let (qpn_a, qpn_b) = (a.qp_num(), b.qp_num());
//! for (qp, peer, psn) in [(&mut a, qpn_b, (1, 2)), (&mut b, qpn_a, (2, 1))] {
//!     qp.to_init(&InitAttr::new(1, Access::REMOTE_WRITE))?;
//!     let ah = AddressHandle::roce(1, me.gid, me.mac, gids.v2 as u8);
//!     qp.to_rtr(&RtrAttr::new(IbMtu::Mtu1024, peer, psn.0, ah))?;
//!     qp.to_rts(&RtsAttr::new(psn.1))?;
//! }
//!
//! // 4: WRITE bytes 0..256 to 1024..1280 of the same region, then poll.
//! buf.write(0, &[0xab; 256])?;
//! let dst = mr.remote(1024, 256).expect("remote range");
//! let op = SendOp::Write { remote_addr: dst.addr, rkey: dst.rkey };
//! a.post_send(&[SendWr::new(7, op, &[mr.sge(0, 256).expect("sge")]).signaled()])?;
//! let mut wc = [WorkCompletion::default(); 1];
//! let mut n = 0;
//! for _ in 0..1000 {
//!     n = cq.poll(&mut a, &mut wc)?;
//!     if n == 1 {
//!         break;
//!     }
//! }
//! assert_eq!((n, wc[0].wr_id, wc[0].status), (1, 7, WcStatus::Success));
//! let mut got = [0u8; 256];
//! buf.read(1024, &mut got)?;
//! assert_eq!(got, [0xab; 256]);
//! # Ok(())
//! # }
//! ```

#![cfg_attr(not(test), no_std)]
#![deny(
    unsafe_op_in_unsafe_fn,
    missing_docs,
    missing_debug_implementations,
    clippy::undocumented_unsafe_blocks,
    clippy::exhaustive_enums,
    clippy::return_self_not_must_use
)]
#![warn(clippy::missing_safety_doc)]

#[cfg(bareverbs_barrier_probes)]
#[doc(hidden)]
pub mod barrier_probes;
pub mod cmd;
pub mod cq;
pub mod cqe;
pub mod device;
mod devmem;
pub mod errno;
pub mod error;
pub mod mr;
pub mod platform;
pub mod qp;
pub mod queue_pair;
/// The mlx5 hardware reference (WQE/CQE layouts, sizing, doorbells, QP states,
/// command interface) that the `ref §N.M` citations in this crate point to.
pub mod reference;
pub mod retire;
pub mod ring;
pub mod rq;
pub mod selftest;
pub mod sge;
pub mod sizing;
pub mod sq;
pub mod verbs;
pub mod wqe;
