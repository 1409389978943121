//! Ring tests over a local array. Expected values come from
//! `conformance/vectors/cqe_vectors.txt` (the fake QP of its header and the
//! results it prints) or from [ref §4.5](crate::reference) / §5.
use super::*;
use crate::cqe::{
    Cqe64, CqeSize, MiniCqe, WcFlags, WcOpcode, WcStatus, WorkCompletion, WrittenFields,
};
use crate::platform::MemUar;
use core::ptr::NonNull;

#[repr(C, align(64))]
struct Mem<const B: usize> {
    ring: [u8; B],
    dbrec: [u8; 8],
}

/// The fake RC QP of the vector-file header: qpn 0x0abcde, uidx 5,
/// sq.wqe_cnt 256, sq.wrid[i] = 0x5100 + i, sq.wqe_head[i] = 1000 + i,
/// sq.wr_data[4] = LOCAL_INV; rq.wqe_cnt 16, rq.wrid[i] = 0x7200 + i.
#[derive(Default)]
struct FakeQp {
    sq_tail: u32,
    rq_tail: u32,
    scattered: Vec<u8>,
}

impl WrResolver for FakeQp {
    fn send_done(&mut self, qp: u32, wqe_counter: u16) -> Result<SendDone, CompletionReject> {
        if qp != 5 {
            return Err(CompletionReject::UnknownQp);
        }
        let idx = (wqe_counter & 255) as u64;
        self.sq_tail = 1000 + idx as u32 + 1;
        let wr_data = if idx == 4 {
            WcOpcode::LocalInv
        } else {
            WcOpcode::Send
        };
        Ok(SendDone {
            wr_id: 0x5100 + idx,
            wr_data,
        })
    }
    fn recv_done(&mut self, qp: u32, wqe_counter: u16) -> Result<RecvDone, CompletionReject> {
        if qp != 5 {
            return Err(CompletionReject::UnknownQp);
        }
        self.rq_tail += 1;
        Ok(RecvDone {
            wr_id: 0x7200 + (wqe_counter & 15) as u64,
            rx_csum: false,
        })
    }
    fn scatter_to_send(&mut self, qp: u32, _: u16, data: &[u8]) -> bool {
        self.scattered = data.to_vec();
        qp == 5
    }
    fn scatter_to_recv(&mut self, qp: u32, _: u16, data: &[u8]) -> bool {
        self.scattered = data.to_vec();
        qp == 5
    }
}

fn cq8(mem: &mut Mem<512>) -> CompletionQueue<8> {
    let base = NonNull::from(&mut *mem).cast::<u8>();
    let ring = DmaBuf {
        cpu: base,
        iova: 0x1000,
        len: 512,
    };
    let db = DmaBuf {
        // SAFETY: offset 512 is inside `Mem` (the dbrec field).
        cpu: unsafe { base.add(512) },
        iova: 0x1200,
        len: 8,
    };
    // SAFETY: `mem` outlives the CQ in every test and is only accessed
    // through the CQ's raw pointers (helpers below use the same DmaBuf).
    let mut cq = unsafe { CompletionQueue::<8>::new(ring, db, 0x33, CqeSize::B64, 1) }.unwrap();
    cq.init_ring();
    cq
}

fn put<const N: usize>(cq: &CompletionQueue<N>, slot: usize, c: &Cqe64) {
    let p = cq.ring().cpu.as_ptr();
    let sz = cq.cqe_size().bytes();
    let off = cq.cqe_size().cqe64_offset();
    for (i, b) in c.as_bytes().iter().enumerate() {
        // SAFETY: slot < ncqe; inside the ring.
        unsafe { core::ptr::write_volatile(p.add(slot * sz + off + i), *b) };
    }
}

fn cqe(op_own: u8, sop_drop_qpn: u32, wqe_counter: u16, uidx: u32) -> Cqe64 {
    let mut c = Cqe64::ZERO;
    c.set_op_own(op_own)
        .set_sop_drop_qpn(sop_drop_qpn)
        .set_wqe_counter(wqe_counter)
        .set_srqn_uidx(uidx);
    c
}

#[test]
fn init_ring_marks_every_entry_invalid() {
    let mut m = Mem {
        ring: [0x55; 512],
        dbrec: [0; 8],
    };
    let cq = cq8(&mut m);
    for i in 0..8u32 {
        let p = cq.cqe64_ptr(i);
        // SAFETY: in the ring.
        assert_eq!(unsafe { core::ptr::read_volatile(p.add(63)) }, 0xF0);
        // SAFETY: in the ring.
        assert_eq!(unsafe { core::ptr::read_volatile(p.add(5)) }, 0);
    }
}

