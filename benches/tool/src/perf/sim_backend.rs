//! `--device sim`: the perftest engine ([`super::engine`]) on two
//! simulated ConnectX joined by the in-process fabric, the requester on
//! one, the responder on the other. Objects are created directly on the
//! simulated devices (no firmware command path, so no mailbox limit on
//! memory keys: any message size registers in one region); the QPs have
//! the exact mlx5 geometry of the run's request (the same sizing as
//! `fw-sim` and hardware) and the data path is the core's queues. Times
//! are the simulator's modeled (virtual) times.

use super::cmd_backend::{FabricTimer, Side};
use super::config::PerfRunConfig;
use super::engine::{Pair, PairAreas, PerfDevice, Plan, SideOps, Slot, Timer, QKEY, RQ_WQES};
use super::flags::{Conn, PerfArgs};
use anyhow::anyhow;
use bareverbs::cq::DynCompletionQueue;
use bareverbs::cqe::CqeSize;
use bareverbs::error::Chain;
use bareverbs::mr::Access;
use bareverbs::mr::MemoryRegion;
use bareverbs::platform::{DmaBuf, BF_OFFSET};
use bareverbs::qp::QpType;
use bareverbs::qp::{QpAttrMask, QpState};
use bareverbs::queue_pair::QueuePair;
use bareverbs::rq::{RecvQueue, RqConfig, RqSlot};
use bareverbs::sizing::DeviceCaps;
use bareverbs::sq::{BlueFlame, SendQueue, SqConfig, SqSlot};
use bareverbs::wqe::AddressVector;
use bareverbs_sim::objects::QpAttr;
use bareverbs_sim::{
    CqHandle, Device, Fabric, ModelParams, Pd, QpHandle, QpInit, SimError, SimUar,
};

/// The direct simulator device.
#[derive(Debug)]
pub struct SimBackend {
    params: ModelParams,
    seed: u64,
    timer: FabricTimer,
    req: Device,
    resp: Device,
}

const NOTE: &str = "times are MODELED (virtual clock of the simulator's cost model), not \
                    measured on a NIC";

impl SimBackend {
    /// Two devices on a fabric seeded with `seed`, cost model `params`.
    pub fn new(seed: u64, params: ModelParams) -> Self {
        let f = Fabric::new(seed);
        f.set_params(params);
        f.set_auto_progress(false);
        let req = f.add_device();
        let resp = f.add_device();
        let timer = FabricTimer::with_nics(
            f,
            vec![("requester", req.clone()), ("responder", resp.clone())],
            NOTE.into(),
        );
        SimBackend {
            params,
            seed,
            timer,
            req,
            resp,
        }
    }
}

impl Default for SimBackend {
    fn default() -> Self {
        Self::new(1, ModelParams::default())
    }
}

fn sim_err(what: &str) -> impl Fn(SimError) -> anyhow::Error + '_ {
    move |e| match e {
        SimError::NoMemory => anyhow!("{what}: the simulator is out of memory"),
        e => anyhow!("{what}: {}", Chain::new(&e)),
    }
}

/// RESET → INIT → RTR → RTS toward the peer (LID, QPN), or UD's walk.
fn to_rts(
    dev: &Device,
    qpn: u32,
    conn: Conn,
    peer: (u16, u32),
    mtu_code: u8,
) -> Result<(), SimError> {
    use QpAttrMask as M;
    if conn == Conn::Ud {
        let mut a = QpAttr {
            qp_state: QpState::Init,
            qkey: QKEY,
            port_num: 1,
            ..QpAttr::default()
        };
        dev.modify_qp(qpn, &a, M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY)?;
        a.qp_state = QpState::Rtr;
        dev.modify_qp(qpn, &a, M::STATE)?;
        a.qp_state = QpState::Rts;
        a.sq_psn = 0;
        return dev.modify_qp(qpn, &a, M::STATE | M::SQ_PSN);
    }
    let rc = conn == Conn::Rc;
    let psn = 0x1234;
    let mut a = QpAttr {
        qp_state: QpState::Init,
        qp_access_flags: Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC,
        port_num: 1,
        ..QpAttr::default()
    };
    dev.modify_qp(
        qpn,
        &a,
        M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS,
    )?;
    a.qp_state = QpState::Rtr;
    a.dlid = peer.0;
    a.path_mtu = mtu_code;
    a.dest_qp_num = peer.1;
    a.rq_psn = psn;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = 1;
    let mut m = M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN;
    if rc {
        m |= M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER;
    }
    dev.modify_qp(qpn, &a, m)?;
    a.qp_state = QpState::Rts;
    a.sq_psn = psn;
    // perftest's default qp_timeout (-u): 14, 4.096 µs × 2^14 = 67 ms.
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 16;
    let m = if rc {
        M::STATE | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::SQ_PSN | M::MAX_QP_RD_ATOMIC
    } else {
        M::STATE | M::SQ_PSN
    };
    dev.modify_qp(qpn, &a, m)
}

