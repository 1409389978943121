//! Tests of `bareverbs budget`: TOML caps, computed outcomes and the table.

use super::*;
use clap::Parser;

#[derive(Parser)]
struct T {
    #[command(flatten)]
    b: BudgetArgs,
}

fn args(cmd: &str) -> BudgetArgs {
    T::parse_from(std::iter::once("budget").chain(cmd.split_whitespace())).b
}

/// [ref §3.9](bareverbs::reference) assumes 512-byte send descriptors.
fn f39() -> DeviceCaps {
    caps_from_toml("max_sq_desc_sz = 512\nmax_rq_desc_sz = 512").unwrap()
}

#[test]
fn caps_toml_defaults_and_unknown_keys() {
    let c = caps_from_toml("max_sq_desc_sz = 512\nmax_send_wqebb = 1024").unwrap();
    assert_eq!(c.max_sq_desc_sz, 512);
    assert_eq!(c.max_send_wqebb, 1024);
    assert_eq!(c.max_rq_desc_sz, DeviceCaps::DEFAULT.max_rq_desc_sz);
    assert_eq!(c.max_recv_wr, DeviceCaps::DEFAULT.max_recv_wr);
    assert!(caps_from_toml("max_sq_desk = 1").is_err());
}

#[test]
fn json_rc_1024x16_facts() {
    // ref §3.9 row 1.
    let o = compute(
        &args("--qp-type rc --max-send-wr 1024 --max-send-sge 16"),
        &f39(),
    )
    .unwrap();
    assert_eq!(o.code, 0);
    let sq = &o.json["sq"];
    assert_eq!(sq["overhead"], 192);
    assert_eq!(sq["wqe_size"], 448);
    assert_eq!(sq["wqe_cnt"], 8192);
    assert_eq!(sq["max_post"], 1170);
    assert_eq!(sq["max_inline_data"], 252);
    assert_eq!(sq["bytes"], 524288);
    assert_eq!(o.json["rq"]["bytes"], 0);
    assert_eq!(o.json["alloc_bytes"], 524288);
}

#[test]
fn json_error_65536x16_facts() {
    // ref §3.9 row 2: 524288 WQEBBs > 32768.
    let o = compute(&args("--max-send-wr 65536 --max-send-sge 16"), &f39()).unwrap();
    assert_eq!(o.code, 1);
    let e = &o.json["error"];
    assert_eq!(e["errno"], 22);
    assert_eq!(e["stage"], "sq");
    assert_eq!(e["limit"], "max_send_wqebb");
    assert_eq!(e["requested"], 524288);
    assert_eq!(e["allowed"], 32768);
    assert_eq!(
        e["message"],
        "SQ needs 524288 WQEBBs (65536 WRs × 448-byte WQEs); the device allows 32768"
    );
    // By the §3.4 rule the ring is rup2(wr × 448) bytes and may be at most
    // 32768 × 64 = 2 MiB, so wr ≤ floor(2097152 / 448) = 4681.
    assert!(o.text.contains("lower max_send_wr to 4681"), "{}", o.text);
}

#[test]
fn narrower_ops_fix_the_limit_case() {
    // ref §3.9: RC 8193 × 1 fails (256-byte WQEs); RDMA-only WQEs are 64 B
    // (row "ops = RDMA only"), so 8193 WRs need rup2(8193·64)/64 = 16384 BBs.
    let o = compute(&args("--max-send-wr 8193 --max-send-sge 1"), &f39()).unwrap();
    assert_eq!(o.code, 1);
    assert!(o.text.contains("lower max_send_wr to 8192"), "{}", o.text);
    assert!(
        o.text.contains("restrict --send-ops to write,send,read"),
        "{}",
        o.text
    );
    let o = compute(
        &args("--max-send-wr 1024 --max-send-sge 1 --send-ops write,send,read"),
        &f39(),
    )
    .unwrap();
    assert_eq!(o.json["sq"]["overhead"], 32);
    assert_eq!(o.json["sq"]["wqe_size"], 64);
    assert_eq!(o.json["sq"]["bytes"], 65536);
    assert_eq!(o.json["sq"]["max_inline_data"], 28);
}

