//! Compiles `c/shim.c` against the vendor header `infiniband/mlx5dv.h`.
//! A missing header is a hard error: conformance is never skipped silently.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=c/shim.c");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MLX5DV_INCLUDE_DIR");

    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(d) = std::env::var("MLX5DV_INCLUDE_DIR") {
        dirs.push(PathBuf::from(d));
    }
    dirs.push(PathBuf::from("/usr/include"));
    dirs.push(PathBuf::from("/usr/local/include"));
    let found = dirs
        .iter()
        .find(|d| d.join("infiniband/mlx5dv.h").is_file());
    let Some(inc) = found else {
        panic!(
            "\n\nbareverbs-conformance: the vendor header <infiniband/mlx5dv.h> was not found \
             (looked in {dirs:?}; set MLX5DV_INCLUDE_DIR to override).\n\
             install Debian's libibverbs-dev: apt-get install libibverbs-dev\n\n"
        );
    };
    println!(
        "cargo:rerun-if-changed={}",
        inc.join("infiniband/mlx5dv.h").display()
    );

    let mut b = cc::Build::new();
    b.file(Path::new("c/shim.c"))
        .warnings(true)
        .flag_if_supported("-std=gnu11");
    if inc != Path::new("/usr/include") {
        b.include(inc);
    }
    b.compile("bv_mlx5dv_shim");
}
