//! Reader for the wqe vector format (`wqe_vectors.txt`,
//! `wqe_random_visible.txt`): one [`WqeCase`] per `=== VECTOR N:` block.
//!
//! The reader follows the format rules rather than the rows: any number of
//! WRs, SGEs, WQE blocks and hex lines; hex groups of any length; blank lines
//! anywhere. Lines it does not recognise inside a case are kept in
//! [`WqeCase::unknown_lines`] (never silently dropped) so callers and tests
//! can see them. The parsing helpers at the bottom are shared with the recv
//! reader.

use anyhow::{anyhow, bail, Context, Result};
use bareverbs::qp::QpType;

/// A whole wqe vector file.
#[derive(Debug, Clone, Default)]
pub struct WqeFile {
    /// File-level facts from the `#` header.
    pub header: WqeHeader,
    /// The cases, in file order.
    pub cases: Vec<WqeCase>,
}

/// File-level facts stated in the `#` header lines.
#[derive(Debug, Clone, Default)]
pub struct WqeHeader {
    /// Every header line (including the `#`).
    pub lines: Vec<String>,
    /// `max_sq_desc_sz=` of the fake device.
    pub max_sq_desc_sz: Option<u32>,
    /// `max_rq_desc_sz=` of the fake device.
    pub max_rq_desc_sz: Option<u32>,
    /// `max_send_wqebb=` of the fake device.
    pub max_send_wqebb: Option<u32>,
    /// `bf_reg_size=` (bytes of the whole BlueFlame register).
    pub bf_reg_size: Option<u32>,
    /// `(bf buf_size=N)`: one BlueFlame half; the offset toggles by this.
    pub bf_buf_size: Option<u32>,
    /// `mlx5_wqe_av` bytes of the plain (non-GRH) AH.
    pub plain_av: Option<Vec<u8>>,
    /// `mlx5_wqe_av` bytes of the GRH AH.
    pub grh_av: Option<Vec<u8>>,
    /// `remote_qpn=` used by every UD WR, if stated.
    pub remote_qpn: Option<u32>,
    /// `remote_qkey=` used by every UD WR, if stated.
    pub remote_qkey: Option<u32>,
    /// Payload length if stated (`payload[k] = k & 0xff, N bytes`).
    /// The payload content is always `payload[k] = k & 0xff` (see [`payload_bytes`]).
    pub payload_len: Option<usize>,
    /// Named geometries (`#   G0 RC 64/16/256  type=RC ...`).
    pub geometries: Vec<Geometry>,
}

/// One named geometry from the random file header.
#[derive(Debug, Clone)]
pub struct Geometry {
    /// E.g. `G3`.
    pub name: String,
    /// The requested/result values.
    pub qp: QpSpec,
    /// `filler = N WQEBB`.
    pub filler_wqebbs: Option<u32>,
}

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

/// The QP line: requested capabilities and the provider's sizing result.
#[derive(Debug, Clone)]
pub struct QpSpec {
    /// RC/UC/UD.
    pub qp_type: QpType,
    /// 24-bit QP number (0 in header geometries, which have none).
    pub qpn: u32,
    /// Requested `max_send_wr`.
    pub max_send_wr: u32,
    /// Requested `max_send_sge`.
    pub max_send_sge: u32,
    /// Requested `max_inline_data`.
    pub max_inline_data: u32,
    /// `sq_sig_all`.
    pub sq_sig_all: bool,
    /// Resulting `sq.wqe_cnt` (WQEBBs).
    pub wqe_cnt: u32,
    /// Ring bytes if printed (`(32768 bytes)`), else `wqe_cnt * 64`.
    pub sq_bytes: u32,
    /// Resulting `sq.max_post`.
    pub max_post: u32,
    /// Resulting `max_gs`.
    pub max_gs: u32,
    /// Resulting (read-back) `max_inline_data`.
    pub ret_max_inline_data: u32,
}

