//! perftest's option rules and their resolution: the limits perftest
//! enforces, its refusals with its messages ([`perftest_rules`]), the
//! port a run uses ([`port_attrs`], [`effective_mtu`]) and the resolved
//! configurations, one per message size ([`configs`],
//! [`configs_on_port`]).

use super::config::PerfRunConfig;
use super::flags::{Conn, PerfArgs, PerfTest};
use crate::budget::load_caps;
use crate::perftest::format::Verb;
use anyhow::bail;
use bareverbs::sizing::SendOps;

/// perftest's path MTU values (`set_mtu`).
pub const PERFTEST_MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];
/// perftest `MIN_ITER` / `MAX_ITER` (`-n`).
pub const ITERS_RANGE: (u64, u64) = (5, 4_294_967_296);
/// perftest `MIN_TX` / `MAX_TX` (`-t`).
pub const TX_RANGE: (u32, u32) = (1, 15000);
/// perftest `MIN_QP_NUM` / `MAX_QP_NUM` (`-q`).
pub const QP_RANGE: (u32, u32) = (1, 16384);
/// perftest `MIN_CQ_MOD` / `MAX_CQ_MOD` (`-Q`).
pub const CQ_MOD_RANGE: (u32, u32) = (1, 1024);
/// perftest `MAX_INLINE` (`-I` is 0..=this).
pub const MAX_INLINE: u32 = 1024;
/// perftest's largest `-s`: `UINT_MAX / 2`.
pub const MAX_MSG_SIZE: u64 = (u32::MAX / 2) as u64;
/// perftest `MSG_SIZE_CQ_MOD_LIMIT`: above it CQ moderation defaults to 1.
pub const MSG_SIZE_CQ_MOD_LIMIT: u64 = 8192;
/// perftest `DEF_CQ_MOD`.
pub const DEF_CQ_MOD: u32 = 100;

/// Refuses what perftest refuses (`perftest_parameters.c`: the option
/// parser, `change_conn_type`, `force_dependecies`, `set_mtu`), with
/// perftest's message.
pub fn perftest_rules(test: PerfTest, args: &PerfArgs) -> anyhow::Result<()> {
    let verb = test.verb();
    let bw = test.is_bw();
    match (args.conn, verb) {
        (Conn::Uc, Verb::Read | Verb::Atomic) => {
            bail!("UC connection not possible in READ/ATOMIC verbs")
        }
        (Conn::Ud, v) if v != Verb::Send => bail!("UD connection only possible in SEND verb"),
        _ => {}
    }
    if args.events && verb == Verb::Write {
        bail!(" Events feature not available on WRITE verb");
    }
    if args.events && args.duration.is_some() {
        bail!("Duration mode doesn't work with events.");
    }
    if let Some(m) = args.mtu.filter(|m| !PERFTEST_MTUS.contains(m)) {
        bail!(
            "Invalid MTU - {}: please choose mtu from {{256,512,1024,2048,4096}}",
            m
        );
    }
    if let Some(n) = args.iters {
        if !(ITERS_RANGE.0..=ITERS_RANGE.1).contains(&n) {
            bail!(
                "Iteration num should be between {} and {}",
                ITERS_RANGE.0,
                ITERS_RANGE.1
            );
        }
    }
    if let Some(t) = args.tx_depth {
        if !(TX_RANGE.0..=TX_RANGE.1).contains(&t) {
            bail!(
                "Tx depth should be between {} and {}",
                TX_RANGE.0,
                TX_RANGE.1
            );
        }
    }
    if !(QP_RANGE.0..=QP_RANGE.1).contains(&args.qps) {
        bail!(
            "num of Qps should be between {} and {}",
            QP_RANGE.0,
            QP_RANGE.1
        );
    }
    if !bw && args.qps > 1 {
        bail!("Multiple QPs only available on bw tests");
    }
    if let Some(i) = args.inline_size {
        if i > MAX_INLINE {
            bail!("Max inline should be between 0 and {MAX_INLINE}");
        }
        if matches!(verb, Verb::Read | Verb::Atomic) {
            bail!("Inline feature not available on READ/Atomic verbs");
        }
    }
    if let Some(q) = args.cq_mod {
        if !(CQ_MOD_RANGE.0..=CQ_MOD_RANGE.1).contains(&q) {
            bail!(
                "CQ moderation should be between {} and {}",
                CQ_MOD_RANGE.0,
                CQ_MOD_RANGE.1
            );
        }
    }
    if let Some(sz) = args.size {
        if !(1..=MAX_MSG_SIZE).contains(&sz) {
            bail!("Message Size should be between 1 and {MAX_MSG_SIZE}");
        }
    }
    // -a sets the size to MAX_SIZE before this check in perftest.
    if verb == Verb::Atomic && (args.all || args.size.is_some_and(|s| s != 8)) {
        bail!("Message size cannot be changed for Atomic tests");
    }
    if args.post_list > 1 {
        if !bw {
            bail!("Post list is supported in BW tests only");
        }
        let iters = args.iters.unwrap_or(5000);
        if args.duration.is_none() && !iters.is_multiple_of(args.post_list as u64) {
            bail!("Number of iterations must be a multiple of post list size");
        }
        if let Some(q) = args.cq_mod {
            if !args.post_list.is_multiple_of(q) {
                bail!("Post list size must be a multiple of CQ moderation");
            }
        }
    }
    if let Some(d) = args.duration {
        if d == 0 {
            bail!("Duration period must be positive");
        }
        if args.all {
            bail!("Duration mode currently doesn't support running on all sizes.");
        }
    }
    Ok(())
}