/// Every byte of every entry after `init_ring`, for both CQE sizes: zero,
/// except op_own (byte 63 of the cqe64, which a 128-byte CQE holds in its
/// second half) = 0xF0 ([ref §3.7](crate::reference)).
#[test]
fn init_ring_writes_every_byte_of_both_cqe_sizes() {
    for size in [CqeSize::B64, CqeSize::B128] {
        let mut m = Mem::<1024> {
            ring: [0x55; 1024],
            dbrec: [0x55; 8],
        };
        let base = NonNull::from(&mut m).cast::<u8>();
        let ring = DmaBuf {
            cpu: base,
            iova: 0x1000,
            len: 8 * size.bytes(),
        };
        let db = DmaBuf {
            // SAFETY: offset 1024 is inside `Mem` (the dbrec field).
            cpu: unsafe { base.add(1024) },
            iova: 0x1400,
            len: 8,
        };
        {
            // SAFETY: `m` outlives the CQ, which is gone (end of this
            // block) before `m` is read below.
            let mut cq = unsafe { CompletionQueue::<8>::new(ring, db, 0x33, size, 1) }.unwrap();
            cq.init_ring();
        }
        let own = size.cqe64_offset() + 63;
        for (i, b) in m.ring[..8 * size.bytes()].iter().enumerate() {
            let want = if i % size.bytes() == own { 0xF0 } else { 0 };
            assert_eq!(*b, want, "{size:?} byte {i}");
        }
        // Bytes past the ring and the doorbell record are untouched.
        assert!(m.ring[8 * size.bytes()..].iter().all(|b| *b == 0x55));
        assert_eq!(m.dbrec, [0x55; 8]);
    }
}

#[test]
fn vector_1_rdma_write() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let mut cq = cq8(&mut m);
    let mut c = cqe(0x00, 0x080abcde, 3, 5);
    c.set_byte_cnt(0x77);
    put(&cq, 0, &c);
    let mut q = FakeQp::default();
    let mut wc = [WorkCompletion::default(); 1];
    assert_eq!(cq.poll(&mut q, &mut wc), Ok(1));
    assert_eq!(wc[0].wr_id, 0x5103);
    assert_eq!(wc[0].status, WcStatus::Success);
    assert_eq!(wc[0].opcode, WcOpcode::RdmaWrite);
    assert_eq!(wc[0].qp_num, 0x0abcde);
    assert!(!wc[0].written.contains(WrittenFields::BYTE_LEN));
    assert_eq!(
        (cq.consumer_index(), cq.read_dbrec(0), q.sq_tail),
        (1, 1, 1004)
    );
}

#[test]
fn vector_9_umr_takes_wr_data() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let mut cq = cq8(&mut m);
    put(&cq, 0, &cqe(0x00, 0x250abcde, 4, 5));
    let mut q = FakeQp::default();
    let mut wc = [WorkCompletion::default(); 1];
    assert_eq!(cq.poll(&mut q, &mut wc), Ok(1));
    assert_eq!(
        (wc[0].wr_id, wc[0].opcode, q.sq_tail),
        (0x5104, WcOpcode::LocalInv, 1005)
    );
}

#[test]
fn vector_15_resp_wr_imm() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let mut cq = cq8(&mut m);
    let mut c = cqe(0x10, 0x000abcde, 4, 5);
    c.set_flags_rqpn(0xabc)
        .set_imm_inval_pkey(0xa1b2c3d4)
        .set_byte_cnt(4096);
    put(&cq, 0, &c);
    let mut q = FakeQp::default();
    let mut wc = [WorkCompletion::default(); 1];
    assert_eq!(cq.poll(&mut q, &mut wc), Ok(1));
    let w = wc[0];
    assert_eq!(
        (w.wr_id, w.opcode, w.byte_len),
        (0x7204, WcOpcode::RecvRdmaWithImm, 4096)
    );
    assert_eq!(w.imm_data.to_ne_bytes(), [0xa1, 0xb2, 0xc3, 0xd4]);
    assert_eq!(
        (w.src_qp, w.wc_flags, w.pkey_index),
        (0xabc, WcFlags::WITH_IMM, 0xc3d4)
    );
    assert!(w
        .written
        .contains(WrittenFields::IMM_DATA | WrittenFields::SL));
    assert_eq!(q.rq_tail, 1);
}

