//! Criterion: polling requester CQEs, each checked against the WR in
//! flight — the lean `poll_completions` path, its callback form
//! `poll_each` and the full `poll` (`WorkCompletion`) path, 16 and 1 CQEs
//! per call.
//! `cargo bench -p bareverbs-bench --bench poll`
use bareverbs_tool::perf::poll::{PollArgs, PollBench};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("poll");
    for (name, full, each) in [
        ("lean", false, false),
        ("each", false, true),
        ("full", true, false),
    ] {
        for batch in [16u32, 1] {
            g.throughput(Throughput::Elements(batch as u64));
            let mut b = PollBench::new(PollArgs {
                batch,
                iters: 0,
                full,
                each,
            })
            .expect("bench queues");
            g.bench_function(format!("{name}/{batch}_per_call"), |bn| {
                // One criterion iteration = one poll call of `batch` CQEs;
                // time whole laps (refills untimed) and scale.
                bn.iter_custom(|iters| {
                    let want = iters * batch as u64;
                    let (mut t, mut n) = (Duration::ZERO, 0u64);
                    while n < want {
                        let (dt, dn) = b.timed_lap();
                        t += dt;
                        n += dn.max(1);
                    }
                    t.mul_f64(want as f64 / n as f64)
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
