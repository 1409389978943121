//! Parsers for the wqe format's single lines: the QP type and QP line, the
//! setup `NOTE:`, `WR[i]` and its field lines, `sge[i]`, `result:`, the
//! doorbell and `WQE[i]` block header lines.

use anyhow::{anyhow, bail, Result};
use bareverbs::qp::QpType;

use super::ah::ah_kind_in;
use super::model::{
    AhKind, AtomicFields, BindMwFields, Doorbell, PostResult, PrepNote, QpSpec, RdmaFields, SendWr,
    Sge, SgeAddr, UdFields, WqeBlock,
};
use super::text::{
    after_word_num, bracket_num, c_int_field, kv, kv_num, kv_req, parse_hex_str, parse_num_prefix,
};

/// The QP type of a vector case: the core's [`QpType`]. The vector files
/// name RC, UC, UD and raw packet QPs (`RAW`, `RAW_PACKET`,
/// `RAW_PACKET_QP`); any other name is refused.
pub fn parse_qp_type(s: &str) -> Result<QpType> {
    let t = if s.trim().eq_ignore_ascii_case("RAW_PACKET_QP") {
        Some(QpType::RawPacket)
    } else {
        QpType::parse(s)
    };
    match t {
        Some(t @ (QpType::Rc | QpType::Uc | QpType::Ud | QpType::RawPacket)) => Ok(t),
        _ => bail!("unknown QP type {:?}", s.to_ascii_uppercase()),
    }
}

/// Parses a QP line (`QP: type=RC qpn=… requested(…) sq_sig_all=0 -> …`)
/// or a header geometry line.
pub(crate) fn parse_qp_spec(t: &str) -> Result<QpSpec> {
    let (req, res) = t
        .split_once("->")
        .ok_or_else(|| anyhow!("no '->' in QP line {t:?}"))?;
    let qp_type = parse_qp_type(kv(req, "type").ok_or_else(|| anyhow!("no type= in {t:?}"))?)?;
    let qpn = kv_num(req, "qpn").unwrap_or(0) as u32;
    let wqe_cnt = kv_req(res, "sq.wqe_cnt")? as u32;
    let sq_bytes = res
        .find("WQEBBs (")
        .and_then(|p| parse_num_prefix(&res[p + 8..]))
        .map(|v| v as u32)
        .unwrap_or(wqe_cnt.saturating_mul(64));
    Ok(QpSpec {
        qp_type,
        qpn,
        max_send_wr: kv_req(req, "max_send_wr")? as u32,
        max_send_sge: kv_req(req, "max_send_sge")? as u32,
        max_inline_data: kv_req(req, "max_inline_data")? as u32,
        sq_sig_all: kv_num(req, "sq_sig_all").unwrap_or(0) != 0,
        wqe_cnt,
        sq_bytes,
        max_post: kv_req(res, "sq.max_post")? as u32,
        max_gs: kv_req(res, "max_gs")? as u32,
        ret_max_inline_data: kv_req(res, "max_inline_data")? as u32,
    })
}

pub(super) fn parse_prep_note(n: &str) -> Result<PrepNote> {
    let count = n
        .find("prep posted ")
        .and_then(|p| parse_num_prefix(&n[p + 12..]))
        .ok_or_else(|| anyhow!("NOTE without 'prep posted K': {n:?}"))?;
    if count > crate::vectors::MAX_PREP_POSTS {
        bail!(
            "the setup runs {count} filler posts, more than {}",
            crate::vectors::MAX_PREP_POSTS
        );
    }
    let count = count as u32;
    let cur_post = n
        .find("cur_post=")
        .and_then(|p| parse_num_prefix(&n[p + 9..]))
        .map(|v| v as u32);
    // Fillers are completed unless the note says some were left outstanding.
    let completed = !(n.contains("outstanding") || n.contains("not completed"));
    let mut wqebbs_per_filler = n
        .find(" WQEBB per filler")
        .and_then(|p| n[..p].rsplit(' ').next().and_then(parse_num_prefix))
        .map(|v| v as u32);
    if wqebbs_per_filler.is_none() && n.contains("one-WQEBB") {
        wqebbs_per_filler = Some(1);
    }
    let filler = match n.find("filler WR") {
        Some(p) => {
            let rest = &n[p..];
            let body = rest.split_once("):").map(|x| x.1).unwrap_or(rest);
            let body = body.split("; ").next().unwrap_or(body);
            Some(parse_inline_wr(body)?)
        }
        None => None,
    };
    Ok(PrepNote {
        text: n.to_string(),
        count,
        cur_post,
        completed,
        filler,
        wqebbs_per_filler,
    })
}

