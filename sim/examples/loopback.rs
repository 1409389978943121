//! Two simulated ConnectX functions on one fabric, brought up by firmware
//! command; PD, buffer, memory region, CQ and an RC QP on each from verbs
//! capabilities; connected; then RDMA WRITE, SEND/RECV and RDMA READ with
//! every byte checked, in safe Rust only (the test command checks this file
//! for the keyword). Every fallible call — bring-up, object creation,
//! transitions, posting and polling — is propagated with `?` into
//! [`bareverbs::verbs::Error`]. `cargo run --release -p bareverbs-sim --example loopback`

use bareverbs::cmd::ops::{IbMtu, RoceAddress};
use bareverbs::cqe::{WcStatus, WorkCompletion};
use bareverbs::device::DeviceConfig;
use bareverbs::sizing::QpType;
use bareverbs::sq::SendOp;
use bareverbs::verbs::{
    Access, AddressHandle, CompletionQueue, Context, Error, InitAttr, QpCap, QpInitAttr, RecvWr,
    RtrAttr, RtsAttr, SendWr,
};
use bareverbs_sim::fw::{bring_up_on, FwConfig};
use bareverbs_sim::Fabric;

type Qp<'a> = bareverbs::verbs::QueuePair<'a, bareverbs_sim::fw::SimUar, 64, 16>;

/// RESET → INIT → RTR → RTS toward the peer's QP number at its RoCE v2
/// address (GID and MAC), sending from our GID table entry `sgid`.
fn connect(
    qp: &mut Qp,
    peer_qpn: u32,
    peer: RoceAddress,
    sgid: u16,
    psn: (u32, u32),
) -> Result<(), Error> {
    qp.to_init(&InitAttr::new(
        1,
        Access::REMOTE_WRITE | Access::REMOTE_READ,
    ))?;
    let ah = AddressHandle::roce(1, peer.gid, peer.mac, sgid as u8);
    qp.to_rtr(&RtrAttr::new(IbMtu::Mtu1024, peer_qpn, psn.0, ah))?;
    qp.to_rts(&RtsAttr::new(psn.1))?;
    Ok(())
}

/// Polls `cq` until one completion arrives (bounded), and checks it: a
/// poll error (a CQE the queues cannot account for) is returned with `?`;
/// a failed or missing completion stops the example.
fn wait(cq: &CompletionQueue, qp: &mut Qp, wr_id: u64) -> Result<WorkCompletion, Error> {
    let mut wc = [WorkCompletion::default(); 1];
    for _ in 0..10_000 {
        if cq.poll(qp, &mut wc)? == 1 {
            assert_eq!(
                (wc[0].wr_id, wc[0].status),
                (wr_id, WcStatus::Success),
                "unexpected completion {:?}",
                wc[0]
            );
            return Ok(wc[0]);
        }
    }
    panic!("no completion for WR {wr_id}");
}

fn main() -> Result<(), Error> {
    let fabric = Fabric::new(1);
    let (dev_a, _) = bring_up_on(&fabric, FwConfig::default(), DeviceConfig::default())?;
    let (dev_b, _) = bring_up_on(&fabric, FwConfig::default(), DeviceConfig::default())?;
    let (a, b) = (Context::new(dev_a), Context::new(dev_b));
    // Each port's GID table as the kernel lays it out for one IPv4 address
    // (RoCE v2 entry at index 3, `ib_write_bw -x 3`).
    let ga = a.add_ip_gids(std::net::Ipv4Addr::new(192, 168, 1, 1).into())?;
    let gb = b.add_ip_gids(std::net::Ipv4Addr::new(192, 168, 1, 2).into())?;
    let (addr_a, addr_b) = (a.gid(ga.v2).expect("GID"), b.gid(gb.v2).expect("GID"));
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let (pd_a, pd_b) = (a.alloc_pd()?, b.alloc_pd()?);
    let (buf_a, buf_b) = (a.alloc_buffer(8192)?, b.alloc_buffer(8192)?);
    let (mr_a, mr_b) = (
        a.reg_mr(&pd_a, &buf_a, rights)?,
        b.reg_mr(&pd_b, &buf_b, rights)?,
    );
    let (cq_a, cq_b) = (a.create_cq(32)?, b.create_cq(32)?);
    let cap = QpCap::new(16, 16, 1, 1);
    let mut qa: Qp = a.create_qp(&pd_a, &QpInitAttr::new(QpType::Rc, &cq_a, &cq_a, cap))?;
    let mut qb: Qp = b.create_qp(&pd_b, &QpInitAttr::new(QpType::Rc, &cq_b, &cq_b, cap))?;
    println!(
        "QP {:#x} <-> QP {:#x}, caps read back: {:?}",
        qa.qp_num(),
        qb.qp_num(),
        qa.cap()
    );
    connect(&mut qa, qb.qp_num(), addr_b, ga.v2, (0x10, 0x20))?;
    connect(&mut qb, qa.qp_num(), addr_a, gb.v2, (0x20, 0x10))?;

    // RDMA WRITE: A's bytes 0..4096 land in B's bytes 0..4096.
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    buf_a.write(0, &data)?;
    let dst = mr_b.remote(0, 4096).expect("remote range");
    let write = SendOp::Write {
        remote_addr: dst.addr,
        rkey: dst.rkey,
    };
    qa.post_send(&[SendWr::new(1, write, &[mr_a.sge(0, 4096).expect("sge")]).signaled()])?;
    wait(&cq_a, &mut qa, 1)?;
    let mut got = vec![0u8; 4096];
    buf_b.read(0, &mut got)?;
    assert_eq!(got, data, "WRITE payload");
    println!("RDMA WRITE 4096 B: verified");

    // SEND/RECV: 1000 bytes from A's offset 4096 into B's offset 4096.
    let msg: Vec<u8> = (0..1000u32).map(|i| (i ^ 0x5a) as u8).collect();
    buf_a.write(4096, &msg)?;
    qb.post_recv(&[RecvWr::new(7, &[mr_b.sge(4096, 2048).expect("sge")])])?;
    qa.post_send(&[
        SendWr::new(2, SendOp::Send, &[mr_a.sge(4096, 1000).expect("sge")]).signaled(),
    ])?;
    wait(&cq_a, &mut qa, 2)?;
    let wc = wait(&cq_b, &mut qb, 7)?;
    let mut got = vec![0u8; 1000];
    buf_b.read(4096, &mut got)?;
    assert_eq!((wc.byte_len, got), (1000, msg), "SEND payload");
    println!("SEND/RECV 1000 B: verified");

    // RDMA READ: B's bytes 0..4096 (the WRITE's payload) back into A's 6144..
    let src = mr_b.remote(0, 2048).expect("remote range");
    let read = SendOp::Read {
        remote_addr: src.addr,
        rkey: src.rkey,
    };
    qa.post_send(&[SendWr::new(3, read, &[mr_a.sge(6144, 2048).expect("sge")]).signaled()])?;
    wait(&cq_a, &mut qa, 3)?;
    let mut got = vec![0u8; 2048];
    buf_a.read(6144, &mut got)?;
    assert_eq!(got, data[..2048], "READ payload");
    println!("RDMA READ 2048 B: verified");
    Ok(())
}
