//! The recv file and case reader: the `#` header, then one [`RecvCase`]
//! per `=== [SRQ ]VECTOR N:` block, each line applied to the case.

use anyhow::{anyhow, bail, Context, Result};

use super::super::wqe::{
    after_word_num, before_after, bracket_kv, bracket_num, is_hex_line, kv_num, parse_case_header,
    parse_hex_line, parse_num_prefix, parse_raw_bytes, parse_result, parse_sge, split_cases,
    PostResult,
};
use super::lines::{parse_prep, parse_recv_wr, parse_rq_geometry, parse_srq_geometry};
use super::model::{RecvCase, RecvFile, RecvKind, RecvWqeBlock};

/// Reads a recv vector file.
pub fn read_recv_file(text: &str) -> Result<RecvFile> {
    let mut file = RecvFile::default();
    for l in text.lines() {
        let t = l.trim();
        if t.starts_with("=== ") {
            break;
        }
        if t.starts_with('#') {
            if t.contains("Fake device") || t.contains("fake device") {
                file.max_rq_desc_sz = kv_num(t, "max_rq_desc_sz").map(|v| v as u32);
                file.max_recv_wr = kv_num(t, "max_recv_wr").map(|v| v as u32);
                file.max_srq_recv_wr = kv_num(t, "max_srq_recv_wr").map(|v| v as u32);
            }
            file.header_lines.push(t.to_string());
        }
    }
    for (line, raw) in split_cases(text) {
        let c = parse_case(&raw, line)
            .and_then(|c| c.check_bounds().map(|()| c))
            .with_context(|| {
                format!("case at line {line}: {}", raw.lines().next().unwrap_or(""))
            })?;
        file.cases.push(c);
    }
    Ok(file)
}

fn parse_case(raw: &str, line: usize) -> Result<RecvCase> {
    let mut lines = raw.lines();
    let (prefix, number, title) = parse_case_header(lines.next().unwrap_or(""))?;
    let kind = if prefix.eq_ignore_ascii_case("SRQ") {
        RecvKind::Srq
    } else {
        RecvKind::Rq
    };
    let mut c = empty_case(kind, number, title, line, raw);
    let mut seen = Seen::default();
    for l in lines {
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        case_line(&mut c, &mut seen, t)?;
    }
    if !seen.result {
        bail!("missing result line");
    }
    if !seen.head {
        bail!("missing head line");
    }
    match kind {
        RecvKind::Rq if c.rq.is_none() => bail!("RQ case without QP line"),
        RecvKind::Srq if c.srq.is_none() => bail!("SRQ case without SRQ line"),
        _ => {}
    }
    Ok(c)
}

/// The lines a case must have, seen so far.
#[derive(Default)]
struct Seen {
    /// The `result:` line.
    result: bool,
    /// The head line (`rq.head …` or `srq.head …`).
    head: bool,
}

/// A case with its header read and nothing else yet.
fn empty_case(kind: RecvKind, number: u32, title: String, line: usize, raw: &str) -> RecvCase {
    RecvCase {
        kind,
        number,
        title,
        line,
        raw: raw.to_string(),
        rq: None,
        srq: None,
        note: None,
        prep: None,
        wrs: Vec::new(),
        result: PostResult {
            ret: 0,
            errno: None,
            bad_wr: None,
        },
        head_before: 0,
        head_after: 0,
        rq_tail: None,
        outstanding_before: None,
        tail_before: None,
        tail_after: None,
        counter_before: None,
        counter_after: None,
        dbrec_before: None,
        dbrec_after: None,
        free_bitmap_before: None,
        free_bitmap_after: None,
        wqes: Vec::new(),
        unknown_lines: Vec::new(),
    }
}

/// One trimmed, non-blank, non-comment line of a case, applied to `c`.
fn case_line(c: &mut RecvCase, seen: &mut Seen, t: &str) -> Result<()> {
    if t.starts_with("QP:") {
        c.rq = Some(parse_rq_geometry(t)?);
    } else if t.starts_with("SRQ:") {
        c.srq = Some(parse_srq_geometry(t)?);
    } else if let Some(n) = t.strip_prefix("NOTE:") {
        let n = n.trim();
        c.note = Some(n.to_string());
        c.prep = parse_prep(n)?;
    } else if t.starts_with("WR[") {
        let index = bracket_num(t, "WR[").ok_or_else(|| anyhow!("bad WR line {t:?}"))? as usize;
        let body = t.split_once(':').map(|x| x.1).unwrap_or("");
        let mut wr = parse_recv_wr(body)?;
        wr.index = index;
        c.wrs.push(wr);
    } else if t.starts_with("sge[") {
        let wr = c
            .wrs
            .last_mut()
            .ok_or_else(|| anyhow!("sge before WR: {t:?}"))?;
        wr.sges.push(parse_sge(t)?);
    } else if t.starts_with("result:") {
        c.result = parse_result(t)?;
        seen.result = true;
    } else if t.starts_with("rq.head") {
        rq_head_line(c, t)?;
        seen.head = true;
    } else if t.starts_with("srq.head") {
        if srq_counters_line(c, t)? {
            seen.head = true;
        }
    } else if t.starts_with("free_wqe_bitmap") {
        c.free_bitmap_before = Some(parse_set(t, "before=")?);
        c.free_bitmap_after = Some(parse_set(t, "after=")?);
    } else if t.starts_with("dbrec") {
        dbrec_line(c, t)?;
    } else if t.starts_with("WQE[") {
        c.wqes.push(parse_recv_wqe_line(t)?);
    } else if is_hex_line(t) {
        let h = parse_hex_line(t)?;
        c.wqes
            .last_mut()
            .ok_or_else(|| anyhow!("hex line outside a WQE block: {t:?}"))?
            .lines
            .push(h);
    } else {
        c.unknown_lines.push(t.to_string());
    }
    Ok(())
}

