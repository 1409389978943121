//! # bareverbs-bench — criterion benchmarks
//!
//! The criterion benchmarks of the data path are in `benches/`: `post`
//! (the Rust post path beside the C comparison loop), `poll` and `recv`.
//! They drive the engines of the `bareverbs` tool (the `bareverbs-tool`
//! package, `benches/tool/`). This library holds nothing but the
//! workspace README's code blocks, compiled and run as its doctests (this
//! package is not published, so it may read a file outside itself).
//!
//! `cargo bench -p bareverbs-bench`
#![deny(missing_docs)]

/// The workspace README's code blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
