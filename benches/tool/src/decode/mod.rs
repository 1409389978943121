//! `bareverbs decode wqe|cqe HEX`: human and JSON views of WQEs and CQEs.
//! Hex is accepted as printed in the vector files (whitespace allowed): the
//! reader, [`parse_hex`], is the conformance crate's (`bareverbs_conformance::hex`).

pub mod cqe;
pub mod wqe;

pub use bareverbs_conformance::hex::{parse_hex, HexError};