/// Resolves `args` into one config per message size, with perftest's
/// rules ([`perftest_rules`]) and adjustments (TX depth at most the
/// iterations, CQ moderation 1 above 8192 B unless given and at most the
/// TX depth, the post list as CQ moderation, UD sizes capped at the MTU).
pub fn configs(test: PerfTest, args: &PerfArgs) -> anyhow::Result<Vec<PerfRunConfig>> {
    configs_on_port(test, args, None)
}

/// The port a perf run uses, from the same source as `bareverbs devinfo`
/// ([`crate::devinfo::query`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortAttrs {
    /// Active MTU, bytes.
    pub active_mtu: u32,
    /// The link layer is Ethernet (RoCE); else InfiniBand.
    pub ethernet: bool,
}

/// The port `bareverbs devinfo --device` reports for this perf device
/// (`sim` and `fw-sim` share the simulated firmware's port), or `None`
/// for `--device model`, which has no port.
pub fn port_attrs(device: &str) -> anyhow::Result<Option<PortAttrs>> {
    let name = match device {
        "sim" | "fw-sim" => "sim",
        d if d.starts_with("vfio:") => d,
        _ => return Ok(None),
    };
    let d = crate::devinfo::query(name)?;
    Ok(d.ports.first().map(|p| PortAttrs {
        active_mtu: p.active_mtu.unwrap_or(DEFAULT_MTU),
        ethernet: p.link_layer == bareverbs::device::LinkLayer::Ethernet,
    }))
}

/// MTU without a port to take it from (`--device model`).
const DEFAULT_MTU: u32 = 4096;

/// perftest `set_mtu`: the requested MTU, else the port's active MTU; a
/// request above the active MTU runs at the active MTU.
pub fn effective_mtu(args: &PerfArgs, port: Option<PortAttrs>) -> u32 {
    match (args.mtu, port) {
        (Some(m), Some(p)) => m.min(p.active_mtu),
        (Some(m), None) => m,
        (None, Some(p)) => p.active_mtu,
        (None, None) => DEFAULT_MTU,
    }
}

