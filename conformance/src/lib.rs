//! Conformance harness: compiles a C shim against the vendor's
//! `infiniband/mlx5dv.h` (Debian `libibverbs-dev`) and compares its bytes
//! with bareverbs' codec. (Filled by the foundation issue.)
#![deny(missing_docs)]
