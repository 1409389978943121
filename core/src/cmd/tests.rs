//! Unit tests of the command layer. Expected byte positions are taken from
//! the [ref §7](crate::reference) tables (byte offsets), independently of the dw/bit helpers.

use super::bits::*;
use super::caps::HcaCaps;
use super::eq::{eqe_valid, Eqe};
use super::initseg::{CmdqGeometry, CMDQ_ADDR_H, CMDQ_ADDR_L_SZ, CMD_DBELL};
use super::ops::*;
use super::queue::*;
use super::*;
use crate::mr::Access;
use crate::platform::{DmaAllocator, DmaBuf};
use crate::qp::ServiceType;
use core::cell::RefCell;
use core::ptr::NonNull;

/// Test DMA memory: zeroed `u64` buffers (over-allocated so each block can
/// start at the requested alignment), IOVA = CPU address. `free` drops
/// the block, so the table shows what is still allocated.
struct TestDma(RefCell<Vec<(usize, Vec<u64>)>>);
// SAFETY: every block is fresh zeroed memory of the requested length and
// alignment, owned by the allocator and never handed out twice.
unsafe impl DmaAllocator for TestDma {
    fn alloc(&self, len: usize, align: usize) -> Option<DmaBuf> {
        let align = align.max(4096);
        let mut buf = vec![0u64; (len.max(1) + align).div_ceil(8)];
        let base = buf.as_mut_ptr().cast::<u8>();
        let p = base.wrapping_add(base.align_offset(align));
        self.0.borrow_mut().push((p as usize, buf));
        Some(DmaBuf {
            cpu: NonNull::new(p)?,
            iova: p as u64,
            len,
        })
    }
    unsafe fn free(&self, buf: DmaBuf) {
        let mut v = self.0.borrow_mut();
        if let Some(i) = v.iter().position(|(p, _)| *p == buf.cpu.as_ptr() as usize) {
            v.swap_remove(i);
        }
    }
}

#[derive(Default)]
struct RecBar {
    writes: Vec<(usize, u32)>,
}
// SAFETY: records writes, reads return 0.
unsafe impl Bar0 for RecBar {
    fn read32(&self, _off: usize) -> u32 {
        0
    }
    fn write32(&mut self, off: usize, v: u32) {
        self.writes.push((off, v));
    }
}

fn peek(buf: &DmaBuf, off: usize, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    // SAFETY: test-owned buffer.
    unsafe { dma_read(buf, off, &mut v) };
    v
}

#[test]
fn mailbox_block_count() {
    // ref §7.4: ceil((len − 16) / 512).
    assert_eq!(blocks_for(16), 0);
    assert_eq!(blocks_for(17), 1);
    assert_eq!(blocks_for(16 + 512), 1);
    assert_eq!(blocks_for(16 + 513), 2);
    assert_eq!(blocks_for(0x1010), 8);
}

#[test]
fn post_writes_the_entry_and_rings_the_slot_bit() {
    let dma = TestDma(RefCell::new(Vec::new()));
    let mut bar = RecBar::default();
    let g = CmdqGeometry {
        log_sz: 5,
        log_stride: 6,
    };
    let mut q = CmdQueue::new(&dma, &mut bar, g).unwrap();
    let page = q.page();
    assert_eq!(bar.writes[0], (CMDQ_ADDR_H, (page.iova >> 32) as u32));
    assert_eq!(bar.writes[1], (CMDQ_ADDR_L_SZ, page.iova as u32));
    let mut input = [0u8; 600];
    let r = manage_pages_give(&mut input, 0, &[0x1000, 0x2000]);
    assert_eq!(r.in_len, 16 + 16);
    q.post(&mut bar, SlotKind::Pages, &input[..r.in_len], 0x40)
        .unwrap();
    // Page slot = last slot (31), doorbell bit 31 (ref §7.2, §7.3).
    assert_eq!(q.slot_index(SlotKind::Pages), 31);
    assert_eq!(*bar.writes.last().unwrap(), (CMD_DBELL, 1 << 31));
    let e = peek(&page, 31 * 64, 64);
    assert_eq!(e[0], 7);
    assert_eq!(&e[4..8], &32u32.to_be_bytes());
    assert_eq!(&e[0x10..0x12], &0x108u16.to_be_bytes());
    assert_eq!(&e[0x38..0x3c], &0x40u32.to_be_bytes());
    assert_eq!(e[0x3f], 1, "owned by hardware");
    assert!(!q.done(SlotKind::Pages));
    // Input mailbox: block 0 holds input bytes 16.. (the two page addresses).
    let in_ptr = get64(&e, 0x08);
    let out_ptr = get64(&e, 0x30);
    assert_ne!(in_ptr, 0);
    assert_ne!(out_ptr, 0);
    let mb = DmaBuf {
        cpu: NonNull::new(in_ptr as *mut u8).unwrap(),
        iova: in_ptr,
        len: 576,
    };
    let blk = peek(&mb, 0, 576);
    assert_eq!(get64(&blk, 0), 0x1000);
    assert_eq!(get64(&blk, 8), 0x2000);
    assert_eq!(get32(&blk, 0x238), 0);
    // Device completes: status OK, output header + one mailbox block.
    let ob = DmaBuf {
        cpu: NonNull::new(out_ptr as *mut u8).unwrap(),
        iova: out_ptr,
        len: 576,
    };
    let ent = DmaBuf {
        cpu: NonNull::new((page.iova + 31 * 64) as *mut u8).unwrap(),
        iova: page.iova + 31 * 64,
        len: 64,
    };
    // SAFETY: test-owned buffers.
    unsafe {
        dma_write(
            &ent,
            0x20,
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0],
        );
        dma_write(&ob, 0, &[0xaa; 48]);
        dma_store8(&ent, 0x3f, 0);
    }
    assert!(q.done(SlotKind::Pages));
    let mut out = [0u8; 0x40];
    assert_eq!(q.complete(SlotKind::Pages, &mut out).unwrap(), 0x40);
    assert_eq!(out[11], 2);
    assert_eq!(&out[16..64], &[0xaa; 48]);
    // Failed status with syndrome → typed error.
    q.post(&mut bar, SlotKind::Regular, &input[..16], 16)
        .unwrap();
    let ent0 = DmaBuf {
        cpu: page.cpu,
        iova: page.iova,
        len: 64,
    };
    // SAFETY: as above.
    unsafe {
        dma_write(&ent0, 0x20, &[0x03, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef]);
        dma_store8(&ent0, 0x3f, 0);
    }
    let e = q.complete(SlotKind::Regular, &mut out[..16]).unwrap_err();
    assert_eq!(
        e,
        CmdError::Failed {
            opcode: op::MANAGE_PAGES,
            status: CmdStatus::BadParam,
            syndrome: 0xdead_beef
        }
    );
    // Delivery status in status_own bits 7:1.
    q.post(&mut bar, SlotKind::Regular, &input[..16], 16)
        .unwrap();
    // SAFETY: as above.
    unsafe { dma_store8(&ent0, 0x3f, 3 << 1) };
    assert_eq!(
        q.complete(SlotKind::Regular, &mut out[..16]).unwrap_err(),
        CmdError::Delivery {
            opcode: op::MANAGE_PAGES,
            status: DeliveryStatus::BadBlockNumber
        }
    );
    // Too long.
    let big = [0u8; MAX_MSG + 1];
    assert!(matches!(
        q.post(&mut bar, SlotKind::Regular, &big, 16),
        Err(CmdError::TooLong { .. })
    ));
    // SAFETY: the "device" is done with the queue.
    unsafe { q.free(&dma) };
    assert!(dma.0.borrow().is_empty());
}

