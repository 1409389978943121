//! With the `c-loop` feature, builds `c/post_loop.c` (the C comparison post
//! loop) against Debian libibverbs-dev's `infiniband/mlx5dv.h`, and fails
//! the build, saying what to install, when the header is missing. Without
//! the feature nothing C is compiled and `perf compare-c` / `perf post
//! --c-loop` refuse at run time, naming the feature.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "c-loop")]
    c_loop::build();
}

/// The C comparison loop: compiled only with the `c-loop` feature.
#[cfg(feature = "c-loop")]
mod c_loop {
    use std::path::Path;

    /// Compiles `c/post_loop.c` into `libbv_post_loop.a`, or exits 1 with
    /// a message when `infiniband/mlx5dv.h` is not under `$MLX5DV_INCLUDE`
    /// (default `/usr/include`).
    pub fn build() {
        println!("cargo:rerun-if-changed=c/post_loop.c");
        println!("cargo:rerun-if-env-changed=MLX5DV_INCLUDE");
        let inc = std::env::var("MLX5DV_INCLUDE").unwrap_or_else(|_| "/usr/include".into());
        let header = Path::new(&inc).join("infiniband/mlx5dv.h");
        println!("cargo:rerun-if-changed={}", header.display());
        if !header.exists() {
            eprintln!(
                "error: {} not found: the c-loop feature (perf compare-c, perf post --c-loop) \
                 compiles c/post_loop.c against it; install libibverbs-dev (Debian: \
                 apt-get install libibverbs-dev) or set MLX5DV_INCLUDE to the directory \
                 holding infiniband/mlx5dv.h, or build without the c-loop feature",
                header.display()
            );
            std::process::exit(1);
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
}