/// The prep NOTE line (ring preparation before the post).
#[derive(Debug, Clone)]
pub struct PrepNote {
    /// The NOTE text after `NOTE:`.
    pub text: String,
    /// Number of filler posts (`prep posted K …`).
    pub count: u32,
    /// `so cur_post=N` if stated.
    pub cur_post: Option<u32>,
    /// Whether the fillers were completed (`(completed)` or `sq.tail=sq.head`).
    pub completed: bool,
    /// The filler WR if spelled out (`filler WR (...): opcode=…`).
    pub filler: Option<SendWr>,
    /// `N WQEBB per filler` / `K one-WQEBB SENDs`.
    pub wqebbs_per_filler: Option<u32>,
}

/// Address of an SGE: a plain address or an offset into the payload buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SgeAddr {
    /// `addr=0x…`.
    Addr(u64),
    /// `addr=&payload[0x…]` (inline data source; `payload[k] = k & 0xff`).
    Payload(usize),
}

/// One scatter/gather element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sge {
    /// Address or payload offset.
    pub addr: SgeAddr,
    /// Byte length.
    pub length: u32,
    /// Local key.
    pub lkey: u32,
}

/// Which address handle a UD WR uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AhKind {
    /// The plain (non-GRH) AH of the header.
    Plain,
    /// The GRH AH of the header.
    Grh,
}

/// UD fields of a WR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdFields {
    /// `remote_qpn`.
    pub remote_qpn: u32,
    /// `remote_qkey`.
    pub remote_qkey: u32,
    /// AH kind (from the `ud:` text, else the title, else plain).
    pub ah: AhKind,
}

/// RDMA fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RdmaFields {
    /// `remote_addr`.
    pub remote_addr: u64,
    /// `rkey`.
    pub rkey: u32,
}

/// Atomic fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicFields {
    /// `remote_addr`.
    pub remote_addr: u64,
    /// `rkey`.
    pub rkey: u32,
    /// `compare_add`.
    pub compare_add: u64,
    /// `swap`.
    pub swap: u64,
}

/// Memory-window bind fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindMwFields {
    /// `mw.rkey`.
    pub mw_rkey: u32,
    /// `mw.type`.
    pub mw_type: u32,
    /// `new rkey`.
    pub new_rkey: u32,
    /// `mr.lkey`.
    pub mr_lkey: u32,
    /// `addr`.
    pub addr: u64,
    /// `length`.
    pub length: u64,
    /// `mw_access_flags`.
    pub access_flags: u32,
}

/// One send work request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendWr {
    /// Position in the list (`WR[i]`).
    pub index: usize,
    /// Opcode name as printed (`SEND`, `RDMA_WRITE`, `BAD_OPCODE`…).
    pub opcode: String,
    /// Opcode number (`ibv_wr_opcode`) as printed in parentheses.
    pub opcode_num: u32,
    /// `wr_id`.
    pub wr_id: u64,
    /// `num_sge`, a C `int` (may exceed the SGE lines printed; may be negative,
    /// which the provider's `for (i = 0; i < wr->num_sge; ++i)` loops treat as
    /// no SGEs).
    pub num_sge: i32,
    /// `send_flags` bits.
    pub send_flags: u32,
    /// `imm_data` raw `__be32` as stored in the WR.
    pub imm_data: Option<u32>,
    /// `invalidate_rkey`.
    pub invalidate_rkey: Option<u32>,
    /// RDMA fields.
    pub rdma: Option<RdmaFields>,
    /// Atomic fields.
    pub atomic: Option<AtomicFields>,
    /// UD fields.
    pub ud: Option<UdFields>,
    /// Bind-MW fields.
    pub bind_mw: Option<BindMwFields>,
    /// The SGEs printed.
    pub sges: Vec<Sge>,
}

/// `result:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostResult {
    /// Return value (0 = ok, else an errno number).
    pub ret: i32,
    /// Errno name (`ENOMEM`) when not ok.
    pub errno: Option<String>,
    /// `bad_wr=WR[i]`.
    pub bad_wr: Option<usize>,
}

