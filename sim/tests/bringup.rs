//! End-to-end bring-up on the simulated firmware, through the same core code
//! VFIO uses. Expected values come from the
//! [reference](bareverbs::reference) (§3.11 typical values, §7.5
//! status codes, §6.1 states) or from the firmware configuration the test
//! sets, never from the driver's own output.

use bareverbs::cmd::initseg::InitSegError;
use bareverbs::cmd::ops::{self, HwQpState};
use bareverbs::cmd::{op, CmdError, CmdStatus, DeliveryStatus, MailboxProblem};
use bareverbs::cqe::CqeSize;
use bareverbs::device::{
    AddressPath, DeviceConfig, DeviceError, Init2Rtr, LinkLayer, PortState, QpHandle, QpSpec,
    Rst2Init, Rtr2Rts, SrqSpec, Step,
};
use bareverbs::mr::Access;
use bareverbs::platform::DmaAllocator;
use bareverbs::rq::RqConfig;
use bareverbs::sizing::{QpType, ServiceType};
use bareverbs::sq::SqConfig;
use bareverbs_sim::fw::objects::{DataPath, ObjectEvent};
use bareverbs_sim::fw::{
    bring_up_sim, bring_up_sim_with, default_caps, devinfo_sim, devinfo_sim_with, failure, reason,
    FwConfig, HcaState, SimDevice,
};
use std::sync::{Arc, Mutex};

fn rc_spec(d: &mut SimDevice, cqn: u32) -> QpSpec {
    let pd = d.alloc_pd().unwrap();
    QpSpec {
        qp_type: QpType::Rc,
        pd,
        send_cqn: cqn,
        recv_cqn: cqn,
        log_sq_size: 6,
        log_rq_size: 6,
        rq_wqe_shift: 5,
        srqn: None,
        user_index: 7,
        max_send_wr: 0,
        max_recv_wr: 0,
    }
}

/// QP types without a `qpc.st` code on the command path (raw packet, XRC)
/// are refused with a typed error before any command; RC, UC and UD are
/// created with their codes (0, 1, 2), as the device reports back.
#[test]
fn only_rc_uc_and_ud_qps_are_created_through_commands() {
    let mut d = bring_up_sim(FwConfig::default()).unwrap();
    let cq = d.create_cq(4096, CqeSize::B64).unwrap();
    for t in [QpType::RawPacket, QpType::XrcSend, QpType::XrcRecv] {
        let spec = QpSpec {
            qp_type: t,
            ..rc_spec(&mut d, cq.cqn())
        };
        assert_eq!(
            d.create_qp(spec).unwrap_err(),
            DeviceError::UnsupportedQpType(t)
        );
    }
    for (t, st) in [(QpType::Rc, 0), (QpType::Uc, 1), (QpType::Ud, 2)] {
        let s = t.service_type().unwrap();
        assert_eq!(s.code(), st);
        assert_eq!(s.qp_type(), t);
        assert_eq!(ServiceType::from_code(st), Some(s));
        assert_eq!(QpType::from_service_type(st), Some(t));
        let spec = QpSpec {
            qp_type: t,
            ..rc_spec(&mut d, cq.cqn())
        };
        let mut qp = d.create_qp(spec).unwrap();
        assert_eq!(d.query_qp(&mut qp).unwrap().st, st, "{t:?}");
    }
}

/// [ref §3.7](bareverbs::reference) / the field failure of the sizing issue: a CQ with 4095
/// usable entries cannot take a QP that may have 2048 send + 2048 receive
/// WRs outstanding; 2048 + 2047 fits; a second QP on the same CQ does not.
#[test]
fn qp_refused_when_its_cq_cannot_hold_every_outstanding_wr() {
    let mut d = bring_up_sim(FwConfig::default()).unwrap();
    let cq = d.create_cq(4096, CqeSize::B64).unwrap();
    let mut spec = rc_spec(&mut d, cq.cqn());
    spec.max_send_wr = 2048;
    spec.max_recv_wr = 2048;
    let e = d.create_qp(spec).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, bareverbs::device::DeviceError::CqTooSmall(_)),
        "{msg}"
    );
    assert!(msg.contains("4095") && msg.contains("2048"), "{msg}");
    spec.max_recv_wr = 2047;
    let qp = d.create_qp(spec).unwrap();
    let mut spec2 = rc_spec(&mut d, cq.cqn());
    spec2.max_send_wr = 1;
    assert!(d.create_qp(spec2).is_err(), "the CQ is fully committed");
    d.destroy_qp(qp).unwrap();
    assert!(
        d.create_qp(spec2).is_ok(),
        "destroying the QP released its share"
    );
}

