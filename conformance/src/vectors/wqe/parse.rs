//! The wqe file and case reader: the `#` header lines, then one
//! [`WqeCase`] per `=== VECTOR N:` block, each line dispatched to its line
//! parser in [`super::lines`].

use anyhow::{anyhow, bail, Context, Result};

use super::ah::resolve_ud_ah;
use super::lines::{
    apply_wr_extra, before_after, parse_doorbell, parse_prep_note, parse_qp_spec, parse_raw_bytes,
    parse_result, parse_sge, parse_wqe_block_line, parse_wr_fields,
};
use super::model::{
    Doorbell, FailedBlock, Geometry, PostResult, PrepNote, QpSpec, SendWr, WqeBlock, WqeCase,
    WqeFile, WqeHeader, MAX_PAYLOAD_BYTES,
};
use super::text::{
    after_word_num, bracket_kv, bracket_num, is_hex_line, kv_num, kv_req, parse_case_header,
    parse_hex_line, parse_hex_str, parse_num_prefix, split_cases,
};

/// Reads a wqe vector file.
pub fn read_wqe_file(text: &str) -> Result<WqeFile> {
    let mut file = WqeFile::default();
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if t.starts_with("=== ") {
            break;
        }
        if t.starts_with('#') {
            parse_header_line(&mut file.header, t).with_context(|| format!("line {}", i + 1))?;
            file.header.lines.push(t.to_string());
        }
    }
    for (line, raw) in split_cases(text) {
        let c = parse_case(&raw, line)
            .with_context(|| format!("case at line {line}: {}", first_line(&raw)))?;
        file.cases.push(c);
    }
    Ok(file)
}