#[test]
fn cq_coverage_and_node_budget() {
    // ref §3.9 / §3.5: RC 8192 × 1 → max_post 8192; RQ 1024 × 1 → 16384 B, max_post 1024.
    let o = compute(
        &args("--max-send-wr 8192 --max-send-sge 1 --max-recv-wr 1024 --max-recv-sge 1 --cqe 3000"),
        &f39(),
    )
    .unwrap();
    assert_eq!(o.code, 1);
    assert_eq!(o.json["error"]["limit"], "cq_coverage");
    assert_eq!(
        o.json["error"]["message"],
        "CQ with 4095 usable entries cannot hold 8192 send + 1024 receive outstanding WRs"
    );
    let o = compute(
        &args("--max-send-wr 8192 --max-send-sge 1 --max-recv-wr 1024 --max-recv-sge 1 --cqe 9216 --qps 10"),
        &f39(),
    )
    .unwrap();
    assert_eq!(o.code, 0, "{}", o.text);
    // 2 MiB SQ + 16 KiB RQ; CQ rup2(9217) = 16384 entries × 64 B = 1 MiB (§3.7); 64 B records (§4.1).
    let qp = 2097152 + 16384 + 64 + 1048576 + 64;
    assert_eq!(o.json["qp_bytes"], qp);
    assert_eq!(o.json["cq"]["ncqe"], 16384);
    assert_eq!(o.json["node_bytes"], 10 * qp);
}

#[test]
fn table_marks_impossible_qps() {
    let t = table(&args("--qp-type rc"), &f39());
    // ref §3.9: 32768 × 16 at 448 B/WQE → 262144 BBs (over 32768).
    assert!(t.contains("EINVAL 262144>32768 BBs"), "{t}");
    assert_eq!(t.lines().count(), 2 + 12);
}

/// SGE counts above the device's max_sge (30 by the kernel rule for
/// 1024/512-byte descriptors: min(512/16, (512 − 32)/16)) are refused
/// as bad input, though 40–52 fit a 1024-byte descriptor; 16 / 256
/// gives min(256/16, (512 − 32)/16) = 16.
#[test]
fn sge_above_the_device_max_is_refused() {
    let caps = DeviceCaps::DEFAULT;
    assert_eq!(caps.max_sge, 30);
    for n in [31u32, 40, 52] {
        let e = compute(
            &args(&format!("--max-send-wr 16 --max-send-sge {n}")),
            &caps,
        )
        .unwrap_err();
        assert!(crate::args::is_usage(&e));
        assert_eq!(
            e.to_string(),
            format!("--max-send-sge {n} exceeds the device's max_sge 30 (ibv_devinfo -v)")
        );
    }
    assert_eq!(
        compute(&args("--max-send-wr 16 --max-send-sge 30"), &caps)
            .unwrap()
            .code,
        0
    );
    let e = compute(&args("--max-recv-wr 16 --max-recv-sge 31"), &caps).unwrap_err();
    assert!(
        e.to_string().starts_with("--max-recv-sge 31 exceeds"),
        "{e}"
    );
    let c = caps_from_toml("max_rq_desc_sz = 256").unwrap();
    assert_eq!(c.max_sge, 16);
    assert_eq!(caps_from_toml("max_sge = 8").unwrap().max_sge, 8);
}

/// `--device sim` sizes against the simulated ConnectX's QUERY_HCA_CAP
/// (1024/512 descriptors, 2^15 WQEBBs: the default device); `model` is
/// no device.
#[test]
fn device_caps_from_the_simulator() {
    let d = device_caps(&crate::device_arg::Device::Sim).unwrap();
    assert_eq!(d, DeviceCaps::DEFAULT);
    assert!(device_caps(&crate::device_arg::Device::Model).is_err());
}

#[test]
fn json_keys_match_the_doc() {
    use crate::envelope::{assert_documented, envelope};
    let caps = DeviceCaps::DEFAULT;
    let o = compute(
        &args("--max-send-wr 1024 --max-send-sge 4 --max-recv-wr 64 --cqe 2000 --qps 4"),
        &caps,
    )
    .unwrap();
    assert_documented("budget", &envelope("budget", o.json));
    let o = compute(&args("--max-send-wr 65536 --max-send-sge 16"), &caps).unwrap();
    assert_eq!(o.code, 1);
    assert_documented("budget", &envelope("budget", o.json));
}
