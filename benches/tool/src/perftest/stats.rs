//! perftest's statistics, computed exactly the way `perftest_parameters.c`
//! (`print_report_lat`, `print_report_bw`) computes them (perf ref §4).
//!
//! Samples are integer *ticks* (perftest: CPU cycles; here nanoseconds for
//! latency and picoseconds for bandwidth, chosen by the caller through
//! `ticks_per_usec` / `ticks_per_sec`), so the integer steps perftest takes
//! on cycles (the median of two middle samples, the peak interval) truncate
//! the same way.

/// perftest `LAT_MEASURE_TAIL`: the two largest latency deltas are removed.
pub const LAT_MEASURE_TAIL: usize = 2;
/// perftest `format_factor` for `MB/sec`: 0x100000 bytes (MiB, although the
/// column says MB).
pub const MBS_DIVISOR: f64 = 1_048_576.0;
/// perftest `format_factor` for `--report_gbits`: 125,000,000 bytes per
/// Gb/s, i.e. 1 Gb = 1e9 bits (decimal).
pub const GBS_DIVISOR: f64 = 125_000_000.0;

/// Latency statistics as printed by `ib_*_lat` (all in microseconds).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct LatStats {
    /// Samples kept after dropping the tail (`measure_cnt` after the drop).
    pub kept: usize,
    /// `delta[0]`.
    pub t_min: f64,
    /// `delta[measure_cnt]`: the first dropped sample, i.e. the
    /// second-largest delta overall (perftest prints this as t_max).
    pub t_max: f64,
    /// Median of the kept samples (integer average of the two middle
    /// ticks when their count is even).
    pub t_typical: f64,
    /// Mean of the kept samples.
    pub t_avg: f64,
    /// Standard deviation with perftest's quirk: each deviation is
    /// truncated to an integer number of microseconds before squaring.
    pub t_stdev: f64,
    /// `delta[ceil(kept * 0.99)]`.
    pub p99: f64,
    /// `delta[ceil(kept * 0.999)]`.
    pub p99_9: f64,
}

/// perftest `get_median(n, delta)`: `(n-1) % 2 != 0` (n even) → integer
/// mean of `delta[n/2]` and `delta[n/2-1]`, else `delta[n/2]`.
pub fn perftest_median(n: usize, sorted: &[u64]) -> u64 {
    if (n.wrapping_sub(1)) % 2 == 1 {
        (sorted[n / 2] + sorted[n / 2 - 1]) / 2
    } else {
        sorted[n / 2]
    }
}

/// Latency statistics from post timestamps (`tposted`, one per iteration,
/// in ticks). `rtt_factor` is 2 for WRITE/SEND (ping-pong: half the round
/// trip) and 1 for READ/ATOMIC. Needs at least 4 timestamps (3 deltas,
/// 2 dropped, 1 kept); returns `None` otherwise.
pub fn lat_stats_from_posted(
    tposted: &[u64],
    ticks_per_usec: f64,
    rtt_factor: u32,
) -> Option<LatStats> {
    let deltas: Vec<u64> = tposted
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    lat_stats(&deltas, ticks_per_usec, rtt_factor)
}

/// Latency statistics from the `iters - 1` deltas (ticks), as perftest.
pub fn lat_stats(deltas: &[u64], ticks_per_usec: f64, rtt_factor: u32) -> Option<LatStats> {
    if deltas.len() < LAT_MEASURE_TAIL + 1 {
        return None;
    }
    let mut d = deltas.to_vec();
    d.sort_unstable();
    let q = ticks_per_usec * rtt_factor as f64;
    let n = d.len() - LAT_MEASURE_TAIL;
    let median = perftest_median(n, &d);
    let average_sum: f64 = d[..n].iter().map(|&x| x as f64 / q).sum();
    let average = average_sum / n as f64;
    let mut stdev_sum = 0.0f64;
    for &x in &d[..n] {
        // `int temp_var = average - delta/q; int pow_var = pow(temp_var, 2);`
        let temp_var = (average - x as f64 / q) as i64;
        stdev_sum += (temp_var * temp_var) as f64;
    }
    let i99 = (n as f64 * 0.99).ceil() as usize;
    let i999 = (n as f64 * 0.999).ceil() as usize;
    Some(LatStats {
        kept: n,
        t_min: d[0] as f64 / q,
        t_max: d[n] as f64 / q,
        t_typical: median as f64 / q,
        t_avg: average,
        t_stdev: (stdev_sum / n as f64).sqrt(),
        p99: d[i99.min(d.len() - 1)] as f64 / q,
        p99_9: d[i999.min(d.len() - 1)] as f64 / q,
    })
}