#[test]
fn status_codes_roundtrip() {
    // ref §7.5 list.
    for c in [
        0x01u8, 0x02, 0x03, 0x04, 0x05, 0x06, 0x08, 0x09, 0x0a, 0x0f, 0x10, 0x30, 0x40, 0x50, 0x51,
    ] {
        let s = CmdStatus::from_u8(c).unwrap();
        assert_eq!(s.code(), c);
        assert_ne!(s.name(), "UNKNOWN");
    }
    assert_eq!(CmdStatus::from_u8(0), None);
    assert_eq!(CmdStatus::from_u8(0x07), Some(CmdStatus::Unknown(7)));
    // ref §7.3 delivery statuses.
    for c in [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 0x10] {
        assert_eq!(DeliveryStatus::from_u8(c).unwrap().code(), c);
    }
    let t = CmdError::Failed {
        opcode: 0x500,
        status: CmdStatus::BadParam,
        syndrome: 0x1234,
    }
    .to_string();
    assert!(t.contains("CREATE_QP") && t.contains("BAD_PARAM_ERR") && t.contains("0x00001234"));
}

#[test]
fn create_qp_layout_matches_facts_byte_offsets() {
    let mut b = [0u8; 0x200];
    let p = QpParams {
        st: ServiceType::Ud,
        pd: 0x0a0b0c,
        uar_page: 0x000123,
        log_sq_size: 7,
        no_sq: false,
        log_rq_size: 5,
        log_rq_stride: 2,
        srqn: Some(0x00beef),
        ts_format: 0,
        cqn_snd: 0x111111,
        cqn_rcv: 0x222222,
        dbr_addr: 0x1122_3344_5566_7788,
        user_index: 0x00abcd,
        pages_iova: 0x10_0000,
        npages: 2,
    };
    let r = create_qp(&mut b, &p);
    assert_eq!((r.opcode, r.in_len), (0x500, 0x110 + 16));
    let q = 0x18; // qpc (ref §7.11)
    assert_eq!(b[q + 0x01], 2, "st");
    assert_eq!(b[q] >> 4, 0, "state");
    assert_eq!((get16(&b, q + 2) >> 11) & 3, 3, "pm_state dw0[12:11]");
    assert_eq!(&b[q + 0x05..q + 0x08], &[0x0a, 0x0b, 0x0c], "pd");
    assert_eq!(&b[q + 0x0d..q + 0x10], &[0x00, 0x01, 0x23], "uar_page");
    assert_eq!(&b[q + 0x11..q + 0x14], &[0x00, 0xab, 0xcd], "user_index");
    assert_eq!(&b[q + 0x7d..q + 0x80], &[0x11; 3], "cqn_snd");
    assert_eq!(&b[q + 0x9d..q + 0xa0], &[0x22; 3], "cqn_rcv");
    assert_eq!(get64(&b, q + 0xa0), 0x1122_3344_5566_7788, "dbr_addr");
    assert_eq!(b[q + 0xac] & 7, 1, "rq_type = SRQ");
    assert_eq!(&b[q + 0xad..q + 0xb0], &[0x00, 0xbe, 0xef], "srqn");
    // dw2: log_rq_size [22:19], log_rq_stride [18:16], log_sq_size [14:11].
    let dw2 = get32(&b, q + 8);
    assert_eq!((dw2 >> 19) & 0xf, 5);
    assert_eq!((dw2 >> 16) & 7, 2);
    assert_eq!((dw2 >> 11) & 0xf, 7);
    assert_eq!(get64(&b, 0x110), 0x10_0000);
    assert_eq!(get64(&b, 0x118), 0x10_1000);
}