#[test]
fn vector_16_send_inv() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let mut cq = cq8(&mut m);
    let mut c = cqe(0x40, 0x000abcde, 5, 5);
    c.set_flags_rqpn(0xabc)
        .set_imm_inval_pkey(0x11223344)
        .set_byte_cnt(8);
    put(&cq, 0, &c);
    let mut wc = [WorkCompletion::default(); 1];
    assert_eq!(cq.poll(&mut FakeQp::default(), &mut wc), Ok(1));
    assert_eq!(
        (wc[0].wr_id, wc[0].invalidated_rkey, wc[0].wc_flags),
        (0x7205, 0x11223344, WcFlags::WITH_INV)
    );
    assert_eq!(wc[0].pkey_index, 0x3344);
}

#[test]
fn vector_18_inline_scatter_recv() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let mut cq = cq8(&mut m);
    let mut c = cqe(0x24, 0x000abcde, 0, 5);
    c.as_bytes_mut()[..32].copy_from_slice(b"inline recv payload (scatter32)!");
    c.set_byte_cnt(20);
    put(&cq, 0, &c);
    let mut q = FakeQp::default();
    let mut wc = [WorkCompletion::default(); 1];
    assert_eq!(cq.poll(&mut q, &mut wc), Ok(1));
    assert_eq!(q.scattered, b"inline recv payload ");
    assert_eq!(
        (wc[0].byte_len, wc[0].sl, wc[0].src_qp, wc[0].slid),
        (20, 4, 0x746572, 0x6361)
    );
    assert!(wc[0].wc_flags.contains(WcFlags::GRH));
}

#[test]
fn vector_12_inline_scatter_read() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let mut cq = cq8(&mut m);
    let mut c = cqe(0x04, 0x100abcde, 0, 5);
    c.as_bytes_mut()[..32].copy_from_slice(b"scatter-to-cqe read data 0123456");
    c.set_byte_cnt(32);
    put(&cq, 0, &c);
    let mut q = FakeQp::default();
    let mut wc = [WorkCompletion::default(); 1];
    assert_eq!(cq.poll(&mut q, &mut wc), Ok(1));
    assert_eq!(q.scattered, b"scatter-to-cqe read data 0123456");
    assert_eq!((wc[0].opcode, wc[0].byte_len), (WcOpcode::RdmaRead, 32));
}

#[test]
fn errors_vectors_21_34_32() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let mut cq = cq8(&mut m);
    let mut a = cqe(0xd0, 0x0a0abcde, 7, 5);
    a.set_vendor_err_synd(0x82).set_syndrome(0x04);
    let mut b = cqe(0xe0, 0x080abcde, 6, 5);
    b.set_vendor_err_synd(0xf9).set_syndrome(0x05);
    let mut c = cqe(0xd0, 0x0a0abcde, 7, 5);
    c.set_vendor_err_synd(0x8d).set_syndrome(0x77);
    put(&cq, 0, &a);
    put(&cq, 1, &b);
    put(&cq, 2, &c);
    let mut q = FakeQp::default();
    let mut wc = [WorkCompletion::default(); 4];
    assert_eq!(cq.poll(&mut q, &mut wc), Ok(3));
    assert_eq!(
        (wc[0].wr_id, wc[0].status, wc[0].vendor_err),
        (0x5107, WcStatus::LocProtErr, 0x82)
    );
    assert_eq!(
        (wc[1].wr_id, wc[1].status, wc[1].vendor_err),
        (0x7206, WcStatus::WrFlushErr, 0xf9)
    );
    assert_eq!(
        (wc[2].status, wc[2].vendor_err),
        (WcStatus::GeneralErr, 0x8d)
    );
    assert!(!wc[0].written.contains(WrittenFields::OPCODE));
    assert_eq!((q.sq_tail, q.rq_tail, cq.read_dbrec(0)), (1008, 1, 3));
}

