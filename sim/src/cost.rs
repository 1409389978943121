//! The PCIe / NIC cost model (perf ref §2.3) — its one owner — and the
//! counters the simulator keeps per QP and per device.
//!
//! Every default in [`ModelParams`] names its source ((V) read in the
//! primary source, (S) secondary, (U) unverified placeholder, as in
//! perf ref §0). The simulator uses them for the virtual time of each step
//! (WQE fetch, payload gather, wire, CQE write); [`latency_ns`] evaluates
//! the short one-way latency formula from those terms, and [`nic::wqe_cost`]
//! the full closed-form one that `bareverbs sweep` and the `model` backend
//! of `bareverbs perf` print (the tool only loads parameter overrides from
//! a file and calls it):
//!
//! ```text
//! L = t_post + t_db
//!   + (bf ? t_mmio_line * WQEBBs : t_rd(64 * WQEBBs * B))   # WQE fetch
//!   + (inline ? 0 : t_rd(len_1) + (k - 1) * t_sge)          # payload gather
//!   + miss_iotlb * t_iotlb + miss_qpc * t_rd(64)            # closed form only
//!   + t_base                                                # wire + NIC + remote write
//!   (+ roce_extra + t_remote in the closed form)
//! t_rd(n) = t_rd0 + beta * max(0, n - 64)
//! ```
//!
//! | module | what |
//! | --- | --- |
//! | `params` | [`ModelParams`]: every parameter, its default and source, [`ModelParams::describe`], `t_rd` |
//! | `formula` | [`fetch_ns`], [`gather_ns`], [`latency_ns`] of a decided [`WqeShape`] |
//! | [`nic`] | the closed-form cost of a posted WQE: BlueFlame rule, PCIe reads, latency terms, rate bound |
//! | `fast` | the terms the simulator's fused fast path precomputes |
//! | `round` | exact float-to-integer conversions of virtual times |
//! | `counters` | [`Counters`] |

mod counters;
mod fast;
mod formula;
pub mod nic;
mod params;
mod round;

pub use counters::Counters;
pub(crate) use fast::{FastCosts, LenCosts};
pub(crate) use formula::{bf_delivers, wqe_fetch_ns};
pub use formula::{fetch_ns, gather_ns, latency_ns, WqeShape};
pub use params::ModelParams;
pub(crate) use round::{ceil_u64, trunc_u64};