#[test]
fn modify_layouts_match_facts() {
    let mut b = [0u8; 0x110];
    let r = init2rtr(
        &mut b,
        0x000777,
        &Init2Rtr {
            mtu: 5,
            log_msg_max: 30,
            remote_qpn: 0x0abcde,
            rq_psn: 0x123456,
            log_rra_max: 3,
            min_rnr_nak: 12,
            path: AddressPath {
                fl: true,
                port: 1,
                rmac: [1, 2, 3, 4, 5, 6],
                udp_sport: 0xc000,
                ..Default::default()
            },
        },
    );
    assert_eq!((r.opcode, r.in_len, r.out_len), (0x503, 0x110, 0x10));
    assert_eq!(&b[0x09..0x0c], &[0x00, 0x07, 0x77], "qpn byte 0x09");
    let q = 0x18;
    assert_eq!(b[q + 0x08] >> 5, 5, "mtu dw2[31:29]");
    assert_eq!(b[q + 0x08] & 0x1f, 30, "log_msg_max");
    assert_eq!(&b[q + 0x15..q + 0x18], &[0x0a, 0xbc, 0xde], "remote_qpn");
    assert_eq!(&b[q + 0x95..q + 0x98], &[0x12, 0x34, 0x56], "next_rcv_psn");
    assert_eq!(b[q + 0x94] & 0x1f, 12, "min_rnr_nak");
    assert_eq!((b[q + 0x91] >> 5) & 7, 3, "log_rra_max dw36[23:21]");
    let a = q + 0x18; // primary address path
    assert_eq!(b[a] >> 7, 1, "fl");
    assert_eq!(b[a + 0x25], 1, "vhca_port_num");
    assert_eq!(&b[a + 0x26..a + 0x2c], &[1, 2, 3, 4, 5, 6], "rmac");
    assert_eq!(get16(&b, a + 0x22), 0xc000, "udp_sport");

    let mut b = [0u8; 0x110];
    rtr2rts(
        &mut b,
        1,
        &Rtr2Rts {
            sq_psn: 0x654321,
            retry_count: 7,
            rnr_retry: 6,
            ack_timeout: 0x8,
            log_sra_max: 2,
        },
    );
    assert_eq!(&b[q + 0x79..q + 0x7c], &[0x65, 0x43, 0x21], "next_send_psn");
    assert_eq!(b[a + 0x08] >> 3, 0x8, "ack_timeout dw2[31:27]");
    let dw28 = get32(&b, q + 0x70);
    assert_eq!((dw28 >> 16) & 7, 7);
    assert_eq!((dw28 >> 13) & 7, 6);
    assert_eq!((dw28 >> 21) & 7, 2);

    let mut b = [0u8; 0x110];
    rst2init(
        &mut b,
        1,
        &Rst2Init {
            port: 2,
            pkey_index: 0x1234,
            remote_read: true,
            remote_write: false,
            remote_atomic: true,
            qkey: 0x11111111,
        },
    );
    assert_eq!(get16(&b, a + 0x02), 0x1234, "pkey_index");
    assert_eq!(b[a + 0x25], 2);
    assert_eq!(get32(&b, q + 0xa8), 0x11111111, "q_key");
    let dw36 = get32(&b, q + 0x90);
    assert_eq!((dw36 >> 13) & 7, 0b101, "rre rwe rae");
}

