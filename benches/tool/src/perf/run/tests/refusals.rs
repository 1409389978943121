//! What is refused before anything runs (perftest's flags, connection
//! types, a QP the device cannot create, bad `vfio:` addresses) and
//! perftest's adjustments of the flags it accepts.

use super::*;

/// `vfio:BDF` opens the function through the VFIO host; on a machine
/// without that ConnectX the error is the host crate's own actionable
/// text (no such device / not Mellanox / not bound to vfio-pci / no
/// VFIO), not a panic.
#[test]
fn vfio_and_bad_sizing() {
    for bdf in ["0000:00:00.0", "0000:ff:1f.7"] {
        let e = run(
            PerfTest::WriteLat,
            &args(&["--device", &format!("vfio:{bdf}")]),
        )
        .unwrap_err();
        let want = match bareverbs_vfio::VfioNic::open(bdf) {
            Err(v) => v.to_string(),
            Ok(_) => continue, // a real ConnectX there: nothing to check
        };
        assert_eq!(e.to_string(), want);
    }
    let e = run(PerfTest::WriteLat, &args(&["--device", "vfio:3b:00"])).unwrap_err();
    assert!(e.to_string().contains("bad PCI address"), "{e}");
    let e = run(
        PerfTest::WriteLat,
        &args(&["--device", "model", "--sge", "60", "--send-ops", "classic"]),
    )
    .unwrap_err();
    assert!(e.to_string().contains("QP creation fails"), "{e}");
}

/// perftest `change_conn_type`: UD only with SEND, UC without READ and
/// atomics — on every backend, before anything runs.
#[test]
fn connection_types_perftest_refuses() {
    use PerfTest::*;
    for dev in ["sim", "fw-sim", "model"] {
        for t in [WriteBw, WriteLat, ReadBw, ReadLat, AtomicLat] {
            let e = err(t, &["--device", dev, "-c", "UD", "-n", "100"]);
            assert_eq!(e, "UD connection only possible in SEND verb", "{t:?} {dev}");
        }
        for t in [ReadBw, ReadLat, AtomicLat] {
            let e = err(t, &["--device", dev, "-c", "UC", "-n", "100"]);
            assert_eq!(e, "UC connection not possible in READ/ATOMIC verbs");
        }
    }
}

/// perftest's option ranges (CHECK_VALUE_IN_RANGE and friends) and
/// cross-checks (force_dependecies), with its messages.
#[test]
fn flags_perftest_refuses() {
    use PerfTest::*;
    let cases: &[(PerfTest, &[&str], &str)] = &[
        (WriteBw, &["-m", "99999"], "Invalid MTU - 99999"),
        (WriteBw, &["-m", "1500"], "{256,512,1024,2048,4096}"),
        (
            WriteBw,
            &["-s", "0"],
            "Message Size should be between 1 and 2147483647",
        ),
        (
            WriteBw,
            &["-s", "4294967296"],
            "Message Size should be between 1 and",
        ),
        (
            WriteBw,
            &["-t", "0"],
            "Tx depth should be between 1 and 15000",
        ),
        (
            WriteBw,
            &["-t", "15001"],
            "Tx depth should be between 1 and 15000",
        ),
        (
            WriteBw,
            &["-n", "4"],
            "Iteration num should be between 5 and 4294967296",
        ),
        (
            WriteBw,
            &["-q", "0"],
            "num of Qps should be between 1 and 16384",
        ),
        (
            WriteBw,
            &["-q", "16385"],
            "num of Qps should be between 1 and 16384",
        ),
        (
            WriteBw,
            &["-Q", "0"],
            "CQ moderation should be between 1 and 1024",
        ),
        (
            WriteBw,
            &["-Q", "1025"],
            "CQ moderation should be between 1 and 1024",
        ),
        (
            WriteBw,
            &["-I", "100000"],
            "Max inline should be between 0 and 1024",
        ),
        (WriteBw, &["-D", "0"], "Duration period must be positive"),
        (
            WriteBw,
            &["-D", "1", "-a"],
            "Duration mode currently doesn't support",
        ),
        (
            WriteBw,
            &["-l", "3", "-n", "1000"],
            "Number of iterations must be a multiple of post list size",
        ),
        (
            WriteBw,
            &["-l", "4", "-Q", "3", "-n", "1000"],
            "Post list size must be a multiple of CQ moderation",
        ),
        (
            ReadLat,
            &["-l", "16"],
            "Post list is supported in BW tests only",
        ),
        (
            ReadLat,
            &["-q", "2"],
            "Multiple QPs only available on bw tests",
        ),
        (
            WriteLat,
            &["-q", "2"],
            "Multiple QPs only available on bw tests",
        ),
        (
            ReadLat,
            &["-I", "64"],
            "Inline feature not available on READ/Atomic verbs",
        ),
        (
            ReadBw,
            &["-I", "0"],
            "Inline feature not available on READ/Atomic verbs",
        ),
        (
            AtomicLat,
            &["-s", "64"],
            "Message size cannot be changed for Atomic tests",
        ),
        (
            AtomicLat,
            &["-a"],
            "Message size cannot be changed for Atomic tests",
        ),
    ];
    for (t, v, want) in cases {
        let e = err(*t, v);
        assert!(e.contains(want), "{t:?} {v:?}: {e}");
    }
    // Accepted: -Q on a latency test (perftest takes it), atomic -s 8.
    run(ReadLat, &args(&["-Q", "1", "-n", "50"])).unwrap();
    run(AtomicLat, &args(&["-s", "8", "-n", "50"])).unwrap();
}

/// perftest's adjustments: the TX depth is at most -n, CQ moderation
/// is 1 above 8192 B unless given and at most the TX depth, a post
/// list sets it, UD messages are capped at the MTU.
#[test]
fn perftest_adjustments() {
    let c = configs(PerfTest::WriteBw, &args(&["-n", "50"])).unwrap();
    assert_eq!((c[0].tx_depth, c[0].cq_mod), (50, 1));
    let c = configs(PerfTest::WriteBw, &args(&["-s", "4096"])).unwrap();
    assert_eq!(c[0].cq_mod, 100);
    let c = configs(PerfTest::WriteBw, &args(&["-s", "4096", "-t", "16"])).unwrap();
    assert_eq!(c[0].cq_mod, 16);
    let c = configs(PerfTest::WriteBw, &args(&["-Q", "4"])).unwrap();
    assert_eq!(c[0].cq_mod, 4);
    let c = configs(PerfTest::WriteBw, &args(&["-l", "8", "-s", "64"])).unwrap();
    assert_eq!(c[0].cq_mod, 8);
    let c = configs(PerfTest::SendBw, &args(&["-c", "UD", "-m", "2048"])).unwrap();
    assert_eq!(c[0].size, 2048);
}

/// `-e` where perftest refuses it (WRITE, duration mode) with perftest's
/// words, and on a backend without completion events.
#[test]
fn events_refusals() {
    for t in [PerfTest::WriteLat, PerfTest::WriteBw] {
        let e = run(t, &args(&["--device", "fw-sim", "-e"])).unwrap_err();
        assert!(
            e.to_string()
                .contains("Events feature not available on WRITE verb"),
            "{e}"
        );
    }
    let e = run(
        PerfTest::SendBw,
        &args(&["--device", "fw-sim", "-e", "-D", "1"]),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("Duration mode doesn't work with events."),
        "{e}"
    );
    for dev in ["sim", "model"] {
        let e = run(
            PerfTest::SendLat,
            &args(&["--device", dev, "-e", "-n", "10"]),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("needs a device with completion events"),
            "{dev}: {e}"
        );
    }
}
