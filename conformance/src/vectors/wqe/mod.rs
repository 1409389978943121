//! Reader for the wqe vector format (`wqe_vectors.txt`,
//! `wqe_random_visible.txt`): one [`WqeCase`] per `=== VECTOR N:` block.
//!
//! The reader follows the format rules rather than the rows: any number of
//! WRs, SGEs, WQE blocks and hex lines; hex groups of any length; blank lines
//! anywhere. Lines it does not recognise inside a case are kept in
//! [`WqeCase::unknown_lines`] (never silently dropped) so callers and tests
//! can see them. The low-level helpers in `text` are shared with the recv
//! and cqe readers.
//!
//! Layout: `model` (the typed file and case), `parse` (the file and case
//! reader), `lines` (one parser per kind of line), `ah` (UD address-handle
//! resolution), `text` (shared low-level text helpers).

mod ah;
mod lines;
mod model;
mod parse;
mod text;

pub use lines::parse_qp_type;
pub use model::*;
pub use parse::read_wqe_file;

pub(crate) use lines::{before_after, parse_raw_bytes, parse_result, parse_sge};
pub(crate) use text::{
    after_word_num, bracket_kv, bracket_num, c_int_field, is_hex_line, kv, kv_num, kv_req,
    parse_case_header, parse_hex_line, parse_num_prefix, split_cases,
};
