//! The data path end to end on memory-backed queues: post send WRs, let a
//! test "device" write the requester CQEs the hardware would (one per
//! signaled WQE, wqe_counter = the WQE's first WQEBB), poll them back
//! through a `QueuePair`, and check against a simple model:
//!
//! * every signaled WR completes exactly once, in order, with its wr_id;
//! * a completion retires every earlier unsignaled WR ([ref §1.10](bareverbs::reference));
//! * queue full is an error and never overwrites a WQE in flight;
//! * the doorbell record always holds `cur_post & 0xffff` ([ref §4.1](bareverbs::reference)).

use bareverbs::cq::CompletionQueue;
use bareverbs::cqe::{Cqe64, CqeSize, WcOpcode, WcStatus, WorkCompletion};
use bareverbs::mr::{Access, MemoryRegion};
use bareverbs::platform::{DmaBuf, MemUar};
use bareverbs::qp::QpType;
use bareverbs::queue_pair::QueuePair;
use bareverbs::rq::{RecvQueue, RecvWr, RqConfig};
use bareverbs::sizing::{qp_layout, DeviceCaps, QpCaps, SendOps};
use bareverbs::sq::SqSlot;
use bareverbs::sq::{PostErrorKind, SendFlags, SendOp, SendQueue, SendWr, Sge, SqConfig};
use bareverbs_sim::rng::Rng;
use std::ptr::NonNull;

/// Page-aligned zeroed test memory standing in for DMA memory.
struct Mem {
    buf: Vec<u64>,
    iova: u64,
}

impl Mem {
    fn new(bytes: usize, iova: u64) -> Self {
        Mem {
            buf: vec![0; bytes.div_ceil(8) + 512],
            iova,
        }
    }
    fn dma(&mut self, len: usize) -> DmaBuf {
        let p = self.buf.as_mut_ptr() as *mut u8;
        let off = p.align_offset(4096);
        DmaBuf {
            cpu: NonNull::new(p.wrapping_add(off)).unwrap(),
            iova: self.iova,
            len,
        }
    }
}

fn read(b: DmaBuf, off: usize, len: usize) -> Vec<u8> {
    // SAFETY: test memory owned by a live `Mem`; no queue is running.
    unsafe { std::slice::from_raw_parts(b.cpu.as_ptr().add(off), len).to_vec() }
}

const SQ_BBS: usize = 64;
const CQ_N: usize = 256;

