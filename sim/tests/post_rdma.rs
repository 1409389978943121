//! `Endpoint::post_rdma` against `Endpoint::post_send`: twin fabrics, the
//! same random batches (in-bounds, out-of-bounds, wrong-key and empty
//! SGEs, READs on a buffer without LOCAL_WRITE, full queues) posted one
//! way on each; results, ring bytes, completions, memory and the device
//! state must agree.

use bareverbs::cqe::WorkCompletion;
use bareverbs::mr::Access;
use bareverbs::qp::QpType;
use bareverbs::sq::{RdmaOp, RdmaWr, Sge};
use bareverbs_sim::harness::{connect, ConnOpts, Endpoint, EpConfig};
use bareverbs_sim::{Fabric, Rng};

type Ep = Endpoint<32, 32, 256>;

const BUF: usize = 8192;

struct Side {
    f: Fabric,
    a: Ep,
    b: Ep,
}

fn side(seed: u64, local_write: bool) -> Side {
    let f = Fabric::new(seed);
    let d = f.add_device();
    let cfg = EpConfig {
        max_send_sge: 2,
        buf_len: BUF,
        blueflame: false,
        mr_access: if local_write {
            Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ
        } else {
            Access::REMOTE_WRITE | Access::REMOTE_READ
        },
        ..EpConfig::new(QpType::Rc)
    };
    let mut a = Ep::new(&d, &cfg).unwrap();
    let mut b = Ep::new(&d, &cfg).unwrap();
    // SENDs find no receive: a bounded RNR retry keeps the runs short.
    let opts = ConnOpts {
        rnr_retry: 1,
        ..ConnOpts::default()
    };
    connect(&mut a, &mut b, &opts).unwrap();
    let fill: Vec<u8> = (0..BUF).map(|i| (i * 31) as u8).collect();
    a.write(0, &fill);
    Side { f, a, b }
}

fn ring(e: &Ep) -> Vec<u8> {
    let r = e.sq_ring();
    let mut v = vec![0u8; r.len];
    // SAFETY: the SQ ring is live DMA memory of `r.len` bytes while the
    // endpoint lives; copied out by a raw copy.
    unsafe { std::ptr::copy_nonoverlapping(r.cpu.as_ptr(), v.as_mut_ptr(), r.len) };
    v
}

fn sge_of(rng: &mut Rng, e: &Ep) -> Sge {
    let len = rng.below(200) as u32;
    let off = rng.below(BUF as u64 - 200);
    let mut s = Sge {
        addr: e.addr(off),
        length: len,
        lkey: e.mr().lkey(),
    };
    match rng.below(12) {
        0 => s.addr = e.addr(BUF as u64 - 4), // runs past the end (len > 4)
        1 => s.lkey ^= 0x100,
        2 => s.length = 0,
        3 => s.addr = e.addr(0).wrapping_sub(8),
        _ => {}
    }
    s
}

#[test]
fn post_rdma_matches_post_send() {
    for seed in 0..60u64 {
        let mut rng = Rng::new(seed);
        let lw = rng.chance(0.7);
        let (mut x, mut y) = (side(seed, lw), side(seed, lw));
        assert_eq!(
            (x.a.addr(0), x.a.mr().lkey()),
            (y.a.addr(0), y.a.mr().lkey())
        );
        assert_eq!(
            (x.b.addr(0), x.b.mr().rkey()),
            (y.b.addr(0), y.b.mr().rkey())
        );
        for step in 0..60 {
            let op = [RdmaOp::Write, RdmaOp::Read, RdmaOp::Send][rng.below(3) as usize];
            let n = 1 + rng.below(3) as usize;
            let sgls: Vec<Vec<Sge>> = (0..n)
                .map(|_| {
                    let k = 1 + rng.below(2) as usize;
                    (0..k).map(|_| sge_of(&mut rng, &x.a)).collect()
                })
                .collect();
            let roff = rng.below(BUF as u64 - 512);
            let wrs: Vec<RdmaWr<'_>> = sgls
                .iter()
                .enumerate()
                .map(|(i, sgl)| RdmaWr {
                    wr_id: (step * 8 + i) as u64,
                    remote_addr: x.b.addr(roff),
                    rkey: x.b.mr().rkey(),
                    sgl,
                    signaled: rng.chance(0.8),
                })
                .collect();
            let sends: Vec<_> = wrs.iter().map(|w| w.to_send_wr(op)).collect();
            let mr = *y.a.mr();
            let r1 = x.a.post_rdma(op, &wrs);
            let r2 = y.a.post_send(&sends, &[mr]);
            let ctx = format!("seed {seed} step {step} {op:?}");
            assert_eq!(r1, r2, "{ctx}: result");
            assert!(ring(&x.a) == ring(&y.a), "{ctx}: ring bytes");
            if rng.chance(0.5) {
                let (mut w1, mut w2) = (
                    [WorkCompletion::default(); 64],
                    [WorkCompletion::default(); 64],
                );
                let (k1, k2) = (x.a.poll(&mut w1), y.a.poll(&mut w2));
                assert_eq!(w1[..k1], w2[..k2], "{ctx}: completions");
            }
            assert!(x.b.read(0, BUF) == y.b.read(0, BUF), "{ctx}: remote memory");
            assert!(x.a.read(0, BUF) == y.a.read(0, BUF), "{ctx}: local memory");
            assert_eq!(
                x.f.state_fingerprint(),
                y.f.state_fingerprint(),
                "{ctx}: state"
            );
        }
    }
}
