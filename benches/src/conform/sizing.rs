//! conform: sizing files (FACTS §3).
//!
//! Replays the sizing ground-truth CSVs (`sizing_*.csv` QP sizing, classic and
//! with a send-op list; `cq_*.csv`; `srq_sizing_*.csv`) through
//! [`bareverbs::sizing`] and prints one line per case:
//! `PASS <file>:<line> <desc>` or
//! `FAIL <file>:<line> <desc>: <column> expected X got Y` (first difference).
//! Device limits come from the file's `#` header lines.

use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, bail, Context};
use bareverbs::sizing::*;

/// The four sizing CSV formats, told apart by the first header column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizingCsvKind {
    /// `qp_type,...`: classic QP sizing (default op set per QP type).
    Qp,
    /// `send_ops_flags,...`: QP sizing with an explicit send-op list.
    QpSendOps,
    /// `requested_cqe,...`: CQ sizing.
    Cq,
    /// `req_max_wr,...`: SRQ sizing.
    Srq,
}

impl SizingCsvKind {
    /// The kind for a CSV header line (`None` if not a sizing file).
    pub fn from_header(line: &str) -> Option<Self> {
        match line.split(',').next().map(str::trim) {
            Some("qp_type") => Some(Self::Qp),
            Some("send_ops_flags") => Some(Self::QpSendOps),
            Some("requested_cqe") => Some(Self::Cq),
            Some("req_max_wr") => Some(Self::Srq),
            _ => None,
        }
    }
}

/// The sizing kind of the file at `path`, judged by its first non-`#` line;
/// `None` if it is not a sizing CSV or cannot be read.
pub fn sizing_csv_kind(path: &Path) -> Option<SizingCsvKind> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())?;
    SizingCsvKind::from_header(line)
}

/// Whether `path` is a sizing CSV this module can replay.
pub fn is_sizing_csv(path: &Path) -> bool {
    sizing_csv_kind(path).is_some()
}

/// Device limits from the `#` header lines: `key=value` tokens whose key is a
/// [`DeviceCaps`] field name (`max_sq_desc_sz=512` …) or `log_max_cq_sz` /
/// `log_max_srq_sz`; a `max_cqe` of the form 2^n − 1 (as `ibv_query_device`
/// reports it) and the CQ file's `entries > 2^N` both set `max_cqe = 2^n`.
/// Anything not given keeps [`DeviceCaps::DEFAULT`].
pub fn caps_from_header(lines: &[&str]) -> DeviceCaps {
    let mut c = DeviceCaps::DEFAULT;
    for line in lines {
        for tok in line.split_whitespace() {
            let Some((k, v)) = tok.split_once('=') else {
                continue;
            };
            let k = k.trim_start_matches(|ch: char| !ch.is_ascii_alphanumeric());
            let digits: String = v.chars().take_while(|ch| ch.is_ascii_digit()).collect();
            let Ok(v) = digits.parse::<u32>() else {
                continue;
            };
            match k {
                "max_sq_desc_sz" => c.max_sq_desc_sz = v,
                "max_rq_desc_sz" => c.max_rq_desc_sz = v,
                "max_send_wqebb" => c.max_send_wqebb = v,
                "max_recv_wr" => c.max_recv_wr = v,
                "max_srq_recv_wr" => c.max_srq_recv_wr = v,
                "max_sge" => c.max_sge = v,
                "bf_reg_size" => c.bf_reg_size = v,
                "page_size" => c.page_size = v,
                "cqe_version" => c.cqe_version = v,
                "max_cqe" => c.max_cqe = if v % 2 == 1 { v + 1 } else { v },
                "log_max_cq_sz" => c.max_cqe = 1 << v,
                "log_max_srq_sz" => c.max_srq_recv_wr = 1 << v,
                _ => {}
            }
        }
        if let Some(i) = line.find("entries > 2^") {
            let digits: String = line[i + 12..]
                .chars()
                .take_while(|ch| ch.is_ascii_digit())
                .collect();
            if let Ok(n) = digits.parse::<u32>() {
                c.max_cqe = 1 << n;
            }
        }
    }
    c
}

