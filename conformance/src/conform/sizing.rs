//! conform: sizing files ([ref §3](bareverbs::reference)).
//!
//! Replays the sizing ground-truth CSVs (`sizing_*.csv` QP sizing, classic and
//! with a send-op list; `cq_*.csv`; `srq_sizing_*.csv`) through
//! [`bareverbs::sizing`] and prints one line per case:
//! `PASS <file>:<line> <desc>` or
//! `FAIL <file>:<line> <desc>: <column> expected X got Y` (first difference).
//! Device limits come from the file's `#` header lines.
//!
//! Inputs are read over the C API's domain (see [`super::c_int`]): every
//! value a C `int` or a `uint32_t` filled from one can hold, negative values
//! included, replayed with the provider's own conversions and checks (QP caps
//! as `uint32_t`, `inl_size` narrowed to `int`, receive WQE bytes in a
//! `uint32_t`, `mlx5_create_cq`'s `int cqe` and `int ncqe`).

use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, bail, Context};
use bareverbs::sizing::*;

use super::c_int::{
    cq_ncqe_as_c_int, parse_c_number, recv_wqe_bytes, send_inline_equivalent, to_c_int, to_c_u32,
};

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
                // A log of 32 or more names no u32 count: the line is ignored.
                "log_max_cq_sz" => c.max_cqe = 1u32.checked_shl(v).unwrap_or(c.max_cqe),
                "log_max_srq_sz" => {
                    c.max_srq_recv_wr = 1u32.checked_shl(v).unwrap_or(c.max_srq_recv_wr)
                }
                _ => {}
            }
        }
        if let Some(i) = line.find("entries > 2^") {
            let digits: String = line[i + 12..]
                .chars()
                .take_while(|ch| ch.is_ascii_digit())
                .collect();
            if let Some(m) = digits.parse::<u32>().ok().and_then(|n| 1u32.checked_shl(n)) {
                c.max_cqe = m;
            }
        }
    }
    c
}

fn n(v: impl ToString) -> String {
    v.to_string()
}

/// One sizing CSV row with its header: columns by name. Every numeric input
/// is a C `int` or a `uint32_t` filled from one (see [`c_int`]): [`Self::num`]
/// gives the `uint32_t` the C code stores, [`Self::int`] the `int`.
///
/// [`c_int`]: super::c_int
struct Row<'h, 'a> {
    header: &'h [&'a str],
    row: &'h [&'a str],
}

impl<'a> Row<'_, 'a> {
    fn get(&self, name: &str) -> anyhow::Result<&'a str> {
        let i = self
            .header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| anyhow!("no column {name}"))?;
        self.row
            .get(i)
            .copied()
            .ok_or_else(|| anyhow!("row too short for {name}"))
    }
    fn num(&self, name: &str) -> anyhow::Result<u32> {
        Ok(to_c_u32(parse_c_number(name, self.get(name)?)?))
    }
    fn int(&self, name: &str) -> anyhow::Result<i32> {
        Ok(to_c_int(parse_c_number(name, self.get(name)?)?))
    }
}

/// Output columns: (column name, value as the vectors spell it, `""` for blank).
type Columns = Vec<(String, String)>;

/// Every output column bareverbs computes for one row (column name, value as
/// the vectors spell it, `""` for blank). Errors on malformed input.
fn computed(
    header: &[&str],
    row: &[&str],
    caps: &DeviceCaps,
) -> anyhow::Result<Vec<(String, String)>> {
    let row = Row { header, row };
    let mut out: Columns = Vec::new();
    match header[0] {
        "qp_type" | "send_ops_flags" => qp_columns(&row, caps, &mut out)?,
        "requested_cqe" => cq_columns(&row, caps, &mut out)?,
        "req_max_wr" => srq_columns(&row, caps, &mut out)?,
        other => bail!("unknown sizing CSV header starting with {other}"),
    }
    Ok(out)
}

