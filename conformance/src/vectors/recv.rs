//! Reader for the recv vector format (`recv_vectors.txt`,
//! `recv_random_visible.txt`): RQ cases (`=== VECTOR N:`) and SRQ cases
//! (`=== SRQ VECTOR N:`), one [`RecvCase`] each.
//!
//! Like the wqe reader it follows the format rules (any number of WRs,
//! SGEs, WQE slots and hex lines; hex of any length; blank lines anywhere)
//! and keeps unrecognised lines in [`RecvCase::unknown_lines`].

use anyhow::{anyhow, bail, Context, Result};
use bareverbs::qp::QpType;

use super::wqe::{
    after_word_num, before_after, bracket_kv, bracket_num, c_int_field, is_hex_line, kv, kv_num,
    kv_req, parse_case_header, parse_hex_line, parse_num_prefix, parse_qp_type, parse_raw_bytes,
    parse_result, parse_sge, split_cases, HexLine, PostResult, Sge,
};

/// A whole recv vector file.
#[derive(Debug, Clone, Default)]
pub struct RecvFile {
    /// The `#` header lines.
    pub header_lines: Vec<String>,
    /// `max_rq_desc_sz=` of the fake device, if stated.
    pub max_rq_desc_sz: Option<u32>,
    /// `max_recv_wr=` of the fake device, if stated.
    pub max_recv_wr: Option<u32>,
    /// `max_srq_recv_wr=` of the fake device, if stated.
    pub max_srq_recv_wr: Option<u32>,
    /// The cases, in file order.
    pub cases: Vec<RecvCase>,
}

/// RQ or SRQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvKind {
    /// `=== VECTOR N:` — `mlx5_post_recv` on a QP's receive queue.
    Rq,
    /// `=== SRQ VECTOR N:` — `mlx5_post_srq_recv`.
    Srq,
}

/// RQ geometry (the `QP:` line).
#[derive(Debug, Clone)]
pub struct RqGeometry {
    /// QP type (RC in the visible files).
    pub qp_type: QpType,
    /// QP number.
    pub qpn: u32,
    /// Requested `max_recv_wr`.
    pub max_recv_wr: u32,
    /// Requested `max_recv_sge`.
    pub max_recv_sge: u32,
    /// `rq.wqe_cnt`.
    pub wqe_cnt: u32,
    /// Bytes per WQE (`x N bytes`).
    pub wqe_size: u32,
    /// `rq.wqe_shift`.
    pub wqe_shift: u32,
    /// RQ ring bytes.
    pub ring_bytes: u32,
    /// Offset of the RQ in the QP buffer.
    pub buf_offset: u32,
    /// `rq.max_post`.
    pub max_post: u32,
    /// `rq.max_gs`.
    pub max_gs: u32,
    /// Returned `cap.max_recv_wr`.
    pub ret_max_recv_wr: Option<u32>,
    /// Returned `cap.max_recv_sge`.
    pub ret_max_recv_sge: Option<u32>,
    /// `wq_sig`.
    pub wq_sig: bool,
}

/// SRQ geometry (the `SRQ:` line).
#[derive(Debug, Clone)]
pub struct SrqGeometry {
    /// SRQ number.
    pub srqn: u32,
    /// Requested `max_wr`.
    pub max_wr: u32,
    /// Requested `max_sge`.
    pub max_sge: u32,
    /// `srq.wqe_shift`.
    pub wqe_shift: u32,
    /// Bytes per WQE.
    pub wqe_size: u32,
    /// Data segments per WQE (`+ N data segs`).
    pub data_segs: Option<u32>,
    /// `srq.max` (WQEs in the buffer).
    pub max: u32,
    /// Buffer bytes.
    pub buf_bytes: u32,
    /// `srq.max_gs`.
    pub max_gs: u32,
    /// `nwqes` (free-list length before the wait queue).
    pub nwqes: u32,
    /// `waitq_head` (-1 = no wait queue).
    pub waitq_head: i64,
    /// `waitq_tail` (-1 = no wait queue).
    pub waitq_tail: i64,
    /// Returned `attr.max_wr`.
    pub ret_max_wr: Option<u32>,
    /// Returned `attr.max_sge`.
    pub ret_max_sge: Option<u32>,
    /// `wq_sig`.
    pub wq_sig: bool,
}

