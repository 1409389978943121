//! The sweep against the published tables and the rules (perf ref §2.1,
//! [ref §3.9](bareverbs::reference)), fw-sim measurement, JSON and SVG shape.

use super::*;
use crate::model::PcieModel;

fn args() -> SweepArgs {
    SweepArgs {
        wr: vec![128, 1024, 8192, 32768],
        sge: vec![1, 4, 16, 30, 32],
        size: 64,
        batch: 1,
        iters: 0,
        reps: 1,
        model: None,
        caps: None,
        json: false,
        json_file: None,
        svg: None,
        all: false,
        device: "model".into(),
        lat_iters: 200,
        blueflame: false,
    }
}

fn sweep(caps: DeviceCaps) -> Sweep {
    run_sweep(&args(), &PcieModel::default(), caps).unwrap()
}

fn row<'a>(s: &'a Sweep, wr: u32, sge: u32, posted: u32, ops: &str, inl: bool) -> &'a SweepRow {
    find(s, wr, sge, posted, ops, inl).unwrap()
}

const CAPS512: DeviceCaps = DeviceCaps {
    max_sq_desc_sz: 512,
    ..DeviceCaps::DEFAULT
};

/// perf ref §2.1 table (max_send_wr 1024, max_sq_desc_sz 512),
/// recomputed by hand:
/// classic ovh 192: sge 1 → 192+16 = 208 → 256 B slot, 1024*256 = 256 KiB;
///                  sge 4 → 192+64 = 256 → 256 B, 256 KiB;
///                  sge 16 → 192+256 = 448 → 448 B, 1024*448 = 458752 → rup2 512 KiB;
///                  sge 32 → (512-192)/16 = 20 max → rejected.
/// rdma ovh 32:     sge 1 → 48 → 64 B, 64 KiB; sge 4 → 96 → 128 B, 128 KiB;
///                  sge 16 → 288 → 320 B, 327680 → 512 KiB; sge 32 → max 30 → rejected.
#[test]
fn perf_ref_2_1_table() {
    let s = sweep(CAPS512);
    for (sge, ops, slot, ring) in [
        (1, "classic", 256, 262144u64),
        (4, "classic", 256, 262144),
        (16, "classic", 448, 524288),
        (1, "rdma", 64, 65536),
        (4, "rdma", 128, 131072),
        (16, "rdma", 320, 524288),
    ] {
        let r = row(&s, 1024, sge, 1, ops, false);
        assert_eq!(r.slot_bytes, Some(slot), "{sge} {ops}");
        assert_eq!(r.ring_bytes, Some(ring), "{sge} {ops}");
        assert!(r.error.is_none());
    }
    let c = row(&s, 1024, 32, 1, "classic", false);
    assert!(c.ring_bytes.is_none());
    assert!(
        c.error.as_deref().unwrap().contains("room for 20"),
        "{:?}",
        c.error
    );
    let r = row(&s, 1024, 32, 1, "rdma", false);
    assert!(
        r.error.as_deref().unwrap().contains("room for 30"),
        "{:?}",
        r.error
    );
    // sge 30: classic 192 + 480 = 672 > 512 → rejected (room for 20);
    // rdma 32 + 480 = 512 → fits exactly: 512 B slot, 1024*512 = 512 KiB.
    assert!(row(&s, 1024, 30, 1, "classic", false).error.is_some());
    assert_eq!(row(&s, 1024, 30, 1, "rdma", false).slot_bytes, Some(512));
    assert_eq!(row(&s, 1024, 30, 1, "rdma", false).ring_bytes, Some(524288));
}

/// [ref §3.9](bareverbs::reference) worked examples (512 B descriptors, 2^15 WQEBBs).
#[test]
fn facts_3_9_examples() {
    let s = sweep(CAPS512);
    // RC, wr 1024, sge 16: 448 B, 524288 B, max_post 524288/448 = 1170.
    let r = row(&s, 1024, 16, 1, "classic", false);
    assert_eq!(
        (r.slot_bytes, r.ring_bytes, r.max_post),
        (Some(448), Some(524288), Some(1170))
    );
    // RC, wr 8192, sge 1: 208 → 256 B; 8192*256 = 2097152 = 32768 BBs, at the limit.
    let r = row(&s, 8192, 1, 1, "classic", false);
    assert_eq!(
        (r.slot_bytes, r.ring_bytes, r.max_post),
        (Some(256), Some(2097152), Some(8192))
    );
    // RC, wr 32768, sge 1: 32768*256 = 8 MiB = 131072 BBs > 32768 → rejected.
    let r = row(&s, 32768, 1, 1, "classic", false);
    assert!(
        r.error.as_deref().unwrap().contains("131072 WQEBBs"),
        "{:?}",
        r.error
    );
    // RC, ops RDMA only, wr 1024, sge 1: 48 → 64 B, 65536 B, max_post 1024.
    let r = row(&s, 1024, 1, 1, "rdma", false);
    assert_eq!(
        (r.slot_bytes, r.ring_bytes, r.max_post),
        (Some(64), Some(65536), Some(1024))
    );
    // RC, wr 128, sge 1, inline 64: max(208, 192 + align16(68) = 272) → 320 B;
    // 128*320 = 40960 → rup2 65536; max_post 65536/320 = 204.
    let r = row(&s, 128, 1, 1, "classic", true);
    assert_eq!(
        (r.slot_bytes, r.ring_bytes, r.max_post),
        (Some(320), Some(65536), Some(204))
    );
}

