//! Fuzz bodies for CQE parsing and mini-CQE expansion ([ref §5](bareverbs::reference)). Both
//! accept any bytes and must never panic; they also check round-trip and
//! consistency invariants (a failed invariant panics on purpose, so the
//! fuzzer reports it).

use bareverbs::cq::{CompletionReject, DynCompletionQueue, RecvDone, SendDone, WrResolver};
use bareverbs::cqe::{
    parse_any, sw_owns, Cqe128, Cqe64, CqeDump, CqeFormat, CqeOpcode, CqeSize, MiniCqe,
    MiniCqeExpander, MiniCqeFormat, Syndrome, WcOpcode, WcStatus, WorkCompletion,
};
use bareverbs::platform::DmaBuf;
use core::fmt::Write;
use core::ptr::NonNull;

/// A `fmt::Write` sink that discards output (formatting still runs).
struct Sink(usize);
impl Write for Sink {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

/// Resolver that knows every QP whose id is even, with small fake queues.
#[derive(Default)]
struct AnyQp {
    done: usize,
}
impl WrResolver for AnyQp {
    fn send_done(&mut self, qp: u32, wqe_counter: u16) -> Result<SendDone, CompletionReject> {
        self.done += 1;
        qp.is_multiple_of(2)
            .then_some(SendDone {
                wr_id: wqe_counter as u64,
                wr_data: WcOpcode::from_raw(wqe_counter as u32 % 140).unwrap_or(WcOpcode::Send),
            })
            .ok_or(CompletionReject::UnknownQp)
    }
    fn recv_done(&mut self, qp: u32, wqe_counter: u16) -> Result<RecvDone, CompletionReject> {
        self.done += 1;
        qp.is_multiple_of(2)
            .then_some(RecvDone {
                wr_id: wqe_counter as u64,
                rx_csum: qp.is_multiple_of(4),
            })
            .ok_or(CompletionReject::UnknownQp)
    }
    fn scatter_to_send(&mut self, _: u32, _: u16, data: &[u8]) -> bool {
        data.len() <= 64
    }
    fn scatter_to_recv(&mut self, _: u32, wqe_counter: u16, data: &[u8]) -> bool {
        data.len() <= (wqe_counter as usize % 65)
    }
}

fn check_cqe64(c: &Cqe64) {
    // Every accessor, both views, the dump and Debug.
    let mut s = Sink(0);
    let _ = write!(s, "{}", CqeDump(c));
    let _ = write!(s, "{c:?} {:?}", c.as_err());
    let e = c.as_err();
    let _ = (
        e.srqn(),
        e.s_wqe_opcode_qpn(),
        e.s_wqe_opcode(),
        e.qpn(),
        e.signature(),
    );
    let _ = (
        e.status().name(),
        e.syndrome_kind().name(),
        e.is_odp_page_fault(),
    );
    let _ = (
        c.inline_data32(),
        c.l3_hdr_type(),
        c.l4_hdr_type(),
        c.format_kind(),
        c.cqe_opcode(),
    );

    // emit → parse round trip: rebuild from the decoded fields.
    let mut r = Cqe64::ZERO;
    {
        let b = r.as_bytes_mut();
        b[0..2].copy_from_slice(&c.as_bytes()[0..2]);
        b[18..20].copy_from_slice(&c.as_bytes()[18..20]);
    }
    r.set_wqe_id(c.wqe_id())
        .set_lro_tcppsh_abort_dupack(c.lro_tcppsh_abort_dupack())
        .set_lro_min_ttl(c.lro_min_ttl())
        .set_lro_tcp_win(c.lro_tcp_win())
        .set_lro_ack_seq_num(c.lro_ack_seq_num())
        .set_rss_hash_result(c.rss_hash_result())
        .set_rss_hash_type(c.rss_hash_type())
        .set_ml_path(c.ml_path())
        .set_check_sum(c.check_sum())
        .set_slid(c.slid())
        .set_flags_rqpn(c.flags_rqpn())
        .set_hds_ip_ext(c.hds_ip_ext())
        .set_l4_hdr_type_etc(c.l4_hdr_type_etc())
        .set_vlan_info(c.vlan_info())
        .set_srqn_uidx(c.srqn_uidx())
        .set_imm_inval_pkey(c.imm_inval_pkey())
        .set_app(c.app())
        .set_app_op(c.app_op())
        .set_app_info(c.app_info())
        .set_byte_cnt(c.byte_cnt())
        .set_timestamp(c.timestamp())
        .set_sop_drop_qpn(c.sop_drop_qpn())
        .set_wqe_counter(c.wqe_counter())
        .set_signature(c.signature());
    r.set_op_own_parts(c.opcode(), c.format(), c.se() == 1, c.owner());
    assert_eq!(&r, c, "field round trip");
    assert_eq!(Cqe64::parse(c.as_bytes()).ok(), Some(*c));
    assert_eq!(c.imm_inval_pkey_raw(), c.imm_inval_pkey().to_be_bytes());
    assert_eq!(
        c.qpn() | (c.send_wqe_opcode() as u32) << 24,
        c.sop_drop_qpn()
    );
    assert_eq!(
        c.src_qp() | (c.sl() as u32) << 24 | (c.grh() as u32) << 28,
        c.flags_rqpn() & 0x3fff_ffff
    );

    // Enum round trips.
    if let Ok(o) = CqeOpcode::try_from(c.opcode()) {
        assert_eq!(o as u8, c.opcode());
        let _ = (o.name(), o.is_responder());
    }
    assert_eq!(CqeFormat::from_bits(c.format()) as u8, c.format());
    assert_eq!(Syndrome::from_u8(c.syndrome()).as_u8(), c.syndrome());
    let st = e.status();
    assert_eq!(WcStatus::from_raw(st.as_raw()), Some(st));
    assert_eq!(WcStatus::from_name(st.name()), Some(st));

    // Ownership agrees with the owner bit for every parity.
    for ci in [0u32, 8, c.wqe_counter() as u32, u32::MAX] {
        let owned = sw_owns(c.op_own(), ci, 8);
        assert_eq!(
            owned,
            c.opcode() != 15 && c.owner() == ((ci & 8) != 0) as u8
        );
    }
}

/// Polls a small ring built from `data` through the real poll path.
fn poll_ring(data: &[u8], cqe_size: CqeSize, ncqe: usize, ci: u32, ne: usize) {
    let sz = cqe_size.bytes();
    let len = ncqe * sz;
    let mut mem = vec![0u64; (len + 8) / 8];
    let base = NonNull::new(mem.as_mut_ptr().cast::<u8>()).expect("non-null");
    let ring = DmaBuf {
        cpu: base,
        iova: 0,
        len,
    };
    let dbrec = DmaBuf {
        // SAFETY: len < mem's byte length.
        cpu: unsafe { base.add(len) },
        iova: 0,
        len: 8,
    };
    // SAFETY: `mem` outlives `cq` and is accessed only through raw pointers.
    let Ok(mut cq) = (unsafe {
        DynCompletionQueue::with_entries(ncqe, ring, dbrec, 1, cqe_size, (ci & 1) as u8)
    }) else {
        return;
    };
    cq.init_ring();
    let n = data.len().min(len);
    // SAFETY: n <= len bytes inside the ring; raw copy.
    unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), base.as_ptr(), n) };
    cq.set_consumer_index(ci);
    cq.set_mini_cqe_format(match ci % 3 {
        0 => MiniCqeFormat::Hash,
        1 => MiniCqeFormat::Csum,
        _ => MiniCqeFormat::SendInfo,
    });
    let mut r = AnyQp::default();
    let mut out = [WorkCompletion::default(); 12];
    let ne = ne.min(out.len());
    let mut total = 0usize;
    for _ in 0..4 {
        let before = cq.consumer_index();
        let got = match cq.poll(&mut r, &mut out[..ne]) {
            Ok(k) => k,
            Err(e) => e.completions(),
        };
        assert!(got <= ne);
        total += got;
        assert_eq!(cq.read_dbrec(0), cq.consumer_index() & 0xff_ffff);
        // consumption never exceeds one lap per call
        assert!(cq.consumer_index().wrapping_sub(before) as usize <= ncqe.max(ne));
        for w in &out[..got] {
            let _ = (w.status.name(), w.opcode.name(), w.imm_union());
        }
    }
    let _ = total;
}

