//! Fuzz bodies for WQE parsing.
//!
//! [`wqe_parse`] feeds arbitrary bytes through every WQE parser of
//! `bareverbs::wqe` (linear send parse for every QP type, ring-aware parse
//! at an arbitrary start index, RQ/SRQ receive parsers at every stride, the
//! dump) — none may panic — and then derives a structurally valid WQE from
//! the same bytes, emits it (linearly and into a ring at an arbitrary
//! start), parses it back and checks that every field survives.

use bareverbs::wqe::*;
use core::fmt::Write;

/// A `fmt::Write` sink that discards output (drives `Display` code).
struct Sink(usize);
impl Write for Sink {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

/// Reads bytes from the fuzz input; zeros once exhausted.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}
impl Cursor<'_> {
    fn u8(&mut self) -> u8 {
        let v = self.b.get(self.i).copied().unwrap_or(0);
        self.i += 1;
        v
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn u64(&mut self) -> u64 {
        (self.u32() as u64) << 32 | self.u32() as u64
    }
    fn arr<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        for x in &mut a {
            *x = self.u8();
        }
        a
    }
}

/// Walks everything a parsed WQE exposes and checks its invariants.
fn exercise(w: &SendWqe<'_>) {
    assert_eq!(w.len(), w.ctrl.ds() as usize * DS_BYTES);
    assert!(w.ctrl.ds() >= 1);
    let mut seen = 0usize;
    for e in w.data_entries() {
        match e {
            DataEntry::Ptr(d) => {
                assert_eq!(d.byte_count.get() & INLINE_SEG, 0);
                seen += DataSeg::SIZE;
            }
            DataEntry::Inline(d) => {
                assert_eq!(d.payload.len(), d.len as usize);
                assert!(d.offset + 4 + d.len as usize <= w.len());
                seen += d.occupied();
            }
        }
    }
    // Entries cover the data part (the last inline may end in padding).
    assert!(seen >= w.data.len() && seen < w.data.len() + DS_BYTES);
    let _ = w.data_segs().count();
    let _ = w.inline();
    assert_eq!(w.klms().count(), w.klm.len() / KlmSeg::SIZE);
    if let Some(e) = w.eth {
        assert_eq!(w.eth_inline_hdr.len(), e.inline_hdr_sz.get() as usize);
    }
    let _ = w.ctrl.flags().fence_mode();
    let _ = w.ctrl.flags().completion_mode();
    let _ = w.opcode();
    let mut s = Sink(0);
    let _ = write!(s, "{}", WqeDump(w));
    assert!(s.0 > 0);
}

/// The fuzz target body: arbitrary bytes never panic any parser, and WQEs
/// derived from them round-trip through emit → parse.
pub fn wqe_parse(data: &[u8]) {
    // 1. Linear parse for every QP type.
    for qpt in SendLayout::ALL {
        if let Ok(w) = SendWqe::parse(data, qpt) {
            exercise(&w);
        }
    }
    let _ = SendLayout::guess(data);

    // 2. Ring-aware parse: first 4 bytes pick the start index, the rest
    //    (also unrounded, to hit BadRing) is the ring.
    if data.len() >= 4 {
        let start = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
        let ring = &data[4..];
        let _ = ring_wqe_bytes(ring, start);
        let rounded = &ring[..ring.len() / SEND_WQE_BB * SEND_WQE_BB];
        for qpt in SendLayout::ALL {
            let _ = SendWqe::parse_ring(ring, start, qpt);
            if let Ok(w) = SendWqe::parse_ring(rounded, start, qpt) {
                exercise(&w);
            }
        }
    }

    // 3. Receive parsers at every stride (and a few nonsense shifts).
    for shift in [0u32, 3, 4, 5, 6, 7, 8, 9, 10, 63, 64, 200] {
        let idx = data.first().copied().unwrap_or(0) as u32;
        for (srq, sig) in [(false, false), (false, true), (true, false)] {
            if let Ok(r) = RecvWqe::parse_ring(data, shift, idx, srq, sig) {
                assert_eq!(r.data_segs().count(), r.num_segs);
                let _ = r.capacity();
            }
        }
    }
    let _ = RecvWqe::parse_rq(data, false);
    let _ = RecvWqe::parse_rq(data, true);
    let _ = RecvWqe::parse_srq(data);

    // 4. emit → parse round trip of a WQE derived from the input.
    round_trip(data);
}