/// [`configs`] on `port` (its active MTU, see [`effective_mtu`]).
pub fn configs_on_port(
    test: PerfTest,
    args: &PerfArgs,
    port: Option<PortAttrs>,
) -> anyhow::Result<Vec<PerfRunConfig>> {
    perftest_rules(test, args)?;
    let eff_mtu = effective_mtu(args, port);
    let verb = test.verb();
    let bw = test.is_bw();
    let caps = load_caps(args.caps.as_deref())?;
    let ud = args.conn == Conn::Ud;
    let mtu = eff_mtu as u64;
    let sizes: Vec<u64> = if verb == Verb::Atomic {
        vec![8]
    } else if args.all {
        // perftest: UD runs the sizes up to the MTU.
        (1..=23)
            .map(|e| 1u64 << e)
            .filter(|&s| !ud || s <= mtu)
            .collect()
    } else {
        let s = args.size.unwrap_or(if bw { 65536 } else { 2 });
        // perftest check_link_and_mtu: a UD message is at most one MTU.
        vec![if ud { s.min(mtu) } else { s }]
    };
    // perftest ctx_set_max_inline: without -I, latency tests default to
    // 220 (WRITE), 236 (SEND RC/UC), 188 (SEND UD); bandwidth tests to 0.
    let inline_size = match verb {
        Verb::Read | Verb::Atomic => 0,
        _ => args.inline_size.unwrap_or(match (verb, args.conn) {
            _ if bw => 0,
            (Verb::Write, _) => 220,
            (_, Conn::Ud) => 188,
            _ => 236,
        }),
    };
    let (send_ops, send_ops_name) = match args.send_ops.as_deref() {
        Some("classic") => (None, "classic".to_string()),
        Some(list) => {
            let l = if list == "rdma" {
                "write,send,read"
            } else {
                list
            };
            let o = SendOps::parse(l).map_err(|b| anyhow::anyhow!("unknown send op {b:?}"))?;
            (Some(o), list.to_string())
        }
        None => {
            if verb == Verb::Atomic {
                (
                    Some(SendOps::RDMA_ONLY | SendOps::ATOMIC_FA | SendOps::ATOMIC_CS),
                    "write,send,read,atomic".into(),
                )
            } else {
                (Some(SendOps::RDMA_ONLY), "rdma".into())
            }
        }
    };
    anyhow::ensure!(args.sge >= 1, "--sge must be >= 1");
    anyhow::ensure!(args.post_list >= 1, "-l must be >= 1");
    let iters_default = if bw { 5000 } else { 1000 };
    let mut out = Vec::new();
    for size in sizes {
        let mut iters = args.iters.unwrap_or(iters_default);
        let mut tx_depth = args.tx_depth.unwrap_or(if bw { 128 } else { 1 });
        if let Some(d) = args.duration {
            // Rough count: the engine stops posting after D wall-clock seconds.
            iters = (d.saturating_mul(1_000_000)).clamp(5, 2_000_000);
        } else if tx_depth as u64 > iters {
            // perftest: the TX depth is at most the iteration count.
            tx_depth = iters as u32;
        }
        let mut cq_mod = args.cq_mod.unwrap_or(DEF_CQ_MOD);
        if size > MSG_SIZE_CQ_MOD_LIMIT && !ud && !args.all && args.cq_mod.is_none() {
            cq_mod = 1;
        }
        cq_mod = cq_mod.min(tx_depth);
        if args.post_list > 1 && args.cq_mod.is_none() {
            cq_mod = args.post_list;
        }
        out.push(PerfRunConfig {
            test,
            size,
            iters,
            qps: args.qps,
            tx_depth,
            post_list: args.post_list,
            cq_mod,
            inline_size,
            inline: inline_size > 0 && size <= inline_size as u64,
            conn: args.conn,
            sge: args.sge,
            max_send_sge: args.max_send_sge.unwrap_or(args.sge),
            max_send_wr: args.max_send_wr.unwrap_or(tx_depth.max(args.post_list)),
            send_ops,
            send_ops_name: send_ops_name.clone(),
            loss: args.loss,
            seed: args.seed,
            duration: args.duration,
            mtu: eff_mtu,
            caps,
            events: args.events,
        });
    }
    Ok(out)
}
