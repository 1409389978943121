//! RoCE v2 and InfiniBand addressing between simulated functions on one
//! fabric, through the verbs layer: GID tables laid out as the kernel lays
//! them out, perftest's GID choice, paths built by the kernel's
//! `mlx5_set_path` rule, and what a wrong address does (the driver refuses
//! what it can see is wrong; what it cannot see — a GID or MAC nobody
//! holds — never arrives, as on a real network).

use bareverbs::cmd::op;
use bareverbs::cmd::ops::{IbMtu, RoceAddress, RoceVersion};
use bareverbs::cqe::{WcStatus, WorkCompletion};
use bareverbs::device::{DeviceConfig, DeviceError, LinkLayer};
use bareverbs::sizing::QpType;
use bareverbs::sq::SendOp;
use bareverbs::verbs::*;
use bareverbs_sim::fw::{bring_up_on, FwConfig, SimDevice, SimUar};
use bareverbs_sim::Fabric;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

type Qp<'a> = QueuePair<'a, SimUar, 64, 16>;
type Ctx =
    Context<bareverbs_sim::fw::SimBar, bareverbs_sim::fw::FakeClock, bareverbs_sim::fw::SharedDma>;

fn ctx(fabric: &Fabric, fw: FwConfig) -> Ctx {
    let (d, _nic): (SimDevice, _) = bring_up_on(fabric, fw, DeviceConfig::default()).unwrap();
    Context::new(d)
}

fn ip4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(a, b, c, d))
}

/// Commands of `op` the firmware model has seen.
fn sent(c: &Ctx, opcode: u16) -> usize {
    // SAFETY: reads the firmware model's log; no object changes.
    unsafe {
        c.with_device(|d| {
            d.bar()
                .fw()
                .log
                .iter()
                .filter(|(o, _)| *o == opcode)
                .count()
        })
    }
}

fn up(qp: &mut Qp, peer_qpn: u32, ah: AddressHandle) -> Result<(), Error> {
    let rights = Access::REMOTE_WRITE | Access::REMOTE_READ;
    qp.to_init(&InitAttr::new(1, rights))?;
    qp.to_rtr(&RtrAttr::new(IbMtu::Mtu1024, peer_qpn, 0, ah))?;
    let mut rts = RtsAttr::new(0);
    rts.retry_cnt = 1;
    rts.timeout = 1;
    qp.to_rts(&rts)
}

/// Polls for one completion (the fabric runs as it is polled).
fn one(cq: &CompletionQueue, qp: &mut Qp) -> WorkCompletion {
    let mut wc = [WorkCompletion::default(); 1];
    for _ in 0..100_000 {
        if cq.poll(qp, &mut wc).unwrap() == 1 {
            return wc[0];
        }
    }
    panic!("no completion");
}

/// The kernel's GID layout for one IPv4 address and perftest's choice.
#[test]
fn gid_table_layout_and_perftest_choice() {
    let fabric = Fabric::new(3);
    let c = ctx(&fabric, FwConfig::default());
    assert_eq!(c.link_layer(), LinkLayer::Ethernet);
    assert_eq!(
        c.best_gid_index(false),
        None,
        "an empty table has no choice"
    );
    let mac = FwConfig::default().mac; // device 0 keeps the default MAC
    let g = c.add_ip_gids(ip4(192, 168, 1, 10)).unwrap();
    assert_eq!((g.v1, g.v2), (2, 3));
    // 0/1: the link-local GID of the permanent MAC (modified EUI-64).
    let ll = [
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0, 0, 0xff, 0xfe, 0, 0, 1,
    ];
    assert_eq!(mac, [0x02, 0, 0, 0, 0, 1]);
    for (i, v) in [(0, RoceVersion::V1), (1, RoceVersion::V2)] {
        let e = c.gid(i).unwrap();
        assert_eq!((e.gid, e.mac, e.version), (ll, mac, v), "entry {i}");
    }
    let mapped = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 1, 10];
    assert_eq!(c.gid(3).unwrap().gid, mapped);
    assert_eq!(c.gid(2).unwrap().version, RoceVersion::V1);
    // What the device holds is what the driver recorded.
    // SAFETY: QUERY_ROCE_ADDRESS only reads.
    let q = unsafe { c.with_device(|d| d.query_gid(3)) }.unwrap();
    assert_eq!((q.gid, q.mac, q.version), (mapped, mac, 2));
    // perftest: IPv4 family +100, global +10, v2 +2 → index 3; with
    // --ipv6 the link-local v2 entry (100 + 2) beats the IPv4 ones (12).
    assert_eq!(c.best_gid_index(false), Some(3));
    assert_eq!(c.best_gid_index(true), Some(1));
    // A global IPv6 address wins --ipv6 (100 + 10 + 2) at its v2 entry.
    let v6 = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x10));
    let g6 = c.add_ip_gids(v6).unwrap();
    assert_eq!((g6.v1, g6.v2), (4, 5));
    assert_eq!(c.best_gid_index(true), Some(5));
    assert_eq!(c.best_gid_index(false), Some(3));
    // Adding an address again keeps its entries and sends nothing.
    let before = sent(&c, op::SET_ROCE_ADDRESS);
    assert_eq!(c.add_ip_gids(ip4(192, 168, 1, 10)).unwrap(), g);
    assert_eq!(sent(&c, op::SET_ROCE_ADDRESS), before);
    assert_eq!(before, 6, "two defaults and two per address");
    // A cleared default is programmed again, never given to an address.
    // SAFETY: clears an entry no QP of this test uses.
    unsafe { c.with_device(|d| d.clear_gid(0)) }.unwrap();
    let g4 = c.add_ip_gids(ip4(172, 16, 0, 1)).unwrap();
    assert_eq!((g4.v1, g4.v2), (6, 7));
    assert_eq!(c.gid(0).unwrap().gid, ll);
}

