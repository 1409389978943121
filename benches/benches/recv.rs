//! Criterion: receive posts (RQ and SRQ, 1 SGE) into memory-backed rings,
//! with oldest-first retires as a poller would.
//! `cargo bench -p bareverbs-bench --bench recv`
use bareverbs_tool::perf::recv::{RecvArgs, RecvBench, RecvQueueKind};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("post_recv");
    for (name, queue) in [("rq", RecvQueueKind::Rq), ("srq", RecvQueueKind::Srq)] {
        for batch in [16u32, 1] {
            g.throughput(Throughput::Elements(batch as u64));
            let mut b = RecvBench::new(RecvArgs {
                queue,
                sge: 1,
                batch,
                iters: 0,
            })
            .expect("bench queue");
            g.bench_function(format!("{name}/1sge_batch{batch}"), |bn| {
                bn.iter(|| b.step())
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
