//! One QP pair of a command-path run, step by step ([`open_pair`]): the
//! message areas, the two CQs, the two QPs, connecting them to each other,
//! the queue configurations and the core queues over them, and what
//! perftest prints for each side.

use super::connect::{connect, Link};
use super::memory::area;
use super::objects::Objects;
use super::options::CmdOptions;
use super::side::make_side;
use crate::perf::config::PerfRunConfig;
use crate::perf::engine::{Pair, PairAreas, Plan, QpRejected, SideOps, QKEY, RQ_WQES};
use crate::perftest::format::Endpoint;
use anyhow::anyhow;
use bareverbs::cmd::{Bar0, Clock, CmdError};
use bareverbs::cqe::CqeSize;
use bareverbs::device::{Device, DeviceError, Pd, QpSpec, UarMap};
use bareverbs::error::Chain;
use bareverbs::mr::MemoryRegion;
use bareverbs::platform::{DmaAllocator, BF_OFFSET};
use bareverbs::rq::RqConfig;
use bareverbs::sizing::QpLayout;
use bareverbs::sq::{BlueFlame, SqConfig};
use bareverbs::wqe::AddressVector;

/// Creates one QP pair by command (CQs, QPs, slots), connects it and
/// builds its queues.
#[allow(clippy::too_many_arguments)]
pub(super) fn open_pair<B, C, A>(
    dev: &mut Device<B, C, A>,
    objs: &mut Objects,
    opts: &CmdOptions,
    cfg: &PerfRunConfig,
    plan: &Plan,
    link: &Link,
    pd: Pd,
    q: usize,
) -> anyhow::Result<Pair>
where
    B: Bar0 + UarMap,
    B::Uar: 'static,
    C: Clock,
    A: DmaAllocator,
{
    let mut mrs_a = Vec::new();
    let mut mrs_b = Vec::new();
    let areas = message_areas(dev, objs, pd, plan, &mut mrs_a, &mut mrs_b)?;
    let first_cq = create_cqs(dev, objs, plan, cfg.events.then_some(EVENT_VECTOR))?;
    let first_qp = create_qps(dev, objs, plan, link, pd, q, first_cq)?;
    let (qa, qb) = connect_pair(dev, objs, link, first_qp)?;
    let queues = queue_configs(dev, opts, cfg, plan);
    let (a, b) = make_sides(dev, objs, (first_qp, first_cq), queues, [mrs_a, mrs_b])?;
    let (local, remote) = endpoints(qa, qb, &areas);
    let av = loopback_av(opts.loopback_lid);
    Ok(Pair::new(a, b, areas, av, local, remote))
}

/// Allocates and registers the pair's message areas (A's, then B's); the
/// regions go to `mrs_a` and `mrs_b`.
fn message_areas<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    dev: &mut Device<B, C, A>,
    objs: &mut Objects,
    pd: Pd,
    plan: &Plan,
    mrs_a: &mut Vec<MemoryRegion>,
    mrs_b: &mut Vec<MemoryRegion>,
) -> anyhow::Result<PairAreas> {
    let sb = plan.slot_bytes;
    let n = |on: bool| if on { plan.slots } else { 0 };
    let ar = plan.areas;
    let a_src = area(dev, objs, pd, n(ar.a_src), sb, mrs_a)?;
    let a_dst = area(dev, objs, pd, n(ar.a_dst), sb, mrs_a)?;
    let b_src = area(dev, objs, pd, n(ar.b_src), sb, mrs_b)?;
    let b_dst = area(dev, objs, pd, n(ar.b_dst), sb, mrs_b)?;
    Ok(PairAreas {
        a_src,
        a_dst,
        b_src,
        b_dst,
    })
}

/// Creates the pair's two CQs (A's, then B's); returns the index of A's
/// in `objs.cqs`.
/// The completion vector of event mode (`-e`): the first completion
/// vector, as perftest's `--eq_num` default (`mlx5_0_comp0`) names the
/// first completion EQ.
pub(super) const EVENT_VECTOR: u16 = 1;

