//! The firmware model is strict where the vendor is (issue 14): each test
//! sends the form bareverbs used to send (which the model once accepted)
//! and expects the refusal, then the vendor form, accepted. Expected
//! statuses are the model's documented choices (`sim/src/fw`), reasons
//! from [`reason`].

use bareverbs::cmd::ops::{self, MkeyParams};
use bareverbs::cmd::{op, CmdStatus};
use bareverbs::mr::Access;
use bareverbs::platform::DmaAllocator;
use bareverbs_sim::fw::{bring_up_sim, failure, reason, FwConfig};

/// CREATE_MKEY over an odd number of pages: the input that stops after
/// the last page (8 bytes short of the two octwords it declares) is
/// BAD_INPUT_LEN; entries with access flags and `pg_access` clear are
/// BAD_PARAM; the vendor form (pad entry, `pg_access` = 1) is accepted.
#[test]
fn create_mkey_refuses_a_short_list_and_flags_without_pg_access() {
    let mut d = bring_up_sim(FwConfig::default()).unwrap();
    let pd = d.alloc_pd().unwrap();
    let buf = d.allocator().alloc(3 * 4096, 4096).unwrap();
    let p = MkeyParams {
        pd: pd.0,
        access: Access::LOCAL_WRITE,
        start_addr: buf.iova,
        len: 3 * 4096,
        pages_iova: buf.iova,
        npages: 3,
        log_page_size: 12,
        variant: 7,
    };
    // The old form: 0x110 + 8 · 3 bytes, 2 octwords declared.
    let mut r = ops::create_mkey(d.input(), &p);
    r.in_len = 0x110 + 8 * 3;
    // SAFETY: refused (asserted); the buffer outlives the device (freed
    // after teardown) and nothing posts through a key.
    let e = unsafe { d.run(r) }.unwrap_err();
    assert_eq!(
        e,
        failure(op::CREATE_MKEY, CmdStatus::BadInputLen, reason::INPUT_LEN)
    );
    // MTT flags 0x3 without pg_access.
    let r = ops::create_mkey(d.input(), &p);
    d.input()[0x0c] &= !0x80;
    // SAFETY: as above.
    let e = unsafe { d.run(r) }.unwrap_err();
    assert_eq!(
        e,
        failure(op::CREATE_MKEY, CmdStatus::BadParam, reason::FIELD)
    );
    // The vendor form.
    let r = ops::create_mkey(d.input(), &p);
    // SAFETY: a key over the test's buffer, which outlives the device.
    assert!(unsafe { d.run(r) }.is_ok());
    // And through the driver.
    // SAFETY: the test's own buffer, freed only after teardown.
    let k = unsafe { d.create_mkey(pd, &buf, Access::LOCAL_WRITE) }.unwrap();
    assert_eq!(k.len(), 3 * 4096);
    let (_rep, _bar, _clock, alloc) = d.teardown();
    // SAFETY: the function is torn down; nothing names the buffer.
    unsafe { alloc.free(buf) };
}

