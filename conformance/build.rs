//! Compiles `c/shim.c` against the vendor header `infiniband/mlx5dv.h`.
//! Without the header the rest of the crate (the vector readers and replays
//! the `bareverbs` tool uses) still builds: the shim and the header checks
//! are left out (`cfg(bv_no_mlx5dv)`) with a cargo warning, so they are
//! never skipped silently. `MLX5DV_INCLUDE`, which the tool's build reads
//! too, names the one directory to look in; otherwise `MLX5DV_INCLUDE_DIR`,
//! `/usr/include` and `/usr/local/include` are tried in that order.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=c/shim.c");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MLX5DV_INCLUDE");
    println!("cargo:rerun-if-env-changed=MLX5DV_INCLUDE_DIR");
    println!("cargo:rustc-check-cfg=cfg(bv_no_mlx5dv)");

    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(d) = std::env::var("MLX5DV_INCLUDE") {
        dirs.push(PathBuf::from(d));
    } else {
        if let Ok(d) = std::env::var("MLX5DV_INCLUDE_DIR") {
            dirs.push(PathBuf::from(d));
        }
        dirs.push(PathBuf::from("/usr/include"));
        dirs.push(PathBuf::from("/usr/local/include"));
    }
    let found = dirs
        .iter()
        .find(|d| d.join("infiniband/mlx5dv.h").is_file());
    let Some(inc) = found else {
        for d in &dirs {
            println!(
                "cargo:rerun-if-changed={}",
                d.join("infiniband/mlx5dv.h").display()
            );
        }
        println!(
            "cargo:warning=the vendor header <infiniband/mlx5dv.h> was not \
             found (looked in {dirs:?}): building without the vendor-header checks; install \
             Debian's libibverbs-dev (apt-get install libibverbs-dev) or set MLX5DV_INCLUDE"
        );
        println!("cargo:rustc-cfg=bv_no_mlx5dv");
        return;
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
