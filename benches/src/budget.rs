//! `bareverbs budget`: exact mlx5 memory per QP and per node.