struct Pair {
    a: Ctx,
    b: Ctx,
}

fn pair(seed: u64) -> (Fabric, Pair) {
    let fabric = Fabric::new(seed);
    let a = ctx(&fabric, FwConfig::default());
    let b = ctx(&fabric, FwConfig::default());
    (fabric, Pair { a, b })
}

/// WRITE 512 bytes from A to B over `ah_a` (B is connected back to A by
/// its real address); returns A's completion status and whether B's
/// bytes changed.
fn write_over(p: &Pair, ah_a: impl Fn(&RoceAddress, u8) -> AddressHandle) -> (WcStatus, bool) {
    let (a, b) = (&p.a, &p.b);
    let ga = a.add_ip_gids(ip4(10, 0, 0, 1)).unwrap();
    let gb = b.add_ip_gids(ip4(10, 0, 0, 2)).unwrap();
    let (addr_a, addr_b) = (a.gid(ga.v2).unwrap(), b.gid(gb.v2).unwrap());
    assert_ne!(
        addr_a.mac, addr_b.mac,
        "the fabric gives each function its MAC"
    );
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
    let (ba, bb) = (a.alloc_buffer(4096).unwrap(), b.alloc_buffer(4096).unwrap());
    let (ma, mb) = (
        a.reg_mr(&pa, &ba, rights).unwrap(),
        b.reg_mr(&pb, &bb, rights).unwrap(),
    );
    let (ca, cb) = (a.create_cq(32).unwrap(), b.create_cq(32).unwrap());
    let cap = QpCap::new(16, 16, 1, 1);
    let mut qa: Qp = a
        .create_qp(&pa, &QpInitAttr::new(QpType::Rc, &ca, &ca, cap))
        .unwrap();
    let mut qb: Qp = b
        .create_qp(&pb, &QpInitAttr::new(QpType::Rc, &cb, &cb, cap))
        .unwrap();
    up(&mut qa, qb.qp_num(), ah_a(&addr_b, ga.v2 as u8)).unwrap();
    let back = AddressHandle::roce(1, addr_a.gid, addr_a.mac, gb.v2 as u8);
    up(&mut qb, qa.qp_num(), back).unwrap();
    let data: Vec<u8> = (0..512u32).map(|i| (i * 13 + 1) as u8).collect();
    ba.write(0, &data).unwrap();
    let t = mb.remote(0, 512).unwrap();
    let w = SendOp::Write {
        remote_addr: t.addr,
        rkey: t.rkey,
    };
    qa.post_send(&[SendWr::new(9, w, &[ma.sge(0, 512).unwrap()]).signaled()])
        .unwrap();
    let wc = one(&ca, &mut qa);
    assert_eq!(wc.wr_id, 9);
    let mut got = vec![0u8; 512];
    bb.read(0, &mut got).unwrap();
    let landed = got == data;
    assert!(landed || got == vec![0u8; 512], "all or nothing");
    (wc.status, landed)
}

