//! Unit tests comparing the command bytes bareverbs builds with the form
//! the vendor's code sends for the same object (issue 14): each expected
//! value is derived from the vendor rule cited beside it (rdma-core
//! `providers/mlx5/mlx5_vfio.c` and `mlx5_ifc.h` at 691953d8d502, or the
//! Linux file and function named), never from the builder's own output.
//! Byte positions are the `mlx5_ifc.h` offsets written out by hand.

use super::bits::*;
use super::ops::*;
use crate::mr::Access;

/// CREATE_MKEY over 3 pages of 4 KiB (an odd count), compared with
/// mlx5_vfio.c `mlx5_vfio_reg_mr`.
#[test]
fn create_mkey_odd_page_count_is_the_vendor_form() {
    let (iova, npages) = (0x7000u64, 3usize);
    let mut b = [0xeeu8; 0x200];
    let r = create_mkey(
        &mut b,
        &MkeyParams {
            pd: 0x33,
            access: Access::LOCAL_WRITE | Access::REMOTE_WRITE,
            start_addr: iova,
            len: npages as u64 * 4096,
            pages_iova: iova,
            npages,
            log_page_size: 12,
            variant: 0x5a,
        },
    );
    // mlx5_vfio.c L2445: inlen = sizeof(create_mkey_in) (0x110) +
    // 8 * align(num_pas, 2): 3 pages → 4 entries.
    let entries = 4;
    assert_eq!(r.in_len, 0x110 + 8 * entries);
    assert_eq!((r.opcode, r.out_len), (0x200, 0x10));
    // L2463: pg_access = 1 (create_mkey_in dw3 bit 31, mlx5_ifc.h L1665
    // → byte 0x0c mask 0x80); nothing else in dw3.
    assert_eq!(get32(&b, 0x0c), 0x8000_0000, "pg_access");
    // L2470 / L2474 with get_octo_len (L2278–2287): (npages + 1) / 2 = 2,
    // in mkc.translations_octword_size (mkc 0x34 → 0x44) and
    // translations_octword_actual_size (0x60).
    assert_eq!(get32(&b, 0x10 + 0x34), 2, "translations_octword_size");
    assert_eq!(get32(&b, 0x60), 2, "translations_octword_actual_size");
    // L2457–2460 with mlx5_vfio_populate_pas (L2341–2351): entry i =
    // page address | MLX5_MTT_PRESENT (read 1 | write 2, mlx5_vfio.h).
    for i in 0..npages {
        assert_eq!(get64(&b, 0x110 + 8 * i), (iova + 4096 * i as u64) | 0x3);
    }
    // calloc (L2447): the pad entry is zero.
    assert_eq!(get64(&b, 0x110 + 8 * npages), 0, "pad entry");
    // Beyond the input: untouched.
    assert_eq!(b[0x110 + 8 * entries], 0xee);
    // An even count needs no pad: 2 pages → 0x110 + 16, one octword.
    let r = create_mkey(
        &mut b,
        &MkeyParams {
            pd: 1,
            access: Access::empty(),
            start_addr: 0x2000,
            len: 8192,
            pages_iova: 0x2000,
            npages: 2,
            log_page_size: 12,
            variant: 1,
        },
    );
    assert_eq!(r.in_len, 0x110 + 16);
    assert_eq!(get32(&b, 0x60), 1);
    assert_eq!(b[0x0c] & 0x80, 0x80, "pg_access");
}

