//! What runs produce: perftest's text and the JSON figures, every WR
//! completed and every byte as sent, on each backend and with the flags.

use super::*;

#[test]
fn write_lat_end_to_end() {
    let out = run(
        PerfTest::WriteLat,
        &args(&["--device", "model", "-n", "200"]),
    )
    .unwrap();
    assert!(out.contains("RDMA_Write Latency Test"));
    assert!(out.contains(pf::RESULT_FMT_LAT));
    assert!(out.contains("MODELED"));
    let j: serde_json::Value = serde_json::from_str(
        &run(
            PerfTest::WriteLat,
            &args(&["--device", "model", "-n", "200", "--json"]),
        )
        .unwrap(),
    )
    .unwrap();
    // Ping-pong: each of the 200 iterations is one WRITE each way.
    assert_eq!(j["results"][0]["posted"], 400);
    assert_eq!(j["results"][0]["completed_ok"], 400);
    assert_eq!(j["results"][0]["completed_err"], 0);
    assert_eq!(j["results"][0]["mismatches"], 0);
    assert!(j["results"][0]["msg_rate_mpps"].as_f64().unwrap() > 0.0);
    assert!(j["results"][0]["modeled_latency_ns"].as_f64().unwrap() > 500.0);
    // 2 B inline WRITE: 32 + align16(6) = 48 B.
    assert_eq!(j["results"][0]["wqe_bytes"], 48);
}

