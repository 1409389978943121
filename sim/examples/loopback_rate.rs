//! Prints the simulator's loopback 64-byte RDMA WRITE rate.
fn main() {
    let n = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let (cpu, wall) = bareverbs_sim::perf::loopback_write_rate_detail(n);
    println!(
        "loopback 64-byte RDMA WRITE: {cpu:.0} ops per CPU-second ({wall:.0} per wall-second)"
    );
}