#[test]
fn cq_eq_mkey_pages_layouts() {
    let mut b = [0u8; 0x200];
    create_cq(
        &mut b,
        &CqParams {
            log_cq_size: 10,
            cqe_sz: 1,
            uar_page: 0x45,
            c_eqn: 9,
            dbr_addr: 0xabcdef000,
            pages_iova: 0x4000,
            npages: 1,
        },
    );
    let c = 0x10;
    assert_eq!(b[c + 0x0c] & 0x1f, 10, "log_cq_size byte 0x0c");
    assert_eq!(&b[c + 0x0d..c + 0x10], &[0, 0, 0x45], "uar_page");
    assert_eq!(b[c + 0x17], 9, "c_eqn");
    assert_eq!((b[c + 1] >> 5) & 7, 1, "cqe_sz dw0[23:21]");
    assert_eq!(get64(&b, c + 0x38), 0xabcdef000, "dbr_addr");
    assert_eq!(get64(&b, 0x110), 0x4000);

    let mut b = [0u8; 0x200];
    create_eq(
        &mut b,
        &EqParams {
            log_eq_size: 8,
            uar_page: 5,
            intr: 3,
            event_bitmask: 1 << 0x0b,
            pages_iova: 0x8000,
            npages: 4,
        },
    );
    assert_eq!(b[0x10 + 0x0c] & 0x1f, 8);
    assert_eq!(b[0x10 + 0x0f], 5);
    assert_eq!(b[0x10 + 0x17], 3, "intr");
    assert_eq!(get64(&b, 0x58), 0x800, "event bitmask word 0");
    assert_eq!(get64(&b, 0x110 + 24), 0x8000 + 3 * 4096);

    let mut b = [0u8; 0x200];
    let r = create_mkey(
        &mut b,
        &MkeyParams {
            pd: 0x33,
            access: Access::LOCAL_WRITE | Access::REMOTE_WRITE,
            start_addr: 0x7000,
            len: 3 * 4096,
            pages_iova: 0x7000,
            npages: 3,
            log_page_size: 12,
            variant: 0x5a,
        },
    );
    assert_eq!(r.in_len, 0x110 + 32, "3 entries and a pad");
    let m = 0x10;
    assert_eq!(b[m + 0x0f], 0x33, "pd");
    assert_eq!(b[m + 0x07], 0x5a, "mkey_7_0");
    assert_eq!(&b[m + 0x04..m + 0x07], &[0xff; 3], "qpn = 0xffffff");
    assert_eq!(b[m + 0x3b] & 0x1f, 12, "absolute log page size");
    assert_eq!(get64(&b, m + 0x10), 0x7000);
    assert_eq!(get64(&b, m + 0x18), 3 * 4096);
    assert_eq!(get32(&b, m + 0x34), 2, "(3+1)/2 octwords");
    assert_eq!(get32(&b, 0x60), 2);
    // access bits dw0: rw 13, lw 11, lr 10; access_mode_1_0 = 1 at [9:8].
    assert_eq!(
        get32(&b, m) & 0x7fff,
        (1 << 13) | (1 << 11) | (1 << 10) | (1 << 8)
    );
    assert_eq!(get64(&b, 0x110), 0x7000 | 3, "MTT entry with read+write");

    // Large pages: a 64 MiB buffer at an offset of 0x1234 into a 2 MiB
    // page needs 33 pages of 2 MiB; the entries step by the page size and
    // log_page_size says 21.
    assert_eq!(
        mkey_pages(0x4020_1234, 64 << 20, 21),
        Some((0x4020_0000, 33))
    );
    assert_eq!(
        mkey_pages(0x4020_0000, 64 << 20, 21),
        Some((0x4020_0000, 32))
    );
    assert_eq!(mkey_pages(0x1fff, 2, 12), Some((0x1000, 2)));
    assert_eq!(mkey_pages(0, 0, 12), Some((0, 0)));
    assert_eq!(mkey_pages(0x1000, 1, 63), Some((0, 1)));
    assert_eq!(mkey_pages(0x1000, 1, 64), None);
    assert_eq!(mkey_pages(0x1000, 1, 255), None);
    let mut b = [0u8; 0x400];
    let r = create_mkey(
        &mut b,
        &MkeyParams {
            pd: 1,
            access: Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE,
            start_addr: 0x4020_1234,
            len: 64 << 20,
            pages_iova: 0x4020_0000,
            npages: 33,
            log_page_size: 21,
            variant: 1,
        },
    );
    assert_eq!(r.in_len, 0x110 + 34 * 8, "33 entries and a pad");
    assert_eq!(b[m + 0x3b] & 0x1f, 21, "absolute log page size");
    assert_eq!(get32(&b, m + 0x34), 17, "(33+1)/2 octwords");
    assert_eq!(get64(&b, 0x110), 0x4020_0000 | 3);
    assert_eq!(get64(&b, 0x110 + 32 * 8), (0x4020_0000 + (32 << 21)) | 3);

    let mut b = [0u8; 0x20];
    let r = manage_pages_take(&mut b, 0, 5);
    assert_eq!(get16(&b, 6), 2, "op_mod TAKE");
    assert_eq!(get32(&b, 0x0c), 5);
    assert_eq!(r.out_len, 16 + 40);
    let mut out = [0u8; 16 + 16];
    put32(&mut out, 8, 9);
    assert!(parse_manage_pages(&out).is_err(), "count beyond the buffer");
    put32(&mut out, 8, 2);
    assert_eq!(parse_manage_pages(&out), Ok(2));

    let mut b = [0u8; 0x20];
    query_hca_cap(&mut b, CapType::Roce, true);
    assert_eq!(get16(&b, 6), (4 << 1) | 1);
    let mut o = [0u8; 16];
    put32(&mut o, 0x0c, (-3i32) as u32);
    put16(&mut o, 0x0a, 7);
    assert_eq!(parse_query_pages(&o), (7, -3));
    assert_eq!(choose_issi(0b11), Some(1));
    assert_eq!(choose_issi(0b01), Some(0));
    assert_eq!(choose_issi(0), Some(0));
    assert_eq!(choose_issi(0b100), None);
}

#[test]
fn caps_parse_matches_facts_byte_offsets() {
    let mut c = [0u8; 256];
    c[0x11] = 15; // log_max_qp_sz
    c[0x13] = 18; // log_max_qp (low 5 bits)
    c[0x10] = 14; // log_max_srq_sz
    c[0x19] = 22; // log_max_cq_sz
    c[0x1b] = 24; // log_max_cq
    c[0x1d] = 24; // log_max_mkey (dw7[21:16] → low 6 bits of byte 0x1d)
    c[0x36] = 1; // port_type = Ethernet (dw13[9:8])
    c[0x37] = 2; // num_ports
    c[0x3f] = 1; // cqe_version
    c[0x48] = 0x80; // uar_4k
    c[0x4c] = 0x80; // bf
    c[0x4d] = 9; // log_bf_reg_size
    c[0x52..0x54].copy_from_slice(&512u16.to_be_bytes());
    c[0x56..0x58].copy_from_slice(&256u16.to_be_bytes());
    c[0x65] = 24; // log_max_pd
    let h = HcaCaps::parse(&c);
    assert_eq!(h.log_max_qp_sz, 15);
    assert_eq!(h.log_max_qp, 18);
    assert_eq!(h.log_max_srq_sz, 14);
    assert_eq!(h.log_max_cq_sz, 22);
    assert_eq!(h.log_max_cq, 24);
    assert_eq!(h.log_max_mkey, 24);
    assert_eq!(h.port_type, 1);
    assert_eq!(h.num_ports, 2);
    assert_eq!(h.cqe_version, 1);
    assert!(h.uar_4k && h.bf);
    assert_eq!(h.log_bf_reg_size, 9);
    assert_eq!((h.max_wqe_sz_sq, h.max_wqe_sz_rq), (512, 256));
    assert_eq!(h.log_max_pd, 24);
    let d = h.device_caps(4096, 64);
    assert_eq!(d.max_send_wqebb, 32768);
    assert_eq!(d.max_cqe, 1 << 22);
    assert_eq!(d.max_srq_recv_wr, 1 << 14);
    assert_eq!(d.bf_reg_size, 512);
    assert_eq!(d.max_sge, 16);
    // write() is the inverse of parse() for every field.
    let mut back = [0u8; 256];
    h.write(&mut back);
    assert_eq!(HcaCaps::parse(&back), h);
    // Nonsense logs saturate instead of overflowing.
    assert_eq!(HcaCaps::pow2(40), u32::MAX);
}