fn parse_header_line(h: &mut WqeHeader, t: &str) -> Result<()> {
    let body = t.trim_start_matches('#').trim();
    if body.contains("Fake device:") || body.contains("fake device") {
        h.max_sq_desc_sz = kv_num(body, "max_sq_desc_sz").map(|v| v as u32);
        h.max_rq_desc_sz = kv_num(body, "max_rq_desc_sz").map(|v| v as u32);
        h.max_send_wqebb = kv_num(body, "max_send_wqebb").map(|v| v as u32);
        h.bf_reg_size = kv_num(body, "bf_reg_size").map(|v| v as u32);
        if let Some(p) = body.find("bf buf_size=") {
            h.bf_buf_size = parse_num_prefix(&body[p + "bf buf_size=".len()..]).map(|v| v as u32);
        }
    }
    if body.contains("mlx5_wqe_av bytes:") {
        let hex = body.split("bytes:").nth(1).unwrap_or("");
        let bytes = parse_hex_str(hex)?;
        if body.starts_with("plain") {
            h.plain_av = Some(bytes);
        } else if body.starts_with("GRH") {
            h.grh_av = Some(bytes);
        }
    }
    if body.starts_with("remote_qpn=") || body.contains("for every UD WR") {
        h.remote_qpn = kv_num(body, "remote_qpn").map(|v| v as u32);
        h.remote_qkey = kv_num(body, "remote_qkey").map(|v| v as u32);
    }
    if body.contains("payload[k] = k & 0xff") {
        if let Some(p) = body.find(" bytes)") {
            let pre = &body[..p];
            let n = pre.rsplit([' ', ',']).next().unwrap_or("");
            h.payload_len = n.parse().ok();
            if let Some(n) = h.payload_len.filter(|&n| n > MAX_PAYLOAD_BYTES) {
                bail!("the payload buffer is {n} bytes, more than {MAX_PAYLOAD_BYTES}");
            }
        }
    }
    // `G0 RC 64/16/256   type=RC max_send_wr=… -> sq.wqe_cnt=… ; filler = 1 WQEBB`
    if body.starts_with('G') && body.contains("type=") && body.contains("->") {
        let name = body.split_whitespace().next().unwrap_or("").to_string();
        let qp = parse_qp_spec(body)?;
        let filler_wqebbs = body
            .find("filler = ")
            .and_then(|p| parse_num_prefix(&body[p + 9..]))
            .map(|v| v as u32);
        h.geometries.push(Geometry {
            name,
            qp,
            filler_wqebbs,
        });
    }
    Ok(())
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

#[derive(PartialEq, Default)]
enum Cur {
    #[default]
    None,
    Wqe,
    Failed,
}

fn parse_case(raw: &str, line: usize) -> Result<WqeCase> {
    let mut lines = raw.lines();
    let (_, number, title) = parse_case_header(lines.next().unwrap_or(""))?;
    let mut r = CaseReader::default();
    for l in lines {
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        r.line(t)?;
    }
    r.finish(number, title, line, raw)
}

/// [`parse_case`]'s findings so far, line by line: what each kind of line
/// says (`None` until seen) and which block hex lines belong to.
#[derive(Default)]
struct CaseReader {
    qp: Option<QpSpec>,
    prep: Option<PrepNote>,
    wrs: Vec<SendWr>,
    result: Option<PostResult>,
    cur_post: Option<(u64, u64)>,
    head: Option<(u64, u64)>,
    dbrec: Option<Vec<u8>>,
    doorbell: Option<Doorbell>,
    bf: Option<(u64, u64)>,
    bf_buf_size: Option<u32>,
    wqes: Vec<WqeBlock>,
    failed: Vec<FailedBlock>,
    unknown: Vec<String>,
    cur: Cur,
}

impl CaseReader {
    /// One trimmed, non-blank, non-comment line of the case.
    fn line(&mut self, t: &str) -> Result<()> {
        if t.starts_with("QP:") {
            self.qp = Some(parse_qp_spec(t)?);
        } else if let Some(n) = t.strip_prefix("NOTE:") {
            self.prep = Some(parse_prep_note(n.trim())?);
        } else if t.starts_with("WR[") {
            let idx = bracket_num(t, "WR[").ok_or_else(|| anyhow!("bad WR line {t:?}"))? as usize;
            let body = t.split_once(':').map(|x| x.1).unwrap_or("");
            let mut wr = parse_wr_fields(body, idx)?;
            wr.index = idx;
            self.wrs.push(wr);
            self.cur = Cur::None;
        } else if t.starts_with("sge[") {
            let wr = self
                .wrs
                .last_mut()
                .ok_or_else(|| anyhow!("sge before WR: {t:?}"))?;
            wr.sges.push(parse_sge(t)?);
        } else if t.starts_with("rdma.")
            || t.starts_with("atomic.")
            || t.starts_with("ud:")
            || t.starts_with("bind_mw:")
        {
            let wr = self
                .wrs
                .last_mut()
                .ok_or_else(|| anyhow!("WR field before WR: {t:?}"))?;
            apply_wr_extra(wr, t)?;
        } else if t.starts_with("result:") {
            self.result = Some(parse_result(t)?);
        } else if t.starts_with("sq.cur_post") {
            let (a, b) = t.split_once(';').unwrap_or((t, ""));
            self.cur_post = Some(before_after(a)?);
            if !b.is_empty() {
                self.head = Some(before_after(b)?);
            }
        } else if t.starts_with("sq.head") {
            self.head = Some(before_after(t)?);
        } else if t.starts_with("dbrec") {
            self.dbrec = Some(parse_raw_bytes(t)?);
        } else if let Some(d) = t.strip_prefix("doorbell:") {
            self.doorbell = Some(parse_doorbell(d.trim())?);
        } else if t.starts_with("bf->offset") {
            self.bf = Some(before_after(t)?);
            self.bf_buf_size = kv_num(t, "buf_size").map(|v| v as u32);
        } else {
            self.block_line(t)?;
        }
        Ok(())
    }

    /// The lines of the posted-WQE and failed-WR blocks (and anything
    /// unrecognised).
    fn block_line(&mut self, t: &str) -> Result<()> {
        if t.starts_with("WQE[") {
            self.wqes.push(parse_wqe_block_line(t)?);
            self.cur = Cur::Wqe;
        } else if t.starts_with("fm_ce_se=") && self.cur == Cur::Wqe {
            let w = self.wqes.last_mut().expect("cur is Wqe");
            w.fm_ce_se = kv_req(t, "fm_ce_se")? as u32;
            w.imm = kv_req(t, "imm")? as u32;
            w.wrid = bracket_kv(t, "sq.wrid[").ok_or_else(|| anyhow!("no sq.wrid in {t:?}"))?;
            w.wqe_head = bracket_kv(t, "sq.wqe_head[").ok_or_else(|| anyhow!("no wqe_head"))?;
            w.wr_data = bracket_kv(t, "sq.wr_data[").ok_or_else(|| anyhow!("no wr_data"))?;
        } else if t.starts_with("failed WR") {
            let sq_index = after_word_num(t, "sq index ").unwrap_or(0) as u32;
            self.failed.push(FailedBlock {
                sq_index,
                text: t.to_string(),
                lines: Vec::new(),
            });
            self.cur = Cur::Failed;
        } else if is_hex_line(t) {
            let h = parse_hex_line(t)?;
            match self.cur {
                Cur::Wqe => self.wqes.last_mut().expect("wqe").lines.push(h),
                Cur::Failed => self.failed.last_mut().expect("failed").lines.push(h),
                Cur::None => bail!("hex line outside a WQE block: {t:?}"),
            }
        } else {
            self.unknown.push(t.to_string());
        }
        Ok(())
    }

    /// The case, once every required line was seen.
    fn finish(self, number: u32, title: String, line: usize, raw: &str) -> Result<WqeCase> {
        let CaseReader {
            qp,
            prep,
            mut wrs,
            result,
            cur_post,
            head,
            dbrec,
            doorbell,
            bf,
            bf_buf_size,
            wqes,
            failed,
            unknown,
            cur: _,
        } = self;
        let qp = qp.ok_or_else(|| anyhow!("missing QP line"))?;
        resolve_ud_ah(&title, &mut wrs);
        let (cur_post_before, cur_post_after) =
            cur_post.ok_or_else(|| anyhow!("missing sq.cur_post"))?;
        let (head_before, head_after) = head.ok_or_else(|| anyhow!("missing sq.head"))?;
        let (bf_offset_before, bf_offset_after) =
            bf.ok_or_else(|| anyhow!("missing bf->offset"))?;
        Ok(WqeCase {
            number,
            title,
            line,
            raw: raw.to_string(),
            qp,
            prep,
            wrs,
            result: result.ok_or_else(|| anyhow!("missing result line"))?,
            cur_post_before: cur_post_before as u32,
            cur_post_after: cur_post_after as u32,
            head_before: head_before as u32,
            head_after: head_after as u32,
            dbrec_after: dbrec.ok_or_else(|| anyhow!("missing dbrec line"))?,
            doorbell: doorbell.ok_or_else(|| anyhow!("missing doorbell line"))?,
            bf_offset_before: bf_offset_before as u32,
            bf_offset_after: bf_offset_after as u32,
            bf_buf_size,
            wqes,
            failed,
            unknown_lines: unknown,
        })
    }
}