/// Two functions over RoCE v2: the kernel-laid-out entries, the peer's GID
/// and MAC, bytes verified.
#[test]
fn rc_write_between_two_functions_over_roce_v2() {
    let (_f, p) = pair(5);
    let r = write_over(&p, |peer, sgid| {
        AddressHandle::roce(1, peer.gid, peer.mac, sgid)
    });
    assert_eq!(r, (WcStatus::Success, true));
}

/// A GID nobody holds, or the right GID at another MAC, reaches nobody:
/// the requester retries and fails, and nothing is written.
#[test]
fn a_wrong_gid_or_mac_never_arrives() {
    let (_f, p) = pair(6);
    let r = write_over(&p, |peer, sgid| {
        let mut gid = peer.gid;
        gid[15] ^= 0x40; // 10.0.0.66: on nobody's table
        AddressHandle::roce(1, gid, peer.mac, sgid)
    });
    assert_eq!(r, (WcStatus::RetryExcErr, false));
    let (_f, p) = pair(7);
    let r = write_over(&p, |peer, sgid| {
        let mut mac = peer.mac;
        mac[5] ^= 0x10;
        AddressHandle::roce(1, peer.gid, mac, sgid)
    });
    assert_eq!(r, (WcStatus::RetryExcErr, false));
}

/// What the driver can see is wrong is refused before any command.
#[test]
fn roce_paths_the_driver_refuses() {
    let fabric = Fabric::new(8);
    let c = ctx(&fabric, FwConfig::default());
    let g = c.add_ip_gids(ip4(10, 0, 0, 1)).unwrap();
    let me = c.gid(g.v2).unwrap();
    let pd = c.alloc_pd().unwrap();
    let cq = c.create_cq(32).unwrap();
    let cap = QpCap::new(16, 16, 1, 1);
    let mut qp: Qp = c
        .create_qp(&pd, &QpInitAttr::new(QpType::Rc, &cq, &cq, cap))
        .unwrap();
    qp.to_init(&InitAttr::new(1, Access::REMOTE_WRITE)).unwrap();
    let qpn = qp.qp_num();
    let rtr = |ah| RtrAttr::new(IbMtu::Mtu1024, qpn, 0, ah);
    let cases: [(AddressHandle, DeviceError); 5] = [
        (
            AddressHandle::ib(1, 7),
            DeviceError::BadPath {
                why: "a RoCE path routes by GID: give the peer's GID (AddressHandle::roce)",
            },
        ),
        (
            AddressHandle::roce(1, me.gid, [0; 6], g.v2 as u8),
            DeviceError::BadMac {
                mac: [0; 6],
                what: "destination MAC",
            },
        ),
        (
            AddressHandle::roce(1, me.gid, [1, 0, 0x5e, 0, 0, 1], g.v2 as u8),
            DeviceError::BadMac {
                mac: [1, 0, 0x5e, 0, 0, 1],
                what: "destination MAC",
            },
        ),
        (
            AddressHandle::roce(1, [0; 16], me.mac, g.v2 as u8),
            DeviceError::BadPath {
                why: "the destination GID is all zero",
            },
        ),
        (
            AddressHandle::roce(1, me.gid, me.mac, 9),
            DeviceError::GidNotProgrammed { index: 9 },
        ),
    ];
    for (ah, want) in cases {
        assert_eq!(qp.to_rtr(&rtr(ah)), Err(Error::Device(want)), "{ah:?}");
    }
    let mut ah = AddressHandle::roce(1, me.gid, me.mac, g.v2 as u8);
    ah.sl = 8;
    assert_eq!(
        qp.to_rtr(&rtr(ah)),
        Err(Error::Device(DeviceError::Limit {
            what: "RoCE service level (Ethernet priority)",
            requested: 8,
            max: 7
        }))
    );
    assert_eq!(sent(&c, op::INIT2RTR_QP), 0, "nothing reached firmware");
    // The same QP then connects to itself by its own address.
    let ah = AddressHandle::roce(1, me.gid, me.mac, g.v2 as u8);
    qp.to_rtr(&rtr(ah)).unwrap();
    assert_eq!(sent(&c, op::INIT2RTR_QP), 1);
}