/// CREATE_RMP for a basic SRQ of 2^6 WQEs of 64 bytes, compared with the
/// kernel's `drivers/infiniband/hw/mlx5/srq_cmd.c` `create_rmp_cmd` and
/// `set_wq` (research notes §4.3–§4.4; offsets from `mlx5_ifc.h`
/// `create_rmp_in`/`rmpc`/`wq`, UCX `ib_mlx5_ifc.h` L1055–1223).
#[test]
fn create_rmp_is_the_vendor_form_of_an_srq() {
    // The SRQ: 64 WQEs of 64 bytes = 4096 bytes, one page.
    let (log_size, wqe_shift_abs) = (6u8, 6u8);
    let mut b = [0xeeu8; 0x200];
    let r = create_rmp(
        &mut b,
        &RmpParams {
            log_wq_sz: log_size,
            log_wq_stride: wqe_shift_abs,
            pd: 0x0a0b0c,
            lwm: 0,
            dbr_addr: 0x1122_3344_5566_7780,
            pages_iova: 0x9000,
            npages: 1,
        },
    );
    // opcode 0x90c (mlx5_ifc.h L114); pas[] at 0x110 = 0x20 + 0x30 + 0xc0.
    assert_eq!((r.opcode, r.in_len, r.out_len), (0x90c, 0x110 + 8, 0x10));
    assert_eq!(get16(&b, 0), 0x90c);
    assert_eq!(get32(&b, 4), 0, "op_mod 0");
    assert!(b[0x08..0x20].iter().all(|&x| x == 0), "reserved");
    // create_rmp_cmd: rmpc.state = MLX5_RMPC_STATE_RDY (1), rmpc dw0
    // bits 23..20 → byte 0x21 high nibble; basic_cyclic_rcv_wqe not set.
    assert_eq!(get32(&b, 0x20), 1 << 20, "rmpc dw0: state RDY only");
    assert_eq!(get32(&b, 0x24), 0, "basic_cyclic_rcv_wqe 0");
    // set_wq: wq_type not set (0, linked list); wq_signature 0 here;
    // end_padding_mode not set: wq dw0 (byte 0x50) all zero.
    assert_eq!(get32(&b, 0x50), 0, "wq dw0");
    // page_offset 0 and lwm 0 (wq dw1, byte 0x54).
    assert_eq!(get32(&b, 0x54), 0, "wq dw1");
    // pd: wq dw2 bits 23..0 → bytes 0x59..0x5b.
    assert_eq!(get32(&b, 0x58), 0x0a0b0c, "pd");
    // uar_page not set by set_wq.
    assert_eq!(get32(&b, 0x5c), 0, "uar_page");
    // dbr_addr = in->db_record at wq + 0x10 → 0x60.
    assert_eq!(get64(&b, 0x60), 0x1122_3344_5566_7780, "dbr_addr");
    // log_wq_stride = in->wqe_shift + 4 where wqe_shift is the srqc form
    // (log2 stride − 4 = 2): 6, at wq dw8 bits 19..16 (byte 0x71 low
    // nibble); log_wq_pg_sz = log_page_size (page − 12) = 0 (byte 0x72);
    // log_wq_sz = log_size = 6 (byte 0x73).
    let srqc_wqe_shift = wqe_shift_abs - 4;
    assert_eq!(b[0x70], 0);
    assert_eq!(b[0x71] & 0x0f, srqc_wqe_shift + 4, "log_wq_stride absolute");
    assert_eq!(b[0x72] & 0x1f, 0, "log_wq_pg_sz");
    assert_eq!(b[0x73] & 0x1f, log_size, "log_wq_sz");
    // PAS copied to wq.pas (byte 0x110).
    assert_eq!(get64(&b, 0x110), 0x9000);
    assert_eq!(b[0x118], 0xee, "nothing past the input");
}

/// A QP on an SRQ names it as the kernel does (`qp.c` `get_rx_type`,
/// `create_kernel_qp`): `qpc.rq_type = MLX5_SRQ_RQ (1)` (qpc dw43 bits
/// 26..24, create_qp_in byte 0x18 + 0xac) and `srqn_rmpn_xrqn` = the SRQ's
/// number, which at ISSI 1 is the RMP number (`srq->srqn = rmpn`).
#[test]
fn a_qp_on_an_rmp_names_it_as_its_srq() {
    let mut b = [0u8; 0x200];
    let rmpn = 0x00_0123;
    create_qp(
        &mut b,
        &QpParams {
            st: crate::qp::ServiceType::Rc,
            pd: 1,
            uar_page: 1,
            log_sq_size: 4,
            no_sq: false,
            log_rq_size: 0,
            log_rq_stride: 0,
            srqn: Some(rmpn),
            ts_format: 0,
            cqn_snd: 2,
            cqn_rcv: 3,
            dbr_addr: 0x8000,
            user_index: 0,
            pages_iova: 0x10_000,
            npages: 1,
        },
    );
    assert_eq!(
        get32(&b, 0x18 + 0xac),
        (1 << 24) | rmpn,
        "rq_type SRQ_RQ, rmpn"
    );
}

