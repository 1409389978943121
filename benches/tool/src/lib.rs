//! # bareverbs-tool — the `bareverbs` command-line tool
//!
//! Library half of the `bareverbs` command-line tool. The binary in
//! `src/main.rs` is the clap front end: it parses the command line and calls
//! into these modules, which do the work.
//!
//! | module | subcommand / role |
//! | --- | --- |
//! | [`conform`] | `conform FILE…`: replays ground-truth vector files, one line per case |
//! | [`vectors`] | readers for those vector files (WQE, receive, CQE, sizing) |
//! | [`decode`] | `decode wqe\|cqe HEX`: human and JSON views of WQEs and CQEs |
//! | [`budget`] | `budget`: exact queue memory per QP and per node |
//! | [`devinfo`] | `devinfo`: `ibv_devinfo`-style attributes through the command interface |
//! | [`selftest`] | `selftest` and `devinfo --selftest`: the core's loopback self-test |
//! | [`perf`] | `perf`: CPU cost of post/poll on memory-backed queues, and the perftest-style tests (`write-lat` … `atomic-lat`) over the `sim`, `fw-sim`, `model` and `vfio:BDF` backends |
//! | [`perftest`] | perftest's statistics and text layout, so results line up with real perftest runs |
//! | [`pingpong`] | `pingpong`: `ibv_rc_pingpong` between two hosts (its flags, address exchange and report) |
//! | [`sweep`] | `sweep`: the `max_send_wr` × `max_send_sge` design space |
//! | [`model`] | the closed-form NIC/PCIe cost model behind `sweep` and the `model` backend |
//! | [`args`], [`device_arg`] | shared argument parsing: sizes, counts, paths, `--device` names |
//! | [`envelope`] | the JSON envelope every `--json` output carries |
//! | [`output`] | stdout and stderr: `out!`/`outln!`, a closed pipe exits 0 |
//!
//! The C comparison loop used by `perf compare-c` is `c/post_loop.c`, built
//! with the `c-loop` feature (it needs Debian's libibverbs-dev). The
//! criterion benchmarks (`post`, `poll`, `recv`) are the `bareverbs-bench`
//! package (`benches/`), which drives the engines of [`perf`].
//!
//! Citations of the form `perf ref §N` (for example `perf ref §2.3`, `perf ref
//! §4`) name a section of `docs/performance-reference.md` in the repository:
//! the performance anchors and cost-model parameters, and perftest's options
//! and exact output formats, each with its public source. `ref §N` citations
//! point to the hardware reference, [`bareverbs::reference`].
#![deny(missing_docs, missing_debug_implementations)]
// Output goes through [`output`] (a closed stdout exits 0, quietly).
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod args;
pub mod budget;
pub mod decode;
pub mod device_arg;
pub mod devinfo;
pub mod envelope;
pub mod model;
pub mod output;
pub mod perf;
pub mod perftest;
pub mod pingpong;
pub mod selftest;
pub mod sweep;

/// The vector-file readers and replays live in the conformance crate (one
/// concern: does bareverbs match the vendor); re-exported here for the tool.
pub use bareverbs_conformance::{conform, vectors};
