//! `bareverbs conform FILE…`: replays ground-truth vector files through
//! bareverbs and reports one line per case, then `N passed, M failed`.
//!
//! The file kind is detected from its first lines (see [`detect_kind`]);
//! each kind has its own runner. A file that cannot be read, parsed or run
//! counts as one failure (`FAIL <file>: <error>`).

pub mod c_int;
pub mod cqe;
pub mod exec;
pub mod fuzz;
pub mod recv;
pub mod sizing;
pub mod wqe;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use recv::RecvExecutor;
use wqe::WqeExecutor;

/// Kind of a vector file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// Send WQE vectors (`# mlx5 WQE ground-truth`).
    Wqe,
    /// Receive-side vectors (`# mlx5 receive-side`).
    Recv,
    /// CQE vectors (`# mlx5 CQE`).
    Cqe,
    /// Sizing CSVs (QP, CQ or SRQ).
    Sizing,
}

/// Detects a file's kind from its first lines.
pub fn detect_kind(text: &str) -> Option<FileKind> {
    let mut comments = Vec::new();
    let mut first_data = None;
    for l in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(64)
    {
        if l.starts_with('#') {
            comments.push(l);
        } else {
            first_data = Some(l);
            break;
        }
    }
    if let Some(first) = comments.first() {
        let body = first.trim_start_matches('#').trim_start();
        if body.starts_with("mlx5 WQE ground-truth") {
            return Some(FileKind::Wqe);
        }
        if body.starts_with("mlx5 receive-side") {
            return Some(FileKind::Recv);
        }
        if body.starts_with("mlx5 CQE") {
            return Some(FileKind::Cqe);
        }
        if body.starts_with("mlx5 provider QP sizing")
            || body.starts_with("mlx5 provider CQ sizing")
        {
            return Some(FileKind::Sizing);
        }
    }
    let sizing_comment = comments.iter().any(|c| {
        let c = c.to_ascii_lowercase();
        c.contains("sizing") || c.contains("max_srq_recv_wr")
    });
    let csv_header = first_data.is_some_and(|d| d.contains(',') && !d.starts_with("==="));
    if csv_header && (sizing_comment || first_data.is_some_and(|d| d.contains("max_"))) {
        return Some(FileKind::Sizing);
    }
    None
}

/// Runs the files through bareverbs' real post paths.
pub fn run(paths: &[PathBuf], out: &mut dyn Write) -> Result<(usize, usize)> {
    run_with(
        paths,
        out,
        &mut exec::SqExecutor,
        &mut exec::RecvQueueExecutor,
    )
}

/// Runs the files with the given executors; prints per-case lines and the
/// final `N passed, M failed` line. Returns `(passed, failed)`.
pub fn run_with(
    paths: &[PathBuf],
    out: &mut dyn Write,
    wqe_exec: &mut dyn WqeExecutor,
    recv_exec: &mut dyn RecvExecutor,
) -> Result<(usize, usize)> {
    let (mut passed, mut failed) = (0, 0);
    for p in paths {
        match run_file(p, out, wqe_exec, recv_exec) {
            Ok((a, b)) => {
                passed += a;
                failed += b;
            }
            Err(e) => {
                failed += 1;
                writeln!(out, "FAIL {}: {:#}", p.display(), e)?;
            }
        }
    }
    writeln!(out, "{passed} passed, {failed} failed")?;
    Ok((passed, failed))
}

fn run_file(
    p: &Path,
    out: &mut dyn Write,
    wqe_exec: &mut dyn WqeExecutor,
    recv_exec: &mut dyn RecvExecutor,
) -> Result<(usize, usize)> {
    let text = std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("cannot read: {e}"))?;
    run_text(&p.display().to_string(), &text, out, wqe_exec, recv_exec)
}

