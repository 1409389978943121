//! Criterion: the Rust post path vs the C (mlx5dv.h) post loop (the C
//! side with the `c-loop` feature).
//! `cargo bench -p bareverbs-bench --features c-loop --bench post`
#[cfg(feature = "c-loop")]
use bareverbs_tool::perf::cpost::CPostQueue;
use bareverbs_tool::perf::post::{PerfOpcode, PostArgs, PostBench};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn cases() -> [(&'static str, u32, u32); 3] {
    [
        ("write_1sge_batch16", 1, 16),
        ("write_1sge_batch1", 1, 1),
        ("write_16sge_batch16", 16, 16),
    ]
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("post");
    for (name, sge, batch) in cases() {
        g.throughput(Throughput::Elements(batch as u64));
        // Both Rust forms: a list of WRs (`post_rdma_raw`) and pushes
        // into a batch (`SendBatch`).
        for (form, pushed) in [("list", false), ("pushed", true)] {
            let mut rust = PostBench::new(PostArgs {
                opcode: PerfOpcode::Write,
                sge,
                inline: None,
                batch,
                signal_every: 16,
                iters: 0,
                blueflame: false,
                general: false,
                c_loop: false,
                isolate: false,
                pushed,
            })
            .expect("bench queue");
            g.bench_function(format!("rust-{form}/{name}"), |b| b.iter(|| rust.step()));
        }
        // The C side only with the `c-loop` feature (it needs mlx5dv.h).
        #[cfg(feature = "c-loop")]
        {
            let mut cq = CPostQueue::new(sge, batch);
            g.bench_function(format!("c/{name}"), |b| b.iter(|| cq.run(batch as u64)));
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
