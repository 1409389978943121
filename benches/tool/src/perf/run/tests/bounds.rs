//! Memory and time stay bounded, and `-a` streams its rows.

use super::super::stream::stream_on;
use super::*;

/// Memory and time stay bounded: -q 16384 is refused before anything
/// is allocated (usage error naming the memory), -D bounds wall-clock
/// time on the simulator, and -a streams each row as it completes, so
/// a failure at 4 MiB leaves the rows before it printed.
#[test]
fn memory_and_time_are_bounded() {
    for dev in ["sim", "fw-sim", "model"] {
        let e = run(PerfTest::WriteBw, &args(&["--device", dev, "-q", "16384"])).unwrap_err();
        assert!(crate::args::is_usage(&e), "{dev}: {e}");
        assert!(
            e.to_string().contains("MiB of queue and buffer memory"),
            "{e}"
        );
    }
    let t = std::time::Instant::now();
    let (j, f) = json(PerfTest::WriteBw, &["-D", "1"]);
    let wall = t.elapsed().as_secs_f64();
    assert_eq!(f, None, "{j}");
    assert!((1.0..10.0).contains(&wall), "-D 1 took {wall} s");
    let r = &j["results"][0];
    assert_eq!(r["posted"], r["completed_ok"]);
    assert!(r["posted"].as_u64().unwrap() >= 5);
    // -a on fw-sim runs every size perftest's -a does (2 B .. 8 MiB:
    // memory keys take large pages above 2.4 MiB); a backend that
    // fails at 4 MiB leaves the rows before it printed, streamed one
    // by one, and the failure names the size.
    struct FailFrom(Box<dyn PerfBackend>, u64);
    impl PerfBackend for FailFrom {
        fn name(&self) -> String {
            self.0.name()
        }
        fn run(&mut self, cfg: &PerfRunConfig) -> anyhow::Result<PerfRunReport> {
            anyhow::ensure!(cfg.size < self.1, "injected failure at -s {}", cfg.size);
            self.0.run(cfg)
        }
    }
    let a = args(&["--device", "fw-sim", "-a", "-n", "5"]);
    let port = port_attrs(&a.device).unwrap();
    let cfgs = configs_on_port(PerfTest::WriteBw, &a, port).unwrap();
    let all = run(PerfTest::WriteBw, &a).unwrap();
    let sizes: Vec<u64> = all
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(sizes, (1..=23).map(|e| 1u64 << e).collect::<Vec<_>>());
    let mut be = FailFrom(backend(&a).unwrap(), 4 << 20);
    let mut streamed = Vec::new();
    let o = stream_on(PerfTest::WriteBw, &a, port, &cfgs, &mut be, &mut |s| {
        streamed.push(s.to_string())
    })
    .unwrap();
    let f = o.failure.unwrap();
    assert!(f.contains("-s 4194304"), "{f}");
    let text = streamed.concat();
    assert_eq!(text, o.output);
    let rows: Vec<u64> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(rows, (1..=21).map(|e| 1u64 << e).collect::<Vec<_>>());
    // Each row was handed out on its own, as it completed.
    assert!(streamed.len() >= 2 + rows.len(), "{}", streamed.len());
}
