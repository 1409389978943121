//! Builds `c/post_loop.c` (the C comparison post loop) against Debian
//! libibverbs-dev's `infiniband/mlx5dv.h`. Without the header the rest of
//! the tool still builds: the C loop is left out (`cfg(bv_no_c_loop)`) and
//! the commands that need it say how to get it.
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=c/post_loop.c");
    println!("cargo:rerun-if-env-changed=MLX5DV_INCLUDE");
    println!("cargo:rustc-check-cfg=cfg(bv_no_c_loop)");
    let inc = std::env::var("MLX5DV_INCLUDE").unwrap_or_else(|_| "/usr/include".into());
    let header = Path::new(&inc).join("infiniband/mlx5dv.h");
    println!("cargo:rerun-if-changed={}", header.display());
    if !header.exists() {
        println!(
            "cargo:warning={} not found: building without the C comparison loop \
             (perf compare-c, perf post --c-loop); install libibverbs-dev or set MLX5DV_INCLUDE",
            header.display()
        );
        println!("cargo:rustc-cfg=bv_no_c_loop");
        return;
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
