//! Every mirrored struct's size and every field offset, compared with
//! `sizeof`/`offsetof` compiled against the vendor header (`c/shim.c`).
//! CQE structs (mirrored on the cqe branch) are checked against the
//! [ref §5.1/§5.5](bareverbs::reference) tables here; their Rust mirror is compared in
//! `cqe_getters.rs`.
#![cfg(not(bv_no_mlx5dv))] // needs the C shim: see build.rs

use bareverbs::wqe::*;
use bareverbs_conformance::{c_const, c_layouts};
use core::mem::{offset_of, size_of};
use memoffset::span_of;
use std::collections::BTreeMap;

fn rust_layouts() -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    macro_rules! sz {
        ($c:literal, $t:ty) => {
            m.insert($c, size_of::<$t>());
        };
    }
    macro_rules! off {
        ($c:literal, $t:ty, $f:ident) => {
            m.insert($c, offset_of!($t, $f));
        };
    }
    sz!("mlx5_wqe_ctrl_seg", CtrlSeg);
    off!(
        "mlx5_wqe_ctrl_seg.opmod_idx_opcode",
        CtrlSeg,
        opmod_idx_opcode
    );
    off!("mlx5_wqe_ctrl_seg.qpn_ds", CtrlSeg, qpn_ds);
    off!("mlx5_wqe_ctrl_seg.signature", CtrlSeg, signature);
    off!(
        "mlx5_wqe_ctrl_seg.dci_stream_channel_id",
        CtrlSeg,
        dci_stream_channel_id
    );
    off!("mlx5_wqe_ctrl_seg.fm_ce_se", CtrlSeg, fm_ce_se);
    off!("mlx5_wqe_ctrl_seg.imm", CtrlSeg, imm);

    sz!("mlx5_wqe_data_seg", DataSeg);
    off!("mlx5_wqe_data_seg.byte_count", DataSeg, byte_count);
    off!("mlx5_wqe_data_seg.lkey", DataSeg, lkey);
    off!("mlx5_wqe_data_seg.addr", DataSeg, addr);

    sz!("mlx5_wqe_raddr_seg", RaddrSeg);
    off!("mlx5_wqe_raddr_seg.raddr", RaddrSeg, raddr);
    off!("mlx5_wqe_raddr_seg.rkey", RaddrSeg, rkey);
    off!("mlx5_wqe_raddr_seg.reserved", RaddrSeg, reserved);

    sz!("mlx5_wqe_atomic_seg", AtomicSeg);
    off!("mlx5_wqe_atomic_seg.swap_add", AtomicSeg, swap_add);
    off!("mlx5_wqe_atomic_seg.compare", AtomicSeg, compare);

    sz!("mlx5_wqe_inl_data_seg", InlineHdr);
    off!("mlx5_wqe_inl_data_seg.byte_count", InlineHdr, byte_count);

    sz!("mlx5_wqe_av", AddressVector);
    off!("mlx5_wqe_av.key", AddressVector, key);
    off!("mlx5_wqe_av.dqp_dct", AddressVector, dqp_dct);
    off!("mlx5_wqe_av.stat_rate_sl", AddressVector, stat_rate_sl);
    off!("mlx5_wqe_av.fl_mlid", AddressVector, fl_mlid);
    off!("mlx5_wqe_av.rlid", AddressVector, rlid);
    off!("mlx5_wqe_av.reserved0", AddressVector, reserved0);
    off!("mlx5_wqe_av.rmac", AddressVector, rmac);
    off!("mlx5_wqe_av.tclass", AddressVector, tclass);
    off!("mlx5_wqe_av.hop_limit", AddressVector, hop_limit);
    off!("mlx5_wqe_av.grh_gid_fl", AddressVector, grh_gid_fl);
    off!("mlx5_wqe_av.rgid", AddressVector, rgid);

    // The datagram segment is the address vector itself.
    sz!("mlx5_wqe_datagram_seg", DatagramSeg);
    m.insert("mlx5_wqe_datagram_seg.av", 0);

    sz!("mlx5_wqe_eth_seg", EthSeg);
    off!("mlx5_wqe_eth_seg.rsvd0", EthSeg, rsvd0);
    off!("mlx5_wqe_eth_seg.cs_flags", EthSeg, cs_flags);
    off!("mlx5_wqe_eth_seg.rsvd1", EthSeg, rsvd1);
    off!("mlx5_wqe_eth_seg.mss", EthSeg, mss);
    off!("mlx5_wqe_eth_seg.rsvd2", EthSeg, rsvd2);
    off!("mlx5_wqe_eth_seg.inline_hdr_sz", EthSeg, inline_hdr_sz);
    off!(
        "mlx5_wqe_eth_seg.inline_hdr_start",
        EthSeg,
        inline_hdr_start
    );
    off!("mlx5_wqe_eth_seg.inline_hdr", EthSeg, inline_hdr);

    sz!("mlx5_wqe_srq_next_seg", SrqNextSeg);
    off!("mlx5_wqe_srq_next_seg.rsvd0", SrqNextSeg, rsvd0);
    off!(
        "mlx5_wqe_srq_next_seg.next_wqe_index",
        SrqNextSeg,
        next_wqe_index
    );
    off!("mlx5_wqe_srq_next_seg.signature", SrqNextSeg, signature);
    off!("mlx5_wqe_srq_next_seg.rsvd1", SrqNextSeg, rsvd1);

    sz!("mlx5_wqe_umr_ctrl_seg", UmrCtrlSeg);
    off!("mlx5_wqe_umr_ctrl_seg.flags", UmrCtrlSeg, flags);
    off!("mlx5_wqe_umr_ctrl_seg.rsvd0", UmrCtrlSeg, rsvd0);
    off!(
        "mlx5_wqe_umr_ctrl_seg.klm_octowords",
        UmrCtrlSeg,
        klm_octowords
    );
    off!(
        "mlx5_wqe_umr_ctrl_seg.translation_offset",
        UmrCtrlSeg,
        translation_offset
    );
    off!("mlx5_wqe_umr_ctrl_seg.mkey_mask", UmrCtrlSeg, mkey_mask);
    off!("mlx5_wqe_umr_ctrl_seg.rsvd1", UmrCtrlSeg, rsvd1);

    sz!("mlx5_wqe_umr_klm_seg", KlmSeg);
    off!("mlx5_wqe_umr_klm_seg.byte_count", KlmSeg, byte_count);
    off!("mlx5_wqe_umr_klm_seg.mkey", KlmSeg, mkey);
    off!("mlx5_wqe_umr_klm_seg.address", KlmSeg, address);

    sz!("mlx5_wqe_mkey_context_seg", MkeyContextSeg);
    off!("mlx5_wqe_mkey_context_seg.free", MkeyContextSeg, free);
    off!(
        "mlx5_wqe_mkey_context_seg.reserved1",
        MkeyContextSeg,
        reserved1
    );
    off!(
        "mlx5_wqe_mkey_context_seg.access_flags",
        MkeyContextSeg,
        access_flags
    );
    off!("mlx5_wqe_mkey_context_seg.sf", MkeyContextSeg, sf);
    off!(
        "mlx5_wqe_mkey_context_seg.qpn_mkey",
        MkeyContextSeg,
        qpn_mkey
    );
    off!(
        "mlx5_wqe_mkey_context_seg.reserved2",
        MkeyContextSeg,
        reserved2
    );
    off!(
        "mlx5_wqe_mkey_context_seg.flags_pd",
        MkeyContextSeg,
        flags_pd
    );
    off!(
        "mlx5_wqe_mkey_context_seg.start_addr",
        MkeyContextSeg,
        start_addr
    );
    off!("mlx5_wqe_mkey_context_seg.len", MkeyContextSeg, len);
    off!(
        "mlx5_wqe_mkey_context_seg.bsf_octword_size",
        MkeyContextSeg,
        bsf_octword_size
    );
    off!(
        "mlx5_wqe_mkey_context_seg.reserved3",
        MkeyContextSeg,
        reserved3
    );
    off!(
        "mlx5_wqe_mkey_context_seg.translations_octword_size",
        MkeyContextSeg,
        translations_octword_size
    );
    off!(
        "mlx5_wqe_mkey_context_seg.reserved4",
        MkeyContextSeg,
        reserved4
    );
    off!(
        "mlx5_wqe_mkey_context_seg.log_page_size",
        MkeyContextSeg,
        log_page_size
    );
    off!(
        "mlx5_wqe_mkey_context_seg.reserved",
        MkeyContextSeg,
        reserved5
    );
    m
}

