//! The real executors behind `conform`: they build bareverbs queues of the
//! geometry a vector names, replay its preparation through the same post
//! path, post its WRs and report what landed in memory.

use anyhow::{bail, Context, Result};
use bareverbs::platform::{DmaAllocator, DmaBuf, MemUar, BF_OFFSET};
use bareverbs::qp::QpType;
use bareverbs::rq::{RecvQueue, RecvWr, RqConfig, RqSlot, SharedReceiveQueue, SrqConfig, SrqSlot};
use bareverbs::sq::{
    BlueFlame, MwBind, MwType, SendFlags, SendOp, SendQueue, SendWr, Sge, SqConfig, SqSlot, UdDest,
};
use bareverbs::wqe::{AddressVector, Segment};
use bareverbs_sim::dma::HeapDma;

use super::recv::{RecvExecutor, RecvOutcome};
use super::wqe::{DoorbellObs, WqeExecutor, WqeOutcome};
use crate::vectors::recv::{RecvCase, RecvPrep, SrqPrepOp};
use crate::vectors::wqe::{self as vw, SgeAddr, WqeCase, WqeHeader};

/// Offset of the BlueFlame register in the memory-backed UAR page.
const BF_REG: usize = BF_OFFSET;

/// Executes wqe vectors on [`SendQueue`].
#[derive(Debug, Default)]
pub struct SqExecutor;

/// Executes recv vectors on [`RecvQueue`] / [`SharedReceiveQueue`].
#[derive(Debug, Default)]
pub struct RecvQueueExecutor;

/// Converts a vector WR into a bareverbs WR op; `None` for an opcode the
/// verbs API does not have (the provider answers EINVAL).
fn op_of(wr: &vw::SendWr) -> Result<Option<SendOp>> {
    let rdma = || wr.rdma.context("RDMA fields missing");
    let atomic = || wr.atomic.context("atomic fields missing");
    Ok(Some(match wr.opcode_num {
        0 => {
            let r = rdma()?;
            SendOp::Write {
                remote_addr: r.remote_addr,
                rkey: r.rkey,
            }
        }
        1 => {
            let r = rdma()?;
            SendOp::WriteImm {
                remote_addr: r.remote_addr,
                rkey: r.rkey,
                imm: wr.imm_data.unwrap_or(0).swap_bytes(),
            }
        }
        2 => SendOp::Send,
        3 => SendOp::SendImm {
            imm: wr.imm_data.unwrap_or(0).swap_bytes(),
        },
        4 => {
            let r = rdma()?;
            SendOp::Read {
                remote_addr: r.remote_addr,
                rkey: r.rkey,
            }
        }
        5 => {
            let a = atomic()?;
            SendOp::CompSwap {
                remote_addr: a.remote_addr,
                rkey: a.rkey,
                compare: a.compare_add,
                swap: a.swap,
            }
        }
        6 => {
            let a = atomic()?;
            SendOp::FetchAdd {
                remote_addr: a.remote_addr,
                rkey: a.rkey,
                add: a.compare_add,
            }
        }
        7 => SendOp::LocalInv {
            invalidate_rkey: wr.invalidate_rkey.unwrap_or(0),
        },
        8 => {
            let b = wr.bind_mw.context("bind_mw fields missing")?;
            SendOp::BindMw {
                mw_rkey: b.mw_rkey,
                bind: MwBind {
                    mw_type: if b.mw_type == 1 {
                        MwType::Type1
                    } else {
                        MwType::Type2
                    },
                    new_rkey: b.new_rkey,
                    mr_lkey: b.mr_lkey,
                    addr: b.addr,
                    length: b.length,
                    access: bareverbs::mr::Access::from_bits_retain(b.access_flags),
                },
            }
        }
        9 => SendOp::SendInv {
            invalidate_rkey: wr.invalidate_rkey.unwrap_or(0),
        },
        _ => return Ok(None),
    }))
}