/// At ISSI 1 an SRQ is an RMP: the driver sends CREATE_RMP (the model
/// records an RMP), CREATE_SRQ is refused (BAD_OP, the model's choice:
/// `srq_cmd.c` never sends it at ISSI ≥ 1), DESTROY_SRQ does not destroy
/// an RMP, and DESTROY_RMP does. At ISSI 0 the legacy CREATE_SRQ is used
/// and CREATE_RMP is refused.
#[test]
fn srqs_are_rmps_at_issi_1_and_legacy_srqs_at_issi_0() {
    use bareverbs::device::SrqSpec;
    let mut d = bring_up_sim(FwConfig::default()).unwrap();
    assert_eq!(d.issi(), 1);
    let pd = d.alloc_pd().unwrap();
    let spec = SrqSpec {
        pd,
        log_size: 6,
        wqe_shift: 6,
    };
    let srq = d.create_srq(spec).unwrap();
    let rmpn = srq.srqn();
    assert!(d.bar().fw().objects().srqs[&rmpn].rmp, "made by CREATE_RMP");
    assert_eq!(d.bar().fw().objects().srqs[&rmpn].log_stride, 2);
    // The old form: CREATE_SRQ at ISSI 1.
    let buf = d.allocator().alloc(4096, 4096).unwrap();
    let r = ops::create_srq(
        d.input(),
        &ops::SrqParams {
            log_srq_size: 6,
            log_rq_stride: 2,
            pd: pd.0,
            cqn: 0,
            lwm: 0,
            dbr_addr: buf.iova,
            pages_iova: buf.iova,
            npages: 1,
        },
    );
    // SAFETY: refused (asserted); the buffer outlives the device.
    let e = unsafe { d.run(r) }.unwrap_err();
    assert_eq!(e, failure(op::CREATE_SRQ, CmdStatus::BadOp, reason::ISSI));
    // DESTROY_SRQ does not reach the RMP.
    let r = ops::with_obj(d.input(), op::DESTROY_SRQ, rmpn);
    // SAFETY: refused (asserted): the RMP and its ring stay.
    let e = unsafe { d.run(r) }.unwrap_err();
    assert_eq!(e.status(), Some(CmdStatus::BadResource));
    d.destroy_srq(srq).unwrap();
    assert!(d.bar().fw().objects().srqs.is_empty(), "DESTROY_RMP");
    let (_rep, _bar, _clock, alloc) = d.teardown();
    // SAFETY: the function is torn down; nothing names the buffer.
    unsafe { alloc.free(buf) };

    // ISSI 0: the legacy command, and RMPs are not what the driver sends.
    let fw = FwConfig {
        supported_issi: 0b01,
        ..FwConfig::default()
    };
    let mut d = bring_up_sim(fw).unwrap();
    assert_eq!(d.issi(), 0);
    let pd = d.alloc_pd().unwrap();
    let srq = d.create_srq(SrqSpec { pd, ..spec }).unwrap();
    assert!(!d.bar().fw().objects().srqs[&srq.srqn()].rmp, "CREATE_SRQ");
    d.destroy_srq(srq).unwrap();
    // The mirror image: CREATE_RMP before ISSI 1 is refused (BAD_OP).
    let buf = d.allocator().alloc(4096, 4096).unwrap();
    let r = ops::create_rmp(
        d.input(),
        &ops::RmpParams {
            log_wq_sz: 6,
            log_wq_stride: 6,
            pd: pd.0,
            lwm: 0,
            dbr_addr: buf.iova,
            pages_iova: buf.iova,
            npages: 1,
        },
    );
    // SAFETY: refused (asserted); the buffer outlives the device.
    let e = unsafe { d.run(r) }.unwrap_err();
    assert_eq!(e, failure(op::CREATE_RMP, CmdStatus::BadOp, reason::ISSI));
    assert!(d.bar().fw().objects().srqs.is_empty());
    let (_rep, _bar, _clock, alloc) = d.teardown();
    // SAFETY: the function is torn down; nothing names the buffer.
    unsafe { alloc.free(buf) };
}

/// A CQ names the EQ CREATE_EQ returned (here 7, the model's first EQ
/// number under `first_eqn`), not EQ 0; on a device without an EQ the
/// driver refuses the CQ (typed, before any command) and the model
/// refuses the old form, a CQ naming EQ 0 where no EQ exists (BAD_PARAM).
#[test]
fn cqs_name_a_real_eq() {
    use bareverbs::cqe::CqeSize;
    use bareverbs::device::{DeviceConfig, DeviceError};
    use bareverbs_sim::fw::bring_up_sim_with;
    let fw = FwConfig {
        first_eqn: 7,
        ..FwConfig::default()
    };
    let mut d = bring_up_sim(fw).unwrap();
    let eqns: Vec<u8> = d.bar().fw().objects().eqs.keys().copied().collect();
    assert_eq!(eqns, vec![7], "the async EQ");
    let cq = d.create_cq(64, CqeSize::B64).unwrap();
    assert_eq!(d.bar().fw().objects().cqs[&cq.cqn()].eqn, 7);
    d.destroy_cq(cq).unwrap();
    let _ = d.teardown();

    let dev = DeviceConfig {
        async_eq: false,
        ..DeviceConfig::default()
    };
    let mut d = bring_up_sim_with(FwConfig::default(), dev).unwrap();
    assert!(d.bar().fw().objects().eqs.is_empty());
    assert_eq!(
        d.create_cq(64, CqeSize::B64).unwrap_err(),
        DeviceError::NoEventQueue { what: "CQ" }
    );
    // The old form: c_eqn 0 with no EQ.
    let ring = d.allocator().alloc(8192, 4096).unwrap();
    let uar = d.uar_index();
    let r = ops::create_cq(
        d.input(),
        &ops::CqParams {
            log_cq_size: 6,
            cqe_sz: 0,
            uar_page: uar,
            c_eqn: 0,
            dbr_addr: ring.iova + 4096,
            pages_iova: ring.iova,
            npages: 1,
        },
    );
    // SAFETY: refused (asserted); the ring outlives the device.
    let e = unsafe { d.run(r) }.unwrap_err();
    assert_eq!(
        e,
        failure(op::CREATE_CQ, CmdStatus::BadParam, reason::UNKNOWN_OBJECT)
    );
    let (_rep, _bar, _clock, alloc) = d.teardown();
    // SAFETY: the function is torn down; nothing names the ring.
    unsafe { alloc.free(ring) };
}