#[test]
fn eqe_owner_and_page_request() {
    // ref §7.9: valid iff (owner & 1) == ((ci & nent) != 0).
    assert!(
        !eqe_valid(1, 0, 256),
        "initial owner 1 is invalid on pass 0"
    );
    assert!(eqe_valid(0, 0, 256));
    assert!(eqe_valid(1, 256, 256));
    assert!(!eqe_valid(0, 300, 256));
    let mut e = [0u8; 64];
    e[1] = 0x0b;
    e[34] = 0x00;
    e[35] = 0x02;
    e[36..40].copy_from_slice(&(-9i32).to_be_bytes());
    assert_eq!(
        Eqe::parse(&e),
        Eqe::PageRequest {
            function_id: 2,
            num_pages: -9
        }
    );
    let mut e = [0u8; 64];
    e[1] = 0x00;
    e[56..60].copy_from_slice(&0xff12_3456u32.to_be_bytes());
    assert_eq!(Eqe::parse(&e), Eqe::Completion { cqn: 0x123456 });
    let mut e = [0u8; 64];
    e[1] = 0x0a;
    e[32..36].copy_from_slice(&0x8000_0001u32.to_be_bytes());
    assert_eq!(Eqe::parse(&e), Eqe::Command { slots: 0x8000_0001 });
    assert!(matches!(Eqe::parse(&[]), Eqe::Completion { cqn: 0 }));
}

/// An EQ ring the device keeps valid: `poll` takes entries from the local
/// volatile copy, `peek_valid` looks without consuming (what bounds
/// `Device::serve_events`), and a device rewriting an entry after it was
/// taken changes nothing already returned.
#[test]
fn eq_poll_copies_and_peek_does_not_consume() {
    use super::eq::EventQueue;
    let dma = TestDma(RefCell::new(Vec::new()));
    let ring = dma.alloc(4 * 64, 4096).unwrap();
    // SAFETY: test-owned ring, no device.
    let mut eq = unsafe { EventQueue::new(ring, 4) }.unwrap();
    assert!(!eq.peek_valid(), "all owner bytes start at 1 (ref §7.9)");
    assert_eq!(eq.poll(), None);
    // The "device" writes a PAGE_REQUEST at entry 0 with owner 0 (pass 0).
    let mut e = [0u8; 64];
    e[1] = 0x0b;
    e[36..40].copy_from_slice(&5i32.to_be_bytes());
    // SAFETY: test-owned ring.
    unsafe { dma_write(&ring, 0, &e) };
    assert!(eq.peek_valid());
    assert!(eq.peek_valid(), "peeking twice consumes nothing");
    assert_eq!(eq.ci(), 0);
    let got = eq.poll();
    assert_eq!(
        got,
        Some(Eqe::PageRequest {
            function_id: 0,
            num_pages: 5
        })
    );
    // Rewriting the consumed entry does not change what was returned.
    // SAFETY: test-owned ring.
    unsafe { dma_write(&ring, 36, &(-1i32).to_be_bytes()) };
    assert_eq!(
        got,
        Some(Eqe::PageRequest {
            function_id: 0,
            num_pages: 5
        })
    );
    assert_eq!(eq.ci(), 1);
    assert!(!eq.peek_valid(), "entry 1 still has owner 1");
    // SAFETY: the EQ was never given to a device.
    unsafe { dma.free(ring) };
}

/// ACCESS_REG PMTU read, byte image computed by hand from the layout
/// (linux `mlx5_ifc.h` access_register_in + pmtu_reg): opcode 0x0805 at
/// bytes 0–1, op_mod 1 (read) at 6–7, register_id 0x5003 at 0x0a–0x0b,
/// argument 0 at 0x0c, local_port `dw0[23:16]` of the register = byte 0x11.
#[test]
fn query_pmtu_builder_bytes() {
    let mut b = [0xa5u8; 0x40];
    let r = query_pmtu(&mut b, 1);
    assert_eq!(
        r,
        Req {
            opcode: 0x805,
            in_len: 0x20,
            out_len: 0x20
        }
    );
    #[rustfmt::skip]
    let want: [u8; 0x20] = [
        0x08, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
        0x00, 0x00, 0x50, 0x03, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];
    assert_eq!(b[..0x20], want);
    assert!(
        b[0x20..].iter().all(|&x| x == 0xa5),
        "beyond in_len untouched"
    );
    // Port 2 changes only byte 0x11.
    let mut b2 = [0u8; 0x20];
    query_pmtu(&mut b2, 2);
    let mut want2 = want;
    want2[0x11] = 0x02;
    assert_eq!(b2, want2);
    // A short buffer does not panic.
    let mut tiny = [0u8; 4];
    query_pmtu(&mut tiny, 1);
    assert_eq!(tiny, [0x08, 0x05, 0, 0]);
}