/// `rq.head (…) before=… after=… ; rq.tail=… (outstanding before post=…, …)`.
fn rq_head_line(c: &mut RecvCase, t: &str) -> Result<()> {
    let (a, b) = t.split_once(';').unwrap_or((t, ""));
    let (hb, ha) = before_after(a)?;
    c.head_before = hb as u32;
    c.head_after = ha as u32;
    c.rq_tail = kv_num(b, "rq.tail").map(|v| v as u32);
    c.outstanding_before = b
        .find("outstanding before post=")
        .and_then(|p| parse_num_prefix(&b[p + 24..]))
        .map(|v| v as u32);
    Ok(())
}

/// `srq.head …; srq.tail …; srq.counter …` (each before/after). Returns
/// whether the head was among them.
fn srq_counters_line(c: &mut RecvCase, t: &str) -> Result<bool> {
    let mut head = false;
    for part in t.split(';') {
        let p = part.trim();
        let (b, a) = before_after(p)?;
        if p.starts_with("srq.head") {
            c.head_before = b as u32;
            c.head_after = a as u32;
            head = true;
        } else if p.starts_with("srq.tail") {
            c.tail_before = Some(b as u32);
            c.tail_after = Some(a as u32);
        } else if p.starts_with("srq.counter") {
            c.counter_before = Some(b as u32);
            c.counter_after = Some(a as u32);
        }
    }
    Ok(head)
}

/// `dbrec[…] before: be32 … ; after: raw bytes …`: the value before the post
/// and the bytes after.
fn dbrec_line(c: &mut RecvCase, t: &str) -> Result<()> {
    if let Some(p) = t.find("before:") {
        let r = &t[p..];
        c.dbrec_before = r
            .find("be32 ")
            .and_then(|q| parse_num_prefix(&r[q + 5..]))
            .map(|v| v as u32);
    }
    if t.contains("raw bytes") {
        c.dbrec_after = Some(parse_raw_bytes(t)?);
    }
    Ok(())
}

/// `WQE[i] at rq index S (ring byte offset O): rq.wrid[S]=…` (or `srq index`):
/// opens a WQE block.
fn parse_recv_wqe_line(t: &str) -> Result<RecvWqeBlock> {
    let index = bracket_num(t, "WQE[").ok_or_else(|| anyhow!("bad WQE line"))? as usize;
    let slot = after_word_num(t, "rq index ")
        .or_else(|| after_word_num(t, "srq index "))
        .or_else(|| after_word_num(t, " index "))
        .ok_or_else(|| anyhow!("no index in {t:?}"))? as u32;
    let offset =
        after_word_num(t, "byte offset ").ok_or_else(|| anyhow!("no offset in {t:?}"))? as u32;
    let wrid = bracket_kv(t, "wrid[").ok_or_else(|| anyhow!("no wrid in {t:?}"))?;
    Ok(RecvWqeBlock {
        index,
        slot,
        offset,
        next_wqe_index: kv_num(t, "next_wqe_index").map(|v| v as u32),
        wrid,
        lines: Vec::new(),
    })
}

fn parse_set(t: &str, key: &str) -> Result<Vec<u32>> {
    let p = t.find(key).ok_or_else(|| anyhow!("no {key} in {t:?}"))?;
    let r = &t[p + key.len()..];
    let o = r.find('{').ok_or_else(|| anyhow!("no '{{' in {t:?}"))?;
    let e = r[o..]
        .find('}')
        .map(|e| o + e)
        .ok_or_else(|| anyhow!("no '}}' after '{{' in {t:?}"))?;
    r[o + 1..e]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            parse_num_prefix(s)
                .map(|v| v as u32)
                .ok_or_else(|| anyhow!("bad bit {s:?}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bit set whose closing brace comes before its opening one is an
    /// error (it used to slice out of order and panic: found by the
    /// `vector_files` fuzz target).
    #[test]
    fn bit_sets_with_braces_out_of_order_are_errors() {
        assert_eq!(parse_set("after={1, 3}", "after=").unwrap(), vec![1, 3]);
        assert!(parse_set("after=} {1}", "after=").is_ok());
        assert!(parse_set("after=}{", "after=").is_err());
        assert!(parse_set("after=} x {", "after=").is_err());
    }
}