fn connect(d: &mut SimDevice, a: &mut QpHandle, remote: u32) {
    d.rst2init(
        a,
        &Rst2Init {
            port: 1,
            remote_read: true,
            remote_write: true,
            ..Default::default()
        },
    )
    .unwrap();
    d.init2rtr(
        a,
        &Init2Rtr {
            mtu: 3,
            log_msg_max: 30,
            remote_qpn: remote,
            rq_psn: 0x100,
            min_rnr_nak: 1,
            path: AddressPath {
                fl: true,
                port: 1,
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .unwrap();
    d.rtr2rts(
        a,
        &Rtr2Rts {
            sq_psn: 0x200,
            retry_count: 7,
            rnr_retry: 7,
            ack_timeout: 8,
            log_sra_max: 0,
        },
    )
    .unwrap();
}

#[test]
fn bring_up_fills_device_caps_from_query_hca_cap() {
    let cfg = FwConfig::default();
    let d = bring_up_sim(cfg.clone()).unwrap();
    let caps = d.device_caps();
    let c = &cfg.caps;
    assert_eq!(caps.max_sq_desc_sz, c.max_wqe_sz_sq as u32);
    assert_eq!(caps.max_rq_desc_sz, c.max_wqe_sz_rq as u32);
    assert_eq!(caps.max_send_wqebb, 1 << c.log_max_qp_sz);
    assert_eq!(caps.max_recv_wr, 1 << c.log_max_qp_sz);
    assert_eq!(caps.max_srq_recv_wr, 1 << c.log_max_srq_sz);
    assert_eq!(caps.max_cqe, 1 << c.log_max_cq_sz);
    assert_eq!(caps.bf_reg_size, 1 << c.log_bf_reg_size);
    assert_eq!(caps.cqe_version, 1);
    // The defaults equal DeviceCaps::DEFAULT's descriptor geometry.
    let def = bareverbs::sizing::DeviceCaps::DEFAULT;
    assert_eq!(caps.max_sq_desc_sz, def.max_sq_desc_sz);
    assert_eq!(caps.max_send_wqebb, def.max_send_wqebb);
    assert_eq!(d.issi(), 1, "supported_issi bit 1 set → ISSI 1 (ref §7.6)");
    let fw = d.fw_version();
    assert_eq!((fw.major, fw.minor, fw.subminor), cfg.fw_version);
    let bar = d.bar();
    let f = bar.fw();
    assert_eq!(f.hca_state(), HcaState::Initialized);
    assert_eq!(f.issi(), 1);
    // Boot + init pages, plus one page per object beyond the free quota.
    assert_eq!(f.pages_held() as u32, cfg.boot_pages + cfg.init_pages);
    assert_eq!(d.pages_held(), f.pages_held());
    // SET_HCA_CAP cleared cmdif_checksum (ref §7.6 step 8).
    assert_eq!(f.current_caps().cmdif_checksum, 0);
    // The bring-up order of ref §7.6.
    let ops: Vec<u16> = f.log.iter().map(|(o, _)| *o).collect();
    assert_eq!(
        ops,
        vec![
            op::ENABLE_HCA,
            op::QUERY_ISSI,
            op::SET_ISSI,
            op::QUERY_PAGES,
            op::MANAGE_PAGES,
            op::ACCESS_REG,
            op::QUERY_HCA_CAP,
            op::QUERY_HCA_CAP,
            op::SET_HCA_CAP,
            // RoCE page (mlx5_vfio.c handle_hca_cap_roce): current,
            // maximum, then SET_HCA_CAP op_mod 8 turning
            // sw_r_roce_src_udp_port on (ref §7.14).
            op::QUERY_HCA_CAP,
            op::QUERY_HCA_CAP,
            op::SET_HCA_CAP,
            op::QUERY_PAGES,
            op::MANAGE_PAGES,
            op::INIT_HCA,
            op::QUERY_HCA_CAP,
            // Ethernet port with RoCE capability (FwConfig default
            // port_type 1, roce): roce_en after INIT_HCA (ref §7.6).
            op::MODIFY_NIC_VPORT_CONTEXT,
            // RoCE capability page (current), for the loopback rules.
            op::QUERY_HCA_CAP,
            op::ALLOC_UAR,
            op::CREATE_EQ,
        ]
    );
    assert!(f.log.iter().all(|(_, s)| *s == 0));
    assert!(f.roce_en);
    // Little-endian host → he = 0x00 (ref §7.6 step 7).
    assert_eq!(f.host_endianness, Some(0x00));
    drop(f);
    // FwConfig's RoCE page byte 0x0e: fl allowed with RoCE on and off.
    let rc = d.roce_caps().unwrap();
    assert!(rc.fl_rc_qp_when_roce_enabled && rc.fl_rc_qp_when_roce_disabled);
    assert_eq!(d.force_loopback_rc(), Some(true));
}

/// RoCE enable: sent only for Ethernet ports with the RoCE capability;
/// without it a QP cannot be attached to an Ethernet port; the vport
/// context reads back what was set.
#[test]
fn roce_is_enabled_on_ethernet_ports_only_and_qps_need_it() {
    // InfiniBand port: no MODIFY_NIC_VPORT_CONTEXT.
    let mut ib = FwConfig::default();
    ib.caps.port_type = 0;
    let d = bring_up_sim(ib).unwrap();
    assert!(!d
        .bar()
        .fw()
        .log
        .iter()
        .any(|(o, _)| *o == op::MODIFY_NIC_VPORT_CONTEXT));
    drop(d);

    // Ethernet port, driver told not to enable RoCE: RST2INIT refused.
    let dev = DeviceConfig {
        enable_roce: false,
        ..DeviceConfig::default()
    };
    let mut d = bring_up_sim_with(FwConfig::default(), dev).unwrap();
    let cq = d.create_cq(64, CqeSize::B64).unwrap();
    let spec = rc_spec(&mut d, cq.cqn());
    let mut q = d.create_qp(spec).unwrap();
    let e = d
        .rst2init(
            &mut q,
            &Rst2Init {
                port: 1,
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(
        e,
        DeviceError::Cmd(failure(
            op::RST2INIT_QP,
            CmdStatus::BadParam,
            reason::ROCE_DISABLED
        ))
    );
    // Enabling it by command makes the same transition legal, and the
    // vport context reads back roce_en = 1, the MTU and the MAC.
    let r = ops::modify_nic_vport_roce(d.input(), true);
    // SAFETY: sets the vport's roce_en, no object, page or DMA address is
    // involved (Device::run allows cached-state-only changes).
    unsafe { d.run(r) }.unwrap();
    let r = ops::query_nic_vport_context(d.input());
    // SAFETY: a query: changes nothing on the device.
    let out = unsafe { d.run(r) }.unwrap().to_vec();
    let ctx = ops::parse_nic_vport_context(&out[ops::QUERY_VPORT_CTX_OFFSET..]);
    let cfg = FwConfig::default();
    assert_eq!(
        ctx,
        ops::NicVportContext {
            roce_en: true,
            mtu: cfg.port_mtu,
            system_image_guid: cfg.system_image_guid,
            port_guid: cfg.node_guid,
            node_guid: cfg.node_guid,
            permanent_mac: cfg.mac,
        }
    );
    d.rst2init(
        &mut q,
        &Rst2Init {
            port: 1,
            ..Default::default()
        },
    )
    .unwrap();
    // A field other than roce_en is refused by the model (not implemented).
    let r = ops::modify_nic_vport_roce(d.input(), true);
    d.input()[0x0f] |= 0x04; // field_select.addresses_list
                             // SAFETY: vport context only (no object, page or DMA address); even
                             // if accepted it would change nothing the driver relies on.
    assert!(unsafe { d.run(r) }.is_err());
}

#[test]
fn devinfo_matches_facts_typical_values() {
    let info = devinfo_sim().unwrap();
    // ref §3.11 typical ConnectX-5 values the default model reproduces.
    assert_eq!(info.max_qp, 262_144);
    assert_eq!(info.max_qp_wr, 32_768);
    assert_eq!(info.max_cqe, 4_194_303);
    // The mlx5 kernel rule (mlx5_ib_query_device): min(max_wqe_sz_rq / 16,
    // (min(max_wqe_sz_sq, 512) − 16 ctrl − 16 raddr) / 16) = min(512 / 16,
    // (512 − 32) / 16) = min(32, 30) = 30, the ConnectX-5 figure ref
    // §3.11 quotes; max_sge_rd is MLX5_MAX_SGE_RD = 30, max_srq_sge
    // max_rq_sg − 1 = 31, max_srq_wr (1 << 15) − 1.
    assert_eq!(info.max_sge, 30);
    assert_eq!(info.max_sge_rd, 30);
    assert_eq!(info.max_srq_sge, 31);
    assert_eq!(info.max_srq_wr, 32_767);
    // log_max_ra_req_qp 4 / log_max_ra_res_qp 4: 16 each, 16 · 2^18 total.
    assert_eq!(info.max_qp_rd_atom, 16);
    assert_eq!(info.max_qp_init_rd_atom, 16);
    assert_eq!(info.max_res_rd_atom, 16 << 18);
    assert_eq!(info.max_mr_size, u64::MAX);
    // log_pg_sz 12: ~(4096 − 1).
    assert_eq!(info.page_size_cap, Some(!0xfffu64));
    assert_eq!(info.phys_port_cnt, 1);
    // QUERY_ADAPTER and QUERY_NIC_VPORT_CONTEXT answer what the firmware
    // configuration holds; PCI identity is the host's.
    let cfg = FwConfig::default();
    assert_eq!(info.vendor_id, Some(0x02c9));
    assert_eq!(info.adapter.unwrap().board_id(), Some("BAREVERBS_SIM01"));
    assert_eq!(info.node_guid, Some(cfg.node_guid));
    assert_eq!(info.sys_image_guid, Some(cfg.system_image_guid));
    // MAC 02:00:00:00:00:01 with 03:00 inserted after its third byte.
    assert_eq!(cfg.node_guid, 0x0200_0003_0000_0001);
    assert_eq!(info.vendor_part_id, Some(4119));
    assert_eq!(info.hw_ver, Some(0));
    // Ethernet port: LIDs 0 (mlx5_query_port_roce), no IB-only attributes,
    // max_msg_sz 1 << log_max_msg (30).
    assert_eq!(info.ports[0].lid, Some(0));
    assert_eq!(info.ports[0].sm_lid, Some(0));
    assert_eq!(info.ports[0].lmc, Some(0));
    assert_eq!(info.ports[0].ib, None);
    assert_eq!(info.ports[0].max_msg_sz, 1 << 30);
    assert_eq!(info.max_pd, 1 << 24);
    assert_eq!(info.max_mr, 1 << 24);
    assert_eq!(info.max_cq, 1 << 24);
    assert_eq!(info.fw_ver.to_string(), "16.35.2000");
    assert_eq!(info.ports.len(), 1);
    assert_eq!(info.ports[0].state, PortState::Active);
    assert_eq!(info.ports[0].link_layer, LinkLayer::Ethernet);
    // Default model port: Ethernet, PMTU 1522 (1500-byte netdev):
    // 1500 − 96 = 1404 → RoCE MTU 1024; max 10000 − 22 − 96 → 4096.
    assert_eq!(info.ports[0].active_mtu, Some(1024));
    assert_eq!(info.ports[0].max_mtu, Some(4096));
}

fn ib_config(port_mtu: u16) -> FwConfig {
    let mut cfg = FwConfig {
        port_mtu,
        port_max_mtu: 4096,
        ..FwConfig::default()
    };
    cfg.caps.port_type = 0;
    cfg
}

/// devinfo's MTUs come from the PMTU register (ACCESS_REG 0x5003) the
/// firmware configuration sets: IB ports report the IB MTU itself; Ethernet
/// ports the RoCE MTU of netdev MTU = PMTU − 22, minus 96 bytes of RoCE
/// headers, rounded down to an IB MTU (expected values worked by hand).
#[test]
fn devinfo_reports_the_pmtu_the_firmware_reports() {
    let info = devinfo_sim_with(ib_config(4096)).unwrap();
    assert_eq!(info.ports[0].link_layer, LinkLayer::InfiniBand);
    assert_eq!(info.ports[0].active_mtu, Some(4096));
    assert_eq!(info.ports[0].max_mtu, Some(4096));
    assert_eq!(info.ports[0].active_ib_mtu().map(|m| m.code()), Some(5));
    let info = devinfo_sim_with(ib_config(2048)).unwrap();
    assert_eq!(info.ports[0].active_mtu, Some(2048));
    // An IB port reporting a non-IB size: unknown, not rounded.
    let info = devinfo_sim_with(ib_config(1500)).unwrap();
    assert_eq!(info.ports[0].active_mtu, None);

    for (pmtu, want) in [(1522u16, 1024u32), (9022, 4096), (4214, 4096), (4213, 2048)] {
        let info = devinfo_sim_with(FwConfig {
            port_mtu: pmtu,
            ..FwConfig::default()
        })
        .unwrap();
        assert_eq!(info.ports[0].link_layer, LinkLayer::Ethernet);
        assert_eq!(info.ports[0].active_mtu, Some(want), "PMTU {pmtu}");
    }

    // Two ports: one PMTU read per port, local_port 1 then 2, all read
    // (op_mod 1) and successful.
    let mut cfg = FwConfig::default();
    cfg.caps.num_ports = 2;
    let mut d = bring_up_sim(cfg).unwrap();
    let before = d.bar().fw().log.len();
    let info = d.devinfo().unwrap();
    assert_eq!(info.ports.len(), 2);
    assert!(info.ports.iter().all(|p| p.active_mtu == Some(1024)));
    let log: Vec<(u16, u8)> = d.bar().fw().log[before..].to_vec();
    assert_eq!(
        log,
        vec![
            (op::QUERY_ADAPTER, 0),
            (op::QUERY_VPORT_STATE, 0),
            (op::QUERY_NIC_VPORT_CONTEXT, 0),
            (op::ACCESS_REG, 0),
            (op::ACCESS_REG, 0)
        ]
    );
    // The firmware rejects a local_port beyond num_ports with BAD_PARAM.
    let e = d.query_pmtu(3).unwrap_err();
    assert_eq!(
        e,
        DeviceError::Cmd(failure(op::ACCESS_REG, CmdStatus::BadParam, reason::FIELD))
    );
    assert_eq!(CmdStatus::BadParam.code(), 0x03);
    let e = d.query_pmtu(0).unwrap_err();
    assert!(matches!(
        e,
        DeviceError::Cmd(CmdError::Failed {
            status: CmdStatus::BadParam,
            ..
        })
    ));
    assert_eq!(d.query_pmtu(2).unwrap().local_port, 2);
    d.teardown();
}

/// An InfiniBand port: state, LIDs and GUIDs come from
/// QUERY_HCA_VPORT_CONTEXT (linux mlx5_query_hca_port), the state in
/// `ibv_port_state` numbers (4 Active, 1 Down); a two-port device is asked
/// per port (port_num 1, 2).
#[test]
fn devinfo_ib_port_from_hca_vport_context() {
    let mut cfg = ib_config(4096);
    cfg.lid = 7;
    cfg.sm_lid = 3;
    cfg.lmc = 2;
    cfg.node_guid = 0x0002_c903_00aa_bb01;
    cfg.system_image_guid = 0x0002_c903_00aa_bb04;
    let info = devinfo_sim_with(cfg.clone()).unwrap();
    let p = info.ports[0];
    assert_eq!(p.state, PortState::Active);
    assert_eq!(p.state.code(), 4);
    assert_eq!((p.lid, p.sm_lid, p.lmc), (Some(7), Some(3), Some(2)));
    let ib = p.ib.unwrap();
    assert_eq!(ib.phys_state, 5, "LinkUp");
    assert_eq!(ib.subnet_timeout, 18);
    assert_eq!(info.node_guid, Some(0x0002_c903_00aa_bb01));
    assert_eq!(info.sys_image_guid, Some(0x0002_c903_00aa_bb04));

    cfg.port_state = 0;
    cfg.caps.num_ports = 2;
    let mut d = bring_up_sim(cfg).unwrap();
    let before = d.bar().fw().log.len();
    let info = d.devinfo().unwrap();
    assert!(info
        .ports
        .iter()
        .all(|p| p.state == PortState::Down && p.state.code() == 1));
    let log: Vec<u16> = d.bar().fw().log[before..].iter().map(|e| e.0).collect();
    assert_eq!(
        log,
        vec![
            op::QUERY_ADAPTER,
            op::ACCESS_REG,
            op::QUERY_HCA_VPORT_CONTEXT,
            op::ACCESS_REG,
            op::QUERY_HCA_VPORT_CONTEXT
        ]
    );
    // Port 0 on a two-port device names no port: BAD_PARAM.
    assert!(d.query_hca_vport_context(3).is_err());
    d.teardown();
}

/// Older firmware that rejects the PMTU register: devinfo still succeeds,
/// with the MTUs unknown.
#[test]
fn devinfo_without_pmtu_reports_unknown_mtu() {
    let cfg = FwConfig {
        pmtu_supported: false,
        ..FwConfig::default()
    };
    let mut d = bring_up_sim(cfg).unwrap();
    let info = d.devinfo().unwrap();
    assert_eq!(info.ports[0].state, PortState::Active);
    assert_eq!(info.ports[0].active_mtu, None);
    assert_eq!(info.ports[0].max_mtu, None);
    assert_eq!(
        d.bar().fw().log.last(),
        Some(&(op::ACCESS_REG, 0x03)),
        "the PMTU read was sent and failed with BAD_PARAM"
    );
    d.teardown();
}

#[derive(Default)]
struct Recorder(Arc<Mutex<Vec<ObjectEvent>>>);
impl DataPath for Recorder {
    fn object_event(&mut self, ev: &ObjectEvent) -> Result<(), &'static str> {
        self.0.lock().unwrap().push(ev.clone());
        Ok(())
    }
    fn uar_write(&mut self, _uar: u32, _offset: usize, _bytes: &[u8]) {}
}

#[test]
fn create_objects_connect_two_qps_error_reset_reuse_teardown() {
    let mut d = bring_up_sim(FwConfig::default()).unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    d.bar()
        .fw()
        .set_data_path(Box::new(Recorder(events.clone())));
    let dma = d.allocator().0.clone();

    // Memory region over a DMA buffer.
    let pd = d.alloc_pd().unwrap();
    let buf = d.allocator().alloc(3 * 4096, 4096).unwrap();
    // SAFETY: the test's own buffer, freed only after teardown.
    let mr = unsafe {
        d.create_mkey(
            pd,
            &buf,
            Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ,
        )
    }
    .unwrap();
    {
        let bar = d.bar();
        let f = bar.fw();
        let m = &f.objects().mkeys[&mr.index()];
        // lkey/rkey = index << 8 | mkey_7_0 (ref §7.12), with the variant
        // byte the command programmed (it rotates per key, nonzero; it was
        // always 0 before, when this read `mr.key == mr.index << 8`).
        assert_eq!(mr.key(), mr.index() << 8 | m.variant as u32);
        assert_ne!(m.variant, 0);
        assert_eq!((m.start, m.len, m.pd), (buf.iova, 3 * 4096, pd.0));
        assert_eq!(m.pages, vec![buf.iova, buf.iova + 4096, buf.iova + 8192]);
    }

    let cq = d.create_cq(256, CqeSize::B64).unwrap();
    let spec = rc_spec(&mut d, cq.cqn());
    let mut a = d.create_qp(spec).unwrap();
    let mut b = d.create_qp(spec).unwrap();
    assert_ne!(a.qpn(), b.qpn());
    // Buffer layout: RQ (64 × 32 B) then SQ (64 × 64 B) (ref §3.6).
    assert_eq!(a.rq().len, 64 * 32);
    assert_eq!(a.sq().iova, a.buf().iova + 64 * 32);
    assert_eq!(a.sq().len, 64 * 64);

    connect(&mut d, &mut a, b.qpn());
    connect(&mut d, &mut b, a.qpn());
    let (aq, bq) = (a.qpn(), b.qpn());
    for (q, peer) in [(&mut a, bq), (&mut b, aq)] {
        let st = d.query_qp(q).unwrap();
        assert_eq!(st.state, HwQpState::Rts);
        assert_eq!(st.remote_qpn, peer);
        assert_eq!(st.sq_psn, 0x200);
        assert_eq!(st.rq_psn, 0x100);
        assert_eq!(st.mtu, 3);
        assert_eq!((st.cqn_snd, st.cqn_rcv), (cq.cqn(), cq.cqn()));
        assert_eq!(st.port, 1);
    }
    {
        let bar = d.bar();
        let f = bar.fw();
        let q = &f.objects().qps[&a.qpn()];
        assert_eq!(q.state, HwQpState::Rts);
        assert_eq!(q.dbr_addr, a.dbrec().iova);
        assert_eq!(q.pages[0], a.buf().iova);
        assert_eq!((q.rre, q.rwe, q.rae), (true, true, false));
        assert_eq!(q.user_index, 7);
        assert_eq!(q.retry_count, 7);
        assert_eq!(q.ack_timeout, 8);
    }

    // The data-path queue types accept the created objects' memory.
    // SAFETY: one queue object per handle, dropped before the objects.
    unsafe {
        let cqq = cq.completion_queue::<256>().unwrap();
        assert_eq!(cqq.ncqe(), 256);
        let uar = d.map_uar(a.uar_index()).unwrap();
        let sq = a.send_queue(
            uar,
            SqConfig::new(QpType::Rc, 64, 1).sig_all(true),
            [bareverbs::sq::SqSlot::default(); 64],
        );
        assert!(sq.is_some());
        let rqc = RqConfig {
            wqe_shift: 5,
            max_gs: 2,
            max_post: 64,
        };
        let rq = a.recv_queue(rqc, [bareverbs::rq::RqSlot::default(); 64]);
        assert!(rq.is_some());
    }

    // To error, back to reset, and reuse the QP.
    d.qp_to_err(&mut a).unwrap();
    assert_eq!(d.query_qp(&mut a).unwrap().state, HwQpState::Err);
    d.qp_to_reset(&mut a).unwrap();
    assert_eq!(d.query_qp(&mut a).unwrap().state, HwQpState::Reset);
    connect(&mut d, &mut a, b.qpn());
    assert_eq!(d.query_qp(&mut a).unwrap().state, HwQpState::Rts);

    // An SRQ and a QP receiving through it.
    let srq = d
        .create_srq(SrqSpec {
            pd,
            log_size: 5,
            wqe_shift: 6,
        })
        .unwrap();
    let mut s = spec;
    s.srqn = Some(srq.srqn());
    let c = d.create_qp(s).unwrap();
    assert_eq!(c.rq().len, 0);
    assert_eq!(d.bar().fw().objects().qps[&c.qpn()].srqn, Some(srq.srqn()));

    // The hook saw every object change.
    {
        let ev = events.lock().unwrap();
        assert!(ev
            .iter()
            .any(|e| matches!(e, ObjectEvent::QpCreated(q) if q.qpn == a.qpn())));
        let a_states: Vec<HwQpState> = ev
            .iter()
            .filter_map(|e| match e {
                ObjectEvent::QpModified(q) if q.qpn == a.qpn() => Some(q.state),
                _ => None,
            })
            .collect();
        use HwQpState::*;
        assert_eq!(a_states, vec![Init, Rtr, Rts, Err, Reset, Init, Rtr, Rts]);
        assert!(ev
            .iter()
            .any(|e| matches!(e, ObjectEvent::MkeyCreated(m) if m.index == mr.index())));
    }

    // Explicit destroy of one QP; teardown handles the rest.
    d.destroy_qp(b).unwrap();
    assert!(!d.bar().fw().objects().qps.contains_key(&b_qpn(&events)));
    let held = d.pages_held();
    let (rep, bar, _clock, alloc) = d.teardown();
    assert_eq!(rep.first_error, None);
    assert_eq!(rep.pages_reclaimed, held);
    assert_eq!(rep.pages_leaked, 0);
    // Left alive: a, c (QPs), srq, cq, mr, two PDs.
    assert_eq!(rep.objects_destroyed, 7);
    {
        let f = bar.fw();
        assert_eq!(f.hca_state(), HcaState::Disabled);
        assert_eq!(f.pages_held(), 0);
        assert!(f.objects().is_empty());
        assert!(f.objects().uars.is_empty());
    }
    // SAFETY: the key was destroyed; the buffer is ours.
    unsafe { alloc.free(buf) };
    assert_eq!(dma.allocated_bytes(), 0, "every DMA byte returned");
}

fn b_qpn(events: &Arc<Mutex<Vec<ObjectEvent>>>) -> u32 {
    events
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find_map(|e| match e {
            ObjectEvent::QpDestroyed(n) => Some(*n),
            _ => None,
        })
        .unwrap()
}

#[test]
fn bad_parameter_bad_opcode_and_wrong_state() {
    let mut d = bring_up_sim(FwConfig::default()).unwrap();
    let cq = d.create_cq(64, CqeSize::B64).unwrap();
    let spec = rc_spec(&mut d, cq.cqn());
    let mut q = d.create_qp(spec).unwrap();

    // Driver-side check: RTR2RTS from RESET is not a legal transition.
    let e = d.rtr2rts(&mut q, &Rtr2Rts::default()).unwrap_err();
    assert!(matches!(
        e,
        DeviceError::WrongQpState {
            state: HwQpState::Reset,
            ..
        }
    ));
    // Firmware-side check: the same command sent anyway → BAD_QP_STATE 0x10.
    let r = ops::rtr2rts(d.input(), q.qpn(), &Rtr2Rts::default());
    // SAFETY: an RTR2RTS built for q.qpn in d.input(); on success the QP
    // would be in RTS, the state given (firmware refuses it here).
    let e = unsafe { d.modify_unchecked(&mut q, r, HwQpState::Rts) }.unwrap_err();
    assert_eq!(
        e,
        DeviceError::Cmd(failure(
            op::RTR2RTS_QP,
            CmdStatus::BadQpState,
            reason::QP_STATE
        ))
    );
    assert_eq!(CmdStatus::BadQpState.code(), 0x10);

    // Bad parameter: port 0 at RST2INIT, MTU 0 at INIT2RTR.
    let e = d.rst2init(&mut q, &Rst2Init::default()).unwrap_err();
    assert_eq!(
        e,
        DeviceError::Cmd(failure(op::RST2INIT_QP, CmdStatus::BadParam, reason::FIELD))
    );
    assert_eq!(
        q.state(),
        HwQpState::Reset,
        "failed command leaves the state"
    );
    d.rst2init(
        &mut q,
        &Rst2Init {
            port: 1,
            ..Default::default()
        },
    )
    .unwrap();
    // (Force-loopback, so the driver's RoCE address checks pass and the
    // zero MTU reaches firmware.)
    let fl = Init2Rtr {
        path: AddressPath {
            fl: true,
            port: 1,
            ..Default::default()
        },
        ..Default::default()
    };
    let e = d.init2rtr(&mut q, &fl).unwrap_err();
    assert!(e.to_string().contains("BAD_PARAM_ERR"), "{e}");
    assert_eq!(d.query_qp(&mut q).unwrap().state, HwQpState::Init);

    // Bad opcode → BAD_OP 0x02.
    let r = ops::with_obj(d.input(), 0x7ff, 0);
    // SAFETY: an opcode firmware does not know: it cannot act on anything.
    let e = unsafe { d.run(r) }.unwrap_err();
    assert_eq!(e.status(), Some(CmdStatus::BadOp));
    assert_eq!(CmdStatus::BadOp.code(), 0x02);

    // Bad resource: unknown QPN.
    let r = ops::qp_2err(d.input(), 0xabcdef);
    // SAFETY: names a QPN the driver never created (its QPNs start at
    // 0x100 and q is the only one): no object of the driver is touched.
    assert_eq!(
        unsafe { d.run(r) }.unwrap_err().status(),
        Some(CmdStatus::BadResource)
    );

    // Bad resource state: CQ and PD still in use.
    let r = ops::with_obj(d.input(), op::DESTROY_CQ, cq.cqn());
    // SAFETY: firmware must refuse it (the CQ is in use by q; asserted).
    // Even if the simulated firmware accepted it, the CQ's ring stays
    // allocated and tracked by the driver (freed only by destroy_cq or
    // teardown), and the model reaches it only through HeapDma::translate.
    assert_eq!(
        unsafe { d.run(r) }.unwrap_err().status(),
        Some(CmdStatus::BadResState)
    );
    let r = ops::dealloc_pd(d.input(), spec.pd.0);
    // SAFETY: as above; a PD owns no memory at all.
    assert_eq!(
        unsafe { d.run(r) }.unwrap_err().status(),
        Some(CmdStatus::BadResState)
    );
    assert_eq!(CmdStatus::BadResState.code(), 0x09);

    // Driver-side limit check.
    let mut big = spec;
    big.log_sq_size = 16;
    assert!(matches!(
        d.create_qp(big).unwrap_err(),
        DeviceError::Limit {
            what: "log_sq_size",
            requested: 16,
            max: 15
        }
    ));
    let (rep, ..) = d.teardown();
    assert_eq!(rep.first_error, None);
}

#[test]
fn exceeded_limit_when_qp_table_full() {
    let mut cfg = FwConfig::default();
    cfg.caps.log_max_qp = 1; // two QPs
    let mut d = bring_up_sim(cfg).unwrap();
    let cq = d.create_cq(64, CqeSize::B64).unwrap();
    let spec = rc_spec(&mut d, cq.cqn());
    let _a = d.create_qp(spec).unwrap();
    let _b = d.create_qp(spec).unwrap();
    let e = d.create_qp(spec).unwrap_err();
    assert_eq!(
        e,
        DeviceError::Cmd(failure(
            op::CREATE_QP,
            CmdStatus::ExceedLimit,
            reason::LIMIT
        ))
    );
    assert_eq!(CmdStatus::ExceedLimit.code(), 0x08);
    let (rep, ..) = d.teardown();
    assert_eq!(rep.pages_leaked, 0);
}

#[test]
fn missing_pages_fail_without_eq_and_are_requested_with_eq() {
    let cfg = FwConfig {
        free_objects: 0,
        pages_per_object: 2,
        ..FwConfig::default()
    };
    // Without an async EQ firmware cannot ask: NO_RESOURCES.
    let dev = DeviceConfig {
        async_eq: false,
        ..DeviceConfig::default()
    };
    // (A memory key: a CQ is refused before any command on a device
    // without an EQ, since it must name one.)
    let mut d = bring_up_sim_with(cfg.clone(), dev).unwrap();
    let pd = d.alloc_pd().unwrap();
    let buf = d.allocator().alloc(4096, 4096).unwrap();
    // SAFETY: the test's own buffer, freed only after teardown.
    let e = unsafe { d.create_mkey(pd, &buf, Access::LOCAL_WRITE) }.unwrap_err();
    assert_eq!(
        e,
        DeviceError::Cmd(failure(
            op::CREATE_MKEY,
            CmdStatus::NoResources,
            reason::PAGES
        ))
    );
    assert_eq!(CmdStatus::NoResources.code(), 0x0f);
    let (_rep, _bar, _clock, alloc) = d.teardown();
    // SAFETY: the function is torn down; nothing names the buffer.
    unsafe { alloc.free(buf) };

    // With the async EQ: PAGE_REQUEST EQE → MANAGE_PAGES on the page slot
    // → the waiting CREATE_CQ completes.
    let mut d = bring_up_sim(cfg.clone()).unwrap();
    let before = d.pages_held();
    let cq = d.create_cq(64, CqeSize::B64).unwrap();
    assert_eq!(d.page_events(), 1);
    assert_eq!(d.pages_held(), before + 2);
    let spec = rc_spec(&mut d, cq.cqn());
    let _qp = d.create_qp(spec).unwrap();
    assert_eq!(d.page_events(), 2);
    {
        let bar = d.bar();
        let f = bar.fw();
        let eq = f.objects().eqs.values().next().unwrap();
        assert_eq!(eq.pi, 2);
        assert_eq!(eq.ci, 2, "driver published its consumer index");
        // EQ doorbell (arm + CI) written to UAR + 0x40 (ref §4.6).
        assert!(f.uar_writes.iter().any(|(_, off, _)| *off == 0x40));
        // Answers to page requests travelled on the last slot, 31 (ref §7.2 step 4).
        let page_cmds: Vec<u8> = f
            .slot_log
            .iter()
            .filter(|(_, o)| *o == op::MANAGE_PAGES)
            .map(|(s, _)| *s)
            .collect();
        assert_eq!(page_cmds, vec![0, 0, 31, 31]);
    }
    let (rep, ..) = d.teardown();
    assert_eq!(rep.first_error, None);
    assert_eq!(rep.pages_leaked, 0);

    // INIT_HCA without its pages (lying QUERY_PAGES) → bring-up fails at INIT_HCA.
    let lying = FwConfig {
        init_pages_reported: Some(0),
        ..FwConfig::default()
    };
    let e = bring_up_sim(lying).unwrap_err();
    assert_eq!(
        e,
        DeviceError::BringUp {
            step: Step::InitHca,
            err: failure(op::INIT_HCA, CmdStatus::NoResources, reason::PAGES)
        }
    );
}

#[test]
fn timeouts_with_a_fake_clock() {
    let dev = DeviceConfig {
        cmd_timeout_us: 5_000,
        cmd_poll_us: 10,
        ..DeviceConfig::default()
    };
    let mut d = bring_up_sim_with(FwConfig::default(), dev).unwrap();
    d.bar().fw().faults.hang_next = 1;
    let t0 = d.clock_mut().now;
    let e = d.alloc_pd().unwrap_err();
    let DeviceError::Cmd(CmdError::Timeout { opcode, waited_us }) = e else {
        panic!("{e:?}");
    };
    assert_eq!(opcode, op::ALLOC_PD);
    assert!(waited_us >= 5_000);
    assert!(d.clock_mut().now - t0 >= 5_000);
    // The slot is still owned by firmware.
    let e = d.alloc_pd().unwrap_err();
    assert!(matches!(
        e,
        DeviceError::Cmd(CmdError::SlotBusy { slot: 0, .. })
    ));
    // Late firmware completes it; the slot is usable again.
    d.bar().fw().release_hung();
    d.alloc_pd().unwrap();
    d.teardown();

    // Firmware that never finishes initializing.
    let cfg = FwConfig {
        init_polls: u32::MAX,
        ..FwConfig::default()
    };
    let dev = DeviceConfig {
        init_timeout_us: 100_000,
        ..DeviceConfig::default()
    };
    let e = bring_up_sim_with(cfg, dev).unwrap_err();
    assert!(matches!(
        e,
        DeviceError::InitSeg(InitSegError::InitTimeout { waited_us }) if waited_us >= 100_000
    ));
}

#[test]
fn init_segment_checks_and_issi_negotiation() {
    let e = bring_up_sim(FwConfig {
        cmdif_rev: 4,
        ..FwConfig::default()
    })
    .unwrap_err();
    assert_eq!(e, DeviceError::InitSeg(InitSegError::CmdifRev { found: 4 }));
    let e = bring_up_sim(FwConfig {
        log_cmdq_size: 5,
        log_cmdq_stride: 8,
        ..FwConfig::default()
    })
    .unwrap_err();
    assert_eq!(
        e,
        DeviceError::InitSeg(InitSegError::QueueTooLarge {
            log_sz: 5,
            log_stride: 8
        })
    );
    // ISSI 0 only: no SET_ISSI.
    let d = bring_up_sim(FwConfig {
        supported_issi: 0b01,
        ..FwConfig::default()
    })
    .unwrap();
    assert_eq!(d.issi(), 0);
    assert!(!d.bar().fw().log.iter().any(|(o, _)| *o == op::SET_ISSI));
    // Only ISSI 2: unsupported.
    let e = bring_up_sim(FwConfig {
        supported_issi: 0b100,
        ..FwConfig::default()
    })
    .unwrap_err();
    assert_eq!(e, DeviceError::UnsupportedIssi { supported: 0b100 });
    // Health: the counter ticks.
    let mut d = bring_up_sim(FwConfig::default()).unwrap();
    {
        let seg = bareverbs::cmd::initseg::InitSeg(d.bar());
        let c = seg.health_counter();
        assert!(seg.counter_alive(c));
        assert_eq!(seg.check_health(), Ok(()));
        assert!(!seg.initializing());
    }
    for _ in 0..5 {
        assert_eq!(d.check_health(), Ok(()));
    }
    // A stuck counter is fatal on the third unchanged poll (ref §7.1).
    d.bar().fw().faults.health_stuck = true;
    assert_eq!(d.check_health(), Ok(()), "miss 1");
    assert_eq!(d.check_health(), Ok(()), "miss 2");
    assert!(matches!(
        d.check_health(),
        Err(bareverbs::cmd::initseg::HealthProblem::CounterStuck { .. })
    ));
}

#[test]
fn delivery_errors_and_corrupt_mailboxes_are_typed() {
    let mut d = bring_up_sim(FwConfig::default()).unwrap();
    d.bar().fw().faults.delivery_next = Some(7);
    let e = d.alloc_pd().unwrap_err();
    assert_eq!(
        e,
        DeviceError::Cmd(CmdError::Delivery {
            opcode: op::ALLOC_PD,
            status: DeliveryStatus::InputLen
        })
    );
    let cq = d.create_cq(64, CqeSize::B64).unwrap();
    let spec = rc_spec(&mut d, cq.cqn());
    let mut q = d.create_qp(spec).unwrap();
    d.bar().fw().faults.corrupt_out_block_num = true;
    let e = d.query_qp(&mut q).unwrap_err();
    assert_eq!(
        e,
        DeviceError::Cmd(CmdError::Mailbox {
            opcode: op::QUERY_QP,
            problem: MailboxProblem::BlockNumber {
                expected: 0,
                found: 7
            }
        })
    );
    // Injected status with a syndrome is surfaced verbatim.
    d.bar().fw().faults.fail_next = Some((0x01, 0xdead_beef));
    let e = d.alloc_pd().unwrap_err();
    assert_eq!(
        e,
        DeviceError::Cmd(CmdError::Failed {
            opcode: op::ALLOC_PD,
            status: CmdStatus::InternalError,
            syndrome: 0xdead_beef
        })
    );
    assert_eq!(d.query_qp(&mut q).unwrap().state, HwQpState::Reset);
    let _ = default_caps();
    d.teardown();
}