fn av_from(bytes: &[u8]) -> Result<AddressVector> {
    AddressVector::parse(bytes).map_err(|e| anyhow::anyhow!("AV bytes: {e}"))
}

/// Everything one execution of a wqe case needs, kept alive together.
struct SqWorld {
    dma: HeapDma,
    ring: DmaBuf,
    dbrec: DmaBuf,
    payload: Vec<u8>,
}

impl SqWorld {
    fn new(ring_bytes: usize, payload_len: usize) -> Result<Self> {
        let dma = HeapDma::new();
        let ring = dma.alloc(ring_bytes, 4096).context("dma")?;
        let dbrec = dma.alloc(64, 64).context("dma")?;
        let payload = vw::payload_bytes(0, payload_len.max(8192));
        Ok(SqWorld {
            dma,
            ring,
            dbrec,
            payload,
        })
    }
    fn ring_bytes(&self) -> Vec<u8> {
        read_dma(self.ring, self.ring.len)
    }
    fn fill_ring(&self, b: u8) {
        // SAFETY: as above; raw write of the whole ring.
        unsafe { std::ptr::write_bytes(self.ring.cpu.as_ptr(), b, self.ring.len) };
    }
    fn dbrec_word(&self, word: usize) -> Vec<u8> {
        // SAFETY: the record is 64 live bytes.
        unsafe { std::slice::from_raw_parts(self.dbrec.cpu.as_ptr().add(word * 4), 4).to_vec() }
    }
}

impl Drop for SqWorld {
    fn drop(&mut self) {
        let _ = &self.dma;
    }
}

/// The send queue a case runs on: memory-backed UAR, slots on the heap.
type Sq = SendQueue<MemUar, Vec<SqSlot>>;

/// The send queue configuration of a case's QP, with BlueFlame buffers of
/// `buf_size` bytes at [`BF_REG`].
fn sq_config(case: &WqeCase, qp_type: QpType, buf_size: usize) -> SqConfig {
    let qp = &case.qp;
    SqConfig::new(qp_type, qp.max_post, qp.max_gs)
        .qpn(qp.qpn)
        .inline(qp.ret_max_inline_data)
        .sig_all(qp.sq_sig_all)
        .atomics(true)
        .blueflame(BlueFlame {
            reg_offset: BF_REG,
            buf_size,
            enabled: true,
            prefer: false,
        })
}

/// The file header's two address vectors (plain and GRH), parsed once per
/// case; UD WRs name one of them.
struct HeaderAvs {
    plain: Option<AddressVector>,
    grh: Option<AddressVector>,
}

impl HeaderAvs {
    fn parse(header: &WqeHeader) -> Result<Self> {
        Ok(HeaderAvs {
            plain: header.plain_av.as_deref().map(av_from).transpose()?,
            grh: header.grh_av.as_deref().map(av_from).transpose()?,
        })
    }

    /// The address vector a UD WR names.
    fn of(&self, ud: &vw::UdFields) -> Result<AddressVector> {
        match ud.ah {
            vw::AhKind::Plain => self.plain.context("plain AH bytes missing from header"),
            vw::AhKind::Grh => self.grh.context("GRH AH bytes missing from header"),
        }
    }
}

