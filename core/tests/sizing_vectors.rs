//! Every row of the sizing ground-truth vectors (`shared/mlx5/vectors`,
//! FACTS §3) must be reproduced exactly by `bareverbs::sizing`.
//!
//! The vectors directory is `$CARGO_MANIFEST_DIR/../../shared/mlx5/vectors`
//! unless `BAREVERBS_VECTORS` names another one. Missing files FAIL the test.

use std::path::PathBuf;

use bareverbs::sizing::*;

fn vectors_dir() -> PathBuf {
    match std::env::var_os("BAREVERBS_VECTORS") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/mlx5/vectors"),
    }
}

/// Device limits from the `#` header lines (`key=value` tokens).
fn caps_from_header(lines: &[&str]) -> DeviceCaps {
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

/// Every output column this implementation computes for one row.
fn computed(header: &[&str], row: &[&str], caps: &DeviceCaps) -> Vec<(String, String)> {
    let get = |name: &str| -> &str {
        let i = header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name}"));
        row[i]
    };
    let num = |name: &str| -> u32 {
        get(name)
            .parse()
            .unwrap_or_else(|_| panic!("{name}: {:?}", get(name)))
    };
    let mut out: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: String| out.push((k.to_string(), v));
    match header[0] {
        "qp_type" | "send_ops_flags" => {
            let qpt = QpType::parse(get("qp_type")).expect("qp_type");
            let mut req = QpCaps::new(qpt)
                .send(
                    num("max_send_wr"),
                    num("max_send_sge"),
                    num("max_inline_data"),
                )
                .recv(num("max_recv_wr"), num("max_recv_sge"));
            if header[0] == "send_ops_flags" {
                req = req.ops(SendOps::parse(get("send_ops_flags")).expect("send ops"));
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
                    for k in
                        &header[header.iter().position(|h| *h == "send_wqe_size").unwrap() + 1..]
                    {
                        put(k, String::new());
                    }
                }
            }
        }
        "requested_cqe" => match cq_layout(num("requested_cqe"), num("cqe_size"), caps) {
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
            let (w, s) = (num("req_max_wr"), num("req_max_sge"));
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
        other => panic!("unknown sizing CSV header starting with {other}"),
    }
    out
}

/// Check every row of one file; returns (rows checked, failure messages).
fn check_file(name: &str) -> (usize, Vec<String>) {
    let path = vectors_dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("vector file {} missing or unreadable: {e}", path.display()));
    let comments: Vec<&str> = text.lines().filter(|l| l.starts_with('#')).collect();
    let caps = caps_from_header(&comments);
    let mut header: Option<Vec<&str>> = None;
    let (mut rows, mut fails) = (0, Vec::new());
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        let Some(h) = &header else {
            header = Some(cols);
            continue;
        };
        assert_eq!(cols.len(), h.len(), "{name}:{}: column count", i + 1);
        rows += 1;
        let got_cols = computed(h, &cols, &caps);
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
        for c in h {
            assert!(
                INPUTS.contains(c) || got_cols.iter().any(|(k, _)| k == c),
                "{name}: column {c} is not checked"
            );
        }
        for (k, got) in got_cols {
            if let Some(j) = h.iter().position(|c| *c == k) {
                if cols[j] != got {
                    fails.push(format!(
                        "{name}:{}: {k} expected {:?} got {got:?} ({line})",
                        i + 1,
                        cols[j]
                    ));
                    break;
                }
            }
        }
    }
    (rows, fails)
}

fn run(name: &str, min_rows: usize) {
    let (rows, fails) = check_file(name);
    assert!(rows >= min_rows, "{name}: only {rows} rows");
    for f in fails.iter().take(20) {
        eprintln!("{f}");
    }
    assert!(
        fails.is_empty(),
        "{name}: {} of {rows} rows differ",
        fails.len()
    );
}

#[test]
fn sizing_classic() {
    run("sizing_visible.csv", 3000);
}

#[test]
fn sizing_send_ops() {
    run("sizing_send_ops_visible.csv", 1000);
}

#[test]
fn sizing_sqdesc512() {
    run("sizing_sqdesc512_visible.csv", 600);
}

#[test]
fn cq_sizing() {
    run("cq_visible.csv", 40);
}

#[test]
fn srq_sizing() {
    run("srq_sizing_visible.csv", 70);
}

#[test]
fn header_caps_are_read() {
    let c = caps_from_header(&[
        "# fake device limits: max_sq_desc_sz=512 max_rq_desc_sz=256 max_send_wqebb=1024",
    ]);
    assert_eq!(
        (c.max_sq_desc_sz, c.max_rq_desc_sz, c.max_send_wqebb),
        (512, 256, 1024)
    );
}
