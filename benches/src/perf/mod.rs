//! `bareverbs perf`: CPU cost of the data path on memory-backed queues
//! (`post`, `poll`), and (with the simulator) perftest-style transfers.

pub mod poll;
pub mod post;