/// The columns of a QP sizing row (classic or with a send-op list).
fn qp_columns(row: &Row, caps: &DeviceCaps, out: &mut Columns) -> anyhow::Result<()> {
    let mut put = |k: &str, v: String| out.push((k.to_string(), v));
    let qpt = QpType::parse(row.get("qp_type")?)
        .ok_or_else(|| anyhow!("bad qp_type {:?}", row.get("qp_type")))?;
    let mut req = QpCaps::new(qpt);
    if row.header[0] == "send_ops_flags" {
        req = req.ops(
            SendOps::parse(row.get("send_ops_flags")?)
                .map_err(|e| anyhow!("unknown send op {e:?}"))?,
        );
    }
    let (swr, ssge, inl) = (
        row.num("max_send_wr")?,
        row.num("max_send_sge")?,
        row.num("max_inline_data")?,
    );
    let (rwr, rsge) = (row.num("max_recv_wr")?, row.num("max_recv_sge")?);
    let (req, zero_byte_rwqe) = c_qp_request(req, swr, ssge, inl, rwr, rsge, caps);
    let layout = qp_layout(&req, caps).map(|l| {
        if zero_byte_rwqe {
            c_one_byte_rq(l, rwr, caps)
        } else {
            l
        }
    });
    match layout {
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
            for k in &row.header[row
                .header
                .iter()
                .position(|h| *h == "send_wqe_size")
                .map_or(row.header.len(), |i| i + 1)..]
            {
                put(k, String::new());
            }
        }
    }
    Ok(())
}

