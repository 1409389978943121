//! Fuzz-target bodies. `fuzz/` calls them under libFuzzer; the tests in
//! `sim/tests/` replay the committed corpora through them on stable Rust
//! ([`corpus::replay_corpus`]).

pub mod corpus;
pub mod cqe;
pub mod fw;
pub mod hostile;
pub mod rings;
pub mod wqe;
