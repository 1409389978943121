//! The commands that run the C comparison loop, `perf post --c-loop` and
//! `perf compare-c`, and their gate: the loop (`perf::cpost`) is
//! compiled only with the `c-loop` feature (it needs Debian's
//! libibverbs-dev); a tool built without it refuses these commands with
//! [`NOT_BUILT`].

use super::post::PostArgs;

/// Whether the C comparison loop is built in (the `c-loop` feature).
pub const C_LOOP_BUILT: bool = cfg!(feature = "c-loop");

/// The error of `perf post --c-loop` and `perf compare-c` in a tool built
/// without the `c-loop` feature.
pub const NOT_BUILT: &str =
    "built without the c-loop feature: rebuild with --features c-loop; needs libibverbs-dev";

/// `bareverbs perf post --c-loop`: runs the C loop for `args` and prints
/// its figures (JSON with `json`).
#[cfg(feature = "c-loop")]
pub fn post(args: PostArgs, json: bool) -> anyhow::Result<()> {
    let stats = super::cpost::run_c_loop(args)?;
    if json {
        crate::outln!("{}", crate::envelope::envelope_of("perf post", &stats)?);
    } else {
        crate::outln!(
            "C loop: post Write sge={} batch={} signal_every=16: {:.2} ns/WR over {} WRs",
            args.sge,
            args.batch,
            stats.ns_per_op,
            stats.ops
        );
    }
    Ok(())
}

/// `bareverbs perf post --c-loop` in a tool built without the C loop:
/// fails with [`NOT_BUILT`].
#[cfg(not(feature = "c-loop"))]
pub fn post(_args: PostArgs, _json: bool) -> anyhow::Result<()> {
    anyhow::bail!(NOT_BUILT)
}

/// `bareverbs perf compare-c`: every case of [`super::cpost::CASES`],
/// `rounds` interleaved rounds of `per_round` WRs each, printed as a table
/// (JSON with `json`).
#[cfg(feature = "c-loop")]
pub fn compare_c(rounds: u32, per_round: u64, json: bool) -> anyhow::Result<()> {
    use super::cpost::{compare, Spread, CASES};
    let mut res = Vec::new();
    for c in CASES {
        res.push(compare(c, rounds, per_round)?);
    }
    if json {
        let v = crate::envelope::envelope(
            "perf compare-c",
            serde_json::json!({ "rounds": rounds, "per_round": per_round, "cases": res }),
        );
        crate::outln!("{}", serde_json::to_string(&v)?);
    } else {
        crate::outln!(
            "Rust (bareverbs::sq: a list per post_rdma_raw call, or pushes into a SendBatch) vs C (mlx5dv.h setters), same doorbell sequence into RAM; {rounds} interleaved rounds x {per_round} WRs; median [min-max] over the rounds"
        );
        crate::outln!(
            "{:<26} {:>19} {:>19} {:>19} {:>19} {:>19}",
            "case",
            "list ns/WR",
            "pushed ns/WR",
            "C ns/WR",
            "list/C",
            "pushed/C"
        );
        let f = |s: &Spread| format!("{:.2} [{:.2}-{:.2}]", s.median, s.min, s.max);
        for r in &res {
            crate::outln!(
                "{:<26} {:>19} {:>19} {:>19} {:>19} {:>19}",
                r.case.name,
                f(&r.rust_ns),
                f(&r.pushed_ns),
                f(&r.c_ns),
                f(&r.ratio),
                f(&r.pushed_ratio)
            );
        }
    }
    Ok(())
}

/// `bareverbs perf compare-c` in a tool built without the C loop: fails
/// with [`NOT_BUILT`].
#[cfg(not(feature = "c-loop"))]
pub fn compare_c(_rounds: u32, _per_round: u64, _json: bool) -> anyhow::Result<()> {
    anyhow::bail!(NOT_BUILT)
}