/// One receive WR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecvWr {
    /// `WR[i]`.
    pub index: usize,
    /// `wr_id`.
    pub wr_id: u64,
    /// `num_sge`, a C `int` (may exceed the SGE lines printed; may be negative,
    /// which the provider's `for (i = 0; i < wr->num_sge; ++i)` loops treat as
    /// no SGEs).
    pub num_sge: i32,
    /// SGEs.
    pub sges: Vec<Sge>,
}

/// One SRQ prep operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SrqPrepOp {
    /// `P`: post one filler receive.
    Post,
    /// `P!`: a filler post that failed with ENOMEM.
    PostFailed,
    /// `F<i>`: `mlx5_free_srq_wqe(srq, i)` (an SRQ completion of WQE i).
    Free(u32),
}

/// Setup before the post (the NOTE line), in structured form.
#[derive(Debug, Clone)]
pub enum RecvPrep {
    /// RQ: `prep posted C filler receives (completed…) then O … left outstanding, so rq.head=H rq.tail=T`.
    RqFillers {
        /// Fillers posted and completed (rq.tail = rq.head after each).
        completed: u32,
        /// Fillers then left outstanding.
        outstanding: u32,
        /// Resulting rq.head.
        head: Option<u32>,
        /// Resulting rq.tail.
        tail: Option<u32>,
        /// Filler WR.
        filler: Option<RecvWr>,
    },
    /// SRQ: explicit op sequence (`P P F0 P! …`).
    SrqOps {
        /// The ops in order.
        ops: Vec<SrqPrepOp>,
        /// Resulting srq.counter.
        counter: Option<u32>,
        /// Resulting srq.head.
        head: Option<u32>,
        /// Resulting srq.tail.
        tail: Option<u32>,
        /// Filler WR.
        filler: Option<RecvWr>,
    },
    /// SRQ: `N x { post one filler receive; mlx5_free_srq_wqe(srq, index it used) }` (counter wrap).
    SrqCycles {
        /// Number of post+complete cycles.
        cycles: u32,
        /// Resulting srq.counter.
        counter: Option<u32>,
        /// Resulting srq.head.
        head: Option<u32>,
        /// Resulting srq.tail.
        tail: Option<u32>,
        /// Filler WR.
        filler: Option<RecvWr>,
    },
}

/// One dumped WQE slot.
#[derive(Debug, Clone)]
pub struct RecvWqeBlock {
    /// `WQE[i]` (i-th WQE of the post).
    pub index: usize,
    /// `rq index N` / `srq index N`.
    pub slot: u32,
    /// Ring/buffer byte offset.
    pub offset: u32,
    /// SRQ: `next_wqe_index`.
    pub next_wqe_index: Option<u32>,
    /// `rq.wrid[i]` / `srq.wrid[i]`.
    pub wrid: u64,
    /// Hex lines.
    pub lines: Vec<HexLine>,
}

/// One RQ or SRQ case.
#[derive(Debug, Clone)]
pub struct RecvCase {
    /// RQ or SRQ.
    pub kind: RecvKind,
    /// Vector number.
    pub number: u32,
    /// Title.
    pub title: String,
    /// 1-based line of the `===` header.
    pub line: usize,
    /// Raw case text.
    pub raw: String,
    /// RQ geometry (RQ cases).
    pub rq: Option<RqGeometry>,
    /// SRQ geometry (SRQ cases).
    pub srq: Option<SrqGeometry>,
    /// NOTE text, if any.
    pub note: Option<String>,
    /// Structured setup, if a NOTE was present and understood.
    pub prep: Option<RecvPrep>,
    /// The WR list.
    pub wrs: Vec<RecvWr>,
    /// Expected result.
    pub result: PostResult,
    /// rq.head / srq.head before.
    pub head_before: u32,
    /// rq.head / srq.head after.
    pub head_after: u32,
    /// RQ: `rq.tail=` (unchanged by a post).
    pub rq_tail: Option<u32>,
    /// RQ: outstanding before the post.
    pub outstanding_before: Option<u32>,
    /// SRQ tail before.
    pub tail_before: Option<u32>,
    /// SRQ tail after.
    pub tail_after: Option<u32>,
    /// SRQ counter (u16) before.
    pub counter_before: Option<u32>,
    /// SRQ counter after.
    pub counter_after: Option<u32>,
    /// RQ dbrec value before (be32 value).
    pub dbrec_before: Option<u32>,
    /// dbrec bytes after (memory order).
    pub dbrec_after: Option<Vec<u8>>,
    /// SRQ free bitmap set bits before.
    pub free_bitmap_before: Option<Vec<u32>>,
    /// SRQ free bitmap set bits after.
    pub free_bitmap_after: Option<Vec<u32>>,
    /// Dumped WQE slots.
    pub wqes: Vec<RecvWqeBlock>,
    /// Unrecognised lines.
    pub unknown_lines: Vec<String>,
}