/// PMTU output parsed from a hand-written image: header (status 0), then
/// local_port 1 (byte 0x11), max_mtu 10000 = 0x2710 (bytes 0x14–0x15),
/// admin_mtu 9022 = 0x233e (0x18–0x19), oper_mtu 1522 = 0x05f2 (0x1c–0x1d).
/// Reserved bits are set to 1 to show the parser masks them out.
#[test]
fn parse_pmtu_reads_the_register_image() {
    #[rustfmt::skip]
    let out: [u8; 0x20] = [
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0xff, 0x01, 0xff, 0xff, 0x27, 0x10, 0xff, 0xff,
        0x23, 0x3e, 0xff, 0xff, 0x05, 0xf2, 0xff, 0xff,
    ];
    assert_eq!(
        parse_pmtu(&out),
        Pmtu {
            local_port: 1,
            max_mtu: 10000,
            admin_mtu: 9022,
            oper_mtu: 1522
        }
    );
    // Truncated outputs read missing fields as 0 instead of panicking.
    assert_eq!(
        parse_pmtu(&out[..0x1c]),
        Pmtu {
            local_port: 1,
            max_mtu: 10000,
            admin_mtu: 9022,
            oper_mtu: 0
        }
    );
    assert_eq!(parse_pmtu(&[]), Pmtu::default());
}

/// IB MTU enum (`ibv_mtu`: 1 = 256 … 5 = 4096) and the IB-port rule: only
/// an exact IB MTU maps; anything else is unknown.
#[test]
fn ib_mtu_table() {
    let table = [(256u32, 1u8), (512, 2), (1024, 3), (2048, 4), (4096, 5)];
    for (bytes, code) in table {
        let m = IbMtu::from_bytes(bytes).unwrap();
        assert_eq!((m.bytes(), m.code()), (bytes, code));
        assert_eq!(IbMtu::from_code(code), Some(m));
        assert_eq!(
            crate::device::port_mtu(crate::device::LinkLayer::InfiniBand, bytes as u16),
            Some(m)
        );
    }
    assert_eq!(IbMtu::ALL.map(IbMtu::bytes), [256, 512, 1024, 2048, 4096]);
    for bytes in [0u32, 1, 255, 257, 1500, 4095, 4097, 8192, 65535] {
        assert_eq!(IbMtu::from_bytes(bytes), None, "{bytes}");
    }
    assert_eq!(IbMtu::from_code(0), None);
    assert_eq!(IbMtu::from_code(6), None);
    assert_eq!(
        crate::device::port_mtu(crate::device::LinkLayer::InfiniBand, 1522),
        None
    );
    assert_eq!(
        crate::device::port_mtu(crate::device::LinkLayer::Other(7), 4096),
        None
    );
}

/// RoCE rule (linux iboe_get_mtu): largest IB MTU ≤ netdev MTU − 96
/// (GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4), capped at
/// 4096; PMTU on Ethernet reports netdev MTU + 22. Expected values worked
/// by hand, including both sides of every boundary (IB MTU + 96).
#[test]
fn roce_mtu_table() {
    assert_eq!(ROCE_HEADERS, 96);
    assert_eq!(ETH_HW_MTU_OVERHEAD, 22);
    // (netdev MTU, expected RoCE MTU in bytes; 0 = none)
    let netdev = [
        (9000u32, 4096u32), // 8904 → 4096
        (4200, 4096),       // 4104 → 4096
        (4192, 4096),       // 4096 exactly
        (4191, 2048),       // 4095
        (2144, 2048),       // 2048 exactly
        (2143, 1024),       // 2047
        (1500, 1024),       // 1404
        (1120, 1024),       // 1024 exactly
        (1119, 512),        // 1023
        (608, 512),         // 512 exactly
        (607, 256),         // 511
        (352, 256),         // 256 exactly
        (351, 0),           // 255
        (96, 0),
        (0, 0),
        (65535, 4096),
    ];
    for (mtu, want) in netdev {
        assert_eq!(roce_mtu(mtu).map_or(0, IbMtu::bytes), want, "netdev {mtu}");
        // The same through the PMTU (hardware) value.
        assert_eq!(
            roce_mtu_of_hw_mtu(mtu + 22).map_or(0, IbMtu::bytes),
            want,
            "hw {}",
            mtu + 22
        );
    }
    // PMTU values as the sim and a real port report them.
    let hw = [
        (1522u16, 1024u32),
        (9022, 4096),
        (4214, 4096),
        (4213, 2048),
        (2166, 2048),
        (2165, 1024),
        (374, 256),
        (373, 0),
        (21, 0),
        (0, 0),
        (u16::MAX, 4096),
    ];
    for (pmtu, want) in hw {
        let got = crate::device::port_mtu(crate::device::LinkLayer::Ethernet, pmtu);
        assert_eq!(got.map_or(0, IbMtu::bytes), want, "pmtu {pmtu}");
    }
    assert_eq!(roce_mtu_of_hw_mtu(1522).map(IbMtu::code), Some(3));
    assert_eq!(roce_mtu_of_hw_mtu(9022).map(IbMtu::code), Some(5));
}

