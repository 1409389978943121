//! Soak: random operations over many RC QPs with packet loss; every WR
//! completes exactly once, successfully, and every byte arrives as sent.
//! Determinism: the same seed gives the same event trace.

use bareverbs::cqe::{WcOpcode, WcStatus};
use bareverbs::qp::QpType;
use bareverbs::rq::RecvWr;
use bareverbs::sq::{SendFlags, SendOp, SendWr};
use bareverbs_sim::harness::{connect, ConnOpts, Endpoint, EpConfig};
use bareverbs_sim::{Counters, Fabric, FaultPlan, Rng, TraceEvent};
use std::collections::HashMap;

type Ep = Endpoint<512, 512, 2048>;

const SLOT: usize = 2048;
const DEPTH: u64 = 16;
const RECV_BASE: usize = SLOT * DEPTH as usize;
const COUNTER: usize = 2 * RECV_BASE;

#[derive(Clone)]
enum Check {
    /// Remote bytes at (offset) must equal.
    Remote(usize, Vec<u8>),
    /// Local bytes at (offset) must equal.
    Local(usize, Vec<u8>),
    /// The fetched value (local, big-endian) must equal.
    Fetched(usize, u64),
    /// A SEND: the receive completion checks it.
    Sent,
}

struct Outcome {
    trace: Vec<TraceEvent>,
    counters: Counters,
    completed: u64,
}

