//! Readers for the ground-truth vector files in `conformance/vectors/`.
//! Each reader turns one file into typed cases; nothing here knows the
//! expected answers except what the file states.

/// The most filler posts one case's setup may run (send or receive): two
/// wraps of the 16-bit counter (the vendor's counter-wrap case runs 65534).
/// The replay runs each, so a file cannot make it loop longer.
pub const MAX_PREP_POSTS: u64 = 2 << 16;

pub mod cqe;
pub mod recv;
pub mod wqe;

/// Directory of the ground-truth vectors: `$BAREVERBS_VECTORS` when set,
/// else the copy this crate ships ([`BUNDLED_VECTORS`]).
pub fn vectors_dir() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("BAREVERBS_VECTORS") {
        return p.into();
    }
    BUNDLED_VECTORS.into()
}

/// The vector files committed with this crate (`conformance/vectors/`; see
/// its README for how the vendor's provider produced them). Part of the
/// published package, so an installed tool finds them too.
pub const BUNDLED_VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/vectors");
