//! Parsers for the recv format's single lines: the RQ `QP:` and `SRQ:`
//! geometry lines, `WR[i]` bodies and the setup `NOTE:` (fillers, SRQ
//! operations and cycles).

use anyhow::{anyhow, bail, Result};

use super::super::wqe::{
    after_word_num, c_int_field, kv, kv_num, kv_req, parse_num_prefix, parse_qp_type, parse_sge,
};
use super::model::{RecvPrep, RecvWr, RqGeometry, SrqGeometry, SrqPrepOp};

/// A WQE stride's log2 from a file: at most 16 (64 KiB, far above any
/// receive WQE), so the replay never shifts past its integer width.
fn shift_of(v: u64) -> Result<u32> {
    if v > 16 {
        bail!("wqe_shift {v} is more than 16");
    }
    Ok(v as u32)
}

pub(super) fn parse_recv_wr(body: &str) -> Result<RecvWr> {
    let mut parts = body.split("sge[");
    let head = parts.next().unwrap_or("");
    let mut wr = RecvWr {
        index: 0,
        wr_id: kv_req(head, "wr_id")?,
        num_sge: c_int_field(head, "num_sge")?,
        sges: Vec::new(),
    };
    for s in parts {
        wr.sges.push(parse_sge(&format!("sge[{s}"))?);
    }
    Ok(wr)
}

pub(super) fn parse_rq_geometry(t: &str) -> Result<RqGeometry> {
    let (req, res) = t
        .split_once("->")
        .ok_or_else(|| anyhow!("no '->' in {t:?}"))?;
    let wqe_size = res
        .find("WQEs x ")
        .and_then(|p| parse_num_prefix(&res[p + 7..]))
        .ok_or_else(|| anyhow!("no 'WQEs x N bytes' in {t:?}"))? as u32;
    let wqe_cnt = kv_req(res, "rq.wqe_cnt")? as u32;
    let ring_bytes = res
        .find("ring ")
        .and_then(|p| parse_num_prefix(&res[p + 5..]))
        .map(|v| v as u32)
        .unwrap_or(wqe_cnt.saturating_mul(wqe_size));
    Ok(RqGeometry {
        qp_type: parse_qp_type(kv(req, "type").unwrap_or("RC"))?,
        qpn: kv_num(req, "qpn").unwrap_or(0) as u32,
        max_recv_wr: kv_req(req, "max_recv_wr")? as u32,
        max_recv_sge: kv_req(req, "max_recv_sge")? as u32,
        wqe_cnt,
        wqe_size,
        wqe_shift: shift_of(kv_req(res, "rq.wqe_shift")?)?,
        ring_bytes,
        buf_offset: after_word_num(res, "buffer offset ").unwrap_or(0) as u32,
        max_post: kv_req(res, "rq.max_post")? as u32,
        max_gs: kv_req(res, "rq.max_gs")? as u32,
        ret_max_recv_wr: kv_num(res, "cap.max_recv_wr").map(|v| v as u32),
        ret_max_recv_sge: kv_num(res, "cap.max_recv_sge").map(|v| v as u32),
        wq_sig: kv_num(res, "wq_sig").unwrap_or(0) != 0,
    })
}

pub(super) fn parse_srq_geometry(t: &str) -> Result<SrqGeometry> {
    let (req, res) = t
        .split_once("->")
        .ok_or_else(|| anyhow!("no '->' in {t:?}"))?;
    let wqe_shift = shift_of(kv_req(res, "srq.wqe_shift")?)?;
    let wqe_size = res
        .find("-byte WQE")
        .and_then(|p| {
            res[..p]
                .rsplit(['(', ' '])
                .next()
                .and_then(parse_num_prefix)
        })
        .map(|v| v as u32)
        .unwrap_or(1 << wqe_shift);
    let data_segs = res
        .find(" data segs")
        .and_then(|p| res[..p].rsplit(' ').next().and_then(parse_num_prefix))
        .map(|v| v as u32);
    let max = kv_req(res, "srq.max")? as u32;
    let buf_bytes = res
        .find("WQEs (")
        .and_then(|p| parse_num_prefix(&res[p + 6..]))
        .map(|v| v as u32)
        .unwrap_or(max.saturating_mul(wqe_size));
    let signed = |k: &str| -> Result<i64> {
        let v = kv(res, k).ok_or_else(|| anyhow!("no {k}= in {t:?}"))?;
        Ok(if let Some(n) = v.strip_prefix('-') {
            -(parse_num_prefix(n).ok_or_else(|| anyhow!("bad {k}"))? as i64)
        } else {
            parse_num_prefix(v).ok_or_else(|| anyhow!("bad {k}"))? as i64
        })
    };
    Ok(SrqGeometry {
        srqn: kv_num(req, "srqn").unwrap_or(0) as u32,
        max_wr: kv_req(req, "max_wr")? as u32,
        max_sge: kv_req(req, "max_sge")? as u32,
        wqe_shift,
        wqe_size,
        data_segs,
        max,
        buf_bytes,
        max_gs: kv_req(res, "srq.max_gs")? as u32,
        nwqes: kv_req(res, "nwqes")? as u32,
        waitq_head: signed("waitq_head")?,
        waitq_tail: signed("waitq_tail")?,
        ret_max_wr: kv_num(res, "attr.max_wr").map(|v| v as u32),
        ret_max_sge: kv_num(res, "attr.max_sge").map(|v| v as u32),
        wq_sig: kv_num(res, "wq_sig").unwrap_or(0) != 0,
    })
}