/// InfiniBand ports: LIDs from the HCA vport context (the fabric assigns
/// them), LID 0 refused, a GRH carried when asked.
#[test]
fn rc_write_between_two_infiniband_ports_by_lid() {
    let fabric = Fabric::new(9);
    let mut fw = FwConfig::default();
    fw.caps.port_type = 0;
    let a = ctx(&fabric, fw.clone());
    let b = ctx(&fabric, fw);
    assert_eq!(a.link_layer(), LinkLayer::InfiniBand);
    let (la, lb) = (
        a.query_port().unwrap().lid.unwrap(),
        b.query_port().unwrap().lid.unwrap(),
    );
    assert_eq!((la, lb), (1, 2));
    assert!(matches!(
        a.add_ip_gids(ip4(10, 0, 0, 1)),
        Err(Error::Device(DeviceError::NotEthernet { .. }))
    ));
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
    let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
    let (ba, bb) = (a.alloc_buffer(4096).unwrap(), b.alloc_buffer(4096).unwrap());
    let (ma, mb) = (
        a.reg_mr(&pa, &ba, rights).unwrap(),
        b.reg_mr(&pb, &bb, rights).unwrap(),
    );
    let (ca, cb) = (a.create_cq(32).unwrap(), b.create_cq(32).unwrap());
    let cap = QpCap::new(16, 16, 1, 1);
    let mut qa: Qp = a
        .create_qp(&pa, &QpInitAttr::new(QpType::Rc, &ca, &ca, cap))
        .unwrap();
    let mut qb: Qp = b
        .create_qp(&pb, &QpInitAttr::new(QpType::Rc, &cb, &cb, cap))
        .unwrap();
    qa.to_init(&InitAttr::new(1, rights)).unwrap();
    let zero = RtrAttr::new(IbMtu::Mtu1024, qb.qp_num(), 0, AddressHandle::ib(1, 0));
    assert_eq!(
        qa.to_rtr(&zero),
        Err(Error::Device(DeviceError::BadPath {
            why: "an InfiniBand path needs the peer's unicast LID (1..=0xbfff)",
        }))
    );
    let mut ah = AddressHandle::ib(1, lb);
    ah.grh = Some(GlobalRoute::new(
        [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
        0,
    ));
    qa.to_rtr(&RtrAttr::new(IbMtu::Mtu1024, qb.qp_num(), 0, ah))
        .unwrap();
    // The GRH went to firmware (`grh` bit, as mlx5_set_path sets it on IB).
    // SAFETY: reads the firmware model's QP table only.
    let grh = unsafe { a.with_device(|d| d.bar().fw().objects().qps[&qa.qp_num()].grh) };
    assert!(grh);
    qa.to_rts(&RtsAttr::new(0)).unwrap();
    up(&mut qb, qa.qp_num(), AddressHandle::ib(1, la)).unwrap();
    ba.write(0, &[0x5a; 256]).unwrap();
    let t = mb.remote(0, 256).unwrap();
    let w = SendOp::Write {
        remote_addr: t.addr,
        rkey: t.rkey,
    };
    qa.post_send(&[SendWr::new(4, w, &[ma.sge(0, 256).unwrap()]).signaled()])
        .unwrap();
    let wc = one(&ca, &mut qa);
    assert_eq!((wc.wr_id, wc.status), (4, WcStatus::Success));
    let mut got = [0u8; 256];
    bb.read(0, &mut got).unwrap();
    assert_eq!(got, [0x5a; 256]);
}

/// A UD QP names no peer at INIT2RTR: it reaches RTS with no address on
/// either link layer.
#[test]
fn ud_reaches_rts_without_an_address_on_both_link_layers() {
    for port_type in [1u8, 0] {
        let fabric = Fabric::new(10);
        let mut fw = FwConfig::default();
        fw.caps.port_type = port_type;
        let c = ctx(&fabric, fw);
        let pd = c.alloc_pd().unwrap();
        let cq = c.create_cq(32).unwrap();
        let cap = QpCap::new(16, 16, 1, 1);
        let mut qp: QueuePair<SimUar, 32, 16> = c
            .create_qp(&pd, &QpInitAttr::new(QpType::Ud, &cq, &cq, cap))
            .unwrap();
        let mut init = InitAttr::new(1, Access::empty());
        init.qkey = 0x1111_1111;
        qp.to_init(&init).unwrap();
        let rtr = RtrAttr::new(IbMtu::Mtu1024, 0, 0, AddressHandle::default());
        qp.to_rtr(&rtr).unwrap();
        qp.to_rts(&RtsAttr::new(0)).unwrap();
    }
}
