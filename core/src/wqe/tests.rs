//! Unit tests. Expected values come from [ref §1–§2](crate::reference) tables and from the
//! bytes and decoded comment lines of `conformance/vectors/wqe_vectors.txt`
//! and `recv_vectors.txt` (vector numbers cited); kept small for miri.

use super::*;
use crate::qp::QpType;

fn hex(s: &str) -> [u8; 512] {
    let mut out = [0u8; 512];
    let digits: heapless::Vec<u8, 1100> = s.bytes().filter(|c| c.is_ascii_hexdigit()).collect();
    for (i, p) in digits.chunks(2).enumerate() {
        let v = |c: u8| (c as char).to_digit(16).unwrap() as u8;
        out[i] = v(p[0]) << 4 | v(p[1]);
    }
    out
}

#[test]
fn opcodes_match_facts_table() {
    // ref §1.6.
    let table: [(u8, &str); 23] = [
        (0x00, "NOP"),
        (0x01, "SEND_INVAL"),
        (0x08, "RDMA_WRITE"),
        (0x09, "RDMA_WRITE_IMM"),
        (0x0a, "SEND"),
        (0x0b, "SEND_IMM"),
        (0x0e, "TSO"),
        (0x10, "RDMA_READ"),
        (0x11, "ATOMIC_CS"),
        (0x12, "ATOMIC_FA"),
        (0x14, "ATOMIC_MASKED_CS"),
        (0x15, "ATOMIC_MASKED_FA"),
        (0x18, "BIND_MW"),
        (0x19, "FMR"),
        (0x1b, "LOCAL_INVAL"),
        (0x1f, "CONFIG_CMD"),
        (0x20, "SET_PSV"),
        (0x21, "GET_PSV"),
        (0x22, "CHECK_PSV"),
        (0x25, "UMR"),
        (0x28, "TAG_MATCHING"),
        (0x2c, "FLOW_TBL_ACCESS"),
        (0x2f, "MMO"),
    ];
    for (v, name) in table {
        let o = Opcode::try_from(v).unwrap();
        assert_eq!((o.bits(), o.name()), (v, name));
    }
    let known = (0..=255u8).filter(|v| Opcode::try_from(*v).is_ok()).count();
    assert_eq!(known, table.len());
    assert_eq!(Opcode::try_from(0x77), Err(0x77));
}

#[test]
fn fm_ce_se_values_match_facts() {
    // ref §1.3 constants; vector 9 (FENCE+SIGNALED) = 0x88, vector 45
    // (inherited initiator small fence + signaled) = 0x28, vector 8 = 0x0a.
    assert_eq!(
        FmCeSe::new(FenceMode::SmallAndFence, CompletionMode::CqUpdate, false).bits(),
        0x88
    );
    assert_eq!(
        FmCeSe::new(FenceMode::InitiatorSmall, CompletionMode::CqUpdate, false).bits(),
        0x28
    );
    assert_eq!(
        FmCeSe::new(FenceMode::None, CompletionMode::CqUpdate, true).bits(),
        0x0a
    );
    assert_eq!(
        FmCeSe::new(
            FenceMode::StrongOrdering,
            CompletionMode::CqUpdateAndEqe,
            false
        )
        .bits(),
        0x6c
    );
    let f = FmCeSe::from_bits_retain(0xa1);
    assert_eq!(f.fence_mode(), Err(5));
    assert_eq!(f.bits(), 0xa1);
    assert!(FmCeSe::from_bits_retain(0x0c).signaled());
    assert!(!FmCeSe::from_bits_retain(0x04).signaled());
    assert_eq!(
        FmCeSe::from_bits_retain(0x28)
            .with_fence(FenceMode::None)
            .bits(),
        0x08
    );
}

#[test]
fn rc_write_vector_12() {
    let b = hex("00000008 0abcde03 00000008 00000000 00007f12 34560000 deadbeef 00000000 00000100 00a0b0c0 00000000 10000040");
    let w = SendWqe::parse(&b[..48], QpType::Rc).unwrap();
    assert_eq!(w.opcode(), Ok(Opcode::RdmaWrite));
    assert_eq!((w.ctrl.qpn(), w.ctrl.ds(), w.wqebbs()), (0x0abcde, 3, 1));
    let r = w.raddr.unwrap();
    assert_eq!(
        (r.raddr.get(), r.rkey.get()),
        (0x7f12_3456_0000, 0xdead_beef)
    );
    let mut d = w.data_segs();
    assert_eq!(d.next(), Some(DataSeg::new(256, 0x00a0_b0c0, 0x1000_0040)));
    assert_eq!(d.next(), None);
}

