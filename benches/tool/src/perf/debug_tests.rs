//! The `Debug` impls of the perf benches and backends: configuration and
//! counters, never the queues' memory.

use super::poll::{PollArgs, PollBench};
use super::post::{PerfOpcode, PostArgs, PostBench};
use super::recv::{RecvArgs, RecvBench, RecvQueueKind};
use super::sim_backend::SimBackend;

#[test]
fn benches_print_args_and_counters() {
    let post = PostBench::new(PostArgs {
        opcode: PerfOpcode::Write,
        sge: 2,
        inline: None,
        batch: 16,
        signal_every: 16,
        iters: 0,
        blueflame: false,
        general: false,
        c_loop: false,
        isolate: false,
        pushed: false,
    })
    .unwrap();
    let s = format!("{post:?}");
    assert!(s.starts_with("PostBench {"), "{s}");
    assert!(s.contains("sge: 2") && s.contains("posted: 0"), "{s}");
    assert!(s.contains("SendQueue {"), "{s}");

    let poll = PollBench::new(PollArgs {
        batch: 16,
        iters: 0,
        full: false,
        each: false,
    })
    .unwrap();
    let s = format!("{poll:?}");
    assert!(
        s.contains("CompletionQueue {") && s.contains("produced: 0"),
        "{s}"
    );

    let recv = RecvBench::new(RecvArgs {
        queue: RecvQueueKind::Srq,
        sge: 1,
        batch: 16,
        iters: 0,
    })
    .unwrap();
    let s = format!("{recv:?}");
    assert!(
        s.contains("Srq(SharedReceiveQueue {") && s.contains("rejected: 0"),
        "{s}"
    );
}

#[test]
fn sim_backend_derives() {
    let s = format!("{:?}", SimBackend::new(3, Default::default()));
    assert!(s.contains("seed: 3") && s.contains("FabricTimer {"), "{s}");
}