/// The default (1024 B descriptor) device accepts 32 SGEs:
/// classic 192 + 512 = 704 B slot, 1024*704 = 720896 → rup2 1 MiB;
/// rdma 32 + 512 = 544 → 576 B, 589824 → 1 MiB.
#[test]
fn default_device_accepts_32() {
    let s = sweep(DeviceCaps::DEFAULT);
    let r = row(&s, 1024, 32, 32, "classic", false);
    assert_eq!((r.slot_bytes, r.ring_bytes), (Some(704), Some(1 << 20)));
    let r = row(&s, 1024, 32, 32, "rdma", false);
    assert_eq!((r.slot_bytes, r.ring_bytes), (Some(576), Some(1 << 20)));
}

/// WQE bytes read back from the real post path equal the rule
/// ctrl 16 + raddr 16 + 16/SGE (48, 96, 288, 512, 544 B for
/// k = 1, 4, 16, 30, 32) and inline 32 + align16(4 + 64) = 112 B;
/// WQEBBs = ceil(bytes/64): 1, 2, 5, 8, 9 and 2.
#[test]
fn posted_wqe_matches_rule() {
    let s = sweep(DeviceCaps::DEFAULT);
    for (k, bytes, bbs) in [
        (1, 48, 1),
        (4, 96, 2),
        (16, 288, 5),
        (30, 512, 8),
        (32, 544, 9),
    ] {
        let r = row(&s, 1024, k, k, "rdma", false);
        assert_eq!(r.wqe_bytes, Some(bytes), "k={k}");
        assert_eq!(r.wqe_bytes, Some(rule_write_wqe_bytes(k, None)));
        assert_eq!(r.wqebbs, Some(bbs), "k={k}");
        // Non-inline batch-1: the NIC fetches the WQE's BBs and gathers k SGEs.
        assert_eq!(r.nic_fetch_bytes, Some(64 * bbs));
        assert_eq!(r.pcie_reads, Some(1.0 + k as f64));
        assert_eq!(r.bf_eligible, Some(false));
    }
    let r = row(&s, 1024, 16, 16, "classic", true);
    assert_eq!(r.wqe_bytes, Some(112));
    assert_eq!(r.wqe_bytes, Some(rule_write_wqe_bytes(16, Some(64))));
    assert_eq!(r.wqebbs, Some(2));
    // Inline 112 B <= 256 B at batch 1 → BlueFlame, nothing fetched.
    assert_eq!(r.bf_eligible, Some(true));
    assert_eq!(r.nic_fetch_bytes, Some(0));
    assert_eq!(r.pcie_reads, Some(0.0));
}

/// With measurements, the published latency table gets meas=1 /
/// meas=k columns whose deltas come from the measured rows: flat with
/// one posted SGE, growing with k posted SGEs.
#[test]
fn blog_table_shows_measured_deltas_with_fw_sim() {
    // Send queues of up to 16384 WQEBBs keep 13 bytes per WQEBB inline
    // (const-generic arrays): debug builds copy them by value a few
    // times, more than a test thread's 2 MiB stack holds.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(blog_table_body)
        .unwrap()
        .join()
        .unwrap();
}

fn blog_table_body() {
    let a = SweepArgs {
        wr: vec![1024],
        sge: vec![1, 4, 16, 32],
        iters: 0,
        lat_iters: 10,
        device: "fw-sim".into(),
        ..args()
    };
    let s = run_sweep(&a, &PcieModel::default(), DeviceCaps::DEFAULT).unwrap();
    let t = blog_latency_table(&s, &DeviceCaps::DEFAULT);
    assert!(t.contains("meas=1") && t.contains("meas=k"), "{t}");
    let line = t.lines().find(|l| l.starts_with("  16 |")).unwrap();
    let last: f64 = line.split_whitespace().last().unwrap().parse().unwrap();
    let m = |p| {
        find(&s, 1024, 16, p, "classic", false)
            .unwrap()
            .measured_latency_ns
            .unwrap()
    };
    let base = find(&s, 1024, 1, 1, "classic", false)
        .unwrap()
        .measured_latency_ns
        .unwrap();
    assert_eq!(last, (m(16) - base).round(), "{line}");
    assert!(last > 0.0, "{line}");
}