/// Prep: replays the case's filler posts through the same post path,
/// retiring each at once when the vector says they completed.
fn replay_prep(
    sq: &mut Sq,
    case: &WqeCase,
    header: &WqeHeader,
    world: &SqWorld,
    qp_type: QpType,
    avs: &HeaderAvs,
) -> Result<()> {
    let Some(prep) = &case.prep else {
        return Ok(());
    };
    let filler = prep.filler.clone();
    for _ in 0..prep.count {
        let (sges, op, flags, ud) = match &filler {
            Some(f) => (
                sgl_of(f, &world.payload)?,
                op_of(f)?.context("filler opcode")?,
                SendFlags::from_bits_truncate(f.send_flags),
                f.ud,
            ),
            None => (
                vec![Sge {
                    addr: 0x9000,
                    length: 16,
                    lkey: 0x99,
                }],
                SendOp::Send,
                SendFlags::SIGNALED,
                (qp_type == QpType::Ud).then_some(vw::UdFields {
                    remote_qpn: header.remote_qpn.unwrap_or(0xbeef),
                    remote_qkey: header.remote_qkey.unwrap_or(0x1111_1111),
                    ah: vw::AhKind::Plain,
                }),
            ),
        };
        let av = ud.as_ref().map(|u| avs.of(u)).transpose()?;
        let mut wr = SendWr::new(0xf111, op, &sges).with_flags(flags);
        if let (Some(u), Some(av)) = (ud, av.as_ref()) {
            wr = wr.with_ud(UdDest {
                av,
                remote_qpn: u.remote_qpn,
                remote_qkey: u.remote_qkey,
            });
        }
        // SAFETY: filler SGEs are never dereferenced (not inline).
        unsafe { sq.post_send_raw(&[wr]) }.map_err(|e| anyhow::anyhow!("filler post: {e}"))?;
        if prep.completed {
            let start = sq.cur_post().wrapping_sub(1);
            // Retire everything (tail = head).
            let _ = start;
            let head = sq.head();
            // SAFETY: memory-backed ring that no device executes.
            unsafe { sq.set_counters(sq.cur_post(), head, sq.bf_offset()) };
        }
    }
    Ok(())
}

/// Positions the counters where the vector says they are before the post,
/// when the prep (or its absence) left them elsewhere.
fn position_counters(sq: &mut Sq, case: &WqeCase) {
    let tail = if case.prep.as_ref().is_some_and(|p| !p.completed) {
        sq.tail()
    } else {
        case.head_before
    };
    if sq.cur_post() != case.cur_post_before
        || sq.head() != case.head_before
        || sq.bf_offset() as u32 != case.bf_offset_before
    {
        // The prep is described only in words: position the counters.
        // SAFETY: memory-backed ring that no device executes.
        unsafe {
            sq.set_counters(
                case.cur_post_before,
                case.head_before,
                case.bf_offset_before as usize,
            )
        };
    }
    let _ = tail;
}

/// The case's WRs as bareverbs WRs over `sgls` and `avs` (one per WR),
/// stopping at the first opcode the verbs API does not have, whose index is
/// returned too.
fn build_wrs<'a>(
    case: &WqeCase,
    sgls: &'a [Vec<Sge>],
    avs: &'a [Option<AddressVector>],
) -> Result<(Vec<SendWr<'a>>, Option<usize>)> {
    let mut wrs = Vec::new();
    let mut bad_opcode = None;
    for (i, w) in case.wrs.iter().enumerate() {
        // A negative count with IBV_SEND_INLINE is posted as one zero-length
        // inline SGE (see `sgl_of`). That differs from the provider only
        // where bareverbs checks the list's length: `1 > max_gs` when the QP
        // has no gather entries (the provider's signed `num_sge >
        // qp_state_max_gs` lets any negative count through), and its WQE
        // bound counting an inline header when no inline room exists.
        if w.num_sge < 0
            && w.send_flags & SendFlags::INLINE.bits() != 0
            && (case.qp.max_gs == 0 || case.qp.ret_max_inline_data == 0)
        {
            bail!(
                "WR[{i}]: num_sge={} with IBV_SEND_INLINE on a QP with max_gs={} max_inline_data={} is not reproducible through bareverbs' SGE-slice post",
                w.num_sge,
                case.qp.max_gs,
                case.qp.ret_max_inline_data
            );
        }
        let Some(op) = op_of(w)? else {
            bad_opcode = Some(i);
            break;
        };
        let mut wr = SendWr::new(w.wr_id, op, &sgls[i])
            .with_flags(SendFlags::from_bits_truncate(w.send_flags));
        if let (Some(u), Some(av)) = (w.ud, avs[i].as_ref()) {
            wr = wr.with_ud(UdDest {
                av,
                remote_qpn: u.remote_qpn,
                remote_qkey: u.remote_qkey,
            });
        }
        wrs.push(wr);
    }
    Ok((wrs, bad_opcode))
}

