//! Unit tests: expected values come from [ref §5](crate::reference) or from the CQE bytes
//! and results printed in `conformance/vectors/cqe_vectors.txt`.
use super::*;

fn hex(s: &str) -> [u8; 64] {
    let d: Vec<u8> = s
        .split_whitespace()
        .flat_map(|w| {
            (0..w.len())
                .step_by(2)
                .map(move |i| u8::from_str_radix(&w[i..i + 2], 16).unwrap())
        })
        .collect();
    d.try_into().unwrap()
}

// cqe_vectors.txt vector 15 (RESP_WR_IMM).
const V15: &str = "00000000 00000000 00000000 00000000 00000000 00000000 00000abc 00000000
                   00000005 a1b2c3d4 00000000 00001000 00000000 00000000 000abcde 00040010";
// cqe_vectors.txt vector 18 (RESP_SEND, inline scatter 32).
const V18: &str = "696e6c69 6e652072 65637620 7061796c 6f616420 28736361 74746572 33322921
                   00000005 00000000 00000000 00000014 00000000 00000000 000abcde 00000024";
// cqe_vectors.txt vector 21 (REQ_ERR LOCAL_PROT_ERR).
const V21: &str = "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
                   00000005 00000000 00000000 00000000 00000000 00008204 0a0abcde 000700d0";

#[test]
fn fields_of_vector_15() {
    let c = Cqe64::from_bytes(hex(V15));
    assert_eq!(c.opcode(), 1);
    assert_eq!(c.cqe_opcode(), Ok(CqeOpcode::RespWrImm));
    assert_eq!((c.owner(), c.se(), c.format()), (0, 0, 0));
    assert_eq!(c.qpn(), 0x0abcde);
    assert_eq!(c.wqe_counter(), 4);
    assert_eq!(c.byte_cnt(), 4096);
    assert_eq!(c.imm_inval_pkey(), 0xa1b2c3d4);
    assert_eq!(c.imm_inval_pkey_raw(), [0xa1, 0xb2, 0xc3, 0xd4]);
    assert_eq!(c.src_qp(), 0xabc);
    assert_eq!(c.uidx(), 5);
    assert_eq!(Cqe64::parse(c.as_bytes()), Ok(c));
}

#[test]
fn fields_of_vector_18_inline() {
    let c = Cqe64::from_bytes(hex(V18));
    assert_eq!(c.format_kind(), CqeFormat::InlineScatter32);
    assert_eq!(c.inline_data32(), Some(&b"inline recv payload "[..]));
    // decoded line of vector 18: flags_rqpn=0x74746572 slid=0x6361 ml_path=0x61
    assert_eq!(c.flags_rqpn(), 0x74746572);
    assert_eq!((c.src_qp(), c.sl(), c.grh()), (0x746572, 4, 3));
    assert_eq!(c.slid(), 0x6361);
    assert_eq!(c.dlid_path_bits(), 0x61);
}

#[test]
fn error_view_of_vector_21() {
    let e = Cqe64::from_bytes(hex(V21)).as_err();
    assert_eq!(e.syndrome(), 0x04);
    assert_eq!(e.vendor_err_synd(), 0x82);
    assert_eq!(e.status(), WcStatus::LocProtErr);
    assert_eq!(e.status().as_raw(), 4);
    assert_eq!(e.wqe_counter(), 7);
    assert_eq!(e.s_wqe_opcode(), 0x0a);
    assert_eq!(e.op_own() >> 4, 13);
}

#[test]
fn ownership_cases() {
    // vectors 36, 37, 39, 40 and ref §5.3
    assert!(!sw_owns(0x01, 0, 8));
    assert!(sw_owns(0x01, 8, 8));
    assert!(!sw_owns(0xf0, 0, 8));
    assert!(!sw_owns(0x01, 21, 8));
    assert!(sw_owns(0x00, 21, 8));
    assert!(!sw_owns(0xf1, 8, 8));
}

#[test]
fn syndrome_table() {
    // ref §5.6 with ibv_wc_status numbering.
    let t = [
        (0x01, 1),
        (0x02, 2),
        (0x04, 4),
        (0x05, 5),
        (0x06, 6),
        (0x10, 7),
        (0x11, 8),
        (0x12, 9),
        (0x13, 10),
        (0x14, 11),
        (0x15, 12),
        (0x16, 13),
        (0x22, 16),
    ];
    for (s, st) in t {
        assert_eq!(syndrome_to_status(s).as_raw(), st, "syndrome {s:#x}");
        assert_eq!(Syndrome::from_u8(s).as_u8(), s);
    }
    assert_eq!(syndrome_to_status(0x77), WcStatus::GeneralErr);
    assert_eq!(WcStatus::GeneralErr.as_raw(), 21);
    assert_eq!(
        WcStatus::from_name("LOC_PROT_ERR"),
        Some(WcStatus::LocProtErr)
    );
    assert_eq!(WcStatus::WrFlushErr.name(), "WR_FLUSH_ERR");
    for s in 0..=255u8 {
        let _ = Syndrome::from_u8(s).status().name();
    }
}