/// A WR spelled on one line (filler): `opcode=… sge[0] addr=… ud: plain AH remote_qpn=…`.
fn parse_inline_wr(body: &str) -> Result<SendWr> {
    let (main, ud) = match body.find("ud:") {
        Some(p) => (&body[..p], Some(&body[p..])),
        None => (body, None),
    };
    let mut parts = main.split("sge[");
    let head = parts.next().unwrap_or("");
    let mut wr = parse_wr_fields(head, 0)?;
    for s in parts {
        wr.sges.push(parse_sge(&format!("sge[{s}"))?);
    }
    if let Some(u) = ud {
        apply_wr_extra(&mut wr, u)?;
    }
    Ok(wr)
}

pub(super) fn parse_wr_fields(body: &str, index: usize) -> Result<SendWr> {
    let op = kv(body, "opcode").ok_or_else(|| anyhow!("no opcode= in {body:?}"))?;
    let (opcode, opcode_num) = match op.split_once('(') {
        Some((name, rest)) => (name.to_string(), parse_num_prefix(rest).unwrap_or(0) as u32),
        None => (op.to_string(), 0),
    };
    let imm_data = body
        .find("imm_data")
        .and_then(|p| body[p..].find('=').map(|q| p + q + 1))
        .and_then(|p| parse_num_prefix(&body[p..]))
        .map(|v| v as u32);
    Ok(SendWr {
        index,
        opcode,
        opcode_num,
        wr_id: kv_req(body, "wr_id")?,
        num_sge: c_int_field(body, "num_sge")?,
        send_flags: kv_req(body, "send_flags")? as u32,
        imm_data,
        invalidate_rkey: kv_num(body, "invalidate_rkey").map(|v| v as u32),
        rdma: None,
        atomic: None,
        ud: None,
        bind_mw: None,
        sges: Vec::new(),
    })
}

pub(super) fn apply_wr_extra(wr: &mut SendWr, t: &str) -> Result<()> {
    if t.starts_with("rdma.") {
        wr.rdma = Some(RdmaFields {
            remote_addr: kv_req(t, "rdma.remote_addr")?,
            rkey: kv_req(t, "rdma.rkey")? as u32,
        });
    } else if t.starts_with("atomic.") {
        wr.atomic = Some(AtomicFields {
            remote_addr: kv_req(t, "atomic.remote_addr")?,
            rkey: kv_req(t, "atomic.rkey")? as u32,
            compare_add: kv_req(t, "compare_add")?,
            swap: kv_num(t, "swap").unwrap_or(0),
        });
    } else if t.starts_with("ud:") {
        let pre_ah = t.split("ah=").next().unwrap_or(t);
        let ah_txt = t.find("ah=").map(|p| &t[p..]).unwrap_or("");
        let ah = ah_kind_in(ah_txt)
            .or_else(|| ah_kind_in(pre_ah))
            .unwrap_or(AhKind::Plain);
        wr.ud = Some(UdFields {
            remote_qpn: kv_req(t, "remote_qpn")? as u32,
            remote_qkey: kv_req(t, "remote_qkey")? as u32,
            ah,
        });
    } else if t.starts_with("bind_mw:") {
        let new_rkey = t
            .find("new rkey=")
            .and_then(|p| parse_num_prefix(&t[p + 9..]))
            .ok_or_else(|| anyhow!("no new rkey in {t:?}"))? as u32;
        wr.bind_mw = Some(BindMwFields {
            mw_rkey: kv_req(t, "mw.rkey")? as u32,
            mw_type: kv_req(t, "mw.type")? as u32,
            new_rkey,
            mr_lkey: kv_req(t, "mr.lkey")? as u32,
            addr: kv_req(t, "addr")?,
            length: kv_req(t, "length")?,
            access_flags: kv_req(t, "mw_access_flags")? as u32,
        });
    }
    Ok(())
}

/// `sge[i] addr=0x… length=N lkey=0x…` (addr may be `&payload[0x…]`).
pub(crate) fn parse_sge(t: &str) -> Result<Sge> {
    let a = kv(t, "addr").ok_or_else(|| anyhow!("no addr= in {t:?}"))?;
    let addr = if let Some(r) = a.strip_prefix("&payload[") {
        SgeAddr::Payload(
            parse_num_prefix(r).ok_or_else(|| anyhow!("bad payload offset {a:?}"))? as usize,
        )
    } else {
        SgeAddr::Addr(parse_num_prefix(a).ok_or_else(|| anyhow!("bad addr {a:?}"))?)
    };
    Ok(Sge {
        addr,
        length: kv_req(t, "length")? as u32,
        lkey: kv_req(t, "lkey")? as u32,
    })
}