/// The columns of a CQ sizing row.
fn cq_columns(row: &Row, caps: &DeviceCaps, out: &mut Columns) -> anyhow::Result<()> {
    let mut put = |k: &str, v: String| out.push((k.to_string(), v));
    match c_cq_layout(row.int("requested_cqe")?, row.int("cqe_size")?, caps) {
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
        Err((errno, rejected_by)) => {
            put("status", "error".into());
            put("errno", errno.into());
            put("rejected_by", rejected_by.name().into());
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
    }
    Ok(())
}

/// The columns of an SRQ sizing row.
fn srq_columns(row: &Row, caps: &DeviceCaps, out: &mut Columns) -> anyhow::Result<()> {
    let mut put = |k: &str, v: String| out.push((k.to_string(), v));
    let (w, s) = (row.num("req_max_wr")?, row.num("req_max_sge")?);
    let full = srq_layout(w, s, caps);
    match srq_provider_layout(w, s, caps) {
        Err(e) => {
            put("status", "error".into());
            put("errno", n(e.errno()));
            put("rejected_by", e.rejected_by.name().into());
            for k in row.header.iter().skip(5) {
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
    Ok(())
}

/// The bareverbs request that sizes like the C provider's request with these
/// `struct ibv_qp_cap` fields (already converted to `uint32_t`), and whether
/// the provider's receive WQE came out as 0 bytes (see [`c_one_byte_rq`]).
///
/// * `max_inline_data`: `mlx5_calc_send_wqe` narrows `inl_size` to an `int`
///   ([`send_inline_equivalent`]); only when an SQ is sized.
/// * `max_recv_sge`: `mlx5_calc_rcv_wqe` computes the WQE bytes in a
///   `uint32_t` ([`recv_wqe_bytes`]): bytes within `max_rq_desc_sz` size like
///   `bytes / 16` SGEs; bytes above it are rejected exactly as the unnarrowed
///   request is (EINVAL, stage rq).
/// * everything else goes through unchanged: the provider compares
///   `max_send_wr`, `max_send_sge` and `max_recv_wr` as unsigned, as core does.
fn c_qp_request(
    req: QpCaps,
    swr: u32,
    ssge: u32,
    inl: u32,
    rwr: u32,
    rsge: u32,
    caps: &DeviceCaps,
) -> (QpCaps, bool) {
    let overhead = sq_overhead(req.qp_type, req.effective_ops());
    let inl = if swr != 0 {
        send_inline_equivalent(inl, overhead)
    } else {
        inl
    };
    let bytes = recv_wqe_bytes(rsge);
    let (rsge, zero) = if bytes == 0 {
        (1, true)
    } else if bytes <= caps.max_rq_desc_sz {
        (bytes / 16, false)
    } else {
        (rsge, false)
    };
    (req.send(swr, ssge, inl).recv(rwr, rsge), zero)
}

/// The layout when `mlx5_calc_rcv_wqe`'s `uint32_t size` wrapped to 0
/// (`max_recv_sge` a non-zero multiple of 2^28, e.g. `i32::MIN`).
/// `roundup_pow_of_two(0)` evaluates `1ULL << ilog64(~0ULL)`, a shift by 64,
/// which the vendor's x86-64 `-O2` build executes as a shift by 0: the WQE is
/// 1 byte. `mlx5_calc_rq_size` then makes `wq_size = max(rup2(max_recv_wr) ·
/// 1, 64)`, `wqe_cnt = wq_size`, `wqe_shift = ilog32(0) = 0`, `max_post = 1 <<
/// ilog32(wqe_cnt − 1)`, `max_gs = 1 / 16 = 0`. `l` is core's layout of the
/// same request with a 1-SGE RQ (every check before the WQE size is the same).
fn c_one_byte_rq(mut l: QpLayout, max_recv_wr: u32, caps: &DeviceCaps) -> QpLayout {
    if l.rq.wqe_size == 0 {
        return l; // no RQ (max_recv_wr = 0, SRQ, or XRC)
    }
    let wq = rup2(max_recv_wr as u64).max(64);
    let cnt = wq as u32;
    l.rq = RqLayout {
        wqe_size: 1,
        wqe_shift: 0,
        wqe_cnt: cnt,
        max_post: 1 << ilog32(cnt - 1),
        max_gs: 0,
        buf_bytes: wq,
    };
    let page = caps.page_size as u64;
    l.total_bytes = l.sq.buf_bytes + wq;
    (l.sq_offset, l.alloc_bytes) = match l.qp_type {
        QpType::RawPacket => (0, align_up(wq, page) + align_up(l.sq.buf_bytes, page)),
        _ => (wq, align_up(l.total_bytes, page)),
    };
    l.ret_max_recv_wr = l.rq.max_post;
    l.ret_max_recv_sge = 0;
    l
}

/// CQ sizing over the C domain of `mlx5_create_cq(ctx, int cqe, …)` with an
/// `int` CQE size (`MLX5_CQE_SIZE`, read with `atoi`): the layout, or the
/// errno name and who rejects it. The provider's order (providers/mlx5/verbs.c):
///
/// 1. `mlx5_create_cq`: `cqe <= 0` → EINVAL (provider), before any conversion.
/// 2. `create_cq`: `ncqe` ([`cq_ncqe_as_c_int`]) `> 1 << 24`, or `ncqe <
///    cqe + 1` compared as unsigned → EINVAL (provider).
/// 3. `get_cqe_size`: anything but 64 or 128 → EINVAL (provider).
/// 4. For `2^30 <= cqe <= i32::MAX` step 2 lets the `int` `ncqe = i32::MIN`
///    through (negative, and `0x80000000 < cqe + 1` is false unsigned);
///    `mlx5_alloc_cq_buf`'s `nent * cqe_sz` is then 0 bytes, which
///    `mlx5_alloc_buf` allocates, so the kernel gets `cqe = ncqe − 1 =
///    INT_MAX`, i.e. 2^31 entries, above any device's `max_cqe` → EINVAL
///    (kernel-model).
/// 5. Otherwise [`cq_layout`] (ENOMEM above `INT_MAX` buffer bytes, then the
///    device's `max_cqe`).
fn c_cq_layout(
    cqe: i32,
    cqe_size: i32,
    caps: &DeviceCaps,
) -> Result<CqLayout, (&'static str, RejectedBy)> {
    let provider = Err(("EINVAL", RejectedBy::Provider));
    if cqe <= 0 {
        return provider;
    }
    let ncqe = cq_ncqe_as_c_int(cqe);
    if i64::from(ncqe) > PROVIDER_MAX_NCQE as i64 || (ncqe as u32) < cqe as u32 + 1 {
        return provider;
    }
    if cqe_size != 64 && cqe_size != 128 {
        return provider;
    }
    if ncqe < 0 && (caps.max_cqe as u64) < 1 << 31 {
        // 2^31 entries: above every `max_cqe` a `log_max_cq_sz` can give.
        return Err(("EINVAL", RejectedBy::Kernel));
    }
    cq_layout(cqe as u32, cqe_size as u32, caps).map_err(|e| (e.errno_name(), e.rejected_by))
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
    run_sizing_text(&path.display().to_string(), &text, out)
}

/// [`run_sizing_csv`] on a file's text; `name` labels the report lines.
pub fn run_sizing_text(
    name: &str,
    text: &str,
    out: &mut dyn Write,
) -> anyhow::Result<(usize, usize)> {
    let comments: Vec<&str> = text.lines().filter(|l| l.starts_with('#')).collect();
    let caps = caps_from_header(&comments);
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
        crate::vectors::vectors_dir()
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
        // ref §3.9: RC 1024 × 16 SGEs → overhead 192, 448-byte WQEs; 500 is wrong.
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

/// Replays of synthesized rows over the C `int` / `uint32_t` domain (negative
/// and boundary inputs). Every expected row is derived by hand from the
/// provider's rule, cited per row; none is taken from bareverbs' output.
#[cfg(test)]
mod c_domain_tests {
    use super::*;

    const QP_HEADER: &str = "qp_type,max_send_wr,max_send_sge,max_inline_data,max_recv_wr,max_recv_sge,status,errno,fail_stage,sq_overhead,send_wqe_size,sq_wqe_cnt,sq_wqe_shift,sq_max_post,sq_max_gs,ret_max_inline_data,sq_buf_bytes,rcv_wqe_size,rq_wqe_shift,rq_wqe_cnt,rq_max_post,rq_max_gs,rq_buf_bytes,total_buf_bytes,sq_offset,alloc_bytes,ret_max_send_wr,ret_max_send_sge,ret_max_recv_wr,ret_max_recv_sge";
    const CAPS: &str = "# fake device limits: max_sq_desc_sz=1024 max_rq_desc_sz=512 max_send_wqebb=32768 max_recv_wr=32768 bf_reg_size=512 page_size=4096";
    /// 19 blank result columns after `send_wqe_size` on a QP error row.
    const QP_ERR_TAIL: &str = ",,,,,,,,,,,,,,,,,,,";

    /// Writes `text` to a temporary CSV, replays it, returns the output and
    /// `(passed, failed)`.
    fn replay(tag: &str, text: &str) -> (String, (usize, usize)) {
        let p = std::env::temp_dir().join(format!("bv_cdom_{tag}_{}.csv", std::process::id()));
        std::fs::write(&p, text).unwrap();
        let mut out = Vec::new();
        let r = run_sizing_csv(&p, &mut out).unwrap();
        std::fs::remove_file(&p).ok();
        (String::from_utf8(out).unwrap(), r)
    }

    fn all_pass(tag: &str, header: &str, rows: &[String]) {
        let text = format!("{header}\n{}\n", rows.join("\n"));
        let (out, (pass, fail)) = replay(tag, &text);
        assert_eq!((pass, fail), (rows.len(), 0), "{out}");
    }

    #[test]
    fn qp_classic_negative_and_boundary_inputs() {
        // RC classic: sq_overhead 192 (sq_overhead(), verbs.c). max_gather =
        // (1024 − 192) / 16 = 52. One SGE: 192 + 16 = 208 → align 64 → 256,
        // max_inline_data read back 256 − 192 − 4 = 60 (mlx5_calc_sq_size).
        // `struct ibv_qp_cap` fields are uint32_t: −1 is 4294967295.
        let rows = [
            // mlx5_calc_sq_size: `cap.max_send_wr > 0x7fffffff / max_sq_desc_sz`
            // (unsigned, limit 2097151) after the WQE size (256) is known → EINVAL, sq.
            format!("RC,-1,1,0,0,0,error,EINVAL,sq,192,256{QP_ERR_TAIL}"),
            format!("RC,-2147483648,1,0,0,0,error,EINVAL,sq,192,256{QP_ERR_TAIL}"),
            format!("RC,2147483647,1,0,0,0,error,EINVAL,sq,192,256{QP_ERR_TAIL}"),
            // mlx5_calc_send_wqe: `cap.max_send_sge > max_gather` (unsigned vs
            // int 52) → EINVAL before the WQE size exists (send_wqe_size 0).
            format!("RC,1,-1,0,0,0,error,EINVAL,sq,192,0{QP_ERR_TAIL}"),
            format!("RC,1,-2147483648,0,0,0,error,EINVAL,sq,192,0{QP_ERR_TAIL}"),
            format!("RC,1,2147483647,0,0,0,error,EINVAL,sq,192,0{QP_ERR_TAIL}"),
            // max_send_wr 0: mlx5_calc_sq_size returns 0 at once, so bad SGE and
            // inline requests are never looked at and read back unchanged (as
            // uint32_t); no RQ either (max_recv_wr 0).
            "RC,0,-1,-1,0,0,ok,,,192,0,0,0,0,0,4294967295,0,0,0,0,0,0,0,0,0,0,0,4294967295,0,0"
                .to_string(),
            "RC,0,0,0,0,0,ok,,,192,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0".to_string(),
            // mlx5_calc_send_wqe: inl_size = 192 + align(4 + max_inline_data, 16)
            // in size_t, stored in an int. −1: 2^32 + 16 + 192 → int 208 (= 12
            // inline bytes); i32::MAX and i32::MIN: 0x80000010 + 192 → a negative
            // int. Either way max_int(208, inl_size) = 208 → 256-byte WQE, 4
            // WQEBBs for 1 WR (rup2(1 · 256)), read-back inline 60.
            "RC,1,1,-1,0,0,ok,,,192,256,4,6,1,1,60,256,0,0,0,0,0,0,256,0,4096,1,1,0,0".to_string(),
            "RC,1,1,2147483647,0,0,ok,,,192,256,4,6,1,1,60,256,0,0,0,0,0,0,256,0,4096,1,1,0,0"
                .to_string(),
            "RC,1,1,-2147483648,0,0,ok,,,192,256,4,6,1,1,60,256,0,0,0,0,0,0,256,0,4096,1,1,0,0"
                .to_string(),
            // mlx5_get_max_recv_wr: `cap.max_recv_wr > ctx->max_recv_wr` (unsigned
            // vs int 32768) → EINVAL, rq.
            format!("RC,0,0,0,-1,1,error,EINVAL,rq,192,0{QP_ERR_TAIL}"),
            format!("RC,0,0,0,-2147483648,1,error,EINVAL,rq,192,0{QP_ERR_TAIL}"),
            format!("RC,0,0,0,2147483647,1,error,EINVAL,rq,192,0{QP_ERR_TAIL}"),
            // mlx5_calc_rcv_wqe: uint32_t size = 16 · (int)max(max_recv_sge, 1).
            // −1 and i32::MAX: 0xfffffff0 > 512 → EINVAL, rq.
            format!("RC,0,0,0,1,-1,error,EINVAL,rq,192,0{QP_ERR_TAIL}"),
            format!("RC,0,0,0,1,2147483647,error,EINVAL,rq,192,0{QP_ERR_TAIL}"),
            // −268435455 = 0xf0000001: 16 · it mod 2^32 = 16 → a 16-byte WQE,
            // rup2(16) · 16 = 256 bytes, 16 WQEs, max_gs 16 / 16 = 1.
            "RC,0,0,0,16,-268435455,ok,,,192,0,0,0,0,0,0,0,16,4,16,16,1,256,256,256,4096,0,0,16,1"
                .to_string(),
            // i32::MIN = 0x80000000: size wraps to 0; roundup_pow_of_two(0) runs
            // `1ULL << 64`, a shift by 0 on x86-64 → 1-byte WQE;
            // mlx5_calc_rq_size: wq_size = max(16 · 1, 64) = 64, wqe_cnt 64,
            // wqe_shift ilog32(0) = 0, max_post 1 << ilog32(63) = 64, max_gs 0.
            "RC,0,0,0,16,-2147483648,ok,,,192,0,0,0,0,0,0,0,1,0,64,64,0,64,64,64,4096,0,0,64,0"
                .to_string(),
        ];
        all_pass("qp", &format!("{CAPS}\n{QP_HEADER}"), &rows);
    }

    #[test]
    fn qp_sqdesc512_negative_inline() {
        // max_sq_desc_sz 512: max_send_wr limit 0x7fffffff / 512 = 4194303;
        // −1 inline narrows as above (256-byte WQE); 2 WRs → rup2(512) = 512
        // bytes, 8 WQEBBs, max_post 2.
        let rows = [
            "RC,2,1,-1,0,0,ok,,,192,256,8,6,2,1,60,512,0,0,0,0,0,0,512,0,4096,2,1,0,0".to_string(),
            format!("RC,-1,1,-1,0,0,error,EINVAL,sq,192,256{QP_ERR_TAIL}"),
        ];
        all_pass(
            "qp512",
            &format!("# max_sq_desc_sz=512 max_rq_desc_sz=512\n{QP_HEADER}"),
            &rows,
        );
    }

    #[test]
    fn qp_send_ops_negative_inputs() {
        // SEND-only op set: 16-byte overhead (ref §3.2). −1 inline:
        // inl_size = 16 + 2^32 + 16 → int 32, size = 16 + 16 = 32 → 64-byte
        // WQE, inline read back 64 − 16 − 4 = 44, 1 WQEBB.
        let header = format!("{CAPS}\nsend_ops_flags,{QP_HEADER}");
        let rows = [
            "SEND,RC,1,1,-1,0,0,ok,,,16,64,1,6,1,1,44,64,0,0,0,0,0,0,64,0,4096,1,1,0,0".to_string(),
            format!("SEND,RC,-1,1,0,0,0,error,EINVAL,sq,16,64{QP_ERR_TAIL}"),
            format!("SEND,RC,1,-1,0,0,0,error,EINVAL,sq,16,0{QP_ERR_TAIL}"),
            format!("SEND,RC,0,0,0,1,-1,error,EINVAL,rq,16,0{QP_ERR_TAIL}"),
        ];
        all_pass("ops", &header, &rows);
    }

    #[test]
    fn cq_negative_and_boundary_inputs() {
        let header = "# kernel CREATE_CQ stubbed: reject entries > 2^22\nrequested_cqe,cqe_size,status,errno,rejected_by,ncqe,reported_cqe,buf_bytes,alloc_bytes,first_op_own";
        let rows: Vec<String> = [
            // mlx5_create_cq(ctx, int cqe): `cqe <= 0` → EINVAL before create_cq.
            "-1,64,error,EINVAL,provider,,,,,",
            "-2147483648,64,error,EINVAL,provider,,,,,",
            "0,64,error,EINVAL,provider,,,,,",
            // 4294967295 passed as the int parameter is −1.
            "4294967295,64,error,EINVAL,provider,,,,,",
            // create_cq: ncqe = rup2(2^30 − 1 + 1) = 2^30 > 1 << 24 → EINVAL.
            "1073741823,64,error,EINVAL,provider,,,,,",
            // 2^30 ≤ cqe ≤ i32::MAX: rup2(cqe + 1) = 2^31 is i32::MIN in the int
            // ncqe; neither `ncqe > 1 << 24` nor (unsigned) `ncqe < cqe + 1`
            // holds, nent · cqe_sz wraps to a 0-byte buffer, and the kernel gets
            // cqe = INT_MAX → 2^31 entries > 2^22 → EINVAL from the kernel.
            "2147483647,64,error,EINVAL,kernel-model,,,,,",
            "1073741824,128,error,EINVAL,kernel-model,,,,,",
            // get_cqe_size: only 64 and 128 → -EINVAL (errno EINVAL).
            "1,-1,error,EINVAL,provider,,,,,",
            "1,0,error,EINVAL,provider,,,,,",
            "1,256,error,EINVAL,provider,,,,,",
            "2147483647,-1,error,EINVAL,provider,,,,,",
            // cqe 1: rup2(2) = 2 entries, 128 bytes, one page.
            "1,64,ok,,,2,1,128,4096,0xf0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        all_pass("cq", header, &rows);
    }

    #[test]
    fn srq_negative_and_boundary_inputs() {
        let header = "# fake device: max_rq_desc_sz=512 max_recv_wr=32768 max_srq_recv_wr=32768\nreq_max_wr,req_max_sge,status,errno,rejected_by,wqe_size,wqe_shift,srq_max,max_gs,nwqes,head,tail,waitq_head,waitq_tail,kernel_max_wr,kernel_max_sge,ret_max_wr,ret_max_sge,buf_bytes,alloc_bytes";
        let tail = ",,,,,,,,,,,,,,,";
        // mlx5_create_srq: attr.max_wr (uint32_t) `> ctx->max_srq_recv_wr`
        // (unsigned 32768), then attr.max_sge `> max_rq_desc_sz / 16` (unsigned
        // vs int 32): EINVAL from the provider before any sizing.
        let rows: Vec<String> = [
            "-1,1",
            "-2147483648,0",
            "2147483647,0",
            "1,-1",
            "0,-2147483648",
            "0,2147483647",
        ]
        .iter()
        .map(|r| format!("{r},error,22,provider{tail}"))
        .collect();
        all_pass("srq", header, &rows);
    }

    #[test]
    fn values_outside_int_and_uint32_are_input_errors() {
        let (out, r) = replay(
            "bad",
            &format!("{CAPS}\n{QP_HEADER}\nRC,-2147483649,1,0,0,0,ok\n"),
        );
        assert_eq!(r, (0, 1), "{out}");
        let (out, r) = replay(
            "bad2",
            "requested_cqe,cqe_size,status,errno,rejected_by,ncqe,reported_cqe,buf_bytes,alloc_bytes,first_op_own\n4294967296,64,error,EINVAL,provider,,,,,\n",
        );
        assert_eq!(r, (0, 1), "{out}");
        assert!(out.contains("neither a C int nor a uint32_t"), "{out}");
    }
}