/// The doorbell a case expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Doorbell {
    /// Nothing written to the UAR/BF register.
    None,
    /// Plain 8-byte doorbell write at `offset` of the BF register.
    Db8 {
        /// Offset in the BF register.
        offset: u32,
        /// The 8 bytes in memory order.
        bytes: Vec<u8>,
    },
    /// BlueFlame copy of `len` bytes at `offset`.
    BlueFlame {
        /// Offset in the BF register.
        offset: u32,
        /// Number of bytes copied.
        len: u32,
        /// Explicit bytes if printed; `None` = identical to the last WQE's ring bytes.
        bytes: Option<Vec<u8>>,
    },
}

/// One 16-byte (or any length) hex line of a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexLine {
    /// `+NNN`: offset within the WQE.
    pub rel: u32,
    /// `[ring 0x…]`: byte offset in the ring.
    pub ring: u32,
    /// Line prefixed with `~` (beyond the DS count, never written).
    pub beyond_ds: bool,
    /// The bytes (first run).
    pub bytes: Vec<u8>,
    /// Per byte: `true` = not written by the post (`u`).
    pub unwritten: Vec<bool>,
}

/// One posted WQE.
#[derive(Debug, Clone)]
pub struct WqeBlock {
    /// `WQE[i]` (i-th WQE of the post).
    pub index: usize,
    /// `sq index N`.
    pub sq_index: u32,
    /// `ring byte offset 0x…`.
    pub ring_offset: u32,
    /// Raw `opmod_idx_opcode`.
    pub opmod_idx_opcode: u32,
    /// `wqe_index`.
    pub wqe_index: u32,
    /// `opcode`.
    pub opcode: u32,
    /// `opmod`.
    pub opmod: u32,
    /// Raw `qpn_ds`.
    pub qpn_ds: u32,
    /// `qpn`.
    pub qpn: u32,
    /// `ds` (16-byte units).
    pub ds: u32,
    /// WQEBBs used.
    pub wqebbs: Option<u32>,
    /// `[WRAPS around ring end]`.
    pub wraps: bool,
    /// `fm_ce_se`.
    pub fm_ce_se: u32,
    /// `imm`.
    pub imm: u32,
    /// `sq.wrid[i]`.
    pub wrid: u64,
    /// `sq.wqe_head[i]`.
    pub wqe_head: u64,
    /// `sq.wr_data[i]`.
    pub wr_data: u64,
    /// Hex lines in memory order.
    pub lines: Vec<HexLine>,
}

/// Bytes the provider may have written for a WR that failed.
#[derive(Debug, Clone)]
pub struct FailedBlock {
    /// `sq index N`.
    pub sq_index: u32,
    /// The `failed WR:` line.
    pub text: String,
    /// Hex lines.
    pub lines: Vec<HexLine>,
}

/// One `=== VECTOR N:` case.
#[derive(Debug, Clone)]
pub struct WqeCase {
    /// Vector number.
    pub number: u32,
    /// Title after `N: `.
    pub title: String,
    /// 1-based line of the `===` header in the file.
    pub line: usize,
    /// Raw text of the case (for error messages).
    pub raw: String,
    /// QP line.
    pub qp: QpSpec,
    /// Prep NOTE, if any.
    pub prep: Option<PrepNote>,
    /// The WR list of the post.
    pub wrs: Vec<SendWr>,
    /// Expected result.
    pub result: PostResult,
    /// `sq.cur_post` before/after.
    pub cur_post_before: u32,
    /// `sq.cur_post` after.
    pub cur_post_after: u32,
    /// `sq.head` before.
    pub head_before: u32,
    /// `sq.head` after.
    pub head_after: u32,
    /// Send doorbell record bytes after (memory order).
    pub dbrec_after: Vec<u8>,
    /// Expected doorbell.
    pub doorbell: Doorbell,
    /// `bf->offset` before.
    pub bf_offset_before: u32,
    /// `bf->offset` after.
    pub bf_offset_after: u32,
    /// `buf_size` the offset toggles by, if printed.
    pub bf_buf_size: Option<u32>,
    /// Posted WQEs.
    pub wqes: Vec<WqeBlock>,
    /// Failed-WR partial blocks.
    pub failed: Vec<FailedBlock>,
    /// Lines inside the case that were not recognised.
    pub unknown_lines: Vec<String>,
}

