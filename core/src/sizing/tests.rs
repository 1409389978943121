//! Sizing tests: the ref §3.9 worked examples (with its ASSUMED 512-byte
//! descriptors), CQ coverage, send-op parsing and budgets.

use super::*;

const F39: DeviceCaps = DeviceCaps {
    max_sq_desc_sz: 512,
    ..DeviceCaps::DEFAULT
};

fn sq(t: QpType, wr: u32, sge: u32, inl: u32) -> Result<SqLayout, SizingError> {
    sq_layout(&QpCaps::new(t).send(wr, sge, inl), &F39)
}

#[test]
fn facts_3_9_sq() {
    let l = sq(QpType::Rc, 1024, 16, 0).unwrap();
    assert_eq!(
        (
            l.overhead,
            l.wqe_size,
            l.buf_bytes,
            l.wqe_cnt,
            l.max_post,
            l.max_inline_data
        ),
        (192, 448, 524288, 8192, 1170, 252)
    );
    let e = sq(QpType::Rc, 65536, 16, 0).unwrap_err();
    assert_eq!(
        (e.stage, e.limit, e.requested, e.allowed),
        (Stage::Sq, Limit::MaxSendWqebb, 524288, 32768)
    );
    assert_eq!(e.errno(), 22);
    assert_eq!(
        e.to_string(),
        "SQ needs 524288 WQEBBs (65536 WRs × 448-byte WQEs); the device allows 32768"
    );
    let l = sq(QpType::Rc, 8192, 1, 0).unwrap();
    assert_eq!(
        (
            l.wqe_size,
            l.buf_bytes,
            l.wqe_cnt,
            l.max_post,
            l.max_inline_data
        ),
        (256, 2097152, 32768, 8192, 60)
    );
    assert_eq!(
        sq(QpType::Rc, 8193, 1, 0).unwrap_err().limit,
        Limit::MaxSendWqebb
    );
    let l = sq(QpType::Rc, 128, 1, 64).unwrap();
    assert_eq!(
        (
            l.wqe_size,
            l.buf_bytes,
            l.wqe_cnt,
            l.max_post,
            l.max_inline_data
        ),
        (320, 65536, 1024, 204, 124)
    );
    assert_eq!(
        sq(QpType::Rc, 128, 1, 512).unwrap_err().limit,
        Limit::MaxSqDescSz
    );
    let l = sq_layout(
        &QpCaps::new(QpType::Rc)
            .send(1024, 1, 0)
            .ops(SendOps::RDMA_ONLY),
        &F39,
    )
    .unwrap();
    assert_eq!(
        (
            l.overhead,
            l.wqe_size,
            l.buf_bytes,
            l.wqe_cnt,
            l.max_post,
            l.max_inline_data
        ),
        (32, 64, 65536, 1024, 1024, 28)
    );
    let l = sq(QpType::Ud, 1024, 1, 0).unwrap();
    assert_eq!(
        (
            l.overhead,
            l.wqe_size,
            l.buf_bytes,
            l.wqe_cnt,
            l.max_post,
            l.max_inline_data
        ),
        (64, 128, 131072, 2048, 1024, 60)
    );
    let l = sq(QpType::Ud, 256, 2, 128).unwrap();
    assert_eq!(
        (
            l.wqe_size,
            l.buf_bytes,
            l.wqe_cnt,
            l.max_post,
            l.max_inline_data
        ),
        (256, 65536, 1024, 256, 188)
    );
    let l = sq(QpType::RawPacket, 512, 1, 0).unwrap();
    assert_eq!(
        (
            l.overhead,
            l.wqe_size,
            l.buf_bytes,
            l.wqe_cnt,
            l.max_post,
            l.max_inline_data
        ),
        (48, 64, 32768, 512, 512, 12)
    );
    let l = sq(QpType::XrcSend, 256, 4, 0).unwrap();
    assert_eq!(
        (
            l.overhead,
            l.wqe_size,
            l.buf_bytes,
            l.wqe_cnt,
            l.max_post,
            l.max_inline_data
        ),
        (208, 320, 131072, 2048, 409, 108)
    );
}

#[test]
fn facts_3_9_rq() {
    let rq = |wr, sge| rq_layout(&QpCaps::new(QpType::Rc).recv(wr, sge), &F39).unwrap();
    let g = |l: RqLayout| {
        (
            l.wqe_size,
            l.buf_bytes,
            l.wqe_cnt,
            l.wqe_shift,
            l.max_post,
            l.max_gs,
        )
    };
    assert_eq!(g(rq(1024, 1)), (16, 16384, 1024, 4, 1024, 1));
    assert_eq!(g(rq(1024, 3)), (64, 65536, 1024, 6, 1024, 4));
    assert_eq!(g(rq(1, 1)), (16, 64, 4, 4, 4, 1));
    assert_eq!(g(rq(1024, 16)), (256, 262144, 1024, 8, 1024, 16));
}