/// Raw CREATE_QP parameters of an RC QP over `buf` (QP ring at +0, doorbell
/// record at +0x3000) with `ts_format`.
fn raw_qp(
    d: &mut bareverbs_sim::fw::SimDevice,
    buf: &bareverbs::platform::DmaBuf,
    ts_format: u8,
) -> ops::QpParams {
    use bareverbs::cqe::CqeSize;
    let pd = d.alloc_pd().unwrap();
    let cq = d.create_cq(64, CqeSize::B64).unwrap();
    let p = ops::QpParams {
        st: bareverbs::qp::ServiceType::Rc,
        pd: pd.0,
        uar_page: d.uar_index(),
        log_sq_size: 4,
        no_sq: false,
        log_rq_size: 4,
        log_rq_stride: 0,
        srqn: None,
        ts_format,
        cqn_snd: cq.cqn(),
        cqn_rcv: cq.cqn(),
        dbr_addr: buf.iova + 0x3000,
        user_index: 0,
        pages_iova: buf.iova,
        npages: 2,
    };
    let _ = cq; // destroyed by teardown
    p
}

/// Bring-up does `handle_hca_cap_roce`: the RoCE page is queried and sent
/// back with `sw_r_roce_src_udp_port` on (op_mod 8). QPs get the kernel's `ts_format`:
/// a real-time-only device (cap 1) refuses the old FREE_RUNNING form and
/// accepts the driver's DEFAULT; a free-running-only one (cap 0) refuses
/// REAL_TIME.
#[test]
fn roce_caps_are_set_and_qp_ts_format_follows_the_cap() {
    let d = bring_up_sim(FwConfig::default()).unwrap();
    assert!(
        d.bar().fw().roce_sw_src_udp_port,
        "set by SET_HCA_CAP op_mod 8"
    );
    let sets = d
        .bar()
        .fw()
        .log
        .iter()
        .filter(|(o, _)| *o == op::SET_HCA_CAP)
        .count();
    assert_eq!(sets, 2, "general, then RoCE");
    let rc = d.roce_caps().unwrap();
    assert!(rc.sw_r_roce_src_udp_port);
    assert_eq!((rc.qp_ts_format, rc.roce_address_table_size), (2, 256));
    let _ = d.teardown();

    for (cap, old, new) in [(1u8, 0u8, 1u8), (0, 2, 0)] {
        let fw = FwConfig {
            qp_ts_format: cap,
            ..FwConfig::default()
        };
        let mut d = bring_up_sim(fw).unwrap();
        assert_eq!(d.roce_caps().unwrap().qp_ts_format, cap);
        let buf = d.allocator().alloc(0x4000, 4096).unwrap();
        let p = raw_qp(&mut d, &buf, old);
        let r = ops::create_qp(d.input(), &p);
        // SAFETY: refused (asserted); the buffer outlives the device.
        let e = unsafe { d.run(r) }.unwrap_err();
        assert_eq!(
            e,
            failure(op::CREATE_QP, CmdStatus::BadParam, reason::FIELD),
            "cap {cap}: ts_format {old}"
        );
        assert_eq!(ops::qp_ts_format(cap), new);
        let r = ops::create_qp(
            d.input(),
            &ops::QpParams {
                ts_format: new,
                ..p
            },
        );
        // SAFETY: a QP over the test's buffer, which outlives the device
        // (freed after teardown, which destroys the QP); nothing rings it.
        assert!(unsafe { d.run(r) }.is_ok(), "cap {cap}: ts_format {new}");
        // The driver's own QP on this device.
        let cq = d.create_cq(64, bareverbs::cqe::CqeSize::B64).unwrap();
        let pd = d.alloc_pd().unwrap();
        let spec = bareverbs::device::QpSpec {
            qp_type: bareverbs::sizing::QpType::Rc,
            pd,
            send_cqn: cq.cqn(),
            recv_cqn: cq.cqn(),
            log_sq_size: 6,
            log_rq_size: 6,
            rq_wqe_shift: 5,
            srqn: None,
            user_index: 7,
            max_send_wr: 0,
            max_recv_wr: 0,
        };
        d.create_qp(spec).unwrap();
        let (_rep, _bar, _clock, alloc) = d.teardown();
        // SAFETY: the function is torn down; nothing names the buffer.
        unsafe { alloc.free(buf) };
    }
}

