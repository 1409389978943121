//! `bareverbs perf write-lat|write-bw|send-lat|send-bw|read-lat|read-bw|atomic-lat`:
//! perftest-style tests. The transfer itself comes from a [`PerfBackend`];
//! statistics and output are perftest's ([`crate::perftest`]).
//!
//! Backends (`--device`): `sim` (default, [`super::sim_backend`]: two
//! simulated ConnectX joined by a fabric, modeled time); `model`
//! ([`ModelBackend`](super::model_backend::ModelBackend): timelines
//! computed from the [`NicModel`](crate::model::NicModel) plus
//! the *measured* CPU cost of posting into a memory-backed SQ); `vfio:BDF`
//! ([`super::cmd_backend`] over a ConnectX through VFIO: objects and QPs
//! created by firmware command, transfers measured on hardware); `fw-sim`
//! (the same command-path code on the simulator behind the firmware
//! command interface, modeled time).
//!
//! | file | owns |
//! | --- | --- |
//! | `backend` | the backend of `--device` ([`backend()`]) |
//! | `stream` | running the configurations of a test and streaming its text ([`run`], [`run_outcome`], [`run_streaming`], [`PerfOutcome`]) |
//! | `verdict` | whether a finished run's figures can be trusted ([`verdict()`]) |
//! | `text` | perftest's header, address lines and result columns |
//! | `row` | one result row and the statistics behind it |
//! | `json` | the perf JSON schema (docs/json.md): result objects, the perf object, [`failure_json`] |
//! | `two_hosts` | a run against a peer host (perftest's server/client mode), from connecting to its output |
//! | `names` | perftest's binary name of a test ([`perftest_name`]) |

mod backend;
mod json;
mod names;
mod row;
mod stream;
#[cfg(test)]
mod tests;
mod text;
mod two_hosts;
mod verdict;

pub use super::backend::PerfBackend;
pub use super::config::{qp_request, PerfRunConfig};
pub use super::flags::{Conn, PerfArgs, PerfTest};
pub use super::report::{PerfRunReport, StampsBeyond};
pub use super::rules::{
    configs, configs_on_port, effective_mtu, perftest_rules, port_attrs, PortAttrs, CQ_MOD_RANGE,
    DEF_CQ_MOD, ITERS_RANGE, MAX_INLINE, MAX_MSG_SIZE, MSG_SIZE_CQ_MOD_LIMIT, PERFTEST_MTUS,
    QP_RANGE, TX_RANGE,
};
pub use backend::backend;
pub use json::failure_json;
pub use names::perftest_name;
pub use stream::{run, run_outcome, run_streaming, PerfOutcome};
pub use two_hosts::WAITING_BANNER;
pub use verdict::verdict;
