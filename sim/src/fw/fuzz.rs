//! Fuzz body `cmd_outbox`: arbitrary command outputs, delivery statuses,
//! mailbox chains and EQEs written by a hostile "device" must never panic
//! the core's command layer, bring-up, object code or teardown ([ref §7](bareverbs::reference)).
//!
//! Input byte 0 selects the mode: odd → feed the bytes straight to every
//! output parser; even → run [`bareverbs::device::Device::bring_up`] and an
//! object life cycle against [`FuzzBar`], whose doorbell answers each
//! command with bytes taken from the input.

use crate::dma::HeapDma;
use crate::fw::SharedDma;
use bareverbs::cmd::bits::{get32, get64};
use bareverbs::cmd::caps::HcaCaps;
use bareverbs::cmd::eq::{Eqe, ASYNC_EQ_ENTRIES, EQE_BYTES};
use bareverbs::cmd::initseg::{self, InitSeg};
use bareverbs::cmd::layout::{cmd_in, eqe};
use bareverbs::cmd::ops;
use bareverbs::cmd::queue::{
    layout, mailbox, INLINE_BYTES, LAYOUT_BYTES, MAILBOX_BYTES, MAILBOX_DATA, MAILBOX_STRIDE,
    MAX_BLOCKS,
};
use bareverbs::cmd::{op, Bar0, Clock};
use bareverbs::cqe::CqeSize;
use bareverbs::device::{Device, DeviceConfig, Init2Rtr, QpSpec, Rst2Init, Rtr2Rts, UarMap};
use bareverbs::platform::MemUar;
use bareverbs::qp::QpType;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// The fuzz BAR's command queue: 32 slots (`log_cmdq_size`) of 64-byte
/// entries (`log_cmdq_stride`).
const LOG_CMDQ_SIZE: u8 = 5;
/// See [`LOG_CMDQ_SIZE`].
const LOG_CMDQ_STRIDE: u8 = 6;

struct Feed {
    data: Vec<u8>,
    pos: usize,
}

impl Feed {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    fn fill(&mut self, out: &mut [u8]) {
        for b in out {
            *b = self.byte();
        }
    }
}

/// A BAR0 whose command doorbell answers with fuzzer bytes.
pub struct FuzzBar {
    dma: Arc<HeapDma>,
    feed: Rc<RefCell<Feed>>,
    cmdq_h: u32,
    cmdq_l: u32,
    eq_ring: Option<(u64, u32)>,
}

/// The command-queue address registers and the EQ ring (not the feed).
impl std::fmt::Debug for FuzzBar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FuzzBar")
            .field("cmdq_h", &self.cmdq_h)
            .field("cmdq_l", &self.cmdq_l)
            .field("eq_ring", &self.eq_ring)
            .finish_non_exhaustive()
    }
}

impl FuzzBar {
    fn wr(&self, iova: u64, data: &[u8]) {
        if let Some(p) = self.dma.translate(iova, data.len()) {
            // SAFETY: translate checked the range lies in a live allocation.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p.as_ptr(), data.len()) };
        }
    }
    fn rd(&self, iova: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        if let Some(p) = self.dma.translate(iova, len) {
            // SAFETY: as in `wr`.
            unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), v.as_mut_ptr(), len) };
        }
        v
    }

    fn answer(&mut self, slot: u32) {
        let base = (((self.cmdq_h as u64) << 32) | self.cmdq_l as u64)
            + ((slot as u64) << LOG_CMDQ_STRIDE);
        let e = self.rd(base, LAYOUT_BYTES);
        let mut feed = self.feed.borrow_mut();
        let c = feed.byte();
        if c & 0x80 != 0 {
            return; // never completes
        }
        let opcode = cmd_in::OPCODE.get(&e, layout::IN) as u16;
        if opcode == op::CREATE_EQ {
            let blk = self.rd(get64(&e, layout::IN_PTR), MAILBOX_BYTES);
            self.eq_ring = Some((get64(&blk, ops::PAS_OFFSET - INLINE_BYTES), 0));
        }
        let mut head = [0u8; 16];
        if c & 0x40 != 0 {
            feed.fill(&mut head);
        }
        let outlen = get32(&e, layout::OUTLEN) as usize;
        let out_ptr = get64(&e, layout::OUT_PTR);
        if c & 0x20 != 0 && outlen > 16 {
            let blocks = (outlen - 16).div_ceil(MAILBOX_DATA).min(MAX_BLOCKS);
            for i in 0..blocks {
                let mut d = [0u8; MAILBOX_DATA];
                feed.fill(&mut d);
                self.wr(out_ptr + (i * MAILBOX_STRIDE) as u64, &d);
            }
        }
        if c & 0x10 != 0 {
            let k = (feed.byte() as usize) % MAX_BLOCKS;
            let mut tail = [0u8; 16];
            feed.fill(&mut tail);
            self.wr(
                out_ptr + (k * MAILBOX_STRIDE + mailbox::NEXT) as u64,
                &tail[..12],
            );
        }
        if c & 0x04 != 0 {
            if let Some((ring, pi)) = self.eq_ring {
                let mut e = [0u8; EQE_BYTES];
                feed.fill(&mut e);
                let nent = ASYNC_EQ_ENTRIES;
                e[eqe::OWNER] = ((pi & nent) != 0) as u8;
                self.wr(ring + ((pi % nent) as u64) * EQE_BYTES as u64, &e);
                self.eq_ring = Some((ring, pi + 1));
            }
        }
        let status = if c & 0x08 != 0 { feed.byte() & !1 } else { 0 };
        drop(feed);
        self.wr(base + layout::OUT as u64, &head);
        self.wr(base + layout::STATUS_OWN as u64, &[status]);
    }
}

