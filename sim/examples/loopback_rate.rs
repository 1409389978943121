//! Prints the simulator's loopback 64-byte RDMA WRITE rate.
fn main() {
    let n = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let r = bareverbs_sim::perf::loopback_write_rate(n);
    println!("loopback 64-byte RDMA WRITE: {r:.0} ops/s");
}