#[test]
fn not_owned_and_empty_vectors_36_39_40() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let mut cq = cq8(&mut m);
    let mut wc = [WorkCompletion::default(); 1];
    put(&cq, 0, &cqe(0x01, 0x080abcde, 3, 5));
    assert_eq!(cq.poll(&mut FakeQp::default(), &mut wc), Ok(0));
    put(&cq, 0, &cqe(0xf0, 0x080abcde, 3, 5));
    assert_eq!(cq.poll(&mut FakeQp::default(), &mut wc), Ok(0));
    assert_eq!((cq.consumer_index(), cq.read_dbrec(0)), (0, 0));
    cq.set_consumer_index(21);
    put(&cq, 5, &cqe(0x01, 0x080abcde, 3, 5));
    assert_eq!(cq.poll(&mut FakeQp::default(), &mut wc), Ok(0));
    assert_eq!((cq.consumer_index(), cq.read_dbrec(0)), (21, 0x15));
}

#[test]
fn second_pass_vector_37_and_wrap_vector_46() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let mut cq = cq8(&mut m);
    let mut wc = [WorkCompletion::default(); 2];
    cq.set_consumer_index(8);
    put(&cq, 0, &cqe(0x01, 0x0a0abcde, 3, 5));
    assert_eq!(cq.poll(&mut FakeQp::default(), &mut wc), Ok(1));
    assert_eq!((cq.consumer_index(), cq.read_dbrec(0)), (9, 9));
    // vector 46: ci 7, slot 7 owner 0 valid, slot 0 stale owner 0.
    cq.set_consumer_index(7);
    put(&cq, 7, &cqe(0x00, 0x0a0abcde, 3, 5));
    put(&cq, 0, &cqe(0x00, 0x0a0abcde, 3, 5));
    assert_eq!(cq.poll(&mut FakeQp::default(), &mut wc), Ok(1));
    assert_eq!((cq.consumer_index(), cq.read_dbrec(0)), (8, 8));
}

#[test]
fn multi_entry_vector_44_and_ne_limit() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let mut cq = cq8(&mut m);
    put(&cq, 0, &cqe(0x00, 0x0a0abcde, 3, 5));
    put(&cq, 1, &cqe(0x00, 0x0a0abcde, 3, 5));
    let mut wc = [WorkCompletion::default(); 4];
    assert_eq!(cq.poll(&mut FakeQp::default(), &mut wc[..1]), Ok(1));
    assert_eq!(cq.read_dbrec(0), 1);
    assert_eq!(cq.poll(&mut FakeQp::default(), &mut wc), Ok(1));
    assert_eq!((cq.consumer_index(), cq.read_dbrec(0)), (2, 2));
    assert_eq!(cq.poll(&mut FakeQp::default(), &mut []), Ok(0));
}

#[test]
fn unknown_uidx_vector_42_and_resize_vector_43() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let mut cq = cq8(&mut m);
    put(&cq, 0, &cqe(0x00, 0x080abcde, 3, 0x123456));
    let mut q = FakeQp::default();
    let mut wc = [WorkCompletion::default(); 1];
    assert_eq!(
        cq.poll(&mut q, &mut wc),
        Err(PollError::UnknownQp {
            qp: 0x123456,
            completions: 0
        })
    );
    assert_eq!(
        (cq.consumer_index(), cq.read_dbrec(0), q.sq_tail),
        (1, 1, 0)
    );
    put(&cq, 1, &cqe(0x50, 0x080abcde, 3, 5));
    assert_eq!(cq.poll(&mut q, &mut wc), Ok(1));
    assert_eq!(
        wc[0].written,
        WrittenFields::QP_NUM | WrittenFields::WC_FLAGS
    );
    assert_eq!((wc[0].qp_num, q.sq_tail, q.rq_tail), (0x0abcde, 0, 0));
}

#[test]
fn many_laps_owner_parity() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let mut cq = cq8(&mut m);
    let mut q = FakeQp::default();
    let mut wc = [WorkCompletion::default(); 3];
    let mut ci = 0u32;
    for _ in 0..20 {
        for k in 0..3u32 {
            let pos = ci + k;
            let owner = ((pos & 8) != 0) as u8;
            put(
                &cq,
                (pos & 7) as usize,
                &cqe(owner, 0x0a0abcde, pos as u16, 5),
            );
        }
        assert_eq!(cq.poll(&mut q, &mut wc), Ok(3));
        for (k, w) in wc.iter().enumerate() {
            assert_eq!(w.wr_id, 0x5100 + ((ci as u64 + k as u64) & 255));
        }
        ci += 3;
        assert_eq!(cq.read_dbrec(0), ci);
        // next entry is a stale one from the previous lap: not owned
        assert_eq!(cq.poll(&mut q, &mut wc), Ok(0));
    }
}

