//! perftest's text around the rows: the header of the run
//! ([`header_info`]), the two address lines before the first row
//! ([`addresses`]) and the result columns' heading ([`result_columns`]).

use super::{PerfArgs, PerfBackend, PerfRunConfig, PerfRunReport, PerfTest, PortAttrs};
use crate::perftest::format::{self as pf, Endpoint, HeaderInfo, Verb};
use crate::perftest::stats::BwUnit;

/// perftest's header of the run: the test, the first configuration's
/// settings, the port, and the backend's note lines.
pub(super) fn header_info(
    test: PerfTest,
    args: &PerfArgs,
    port: Option<PortAttrs>,
    cfgs: &[PerfRunConfig],
    be: &dyn PerfBackend,
) -> HeaderInfo {
    let first = &cfgs[0];
    HeaderInfo {
        verb: test.verb(),
        bw: test.is_bw(),
        post_list: first.post_list,
        device: format!("bareverbs-{}", args.device),
        num_qps: first.qps,
        connection: format!("{:?}", first.conn).to_uppercase(),
        tx_depth: first.tx_depth,
        cq_mod: first.cq_mod,
        // perftest: dynamic CQE polling unless an iteration run is shorter
        // than 3000; a fixed batch of 16, or 64 above 2048 QPs and 8 KiB.
        cqe_poll: if first.duration.is_none() && first.iters < 3000 {
            let big = cfgs.last().is_some_and(|c| c.size > 8192) || args.all;
            Some(if first.qps > 2048 && big { 64 } else { 16 })
        } else {
            None
        },
        mtu: first.mtu,
        link_type: if port.is_some_and(|p| p.ethernet) {
            "Ethernet"
        } else {
            "IB"
        }
        .into(),
        gid_index: port.filter(|p| p.ethernet).map(|_| 0),
        max_inline: first.inline_size,
        out_reads: 16,
        notes: vec![
            format!("Backend         : {} -- {}", be.name(), be.timing_note()),
            format!(
                "QP              : max_send_wr {} max_send_sge {} posted SGEs {} send ops {}",
                first.max_send_wr, first.max_send_sge, first.sge, first.send_ops_name
            ),
        ]
        .into_iter()
        .chain(be.notes(first))
        .collect(),
    }
}

/// The result columns' heading line of `test` (`dur`: a `-D` run).
pub(super) fn result_columns(test: PerfTest, unit: BwUnit, dur: bool) -> &'static str {
    if test.is_bw() {
        pf::bw_columns(unit)
    } else if dur {
        pf::RESULT_FMT_LAT_DUR
    } else {
        pf::RESULT_FMT_LAT
    }
}

/// What perftest prints before the first row: both QPs' address lines
/// (the zero state for a backend without QPs), then the columns.
pub(super) fn addresses(verb: Verb, h: &HeaderInfo, rep: &PerfRunReport, columns: &str) -> String {
    // perftest prints both QPs, then the columns.
    let gid = h.gid_index.is_some();
    let zero = Endpoint {
        out_reads: h.out_reads,
        ..Default::default()
    };
    let l = rep.local.clone().unwrap_or_else(|| zero.clone());
    let r = rep.remote.clone().unwrap_or(zero);
    let mut s = pf::address(verb, false, &l, gid);
    s.push_str(&pf::address(verb, true, &r, gid));
    s.push_str(pf::RESULT_LINE);
    s.push_str(columns);
    s.push('\n');
    s
}
