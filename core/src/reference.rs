//! (The text of this module is `core/docs/mlx5-reference.md`.)
#![doc = include_str!("../docs/mlx5-reference.md")]