impl WqeCase {
    /// Ring size in bytes.
    pub fn ring_bytes(&self) -> usize {
        self.qp.sq_bytes as usize
    }
}

/// `payload[off..off+len]` where `payload[k] = k & 0xff`.
pub fn payload_bytes(off: usize, len: usize) -> Vec<u8> {
    (off..off + len).map(|k| (k & 0xff) as u8).collect()
}

/// The largest payload buffer a wqe file's header may name: the replay
/// allocates it, so a file cannot make the tool allocate more than this.
/// (The vendor's vector files use 8 KiB.)
pub const MAX_PAYLOAD_BYTES: usize = 64 << 20;

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

/// Splits a vector file into `(1-based line, raw text)` per `=== ` block.
pub(crate) fn split_cases(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim_start().starts_with("=== ") {
            out.push((i + 1, String::new()));
        }
        if let Some(last) = out.last_mut() {
            // Blank/`#` lines between cases are kept but harmless.
            last.1.push_str(l);
            last.1.push('\n');
        }
    }
    for c in &mut out {
        let trimmed = c.1.trim_end().to_string();
        c.1 = trimmed;
        c.1.push('\n');
    }
    out
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Parses `=== [SRQ ]VECTOR N: title` into (prefix before VECTOR, N, title).
pub(crate) fn parse_case_header(l: &str) -> Result<(String, u32, String)> {
    let t = l.trim().trim_start_matches("===").trim();
    let p = t
        .find("VECTOR")
        .ok_or_else(|| anyhow!("no VECTOR in {l:?}"))?;
    let prefix = t[..p].trim().to_string();
    let rest = &t[p + "VECTOR".len()..];
    let colon = rest.find(':').unwrap_or(rest.len());
    let n: u32 = rest[..colon]
        .trim()
        .parse()
        .with_context(|| format!("vector number in {l:?}"))?;
    let title = rest.get(colon + 1..).unwrap_or("").trim().to_string();
    Ok((prefix, n, title))
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

/// Resolves UD AH kinds not stated on the WR lines from the title.
fn resolve_ud_ah(title: &str, wrs: &mut [SendWr]) {
    let n_ud = wrs.iter().filter(|w| w.ud.is_some()).count();
    let mentions = ah_mentions(title);
    let mut ud_i = 0;
    for w in wrs.iter_mut() {
        if let Some(ud) = w.ud.as_mut() {
            if let Some(k) = ah_for_wr(title, w.index) {
                ud.ah = k;
            } else if mentions.len() == n_ud {
                ud.ah = mentions[ud_i];
            } else if let Some(&k) = mentions.first() {
                if mentions.iter().all(|m| *m == k) {
                    ud.ah = k;
                }
            }
            ud_i += 1;
        }
    }
}

fn ah_kind_in(s: &str) -> Option<AhKind> {
    let g = s.find("GRH");
    let p = s.find("plain");
    match (g, p) {
        (Some(g), Some(p)) => Some(if g < p { AhKind::Grh } else { AhKind::Plain }),
        (Some(_), None) => Some(AhKind::Grh),
        (None, Some(_)) => Some(AhKind::Plain),
        _ => None,
    }
}

/// AH mentions in a title, in order (`plain AH`, `GRH AH`, `ah=plain`, `ah=GRH`).
fn ah_mentions(title: &str) -> Vec<AhKind> {
    let mut v = Vec::new();
    let b = title.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let rest = &title[i..];
        if rest.starts_with("plain AH") || rest.starts_with("ah=plain") {
            v.push(AhKind::Plain);
            i += 8;
        } else if rest.starts_with("GRH AH") || rest.starts_with("ah=GRH") {
            v.push(AhKind::Grh);
            i += 6;
        } else {
            i += rest.chars().next().map(|c| c.len_utf8()).unwrap_or(1);
        }
    }
    v
}