/// A CQ names the EQ CREATE_EQ returned: rdma-core mlx5_vfio.c
/// `vfio_devx_query_eqn` (L2508–2519) answers vector 0 with the async EQ's
/// `eqn` (the number from create_eq_out, not the MSI-X index), and the
/// kernel's `mlx5_ib_create_cq` writes that number to `cqc.c_eqn` (cqc dw5
/// bits 7..0 → create_cq_in byte 0x10 + 0x17).
#[test]
fn create_cq_names_the_eq_create_eq_returned() {
    // create_eq_out: eq_number at dword 2 bits 7..0 (byte 0x0b).
    let mut out = [0u8; 0x10];
    out[0x0b] = 0x07;
    let eqn = parse_create_eq(&out);
    assert_eq!(eqn, 7);
    let mut b = [0u8; 0x200];
    create_cq(
        &mut b,
        &CqParams {
            log_cq_size: 6,
            cqe_sz: 0,
            uar_page: 1,
            c_eqn: eqn,
            dbr_addr: 0x8000,
            pages_iova: 0x9000,
            npages: 1,
        },
    );
    assert_eq!(get32(&b, 0x10 + 0x14), 7, "cqc dw5 = c_eqn, nothing else");
}

/// The RoCE SET_HCA_CAP of rdma-core mlx5_vfio.c `handle_hca_cap_roce`
/// (L1805–1830): current page copied (`DEVX_ST_SZ_BYTES(roce_cap)` =
/// 0x100 bytes) to the capability at input byte 0x10,
/// `sw_r_roce_src_udp_port` (roce_cap dw0 bit 27, mlx5_ifc.h roce_cap) set,
/// op_mod `MLX5_SET_HCA_CAP_OP_MOD_ROCE` = 4 << 1 = 8, input size
/// `sizeof(set_hca_cap_in)` = 0x1010; and nothing when the current bit is
/// already 1 or the maximum is 0 (L1816–1818).
#[test]
fn roce_set_hca_cap_is_handle_hca_cap_roce() {
    // A current page with other bits set (fl bits in byte 0, qp_ts_format
    // 2 in byte 3, a GID table size of 256 in dword 7).
    let mut cur = [0u8; 0x100];
    cur[0] = 0x06;
    cur[3] = 0x02;
    cur[0x1e] = 0x01;
    let mut max = cur;
    max[0] |= 0x08;
    let mut b = [0xeeu8; 0x1100];
    let r = set_roce_src_udp_port(&mut b, &cur, &max).unwrap();
    assert_eq!((r.opcode, r.in_len, r.out_len), (0x109, 0x1010, 0x10));
    assert_eq!(get16(&b, 0), 0x109);
    assert_eq!(get16(&b, 6), 0x0008, "op_mod ROCE");
    assert_eq!(get32(&b, 8), 0, "other_function / function_id 0");
    let mut want = cur;
    want[0] |= 0x08; // dw0 bit 27 → byte 0 mask 0x08
    assert_eq!(&b[0x10..0x110], &want[..], "current page + the bit");
    assert!(
        b[0x110..0x1010].iter().all(|&x| x == 0),
        "rest of the union"
    );
    assert_eq!(b[0x1010], 0xee);
    // Already on, or not settable: no command.
    assert_eq!(set_roce_src_udp_port(&mut b, &max, &max), None);
    assert_eq!(set_roce_src_udp_port(&mut b, &cur, &cur), None);
    // The RoCE queries (mlx5_vfio_get_caps_mode L1725): op_mod =
    // (MLX5_CAP_ROCE 4 << 1) | mode, GET_CUR 1 → 9, GET_MAX 0 → 8.
    let mut q = [0u8; 0x10];
    query_hca_cap(&mut q, CapType::Roce, true);
    assert_eq!(get16(&q, 6), 0x9);
    query_hca_cap(&mut q, CapType::Roce, false);
    assert_eq!(get16(&q, 6), 0x8);
    // parse: the fields at their mlx5_ifc.h positions.
    let p = parse_roce_caps(&want);
    assert!(p.sw_r_roce_src_udp_port && p.fl_rc_qp_when_roce_disabled);
    assert_eq!((p.qp_ts_format, p.roce_address_table_size), (2, 256));
}