/// Bandwidth report unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum BwUnit {
    /// `MB/sec` (divisor 0x100000).
    MBps,
    /// `Gb/sec` (`--report_gbits`, divisor 125,000,000).
    Gbps,
}

impl BwUnit {
    /// perftest's `format_factor`.
    pub fn divisor(self) -> f64 {
        match self {
            BwUnit::MBps => MBS_DIVISOR,
            BwUnit::Gbps => GBS_DIVISOR,
        }
    }
}

/// Bandwidth statistics as printed by `ib_*_bw`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct BwStats {
    /// Peak bandwidth in `unit` (0 when the peak is not computed, `-N`).
    pub bw_peak: f64,
    /// Average bandwidth in `unit`.
    pub bw_avg: f64,
    /// Messages per second / 1e6.
    pub msg_rate_mpps: f64,
    /// Unit of the two bandwidths.
    pub unit: BwUnit,
    /// Average bandwidth in Gb/s whatever the unit (for JSON).
    pub gbps_avg: f64,
}

/// perftest `print_report_bw` for one port: `tposted[i]` / `tcompleted[i]`
/// are the post and completion ticks of message `i`; `size` bytes each.
/// The peak is the best `(tcompleted[j] - tposted[i]) / (j - i + 1)` (integer
/// ticks) over `i` in steps of `post_list` and `j` at CQ-moderation
/// granularity (plus the last message), unless `no_peak`.
#[allow(clippy::too_many_arguments)] // perftest's own parameter list
pub fn bw_stats(
    tposted: &[u64],
    tcompleted: &[u64],
    size: u64,
    ticks_per_sec: f64,
    unit: BwUnit,
    post_list: usize,
    cq_mod: usize,
    no_peak: bool,
) -> Option<BwStats> {
    let n = tposted.len().min(tcompleted.len());
    if n == 0 {
        return None;
    }
    let post_list = post_list.max(1);
    let cq_mod = cq_mod.max(1);
    let mut opt_delta = u64::MAX;
    if !no_peak {
        let mut i = 0;
        while i < n {
            // ROUND_UP(i + 1, cq_mod) - 1
            let mut j = (i + 1).div_ceil(cq_mod) * cq_mod - 1;
            while j < n {
                let t = tcompleted[j].saturating_sub(tposted[i]) / (j - i + 1) as u64;
                opt_delta = opt_delta.min(t);
                j += cq_mod;
            }
            if !n.is_multiple_of(cq_mod) {
                let j = n - 1;
                let t = tcompleted[j].saturating_sub(tposted[i]) / (j - i + 1) as u64;
                opt_delta = opt_delta.min(t);
            }
            i += post_list;
        }
    }
    let mut s = bw_average(
        tposted[0],
        tcompleted[n - 1],
        n as u64,
        size,
        ticks_per_sec,
        unit,
    )?;
    if !(no_peak || opt_delta == 0 || opt_delta == u64::MAX) {
        s.bw_peak = (size as f64 * ticks_per_sec) / (opt_delta as f64 * unit.divisor());
    }
    Some(s)
}