#[test]
fn opcode_conversions() {
    for v in 0..=255u8 {
        if let Ok(o) = CqeOpcode::try_from(v) {
            assert_eq!(o as u8, v);
        } else {
            assert!((7..=11).contains(&v) || v > 15);
        }
        assert_eq!(CqeFormat::from_bits(v) as u8, v & 3);
    }
    assert_eq!(WcOpcode::try_from(129u32), Ok(WcOpcode::RecvRdmaWithImm));
    assert!(WcOpcode::try_from(10u32).is_err());
}

#[test]
fn requester_mapping() {
    // ref §5.7
    let r = req_completion(0x09, WcOpcode::Send, 0x77);
    assert_eq!(
        (r.opcode, r.flags, r.byte_len),
        (Some(WcOpcode::RdmaWrite), WcFlags::WITH_IMM, None)
    );
    assert_eq!(
        req_completion(0x10, WcOpcode::Send, 4096).byte_len,
        Some(4096)
    );
    assert_eq!(req_completion(0x12, WcOpcode::Send, 1).byte_len, Some(8));
    assert_eq!(
        req_completion(0x25, WcOpcode::LocalInv, 0).opcode,
        Some(WcOpcode::LocalInv)
    );
    assert_eq!(
        req_completion(0x0e, WcOpcode::Send, 0).opcode,
        Some(WcOpcode::Tso)
    );
    assert_eq!(req_completion(0x2a, WcOpcode::Send, 0).opcode, None);
}

#[test]
fn cqe128_and_parse_any() {
    let mut front = [0u8; 64];
    front[..5].copy_from_slice(b"hello");
    let mut c = Cqe64::ZERO;
    c.set_op_own_parts(2, 2, false, 0).set_byte_cnt(5);
    let e = Cqe128::from_parts(front, c);
    assert_eq!(e.cqe64(), c);
    assert_eq!(e.inline_data(), Some(&b"hello"[..]));
    let (p, f) = parse_any(e.as_bytes()).unwrap();
    assert_eq!((p, f), (c, Some(front)));
    assert!(parse_any(&[0u8; 63]).is_err());
    assert!(Cqe64::parse(&[0u8; 10]).is_err());
}

#[test]
fn setters_round_trip() {
    let mut c = Cqe64::ZERO;
    c.set_sop_drop_qpn(0x250abcde)
        .set_wqe_counter(0x1234)
        .set_timestamp(0x0102030405060708);
    c.set_op_own_parts(13, 0, true, 1);
    assert_eq!(
        (c.send_wqe_opcode(), c.qpn(), c.wqe_counter()),
        (0x25, 0x0abcde, 0x1234)
    );
    assert_eq!(c.timestamp(), 0x0102030405060708);
    assert_eq!((c.opcode(), c.se(), c.owner(), c.format()), (13, 1, 1, 0));
    let s = std::format!("{}", CqeDump(&c));
    assert!(s.starts_with("+00: 00000000"), "{s}");
}

#[test]
fn mini_expansion() {
    // title: RESP_SEND, format 3, 10 completions, wqe_counter 0xfffe, at ring position 14 of 16.
    let mut t = Cqe64::ZERO;
    t.set_op_own_parts(2, 3, true, 0)
        .set_byte_cnt(10)
        .set_wqe_counter(0xfffe)
        .set_sop_drop_qpn(0x42);
    let mut arrays = [[0u8; 64]; 2];
    for i in 0..16 {
        let mut m = MiniCqe::default();
        m.set_word0(0x1000 + i as u32).set_byte_cnt(100 + i as u32);
        arrays[i / 8][(i % 8) * 8..(i % 8) * 8 + 8].copy_from_slice(m.as_bytes());
    }
    let x = MiniCqeExpander::new(t, 14, 16, MiniCqeFormat::Hash).unwrap();
    assert_eq!((x.count(), x.arrays()), (10, 2));
    assert_eq!((x.array_position(0), x.array_position(1)), (15, 22));
    let mut out = [Cqe64::ZERO; 16];
    assert_eq!(x.expand_into(&arrays, &mut out), 10);
    for (i, c) in out[..10].iter().enumerate() {
        let pos = 14 + i as u32;
        assert_eq!(c.byte_cnt(), 100 + i as u32);
        assert_eq!(c.rss_hash_result(), 0x1000 + i as u32);
        assert_eq!(c.opcode(), 2);
        assert_eq!(c.format(), 0);
        assert_eq!(c.owner(), ((pos & 16) != 0) as u8);
        assert_eq!(c.wqe_counter(), 0xfffeu16.wrapping_add(i as u16));
        assert!(c.is_sw_owned(pos, 16));
    }
    assert_eq!(x.expand_into(&arrays[..1], &mut out), 8);
    t.set_byte_cnt(0);
    assert!(MiniCqeExpander::new(t, 0, 8, MiniCqeFormat::Hash).is_err());
    t.set_byte_cnt(9);
    assert!(MiniCqeExpander::new(t, 0, 8, MiniCqeFormat::Hash).is_err());
    t.set_op_own(0x20).set_byte_cnt(2);
    assert!(MiniCqeExpander::new(t, 0, 8, MiniCqeFormat::Hash).is_err());
}