/// A side's queues, its QPN and its two areas of slots.
type SideParts = (Box<Side<bareverbs_sim::SimUar>>, u32, [Vec<Slot>; 2]);

/// One side: a QP with the plan's geometry, its CQ and `areas` areas of
/// slots registered in one region each.
fn side(
    dev: &Device,
    cfg: &PerfRunConfig,
    plan: &Plan,
    areas: [bool; 2],
) -> anyhow::Result<SideParts> {
    let l = &plan.layout;
    let pd = dev.alloc_pd();
    let ncqe = (plan.cap as usize + RQ_WQES).next_power_of_two() as u32;
    let cqh = dev.create_cq(ncqe, 1).map_err(sim_err("creating the CQ"))?;
    let qp_type = QpType::from(cfg.conn);
    let h = dev
        .create_qp(&QpInit {
            qp_type,
            pd,
            send_cq: cqh.cqn,
            recv_cq: cqh.cqn,
            srq: None,
            sq_wqebbs: l.sq.wqe_cnt,
            rq_wqes: l.rq.wqe_cnt,
            rq_wqe_shift: l.rq.wqe_shift,
            uidx: 0,
        })
        .map_err(sim_err("creating the QP"))?;
    let qpn = h.qpn;
    dev.set_uidx(qpn, qpn);
    let (qp, sq_ring) = queue_pair(h, cfg, plan, qp_type)?;
    let cq = completion_queue(&cqh)?;
    let (mrs, out) = message_areas(dev, pd, plan, areas)?;
    Ok((
        Box::new(Side {
            qp,
            cq,
            mrs,
            ring: sq_ring,
            cq_uar: None,
        }),
        qpn,
        out,
    ))
}

/// The core's queues of one simulated QP.
type SimQueuePair = QueuePair<SimUar, Vec<SqSlot>, Vec<RqSlot>>;

/// The core's queues over the simulated QP `h` (CQE version 1, the QPN as
/// user index), and its send ring.
fn queue_pair(
    h: QpHandle,
    cfg: &PerfRunConfig,
    plan: &Plan,
    qp_type: QpType,
) -> anyhow::Result<(SimQueuePair, DmaBuf)> {
    let l = &plan.layout;
    let qpn = h.qpn;
    let sq_ring = h
        .sq_ring
        .ok_or_else(|| anyhow!("the simulated QP has no send ring"))?;
    let rq_ring = h
        .rq_ring
        .ok_or_else(|| anyhow!("the simulated QP has no receive ring"))?;
    let sqc = SqConfig::new(qp_type, l.sq.max_post, cfg.max_send_sge)
        .qpn(qpn)
        .inline(l.sq.max_inline_data)
        .atomics(plan.atomics)
        .blueflame(BlueFlame {
            reg_offset: BF_OFFSET,
            buf_size: 256,
            enabled: true,
            prefer: false,
        });
    // SAFETY: the rings and the doorbell record were allocated by the
    // device for this QP alone and stay allocated while the device lives
    // (the side keeps no reference to them beyond the queues, which are
    // dropped before the fabric); the device only reads the SQ ring.
    let sq = unsafe {
        SendQueue::new(
            sq_ring,
            h.dbrec,
            h.uar,
            sqc,
            vec![SqSlot::default(); l.sq.wqe_cnt as usize],
        )
    }
    .ok_or_else(|| anyhow!("send queue geometry refused by the core"))?;
    let rqc = RqConfig {
        wqe_shift: l.rq.wqe_shift,
        max_gs: l.rq.max_gs,
        max_post: l.rq.max_post,
    };
    // SAFETY: as above; the RQ uses word 0 of the same record.
    let rq = unsafe {
        RecvQueue::new(
            rq_ring,
            h.dbrec,
            rqc,
            vec![RqSlot::default(); l.rq.wqe_cnt as usize],
        )
    }
    .ok_or_else(|| anyhow!("receive queue geometry refused by the core"))?;
    let qp = QueuePair {
        qpn,
        uidx: qpn,
        cqe_version: 1,
        sq,
        rq: Some(rq),
    };
    Ok((qp, sq_ring))
}

