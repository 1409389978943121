//! Random inputs through the vendor header's segment setters (via the C
//! shim) and through bareverbs' segment constructors, compared byte for
//! byte. Deterministic (`bareverbs_sim::rng::Rng`, fixed seeds).
#![cfg(not(bv_no_mlx5dv))] // needs the C shim: see build.rs

use bareverbs::wqe::*;
use bareverbs_conformance::*;
use bareverbs_sim::rng::Rng;

const N: usize = 20_000;

#[test]
fn ctrl_seg_matches_mlx5dv_set_ctrl_seg() {
    let mut r = Rng::new(0x0c71_25e9);
    for i in 0..N {
        let pi = r.next_u16();
        let opcode = if i % 2 == 0 {
            Opcode::ALL[r.below(23) as usize].bits()
        } else {
            r.next_u8()
        };
        let opmod = r.next_u8();
        // Full 32-bit range: the setter shifts by 8, so high bits drop in both.
        let qpn = r.edgy_u32();
        let fm_ce_se = r.next_u8();
        let ds = r.below(64) as u8; // the DS field is 6 bits (ref §1.1)
        let sig = r.next_u8();
        let imm = r.edgy_u32();
        let c = c_ctrl_seg(pi, opcode, opmod, qpn, fm_ce_se, ds, sig, imm);
        // mlx5dv_set_ctrl_seg stores `imm` as-is (caller prepares byte order),
        // so its raw host bytes are what lands in the segment.
        let rs = CtrlSeg::new(
            opmod,
            pi,
            opcode,
            qpn,
            ds,
            fm_ce_se,
            Be32::from_raw(imm.to_ne_bytes()),
        )
        .with_signature(sig);
        let rb: [u8; 16] = rs.to_bytes();
        assert_eq!(
            rb, c,
            "case {i}: pi={pi} op={opcode} opmod={opmod} qpn={qpn:#x} ds={ds}"
        );
        // And the accessors read back what the header wrote.
        let p = CtrlSeg::parse(&c).unwrap();
        assert_eq!(
            (p.opcode(), p.opmod(), p.wqe_index(), p.ds()),
            (opcode, opmod, pi, ds)
        );
        assert_eq!(p.qpn(), qpn & 0x00ff_ffff);
        assert_eq!(p.fm_ce_se, fm_ce_se);
        assert_eq!(p.signature, sig);
    }
}

#[test]
fn ctrl_seg_ds_above_63_differs_only_in_reserved_bits() {
    // The header does not mask ds; bareverbs keeps DS to its 6-bit field.
    let mut r = Rng::new(77);
    for _ in 0..N {
        let ds = 64 + r.below(192) as u8;
        let (pi, op, qpn) = (r.next_u16(), r.next_u8(), r.next_u32() & 0xff_ffff);
        let c = c_ctrl_seg(pi, op, 0, qpn, 0, ds, 0, 0);
        let rb: [u8; 16] = CtrlSeg::new(0, pi, op, qpn, ds, 0, Be32::new(0)).to_bytes();
        assert_eq!(rb[..7], c[..7]);
        assert_eq!(rb[7], c[7] & 0x3f);
        assert_eq!(rb[8..], c[8..]);
    }
}

#[test]
fn data_seg_matches_mlx5dv_set_data_seg() {
    let mut r = Rng::new(0xda7a);
    for i in 0..N {
        let (len, lkey, addr) = (r.edgy_u32(), r.edgy_u32(), r.edgy_u64());
        let c = c_data_seg(len, lkey, addr);
        let rb: [u8; 16] = DataSeg::new(len, lkey, addr).to_bytes();
        assert_eq!(rb, c, "case {i}");
        let p = DataSeg::parse(&c).unwrap();
        assert_eq!(
            (p.byte_count.get(), p.lkey.get(), p.addr.get()),
            (len, lkey, addr)
        );
    }
}

#[test]
fn dgram_seg_matches_mlx5dv_set_dgram_seg() {
    let mut r = Rng::new(0xd6a3);
    for i in 0..N {
        let key = r.edgy_u64();
        let dqp = r.edgy_u32();
        let ext = r.next_u8(); // only bit 0 survives `(u32)ext << 31`
        let (sl, fl, rlid) = (r.next_u8(), r.next_u8(), r.next_u16());
        let mut rmac = [0u8; 6];
        r.fill(&mut rmac);
        let (tc, hl, grh) = (r.next_u8(), r.next_u8(), r.edgy_u32());
        let mut rgid = [0u8; 16];
        r.fill(&mut rgid);
        let c = c_dgram_seg(key, dqp, ext, sl, fl, rlid, rmac, tc, hl, grh, rgid);
        let av = AddressVector::datagram(
            key,
            dqp,
            ext & 1 != 0,
            sl,
            fl,
            rlid,
            rmac,
            tc,
            hl,
            grh,
            rgid,
        );
        let rb: [u8; 48] = av.to_bytes();
        assert_eq!(rb, c, "case {i}");
        let p = AddressVector::parse(&c).unwrap();
        assert_eq!(p.qkey(), (key >> 32) as u32);
        assert_eq!(p.rlid.get(), rlid);
        assert_eq!(p.grh_gid_fl.get(), grh);
    }
}

#[test]
fn eth_seg_matches_mlx5dv_set_eth_seg() {
    let mut r = Rng::new(0x000e_75e9);
    let mut hdr = [0u8; 300];
    for i in 0..N {
        let n = match r.below(4) {
            0 => 0,
            1 => ETH_L2_INLINE_HEADER_SIZE,
            2 => r.below(19) as usize,
            _ => r.below(hdr.len() as u64 + 1) as usize,
        };
        r.fill(&mut hdr[..n]);
        let (cs, mss) = (r.next_u8(), r.next_u16());
        let out_len = eth_seg_len(n).max(32);
        let c = c_eth_seg(out_len, cs, mss, &hdr[..n]).expect("fits");
        let mut rb = vec![0u8; out_len];
        let used = EthSeg::set(&mut rb, cs, mss, &hdr[..n]).expect("fits");
        assert_eq!(rb, c, "case {i}: hdr len {n}");
        assert_eq!(used, eth_seg_len(n));
        let p = EthSeg::parse(&c).unwrap();
        assert_eq!(
            (p.cs_flags, p.mss.get(), p.inline_hdr_sz.get() as usize),
            (cs, mss, n)
        );
    }
}
