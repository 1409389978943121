//! Reader for the CQE vector format (`cqe_vectors.txt`,
//! `cqe_random_visible.txt` and hidden files of the same shape).
//!
//! A file is a `#` header describing the fake QP the provider polled
//! against, then cases introduced by `=== CQE VECTOR N: title`. Each case
//! has optional `NOTE:` lines (setup posts), a `CQ:` geometry line, one or
//! more `CQE in ring slot S (B bytes):` blocks of `+OO:` hex lines, a
//! `result:` line, `wc[i]:` blocks of `name value` lines (value or
//! `<not written by provider>`) and an optional `destination buffer after
//! poll` line. Unknown lines are ignored; whitespace is free.
//!
//! Layout: `fake_qp` (the header's fake QP and its `base+step*i` formulas),
//! `model` (the typed case and file, with their bounds), `parse` (the
//! line-by-line reader), `text` (number and `key=value` helpers).

mod fake_qp;
mod model;
mod parse;
mod text;

pub use fake_qp::{FakeQpSpec, IndexFormula};
pub use model::*;
pub use parse::{parse_cqe_file, read_cqe_file};
pub use text::{parse_num, value_after};