/// What the post left: the return value and bad WR given, the counters,
/// every slot's bookkeeping, the doorbell record, the BlueFlame register
/// and the ring.
fn sq_outcome<const N: usize>(
    sq: &Sq,
    world: &SqWorld,
    (ret, bad_wr): (i32, Option<usize>),
    buf_size: usize,
) -> Result<WqeOutcome> {
    let mut wrid = Vec::with_capacity(N);
    let mut wqe_head = Vec::with_capacity(N);
    let mut wr_data = Vec::with_capacity(N);
    for i in 0..N {
        let (a, b, c) = sq.slot(i).context("slot")?;
        wrid.push(a);
        wqe_head.push(b as u64);
        wr_data.push(c as u64);
    }
    let bf_reg_size = 2 * buf_size.max(256);
    let reg = sq
        .uar()
        .bytes()
        .get(BF_REG..BF_REG + bf_reg_size)
        .context("BlueFlame register outside the UAR page")?
        .to_vec();
    Ok(WqeOutcome {
        ret,
        bad_wr,
        cur_post: sq.cur_post(),
        head: sq.head(),
        dbrec: world.dbrec_word(1),
        doorbell: DoorbellObs::Register(reg),
        bf_offset: sq.bf_offset() as u32,
        ring: world.ring_bytes(),
        wrid,
        wqe_head,
        wr_data,
    })
}

fn run_sq<const N: usize>(
    case: &WqeCase,
    header: &WqeHeader,
    ring_fill: Option<u8>,
    uar_fill: u8,
) -> Result<WqeOutcome> {
    let world = SqWorld::new(N * 64, header.payload_len.unwrap_or(8192))?;
    let qp_type = case.qp.qp_type;
    let buf_size = case.bf_buf_size.or(header.bf_buf_size).unwrap_or(256) as usize;
    let cfg = sq_config(case, qp_type, buf_size);
    let slots = vec![SqSlot::default(); N];
    // SAFETY: ring and dbrec are fresh allocations owned by `world`, which
    // outlives the queue (declared first, dropped last).
    let mut sq: Sq = unsafe {
        SendQueue::new(
            world.ring,
            world.dbrec,
            MemUar::filled(uar_fill),
            cfg,
            slots,
        )
    }
    .context("queue geometry rejected")?;
    sq.enable();

    let avs = HeaderAvs::parse(header)?;
    replay_prep(&mut sq, case, header, &world, qp_type, &avs)?;
    position_counters(&mut sq, case);
    if let Some(b) = ring_fill {
        world.fill_ring(b);
    }
    // The register is pre-filled just before the post under test.
    *sq.uar_mut() = MemUar::filled(uar_fill);

    // Build the WRs.
    let sgls: Vec<Vec<Sge>> = case
        .wrs
        .iter()
        .map(|w| sgl_of(w, &world.payload))
        .collect::<Result<_>>()?;
    let wr_avs: Vec<Option<AddressVector>> = case
        .wrs
        .iter()
        .map(|w| w.ud.as_ref().map(|u| avs.of(u)).transpose())
        .collect::<Result<_>>()?;
    let (wrs, bad_opcode) = build_wrs(case, &sgls, &wr_avs)?;
    // SAFETY: non-inline SGEs are only written into WQEs (the memory UAR
    // never executes them); inline SGEs point into `world.payload`.
    let r = unsafe { sq.post_send_raw(&wrs) };
    let result = match (r, bad_opcode) {
        (Err(e), _) => (e.kind.errno(), Some(e.index)),
        (Ok(()), Some(i)) => (22, Some(i)),
        (Ok(()), None) => (0, None),
    };
    sq_outcome::<N>(&sq, &world, result, buf_size)
}

