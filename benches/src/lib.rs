//! # bareverbs-bench — criterion benchmarks
//!
//! The criterion benchmarks of the data path are in `benches/`: `post`
//! (the Rust post path beside the C comparison loop), `poll` and `recv`.
//! They drive the engines of the `bareverbs` tool (the `bareverbs-tool`
//! package, `benches/tool/`); this library is empty and exists because a
//! package needs one target besides its benches.
//!
//! `cargo bench -p bareverbs-bench`
#![deny(missing_docs)]