/// The core's CQ over the simulated CQ `cqh`, its ring initialised.
fn completion_queue(cqh: &CqHandle) -> anyhow::Result<DynCompletionQueue> {
    // SAFETY: ring and record come from the device's CQ creation and are
    // only written by the device under the CQ protocol.
    let mut cq = unsafe {
        DynCompletionQueue::with_entries(
            cqh.ncqe as usize,
            cqh.ring,
            cqh.dbrec,
            cqh.cqn,
            CqeSize::B64,
            1,
        )
    }
    .map_err(|e| anyhow!("CQ: {e}"))?;
    cq.init_ring();
    Ok(cq)
}

/// The side's message areas (`areas`: which of its two to make), each
/// one buffer registered in one region: (the regions, each area's slots).
fn message_areas(
    dev: &Device,
    pd: Pd,
    plan: &Plan,
    areas: [bool; 2],
) -> anyhow::Result<(Vec<MemoryRegion>, [Vec<Slot>; 2])> {
    let mut mrs: Vec<MemoryRegion> = Vec::new();
    let mut out: [Vec<Slot>; 2] = [Vec::new(), Vec::new()];
    for (k, on) in areas.into_iter().enumerate() {
        if !on {
            continue;
        }
        let len = plan.slots * plan.slot_bytes;
        let buf = dev
            .alloc(len)
            .map_err(sim_err(&format!("allocating a {len}-byte message buffer")))?;
        let mr = dev
            .reg_mr(
                pd,
                buf,
                Access::LOCAL_WRITE
                    | Access::REMOTE_WRITE
                    | Access::REMOTE_READ
                    | Access::REMOTE_ATOMIC,
            )
            .map_err(sim_err("registering the message buffer"))?;
        for i in 0..plan.slots {
            let off = i * plan.slot_bytes;
            out[k].push(Slot {
                // SAFETY: off < len, inside the allocation.
                cpu: unsafe { std::ptr::NonNull::new_unchecked(buf.cpu.as_ptr().add(off)) },
                addr: buf.iova + off as u64,
                key: mr.lkey(),
            });
        }
        mrs.push(mr);
    }
    Ok((mrs, out))
}

impl PerfDevice for SimBackend {
    fn name(&self) -> String {
        "bareverbs-sim (two simulated ConnectX on a fabric, objects created directly)".into()
    }

    fn timing_note(&self) -> String {
        NOTE.into()
    }

    fn refuse(&self, _cfg: &PerfRunConfig, args: &PerfArgs) -> Option<String> {
        if args.blueflame {
            return Some(
                "--device sim does not model --blueflame (it always copies small WQEs \
                 through BlueFlame); use --device fw-sim"
                    .into(),
            );
        }
        if args.model.is_some() {
            return Some("--model applies to --device model only".into());
        }
        None
    }

    fn caps(&self, cfg: &PerfRunConfig) -> DeviceCaps {
        cfg.caps
    }

