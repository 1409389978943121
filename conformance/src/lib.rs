//! # bareverbs-conformance — does bareverbs match the vendor
//!
//! One concern: bareverbs' bytes against the vendor's. Two sources of truth:
//!
//! | module | compares bareverbs with |
//! | --- | --- |
//! | [`vectors`] | readers for the ground-truth vector files (output of the vendor's C provider, `conformance/vectors/`) |
//! | [`conform`] | replay of those files through bareverbs' real post, poll and sizing paths, one line per case (`bareverbs conform FILE…`) |
//! | [`hex`] | hex text as the vector files print it |
//! | `mlx5dv` | the vendor header `infiniband/mlx5dv.h` itself: a C shim (`c/shim.c`) exposes the header's segment setters, CQE getters and `sizeof`/`offsetof` values as safe functions (`c_ctrl_seg` …), which `tests/` compare byte for byte with the codec |
//!
//! The C shim needs Debian's `libibverbs-dev`. Without the header the rest
//! of the crate still builds (the `bareverbs` tool depends on it): `build.rs`
//! prints a cargo warning and sets `cfg(bv_no_mlx5dv)`, which leaves out the
//! shim's functions and the header tests.
#![deny(missing_docs, missing_debug_implementations)]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod conform;
pub mod hex;
#[cfg(not(bv_no_mlx5dv))]
mod mlx5dv;
pub mod vectors;

#[cfg(not(bv_no_mlx5dv))]
pub use mlx5dv::{
    c_const, c_cqe_getters, c_ctrl_seg, c_data_seg, c_dgram_seg, c_eth_seg, c_layouts,
};
