//! Reader for the recv vector format (`recv_vectors.txt`,
//! `recv_random_visible.txt`): RQ cases (`=== VECTOR N:`) and SRQ cases
//! (`=== SRQ VECTOR N:`), one [`RecvCase`] each.
//!
//! Like the wqe reader it follows the format rules (any number of WRs,
//! SGEs, WQE slots and hex lines; hex of any length; blank lines anywhere)
//! and keeps unrecognised lines in [`RecvCase::unknown_lines`].
//!
//! Layout: `model` (the typed file and case and their bounds), `parse`
//! (the file and case reader), `lines` (the QP/SRQ geometry, WR and setup
//! `NOTE:` line parsers).

mod lines;
mod model;
mod parse;

pub use model::*;
pub use parse::read_recv_file;