fn round_trip(data: &[u8]) {
    let mut c = Cursor { b: data, i: 0 };
    let qpt = SendLayout::ALL[c.u8() as usize % SendLayout::ALL.len()];
    // `qpt` is one of `SendLayout::ALL`; an XRC receive layout (never in
    // the list) would take the connected set.
    let ops: &[Opcode] = match qpt {
        SendLayout::UC => &[
            Opcode::Send,
            Opcode::SendImm,
            Opcode::RdmaWrite,
            Opcode::RdmaWriteImm,
        ],
        SendLayout::UD | SendLayout::UD_UNDERLAY => &[Opcode::Send, Opcode::SendImm],
        SendLayout::RAW_PACKET => &[Opcode::Send, Opcode::Tso],
        _ => &[
            Opcode::Send,
            Opcode::SendImm,
            Opcode::SendInval,
            Opcode::RdmaWrite,
            Opcode::RdmaWriteImm,
            Opcode::RdmaRead,
            Opcode::AtomicCs,
            Opcode::AtomicFa,
        ],
    };
    let op = ops[c.u8() as usize % ops.len()];
    let fm = FmCeSe::from_bits_retain(c.u8());
    let ctrl = CtrlSeg::new(
        c.u8(),
        c.u16(),
        op.bits(),
        c.u32() & 0xff_ffff,
        0,
        fm.bits(),
        Be32::new(c.u32()),
    )
    .with_signature(c.u8());
    let mut repr: SendWqeRepr<'_, 16> = SendWqeRepr {
        ctrl,
        ..Default::default()
    };
    match qpt {
        SendLayout::XRC => repr.xrc = Some(XrcSeg::new(c.u32())),
        SendLayout::UD | SendLayout::UD_UNDERLAY => {
            let av = AddressVector::datagram(
                c.u64(),
                c.u32() & 0xff_ffff,
                c.u8() & 1 != 0,
                c.u8(),
                c.u8(),
                c.u16(),
                c.arr(),
                c.u8(),
                c.u8(),
                c.u32(),
                c.arr(),
            );
            repr.av = Some(av);
            if qpt == SendLayout::UD_UNDERLAY {
                repr.eth_pad = Some(EthPad::default());
            }
        }
        _ => {}
    }
    let hdr_len = (c.u8() % 65) as usize;
    let hdr_start = c.i.min(data.len());
    let hdr = &data[hdr_start..(hdr_start + hdr_len).min(data.len())];
    c.i += hdr_len;
    if qpt.eth() {
        repr.eth = Some(EthRepr {
            cs_flags: c.u8(),
            mss: c.u16(),
            hdr,
        });
    }
    if qpt.connected() {
        if op.has_raddr() {
            repr.raddr = Some(RaddrSeg::new(c.u64(), c.u32()));
        }
        if matches!(op, Opcode::AtomicCs | Opcode::AtomicFa) {
            repr.atomic = Some(AtomicSeg::new(c.u64(), c.u64()));
        }
    }
    let mode = c.u8();
    if mode & 1 == 1 {
        let len = (c.u16() % 300) as usize;
        let start = c.i.min(data.len());
        repr.data = DataRepr::Inline(&data[start..(start + len).min(data.len())]);
        c.i += len;
    } else {
        let n = (mode >> 1) as usize % 17;
        let mut v = DataSegVec::<16>::new();
        for _ in 0..n {
            // Pointer segments keep bit 31 of byte_count clear (ref §1.5).
            let _ = v.push(DataSeg::new(c.u32() & !INLINE_SEG, c.u32(), c.u64()));
        }
        repr.data = DataRepr::Segs(v);
    }

    let mut buf = [0u8; MAX_WQE_BYTES];
    let len = match repr.emit(&mut buf) {
        Ok(n) => n,
        Err(EmitError::TooLarge { .. }) => return,
        Err(e) => panic!("emit failed: {e}"),
    };
    assert_eq!(len, repr.len());
    let w = SendWqe::parse(&buf[..len], qpt).expect("emitted WQE parses");
    check(&repr, &w, qpt);
    exercise(&w);

    // Into a ring at an arbitrary start: same result, wrap followed.
    let nbb = len.div_ceil(SEND_WQE_BB) + (c.u8() % 8) as usize;
    let mut ring = vec![0xa5u8; nbb * SEND_WQE_BB];
    let start = c.u32();
    assert_eq!(repr.emit_ring(&mut ring, start), Ok(len));
    let r = SendWqe::parse_ring(&ring, start, qpt).expect("ring WQE parses");
    check(&repr, &r, qpt);
    assert!(r.bytes.iter().eq(w.bytes.iter()));
}

fn check(repr: &SendWqeRepr<'_, 16>, w: &SendWqe<'_>, qpt: SendLayout) {
    let ds = (repr.len() / DS_BYTES) as u8;
    let mut ctrl = repr.ctrl;
    ctrl.qpn_ds = Be32::new((ctrl.qpn_ds.get() & !0xff) | ds as u32);
    assert_eq!(w.ctrl, ctrl);
    assert_eq!(w.layout, qpt);
    assert_eq!(w.xrc, repr.xrc);
    assert_eq!(w.av, repr.av);
    assert_eq!(w.eth_pad, repr.eth_pad);
    match (repr.eth, w.eth) {
        (Some(e), Some(p)) => {
            assert_eq!((p.cs_flags, p.mss.get()), (e.cs_flags, e.mss));
            assert!(w.eth_inline_hdr.eq_slice(e.hdr));
        }
        (None, None) => {}
        _ => panic!("eth segment mismatch"),
    }
    assert_eq!(w.raddr, repr.raddr);
    assert_eq!(w.atomic, repr.atomic);
    assert!(w.opaque.is_empty());
    match &repr.data {
        DataRepr::None => assert!(w.data.is_empty()),
        DataRepr::Segs(v) => {
            assert!(w.inline().is_none());
            assert!(w.data_segs().eq(v.iter().copied()));
        }
        DataRepr::Inline([]) => assert!(w.data.is_empty()),
        DataRepr::Inline(p) => {
            let i = w.inline().expect("inline segment");
            assert!(i.payload.eq_slice(p));
            assert_eq!(w.data_entries().count(), 1);
        }
    }
}