/// `--device fw-sim`: each row the device can create gets a write
/// latency measured through the command path; the rest do not.
#[test]
fn fw_sim_measures_feasible_rows() {
    let a = SweepArgs {
        wr: vec![128],
        sge: vec![1, 16, 60],
        iters: 0,
        lat_iters: 20,
        device: "fw-sim".into(),
        ..args()
    };
    let s = run_sweep(&a, &PcieModel::default(), DeviceCaps::DEFAULT).unwrap();
    assert!(s.measured_on.as_deref().unwrap().contains("fw-sim"));
    // 20 rows: sge 1 (posted 1) x 2 op sets x inline off/on = 4, sge 16
    // and sge 60 (posted 1 and k) = 8 each. With 1024 B descriptors,
    // classic ops (192 B overhead) leave room for (1024 - 192) / 16 =
    // 52 SGEs: the 4 classic sge-60 rows are rejected; rdma-only (32 B)
    // leaves 62: 32 + 60 * 16 = 992 -> 1024 B slots, 128 x 1 KiB =
    // 2048 WQEBBs, feasible. So 16 rows are measured.
    assert_eq!(s.rows.len(), 20);
    let mut feasible = 0;
    for r in &s.rows {
        let rejected = r.max_send_sge == 60 && r.send_ops == "classic";
        assert_eq!(r.error.is_some(), rejected, "{r:?}");
        if rejected {
            assert!(r.measured_latency_ns.is_none(), "{r:?}");
        } else {
            feasible += 1;
            let m = r.measured_latency_ns.unwrap_or_else(|| panic!("{r:?}"));
            assert!(m > 0.0, "{r:?}");
            // The simulated NIC fetched whole WQEBBs of the WQE really
            // posted (8-byte doorbells: no BlueFlame copy), and read at
            // least the WQE plus one gather per posted SGE.
            let fetched = r.sim_fetch_bytes.unwrap_or_else(|| panic!("{r:?}"));
            assert_eq!(fetched, 64.0 * r.wqebbs.unwrap() as f64, "{r:?}");
            let reads = r.sim_pcie_reads.unwrap();
            let gathers = if r.inline { 0 } else { r.posted_sge };
            assert!(reads >= 1.0 + gathers as f64, "{r:?}");
        }
    }
    assert_eq!(feasible, 16);
    // Posting 16 SGEs costs more than 1 on the same QP.
    let m = |p| {
        find(&s, 128, 16, p, "rdma", false)
            .unwrap()
            .measured_latency_ns
            .unwrap()
    };
    assert!(m(16) > m(1), "{} vs {}", m(16), m(1));
    let j = to_json(&s);
    assert!(j["rows"][0]["measured_latency_ns"].as_f64().is_some());
    let t = main_table(&s, &a);
    assert!(t.contains("meas_ns"), "{t}");
    assert!(header(&s, &a).contains("by bareverbs-cmd on fw-sim"));
    // Without --device the JSON key is there, null, and the table has no
    // measured column.
    let s = run_sweep(
        &SweepArgs {
            wr: vec![128],
            sge: vec![1],
            ..args()
        },
        &PcieModel::default(),
        DeviceCaps::DEFAULT,
    )
    .unwrap();
    assert!(to_json(&s)["rows"][0]["measured_latency_ns"].is_null());
    assert!(!main_table(&s, &args()).contains("meas_ns"));
}

#[test]
fn json_and_svg_shape() {
    let s = sweep(DeviceCaps::DEFAULT);
    let j = to_json(&s);
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), s.rows.len());
    for key in [
        "max_send_wr",
        "max_send_sge",
        "posted_sge",
        "send_ops",
        "inline",
        "ring_bytes",
        "slot_bytes",
        "wqe_bytes",
        "wqebbs",
        "post_ns",
        "nic_fetch_bytes",
        "pcie_reads",
        "modeled_latency_ns",
        "error",
    ] {
        assert!(rows[0].get(key).is_some(), "missing {key}");
    }
    let svg = svg(&s, 1024, &[1, 4, 16, 30, 32]).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
}