/// perftest's average bandwidth and message rate of `n` messages of `size`
/// bytes posted from stamp `first` and completed by stamp `last` (the
/// peak left 0, as perftest prints it without peak measurement).
pub fn bw_average(
    first: u64,
    last: u64,
    n: u64,
    size: u64,
    ticks_per_sec: f64,
    unit: BwUnit,
) -> Option<BwStats> {
    if n == 0 {
        return None;
    }
    let sum = last.saturating_sub(first) as f64;
    let bytes = size as f64 * n as f64 * ticks_per_sec;
    Some(BwStats {
        bw_peak: 0.0,
        bw_avg: bytes / (sum * unit.divisor()),
        msg_rate_mpps: (n as f64 * ticks_per_sec) / (sum * 1e6),
        unit,
        gbps_avg: bytes / (sum * GBS_DIVISOR),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Ten ping-pong iterations → 9 deltas. Ticks are ns, 1000 per µs,
    /// rtt_factor 2 (WRITE): every value is divided by 2000.
    #[test]
    fn latency_drop_rule_median_percentiles() {
        // Deltas (ns) in posting order; sorted they are
        // [2000, 2000, 2200, 2400, 2400, 2600, 3000, 9000, 50000].
        let deltas = [2400u64, 2000, 50000, 2200, 2600, 2000, 9000, 2400, 3000];
        // Build tposted from the deltas so the public path is exercised.
        let mut tp = vec![1_000u64];
        for d in deltas {
            tp.push(tp.last().unwrap() + d);
        }
        let s = lat_stats_from_posted(&tp, 1000.0, 2).unwrap();
        // 9 deltas, drop 2 → n = 7 kept: [2000,2000,2200,2400,2400,2600,3000].
        assert_eq!(s.kept, 7);
        // t_min = 2000/2000 = 1.0 µs.
        assert!(close(s.t_min, 1.0));
        // t_max = delta[n] = delta[7] = 9000 → 4.5 µs (the second largest;
        // 50000 is never shown).
        assert!(close(s.t_max, 4.5));
        // n = 7 odd → (n-1)%2 == 0 → median = delta[3] = 2400 → 1.2 µs.
        assert!(close(s.t_typical, 1.2));
        // avg = (2000+2000+2200+2400+2400+2600+3000)/7/2000
        //     = 16600/14000 = 1.185714...
        assert!(close(s.t_avg, 16600.0 / 14000.0));
        // Deviations avg - x are all in (-0.32, +0.19) µs → truncated to 0
        // → stdev 0 (perftest's integer quirk).
        assert!(close(s.t_stdev, 0.0));
        // 99%: ceil(7*0.99) = ceil(6.93) = 7 → delta[7] = 9000 → 4.5.
        assert!(close(s.p99, 4.5));
        // 99.9%: ceil(6.993) = 7 → 4.5 as well.
        assert!(close(s.p99_9, 4.5));
    }

    #[test]
    fn median_even_count_is_integer_mean() {
        // 6 deltas, drop 2 → n = 4 (even): (n-1)%2 = 1 → (delta[2]+delta[1])/2
        // in integer ticks: sorted [10, 11, 14, 20, 99, 100] → (14+11)/2 = 12
        // (12.5 truncated). READ: rtt_factor 1, 1 tick per µs → 12.0 µs.
        let s = lat_stats(&[100, 14, 10, 99, 11, 20], 1.0, 1).unwrap();
        assert_eq!(s.kept, 4);
        assert!(close(s.t_typical, 12.0));
        // avg = (10+11+14+20)/4 = 13.75; deviations 3.75, 2.75, -0.25, -6.25
        // truncate to 3, 2, 0, -6 → squares 9+4+0+36 = 49 → sqrt(49/4) = 3.5.
        assert!(close(s.t_avg, 13.75));
        assert!(close(s.t_stdev, 3.5));
        // t_max = delta[4] = 99; 99% index ceil(3.96) = 4 → 99.
        assert!(close(s.t_max, 99.0));
        assert!(close(s.p99, 99.0));
    }

    #[test]
    fn percentile_index_on_1000_iterations() {
        // 1000 iterations → 999 deltas valued 1..=999 ns (already sorted);
        // n = 997; 99% index = ceil(997*0.99) = ceil(987.03) = 988 →
        // value 989; 99.9% index = ceil(996.003) = 997 → value 998;
        // t_max = delta[997] = 998. rtt 1, 1 tick/µs.
        let d: Vec<u64> = (1..=999).collect();
        let s = lat_stats(&d, 1.0, 1).unwrap();
        assert_eq!(s.kept, 997);
        assert!(close(s.p99, 989.0));
        assert!(close(s.p99_9, 998.0));
        assert!(close(s.t_max, 998.0));
        // n = 997 odd → median delta[498] = 499.
        assert!(close(s.t_typical, 499.0));
    }

    #[test]
    fn too_few_samples() {
        assert!(lat_stats(&[1, 2], 1.0, 1).is_none());
    }

    #[test]
    fn bandwidth_units() {
        // 4 messages of 65536 B, ticks = ns (1e9 per s). Posted at 0,
        // completions at 10,20,30,40 µs → total 40,000 ns for 262144 B.
        let tp = [0u64, 0, 0, 0];
        let tc = [10_000u64, 20_000, 30_000, 40_000];
        let g = bw_stats(&tp, &tc, 65536, 1e9, BwUnit::Gbps, 1, 1, false).unwrap();
        // avg Gb/s = 262144 * 1e9 / (40000 * 125e6) = 52.4288.
        assert!(close(g.bw_avg, 52.4288));
        // MsgRate = 4 * 1e9 / (40000 * 1e6) = 0.1 Mpps.
        assert!(close(g.msg_rate_mpps, 0.1));
        // Peak: i = 0, j = 0..3: t = 10000/1, 20000/2, 30000/3, 40000/4 =
        // 10000 each; i=1: (20000-0)/1 = 20000, ... → min 10000 ticks per
        // message → 65536*1e9/(10000*125e6) = 52.4288.
        assert!(close(g.bw_peak, 52.4288));
        let m = bw_stats(&tp, &tc, 65536, 1e9, BwUnit::MBps, 1, 1, false).unwrap();
        // MB/sec = 262144 * 1e9 / (40000 * 1048576) = 6250.
        assert!(close(m.bw_avg, 6250.0));
        assert!(close(m.gbps_avg, 52.4288));
    }

    #[test]
    fn bandwidth_peak_cq_moderation_granularity() {
        // 5 messages, cq_mod 2: completions are only "seen" at j = 1, 3
        // plus the last (n % cq_mod != 0 → j = 4).
        // tposted = [0, 1, 2, 3, 4] ns, tcompleted = [10, 11, 30, 31, 32].
        // i=0: j=1 → (11-0)/2 = 5; j=3 → 31/4 = 7; last j=4 → 32/5 = 6.
        // i=1: j=1 → (11-1)/1 = 10; j=3 → 30/3 = 10; j=4 → 31/4 = 7.
        // i=2: j=3 → (31-2)/2 = 14; j=4 → 30/3 = 10. i=3: j=3 → 28; j=4 → 29/2 = 14.
        // i=4: j=5 out; last → 28. Min = 5 ticks.
        let tp = [0u64, 1, 2, 3, 4];
        let tc = [10u64, 11, 30, 31, 32];
        let s = bw_stats(&tp, &tc, 1000, 1e9, BwUnit::Gbps, 1, 2, false).unwrap();
        // peak = 1000 * 1e9 / (5 * 125e6) = 1600 Gb/s.
        assert!(close(s.bw_peak, 1600.0));
        // avg = 5000 * 1e9 / (32 * 125e6) = 1250 Gb/s.
        assert!(close(s.bw_avg, 1250.0));
        let np = bw_stats(&tp, &tc, 1000, 1e9, BwUnit::Gbps, 1, 2, true).unwrap();
        assert_eq!(np.bw_peak, 0.0);
    }
}