fn n(v: impl ToString) -> String {
    v.to_string()
}

/// Every output column bareverbs computes for one row (column name, value as
/// the vectors spell it, `""` for blank). Errors on malformed input.
fn computed(
    header: &[&str],
    row: &[&str],
    caps: &DeviceCaps,
) -> anyhow::Result<Vec<(String, String)>> {
    let get = |name: &str| -> anyhow::Result<&str> {
        let i = header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| anyhow!("no column {name}"))?;
        row.get(i)
            .copied()
            .ok_or_else(|| anyhow!("row too short for {name}"))
    };
    let num = |name: &str| -> anyhow::Result<u32> {
        let v = get(name)?;
        v.parse()
            .map_err(|_| anyhow!("column {name}: bad number {v:?}"))
    };
    let mut out: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: String| out.push((k.to_string(), v));
    match header[0] {
        "qp_type" | "send_ops_flags" => {
            let qpt = QpType::parse(get("qp_type")?)
                .ok_or_else(|| anyhow!("bad qp_type {:?}", get("qp_type")))?;
            let mut req = QpCaps::new(qpt)
                .send(
                    num("max_send_wr")?,
                    num("max_send_sge")?,
                    num("max_inline_data")?,
                )
                .recv(num("max_recv_wr")?, num("max_recv_sge")?);
            if header[0] == "send_ops_flags" {
                req = req.ops(
                    SendOps::parse(get("send_ops_flags")?)
                        .map_err(|e| anyhow!("unknown send op {e:?}"))?,
                );
            }
            match qp_layout(&req, caps) {
                Ok(l) => {
                    for (k, v) in [
                        ("status", "ok".to_string()),
                        ("errno", String::new()),
                        ("fail_stage", String::new()),
                        ("sq_overhead", n(l.sq.overhead)),
                        ("send_wqe_size", n(l.sq.wqe_size)),
                        ("sq_wqe_cnt", n(l.sq.wqe_cnt)),
                        ("sq_wqe_shift", n(l.sq.wqe_shift)),
                        ("sq_max_post", n(l.sq.max_post)),
                        ("sq_max_gs", n(l.sq.max_gs)),
                        ("ret_max_inline_data", n(l.ret_max_inline_data)),
                        ("sq_buf_bytes", n(l.sq.buf_bytes)),
                        ("rcv_wqe_size", n(l.rq.wqe_size)),
                        ("rq_wqe_shift", n(l.rq.wqe_shift)),
                        ("rq_wqe_cnt", n(l.rq.wqe_cnt)),
                        ("rq_max_post", n(l.rq.max_post)),
                        ("rq_max_gs", n(l.rq.max_gs)),
                        ("rq_buf_bytes", n(l.rq.buf_bytes)),
                        ("total_buf_bytes", n(l.total_bytes)),
                        ("sq_offset", n(l.sq_offset)),
                        ("alloc_bytes", n(l.alloc_bytes)),
                        ("ret_max_send_wr", n(l.ret_max_send_wr)),
                        ("ret_max_send_sge", n(l.ret_max_send_sge)),
                        ("ret_max_recv_wr", n(l.ret_max_recv_wr)),
                        ("ret_max_recv_sge", n(l.ret_max_recv_sge)),
                    ] {
                        put(k, v);
                    }
                }
                Err(e) => {
                    put("status", "error".into());
                    put("errno", e.errno_name().into());
                    put("fail_stage", e.stage.name().into());
                    put("sq_overhead", n(e.sq_overhead()));
                    put("send_wqe_size", n(e.send_wqe_size()));
                    for k in &header[header
                        .iter()
                        .position(|h| *h == "send_wqe_size")
                        .map_or(header.len(), |i| i + 1)..]
                    {
                        put(k, String::new());
                    }
                }
            }
        }
        "requested_cqe" => match cq_layout(num("requested_cqe")?, num("cqe_size")?, caps) {
            Ok(l) => {
                put("status", "ok".into());
                put("errno", String::new());
                put("rejected_by", String::new());
                put("ncqe", n(l.ncqe));
                put("reported_cqe", n(l.reported_cqe));
                put("buf_bytes", n(l.buf_bytes));
                put("alloc_bytes", n(l.alloc_bytes));
                put("first_op_own", format!("{:#04x}", l.init_op_own));
            }
            Err(e) => {
                put("status", "error".into());
                put("errno", e.errno_name().into());
                put("rejected_by", e.rejected_by.name().into());
                for k in [
                    "ncqe",
                    "reported_cqe",
                    "buf_bytes",
                    "alloc_bytes",
                    "first_op_own",
                ] {
                    put(k, String::new());
                }
            }
        },
        "req_max_wr" => {
            let (w, s) = (num("req_max_wr")?, num("req_max_sge")?);
            let full = srq_layout(w, s, caps);
            match srq_provider_layout(w, s, caps) {
                Err(e) => {
                    put("status", "error".into());
                    put("errno", n(e.errno()));
                    put("rejected_by", e.rejected_by.name().into());
                    for k in &header[5..] {
                        put(k, String::new());
                    }
                }
                Ok(l) => {
                    match full {
                        Ok(_) => {
                            put("status", "ok".into());
                            put("errno", "0".into());
                            put("rejected_by", String::new());
                        }
                        Err(e) => {
                            put("status", "error".into());
                            put("errno", n(e.errno()));
                            put("rejected_by", e.rejected_by.name().into());
                        }
                    }
                    let (wh, wt) = match l.waitq {
                        Some((h, t)) => (n(h), n(t)),
                        None => ("-1".into(), "-1".into()),
                    };
                    for (k, v) in [
                        ("wqe_size", n(l.wqe_size)),
                        ("wqe_shift", n(l.wqe_shift)),
                        ("srq_max", n(l.srq_max)),
                        ("max_gs", n(l.max_gs)),
                        ("nwqes", n(l.nwqes)),
                        ("head", n(l.head)),
                        ("tail", n(l.tail)),
                        ("waitq_head", wh),
                        ("waitq_tail", wt),
                        ("kernel_max_wr", n(l.kernel_max_wr)),
                        ("kernel_max_sge", n(l.kernel_max_sge)),
                        ("buf_bytes", n(l.buf_bytes)),
                        ("alloc_bytes", n(l.alloc_bytes)),
                    ] {
                        put(k, v);
                    }
                    let ok = full.is_ok();
                    put(
                        "ret_max_wr",
                        if ok { n(l.ret_max_wr) } else { String::new() },
                    );
                    put(
                        "ret_max_sge",
                        if ok { n(l.ret_max_sge) } else { String::new() },
                    );
                }
            }
        }
        other => bail!("unknown sizing CSV header starting with {other}"),
    }
    Ok(out)
}