/// MODIFY_NIC_VPORT_CONTEXT roce_en: bytes from linux `mlx5_ifc.h`
/// (modify_nic_vport_context_in: field_select dword at 0x0c with roce_en =
/// bit 1; nic_vport_context at 0x100 with roce_en = bit 0 of its dword 0;
/// input 0x100 + 0x100 bytes).
#[test]
fn modify_nic_vport_roce_bytes() {
    let mut b = [0xffu8; 0x300];
    let r = modify_nic_vport_roce(&mut b, true);
    assert_eq!((r.opcode, r.in_len, r.out_len), (0x755, 0x200, 0x10));
    let mut want = [0u8; 0x200];
    want[0] = 0x07;
    want[1] = 0x55;
    want[0x0f] = 0x02;
    want[0x103] = 0x01;
    assert_eq!(&b[..0x200], &want[..]);
    assert!(b[0x200..].iter().all(|&x| x == 0xff), "nothing past in_len");
    modify_nic_vport_roce(&mut b, false);
    assert_eq!(b[0x103], 0);
    assert_eq!(b[0x0f], 0x02, "the field is still selected");
}

/// nic_vport_context parse: roce_en dw0 bit 0, mtu bits 15:0 at 0x26,
/// permanent MAC at 0xF6..0xFC (offsets from the ifc bit layout).
#[test]
fn parse_nic_vport_context_fields() {
    let mut c = [0u8; 0x100];
    c[3] = 0x07; // roce_en plus the two local-loopback-disable bits
    c[0x26] = 0x05;
    c[0x27] = 0xf2;
    c[0xf6..0xfc].copy_from_slice(&[0x0c, 0x42, 0xa1, 0x00, 0x00, 0x01]);
    let v = parse_nic_vport_context(&c);
    assert!(v.roce_en);
    assert_eq!(v.mtu, 1522);
    assert_eq!(v.permanent_mac, [0x0c, 0x42, 0xa1, 0x00, 0x00, 0x01]);
    c[3] = 0x06;
    assert!(!parse_nic_vport_context(&c).roce_en);
    assert_eq!(parse_nic_vport_context(&c[..4]), NicVportContext::default());
}

/// RoCE caps dword 0 (linux `mlx5_ifc.h` roce_cap: roce_apm bit 31,
/// reserved 30..28, sw_r_roce_src_udp_port 27, fl_rc_qp_when_roce_disabled
/// 26, fl_rc_qp_when_roce_enabled 25): byte 0 bits 3, 2, 1.
#[test]
fn parse_roce_caps_bits() {
    let r = parse_roce_caps(&[0x02, 0, 0, 0]);
    assert!(r.fl_rc_qp_when_roce_enabled && !r.fl_rc_qp_when_roce_disabled);
    assert!(!r.sw_r_roce_src_udp_port);
    let r = parse_roce_caps(&[0x80 | 0x08 | 0x04]);
    assert!(r.sw_r_roce_src_udp_port && r.fl_rc_qp_when_roce_disabled);
    assert!(!r.fl_rc_qp_when_roce_enabled, "roce_apm (bit 31) is not fl");
    assert_eq!(parse_roce_caps(&[]), RoceCaps::default());
}

/// `max_sge` by the mlx5 kernel rule (mlx5_ib_query_device, [ref §3.10](crate::reference)):
/// min(max_wqe_sz_rq / 16, (min(max_wqe_sz_sq, 512) − 16 − 16) / 16),
/// worked by hand for each pair.
#[test]
fn max_sge_is_the_kernel_rule() {
    for (sq, rq, want) in [
        (1024u16, 512u16, 30u32), // min(32, (512 − 32) / 16 = 30)
        (512, 512, 30),           // min(32, 30)
        (512, 256, 16),           // min(16, 30)
        (256, 512, 14),           // min(32, (256 − 32) / 16 = 14)
        (16, 512, 0),             // a descriptor too small for ctrl + raddr
        (0, 0, 0),
    ] {
        let c = HcaCaps {
            max_wqe_sz_sq: sq,
            max_wqe_sz_rq: rq,
            ..HcaCaps::default()
        };
        assert_eq!(c.max_sge(), want, "sq {sq} rq {rq}");
        assert_eq!(c.device_caps(4096, 64).max_sge, want);
    }
    assert_eq!(super::caps::MAX_SGE_RD, 30);
    // The sizing default device (1024/512 descriptors) reports the same.
    let d = crate::sizing::DeviceCaps::DEFAULT;
    let c = HcaCaps {
        max_wqe_sz_sq: d.max_sq_desc_sz as u16,
        max_wqe_sz_rq: d.max_rq_desc_sz as u16,
        ..HcaCaps::default()
    };
    assert_eq!(d.max_sge, c.max_sge());
}

/// QUERY_ADAPTER output: ieee_vendor_id bits 23:0 of the dword at 0x18 of
/// the param block (bit 0xc8 of query_adapter_param_block), PSID 16 bytes
/// at 0xf0, the block at 0x10 of the output (linux mlx5_ifc.h).
#[test]
fn parse_query_adapter_fields() {
    let mut b = [0u8; MAX_MSG];
    let r = query_adapter(&mut b);
    assert_eq!((r.opcode, r.in_len, r.out_len), (0x101, 0x10, 0x110));
    assert_eq!(&b[..2], &[0x01, 0x01]);
    let mut out = [0u8; 0x110];
    out[0x28] = 0xff; // reserved byte above the 24-bit field
    out[0x29..0x2c].copy_from_slice(&[0x00, 0x02, 0xc9]);
    out[0x100..0x10d].copy_from_slice(b"MT_0000000008");
    let a = parse_query_adapter(&out);
    assert_eq!(a.ieee_vendor_id, 0x02c9);
    assert_eq!(a.board_id(), Some("MT_0000000008"));
    // Blank or non-printable PSIDs are unknown, short output zeros.
    out[0x100] = 0x07;
    assert_eq!(parse_query_adapter(&out).board_id(), None);
    assert_eq!(parse_query_adapter(&out[..0x20]), Adapter::default());
    assert_eq!(Adapter::default().board_id(), None);
}

