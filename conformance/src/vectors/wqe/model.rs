//! The wqe vector file's data model: the file, its header and geometries,
//! and one case's QP line, setup note, WRs, post result, doorbell and the
//! posted WQE blocks with their hex lines. The text reader that fills these
//! lives in the sibling `parse` module.

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