    fn variance_note(&self) -> Option<String> {
        Some(
            "none modeled: the simulator's cost model is deterministic (no jitter), so latency \
             varies only with loss and retransmission, completions in steady state are evenly \
             spaced and BW peak ~ BW average -- a property of the model, not a measured peak"
                .into(),
        )
    }

    fn inflight_bytes(&self) -> Option<u64> {
        Some(super::engine::SIM_INFLIGHT_BYTES)
    }

    fn timer(&mut self) -> &mut dyn Timer {
        &mut self.timer
    }

    fn open(&mut self, cfg: &PerfRunConfig, plan: &Plan) -> anyhow::Result<Vec<Pair>> {
        let mtu_code = match cfg.mtu {
            256 => 1,
            512 => 2,
            1024 => 3,
            2048 => 4,
            _ => 5,
        };
        let ar = plan.areas;
        let mut pairs = Vec::with_capacity(plan.pairs);
        for _ in 0..plan.pairs {
            let (mut a, qa, [a_src, a_dst]) = side(&self.req, cfg, plan, [ar.a_src, ar.a_dst])?;
            let (mut b, qb, [b_src, b_dst]) = side(&self.resp, cfg, plan, [ar.b_src, ar.b_dst])?;
            let (la, lb) = (self.req.lid(), self.resp.lid());
            to_rts(&self.req, qa, cfg.conn, (lb, qb), mtu_code)
                .map_err(sim_err("connecting the requester QP"))?;
            to_rts(&self.resp, qb, cfg.conn, (la, qa), mtu_code)
                .map_err(sim_err("connecting the responder QP"))?;
            for s in [&mut a, &mut b] {
                s.qp.sq.enable();
                if let Some(rq) = s.qp.rq.as_mut() {
                    rq.enable();
                }
            }
            let areas = PairAreas {
                a_src,
                a_dst,
                b_src,
                b_dst,
            };
            let local = areas.endpoint(true, la, qa, 0x1234);
            let remote = areas.endpoint(false, lb, qb, 0x1234);
            let av = AddressVector::datagram(
                (QKEY as u64) << 32,
                0,
                false,
                0,
                0,
                lb,
                [0; 6],
                0,
                0,
                0,
                [0; 16],
            );
            let a: Box<dyn SideOps> = a;
            let b: Box<dyn SideOps> = b;
            pairs.push(Pair::new(a, b, areas, av, local, remote));
        }
        Ok(pairs)
    }