#[test]
fn arm_writes_record_and_doorbell() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let mut cq = cq8(&mut m);
    cq.set_consumer_index(0x0100_0005);
    cq.event_consumed();
    let mut uar = MemUar::default();
    cq.arm(true, &mut uar);
    // ref §4.5: arm = sn<<28 | 1<<24 | ci&0xffffff; MMIO = arm<<32 | cqn at UAR+0x20.
    let arm = (1u32 << 28) | (1 << 24) | 5;
    assert_eq!(cq.read_dbrec(1), arm);
    assert_eq!(
        &uar.bytes()[0x20..0x28],
        &(((arm as u64) << 32) | 0x33).to_be_bytes()
    );
    assert_eq!(uar.doorbells, 1);
    cq.arm(false, &mut uar);
    assert_eq!(cq.read_dbrec(1), (1 << 28) | 5);
}

#[test]
fn compressed_session_expands_in_poll() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let mut cq = cq8(&mut m);
    // title at position 6: RESP_SEND, format 3, 3 completions from wqe_counter 9.
    let mut t = cqe(0x2c, 0x000abcde, 9, 5);
    t.set_byte_cnt(3);
    put(&cq, 6, &t);
    let mut arr = Cqe64::ZERO;
    for i in 0..3usize {
        let mut mini = MiniCqe::default();
        mini.set_byte_cnt(10 * (i as u32 + 1));
        arr.as_bytes_mut()[i * 8..i * 8 + 8].copy_from_slice(mini.as_bytes());
    }
    put(&cq, 7, &arr);
    cq.set_consumer_index(6);
    let mut q = FakeQp::default();
    let mut wc = [WorkCompletion::default(); 2];
    assert_eq!(cq.poll(&mut q, &mut wc), Ok(2));
    assert_eq!((wc[0].wr_id, wc[0].byte_len), (0x7209, 10));
    assert_eq!((wc[1].wr_id, wc[1].byte_len), (0x720a, 20));
    assert_eq!(cq.poll(&mut q, &mut wc), Ok(1));
    assert_eq!((wc[0].wr_id, wc[0].byte_len), (0x720b, 30));
    assert_eq!((cq.consumer_index(), q.rq_tail), (9, 3));
    // consumed positions were invalidated
    assert_eq!(cq.poll(&mut q, &mut wc), Ok(0));
    // a zero-count title is consumed and reported
    let mut bad = cqe(0x2d, 0x000abcde, 0, 5);
    bad.set_byte_cnt(0);
    put(&cq, 1, &bad);
    assert!(matches!(
        cq.poll(&mut q, &mut wc),
        Err(PollError::BadCompressedSession { .. })
    ));
    assert_eq!(cq.consumer_index(), 10);
}

#[test]
fn cqe128_ring_and_runtime_size() {
    #[repr(C, align(64))]
    struct M {
        ring: [u8; 4 * 128],
        db: [u8; 8],
    }
    let mut m = M {
        ring: [0; 512],
        db: [0; 8],
    };
    let base = NonNull::from(&mut m).cast::<u8>();
    let ring = DmaBuf {
        cpu: base,
        iova: 0,
        len: 512,
    };
    let db = DmaBuf {
        // SAFETY: inside `m`.
        cpu: unsafe { base.add(512) },
        iova: 0,
        len: 8,
    };
    // SAFETY: `m` outlives `cq` and is only accessed through it.
    let mut cq =
        unsafe { DynCompletionQueue::with_entries(4, ring, db, 1, CqeSize::B128, 1) }.unwrap();
    cq.init_ring();
    let mut c = cqe(0x28, 0x000abcde, 1, 5);
    c.set_byte_cnt(5);
    put(&cq, 0, &c);
    // SAFETY: first half of entry 0.
    unsafe { core::ptr::copy_nonoverlapping(b"hello".as_ptr(), base.as_ptr(), 5) };
    let mut q = FakeQp::default();
    let mut wc = [WorkCompletion::default(); 2];
    assert_eq!(cq.poll(&mut q, &mut wc), Ok(1));
    assert_eq!(q.scattered, b"hello");
    assert_eq!(wc[0].wr_id, 0x7201);
    // SAFETY: the dbrec in this mem
    assert!(unsafe { DynCompletionQueue::with_entries(6, ring, db, 1, CqeSize::B128, 1) }.is_err());
    // SAFETY: as above
    assert!(unsafe { DynCompletionQueue::with_entries(8, ring, db, 1, CqeSize::B128, 1) }.is_err());
}

