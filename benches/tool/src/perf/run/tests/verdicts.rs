//! Runs whose work did not all complete, or whose figures exceed the
//! modeled link, fail.

use super::*;

/// Runs whose work did not all complete, or whose figures exceed the
/// modeled link, fail (run errors; JSON carries the verdict).
#[test]
fn impossible_results_fail() {
    // Everything lost: the RC QP fails with retries exhausted, on
    // every backend.
    for dev in ["sim", "model"] {
        let e = err(
            PerfTest::WriteBw,
            &["--device", dev, "--loss", "1", "-n", "100"],
        );
        assert!(e.contains("RETRY_EXC_ERR"), "{dev}: {e}");
        let (j, f) = json(
            PerfTest::WriteBw,
            &["--device", dev, "--loss", "1", "-n", "100"],
        );
        assert!(f.is_some());
        assert_eq!(j["verdict"], "fail");
        assert!(
            j["error"].as_str().unwrap().contains("RETRY_EXC_ERR"),
            "{j}"
        );
        assert!(j["results"][0]["bw_avg"].is_null(), "{j}");
    }
    let e = err(
        PerfTest::WriteBw,
        &["--device", "fw-sim", "--loss", "1", "-n", "100"],
    );
    assert!(e.contains("RETRY_EXC_ERR") || e.contains("retry"), "{e}");
    // The QP is created with -I as max_inline_data (as perftest does):
    // 1024 B inline makes 1072-byte WQEs (ctrl 16 + raddr 16 + 4 +
    // 1024, rounded to 16), more than the device's 1024: refused
    // before anything runs, as a usage error (perftest: "Couldn't
    // create QP"). 512 B inline fits and runs.
    for dev in ["sim", "fw-sim", "model"] {
        let e = run(
            PerfTest::WriteBw,
            &args(&["--device", dev, "-I", "1024", "-s", "1024", "-n", "100"]),
        )
        .unwrap_err();
        assert!(crate::args::is_usage(&e), "{dev}: {e}");
        assert!(e.to_string().contains("1072-byte WQEs"), "{dev}: {e}");
        let (j, f) = json(
            PerfTest::WriteBw,
            &["--device", dev, "-I", "512", "-s", "512", "-n", "100"],
        );
        assert_eq!(f, None, "{dev}: {j}");
    }
    // A fabricated report over the link.
    let cfg = configs(PerfTest::WriteBw, &args(&["-n", "100"]))
        .unwrap()
        .remove(0);
    let rep = PerfRunReport {
        posted: 100,
        completed_ok: 100,
        link_gbps: 100.0,
        ..Default::default()
    };
    assert_eq!(verdict(&cfg, &rep, &[99.0, 98.0]), None);
    let v = verdict(&cfg, &rep, &[6553.6, 6525.9]).unwrap();
    assert!(v.contains("exceeds the 100 Gb/s link"), "{v}");
    let v = verdict(
        &cfg,
        &PerfRunReport {
            posted: 0,
            ..rep.clone()
        },
        &[],
    )
    .unwrap();
    assert!(v.contains("nothing was posted"), "{v}");
}
