//! Builds `c/post_loop.c` (the C comparison post loop) against Debian
//! libibverbs-dev's `infiniband/mlx5dv.h`.
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=c/post_loop.c");
    println!("cargo:rerun-if-env-changed=MLX5DV_INCLUDE");
    let inc = std::env::var("MLX5DV_INCLUDE").unwrap_or_else(|_| "/usr/include".into());
    let header = Path::new(&inc).join("infiniband/mlx5dv.h");
    if !header.exists() {
        panic!(
            "\n\nbareverbs-bench: {} not found.\n\
             The C comparison post loop (benches/c/post_loop.c) needs mlx5dv.h from rdma-core:\n\
             install it with `apt-get install libibverbs-dev` (Debian/Ubuntu), or point\n\
             MLX5DV_INCLUDE at a directory containing infiniband/mlx5dv.h.\n",
            header.display()
        );
    }
    cc::Build::new()
        .file("c/post_loop.c")
        .include(&inc)
        .opt_level(2)
        // As the Rust side is built (release, debuginfo on): without frame
        // pointers. cc forces them whenever debug info is on, which costs
        // the C loop a register (more spills) that rustc does not give up.
        .force_frame_pointer(false)
        .warnings(true)
        .compile("bv_post_loop");
}