/// Parses any bytes as 64- and 128-byte CQEs, decodes, dumps, checks the
/// emit → parse round trip and polls a ring made of the bytes.
pub fn cqe_parse(data: &[u8]) {
    let _ = parse_any(data);
    let _ = Cqe64::parse(data);
    if let Ok(c) = Cqe64::parse(data) {
        check_cqe64(&c);
    }
    if let Ok(c) = Cqe128::parse(data) {
        let _ = c.inline_data();
        let mut s = Sink(0);
        let _ = write!(s, "{c:?}");
        check_cqe64(&c.cqe64());
        assert_eq!(
            Cqe128::from_parts(c.front().try_into().expect("64"), c.cqe64()),
            c
        );
    }
    for chunk in data.chunks(64) {
        if let Ok(c) = Cqe64::parse(chunk) {
            check_cqe64(&c);
        }
    }
    let sel = data.first().copied().unwrap_or(0);
    let ci = data
        .get(1..5)
        .map_or(0, |b| u32::from_le_bytes(b.try_into().expect("4")));
    let ncqe = 2usize << (sel % 4);
    let size = if sel & 0x10 != 0 {
        CqeSize::B128
    } else {
        CqeSize::B64
    };
    poll_ring(
        data.get(5..).unwrap_or(&[]),
        size,
        ncqe,
        ci,
        1 + (sel as usize >> 5),
    );
}

