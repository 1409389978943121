//! `bareverbs perf`: CPU cost of the data path on memory-backed queues
//! (`post`, `post-recv`, `poll`, `compare-c`), and perftest-style transfers.

pub mod backend;
pub mod c_loop;
pub mod cli;
pub mod cmd_backend;
pub mod config;
#[cfg(feature = "c-loop")]
pub mod cpost;
#[cfg(test)]
mod debug_tests;
pub mod engine;
pub mod flags;
pub mod model_backend;
pub mod poll;
pub mod post;
pub mod probe;
pub mod recv;
pub mod report;
pub mod rules;
pub mod run;
pub mod sim_backend;
pub mod steps;
pub mod two_hosts;
