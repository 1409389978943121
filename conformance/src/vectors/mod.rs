//! Readers for the ground-truth vector files in `shared/mlx5/vectors/`.
//! Each reader turns one file into typed cases; nothing here knows the
//! expected answers except what the file states.

/// The most filler posts one case's setup may run (send or receive): two
/// wraps of the 16-bit counter (the vendor's counter-wrap case runs 65534).
/// The replay runs each, so a file cannot make it loop longer.
pub const MAX_PREP_POSTS: u64 = 2 << 16;

pub mod cqe;
pub mod recv;
pub mod wqe;

/// Directory of the shared vectors: `$BAREVERBS_VECTORS`, else
/// `<workspace>/../shared/mlx5/vectors`.
pub fn vectors_dir() -> std::path::PathBuf {
    if let Ok(p) = std::env::var("BAREVERBS_VECTORS") {
        return p.into();
    }
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/mlx5/vectors")
}