/// Expands a compressed session built from any bytes: title (first 64
/// bytes), position/geometry/format selectors, then mini-CQE arrays. Never
/// panics; checks the expansion invariants and runs the same bytes through
/// the poll path.
pub fn mini_cqe_expand(data: &[u8]) {
    let Ok(mut title) = Cqe64::parse(data) else {
        for m in data.chunks(8) {
            if let Ok(m) = MiniCqe::parse(m) {
                let _ = (
                    m.rx_hash_result(),
                    m.checksum(),
                    m.stride_idx(),
                    m.wqe_counter(),
                    m.s_wqe_opcode(),
                    m.byte_cnt(),
                );
            }
        }
        return;
    };
    let rest = &data[64..];
    let sel = rest.first().copied().unwrap_or(0);
    let pos = rest
        .get(1..5)
        .map_or(0, |b| u32::from_le_bytes(b.try_into().expect("4")));
    let arrays_raw = rest.get(5..).unwrap_or(&[]);
    let mut arrays = Vec::new();
    for ch in arrays_raw.chunks(64) {
        let mut a = [0u8; 64];
        a[..ch.len()].copy_from_slice(ch);
        arrays.push(a);
    }
    let ncqe = 1u32 << (sel % 26);
    let format = match (sel >> 5) % 3 {
        0 => MiniCqeFormat::Hash,
        1 => MiniCqeFormat::Csum,
        _ => MiniCqeFormat::SendInfo,
    };
    if sel & 0x80 != 0 {
        let o = title.op_own();
        title.set_op_own(o | 0x0c);
    }
    match MiniCqeExpander::new(title, pos, ncqe, format) {
        Ok(x) => {
            assert_eq!(title.format(), 3);
            assert!(x.count() >= 1 && x.count() <= ncqe);
            let mut out = [Cqe64::ZERO; 24];
            let n = x.expand_into(&arrays, &mut out);
            assert!(n <= x.count() as usize && n <= arrays.len() * 8);
            for (i, c) in out[..n].iter().enumerate() {
                let p = pos.wrapping_add(i as u32);
                assert_eq!(c.format(), 0);
                assert_eq!(c.se(), 0);
                assert_eq!(c.opcode(), title.opcode());
                assert_eq!(c.owner(), ((p & ncqe) != 0) as u8);
                assert_eq!(c.qpn(), title.qpn());
                if c.opcode() != 15 {
                    assert!(c.is_sw_owned(p, ncqe));
                }
            }
            let count = x.iter(&arrays).count();
            assert!(count <= x.count() as usize);
            for g in [0u32, 1, 2, x.arrays(), u32::MAX] {
                let _ = x.array_position(g);
            }
            let _ = x.expand(u32::MAX, &MiniCqe::default());
        }
        Err(_) => {
            let bad_count = title.byte_cnt() == 0 || title.byte_cnt() > ncqe;
            assert!(title.format() != 3 || ncqe < 2 || bad_count);
        }
    }
    // Through the poll path: title at slot `pos & (n-1)`, arrays after it.
    let n = 2usize << (sel % 5);
    let mut ring = vec![0u8; n * 64];
    for (i, b) in ring.iter_mut().enumerate() {
        *b = arrays_raw.get(i).copied().unwrap_or(0);
    }
    let slot = (pos as usize) & (n - 1);
    ring[slot * 64..slot * 64 + 64].copy_from_slice(title.as_bytes());
    poll_ring(&ring, CqeSize::B64, n, pos, 1 + (sel as usize % 8));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoke() {
        cqe_parse(&[]);
        cqe_parse(&[0xff; 300]);
        mini_cqe_expand(&[]);
        mini_cqe_expand(&[0x0c; 200]);
        let mut t = vec![0u8; 64 + 5 + 128];
        t[63] = 0x2c;
        t[47] = 10;
        t[64] = 3;
        mini_cqe_expand(&t);
    }
}
