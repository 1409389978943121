//! The simulator's own loopback rate. (perftest's tests on the simulator,
//! which this file also held while the simulator had its own perftest
//! loop, are the tool crate's engine tests now: `bareverbs perf
//! --device sim`, benches/tool/src/perf/sim_backend.rs.)

use bareverbs_sim::perf::loopback_write_rate_detail;

#[test]
fn loopback_rate_is_measured() {
    let (cpu, wall) = loopback_write_rate_detail(50_000);
    println!("loopback 64-byte WRITE: {cpu:.0} ops/CPU-s, {wall:.0} ops/wall-s");
    assert!(cpu > 0.0 && wall > 0.0);
}