#[test]
fn facts_3_9_cq_srq() {
    for (req, ncqe, cqe, bytes) in [
        (100, 128, 127, 8192u64),
        (1023, 1024, 1023, 65536),
        (1024, 2048, 2047, 131072),
        (4194303, 4194304, 4194303, 256 << 20),
    ] {
        let l = cq_layout(req, 64, &F39).unwrap();
        assert_eq!((l.ncqe, l.reported_cqe, l.buf_bytes), (ncqe, cqe, bytes));
    }
    let s = srq_layout(1000, 1, &F39).unwrap();
    assert_eq!(
        (
            s.wqe_size,
            s.max_gs,
            s.srq_max,
            s.tail,
            s.nwqes,
            s.waitq,
            s.ret_max_wr
        ),
        (32, 1, 2048, 1023, 1024, Some((1024, 2047)), 1023)
    );
    let s = srq_layout(100, 4, &F39).unwrap();
    assert_eq!(
        (
            s.wqe_size,
            s.max_gs,
            s.srq_max,
            s.tail,
            s.nwqes,
            s.waitq,
            s.ret_max_wr
        ),
        (128, 7, 256, 127, 128, Some((128, 255)), 127)
    );
    let s = srq_layout(20000, 1, &F39).unwrap();
    assert_eq!(
        (
            s.wqe_size,
            s.max_gs,
            s.srq_max,
            s.tail,
            s.nwqes,
            s.waitq,
            s.ret_max_wr
        ),
        (32, 1, 32768, 32767, 32768, None, 32767)
    );
}

#[test]
fn cq_covers_field_failure() {
    let cq = cq_layout(3000, 64, &DeviceCaps::DEFAULT).unwrap();
    assert_eq!(cq.reported_cqe, 4095);
    let e = check_cq_covers(
        CqAttach::Shared {
            cqe: cq.reported_cqe,
        },
        2048,
        2048,
    )
    .unwrap_err();
    assert_eq!(e.errno(), EINVAL);
    assert_eq!(
        e.to_string(),
        "CQ with 4095 usable entries cannot hold 2048 send + 2048 receive outstanding WRs"
    );
    assert!(check_cq_covers(CqAttach::Shared { cqe: 4095 }, 2048, 2047).is_ok());
    assert!(check_cq_covers(
        CqAttach::Separate {
            send_cqe: 2047,
            recv_cqe: 2047
        },
        2048,
        1
    )
    .is_err());
    let c = cq_layout(cqe_for_outstanding(4096), 64, &DeviceCaps::DEFAULT).unwrap();
    assert!(check_cq_covers(
        CqAttach::Shared {
            cqe: c.reported_cqe
        },
        2048,
        2048
    )
    .is_ok());
}

#[test]
fn send_ops_parse_and_overhead() {
    let o = SendOps::parse("write,send,read").unwrap();
    assert_eq!(o, SendOps::RDMA_ONLY);
    assert_eq!(sq_overhead(QpType::Rc, o), 32);
    assert_eq!(
        SendOps::parse("SEND|RDMA_WRITE|ATOMIC_FA")
            .unwrap()
            .op_overhead(),
        48
    );
    assert_eq!(SendOps::parse("send").unwrap().op_overhead(), 16);
    assert_eq!(SendOps::parse("send,bind").unwrap().op_overhead(), 192);
    assert_eq!(SendOps::parse("bogus"), Err("bogus"));
    assert_eq!(sq_overhead(QpType::Rc, SendOps::classic(QpType::Rc)), 192);
    assert_eq!(sq_overhead(QpType::Ud, SendOps::classic(QpType::Ud)), 64);
    assert_eq!(
        sq_overhead(QpType::RawPacket, SendOps::classic(QpType::RawPacket)),
        48
    );
    assert_eq!(
        sq_overhead(QpType::XrcSend, SendOps::classic(QpType::XrcSend)),
        208
    );
}

#[test]
fn budgets() {
    // ref §3.9: RC 1024 × 16 → 524288-byte SQ (no RQ), page aligned.
    let l = qp_layout(&QpCaps::new(QpType::Rc).send(1024, 16, 0), &F39).unwrap();
    let cq = cq_layout(1023, 64, &F39).unwrap(); // 65536 bytes
    let b = qp_budget(&l, Some(&cq), 1, &F39);
    assert_eq!(b.total_bytes, 524288 + 64 + 65536 + 64);
    assert_eq!(
        node_budget(&l, Some(&cq), 2, 4, &F39),
        4 * (524288 + 64) + 2 * (65536 + 64)
    );
    // RDMA-only op set: 1024 × 1 → 65536 vs classic 256-byte WQEs → 262144.
    let s = send_ops_saving(
        &QpCaps::new(QpType::Rc).send(1024, 1, 0),
        SendOps::RDMA_ONLY,
        &F39,
    )
    .unwrap();
    assert_eq!((s.classic_bytes, s.narrow_bytes), (262144, 65536));
}