/// The AH for WR `i` from a random-style title segment `[i] … ah=GRH;`.
fn ah_for_wr(title: &str, i: usize) -> Option<AhKind> {
    let key = format!("[{i}] ");
    let p = title.find(&key)?;
    let seg = &title[p + key.len()..];
    let seg = seg.split("; [").next().unwrap_or(seg);
    let q = seg.find("ah=")?;
    ah_kind_in(seg[q..].split([' ', ';', ',']).next().unwrap_or(""))
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

fn parse_prep_note(n: &str) -> Result<PrepNote> {
    let count = n
        .find("prep posted ")
        .and_then(|p| parse_num_prefix(&n[p + 12..]))
        .ok_or_else(|| anyhow!("NOTE without 'prep posted K': {n:?}"))?;
    if count > super::MAX_PREP_POSTS {
        bail!(
            "the setup runs {count} filler posts, more than {}",
            super::MAX_PREP_POSTS
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

fn parse_wr_fields(body: &str, index: usize) -> Result<SendWr> {
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

fn apply_wr_extra(wr: &mut SendWr, t: &str) -> Result<()> {
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

fn parse_doorbell(d: &str) -> Result<Doorbell> {
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

fn parse_wqe_block_line(t: &str) -> Result<WqeBlock> {
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

// ---------------------------------------------------------------------------
// Shared low-level helpers.

/// True for `+000 [ring …]: …` and `~+020 …` lines.
pub(crate) fn is_hex_line(t: &str) -> bool {
    let t = t.strip_prefix('~').unwrap_or(t);
    t.starts_with('+') && t.contains("[ring") && t.contains("]:")
}

/// Parses `[~]+REL [ring 0xOFF]: hex… [unwritten:mask] [(comment)]`.
pub(crate) fn parse_hex_line(t: &str) -> Result<HexLine> {
    let (beyond_ds, t2) = match t.strip_prefix('~') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let t2 = t2
        .strip_prefix('+')
        .ok_or_else(|| anyhow!("hex line without '+': {t:?}"))?;
    let rel_s = t2.split_whitespace().next().unwrap_or("");
    let rel =
        u64::from_str_radix(rel_s, 16).with_context(|| format!("bad rel offset in {t:?}"))? as u32;
    let rp = t2
        .find("[ring")
        .ok_or_else(|| anyhow!("no [ring in {t:?}"))?;
    let ring = parse_num_prefix(t2[rp + 5..].trim_start())
        .ok_or_else(|| anyhow!("bad ring offset {t:?}"))? as u32;
    let cp = t2.find("]:").ok_or_else(|| anyhow!("no ']:' in {t:?}"))?;
    let rest = &t2[cp + 2..];
    let mut hex = String::new();
    let mut mask: Option<&str> = None;
    for tok in rest.split_whitespace() {
        if let Some(m) = tok.strip_prefix("unwritten:") {
            mask = Some(m);
            break;
        }
        if tok.starts_with('(') {
            break;
        }
        hex.push_str(tok);
    }
    let bytes = parse_hex_str(&hex).with_context(|| format!("hex in {t:?}"))?;
    let unwritten = match mask {
        Some(m) => {
            let v: Vec<bool> = m
                .chars()
                .map(|c| match c {
                    'u' | 'U' => Ok(true),
                    '.' => Ok(false),
                    o => Err(anyhow!("bad mask char {o:?} in {t:?}")),
                })
                .collect::<Result<_>>()?;
            if v.len() != bytes.len() {
                bail!("mask length {} != {} bytes in {t:?}", v.len(), bytes.len());
            }
            v
        }
        None => vec![beyond_ds; bytes.len()],
    };
    let unwritten = if beyond_ds {
        vec![true; bytes.len()]
    } else {
        unwritten
    };
    Ok(HexLine {
        rel,
        ring,
        beyond_ds,
        bytes,
        unwritten,
    })
}

/// Hex digits (whitespace allowed, optional `0x`) → bytes.
pub(crate) fn parse_hex_str(s: &str) -> Result<Vec<u8>> {
    Ok(crate::hex::parse_hex(s)?)
}

/// Parses a leading number: `0x…` hex or decimal (optional `-`); ignores the rest.
pub(crate) fn parse_num_prefix(s: &str) -> Option<u64> {
    let s = s.trim_start();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        let end = h.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(h.len());
        if end == 0 {
            return None;
        }
        u64::from_str_radix(&h[..end], 16).ok()
    } else if let Some(d) = s.strip_prefix('-') {
        let end = d.find(|c: char| !c.is_ascii_digit()).unwrap_or(d.len());
        let v: i64 = d[..end].parse().ok()?;
        Some((-v) as u64)
    } else {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        if end == 0 {
            return None;
        }
        s[..end].parse().ok()
    }
}

/// Value token of `key=` where the key starts at a word boundary.
pub(crate) fn kv<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}=");
    let mut from = 0;
    while let Some(p) = s[from..].find(&pat) {
        let at = from + p;
        let ok = at == 0 || {
            let c = s[..at].chars().next_back().unwrap_or(' ');
            !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '>' || c == '-')
        };
        if ok {
            let v = &s[at + pat.len()..];
            let end = v.find(char::is_whitespace).unwrap_or(v.len());
            return Some(&v[..end]);
        }
        from = at + pat.len();
    }
    None
}

/// Numeric `key=` value.
pub(crate) fn kv_num(s: &str, key: &str) -> Option<u64> {
    kv(s, key).and_then(parse_num_prefix)
}

/// Required `key=` value that holds a C `int`: decimal (optionally negative)
/// or hex, anything in `i32::MIN..=u32::MAX`, converted to `int` as C does
/// (modulo 2^32).
pub(crate) fn c_int_field(s: &str, key: &str) -> Result<i32> {
    let raw = kv(s, key).ok_or_else(|| anyhow!("missing {key}= in {s:?}"))?;
    let v = parse_num_prefix(raw).ok_or_else(|| anyhow!("{key}: bad number {raw:?}"))? as i64;
    let neg = raw.trim_start().starts_with('-');
    if (neg && v < i32::MIN as i64) || (!neg && !(0..=u32::MAX as i64).contains(&v)) {
        bail!("{key}={raw} is neither a C int nor a uint32_t");
    }
    Ok(v as u32 as i32)
}

/// Required numeric `key=` value.
pub(crate) fn kv_req(s: &str, key: &str) -> Result<u64> {
    kv_num(s, key).ok_or_else(|| anyhow!("missing {key}= in {s:?}"))
}

/// Number after `prefix` (e.g. `WR[` → the index).
pub(crate) fn bracket_num(s: &str, prefix: &str) -> Option<u64> {
    let p = s.find(prefix)?;
    parse_num_prefix(&s[p + prefix.len()..])
}

/// `name[i]=value` → value.
pub(crate) fn bracket_kv(s: &str, prefix: &str) -> Option<u64> {
    let p = s.find(prefix)?;
    let r = &s[p + prefix.len()..];
    let e = r.find("]=")?;
    parse_num_prefix(&r[e + 2..])
}

/// Number right after a phrase (`sq index 5`).
pub(crate) fn after_word_num(s: &str, phrase: &str) -> Option<u64> {
    let p = s.find(phrase)?;
    parse_num_prefix(&s[p + phrase.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_line_variants() {
        let h =
            parse_hex_line("~+020 [ring 0x0020]: 00000000 00000000  unwritten:uuuuuuuu (beyond)")
                .unwrap();
        assert!(h.beyond_ds);
        assert_eq!(h.ring, 0x20);
        assert_eq!(h.bytes.len(), 8);
        assert!(h.unwritten.iter().all(|u| *u));
        let h = parse_hex_line("+010 [ring 0x0190]: 8000000100 unwritten:.....").unwrap();
        assert_eq!(h.bytes, vec![0x80, 0, 0, 1, 0]);
        assert!(parse_hex_line("+010 [ring 0x0190]: 80000001 unwritten:..").is_err());
    }

    #[test]
    fn kv_boundaries() {
        let s = "opmod_idx_opcode=0x0000000a (wqe_index=0 opcode=0x0a opmod=0)";
        assert_eq!(kv_num(s, "opcode"), Some(0xa));
        assert_eq!(kv_num(s, "opmod"), Some(0));
        assert_eq!(kv_num(s, "opmod_idx_opcode"), Some(0xa));
    }
}