/// The GID table: the driver programs an entry (SET_ROCE_ADDRESS) and
/// reads it back (QUERY_ROCE_ADDRESS, answered by the model's table);
/// an index beyond `roce_address_table_size` is refused by the driver
/// (typed) and by the model (BAD_PARAM); `vhca_port_num` on a device
/// without vHCA ports is BAD_PARAM; an InfiniBand port has no GID table
/// commands.
#[test]
fn gid_table_entries_are_programmed_and_bounded() {
    use bareverbs::device::DeviceError;
    use ops::{gid_ipv4_mapped, gid_link_local_eui64, RoceAddress, RoceVersion};
    let fw = FwConfig {
        roce_address_table_size: 16,
        ..FwConfig::default()
    };
    let mac = fw.mac;
    let mut d = bring_up_sim(fw).unwrap();
    let ll = RoceAddress {
        gid: gid_link_local_eui64(mac),
        mac,
        vlan: None,
        version: RoceVersion::V2,
    };
    let v4 = RoceAddress {
        gid: gid_ipv4_mapped([10, 0, 0, 1]),
        vlan: Some(7),
        ..ll
    };
    d.set_gid(0, &ll).unwrap();
    d.set_gid(15, &v4).unwrap();
    let e = d.query_gid(0).unwrap();
    assert_eq!((e.gid, e.mac, e.vlan_valid), (ll.gid, mac, false));
    assert_eq!((e.l3_type, e.version), (1, 2), "IPv6, v2");
    let e = d.query_gid(15).unwrap();
    assert_eq!((e.gid, e.vlan_valid, e.vlan_id), (v4.gid, true, 7));
    assert_eq!(e.l3_type, 0, "IPv4-mapped");
    // The model stores exactly the entry bytes the command carried.
    let stored = d.bar().fw().gid_entry(15).unwrap();
    let mut b = [0u8; 0x30];
    ops::set_roce_address(&mut b, 15, None, Some(&v4));
    assert_eq!(&stored[..], &b[0x10..0x30]);
    d.clear_gid(15).unwrap();
    assert_eq!(d.query_gid(15).unwrap(), ops::RoceAddressEntry::default());
    // Beyond the table.
    assert!(matches!(
        d.set_gid(16, &ll),
        Err(DeviceError::Limit {
            what: "GID index",
            ..
        })
    ));
    let r = ops::set_roce_address(d.input(), 16, None, Some(&ll));
    // SAFETY: refused (asserted); a GID entry names no memory.
    let e = unsafe { d.run(r) }.unwrap_err();
    assert_eq!(
        e,
        failure(op::SET_ROCE_ADDRESS, CmdStatus::BadParam, reason::GID_INDEX)
    );
    let r = ops::query_roce_address(d.input(), 16, None);
    // SAFETY: a query.
    let e = unsafe { d.run(r) }.unwrap_err();
    assert_eq!(e.status(), Some(CmdStatus::BadParam));
    // vhca_port_num with num_vhca_ports = 0.
    let r = ops::set_roce_address(d.input(), 1, Some(1), Some(&ll));
    // SAFETY: refused (asserted); names no memory.
    let e = unsafe { d.run(r) }.unwrap_err();
    assert_eq!(
        e,
        failure(op::SET_ROCE_ADDRESS, CmdStatus::BadParam, reason::FIELD)
    );
    let _ = d.teardown();

    // An InfiniBand port.
    let mut fw = FwConfig::default();
    fw.caps.port_type = 0;
    fw.port_mtu = 4096;
    fw.port_max_mtu = 4096;
    let mut d = bring_up_sim(fw).unwrap();
    assert_eq!(
        d.set_gid(0, &ll),
        Err(DeviceError::NotEthernet {
            what: "GID table entry"
        })
    );
    let _ = d.teardown();
}