/// `result: … ret=N (ERRNO) bad_wr=WR[i]`.
pub(crate) fn parse_result(t: &str) -> Result<PostResult> {
    let ret = kv_req(t, "ret")? as i64 as i32;
    let errno = if ret != 0 {
        t.find("ret=").and_then(|p| {
            let r = &t[p..];
            let o = r.find('(')?;
            let c = r[o..].find(')')?;
            Some(r[o + 1..o + c].trim().to_string())
        })
    } else {
        None
    };
    let bad_wr = bracket_num(t, "bad_wr=WR[").map(|v| v as usize);
    Ok(PostResult { ret, errno, bad_wr })
}

/// `before=N after=M` in a fragment.
pub(crate) fn before_after(t: &str) -> Result<(u64, u64)> {
    Ok((kv_req(t, "before")?, kv_req(t, "after")?))
}

/// `raw bytes 00 00 00 01 = …` → the bytes.
pub(crate) fn parse_raw_bytes(t: &str) -> Result<Vec<u8>> {
    let p = t
        .find("raw bytes")
        .ok_or_else(|| anyhow!("no 'raw bytes' in {t:?}"))?;
    let r = &t[p + 9..];
    let r = r.split('=').next().unwrap_or("");
    parse_hex_str(r)
}

pub(super) fn parse_doorbell(d: &str) -> Result<Doorbell> {
    if d.starts_with("NONE") || d.starts_with("none") {
        return Ok(Doorbell::None);
    }
    let offset = d
        .find("bf offset ")
        .and_then(|p| parse_num_prefix(&d[p + 10..]))
        .ok_or_else(|| anyhow!("doorbell without bf offset: {d:?}"))? as u32;
    if d.contains("BlueFlame") {
        let len = d
            .find("copy of ")
            .and_then(|p| parse_num_prefix(&d[p + 8..]))
            .ok_or_else(|| anyhow!("BlueFlame without length: {d:?}"))? as u32;
        let bytes = if d.contains("bytes identical") {
            None
        } else {
            hex_after_offset_colon(d)?
        };
        return Ok(Doorbell::BlueFlame { offset, len, bytes });
    }
    let bytes = hex_after_offset_colon(d)?
        .ok_or_else(|| anyhow!("8-byte doorbell without bytes: {d:?}"))?;
    Ok(Doorbell::Db8 { offset, bytes })
}

/// Hex after `bf offset 0x…:` up to `(`.
fn hex_after_offset_colon(d: &str) -> Result<Option<Vec<u8>>> {
    let p = match d.find("bf offset ") {
        Some(p) => p,
        None => return Ok(None),
    };
    let r = &d[p..];
    let Some(c) = r.find(':') else {
        return Ok(None);
    };
    let r = &r[c + 1..];
    let r = r.split('(').next().unwrap_or("");
    let r = r.split(';').next().unwrap_or("");
    if r.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(parse_hex_str(r)?))
}

pub(super) fn parse_wqe_block_line(t: &str) -> Result<WqeBlock> {
    let index = bracket_num(t, "WQE[").ok_or_else(|| anyhow!("bad WQE line"))? as usize;
    let wqebbs = t
        .find(" WQEBB")
        .and_then(|p| t[..p].rsplit([' ', ',']).next().and_then(parse_num_prefix))
        .map(|v| v as u32);
    Ok(WqeBlock {
        index,
        sq_index: after_word_num(t, "sq index ").ok_or_else(|| anyhow!("no sq index"))? as u32,
        ring_offset: after_word_num(t, "ring byte offset ")
            .ok_or_else(|| anyhow!("no ring offset"))? as u32,
        opmod_idx_opcode: kv_req(t, "opmod_idx_opcode")? as u32,
        wqe_index: kv_req(t, "wqe_index")? as u32,
        opcode: kv_req(t, "opcode")? as u32,
        opmod: kv_req(t, "opmod")? as u32,
        qpn_ds: kv_req(t, "qpn_ds")? as u32,
        qpn: kv_req(t, "qpn")? as u32,
        ds: kv_req(t, "ds")? as u32,
        wqebbs,
        wraps: t.contains("WRAPS"),
        fm_ce_se: 0,
        imm: 0,
        wrid: 0,
        wqe_head: 0,
        wr_data: 0,
        lines: Vec::new(),
    })
}