/// Records what it was asked to complete; knows user indexes 1 and 2.
#[derive(Default)]
struct Recorder {
    seen: Vec<(u32, u16)>,
}

impl WrResolver for Recorder {
    fn send_done(&mut self, qp: u32, wqe_counter: u16) -> Result<SendDone, CompletionReject> {
        if qp != 1 && qp != 2 {
            return Err(CompletionReject::UnknownQp);
        }
        self.seen.push((qp, wqe_counter));
        Ok(SendDone {
            wr_id: ((qp as u64) << 16) | wqe_counter as u64,
            wr_data: WcOpcode::Send,
        })
    }
    fn recv_done(&mut self, _: u32, _: u16) -> Result<RecvDone, CompletionReject> {
        Err(CompletionReject::NoReceiveQueue)
    }
    fn scatter_to_send(&mut self, _: u32, _: u16, _: &[u8]) -> bool {
        false
    }
    fn scatter_to_recv(&mut self, _: u32, _: u16, _: &[u8]) -> bool {
        false
    }
}

#[test]
fn clean_compacts_across_the_wrap_with_128_byte_cqes() {
    #[repr(C, align(64))]
    struct M {
        ring: [u8; 4 * 128],
        db: [u8; 8],
    }
    let mut m = M {
        ring: [0; 512],
        db: [0; 8],
    };
    let base = NonNull::from(&mut m).cast::<u8>();
    let ring = DmaBuf {
        cpu: base,
        iova: 0,
        len: 512,
    };
    let db = DmaBuf {
        // SAFETY: inside `m`.
        cpu: unsafe { base.add(512) },
        iova: 0,
        len: 8,
    };
    // SAFETY: `m` outlives `cq` and is only accessed through it.
    let mut cq =
        unsafe { DynCompletionQueue::with_entries(4, ring, db, 1, CqeSize::B128, 1) }.unwrap();
    cq.init_ring();
    // Consumer at 2 (lap 0): entries at positions 2, 3 (owner 0) and 4
    // (slot 0, lap 1, owner 1): uidx 2, 1, 2; position 5 is device-owned.
    cq.set_consumer_index(2);
    put(&cq, 2, &cqe(0x00, 0x0a00_0002, 7, 2));
    put(&cq, 3, &cqe(0x00, 0x0a00_0001, 8, 1));
    put(&cq, 0, &cqe(0x01, 0x0a00_0002, 9, 2));
    let mut dropped = Vec::new();
    assert_eq!(cq.clean_with(2, |c| dropped.push(c.wqe_counter())), 2);
    // Newest first, as the backward sweep meets them.
    assert_eq!(dropped, [9, 7]);
    // One survivor (uidx 1) moved from position 3 to position 4, slot 0,
    // where it carries lap 1's owner bit; the consumer index skipped two.
    assert_eq!((cq.consumer_index(), cq.read_dbrec(0)), (4, 4));
    let mut r = Recorder::default();
    let mut wc = [WorkCompletion::default(); 4];
    assert_eq!(cq.poll(&mut r, &mut wc), Ok(1));
    assert_eq!(r.seen, [(1, 8)]);
    assert_eq!(wc[0].wr_id, (1 << 16) | 8);
    assert_eq!(cq.consumer_index(), 5);
    // Nothing else is owned: the freed and the moved-from slots do not
    // come back as completions.
    assert_eq!(cq.poll(&mut r, &mut wc), Ok(0));
    // Nothing to clean: no change.
    assert_eq!(cq.clean(1), 0);
    assert_eq!(cq.consumer_index(), 5);
}

#[test]
fn misaligned_ring_is_refused() {
    let mut m = Mem {
        ring: [0; 512],
        dbrec: [0; 8],
    };
    let base = NonNull::from(&mut m).cast::<u8>();
    let ring = DmaBuf {
        // SAFETY: inside `m`.
        cpu: unsafe { base.add(4) },
        iova: 0,
        len: 256,
    };
    let db = DmaBuf {
        // SAFETY: inside `m`.
        cpu: unsafe { base.add(512) },
        iova: 0,
        len: 8,
    };
    // SAFETY: refused before any access.
    let e = unsafe { CompletionQueue::<4>::new(ring, db, 1, CqeSize::B64, 1) }.unwrap_err();
    assert!(matches!(e, CqError::Misaligned { .. }));
}