/// [ref §5.1](bareverbs::reference) (mlx5_cqe64) and §5.5 (mlx5_err_cqe) byte tables.
fn facts_cqe_layouts() -> BTreeMap<&'static str, usize> {
    [
        ("mlx5_cqe64", 64),
        ("mlx5_cqe64.wqe_id", 2),
        ("mlx5_cqe64.ml_path", 17),
        ("mlx5_cqe64.slid", 22),
        ("mlx5_cqe64.flags_rqpn", 24),
        ("mlx5_cqe64.hds_ip_ext", 28),
        ("mlx5_cqe64.l4_hdr_type_etc", 29),
        ("mlx5_cqe64.vlan_info", 30),
        ("mlx5_cqe64.srqn_uidx", 32),
        ("mlx5_cqe64.imm_inval_pkey", 36),
        ("mlx5_cqe64.app", 40),
        ("mlx5_cqe64.app_op", 41),
        ("mlx5_cqe64.app_info", 42),
        ("mlx5_cqe64.byte_cnt", 44),
        ("mlx5_cqe64.timestamp", 48),
        ("mlx5_cqe64.sop_drop_qpn", 56),
        ("mlx5_cqe64.wqe_counter", 60),
        ("mlx5_cqe64.signature", 62),
        ("mlx5_cqe64.op_own", 63),
        ("mlx5_err_cqe", 64),
        ("mlx5_err_cqe.srqn", 32),
        ("mlx5_err_cqe.vendor_err_synd", 54),
        ("mlx5_err_cqe.syndrome", 55),
        ("mlx5_err_cqe.s_wqe_opcode_qpn", 56),
        ("mlx5_err_cqe.wqe_counter", 60),
        ("mlx5_err_cqe.signature", 62),
        ("mlx5_err_cqe.op_own", 63),
    ]
    .into_iter()
    .collect()
}