impl RecvCase {
    /// Ring (RQ) or buffer (SRQ) size in bytes.
    pub fn ring_bytes(&self) -> usize {
        match (&self.rq, &self.srq) {
            (Some(r), _) => r.ring_bytes as usize,
            (_, Some(s)) => s.buf_bytes as usize,
            _ => 0,
        }
    }
    /// Bytes per WQE slot.
    pub fn wqe_size(&self) -> usize {
        match (&self.rq, &self.srq) {
            (Some(r), _) => r.wqe_size as usize,
            (_, Some(s)) => s.wqe_size as usize,
            _ => 0,
        }
    }
    /// Number of WQE slots (wrid table length).
    pub fn slots(&self) -> usize {
        match (&self.rq, &self.srq) {
            (Some(r), _) => r.wqe_cnt as usize,
            (_, Some(s)) => s.max as usize,
            _ => 0,
        }
    }
}

/// The largest ring a receive case may name (slots × WQE size): 65536
/// slots of 512 bytes, the largest receive descriptor mlx5 devices report
/// (`max_rq_desc_sz`). The replay allocates the ring, so a file cannot make
/// the tool allocate more.
pub const MAX_RING_BYTES: u64 = 65536 * 512;
pub use super::MAX_PREP_POSTS;

impl RecvCase {
    /// Refuses a case whose replay would allocate or loop more than any
    /// real case needs ([`MAX_RING_BYTES`], [`MAX_PREP_POSTS`]).
    pub fn check_bounds(&self) -> Result<()> {
        let ring = (self.slots() as u64) << self.wqe_shift().min(63);
        if ring > MAX_RING_BYTES || self.ring_bytes() as u64 > MAX_RING_BYTES {
            bail!(
                "the ring is {} slots of 2^{} bytes, more than {MAX_RING_BYTES} bytes",
                self.slots(),
                self.wqe_shift()
            );
        }
        let posts = match &self.prep {
            Some(RecvPrep::RqFillers {
                completed,
                outstanding,
                ..
            }) => u64::from(*completed) + u64::from(*outstanding),
            Some(RecvPrep::SrqOps { ops, .. }) => ops.len() as u64,
            Some(RecvPrep::SrqCycles { cycles, .. }) => u64::from(*cycles),
            None => 0,
        };
        if posts > MAX_PREP_POSTS {
            bail!("the setup runs {posts} filler posts, more than {MAX_PREP_POSTS}");
        }
        Ok(())
    }
    /// log2 of the WQE slot size.
    pub fn wqe_shift(&self) -> u32 {
        match (&self.rq, &self.srq) {
            (Some(r), _) => r.wqe_shift,
            (_, Some(s)) => s.wqe_shift,
            _ => 0,
        }
    }
}

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

/// A WQE stride's log2 from a file: at most 16 (64 KiB, far above any
/// receive WQE), so the replay never shifts past its integer width.
fn shift_of(v: u64) -> Result<u32> {
    if v > 16 {
        bail!("wqe_shift {v} is more than 16");
    }
    Ok(v as u32)
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

fn parse_recv_wr(body: &str) -> Result<RecvWr> {
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

fn parse_rq_geometry(t: &str) -> Result<RqGeometry> {
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

fn parse_srq_geometry(t: &str) -> Result<SrqGeometry> {
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

fn parse_prep(n: &str) -> Result<Option<RecvPrep>> {
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