#[test]
fn random_post_poll_sequences_match_the_model() {
    // Geometry from the real sizing rules: RC, RDMA-only ops, 4 SGEs.
    let caps = DeviceCaps::DEFAULT;
    let req = QpCaps::new(QpType::Rc)
        .send(24, 4, 0)
        .recv(16, 1)
        .ops(SendOps::RDMA_ONLY);
    let layout = qp_layout(&req, &caps).expect("geometry fits");
    assert_eq!(
        layout.sq.wqe_cnt as usize, SQ_BBS,
        "test assumes a 64-WQEBB ring"
    );

    let mut ring_mem = Mem::new(SQ_BBS * 64, 0x10_0000);
    let mut db_mem = Mem::new(64, 0x20_0000);
    let mut cq_mem = Mem::new(CQ_N * 64, 0x30_0000);
    let mut cqdb_mem = Mem::new(64, 0x40_0000);
    let mut rq_mem = Mem::new(16 * 16, 0x50_0000);
    let ring = ring_mem.dma(SQ_BBS * 64);
    let dbrec = db_mem.dma(8);
    let cq_ring = cq_mem.dma(CQ_N * 64);
    let cq_db = cqdb_mem.dma(8);
    let rq_ring = rq_mem.dma(16 * 16);

    let cfg = SqConfig::from_layout(0x00_1234, &layout).atomics(true);
    // SAFETY: each region is exclusively owned test memory outliving the
    // queues (the `Mem`s live until the end of the test).
    let sq = unsafe {
        SendQueue::new(
            ring,
            dbrec,
            MemUar::default(),
            cfg,
            [SqSlot::default(); SQ_BBS],
        )
    }
    .unwrap();
    // SAFETY: as above.
    let rq = unsafe {
        RecvQueue::new(
            rq_ring,
            dbrec,
            RqConfig {
                wqe_shift: 4,
                max_gs: 1,
                max_post: 16,
            },
            [bareverbs::rq::RqSlot::default(); 16],
        )
    }
    .unwrap();
    let mut qp = QueuePair {
        qpn: 0x1234,
        uidx: 7,
        cqe_version: 1,
        sq,
        rq: Some(rq),
    };
    qp.sq.enable();
    qp.rq.as_mut().unwrap().enable();
    // SAFETY: as above.
    let mut cq =
        unsafe { CompletionQueue::<CQ_N>::new(cq_ring, cq_db, 9, CqeSize::B64, 1) }.unwrap();
    cq.init_ring();

    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let mut next_id = 1u64;
    // Model: WRs posted and not yet retired, with (wr_id, first WQEBB, signaled).
    let mut in_flight: std::collections::VecDeque<(u64, u32, bool)> = Default::default();
    let mut hw_pi = 0u32; // CQE producer index of the fake device
    let mut completed = Vec::new();
    let mut expected = Vec::new();
    let mut data = Mem::new(0x4000, 0x9000_0000);
    let data_buf = data.dma(0x4000);
    // SAFETY: `data` is test memory that outlives every posted WR; the
    // fake device never touches it.
    let mrs = [unsafe {
        MemoryRegion::new(
            data_buf.cpu,
            data_buf.iova,
            0x4000,
            0x55,
            0x56,
            Access::from_bits_retain(0xf),
        )
    }];
    let sges: Vec<Sge> = (0..4)
        .map(|i| mrs[0].sge(i * 0x1000, 64).unwrap())
        .collect();

    for _round in 0..4000 {
        // Post a batch of 1..6 WRs.
        let n = 1 + rng.below(6) as usize;
        let mut wrs = Vec::new();
        for _ in 0..n {
            let k = rng.below(5) as usize;
            let op = match rng.below(3) {
                0 => SendOp::Write {
                    remote_addr: 0x7000,
                    rkey: 3,
                },
                1 => SendOp::Send,
                _ => SendOp::Read {
                    remote_addr: 0x7000,
                    rkey: 3,
                },
            };
            let mut flags = SendFlags::empty();
            if rng.below(4) == 0 {
                flags |= SendFlags::SIGNALED;
            }
            wrs.push(SendWr::new(next_id, op, &sges[..k]).with_flags(flags));
            next_id += 1;
        }
        let before_ring = read(ring, 0, SQ_BBS * 64);
        let starts: Vec<u32> = {
            // Where each WQE would start if all were posted.
            let mut p = qp.sq.cur_post();
            wrs.iter()
                .map(|w| {
                    let s = p;
                    let base = if matches!(w.op, SendOp::Send) { 1 } else { 2 };
                    p += (base + w.sgl.len() as u32).div_ceil(4);
                    s
                })
                .collect()
        };
        let outstanding = in_flight.len() as u32;
        let r = qp.sq.post_send(&wrs, &mrs);
        let posted = match r {
            Ok(()) => n,
            Err(e) => {
                match e.kind {
                    PostErrorKind::QueueFull { max_post, .. } => {
                        assert_eq!(outstanding as usize + e.index, max_post as usize)
                    }
                    k => panic!("unexpected {k:?}"),
                }
                e.index
            }
        };
        // Nothing of a refused WR reached the ring; in-flight WQEs intact.
        let after_ring = read(ring, 0, SQ_BBS * 64);
        let written_end = if posted == 0 {
            starts[0]
        } else {
            qp.sq.cur_post()
        };
        // Every WQEBB this batch did not write keeps its bytes (in-flight
        // WQEs included).
        for bb in written_end..starts[0] + SQ_BBS as u32 {
            let o = (bb as usize % SQ_BBS) * 64;
            assert_eq!(
                after_ring[o..o + 64],
                before_ring[o..o + 64],
                "WQEBB {bb} changed"
            );
        }
        for (i, w) in wrs.iter().take(posted).enumerate() {
            in_flight.push_back((w.wr_id, starts[i], w.flags.contains(SendFlags::SIGNALED)));
        }
        assert_eq!(read(dbrec, 4, 4), (qp.sq.cur_post() & 0xffff).to_be_bytes());

        // The device completes a random prefix of in-flight WRs: one CQE
        // per signaled WR, none for unsignaled ones.
        let done = rng.below(in_flight.len() as u64 + 1) as usize;
        let mut last_signaled = None;
        for (j, &(id, start, sig)) in in_flight.iter().take(done).enumerate() {
            if sig {
                let mut c = Cqe64::ZERO;
                c.set_srqn_uidx(7);
                c.set_sop_drop_qpn((0x08 << 24) | 0x1234);
                c.set_wqe_counter(start as u16);
                let owner = ((hw_pi / CQ_N as u32) & 1) as u8;
                c.set_op_own_parts(0, 0, false, owner);
                let slot = (hw_pi as usize % CQ_N) * 64;
                // SAFETY: writing a CQE into the test CQ ring as the
                // device would (64 bytes inside the ring).
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        c.as_bytes().as_ptr(),
                        cq_ring.cpu.as_ptr().add(slot),
                        64,
                    )
                };
                hw_pi += 1;
                expected.push(id);
                last_signaled = Some(j);
            }
        }
        if let Some(j) = last_signaled {
            in_flight.drain(..=j);
        }
        let mut wcs = [WorkCompletion::default(); 8];
        loop {
            let k = cq.poll(&mut qp, &mut wcs).expect("poll");
            for wc in &wcs[..k] {
                assert_eq!(wc.status, WcStatus::Success);
                assert_eq!(wc.opcode, WcOpcode::RdmaWrite);
                completed.push(wc.wr_id);
            }
            if k < wcs.len() {
                break;
            }
        }
        assert_eq!(qp.sq.outstanding() as usize, in_flight.len());
    }
    assert_eq!(completed, expected);
    assert!(completed.len() > 1000, "{} completions", completed.len());

    // Receive side: post and complete through the same resolver.
    let rwr = [RecvWr {
        wr_id: 0xabc,
        sgl: &[],
    }];
    // SAFETY: empty scatter list; the device never writes.
    unsafe { qp.rq.as_mut().unwrap().post_recv_raw(&rwr) }.unwrap();
    let mut c = Cqe64::ZERO;
    c.set_srqn_uidx(7);
    c.set_byte_cnt(0);
    c.set_wqe_counter(0);
    c.set_op_own_parts(2, 0, false, ((hw_pi / CQ_N as u32) & 1) as u8);
    // SAFETY: as above.
    unsafe {
        std::ptr::copy_nonoverlapping(
            c.as_bytes().as_ptr(),
            cq_ring.cpu.as_ptr().add((hw_pi as usize % CQ_N) * 64),
            64,
        )
    };
    let mut wcs = [WorkCompletion::default(); 2];
    assert_eq!(cq.poll(&mut qp, &mut wcs).unwrap(), 1);
    assert_eq!(wcs[0].wr_id, 0xabc);
    assert_eq!(wcs[0].opcode, WcOpcode::Recv);
}
