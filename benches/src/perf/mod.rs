//! `bareverbs perf`: CPU cost of the data path on memory-backed queues
//! (`post`, `poll`), and (with the simulator) perftest-style transfers.

pub mod cli;
pub mod cpost;
pub mod post;
pub mod probe;
pub mod run;