#[test]
fn every_vendor_size_and_offset_matches() {
    let c = c_layouts();
    assert!(c.len() > 90, "shim table unexpectedly small: {}", c.len());
    let rust = rust_layouts();
    let facts = facts_cqe_layouts();
    let mut checked = 0;
    for (name, cval) in &c {
        let expect = rust
            .get(name.as_str())
            .or_else(|| facts.get(name.as_str()))
            .unwrap_or_else(|| panic!("no Rust/reference counterpart for vendor layout {name}"));
        assert_eq!(
            *expect, *cval,
            "{name}: bareverbs {expect} vs mlx5dv.h {cval}"
        );
        checked += 1;
    }
    // And nothing mirrored on the Rust side is missing from the C table.
    for name in rust.keys() {
        assert!(c.contains_key(*name), "{name} not probed in the shim");
    }
    println!("{checked} sizes/offsets equal to mlx5dv.h");
}

#[test]
fn field_spans_match_vendor() {
    // span_of! gives the byte range a field covers; the vendor offset of the
    // next field (or sizeof) closes it.
    let c = c_layouts();
    let g = |n: &str| c[n];
    assert_eq!(
        span_of!(CtrlSeg, opmod_idx_opcode),
        0..g("mlx5_wqe_ctrl_seg.qpn_ds")
    );
    assert_eq!(
        span_of!(CtrlSeg, qpn_ds),
        g("mlx5_wqe_ctrl_seg.qpn_ds")..g("mlx5_wqe_ctrl_seg.signature")
    );
    assert_eq!(
        span_of!(CtrlSeg, dci_stream_channel_id),
        g("mlx5_wqe_ctrl_seg.dci_stream_channel_id")..g("mlx5_wqe_ctrl_seg.fm_ce_se")
    );
    assert_eq!(
        span_of!(CtrlSeg, imm),
        g("mlx5_wqe_ctrl_seg.imm")..g("mlx5_wqe_ctrl_seg")
    );
    assert_eq!(
        span_of!(DataSeg, addr),
        g("mlx5_wqe_data_seg.addr")..g("mlx5_wqe_data_seg")
    );
    assert_eq!(
        span_of!(AddressVector, rgid),
        g("mlx5_wqe_av.rgid")..g("mlx5_wqe_av")
    );
    assert_eq!(
        span_of!(AddressVector, rmac),
        g("mlx5_wqe_av.rmac")..g("mlx5_wqe_av.tclass")
    );
    assert_eq!(
        span_of!(EthSeg, inline_hdr_start),
        g("mlx5_wqe_eth_seg.inline_hdr_start")..g("mlx5_wqe_eth_seg.inline_hdr")
    );
    assert_eq!(
        span_of!(EthSeg, inline_hdr),
        g("mlx5_wqe_eth_seg.inline_hdr")..g("mlx5_wqe_eth_seg")
    );
    assert_eq!(
        span_of!(UmrCtrlSeg, mkey_mask),
        g("mlx5_wqe_umr_ctrl_seg.mkey_mask")..g("mlx5_wqe_umr_ctrl_seg.rsvd1")
    );
    assert_eq!(
        span_of!(MkeyContextSeg, reserved3),
        g("mlx5_wqe_mkey_context_seg.reserved3")
            ..g("mlx5_wqe_mkey_context_seg.translations_octword_size")
    );
    assert_eq!(
        span_of!(SrqNextSeg, next_wqe_index),
        g("mlx5_wqe_srq_next_seg.next_wqe_index")..g("mlx5_wqe_srq_next_seg.signature")
    );
}