/// Columns that are inputs, not results.
const INPUTS: &[&str] = &[
    "qp_type",
    "send_ops_flags",
    "max_send_wr",
    "max_send_sge",
    "max_inline_data",
    "max_recv_wr",
    "max_recv_sge",
    "requested_cqe",
    "cqe_size",
    "req_max_wr",
    "req_max_sge",
];

fn describe(header: &[&str], row: &[&str]) -> String {
    let mut d = String::new();
    for (h, v) in header.iter().zip(row) {
        if INPUTS.contains(h) {
            if !d.is_empty() {
                d.push(' ');
            }
            let short = match *h {
                "qp_type" | "send_ops_flags" => {
                    d.push_str(v);
                    continue;
                }
                "max_send_wr" => "swr",
                "max_send_sge" => "ssge",
                "max_inline_data" => "inl",
                "max_recv_wr" => "rwr",
                "max_recv_sge" => "rsge",
                "requested_cqe" => "cqe",
                "cqe_size" => "cqe_size",
                "req_max_wr" => "max_wr",
                "req_max_sge" => "max_sge",
                other => other,
            };
            d.push_str(&format!("{short}={v}"));
        }
    }
    d
}

/// Replay one sizing CSV: one `PASS`/`FAIL` line per case into `out`;
/// returns `(passed, failed)`. Fails (Err) if the file cannot be read or is
/// not a sizing CSV.
pub fn run_sizing_csv(path: &Path, out: &mut dyn Write) -> anyhow::Result<(usize, usize)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let comments: Vec<&str> = text.lines().filter(|l| l.starts_with('#')).collect();
    let caps = caps_from_header(&comments);
    let name = path.display();
    let mut header: Option<Vec<&str>> = None;
    let (mut pass, mut fail) = (0, 0);
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        let Some(h) = &header else {
            if SizingCsvKind::from_header(line).is_none() {
                bail!("{name}: not a sizing CSV (header {line:?})");
            }
            header = Some(cols);
            continue;
        };
        let desc = describe(h, &cols);
        let diff = if cols.len() != h.len() {
            Some(format!("columns expected {} got {}", h.len(), cols.len()))
        } else {
            match computed(h, &cols, &caps) {
                Err(e) => Some(format!("input error: {e}")),
                Ok(got) => {
                    let mut first = None;
                    for c in h.iter().filter(|c| !INPUTS.contains(c)) {
                        if !got.iter().any(|(k, _)| k == c) {
                            first = Some(format!("{c} is not computed by bareverbs"));
                            break;
                        }
                    }
                    if first.is_none() {
                        for (k, v) in &got {
                            if let Some(j) = h.iter().position(|c| c == k) {
                                if cols[j] != v {
                                    let show = |s: &str| {
                                        if s.is_empty() {
                                            "(blank)".to_string()
                                        } else {
                                            s.to_string()
                                        }
                                    };
                                    first = Some(format!(
                                        "{k} expected {} got {}",
                                        show(cols[j]),
                                        show(v)
                                    ));
                                    break;
                                }
                            }
                        }
                    }
                    first
                }
            }
        };
        match diff {
            None => {
                pass += 1;
                writeln!(out, "PASS {name}:{lineno} {desc}")?;
            }
            Some(d) => {
                fail += 1;
                writeln!(out, "FAIL {name}:{lineno} {desc}: {d}")?;
            }
        }
    }
    if header.is_none() {
        bail!("{name}: no header line");
    }
    Ok((pass, fail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn dir() -> PathBuf {
        match std::env::var_os("BAREVERBS_VECTORS") {
            Some(d) => PathBuf::from(d),
            None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/mlx5/vectors"),
        }
    }

    #[test]
    fn every_visible_sizing_csv_passes() {
        for f in [
            "sizing_visible.csv",
            "sizing_send_ops_visible.csv",
            "sizing_sqdesc512_visible.csv",
            "cq_visible.csv",
            "srq_sizing_visible.csv",
        ] {
            let p = dir().join(f);
            assert!(is_sizing_csv(&p), "{f} missing or not detected");
            let mut out = Vec::new();
            let (pass, fail) = run_sizing_csv(&p, &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert_eq!(
                fail,
                0,
                "{f}:\n{}",
                text.lines()
                    .filter(|l| l.starts_with("FAIL"))
                    .take(5)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            assert!(pass > 40, "{f}: {pass}");
            assert_eq!(text.lines().count(), pass);
            assert!(text.lines().all(|l| l.starts_with("PASS ")));
        }
    }

    #[test]
    fn a_wrong_row_reports_the_first_differing_column() {
        let p = std::env::temp_dir().join(format!("bv_sizing_{}.csv", std::process::id()));
        // FACTS §3.9: RC 1024 × 16 SGEs → overhead 192, 448-byte WQEs; 500 is wrong.
        std::fs::write(
            &p,
            "# max_sq_desc_sz=512\nqp_type,max_send_wr,max_send_sge,max_inline_data,max_recv_wr,max_recv_sge,status,errno,fail_stage,sq_overhead,send_wqe_size\nRC,1024,16,0,0,1,ok,,,192,500\n",
        )
        .unwrap();
        let mut out = Vec::new();
        let r = run_sizing_csv(&p, &mut out).unwrap();
        std::fs::remove_file(&p).ok();
        assert_eq!(r, (0, 1));
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(":3 RC swr=1024"), "{text}");
        assert!(
            text.trim_end()
                .ends_with("send_wqe_size expected 500 got 448"),
            "{text}"
        );
    }
}
