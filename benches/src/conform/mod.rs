//! `bareverbs conform FILE…`: replays ground-truth vector files through
//! bareverbs and reports one line per case, then `N passed, M failed`.
//!
//! The file kind is detected from its first lines (see [`detect_kind`]);
//! each kind has its own runner. A file that cannot be read, parsed or run
//! counts as one failure (`FAIL <file>: <error>`).

pub mod c_int;
pub mod cqe;
pub mod exec;
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
    match detect_kind(&text) {
        Some(FileKind::Wqe) => wqe::run_wqe_file(p, out, wqe_exec),
        Some(FileKind::Recv) => recv::run_recv_file(p, out, recv_exec),
        Some(FileKind::Cqe) => cqe::run_cqe_file(p, out),
        Some(FileKind::Sizing) => sizing::run_sizing_csv(p, out),
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
        assert!(pass > 6000, "{pass} cases");
    }
}