/// `qpc.ts_format` by the kernel's rule (`drivers/infiniband/hw/mlx5/qp.c`
/// `get_ts_format` with `fr_supported`/`rt_supported`, research notes
/// §2.4): with no timestamp request the default is FREE_RUNNING (0) if the
/// cap allows it (cap 0 FREE_RUNNING or 2 FREE_RUNNING_AND_REAL_TIME),
/// else DEFAULT (1). Written at qpc dw2 bits 7..6 (mlx5_ifc.h L3641) →
/// create_qp_in byte 0x18 + 0x0b = 0x23, mask 0xc0.
#[test]
fn qp_ts_format_is_the_kernel_rule() {
    assert_eq!(qp_ts_format(0), 0, "cap 0 → FREE_RUNNING");
    assert_eq!(qp_ts_format(1), 1, "cap 1 (real-time only) → DEFAULT");
    assert_eq!(qp_ts_format(2), 0, "cap 2 → FREE_RUNNING");
    let mut b = [0u8; 0x200];
    create_qp(
        &mut b,
        &QpParams {
            st: crate::qp::ServiceType::Rc,
            pd: 1,
            uar_page: 1,
            log_sq_size: 4,
            no_sq: false,
            log_rq_size: 4,
            log_rq_stride: 0,
            srqn: None,
            ts_format: qp_ts_format(1),
            cqn_snd: 2,
            cqn_rcv: 2,
            dbr_addr: 0x8000,
            user_index: 0,
            pages_iova: 0x10_000,
            npages: 1,
        },
    );
    assert_eq!(b[0x23] & 0xc0, 1 << 6, "ts_format DEFAULT");
}

