#![doc = include_str!("../docs/mlx5-reference.md")]
//!
//! ---
//!
//! *Source of this page: `core/docs/mlx5-reference.md` in the repository.*