// SAFETY: registers are plain fields; out-of-range offsets read 0.
unsafe impl Bar0 for FuzzBar {
    fn read32(&self, off: usize) -> u32 {
        match off {
            // Firmware 16.35.2000, command interface 5, a 32-slot queue of
            // 64-byte entries.
            initseg::FW_REV => initseg::fw_rev_word(16, 35),
            initseg::CMDIF_REV_FW_SUB => initseg::cmdif_rev_fw_sub_word(initseg::CMDIF_REV, 2000),
            initseg::CMDQ_ADDR_L_SZ => {
                initseg::cmdq_addr_l_sz_word(self.cmdq_l, 0, LOG_CMDQ_SIZE, LOG_CMDQ_STRIDE)
            }
            initseg::HEALTH_COUNTER => self.feed.borrow().pos as u32,
            _ => 0,
        }
    }
    fn write32(&mut self, off: usize, v: u32) {
        match off {
            initseg::CMDQ_ADDR_H => self.cmdq_h = v,
            initseg::CMDQ_ADDR_L_SZ => self.cmdq_l = v & initseg::CMDQ_ADDR_L_MASK,
            initseg::CMD_DBELL => {
                for slot in 0..32 {
                    if v & (1 << slot) != 0 {
                        self.answer(slot);
                    }
                }
            }
            _ => {}
        }
    }
}

impl UarMap for FuzzBar {
    type Uar = MemUar;
    fn map_uar(&mut self, _index: u32) -> Option<MemUar> {
        Some(MemUar::default())
    }
}

/// A clock that advances 1 µs per delay.
#[derive(Default)]
struct TickClock(u64);

impl Clock for TickClock {
    fn now_us(&self) -> u64 {
        self.0
    }
    fn delay_us(&mut self, us: u32) {
        self.0 += us as u64;
    }
}

fn parsers(data: &[u8]) {
    let _ = HcaCaps::parse(data).device_caps(4096, 64);
    let _ = HcaCaps::parse(data).max_sge();
    let _ = Eqe::parse(data);
    let _ = ops::parse_query_issi(data);
    let _ = ops::choose_issi(bareverbs::cmd::bits::get32(data, 1));
    let _ = ops::parse_query_pages(data);
    let _ = ops::parse_manage_pages(data);
    let _ = ops::manage_pages_entry(data, data.len());
    let _ = ops::parse_query_qp(data);
    let _ = ops::parse_create_eq(data);
    let _ = ops::parse_obj_id(data);
    let _ = ops::parse_teardown_hca(data);
    let _ = ops::parse_query_vport_state(data);
    let _ = bareverbs::cmd::CmdStatus::from_u8(data.first().copied().unwrap_or(0));
    let _ = bareverbs::cmd::DeliveryStatus::from_u8(data.get(1).copied().unwrap_or(0) >> 1);
    for i in 0..data.len().min(64) {
        let _ = bareverbs::cmd::bits::get_bits(data, i, i, data[i] as u32 % 40, i as u32 % 33);
    }
}

/// The fuzz body (see the module docs).
pub fn cmd_outbox(data: &[u8]) {
    if data.first().is_some_and(|b| b & 1 == 1) {
        parsers(&data[1..]);
        return;
    }
    let dma = Arc::new(HeapDma::new());
    let feed = Rc::new(RefCell::new(Feed {
        data: data.get(1..).unwrap_or(&[]).to_vec(),
        pos: 0,
    }));
    let bar = FuzzBar {
        dma: dma.clone(),
        feed,
        cmdq_h: 0,
        cmdq_l: 0,
        eq_ring: None,
    };
    let _ = InitSeg(&bar).validate();
    let cfg = DeviceConfig {
        init_timeout_us: 10,
        cmd_timeout_us: 5,
        max_fw_pages: 256,
        ..DeviceConfig::default()
    };
    let Ok(mut d) = Device::bring_up(bar, TickClock::default(), SharedDma(dma), cfg) else {
        return;
    };
    let _ = d.devinfo();
    let pd = d.alloc_pd();
    let cq = d.create_cq(64, CqeSize::B64);
    if let (Ok(pd), Ok(cq)) = (pd, cq.as_ref()) {
        let spec = QpSpec {
            qp_type: QpType::Rc,
            pd,
            send_cqn: cq.cqn(),
            recv_cqn: cq.cqn(),
            log_sq_size: 4,
            log_rq_size: 4,
            rq_wqe_shift: 5,
            srqn: None,
            user_index: 0,
            max_send_wr: 16,
            max_recv_wr: 16,
        };
        if let Ok(mut qp) = d.create_qp(spec) {
            let _ = d.rst2init(
                &mut qp,
                &Rst2Init {
                    port: 1,
                    ..Default::default()
                },
            );
            let _ = d.init2rtr(
                &mut qp,
                &Init2Rtr {
                    mtu: 3,
                    ..Default::default()
                },
            );
            let _ = d.rtr2rts(&mut qp, &Rtr2Rts::default());
            let _ = d.query_qp(&mut qp);
            let _ = d.qp_to_err(&mut qp);
            let _ = d.destroy_qp(qp);
        }
    }
    let _ = d.serve_events();
    let _ = d.teardown();
}