    fn close(&mut self) -> anyhow::Result<()> {
        // A fresh fabric for the next run; dropping the old one frees
        // every buffer and ring of this run.
        *self = SimBackend::new(self.seed, self.params);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! perftest's tests on the direct simulator device through the one
    //! engine (these were the simulator's own perf-loop tests). Expected
    //! costs come from the cost model's rules (perf ref §2.3).
    use super::*;
    use crate::perf::backend::PerfBackend;
    use crate::perf::flags::test_args;
    use crate::perf::flags::PerfTest;
    use crate::perf::report::PerfRunReport;
    use crate::perf::rules::configs;

    fn run_with(params: ModelParams, test: PerfTest, v: &[&str]) -> PerfRunReport {
        let a = test_args(v);
        let cfg = configs(test, &a).unwrap().remove(0);
        let mut be = SimBackend::new(a.seed, params);
        PerfBackend::run(&mut be, &cfg).unwrap()
    }

    fn run(test: PerfTest, v: &[&str]) -> PerfRunReport {
        run_with(ModelParams::default(), test, v)
    }

    #[test]
    fn write_bw_4k_8qps_1pct_loss_seed7_all_ok() {
        let r = run(
            PerfTest::WriteBw,
            &[
                "-s", "4096", "-n", "20000", "-q", "8", "--loss", "0.01", "--seed", "7",
            ],
        );
        assert_eq!(r.posted, 8 * 20000);
        assert_eq!(r.completed_ok, r.posted);
        assert_eq!(r.completed_err, 0);
        assert_eq!(r.mismatches, 0);
        assert!(r.counters["requester.retransmits"] > 0.0);
        // Modelled bandwidth cannot exceed the 100 Gb/s link.
        assert!(r.bandwidth_gbps > 0.0 && r.bandwidth_gbps <= 100.0);
    }

    #[test]
    fn latency_tests_produce_samples_and_correct_data() {
        for (t, posted) in [
            // Ping-pong: one message each way per iteration.
            (PerfTest::WriteLat, 400),
            (PerfTest::SendLat, 400),
            (PerfTest::ReadLat, 200),
            (PerfTest::AtomicLat, 200),
        ] {
            let size = if t == PerfTest::AtomicLat { "8" } else { "64" };
            let r = run(t, &["-s", size, "-n", "200"]);
            assert_eq!(r.completed_ok, posted, "{t:?}");
            assert_eq!(r.mismatches, 0, "{t:?}");
            assert_eq!(r.latency_samples_ns.len(), 200);
            let avg = r.latency_samples_ns.iter().sum::<f64>() / 200.0;
            // At least the wire latency t_base (600 ns), well under 10 µs.
            assert!(avg > 600.0 && avg < 10_000.0, "{t:?} {avg}");
        }
    }

    #[test]
    fn bigger_wqes_fetch_more_bytes_and_take_longer() {
        // perf ref §2.3: k posted SGEs → W = 32 + 16k bytes → more WQE
        // bytes fetched and (k − 1) extra gathers → more latency.
        let run_k = |k: u32| {
            let (s, k) = ((64 * k).to_string(), k.to_string());
            // 64 bytes per SGE, so the first gather is the same size; not
            // inline (the SGEs are what is measured).
            run(
                PerfTest::WriteLat,
                &[
                    "-s",
                    &s,
                    "-n",
                    "100",
                    "-I",
                    "0",
                    "--sge",
                    &k,
                    "--max-send-sge",
                    &k,
                ],
            )
        };
        let (r1, r16) = (run_k(1), run_k(16));
        // The requester device fetched A's 100 WQEs (B's pongs are the
        // responder's). 1 SGE: 48 B → 1 WQEBB; 16 SGEs: 288 B → 5 WQEBBs.
        let per = |r: &PerfRunReport| r.counters["requester.wqe_bytes_fetched"] / 100.0;
        assert_eq!(per(&r1), 64.0);
        assert_eq!(per(&r16), 320.0);
        let avg = |r: &PerfRunReport| {
            r.latency_samples_ns.iter().sum::<f64>() / r.latency_samples_ns.len() as f64
        };
        let delta = avg(&r16) - avg(&r1);
        // beta * 256 extra bytes + 15 * t_sge = 76.8 + 165 = 241.8 ns (±2 ns of rounding).
        assert!((delta - 241.8).abs() < 2.0, "delta {delta}");
    }

    #[test]
    fn qp_context_cache_misses_when_qps_exceed_capacity() {
        let run_cap = |cap: u32| {
            let params = ModelParams {
                qpc_cache_qps: cap,
                ..Default::default()
            };
            run_with(
                params,
                PerfTest::WriteBw,
                &["-s", "64", "-n", "100", "-q", "4", "-t", "1"],
            )
        };
        let (small, big) = (run_cap(2), run_cap(8));
        assert_eq!(small.completed_ok, 400);
        // Round-robin over 4 QPs with room for 2 contexts: every WQE misses.
        assert_eq!(small.counters["requester.qpc_misses"], 400.0);
        // Room for all: only the first WQE of each QP misses.
        assert_eq!(big.counters["requester.qpc_misses"], 4.0);
        assert!(small.msg_rate_mpps < big.msg_rate_mpps);
    }

    /// Registered buffers are sized once per run, not per iteration: a
    /// 64 MiB WRITE with the default TX depth shares one slot per side.
    #[test]
    fn big_messages_share_one_slot() {
        let r = run(PerfTest::WriteBw, &["-s", "67108864", "-n", "5"]);
        assert_eq!((r.posted, r.completed_ok, r.mismatches), (5, 5, 0));
        assert_eq!(r.counters["slots"], 1.0);
    }
}