/// Filler WR after `filler WR…:` (up to `;`).
fn parse_filler(n: &str) -> Result<Option<RecvWr>> {
    let Some(p) = n.find("filler WR") else {
        return Ok(None);
    };
    let rest = &n[p..];
    let body = rest.split_once(':').map(|x| x.1).unwrap_or(rest);
    let body = body.split(';').next().unwrap_or(body);
    Ok(Some(parse_recv_wr(body)?))
}

fn num_after(n: &str, key: &str) -> Option<u32> {
    // `so srq.counter=27 head=27 tail=31` or `so rq.head=6 rq.tail=6`.
    let p = n.find(" so ").or_else(|| n.find("then srq."))?;
    kv_num(&n[p..], key).map(|v| v as u32)
}

pub(super) fn parse_prep(n: &str) -> Result<Option<RecvPrep>> {
    let filler = parse_filler(n)?;
    if let Some(p) = n.find("prep posted ") {
        let completed =
            parse_num_prefix(&n[p + 12..]).ok_or_else(|| anyhow!("bad NOTE {n:?}"))? as u32;
        let outstanding = n
            .find("then ")
            .and_then(|q| parse_num_prefix(&n[q + 5..]))
            .filter(|_| n.contains("outstanding"))
            .unwrap_or(0) as u32;
        return Ok(Some(RecvPrep::RqFillers {
            completed,
            outstanding,
            head: num_after(n, "rq.head"),
            tail: num_after(n, "rq.tail"),
            filler,
        }));
    }
    let state_of = |n: &str| {
        let p = n.find("srq.counter=").unwrap_or(n.len());
        let s = &n[p..];
        (
            kv_num(s, "srq.counter").map(|v| v as u32),
            kv_num(s, "head").map(|v| v as u32),
            kv_num(s, "tail").map(|v| v as u32),
        )
    };
    if n.starts_with("prep ops") {
        let p = n
            .find("):")
            .ok_or_else(|| anyhow!("prep ops without '):' {n:?}"))?;
        let seq = &n[p + 2..];
        let seq = seq.split(';').next().unwrap_or(seq);
        let mut ops = Vec::new();
        for tok in seq.split_whitespace() {
            ops.push(match tok {
                "P" => SrqPrepOp::Post,
                "P!" => SrqPrepOp::PostFailed,
                f if f.starts_with('F') => SrqPrepOp::Free(
                    parse_num_prefix(&f[1..]).ok_or_else(|| anyhow!("bad op {f:?}"))? as u32,
                ),
                o => bail!("unknown SRQ prep op {o:?} in NOTE"),
            });
        }
        let (counter, head, tail) = state_of(n);
        return Ok(Some(RecvPrep::SrqOps {
            ops,
            counter,
            head,
            tail,
            filler,
        }));
    }
    if let Some(p) = n.find(" x {") {
        let cycles = n[..p]
            .rsplit(' ')
            .next()
            .and_then(parse_num_prefix)
            .ok_or_else(|| anyhow!("bad cycle count in {n:?}"))? as u32;
        let (counter, head, tail) = state_of(n);
        return Ok(Some(RecvPrep::SrqCycles {
            cycles,
            counter,
            head,
            tail,
            filler,
        }));
    }
    Ok(None)
}
