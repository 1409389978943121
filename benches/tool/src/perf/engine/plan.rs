//! What a run decides before anything is created ([`Plan`]: the QP
//! geometry, the window, the slots and areas), and the refusal of a plan
//! that needs more memory than the backend allows.

use super::consts::{AREA_BYTES, GRH_BYTES, RESERVE_MAX, RQ_WQES};
use super::errors::{QpRejected, TooMuchMemory};
use super::pair::Areas;
use crate::perf::config::{qp_request, PerfRunConfig};
use crate::perf::flags::{Conn, PerfTest};
use crate::perftest::format::Verb;
use anyhow::{anyhow, bail};
use bareverbs::sizing::{qp_layout, DeviceCaps, QpLayout, SendOps};

/// What a run needs decided before anything is created (device-neutral).
#[derive(Clone, Debug)]
pub struct Plan {
    /// Exact mlx5 geometry of the run's QPs (with `max_inline_data` the
    /// run's `-I`, as perftest creates its QPs).
    pub layout: QpLayout,
    /// Connection type.
    pub conn: Conn,
    /// Verb.
    pub verb: Verb,
    /// Message bytes.
    pub size: usize,
    /// SGEs per posted WR.
    pub k: u32,
    /// Post inline.
    pub inline: bool,
    /// The QPs are created with atomics.
    pub atomics: bool,
    /// WRs in flight per QP at most (1 for latency tests).
    pub window: u32,
    /// WRs a send queue may hold unretired (declared to CREATE_QP; the
    /// CQs are sized for it): the window, at least a few for ping-pong.
    pub cap: u32,
    /// Message slots per area and pair.
    pub slots: usize,
    /// Bytes per slot (message, plus the GRH room of UD receives, 64-aligned).
    pub slot_bytes: usize,
    /// Where received data starts in a receive slot (40 on UD).
    pub recv_off: usize,
    /// QP pairs.
    pub pairs: usize,
    /// Areas the test uses.
    pub areas: Areas,
    /// Iterations per pair (`-n`; `-D` runs count as one second of
    /// `RESERVE_MAX` = 2^20 stamps).
    pub iters: u64,
}

impl Plan {
    /// Decides `cfg`'s geometry with the device's sizing capabilities.
    pub fn new(cfg: &PerfRunConfig, caps: &DeviceCaps) -> anyhow::Result<Plan> {
        Self::with_inflight(cfg, caps, None)
    }