fn soak(seed: u64, total: u64, qps: usize, loss: f64, trace: bool) -> Outcome {
    let f = Fabric::new(seed);
    f.set_faults(FaultPlan {
        loss,
        duplicate: loss / 4.0,
        ..FaultPlan::default()
    });
    f.set_auto_progress(false);
    if trace {
        f.enable_trace();
    }
    let (da, db) = (f.add_device(), f.add_device());
    let cfg = EpConfig {
        max_send_sge: 2,
        max_recv_sge: 1,
        buf_len: COUNTER + 64,
        ..EpConfig::new(QpType::Rc)
    };
    let opts = ConnOpts {
        timeout: 6,
        retry_cnt: 7,
        ..ConnOpts::default()
    };
    let mut a: Vec<Ep> = Vec::new();
    let mut b: Vec<Ep> = Vec::new();
    for _ in 0..qps {
        let mut x = Ep::new(&da, &cfg).unwrap();
        let mut y = Ep::new(&db, &cfg).unwrap();
        connect(&mut x, &mut y, &opts).unwrap();
        a.push(x);
        b.push(y);
    }
    let mut rng = Rng::new(seed ^ 0xabcdef);
    let mut next_id = vec![0u64; qps];
    let mut done = vec![0u64; qps];
    let mut pending: Vec<HashMap<u64, Check>> = vec![HashMap::new(); qps];
    let mut recv_expect: Vec<HashMap<u64, Vec<u8>>> = vec![HashMap::new(); qps];
    let mut faa_sum = vec![0u64; qps];
    let mut posted = 0u64;
    let mut completed = 0u64;
    while completed < total {
        for q in 0..qps {
            while posted < total && next_id[q] - done[q] < DEPTH {
                let id = next_id[q];
                let slot = (id % DEPTH) as usize;
                let off = slot * SLOT;
                let len = 1 + rng.below(SLOT as u64) as u32;
                let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                let kind = rng.below(4);
                let (x, y) = (&mut a[q], &mut b[q]);
                let split = len / 2;
                let sgl2 = [
                    x.sge(off as u64, split.max(1).min(len)),
                    x.sge(
                        off as u64 + split.max(1).min(len) as u64,
                        len - split.max(1).min(len),
                    ),
                ];
                let sgl = if len > 1 { &sgl2[..] } else { &sgl2[..1] };
                let (op, check) = match kind {
                    0 => {
                        x.write(off, &data);
                        (
                            SendOp::Write {
                                remote_addr: y.addr(off as u64),
                                rkey: y.mr().rkey(),
                            },
                            Check::Remote(off, data),
                        )
                    }
                    1 => {
                        y.write(off, &data);
                        (
                            SendOp::Read {
                                remote_addr: y.addr(off as u64),
                                rkey: y.mr().rkey(),
                            },
                            Check::Local(off, data),
                        )
                    }
                    2 => {
                        x.write(off, &data);
                        let roff = RECV_BASE + slot * SLOT;
                        let rs = [y.sge(roff as u64, SLOT as u32)];
                        // SAFETY: inside the endpoint's registered buffer.
                        unsafe {
                            y.post_recv_raw(&[RecvWr {
                                wr_id: id,
                                sgl: &rs,
                            }])
                        }
                        .unwrap();
                        recv_expect[q].insert(id, data);
                        (SendOp::Send, Check::Sent)
                    }
                    _ => {
                        let add = rng.below(1000);
                        let before = faa_sum[q];
                        faa_sum[q] += add;
                        (
                            SendOp::FetchAdd {
                                remote_addr: y.addr(COUNTER as u64),
                                rkey: y.mr().rkey(),
                                add,
                            },
                            Check::Fetched(off, before),
                        )
                    }
                };
                let one = [x.sge(off as u64, 8)];
                let sg = if kind == 3 { &one[..] } else { sgl };
                let wr = SendWr::new(id, op, sg).with_flags(SendFlags::SIGNALED);
                x.post_send(&[wr], &[*x.mr()]).unwrap();
                pending[q].insert(id, check);
                next_id[q] += 1;
                posted += 1;
            }
        }
        f.run_until_idle();
        for q in 0..qps {
            let (x, y) = (&mut a[q], &mut b[q]);
            for wc in y.drain() {
                assert_eq!(wc.status, WcStatus::Success, "recv {wc:?}");
                assert_eq!(wc.opcode, WcOpcode::Recv);
                let want = recv_expect[q]
                    .remove(&wc.wr_id)
                    .expect("receive completes once");
                assert_eq!(wc.byte_len as usize, want.len());
                let roff = RECV_BASE + (wc.wr_id % DEPTH) as usize * SLOT;
                assert_eq!(y.read(roff, want.len()), want, "SEND bytes");
            }
            for wc in x.drain() {
                assert_eq!(wc.status, WcStatus::Success, "send {wc:?}");
                let check = pending[q]
                    .remove(&wc.wr_id)
                    .expect("WR completes exactly once");
                match check {
                    Check::Remote(off, d) => assert_eq!(y.read(off, d.len()), d, "WRITE bytes"),
                    Check::Local(off, d) => assert_eq!(x.read(off, d.len()), d, "READ bytes"),
                    Check::Fetched(off, v) => {
                        assert_eq!(x.read(off, 8), v.to_be_bytes(), "FAA value")
                    }
                    Check::Sent => {}
                }
                done[q] += 1;
                completed += 1;
            }
        }
    }
    for q in 0..qps {
        assert!(pending[q].is_empty());
        assert!(recv_expect[q].is_empty(), "every SEND was received");
        assert_eq!(b[q].read(COUNTER, 8), faa_sum[q].to_be_bytes());
    }
    let mut counters = da.counters();
    counters.add(&db.counters());
    Outcome {
        trace: f.trace(),
        counters,
        completed,
    }
}

#[test]
fn soak_100k_ops_8_qps_1pct_loss() {
    let o = soak(42, 100_000, 8, 0.01, false);
    assert_eq!(o.completed, 100_000);
    assert!(
        o.counters.retransmits > 0,
        "loss must have caused retransmissions"
    );
    println!("soak counters: {:?}", o.counters);
}

#[test]
fn same_seed_same_trace() {
    let x = soak(7, 3_000, 4, 0.02, true);
    let y = soak(7, 3_000, 4, 0.02, true);
    assert!(x.trace.len() > 1000);
    assert_eq!(x.trace, y.trace);
    assert_eq!(x.counters, y.counters);
    let z = soak(8, 3_000, 4, 0.02, true);
    assert_ne!(x.trace, z.trace, "a different seed gives a different run");
}