fn create_cqs<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    dev: &mut Device<B, C, A>,
    objs: &mut Objects,
    plan: &Plan,
    vector: Option<u16>,
) -> anyhow::Result<usize> {
    // Each CQ holds a completion for every WR its QP may have outstanding
    // (ref §3.7): the run's cap on send WRs plus the receive queue.
    let ncqe = (plan.cap as usize + RQ_WQES).next_power_of_two() as u32;
    let first_cq = objs.cqs.len();
    for _ in 0..2 {
        let cq = dev
            .create_cq_on(ncqe, CqeSize::B64, vector)
            .map_err(|e| anyhow!("CREATE_CQ with {ncqe} entries: {}", Chain::new(&e)))?;
        objs.cqs.push(cq);
    }
    Ok(first_cq)
}

/// Creates the pair's two QPs with the plan's geometry (A on the CQ at
/// `first_cq`, B on the next); returns the index of A's in `objs.qps`.
fn create_qps<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    dev: &mut Device<B, C, A>,
    objs: &mut Objects,
    plan: &Plan,
    link: &Link,
    pd: Pd,
    q: usize,
    first_cq: usize,
) -> anyhow::Result<usize> {
    let l = &plan.layout;
    let log = |v: u32| v.trailing_zeros() as u8;
    let first_qp = objs.qps.len();
    for side in 0..2u32 {
        let spec = QpSpec {
            qp_type: link.qp_type,
            pd,
            send_cqn: objs.cqs[first_cq + side as usize].cqn(),
            recv_cqn: objs.cqs[first_cq + side as usize].cqn(),
            log_sq_size: log(l.sq.wqe_cnt),
            log_rq_size: log(l.rq.wqe_cnt),
            rq_wqe_shift: l.rq.wqe_shift as u8,
            srqn: None,
            user_index: 0x100 + 2 * q as u32 + side,
            max_send_wr: plan.cap,
            max_recv_wr: l.rq.max_post,
        };
        let qp = dev.create_qp(spec).map_err(|e| create_qp_error(e, l))?;
        objs.qps.push(qp);
    }
    Ok(first_qp)
}

/// The error of a failed CREATE_QP, naming the rings asked for
/// ([`QpRejected`] when the device refused the QP).
pub(super) fn create_qp_error(e: DeviceError, l: &QpLayout) -> anyhow::Error {
    let text = format!(
        "CREATE_QP ({} WQEBBs of send ring, {} receive WQEs): {}",
        l.sq.wqe_cnt,
        l.rq.wqe_cnt,
        Chain::new(&e)
    );
    // A limit of the driver or a firmware refusal: this device
    // cannot have this QP. Anything else is a failure of the run.
    match e {
        DeviceError::Limit { .. } | DeviceError::Cmd(CmdError::Failed { .. }) => {
            anyhow::Error::new(QpRejected(text))
        }
        _ => anyhow!("{text}"),
    }
}

/// Connects the pair's QPs (A at `first_qp`, B after it) to each other;
/// returns their QPNs.
fn connect_pair<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    dev: &mut Device<B, C, A>,
    objs: &mut Objects,
    link: &Link,
    first_qp: usize,
) -> anyhow::Result<(u32, u32)> {
    let (qa, qb) = (objs.qps[first_qp].qpn(), objs.qps[first_qp + 1].qpn());
    let (x, y) = objs.qps.split_at_mut(first_qp + 1);
    connect(dev, &mut x[first_qp], qb, link, (0x100, 0x200))?;
    connect(dev, &mut y[0], qa, link, (0x200, 0x100))?;
    Ok((qa, qb))
}

/// The core's configurations of the pair's queues: A's and B's send
/// queue (each on its own BlueFlame register) and the receive queue.
pub(super) struct QueueConfigs {
    pub(super) sq: [SqConfig; 2],
    pub(super) rq: RqConfig,
}