#[test]
fn bind_mw_vector_44() {
    let b = hex(
        "00000025 0abcde0c 00000008 00abcd01 b0000000 00040000 00000000 203c6041
         00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
         00003000 0abcde02 00000000 00000000 00000000 20000000 00000000 00010000
         00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
         00010000 00c0ffee 00000000 20000000",
    );
    let w = SendWqe::parse(&b[..192], QpType::Rc).unwrap();
    assert_eq!(w.opcode(), Ok(Opcode::Umr));
    assert_eq!(w.ctrl.imm.get(), 0x00ab_cd01); // mw.rkey
    let u = w.umr.unwrap();
    assert!(u
        .umr_flags()
        .contains(UmrFlags::INLINE | UmrFlags::CHECK_FREE));
    assert!(u
        .mask()
        .contains(MkeyMask::START_ADDR | MkeyMask::LEN | MkeyMask::MKEY));
    let m = w.mkey.unwrap();
    assert_eq!(
        m.access(),
        MkeyAccess::REMOTE_READ | MkeyAccess::REMOTE_WRITE
    );
    assert_eq!((m.qpn(), m.mkey_variant()), (0x0abcde, 0x02));
    assert_eq!((m.start_addr.get(), m.len.get()), (0x2000_0000, 0x10000));
    let k = w.klms().next().unwrap();
    assert_eq!(k, KlmSeg::new(0x10000, 0x00c0_ffee, 0x2000_0000));
    assert_eq!(w.klms().count(), u.klm_octowords.get() as usize);
}

#[test]
fn wrapped_inline_vector_50() {
    // 8-WQEBB ring, WQE at index 7: ctrl + first 48 bytes of inline at
    // 0x1c0, the rest at ring offset 0.
    let mut ring = [0u8; 512];
    let tail = hex(
        "0000070a 0abcde05 00000008 00000000 8000003c 00010203 04050607 08090a0b
         0c0d0e0f 10111213 14151617 18191a1b 1c1d1e1f 20212223 24252627 28292a2b",
    );
    ring[0x1c0..].copy_from_slice(&tail[..64]);
    ring[..16].copy_from_slice(&hex("2c2d2e2f 30313233 34353637 38393a3b")[..16]);
    let w = SendWqe::parse_ring(&ring, 7, QpType::Rc).unwrap();
    assert_eq!(w.ctrl.wqe_index(), 7);
    let i = w.inline().unwrap();
    assert_eq!(i.len, 60);
    assert!(i.payload.is_wrapped());
    assert!(i.payload.iter().enumerate().all(|(k, x)| x == k as u8));
    // Same WQE found through any counter that masks to slot 7.
    assert_eq!(
        SendWqe::parse_ring(&ring, 7 + 8 * 1000, QpType::Rc).unwrap(),
        w
    );
}

#[test]
fn bad_bytes_are_typed_errors() {
    let mut b = [0u8; 64];
    assert_eq!(
        SendWqe::parse(&b, QpType::Rc).unwrap_err(),
        WqeParseError::DsZero
    );
    b[7] = 64;
    assert_eq!(
        SendWqe::parse(&b, QpType::Rc).unwrap_err(),
        WqeParseError::DsTooLarge { ds: 64 }
    );
    b[7] = 5;
    assert_eq!(
        SendWqe::parse(&b, QpType::Rc).unwrap_err(),
        WqeParseError::Truncated { need: 80, have: 64 }
    );
    b[3] = 0x0a;
    b[7] = 2; // UD needs ctrl + 48-byte datagram segment
    assert!(matches!(
        SendWqe::parse(&b, QpType::Ud),
        Err(WqeParseError::SegmentPastDs {
            segment: "datagram",
            ..
        })
    ));
    b[16] = 0x80;
    b[19] = 13; // inline of 13 bytes in a 16-byte remainder
    assert!(matches!(
        SendWqe::parse(&b, QpType::Rc),
        Err(WqeParseError::InlinePastDs { .. })
    ));
    assert!(SendWqe::parse(&b[..10], QpType::Rc).is_err());
    assert_eq!(
        SendWqe::parse_ring(&b[..63], 0, QpType::Rc).unwrap_err(),
        WqeParseError::BadRing { len: 63 }
    );
}