/// SET_ROCE_ADDRESS as the kernel's `lib/gid.c` `mlx5_core_roce_gid_set`
/// (2cc2c3cb) and `main.c` `set_roce_addr` fill it, with the research
/// notes' worked example (§1.5): RoCE v2, GID ::ffff:192.168.1.10, MAC
/// 02:00:00:00:00:01, no VLAN, index 3, `num_vhca_ports` 0 (no port).
/// Offsets: rdma-core mlx5_ifc.h L4204–4240, kernel `set_roce_address_in`.
#[test]
fn set_roce_address_is_mlx5_core_roce_gid_set() {
    let gid = gid_ipv4_mapped([192, 168, 1, 10]);
    let mut want_gid = [0u8; 16];
    want_gid[10..].copy_from_slice(&[0xff, 0xff, 0xc0, 0xa8, 0x01, 0x0a]);
    assert_eq!(gid, want_gid, "::ffff:192.168.1.10");
    let a = RoceAddress {
        gid,
        mac: [0x02, 0, 0, 0, 0, 0x01],
        vlan: None,
        version: RoceVersion::V2,
    };
    let mut b = [0xeeu8; 0x40];
    let r = set_roce_address(&mut b, 3, None, Some(&a));
    assert_eq!((r.opcode, r.in_len, r.out_len), (0x761, 0x30, 0x10));
    let mut want = [0u8; 0x30];
    want[0..4].copy_from_slice(&[0x07, 0x61, 0x00, 0x00]);
    want[0x08..0x0c].copy_from_slice(&[0x00, 0x03, 0x00, 0x00]); // index 3, no port
    want[0x10..0x20].copy_from_slice(&want_gid);
    want[0x20..0x24].copy_from_slice(&[0x00, 0x00, 0x02, 0x00]); // no VLAN, MAC 47..32
    want[0x24..0x28].copy_from_slice(&[0x00, 0x00, 0x00, 0x01]); // MAC 31..0
    want[0x28..0x2c].copy_from_slice(&[0x00, 0x00, 0x00, 0x02]); // l3 IPv4 (0), v2
    assert_eq!(&b[..0x30], &want[..]);
    assert_eq!(b[0x30], 0xee);
    // RoCE v2 over an IPv6 GID: l3 type IPV6 (1); a VLAN: vlan_valid
    // (dw4 bit 28) and vlan_id (dw4 27..16); vhca_port_num (dw2 3..0) when
    // the device has vHCA ports.
    let ll = gid_link_local_eui64([0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);
    assert_eq!(
        ll,
        [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55],
        "fe80:: + EUI-64 with the U/L bit of 0x02 flipped"
    );
    let a6 = RoceAddress {
        gid: ll,
        mac: [0x02, 0x11, 0x22, 0x33, 0x44, 0x55],
        vlan: Some(0x123),
        version: RoceVersion::V2,
    };
    set_roce_address(&mut b, 0x1234, Some(1), Some(&a6));
    assert_eq!(get32(&b, 0x08), 0x1234_0001, "index, vhca_port_num");
    assert_eq!(get32(&b, 0x20), (1 << 28) | (0x123 << 16) | 0x0211);
    assert_eq!(get32(&b, 0x24), 0x2233_4455);
    assert_eq!(get32(&b, 0x28), (1 << 8) | 2, "IPv6, v2");
    // RoCE v1 (set_roce_addr: IB_GID_TYPE_ROCE → version 1 = 0, l3 left 0).
    set_roce_address(
        &mut b,
        0,
        None,
        Some(&RoceAddress {
            version: RoceVersion::V1,
            ..a6
        }),
    );
    assert_eq!(get32(&b, 0x28), 0, "v1: version 0, l3 type 0");
    // Delete (gid == NULL in the 2cc2c3cb version): an all-zero entry.
    set_roce_address(&mut b, 5, None, None);
    assert!(b[0x10..0x30].iter().all(|&x| x == 0));
    assert_eq!(get32(&b, 0x08), 5 << 16);
    // QUERY_ROCE_ADDRESS: 0x10 in (index dw2 31..16), 0x30 out, the entry
    // at out byte 0x10.
    let r = query_roce_address(&mut b, 3, None);
    assert_eq!((r.opcode, r.in_len, r.out_len), (0x760, 0x10, 0x30));
    assert_eq!(get32(&b, 0x08), 3 << 16);
    let mut out = [0u8; 0x30];
    out[0x10..0x30].copy_from_slice(&want[0x10..0x30]);
    let e = parse_roce_address(&out, 0x10);
    assert_eq!((e.gid, e.mac, e.vlan_valid), (want_gid, a.mac, false));
    assert_eq!((e.l3_type, e.version), (0, 2));
}

/// The UDP source port a path without one gets, by the kernel's
/// `rdma_get_udp_sport(0, lqpn, rqpn)` (`include/rdma/ib_verbs.h`:
/// `rdma_calc_flow_label` then `rdma_flow_label_to_udp_sport`).
#[test]
fn roce_udp_sport_is_rdma_get_udp_sport() {
    // 0x100 × 0x101 = 0x10100; both folds (>> 20, >> 40) are zero, so the
    // flow label is 0x10100; its low 14 bits 0x0100 XOR its high 6 bits
    // (0x10100 >> 14 = 0x4) = 0x0104, above 0xC000.
    assert_eq!(roce_udp_sport(0x100, 0x101), 0xc104);
    // 0x12345 × 0xabcde = 0xC_3795_41D6; XOR >> 20 (0xC379) gives
    // 0xC_3795_82AF (the >> 40 fold is zero), masked to 20 bits 0x582AF;
    // 0x02AF ^ (0x582AF >> 14 = 0x16) = 0x02B9, above 0xC000.
    assert_eq!(roce_udp_sport(0x12345, 0xabcde), 0xc2b9);
    // Every result is in the RoCE v2 source-port range 0xC000..=0xFFFF.
    assert!(roce_udp_sport(u32::MAX >> 8, u32::MAX >> 8) >= ROCE_UDP_SPORT_MIN);
}