#[test]
fn bw_and_loss() {
    let j: serde_json::Value = serde_json::from_str(
        &run(
            PerfTest::WriteBw,
            &args(&[
                "--device",
                "model",
                "--report_gbits",
                "-n",
                "1000",
                "--json",
            ]),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(j["results"][0]["posted"], 1000);
    let g = j["results"][0]["bandwidth_gbps"].as_f64().unwrap();
    assert!(g > 1.0 && g <= 100.0, "{g}");
    let j: serde_json::Value = serde_json::from_str(
        &run(
            PerfTest::SendBw,
            &args(&[
                "--device", "model", "-c", "UD", "-s", "1024", "--loss", "0.5", "--seed", "7",
                "--json",
            ]),
        )
        .unwrap(),
    )
    .unwrap();
    // Half of the 5000 datagrams are lost: their 1024 bytes each never
    // arrive (mismatches count bytes).
    let m = j["results"][0]["mismatches"].as_u64().unwrap();
    assert!(
        m.is_multiple_of(1024) && m / 1024 > 1000 && m / 1024 < 4000,
        "{m}"
    );
}

/// `--device fw-sim`: perftest's header and row, the header naming the
/// command path and modeled time.
#[test]
fn fw_sim_text_and_json() {
    let out = run(
        PerfTest::WriteLat,
        &args(&["--device", "fw-sim", "-n", "100"]),
    )
    .unwrap();
    assert!(out.contains("RDMA_Write Latency Test"));
    assert!(out.contains("bareverbs-cmd on fw-sim"), "{out}");
    assert!(out.contains("MODELED (virtual clock)"), "{out}");
    assert!(out.contains(pf::RESULT_FMT_LAT));
    let j: serde_json::Value = serde_json::from_str(
        &run(
            PerfTest::ReadBw,
            &args(&["--device", "fw-sim", "-n", "200", "-s", "1024", "--json"]),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(j["results"][0]["posted"], 200);
    assert_eq!(j["results"][0]["completed_ok"], 200);
    assert_eq!(j["results"][0]["mismatches"], 0);
    assert_eq!(j["modeled"], true);
    assert!(j["results"][0]["bw_avg"].as_f64().unwrap() > 0.0);
    let e = run(PerfTest::WriteLat, &args(&["--device", "nic"])).unwrap_err();
    assert!(e.to_string().contains("fw-sim"), "{e}");
}

/// The simulator issue's acceptance run: RDMA WRITE bandwidth, 4 KiB,
/// 20000 iterations on each of 8 QPs, 1% packet loss, seed 7 — every
/// posted WR completes OK and no payload byte arrives corrupted.
#[test]
fn sim_write_bw_with_loss_completes_everything() {
    let j: serde_json::Value = serde_json::from_str(
        &run(
            PerfTest::WriteBw,
            &args(&[
                "--device", "sim", "-s", "4096", "-n", "20000", "-q", "8", "--loss", "0.01",
                "--seed", "7", "--json",
            ]),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(j["results"][0]["posted"], 160_000);
    assert_eq!(j["results"][0]["completed_ok"], 160_000);
    assert_eq!(j["results"][0]["completed_err"], 0);
    assert_eq!(j["results"][0]["mismatches"], 0);
    assert!(j["results"][0]["msg_rate_mpps"].as_f64().unwrap() > 0.0);
}

/// `--device sim` runs what the flags say: UC and UD QPs, the
/// requested max_send_wr, post lists, CQ moderation, MTU.
#[test]
fn sim_honours_the_flags() {
    for (t, v) in [
        (PerfTest::WriteBw, ["-c", "UC", "-s", "4096"]),
        (PerfTest::SendBw, ["-c", "UD", "-s", "1024"]),
    ] {
        let mut a = vec!["-n", "1000"];
        a.extend_from_slice(&v);
        let (j, f) = json(t, &a);
        assert_eq!(f, None, "{v:?} {j}");
        assert_eq!(
            (
                j["results"][0]["posted"].as_u64(),
                j["results"][0]["completed_ok"].as_u64()
            ),
            (Some(1000), Some(1000))
        );
        assert_eq!(j["results"][0]["mismatches"], 0, "{v:?}");
    }
    // max_send_wr 512 (1 WQEBB per WQE): a 512-WQEBB ring.
    let (j, f) = json(PerfTest::WriteBw, &["--max-send-wr", "512", "-n", "1000"]);
    assert_eq!(f, None);
    assert_eq!(j["results"][0]["counters"]["sq_wqebbs"], 512.0);
    let c = |v: &[&str]| {
        let (j, f) = json(PerfTest::WriteBw, v);
        assert_eq!(f, None, "{j}");
        assert_eq!(j["verdict"], "ok");
        (
            j["results"][0]["device_counters"]["requester.doorbells"]
                .as_f64()
                .unwrap(),
            j["results"][0]["device_counters"]["requester.cqes"]
                .as_f64()
                .unwrap(),
        )
    };
    // -s 4096: perftest moderates by 100 (plus the window-filling WR).
    let (db, cqes) = c(&["-s", "4096", "-n", "1000"]);
    assert_eq!(db, 1000.0);
    assert!(cqes < 100.0, "{cqes}");
    let (_, cqes) = c(&["-s", "4096", "-n", "1000", "-Q", "1"]);
    assert_eq!(cqes, 1000.0);
    let (db, cqes) = c(&["-s", "4096", "-n", "1000", "-l", "4"]);
    assert_eq!((db, cqes), (250.0, 250.0));
}

/// UC and UD complete once the message has left the port, so their
/// bandwidth keeps to the 100 Gb/s link (it was 6553.6 Gb/s for UC
/// 64 KiB and a 327 Gb/s peak for UD 4 KiB).
#[test]
fn unreliable_bandwidth_keeps_to_the_link() {
    for (t, v) in [
        (PerfTest::WriteBw, ["-c", "UC", "-s", "65536"]),
        (PerfTest::SendBw, ["-c", "UD", "-s", "4096"]),
        (PerfTest::WriteBw, ["-c", "RC", "-s", "65536"]),
    ] {
        let mut a = vec!["--device", "fw-sim", "-n", "500", "--report_gbits"];
        a.extend_from_slice(&v);
        let (j, f) = json(t, &a);
        assert_eq!(f, None, "{j}");
        let (peak, avg) = (
            j["results"][0]["bw_peak"].as_f64().unwrap(),
            j["results"][0]["bw_avg"].as_f64().unwrap(),
        );
        assert!(
            peak <= 100.0 && avg <= 100.0 && avg > 80.0,
            "{v:?}: {peak} {avg}"
        );
    }
}

/// `-e` (perftest's event mode) on the command path: every completion is
/// found after sleeping on the completion vector (one CQ event per
/// wake-up, checked by the core), every byte as sent, and the run's CPU
/// use reported beside the polling run's.
#[test]
fn events_mode_on_fw_sim() {
    for (test, wrs) in [
        (PerfTest::SendLat, 400),
        (PerfTest::ReadBw, 200),
        (PerfTest::SendBw, 200),
    ] {
        let mut polled = None;
        for e in [false, true] {
            let mut a = vec!["--device", "fw-sim", "-n", "200", "--json"];
            if e {
                a.push("-e");
            }
            let j: serde_json::Value =
                serde_json::from_str(&run(test, &args(&a)).unwrap()).unwrap();
            let r = &j["results"][0];
            assert_eq!(r["posted"], wrs, "{test:?} -e {e}");
            assert_eq!(r["completed_ok"], wrs, "{test:?} -e {e}");
            assert_eq!(
                (r["completed_err"].as_u64(), r["mismatches"].as_u64()),
                (Some(0), Some(0))
            );
            let c = &r["device_counters"];
            assert!(c["cpu_percent"].as_f64().is_some(), "{c}");
            let cqes = if r["counters"]["cqes_polled"].is_null() {
                c["cqes_polled"].clone()
            } else {
                r["counters"]["cqes_polled"].clone()
            };
            let events = c["cq_events"].as_f64();
            if e {
                let n = events.unwrap();
                assert!(n >= 1.0 && n <= cqes.as_f64().unwrap(), "{c}");
                assert_eq!(
                    cqes,
                    *polled.as_ref().unwrap(),
                    "the same completions either way"
                );
            } else {
                assert!(events.is_none(), "no events without -e");
                polled = Some(cqes);
            }
        }
    }
}
