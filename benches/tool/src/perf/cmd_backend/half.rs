//! This host's half of each QP pair of a two-host run ([`open_halves`]):
//! its message areas, CQ and QP, its key message (LID, QPN, a random
//! PSN, the buffer the peer accesses, GID), the peer's key messages in
//! exchange, the QP connected toward the peer's, and its queues.

use super::connect::{connect_on, Link};
use super::memory::area;
use super::objects::Objects;
use super::options::CmdOptions;
use super::pair::{create_qp_error, queue_configs, EVENT_VECTOR};
use super::peer_addr::{path_to, prepare, HostAddr};
use super::side::make_side;
use crate::perf::config::PerfRunConfig;
use crate::perf::engine::{KeyExchange, Pair, PairAreas, Plan, Role, RQ_WQES};
use anyhow::{anyhow, bail};
use bareverbs::cmd::{Bar0, Clock};
use bareverbs::cqe::CqeSize;
use bareverbs::device::{Device, Pd, QpSpec, UarMap};
use bareverbs::error::Chain;
use bareverbs::platform::DmaAllocator;
use std::hash::{BuildHasher, Hasher};

/// What a run of one role needs beyond the loopback run's inputs.
pub(super) struct HalfRun<'a, 'k> {
    pub(super) role: Role,
    pub(super) addr: &'a HostAddr,
    pub(super) keys: &'a mut KeyExchange<'k>,
}

/// Creates this host's side of `plan.pairs` QP pairs, exchanges key
/// messages through `run.keys` and connects each QP to the peer's;
/// returns the pairs and the source GID index they send from.
#[allow(clippy::too_many_arguments)]
pub(super) fn open_halves<B, C, A>(
    dev: &mut Device<B, C, A>,
    objs: &mut Objects,
    opts: &CmdOptions,
    cfg: &PerfRunConfig,
    plan: &Plan,
    link: &Link,
    pd: Pd,
    run: HalfRun<'_, '_>,
) -> anyhow::Result<(Vec<Pair>, Option<u16>)>
where
    B: Bar0 + UarMap,
    B::Uar: 'static,
    C: Clock,
    A: DmaAllocator,
{
    let client = match run.role {
        Role::Client => true,
        Role::Server => false,
        Role::Loopback => bail!("a loopback run has no peer host"),
    };
    let local = prepare(dev, run.addr)?;
    let (first_qp, first_cq) = (objs.qps.len(), objs.cqs.len());
    let mut areas = Vec::with_capacity(plan.pairs);
    let mut mrs = Vec::with_capacity(plan.pairs);
    let mut mine = Vec::with_capacity(plan.pairs);
    let mut seed = std::collections::hash_map::RandomState::new().build_hasher();
    seed.write_u32(std::process::id());
    for q in 0..plan.pairs {
        let mut m = Vec::new();
        let a = side_areas(dev, objs, pd, plan, client, &mut m)?;
        let ncqe = (plan.cap as usize + RQ_WQES).next_power_of_two() as u32;
        let cq = dev
            .create_cq_on(ncqe, CqeSize::B64, cfg.events.then_some(EVENT_VECTOR))
            .map_err(|e| anyhow!("CREATE_CQ with {ncqe} entries: {}", Chain::new(&e)))?;
        let l = &plan.layout;
        let log = |v: u32| v.trailing_zeros() as u8;
        let spec = QpSpec {
            qp_type: link.qp_type,
            pd,
            send_cqn: cq.cqn(),
            recv_cqn: cq.cqn(),
            log_sq_size: log(l.sq.wqe_cnt),
            log_rq_size: log(l.rq.wqe_cnt),
            rq_wqe_shift: l.rq.wqe_shift as u8,
            srqn: None,
            user_index: 0x100 + 2 * q as u32 + u32::from(!client),
            max_send_wr: plan.cap,
            max_recv_wr: l.rq.max_post,
        };
        objs.cqs.push(cq);
        let qp = dev.create_qp(spec).map_err(|e| create_qp_error(e, l))?;
        // perftest: lrand48() & 0xffffff.
        seed.write_usize(q);
        let psn = (seed.finish() & 0xff_ffff) as u32;
        let mut ep = a.endpoint(client, local.lid, qp.qpn(), psn);
        ep.out_reads = 1 << link.log_ra;
        ep.gid = local.gid;
        objs.qps.push(qp);
        mine.push(ep);
        areas.push(a);
        mrs.push(m);
    }
    let peers = (run.keys)(&mine)?;
    if peers.len() != mine.len() {
        bail!(
            "the peer sent {} key messages for {} QPs",
            peers.len(),
            mine.len()
        );
    }
    let queues = queue_configs(dev, opts, cfg, plan);
    let mut pairs = Vec::with_capacity(plan.pairs);
    for (q, ((a, m), (ep, peer))) in areas
        .into_iter()
        .zip(mrs)
        .zip(mine.into_iter().zip(&peers))
        .enumerate()
    {
        let path = path_to(dev, run.addr, &local, link.qp_type, (peer.lid, peer.gid))?;
        // Both ends read and answer at most as many READs as the lower of
        // the two announced (perftest lowers out_reads to the peer's).
        let reads = ep.out_reads.min(peer.out_reads.max(1));
        let l = Link {
            qp_type: link.qp_type,
            mtu: link.mtu,
            log_ra: (31 - reads.leading_zeros()) as u8,
        };
        let qp = &mut objs.qps[first_qp + q];
        connect_on(dev, qp, peer.qpn, &l, (peer.psn, ep.psn), path)?;
        let uar = dev
            .map_uar(objs.qps[first_qp + q].uar_index())
            .map_err(|e| anyhow!("{}", Chain::new(&e)))?;
        let i = dev.uar_index();
        let cq_uar = dev.map_uar(i).map_err(|e| anyhow!("{}", Chain::new(&e)))?;
        let side = make_side(
            uar,
            cq_uar,
            &objs.qps[first_qp + q],
            &objs.cqs[first_cq + q],
            queues.sq[0],
            queues.rq,
            m,
        )?;
        pairs.push(Pair::half(
            run.role,
            side,
            a,
            plan.areas,
            peer,
            plan.slots,
            plan.slot_bytes,
            ep,
        ));
    }
    Ok((pairs, local.gid_index))
}

/// This host's side's message areas (A's for the client, B's for the
/// server); the regions go to `mrs`.
fn side_areas<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    dev: &mut Device<B, C, A>,
    objs: &mut Objects,
    pd: Pd,
    plan: &Plan,
    client: bool,
    mrs: &mut Vec<bareverbs::mr::MemoryRegion>,
) -> anyhow::Result<PairAreas> {
    let sb = plan.slot_bytes;
    let n = |on: bool| if on { plan.slots } else { 0 };
    let ar = plan.areas;
    let mut out = PairAreas::default();
    if client {
        out.a_src = area(dev, objs, pd, n(ar.a_src), sb, mrs)?;
        out.a_dst = area(dev, objs, pd, n(ar.a_dst), sb, mrs)?;
    } else {
        out.b_src = area(dev, objs, pd, n(ar.b_src), sb, mrs)?;
        out.b_dst = area(dev, objs, pd, n(ar.b_dst), sb, mrs)?;
    }
    Ok(out)
}