#[test]
fn recv_vectors() {
    // recv_vectors.txt VECTOR 1: terminator only.
    let b = hex("00000000 00000100 00000000 00000000");
    let r = RecvWqe::parse_rq(&b[..16], false).unwrap();
    assert!(r.terminated);
    assert_eq!(r.num_segs, 0);
    // SRQ VECTOR 1: next_wqe_index=1, one SGE, terminator.
    let b = hex(
        "00000001 00000000 00000000 00000000 00000200 00b0c0d0 00000000 20000080
         00000000 00000100 00000000 00000000 00000000 00000000 00000000 00000000",
    );
    let r = RecvWqe::parse_srq(&b[..64]).unwrap();
    assert_eq!(r.next.unwrap().next_wqe_index.get(), 1);
    assert_eq!(r.num_segs, 1);
    assert!(r.terminated);
    assert_eq!(
        r.data_segs().next(),
        Some(DataSeg::new(512, 0x00b0_c0d0, 0x2000_0080))
    );
    assert_eq!(DataSeg::TERMINATOR.lkey.get(), INVALID_LKEY);
}

#[test]
fn emit_round_trip_and_ring_wrap() {
    let mut segs = DataSegVec::<4>::new();
    segs.push(DataSeg::new(256, 0x00a0_b0c0, 0x1000_0040))
        .unwrap();
    segs.push(DataSeg::new(512, 0x00a0_b0c1, 0x1000_1040))
        .unwrap();
    let repr: SendWqeRepr<'_, 4> = SendWqeRepr {
        ctrl: CtrlSeg::new(
            0,
            5,
            Opcode::RdmaWrite.bits(),
            0x0abcde,
            0,
            0x08,
            Be32::new(0),
        ),
        raddr: Some(RaddrSeg::new(0x7f12_3456_0000, 0xdead_beef)),
        data: DataRepr::Segs(segs),
        ..Default::default()
    };
    let mut ring = [0u8; 128];
    assert_eq!(repr.emit_ring(&mut ring, 1), Ok(64));
    let w = SendWqe::parse_ring(&ring, 1, QpType::Rc).unwrap();
    assert_eq!(w.ctrl.ds(), 4);
    assert_eq!(w.raddr, repr.raddr);
    assert_eq!(w.data_segs().count(), 2);
    let mut lin = [0u8; 64];
    assert_eq!(repr.emit(&mut lin), Ok(64));
    assert!(w.bytes.eq_slice(&lin));
}

/// The ibv → mkey-context mapping puts each right at its mkc bit (byte 2:
/// lw 0x08, rr 0x10, rw 0x20, a 0x40; lr 0x04 is never an ibv flag) and
/// round-trips every combination of the four mapped flags.
#[test]
fn ibv_access_maps_to_mkey_context_bits_and_back() {
    use crate::mr::Access;
    assert_eq!(MkeyAccess::from_ibv(Access::LOCAL_WRITE).bits(), 0x08);
    assert_eq!(MkeyAccess::from_ibv(Access::REMOTE_READ).bits(), 0x10);
    assert_eq!(MkeyAccess::from_ibv(Access::REMOTE_WRITE).bits(), 0x20);
    assert_eq!(MkeyAccess::from_ibv(Access::REMOTE_ATOMIC).bits(), 0x40);
    assert_eq!(MkeyAccess::from_ibv(Access::ZERO_BASED).bits(), 0);
    assert_eq!(MkeyAccess::LOCAL_READ.to_ibv(), Access::empty());
    for bits in 0..16u32 {
        let a = Access::from_bits_retain(bits);
        assert_eq!(MkeyAccess::from_ibv(a).to_ibv(), a, "{a:?}");
    }
}

/// `SendLayout::guess` reads the byte positions of ref §1.2/§1.5: opcode
/// byte 3, DS in the low 6 bits of byte 7, the extended-AV bit as the top
/// bit of byte 24; fewer than 28 bytes is RC.
#[test]
fn layout_guess_reads_ctrl_and_datagram_positions() {
    let mut w = [0u8; 28];
    w[3] = Opcode::Send as u8;
    w[7] = 0x40 | 4; // reserved bits above the 6-bit DS are ignored
    w[24] = 0x80;
    assert_eq!(SendLayout::guess(&w), SendLayout::UD);
    assert_eq!(SendLayout::guess(&w[..27]), SendLayout::RC);
    w[3] = Opcode::SendImm as u8;
    assert_eq!(SendLayout::guess(&w), SendLayout::UD);
    w[7] = 3;
    assert_eq!(SendLayout::guess(&w), SendLayout::RC);
    w[7] = 4;
    w[24] = 0x7f;
    assert_eq!(SendLayout::guess(&w), SendLayout::RC);
    w[24] = 0x80;
    w[3] = Opcode::RdmaWrite as u8;
    assert_eq!(SendLayout::guess(&w), SendLayout::RC);
}
