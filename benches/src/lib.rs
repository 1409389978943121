//! # bareverbs-bench — the `bareverbs` tool and benchmarks
//!
//! Library half of the `bareverbs` command-line tool: vector-file readers and
//! the `conform` replayer, `decode`, `budget`, and (later) `devinfo`, `perf`
//! and `sweep`. The binary in `src/main.rs` is a thin clap front end.
#![deny(missing_docs)]

pub mod args;
pub mod budget;
pub mod conform;
pub mod decode;
pub mod device_arg;
pub mod devinfo;
pub mod envelope;
pub mod model;
pub mod perf;
pub mod perftest;
pub mod selftest;
pub mod sweep;
pub mod vectors;