/// The SGE list of a vector WR. An inline WR's entries are read by the
/// post (its bytes are copied into the WQE), so each must lie inside the
/// replay's payload buffer; any other address in a vector file is an
/// error (never memory this process reads). Other WRs' addresses are only
/// written into WQEs.
fn sgl_of(w: &vw::SendWr, payload: &[u8]) -> Result<Vec<Sge>> {
    let inline = w.send_flags & SendFlags::INLINE.bits() != 0;
    if w.num_sge < 0 && inline {
        // `send_flags & IBV_SEND_INLINE && wr->num_sge` (mlx5_post_send): a
        // negative count takes the inline branch, whose loop copies nothing,
        // so no inline segment is written but the WR counts as inline for
        // the BlueFlame choice. bareverbs takes its inline branch for a
        // non-empty list and writes nothing for zero bytes: one zero-length
        // SGE (at the payload, never read) is the same post.
        return Ok(vec![Sge {
            addr: payload.as_ptr() as u64,
            length: 0,
            lkey: 0,
        }]);
    }
    let mut v = Vec::with_capacity(w.sges.len());
    for s in &w.sges {
        let addr = match s.addr {
            SgeAddr::Payload(off) => {
                let end = (off as u64).checked_add(s.length as u64);
                if inline && end.is_none_or(|e| e > payload.len() as u64) {
                    bail!(
                        "inline SGE payload[{off}..+{}] is outside the {}-byte payload",
                        s.length,
                        payload.len()
                    );
                }
                payload.as_ptr() as u64 + off as u64
            }
            SgeAddr::Addr(a) if inline && s.length > 0 => {
                bail!("inline SGE at address {a:#x}: inline data must come from the payload")
            }
            SgeAddr::Addr(a) => a,
        };
        v.push(Sge {
            addr,
            length: s.length,
            lkey: s.lkey,
        });
    }
    pad_to_num_sge(&mut v, w.num_sge);
    Ok(v)
}

/// The SGE list the provider reads for a WR whose `int num_sge` is `n`: its
/// loops (`for (i = 0; i < wr->num_sge; ++i)` in `mlx5_post_send`,
/// `mlx5_post_recv`, `mlx5_post_srq_recv`) read the first `n` entries, none
/// when `n <= 0`, and its `num_sge > max_gs` checks are signed, so a negative
/// count passes them. (The replay posts on ready queues, where
/// `qp_state_max_gs = max_gs >= 0`; in RESET it is −1, and the provider would
/// refuse `num_sge = 0` but accept a negative count. No vector models that
/// state.) The vectors print SGE lines only up to `num_sge`; any entries they
/// leave out are zero-length placeholders.
/// More SGEs than any queue accepts (a WQE holds at most 2^16 / 16 data
/// segments): a list padded to this is refused exactly as a longer one.
const MAX_PADDED_SGES: usize = (1 << 16) / 16 + 1;

fn pad_to_num_sge(v: &mut Vec<Sge>, n: i32) {
    if n < 0 {
        v.clear();
        return;
    }
    while v.len() < (n as usize).min(MAX_PADDED_SGES) {
        v.push(Sge::default());
    }
}

macro_rules! dispatch_pow2 {
    ($n:expr, $f:ident, $($arg:expr),*) => {
        match $n {
            1 => $f::<1>($($arg),*),
            2 => $f::<2>($($arg),*),
            4 => $f::<4>($($arg),*),
            8 => $f::<8>($($arg),*),
            16 => $f::<16>($($arg),*),
            32 => $f::<32>($($arg),*),
            64 => $f::<64>($($arg),*),
            128 => $f::<128>($($arg),*),
            256 => $f::<256>($($arg),*),
            512 => $f::<512>($($arg),*),
            1024 => $f::<1024>($($arg),*),
            2048 => $f::<2048>($($arg),*),
            4096 => $f::<4096>($($arg),*),
            8192 => $f::<8192>($($arg),*),
            16384 => $f::<16384>($($arg),*),
            32768 => $f::<32768>($($arg),*),
            65536 => $f::<65536>($($arg),*),
            n => bail!("ring of {n} entries is not a power of two in 1..=65536"),
        }
    };
}