/// nic_vport_context GUIDs: system_image_guid at bit 0x140 (byte 0x28),
/// port_guid 0x30, node_guid 0x38 (linux mlx5_ifc.h).
#[test]
fn parse_nic_vport_context_guids() {
    let mut c = [0u8; 0x100];
    c[0x28..0x30].copy_from_slice(&0x1111_2222_3333_4444u64.to_be_bytes());
    c[0x30..0x38].copy_from_slice(&0x5555_6666_7777_8888u64.to_be_bytes());
    c[0x38..0x40].copy_from_slice(&0x9999_aaaa_bbbb_ccccu64.to_be_bytes());
    let v = parse_nic_vport_context(&c);
    assert_eq!(v.system_image_guid, 0x1111_2222_3333_4444);
    assert_eq!(v.port_guid, 0x5555_6666_7777_8888);
    assert_eq!(v.node_guid, 0x9999_aaaa_bbbb_cccc);
}

/// hca_vport_context fields at their mlx5_ifc.h bit positions: dw8
/// port_physical_state 15:12, port_state 7:4, vport_state 3:0; GUIDs at
/// 0x28/0x30/0x38; dw24 lid 31:16, init_type_reply 11:8, lmc 7:5,
/// subnet_timeout 4:0; dw25 sm_lid 31:16, sm_sl 15:12; dw26 counters.
#[test]
fn parse_hca_vport_context_fields() {
    let mut b = [0u8; MAX_MSG];
    let r = query_hca_vport_context(&mut b, Some(2));
    assert_eq!((r.opcode, r.out_len), (0x762, 0x110));
    assert_eq!(get_bits(&b, 0, 2, 19, 16), 2);
    let _ = query_hca_vport_context(&mut b, None);
    assert_eq!(get32(&b, 0x08), 0);
    let mut c = [0u8; 0x100];
    put32(&mut c, 0x20, (5 << 12) | (4 << 4) | 4);
    c[0x38..0x40].copy_from_slice(&0x0002_c903_0000_0001u64.to_be_bytes());
    put32(&mut c, 0x60, (0x12 << 16) | (3 << 8) | (2 << 5) | 18);
    put32(&mut c, 0x64, (0x1 << 16) | (0xa << 12));
    put32(&mut c, 0x68, (7 << 16) | 9);
    let h = parse_hca_vport_context(&c);
    assert_eq!(
        (h.port_physical_state, h.port_state, h.vport_state),
        (5, 4, 4)
    );
    assert_eq!(h.node_guid, 0x0002_c903_0000_0001);
    assert_eq!(
        (h.lid, h.init_type_reply, h.lmc, h.subnet_timeout),
        (0x12, 3, 2, 18)
    );
    assert_eq!((h.sm_lid, h.sm_sl), (1, 0xa));
    assert_eq!((h.qkey_violation_counter, h.pkey_violation_counter), (7, 9));
    assert_eq!(parse_hca_vport_context(&c[..8]), HcaVportContext::default());
}

/// The word-wide volatile copies move exactly the bytes a byte loop would,
/// for every start alignment and length around the 8-byte boundaries, and
/// touch nothing outside the range.
#[test]
fn volatile_copies_match_a_byte_loop_at_every_alignment() {
    let mut mem = [0u64; 24];
    let base = mem.as_mut_ptr().cast::<u8>();
    let src: Vec<u8> = (0..192u32).map(|i| (i * 29 + 7) as u8).collect();
    for start in 0..16usize {
        // Every length natively; the boundary lengths under miri (slow).
        let lens: Vec<usize> = if cfg!(miri) {
            vec![0, 1, 7, 8, 9, 63, 64, 65, 71, 72, 127, 128, 129, 170]
        } else {
            (0..=170).collect()
        };
        for len in lens {
            // SAFETY: 192-byte local array, accessed only through `base`
            // while these loops run.
            unsafe { core::ptr::write_bytes(base, 0xEE, 192) };
            // SAFETY: start + len <= 185 < 192: inside the array.
            unsafe { store_volatile(base.add(start), &src[..len]) };
            for i in 0..192 {
                let want = if i >= start && i < start + len {
                    src[i - start]
                } else {
                    0xEE
                };
                // SAFETY: i < 192.
                let got = unsafe { core::ptr::read_volatile(base.add(i)) };
                assert_eq!(got, want, "store start {start} len {len} byte {i}");
            }
            let mut out = vec![0x11u8; len];
            // SAFETY: as above.
            unsafe { load_volatile(base.add(start), &mut out) };
            assert_eq!(out, src[..len], "load start {start} len {len}");
        }
    }
    let buf = DmaBuf {
        cpu: NonNull::new(base).unwrap(),
        iova: 0x1000,
        len: 192,
    };
    // SAFETY: test-owned memory; zeroing is clamped to the buffer.
    unsafe {
        core::ptr::write_bytes(base, 0xEE, 192);
        dma_zero(&buf, 3, 400);
    }
    // SAFETY: in the array.
    let b = |i: usize| unsafe { core::ptr::read_volatile(base.add(i)) };
    assert_eq!((b(0), b(1), b(2)), (0xEE, 0xEE, 0xEE));
    assert!((3..192).all(|i| b(i) == 0));
}