#[test]
fn header_constants_match() {
    assert_eq!(INVALID_LKEY, c_const("MLX5_INVALID_LKEY"));
    assert_eq!(EXTENDED_UD_AV, c_const("MLX5_EXTENDED_UD_AV"));
    assert_eq!(
        FmCeSe::CQ_UPDATE.bits() as u32,
        c_const("MLX5_WQE_CTRL_CQ_UPDATE")
    );
    assert_eq!(
        FmCeSe::SOLICITED.bits() as u32,
        c_const("MLX5_WQE_CTRL_SOLICITED")
    );
    assert_eq!(
        FmCeSe::SMALL_AND_FENCE.bits() as u32,
        c_const("MLX5_WQE_CTRL_FENCE")
    );
    assert_eq!(
        FenceMode::SmallAndFence.byte() as u32,
        c_const("MLX5_WQE_CTRL_FENCE")
    );
    assert_eq!(
        FmCeSe::INITIATOR_SMALL_FENCE.bits() as u32,
        c_const("MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE")
    );
    assert_eq!(SEND_WQE_BB as u32, c_const("MLX5_SEND_WQE_BB"));
    assert_eq!(SEND_WQE_SHIFT, c_const("MLX5_SEND_WQE_SHIFT"));
    assert_eq!(INLINE_SEG, c_const("MLX5_INLINE_SEG"));
    assert_eq!(
        EthCsFlags::L3_CSUM.bits() as u32,
        c_const("MLX5_ETH_WQE_L3_CSUM")
    );
    assert_eq!(
        EthCsFlags::L4_CSUM.bits() as u32,
        c_const("MLX5_ETH_WQE_L4_CSUM")
    );
    assert_eq!(
        UmrFlags::INLINE.bits() as u32,
        c_const("MLX5_WQE_UMR_CTRL_FLAG_INLINE")
    );
    assert_eq!(
        UmrFlags::CHECK_FREE.bits() as u32,
        c_const("MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE")
    );
    assert_eq!(
        UmrFlags::TRANSLATION_OFFSET.bits() as u32,
        c_const("MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET")
    );
    assert_eq!(
        UmrFlags::CHECK_QPN.bits() as u32,
        c_const("MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN")
    );
    assert_eq!(
        MKEY_CONTEXT_FREE as u32,
        c_const("MLX5_WQE_MKEY_CONTEXT_FREE")
    );
    let acc = [
        (
            MkeyAccess::ATOMIC,
            "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC",
        ),
        (
            MkeyAccess::REMOTE_WRITE,
            "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE",
        ),
        (
            MkeyAccess::REMOTE_READ,
            "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ",
        ),
        (
            MkeyAccess::LOCAL_WRITE,
            "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE",
        ),
        (
            MkeyAccess::LOCAL_READ,
            "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_READ",
        ),
    ];
    for (f, n) in acc {
        assert_eq!(f.bits() as u32, c_const(n), "{n}");
    }
    let mask = [
        (MkeyMask::LEN, "MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN"),
        (
            MkeyMask::START_ADDR,
            "MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR",
        ),
        (MkeyMask::MKEY, "MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY"),
        (MkeyMask::QPN, "MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN"),
        (
            MkeyMask::ACCESS_LOCAL_WRITE,
            "MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_LOCAL_WRITE",
        ),
        (
            MkeyMask::ACCESS_REMOTE_READ,
            "MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_READ",
        ),
        (
            MkeyMask::ACCESS_REMOTE_WRITE,
            "MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_WRITE",
        ),
        (
            MkeyMask::ACCESS_ATOMIC,
            "MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_ATOMIC",
        ),
        (MkeyMask::FREE, "MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE"),
    ];
    for (f, n) in mask {
        assert_eq!(f.bits(), c_const(n) as u64, "{n}");
    }
}