/// The queue configurations for the plan's geometry on this device.
pub(super) fn queue_configs<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    dev: &Device<B, C, A>,
    opts: &CmdOptions,
    cfg: &PerfRunConfig,
    plan: &Plan,
) -> QueueConfigs {
    let l = &plan.layout;
    let hca = dev.hca_caps();
    let bf_reg = if hca.bf {
        1usize << hca.log_bf_reg_size
    } else {
        0
    };
    let qp_type = bareverbs::sizing::QpType::from(cfg.conn);
    let sqc = |k: usize| {
        SqConfig::new(qp_type, l.sq.max_post, cfg.max_send_sge)
            .inline(l.sq.max_inline_data)
            .atomics(plan.atomics)
            .blueflame(if opts.blueflame && bf_reg > 0 {
                BlueFlame {
                    reg_offset: BF_OFFSET + k * bf_reg,
                    buf_size: bf_reg / 2,
                    enabled: true,
                    prefer: false,
                }
            } else {
                BlueFlame::doorbell_only(BF_OFFSET + k * bf_reg)
            })
    };
    let rqc = RqConfig {
        wqe_shift: l.rq.wqe_shift,
        max_gs: l.rq.max_gs,
        max_post: l.rq.max_post,
    };
    QueueConfigs {
        sq: [sqc(0), sqc(1)],
        rq: rqc,
    }
}

/// Maps each QP's UAR and builds A's and B's queues over the QPs and CQs
/// at `first` (QP index, CQ index of A), with the sides' regions `mrs`.
fn make_sides<B, C, A>(
    dev: &mut Device<B, C, A>,
    objs: &Objects,
    first: (usize, usize),
    queues: QueueConfigs,
    mrs: [Vec<MemoryRegion>; 2],
) -> anyhow::Result<(Box<dyn SideOps>, Box<dyn SideOps>)>
where
    B: Bar0 + UarMap,
    B::Uar: 'static,
    C: Clock,
    A: DmaAllocator,
{
    let (first_qp, first_cq) = first;
    let [mrs_a, mrs_b] = mrs;
    let [sqc_a, sqc_b] = queues.sq;
    let uar_a = dev
        .map_uar(objs.qps[first_qp].uar_index())
        .map_err(|e| anyhow!("{}", Chain::new(&e)))?;
    let uar_b = dev
        .map_uar(objs.qps[first_qp + 1].uar_index())
        .map_err(|e| anyhow!("{}", Chain::new(&e)))?;
    // Queue storage sized at run time from the geometry the device was
    // given (no size macro, no big stack).
    let cq_uar = |dev: &mut Device<B, C, A>| {
        let i = dev.uar_index();
        dev.map_uar(i).map_err(|e| anyhow!("{}", Chain::new(&e)))
    };
    let (cq_uar_a, cq_uar_b) = (cq_uar(dev)?, cq_uar(dev)?);
    let a = make_side(
        uar_a,
        cq_uar_a,
        &objs.qps[first_qp],
        &objs.cqs[first_cq],
        sqc_a,
        queues.rq,
        mrs_a,
    )?;
    let b = make_side(
        uar_b,
        cq_uar_b,
        &objs.qps[first_qp + 1],
        &objs.cqs[first_cq + 1],
        sqc_b,
        queues.rq,
        mrs_b,
    )?;
    Ok((a, b))
}

/// What perftest prints for each side (ctx_print_pingpong_data): the
/// QPN, the send PSN given at RTR2RTS, the buffer the peer accesses.
/// LID 0 and a zero GID: the loopback path carries neither.
fn endpoints(qa: u32, qb: u32, areas: &PairAreas) -> (Endpoint, Endpoint) {
    (
        areas.endpoint(true, 0, qa, 0x200),
        areas.endpoint(false, 0, qb, 0x100),
    )
}

/// The UD address vector toward the peer: force loopback, with the
/// simulator's routing LID.
fn loopback_av(loopback_lid: u16) -> AddressVector {
    AddressVector::datagram(
        (QKEY as u64) << 32,
        0,
        false,
        0,
        0x80, // force loopback
        loopback_lid,
        [0; 6],
        0,
        0,
        0,
        [0; 16],
    )
}