/// INIT2RTR of an RC QP on an Ethernet port whose RoCE path (not
/// force-loopback) names an empty GID table entry: the driver refuses it
/// before any command (`GidNotProgrammed`, it knows what it programmed),
/// and the firmware model refuses the same command sent past that check
/// (BAD_PARAM); after SET_ROCE_ADDRESS programs the entry both accept it,
/// and a force-loopback path needs no entry.
#[test]
fn rtr_from_an_empty_gid_entry_is_refused() {
    use bareverbs::cqe::CqeSize;
    use bareverbs::device::{AddressPath, DeviceError, HwQpState, Init2Rtr, QpSpec, Rst2Init};
    use ops::{gid_ipv4_mapped, gid_link_local_eui64, RoceAddress, RoceVersion};
    let fw = FwConfig::default();
    let mac = fw.mac;
    let mut d = bring_up_sim(fw).unwrap();
    let cq = d.create_cq(64, CqeSize::B64).unwrap();
    let pd = d.alloc_pd().unwrap();
    let spec = QpSpec {
        qp_type: bareverbs::sizing::QpType::Rc,
        pd,
        send_cqn: cq.cqn(),
        recv_cqn: cq.cqn(),
        log_sq_size: 6,
        log_rq_size: 6,
        rq_wqe_shift: 5,
        srqn: None,
        user_index: 7,
        max_send_wr: 0,
        max_recv_wr: 0,
    };
    // The kernel's RoCE path: GID, MAC and source index, `grh` left 0.
    let rtr = |fl: bool| Init2Rtr {
        mtu: 3,
        log_msg_max: 30,
        remote_qpn: 0x100,
        path: AddressPath {
            fl,
            sgid_index: 2,
            rgid: gid_ipv4_mapped([192, 168, 1, 20]),
            rmac: [0x02, 0, 0, 0, 0, 0x20],
            udp_sport: 0xc001,
            port: 1,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut qps = Vec::new();
    for _ in 0..3 {
        let mut q = d.create_qp(spec).unwrap();
        let r2i = Rst2Init {
            port: 1,
            ..Default::default()
        };
        d.rst2init(&mut q, &r2i).unwrap();
        qps.push(q);
    }
    let sent = |d: &bareverbs_sim::fw::SimDevice| {
        d.bar()
            .fw()
            .log
            .iter()
            .filter(|(o, _)| *o == op::INIT2RTR_QP)
            .count()
    };
    let e = d.init2rtr(&mut qps[0], &rtr(false)).unwrap_err();
    assert_eq!(e, DeviceError::GidNotProgrammed { index: 2 });
    assert_eq!(sent(&d), 0, "refused before any command");
    // The same command past the driver's check: the model refuses it.
    let r = ops::init2rtr(d.input(), qps[0].qpn(), &rtr(false));
    // SAFETY: an INIT2RTR built for this QP; the driver records RTR only
    // if firmware accepts it.
    let e = unsafe { d.modify_unchecked(&mut qps[0], r, HwQpState::Rtr) }.unwrap_err();
    assert_eq!(
        e,
        DeviceError::Cmd(failure(
            op::INIT2RTR_QP,
            CmdStatus::BadParam,
            reason::GID_INDEX
        ))
    );
    // Force loopback: no address needed.
    d.init2rtr(&mut qps[1], &rtr(true)).unwrap();
    let a = RoceAddress {
        gid: gid_link_local_eui64(mac),
        mac,
        vlan: None,
        version: RoceVersion::V2,
    };
    d.set_gid(2, &a).unwrap();
    d.init2rtr(&mut qps[0], &rtr(false)).unwrap();
    // Past the driver's check again, now with the entry programmed.
    let r = ops::init2rtr(d.input(), qps[2].qpn(), &rtr(false));
    // SAFETY: as above.
    unsafe { d.modify_unchecked(&mut qps[2], r, HwQpState::Rtr) }.unwrap();
    let _ = d.teardown();
}