/// Runs one vector file's text (a user's file is input too: any text gives
/// a report or an error, never a panic). `name` labels the report lines.
pub fn run_text(
    name: &str,
    text: &str,
    out: &mut dyn Write,
    wqe_exec: &mut dyn WqeExecutor,
    recv_exec: &mut dyn RecvExecutor,
) -> Result<(usize, usize)> {
    match detect_kind(text) {
        Some(FileKind::Wqe) => wqe::run_wqe_text(name, text, out, wqe_exec),
        Some(FileKind::Recv) => recv::run_recv_text(name, text, out, recv_exec),
        Some(FileKind::Cqe) => cqe::run_cqe_text(name, text, out),
        Some(FileKind::Sizing) => sizing::run_sizing_text(name, text, out),
        None => anyhow::bail!(
            "unknown vector file kind (first line {:?})",
            text.lines().next().unwrap_or("")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_every_visible_file() {
        let dir = crate::vectors::vectors_dir();
        let expect = [
            ("wqe_vectors.txt", FileKind::Wqe),
            ("wqe_random_visible.txt", FileKind::Wqe),
            ("recv_vectors.txt", FileKind::Recv),
            ("recv_random_visible.txt", FileKind::Recv),
            ("cqe_vectors.txt", FileKind::Cqe),
            ("cqe_random_visible.txt", FileKind::Cqe),
            ("sizing_visible.csv", FileKind::Sizing),
            ("sizing_send_ops_visible.csv", FileKind::Sizing),
            ("sizing_sqdesc512_visible.csv", FileKind::Sizing),
            ("cq_visible.csv", FileKind::Sizing),
            ("srq_sizing_visible.csv", FileKind::Sizing),
        ];
        for (name, kind) in expect {
            let p = dir.join(name);
            let t = std::fs::read_to_string(&p)
                .unwrap_or_else(|e| panic!("{} missing ({e}); set BAREVERBS_VECTORS", p.display()));
            assert_eq!(detect_kind(&t), Some(kind), "{name}");
        }
        assert_eq!(detect_kind("hello\n"), None);
    }

    #[test]
    fn dispatcher_totals_and_summary() {
        let dir = crate::vectors::vectors_dir();
        let files: Vec<PathBuf> = ["wqe_vectors.txt", "recv_vectors.txt", "cqe_vectors.txt"]
            .iter()
            .map(|n| dir.join(n))
            .collect();
        let cases: usize = files
            .iter()
            .map(|f| {
                let t = std::fs::read_to_string(f)
                    .unwrap_or_else(|e| panic!("{} missing ({e})", f.display()));
                t.lines().filter(|l| l.starts_with("=== ")).count()
            })
            .sum();
        let mut out = Vec::new();
        let mut w = wqe::tests::ReplayWqe::default();
        let mut r = recv::tests::ReplayRecv::default();
        let (pass, fail) = run_with(&files, &mut out, &mut w, &mut r).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert_eq!((pass, fail), (cases, 0), "{s}");
        assert_eq!(
            s.lines().last().unwrap(),
            format!("{pass} passed, {fail} failed")
        );
    }

    /// The project's own replay of every visible vector file through the
    /// real bareverbs code paths: every case must pass.
    #[test]
    fn every_visible_vector_file_passes() {
        let dir = crate::vectors::vectors_dir();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{} missing ({e}); set BAREVERBS_VECTORS", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "txt" || x == "csv"))
            .collect();
        files.sort();
        assert!(
            files.len() >= 11,
            "expected the 11 visible vector files in {}",
            dir.display()
        );
        let mut out = Vec::new();
        let (pass, fail) = run(&files, &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        let failures: Vec<&str> = s
            .lines()
            .filter(|l| l.starts_with("FAIL"))
            .take(10)
            .collect();
        assert_eq!(fail, 0, "{}", failures.join("\n"));
        let declared: usize = files.iter().map(|f| declared_cases(f)).sum();
        assert_eq!(pass, declared, "every case the files hold ran");
    }

    /// The number of cases a vector file holds, counted from its text
    /// alone (not by the parsers under test): a `.txt` file's `=== ` title
    /// lines, a `.csv` file's rows after its column header (comment lines
    /// start with `#`).
    fn declared_cases(path: &std::path::Path) -> usize {
        let text = std::fs::read_to_string(path).unwrap();
        if path.extension().is_some_and(|x| x == "txt") {
            text.lines().filter(|l| l.starts_with("=== ")).count()
        } else {
            let rows = text
                .lines()
                .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
                .count();
            rows.saturating_sub(1)
        }
    }

    /// The vector file's header comments plus the cases whose `=== ` title
    /// satisfies `pick`, with `num_sge=0` in their WR lines replaced by
    /// `num_sge=<n>`.
    fn with_num_sge(file: &str, pick: impl Fn(&str) -> bool, n: i64) -> (String, usize) {
        let text = std::fs::read_to_string(crate::vectors::vectors_dir().join(file)).unwrap();
        let first = text.find("\n=== ").unwrap() + 1;
        let mut out = text[..first].to_string();
        let mut cases = 0;
        for block in text[first..]
            .split_inclusive("\n")
            .fold(Vec::<String>::new(), |mut v, l| {
                if l.starts_with("=== ") || v.is_empty() {
                    v.push(String::new());
                }
                v.last_mut().unwrap().push_str(l);
                v
            })
        {
            if pick(block.lines().next().unwrap()) {
                cases += 1;
                out.push_str(&block.replace(" num_sge=0", &format!(" num_sge={n}")));
            }
        }
        (out, cases)
    }

    /// `ibv_send_wr.num_sge` / `ibv_recv_wr.num_sge` are C `int`s. The
    /// provider's checks `wr->num_sge > qp->sq.qp_state_max_gs` /
    /// `> qp->rq.qp_state_max_gs` / `> srq->max_gs` (providers/mlx5/qp.c
    /// mlx5_post_send, mlx5_post_recv; srq.c mlx5_post_srq_recv) compare
    /// signed ints, so a negative count passes, and every SGE loop `for (i =
    /// 0; i < wr->num_sge; ++i)` runs zero times: without IBV_SEND_INLINE a
    /// negative `num_sge` writes exactly what `num_sge = 0` writes (the
    /// provider's own bytes for 0 are the expectation). Before, `-1` was read
    /// as 4294967295 and the replay tried to build that many SGEs.
    #[test]
    fn negative_num_sge_replays_like_zero() {
        for n in [-1, i32::MIN as i64] {
            let dir = std::env::temp_dir();
            let mut files = Vec::new();
            let mut cases = 0;
            for (file, pick) in [
                (
                    "recv_vectors.txt",
                    (|t: &str| t.contains("num_sge=0 (terminator only)")) as fn(&str) -> bool,
                ),
                ("wqe_vectors.txt", |t: &str| {
                    t.ends_with("RC SEND num_sge=0")
                        || t.ends_with("RC RDMA_WRITE num_sge=0 (zero-length write)")
                }),
            ] {
                let (text, c) = with_num_sge(file, pick, n);
                assert!(c >= 2, "{file}: {c} cases picked");
                assert!(text.contains(&format!("num_sge={n}")));
                cases += c;
                let p = dir.join(format!("bv_numsge_{}_{}_{file}", std::process::id(), -n));
                std::fs::write(&p, text).unwrap();
                files.push(p);
            }
            let mut out = Vec::new();
            let r = run(&files, &mut out).unwrap();
            for f in &files {
                std::fs::remove_file(f).ok();
            }
            let s = String::from_utf8(out).unwrap();
            assert_eq!(r, (cases, 0), "{s}");
        }
    }

    /// A negative `num_sge` with IBV_SEND_INLINE takes the provider's inline
    /// branch (`send_flags & IBV_SEND_INLINE && wr->num_sge`, mlx5_post_send)
    /// whose SGE loop runs zero times: `set_data_inl_seg` writes nothing for
    /// 0 inline bytes (`*sz = 0`), and the only other effect, `inl = 1`, feeds
    /// the BlueFlame choice, which also needs `size > 1` DS: a SEND of just
    /// its control segment (ds 1) rings the same 8-byte doorbell either way.
    /// So VECTOR 38 (INLINE with num_sge = 0, the non-inline branch) is also
    /// the provider's answer for num_sge = −1 and i32::MIN.
    #[test]
    fn negative_num_sge_with_inline_send_replays() {
        for n in [-1, i32::MIN as i64] {
            let (text, c) = with_num_sge(
                "wqe_vectors.txt",
                |t: &str| t.contains("inline flag with num_sge=0"),
                n,
            );
            assert_eq!(c, 1);
            let p = std::env::temp_dir().join(format!(
                "bv_numsge_inl_{}_{}.txt",
                std::process::id(),
                -n
            ));
            std::fs::write(&p, text).unwrap();
            let mut out = Vec::new();
            let r = run(std::slice::from_ref(&p), &mut out).unwrap();
            std::fs::remove_file(&p).ok();
            let s = String::from_utf8(out).unwrap();
            assert_eq!(r, (1, 0), "{s}");
        }
    }
}