    /// As [`new`](Self::new), with at most `inflight` payload bytes in
    /// flight per QP (the TX depth is lowered to fit, to no less than 2).
    pub fn with_inflight(
        cfg: &PerfRunConfig,
        caps: &DeviceCaps,
        inflight: Option<u64>,
    ) -> anyhow::Result<Plan> {
        let verb = cfg.test.verb();
        if cfg.conn != Conn::Rc && matches!(verb, Verb::Read | Verb::Atomic) {
            bail!("{} needs an RC QP (-c RC)", verb.name());
        }
        if cfg.conn == Conn::Ud && verb == Verb::Write {
            bail!("RDMA_Write is not available on UD QPs");
        }
        if cfg.conn == Conn::Ud && cfg.size > cfg.mtu as u64 {
            bail!("UD messages are limited to one MTU ({} B)", cfg.mtu);
        }
        let ops = qp_request(cfg).effective_ops();
        let atomics = ops.intersects(SendOps::ATOMIC_FA | SendOps::ATOMIC_CS);
        if verb == Verb::Atomic && !ops.contains(SendOps::ATOMIC_FA) {
            bail!("atomic-lat posts fetch-and-add: --send-ops must include it (e.g. write,send,read,atomic)");
        }
        let size = if verb == Verb::Atomic {
            8
        } else {
            usize::try_from(cfg.size).map_err(|_| anyhow!("-s {} is too large", cfg.size))?
        };
        if size == 0 {
            bail!("-s 0: messages need at least one byte");
        }
        let recv_off = if cfg.conn == Conn::Ud { GRH_BYTES } else { 0 };
        let slot_bytes = (size + recv_off).next_multiple_of(64);
        let req = qp_request(cfg).recv(RQ_WQES as u32, 1);
        let layout = qp_layout(&req, caps).map_err(|e| QpRejected(e.to_string()))?;
        if layout.rq.wqe_cnt as usize != RQ_WQES || layout.rq.wqe_shift != 4 {
            bail!(
                "unexpected receive queue geometry {} x {} B",
                layout.rq.wqe_cnt,
                layout.rq.wqe_size
            );
        }
        let lat = !cfg.test.is_bw();
        let mut window = if lat {
            1
        } else {
            cfg.tx_depth.max(1).min(layout.sq.max_post)
        };
        if verb == Verb::Send {
            window = window.min(RQ_WQES as u32);
        }
        if let Some(b) = inflight {
            let fit = (b / size as u64).clamp(2, u32::MAX as u64) as u32;
            window = window.min(fit);
        }
        let pairs = if lat { 1 } else { cfg.qps.max(1) as usize };
        // Areas share AREA_BYTES over the pairs; at least one slot each.
        let per_pair = AREA_BYTES / pairs / slot_bytes;
        let slots = (window as usize).min(per_pair.max(1));
        // A latency run may post before the previous CQE arrived; a few
        // WRs of slack keep it from waiting on that.
        let cap = if lat {
            layout.sq.max_post.min(8)
        } else {
            window
        };
        let areas = match (cfg.test, verb) {
            (PerfTest::WriteLat | PerfTest::SendLat, _) => Areas {
                a_src: true,
                a_dst: true,
                b_src: true,
                b_dst: true,
            },
            (_, Verb::Read | Verb::Atomic) => Areas {
                a_src: false,
                a_dst: true,
                b_src: true,
                b_dst: false,
            },
            _ => Areas {
                a_src: true,
                a_dst: false,
                b_src: false,
                b_dst: true,
            },
        };
        Ok(Plan {
            layout,
            conn: cfg.conn,
            verb,
            size,
            k: if verb == Verb::Atomic {
                1
            } else {
                cfg.sge.max(1).min(size as u32)
            },
            inline: cfg.inline && matches!(verb, Verb::Write | Verb::Send),
            atomics,
            window,
            cap,
            slots,
            slot_bytes,
            recv_off,
            pairs,
            areas,
            iters: if cfg.duration.is_some() {
                RESERVE_MAX
            } else {
                cfg.iters
            },
        })
    }

    /// Slot bytes one side allocates (its areas).
    pub fn side_bytes(&self, a: bool) -> u64 {
        let n = if a {
            self.areas.a_src as u64 + self.areas.a_dst as u64
        } else {
            self.areas.b_src as u64 + self.areas.b_dst as u64
        };
        n * (self.slots * self.slot_bytes) as u64
    }

    /// Host memory the run's queues and buffers take, about: per pair two
    /// send rings, receive rings and CQs (64 B CQEs) with their host-side
    /// WR records, plus the slots.
    pub fn memory_estimate(&self) -> u64 {
        let l = &self.layout;
        let ncqe = (self.cap as usize + RQ_WQES).next_power_of_two() as u64;
        let per_side = l.sq.buf_bytes
            + (l.rq.wqe_cnt as u64) * (l.rq.wqe_size as u64)
            + ncqe * 64
            + l.sq.wqe_cnt as u64 * 64
            + RQ_WQES as u64 * 16;
        let slots = self.side_bytes(true) + self.side_bytes(false);
        // Post and completion stamps (8 B each per iteration).
        let stamps = 16 * self.iters;
        self.pairs as u64 * (2 * per_side + slots + stamps)
    }
}

/// Refuses a plan that needs more memory than `limit`.
pub(super) fn memory_check(
    plan: &Plan,
    cfg: &PerfRunConfig,
    limit: Option<u64>,
) -> anyhow::Result<()> {
    if let Some(limit) = limit {
        let need = plan.memory_estimate();
        if need > limit {
            return Err(anyhow::Error::new(TooMuchMemory {
                need,
                limit,
                what: format!(
                    "-q {} -s {} ({} QP pairs, {} B slots)",
                    cfg.qps, cfg.size, plan.pairs, plan.slot_bytes
                ),
            }));
        }
    }
    Ok(())
}