impl WqeExecutor for SqExecutor {
    fn execute(
        &mut self,
        case: &WqeCase,
        header: &WqeHeader,
        ring_fill: Option<u8>,
        uar_fill: u8,
    ) -> Result<WqeOutcome> {
        big_stack(|| dispatch_pow2!(case.qp.wqe_cnt, run_sq, case, header, ring_fill, uar_fill))
    }
}

fn recv_sgl(w: &crate::vectors::recv::RecvWr) -> Vec<Sge> {
    let mut v: Vec<Sge> = w
        .sges
        .iter()
        .map(|s| Sge {
            addr: match s.addr {
                SgeAddr::Addr(a) => a,
                SgeAddr::Payload(off) => off as u64,
            },
            length: s.length,
            lkey: s.lkey,
        })
        .collect();
    pad_to_num_sge(&mut v, w.num_sge);
    v
}

/// A copy of `len` bytes of live DMA memory.
fn read_dma(buf: DmaBuf, len: usize) -> Vec<u8> {
    // SAFETY: `buf` is a live allocation of at least `len` bytes owned by the
    // caller's allocator, and no queue is running while it is copied.
    unsafe { std::slice::from_raw_parts(buf.cpu.as_ptr(), len).to_vec() }
}

/// Posts the case's WRs with `post` and reads back the outcome: return
/// value, bad WR index, the whole ring and the 4-byte doorbell record.
fn post_case(
    case: &RecvCase,
    ring: DmaBuf,
    dbrec: DmaBuf,
    post: impl FnOnce(&[RecvWr<'_>]) -> Result<(), bareverbs::rq::RecvError>,
) -> (i32, Option<usize>, Vec<u8>, Vec<u8>) {
    let sgls: Vec<Vec<Sge>> = case.wrs.iter().map(recv_sgl).collect();
    let wrs: Vec<RecvWr> = case
        .wrs
        .iter()
        .zip(&sgls)
        .map(|(w, s)| RecvWr {
            wr_id: w.wr_id,
            sgl: s,
        })
        .collect();
    let (ret, bad_wr) = match post(&wrs) {
        Ok(()) => (0, None),
        Err(e) => (e.kind.errno(), Some(e.index)),
    };
    (ret, bad_wr, read_dma(ring, ring.len), read_dma(dbrec, 4))
}

fn run_rq<const N: usize>(case: &RecvCase, ring_fill: Option<u8>) -> Result<RecvOutcome> {
    let g = case.rq.as_ref().context("RQ geometry")?;
    let dma = HeapDma::new();
    let ring = dma.alloc(N << g.wqe_shift, 4096).context("dma")?;
    let dbrec = dma.alloc(64, 64).context("dma")?;
    let cfg = RqConfig {
        wqe_shift: g.wqe_shift,
        max_gs: g.max_gs,
        max_post: g.max_post,
    };
    let slots = vec![RqSlot::default(); N];
    // SAFETY: fresh allocations owned by `dma`, which outlives the queue.
    let mut rq =
        unsafe { RecvQueue::new(ring, dbrec, cfg, slots) }.context("RQ geometry rejected")?;
    rq.enable();
    if let Some(RecvPrep::RqFillers {
        completed,
        outstanding,
        filler,
        ..
    }) = &case.prep
    {
        let sgl = filler.as_ref().map(recv_sgl).unwrap_or_else(|| {
            vec![Sge {
                addr: 0x9000,
                length: 16,
                lkey: 0x99,
            }]
        });
        let wr = RecvWr {
            wr_id: filler.as_ref().map_or(0xf222, |f| f.wr_id),
            sgl: &sgl,
        };
        for k in 0..completed + outstanding {
            // SAFETY: the memory-backed ring is never executed by a device.
            unsafe { rq.post_recv_raw(&[wr]) }.map_err(|e| anyhow::anyhow!("filler: {e}"))?;
            if k < *completed {
                let c = rq.head().wrapping_sub(1) as u16;
                // SAFETY: memory-backed ring that no device executes.
                let _ = unsafe { rq.retire(c) };
            }
        }
    }
    let tail_before = case.rq_tail.unwrap_or(rq.tail());
    if rq.head() != case.head_before || rq.tail() != tail_before {
        // SAFETY: memory-backed ring that no device executes.
        unsafe { rq.set_counters(case.head_before, tail_before) };
    }
    if let Some(b) = ring_fill {
        // SAFETY: raw fill of the live ring.
        unsafe { std::ptr::write_bytes(ring.cpu.as_ptr(), b, ring.len) };
    }
    // SAFETY: the memory-backed ring is never executed by a device.
    let (ret, bad_wr, ring_bytes, db) =
        post_case(case, ring, dbrec, |w| unsafe { rq.post_recv_raw(w) });
    Ok(RecvOutcome {
        ret,
        bad_wr,
        head: rq.head(),
        tail: None,
        counter: None,
        dbrec: db,
        ring: ring_bytes,
        wrid: (0..N).map(|i| rq.wrid(i).unwrap_or(0)).collect(),
        free_bitmap: None,
    })
}

fn run_srq<const N: usize>(case: &RecvCase, ring_fill: Option<u8>) -> Result<RecvOutcome> {
    let g = case.srq.as_ref().context("SRQ geometry")?;
    let dma = HeapDma::new();
    let ring = dma.alloc(N << g.wqe_shift, 4096).context("dma")?;
    let dbrec = dma.alloc(64, 64).context("dma")?;
    let cfg = SrqConfig {
        wqe_shift: g.wqe_shift,
        max_gs: g.max_gs,
        nwqes: g.nwqes,
        wait_queue: g.waitq_head >= 0,
    };
    let slots = vec![SrqSlot::default(); N];
    // SAFETY: fresh allocations owned by `dma`, which outlives the queue.
    let mut srq = unsafe { SharedReceiveQueue::new(ring, dbrec, cfg, slots) }
        .context("SRQ geometry rejected")?;
    let filler_of = |f: &Option<crate::vectors::recv::RecvWr>| {
        (
            f.as_ref().map_or(0xf333, |f| f.wr_id),
            f.as_ref().map(recv_sgl).unwrap_or_else(|| {
                vec![Sge {
                    addr: 0x9000,
                    length: 16,
                    lkey: 0x99,
                }]
            }),
        )
    };
    match &case.prep {
        Some(RecvPrep::SrqOps { ops, filler, .. }) => {
            let (id, sgl) = filler_of(filler);
            for op in ops {
                match op {
                    SrqPrepOp::Post | SrqPrepOp::PostFailed => {
                        // SAFETY: memory-backed ring, never executed.
                        let _ = unsafe {
                            srq.post_recv_raw(&[RecvWr {
                                wr_id: id,
                                sgl: &sgl,
                            }])
                        };
                    }
                    SrqPrepOp::Free(i) => {
                        // SAFETY: memory-backed ring, never executed.
                        let _ = unsafe { srq.retire(*i as u16) };
                    }
                }
            }
        }
        Some(RecvPrep::SrqCycles { cycles, filler, .. }) => {
            let (id, sgl) = filler_of(filler);
            for _ in 0..*cycles {
                let slot = srq.head() as u16;
                // SAFETY: memory-backed ring, never executed.
                unsafe {
                    srq.post_recv_raw(&[RecvWr {
                        wr_id: id,
                        sgl: &sgl,
                    }])
                }
                .map_err(|e| anyhow::anyhow!("cycle post: {e}"))?;
                // SAFETY: memory-backed ring, never executed.
                let _ = unsafe { srq.retire(slot) };
            }
        }
        _ => {}
    }
    if srq.head() != case.head_before
        || case.tail_before.is_some_and(|t| t != srq.tail())
        || case
            .counter_before
            .is_some_and(|c| c != srq.counter() as u32)
    {
        bail!(
            "SRQ prep replay reached head={} tail={} counter={}, the vector says head={} tail={:?} counter={:?}",
            srq.head(),
            srq.tail(),
            srq.counter(),
            case.head_before,
            case.tail_before,
            case.counter_before
        );
    }
    if let Some(b) = ring_fill {
        let stride = 1usize << g.wqe_shift;
        for slot in 0..N {
            let base = slot * stride;
            // SAFETY: raw fill inside the live buffer, skipping bytes 2..4
            // (the free-list link) of every WQE.
            unsafe {
                std::ptr::write_bytes(ring.cpu.as_ptr().add(base), b, 2);
                std::ptr::write_bytes(ring.cpu.as_ptr().add(base + 4), b, stride - 4);
            }
        }
    }
    // SAFETY: the memory-backed ring is never executed by a device.
    let (ret, bad_wr, ring_bytes, db) =
        post_case(case, ring, dbrec, |w| unsafe { srq.post_recv_raw(w) });
    Ok(RecvOutcome {
        ret,
        bad_wr,
        head: srq.head(),
        tail: Some(srq.tail()),
        counter: Some(srq.counter() as u32),
        dbrec: db,
        ring: ring_bytes,
        wrid: (0..N).map(|i| srq.wrid(i).unwrap_or(0)).collect(),
        free_bitmap: Some(srq.free_slots().collect()),
    })
}

impl RecvExecutor for RecvQueueExecutor {
    fn execute(&mut self, case: &RecvCase, ring_fill: Option<u8>) -> Result<RecvOutcome> {
        big_stack(|| match (&case.rq, &case.srq) {
            (Some(g), _) => dispatch_pow2!(g.wqe_cnt, run_rq, case, ring_fill),
            (_, Some(g)) => dispatch_pow2!(g.max, run_srq, case, ring_fill),
            _ => bail!("case has neither RQ nor SRQ geometry"),
        })
    }
}

/// Runs `f` on a thread with a stack large enough for the biggest queue:
/// queues keep their bookkeeping in fixed arrays sized by the ring (up to
/// 65536 entries), constructed by value.
fn big_stack<T: Send>(f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    std::thread::scope(|sc| {
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn_scoped(sc, f)
            .map_err(|e| anyhow::anyhow!("cannot start a replay thread: {e}"))?
            .join()
            .map_err(|_| anyhow::anyhow!("replay thread panicked"))?
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conform::wqe::tests::load;
    use crate::vectors::recv::read_recv_file;

    /// A WR whose `num_sge` is a huge C int is refused by the post path
    /// (more SGEs than the queue takes) without the replay building a list
    /// of that many SGEs: it pads at most past the largest queue.
    #[test]
    fn huge_num_sge_is_refused_without_a_huge_list() {
        let (_, t) = load("recv_vectors.txt");
        let at = "WR[0]: wr_id=0x101 num_sge=0";
        assert!(t.contains(at));
        let text = t.replacen(at, "WR[0]: wr_id=0x101 num_sge=2147483647", 1);
        let f = read_recv_file(&text).unwrap();
        let case = &f.cases[0];
        assert_eq!(case.wrs[0].num_sge, i32::MAX);
        let o = RecvQueueExecutor.execute(case, None).unwrap();
        assert_eq!((o.ret, o.bad_wr), (bareverbs::errno::EINVAL, Some(0)));
    }
}
