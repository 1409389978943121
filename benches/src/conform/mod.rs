//! `bareverbs conform FILE…`: replays ground-truth vector files through
//! bareverbs and reports one line per case, then `N passed, M failed`.

pub mod cqe;
pub mod recv;
pub mod sizing;
pub mod wqe;
