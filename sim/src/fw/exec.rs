//! Command execution: reads a command queue entry and its mailbox chains
//! from DMA memory, runs the command, writes the output back
//! ([ref §7.3–§7.12](bareverbs::reference)).

use super::objects::{CqObj, EqObj, MkeyObj, ObjectEvent, QpObj, SrqObj};
use super::{HcaState, SimFirmware, BAR0_SIZE, FIRST_UAR};
use bareverbs::cmd::bits::{get16, get32, get64, get_bits, put16, put32, put64, set_bits};
use bareverbs::cmd::caps::{self, HcaCaps};
use bareverbs::cmd::op;
use bareverbs::cmd::ops::{self, HwQpState, CQC, EQC, MKC, PAS_OFFSET, QPC, QPC_PATH, SRQC};
use bareverbs::cmd::queue::{layout, mailbox, MAILBOX_BYTES, MAILBOX_DATA};
use bareverbs::cmd::CmdStatus;
use bareverbs::wqe::MkeyAccess;

/// Largest message the model accepts (1 MiB); longer is a length error.
const MAX_FW_MSG: usize = 1 << 20;

/// Simulator syndromes: `0x5100_0000 | opcode << 8 | reason`. Real
/// syndromes are firmware-specific; these only need to be distinct and
/// stable so tests and logs can tell causes apart.
pub mod reason {
    /// Unknown opcode.
    pub const UNKNOWN_OPCODE: u8 = 0x01;
    /// HCA in the wrong life-cycle state.
    pub const HCA_STATE: u8 = 0x02;
    /// Input too short.
    pub const INPUT_LEN: u8 = 0x03;
    /// Output too short.
    pub const OUTPUT_LEN: u8 = 0x04;
    /// A field value is invalid.
    pub const FIELD: u8 = 0x05;
    /// An address does not translate (not DMA-mapped).
    pub const ADDRESS: u8 = 0x06;
    /// Unknown object number.
    pub const UNKNOWN_OBJECT: u8 = 0x07;
    /// Object still referenced.
    pub const IN_USE: u8 = 0x08;
    /// Object count limit.
    pub const LIMIT: u8 = 0x09;
    /// Not enough firmware pages.
    pub const PAGES: u8 = 0x0a;
    /// QP transition not legal from the current state.
    pub const QP_STATE: u8 = 0x0b;
    /// A size exceeds a capability.
    pub const SIZE: u8 = 0x0c;
    /// Driver refused pages (MANAGE_PAGES CANT_GIVE).
    pub const CANT_GIVE: u8 = 0x0d;
    /// The connected data path cannot execute this object (see
    /// [`super::SimFirmware::refusals`] for its reason).
    pub const DATA_PATH: u8 = 0x0e;
    /// A QP was attached to an Ethernet port whose vport has RoCE disabled
    /// (the model's choice of status; real firmware refuses such QPs).
    pub const ROCE_DISABLED: u8 = 0x0f;
}

/// The syndrome the model reports for `opcode` failing for `reason`.
pub fn syndrome(opcode: u16, reason: u8) -> u32 {
    0x5100_0000 | ((opcode as u32) << 8) | reason as u32
}

enum Outcome {
    Ok(Vec<u8>),
    Fail(CmdStatus, u8),
    NeedPages(u32),
}

use Outcome::{Fail, NeedPages};

fn ok(len: usize) -> Vec<u8> {
    vec![0u8; len.max(16)]
}

impl SimFirmware {
    fn rd(&self, iova: u64, len: usize) -> Option<Vec<u8>> {
        let p = self.dma.translate(iova, len)?;
        let mut v = vec![0u8; len];
        // SAFETY: translate guarantees [iova, iova+len) is inside one live
        // allocation; `v` is separate host memory.
        unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), v.as_mut_ptr(), len) };
        Some(v)
    }
    fn wr(&self, iova: u64, data: &[u8]) -> bool {
        match self.dma.translate(iova, data.len()) {
            Some(p) => {
                // SAFETY: as in `rd`, writing.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p.as_ptr(), data.len()) };
                true
            }
            None => false,
        }
    }
    fn mapped(&self, iova: u64, len: usize) -> bool {
        self.dma.translate(iova, len).is_some()
    }

    /// Device address of command entry `slot`; `None` when the driver's
    /// queue address plus the slot offset does not fit in 64 bits (such a
    /// queue is not mapped).
    fn entry_addr(&self, slot: u8) -> Option<u64> {
        (((self.cmdq_h as u64) << 32) | self.cmdq_l as u64)
            .checked_add((slot as u64) << self.cfg.log_cmdq_stride)
    }

    pub(crate) fn doorbell(&mut self, slot: u8) {
        if self.faults.hang_next > 0 {
            self.faults.hang_next -= 1;
            self.hung.push(slot);
            return;
        }
        self.run_slot(slot);
    }

    fn finish(&mut self, slot: u8, delivery: u8) {
        if let Some(a) = self
            .entry_addr(slot)
            .and_then(|b| b.checked_add(layout::STATUS_OWN as u64))
        {
            self.wr(a, &[delivery << 1]);
        }
    }

    /// Reads a mailbox chain of `len` data bytes starting at `ptr`.
    fn read_chain(&self, mut ptr: u64, len: usize, out: &mut Vec<u8>) -> Result<(), u8> {
        let mut i = 0u32;
        let mut left = len;
        while left > 0 {
            if ptr & 0x3ff != 0 {
                return Err(5);
            }
            let b = self.rd(ptr, MAILBOX_BYTES).ok_or(0x10u8)?;
            if get32(&b, mailbox::BLOCK_NUM) != i {
                return Err(3);
            }
            let take = left.min(MAILBOX_DATA);
            out.extend_from_slice(&b[..take]);
            left -= take;
            ptr = get64(&b, mailbox::NEXT);
            i += 1;
        }
        Ok(())
    }

    fn write_chain(&mut self, mut ptr: u64, data: &[u8]) -> Result<(), u8> {
        for (i, chunk) in data.chunks(MAILBOX_DATA).enumerate() {
            let i = i as u32;
            if ptr & 0x3ff != 0 {
                return Err(4);
            }
            let b = self.rd(ptr, MAILBOX_BYTES).ok_or(0x10u8)?;
            if get32(&b, mailbox::BLOCK_NUM) != i {
                return Err(3);
            }
            self.wr(ptr, chunk);
            if std::mem::take(&mut self.faults.corrupt_out_block_num) {
                self.wr(ptr + mailbox::BLOCK_NUM as u64, &(i + 7).to_be_bytes());
            }
            ptr = get64(&b, mailbox::NEXT);
        }
        Ok(())
    }

    /// Executes the entry in `slot` (unless it must wait for pages).
    pub(crate) fn run_slot(&mut self, slot: u8) {
        let Some((base, e)) = self
            .entry_addr(slot)
            .and_then(|base| Some((base, self.rd(base, 64)?)))
        else {
            return; // queue not mapped: nothing a device could do
        };
        if e[layout::TYPE] != 7 {
            return self.finish(slot, 0x10);
        }
        let inlen = get32(&e, layout::INLEN) as usize;
        let outlen = get32(&e, layout::OUTLEN) as usize;
        if !(16..=MAX_FW_MSG).contains(&inlen) {
            return self.finish(slot, 7);
        }
        if !(16..=MAX_FW_MSG).contains(&outlen) {
            return self.finish(slot, 8);
        }
        let mut input = e[layout::IN..layout::IN + 16].to_vec();
        if inlen > 16 {
            if let Err(d) = self.read_chain(get64(&e, layout::IN_PTR), inlen - 16, &mut input) {
                return self.finish(slot, d);
            }
        }
        if let Some(d) = self.faults.delivery_next.take() {
            return self.finish(slot, d);
        }
        let opcode = get16(&input, 0);
        let outcome = if let Some((s, syn)) = self.faults.fail_next.take() {
            let mut o = ok(16);
            o[0] = s;
            put32(&mut o, 4, syn);
            Outcome::Ok(o)
        } else {
            self.execute(&input, outlen)
        };
        let out = match outcome {
            Outcome::Ok(mut o) => {
                let creates = matches!(
                    opcode,
                    op::ALLOC_PD
                        | op::ALLOC_UAR
                        | op::CREATE_MKEY
                        | op::CREATE_CQ
                        | op::CREATE_QP
                        | op::CREATE_SRQ
                );
                if creates && o[0] == 0 {
                    if let Some(n) = self.faults.object_number_next.take() {
                        put32(&mut o, 8, n);
                    }
                }
                o
            }
            Fail(s, r) => {
                let mut o = ok(16);
                o[0] = s.code();
                put32(&mut o, 4, syndrome(opcode, r));
                o
            }
            NeedPages(n) => {
                if self.request_pages(n as i32) {
                    self.pending.push(slot);
                    return;
                }
                let mut o = ok(16);
                o[0] = CmdStatus::NoResources.code();
                put32(&mut o, 4, syndrome(opcode, reason::PAGES));
                o
            }
        };
        self.log.push((opcode, out[0]));
        self.slot_log.push((slot, opcode));
        let n = out.len().min(outlen);
        self.wr(base + layout::OUT as u64, &out[..n.min(16)]);
        if n > 16 {
            if let Err(d) = self.write_chain(get64(&e, layout::OUT_PTR), &out[16..n]) {
                return self.finish(slot, d);
            }
        }
        self.finish(slot, 0);
        // Pages arrived: retry commands waiting for them.
        if opcode == op::MANAGE_PAGES && out[0] == 0 && !self.pending.is_empty() {
            for s in std::mem::take(&mut self.pending) {
                self.run_slot(s);
            }
        }
    }

    /// Posts a PAGE_REQUEST EQE ([ref §7.7](bareverbs::reference)) on an EQ subscribed to it.
    fn request_pages(&mut self, num_pages: i32) -> bool {
        let mut eqe = [0u8; 64];
        eqe[1] = 0x0b;
        put16(&mut eqe, 34, 0);
        put32(&mut eqe, 36, num_pages as u32);
        self.post_eqe(eqe)
    }

    /// Posts one EQE of `event_type` (event data zero) on the EQ that takes
    /// page requests, as a device reporting an event would ([ref §7.9](bareverbs::reference)).
    /// False when there is no such EQ or it is full (counted as overrun).
    pub fn post_event(&mut self, event_type: u8) -> bool {
        let mut eqe = [0u8; 64];
        eqe[1] = event_type;
        self.post_eqe(eqe)
    }

    /// Writes `eqe` (owner byte set by the model) at the producer index of
    /// the EQ subscribed to PAGE_REQUEST and advances it.
    fn post_eqe(&mut self, eqe: [u8; 64]) -> bool {
        let Some(eq) = self
            .objects
            .eqs
            .values()
            .find(|e| e.mask & (1 << 0x0b) != 0)
            .cloned()
        else {
            return false;
        };
        let nent = 1u32 << eq.log_size;
        if eq.pi.wrapping_sub(eq.ci) >= nent {
            if let Some(e) = self.objects.eqs.get_mut(&eq.eqn) {
                e.overruns += 1;
            }
            return false;
        }
        let off = ((eq.pi & (nent - 1)) as usize) * 64;
        let Some(&page) = eq.pages.get(off / 4096) else {
            return false;
        };
        // `page` is a guest PAS entry: never let the offset wrap it.
        let Some(addr) = page.checked_add((off % 4096) as u64) else {
            return false;
        };
        if !self.wr(addr, &eqe[..63]) {
            return false;
        }
        // `addr + 63` cannot overflow: `[addr, addr + 63)` was just written.
        self.wr(addr + 63, &[((eq.pi & nent) != 0) as u8]);
        if let Some(e) = self.objects.eqs.get_mut(&eq.eqn) {
            e.pi = e.pi.wrapping_add(1);
        }
        true
    }

    fn required_pages(&self) -> u32 {
        let mut need = self.cfg.boot_pages;
        if matches!(self.hca, HcaState::Initialized) {
            need += self.cfg.init_pages;
        }
        let charged = self.charged_objects.saturating_sub(self.cfg.free_objects);
        need + charged * self.cfg.pages_per_object
    }

    /// Charges one object's pages; `Err(shortfall)` when firmware lacks pages.
    fn charge(&mut self) -> Result<(), u32> {
        self.charged_objects += 1;
        let need = self.required_pages();
        let held = self.pages.len() as u32;
        if held < need {
            self.charged_objects -= 1;
            return Err(need - held);
        }
        Ok(())
    }

    /// Announces a committed change (destroys).
    fn notify(&mut self, ev: ObjectEvent) {
        if let Some(h) = self.hook.as_mut() {
            let _ = h.object_event(&ev);
        }
    }

    /// Offers a change to the data path before committing it; a refusal
    /// is logged in `refusals`.
    fn admit(&mut self, ev: ObjectEvent) -> bool {
        let Some(h) = self.hook.as_mut() else {
            return true;
        };
        match h.object_event(&ev) {
            Ok(()) => true,
            Err(why) => {
                self.refusals.push(why);
                false
            }
        }
    }

    fn pas(input: &[u8], n: usize) -> Vec<u64> {
        (0..n)
            .map(|i| get64(input, PAS_OFFSET + 8 * i) & !0xfff)
            .collect()
    }

    fn execute(&mut self, input: &[u8], outlen: usize) -> Outcome {
        let opcode = get16(input, 0);
        let op_mod = get16(input, 6);
        let initialized = matches!(self.hca, HcaState::Initialized);
        let enabled = !matches!(self.hca, HcaState::Disabled);
        let id = get_bits(input, 0, 2, 23, 0);
        let need_in = |n: usize| input.len() >= n;
        let max_caps = self.cfg.caps;
        let cur = HcaCaps::parse(&self.cur_caps);
        macro_rules! require {
            ($c:expr, $s:expr, $r:expr) => {
                if !$c {
                    return Fail($s, $r);
                }
            };
        }
        match opcode {
            op::ENABLE_HCA => {
                if self.hca == HcaState::Disabled {
                    self.hca = HcaState::Enabled;
                }
                Outcome::Ok(ok(16))
            }
            op::DISABLE_HCA => {
                self.hca = HcaState::Disabled;
                self.issi = 0;
                Outcome::Ok(ok(16))
            }
            op::NOP => Outcome::Ok(ok(16)),
            op::QUERY_ISSI => {
                require!(enabled, CmdStatus::BadSysState, reason::HCA_STATE);
                require!(outlen >= 0x70, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
                let mut o = ok(0x70);
                put16(&mut o, 0x0a, self.issi);
                put32(&mut o, 0x6c, self.cfg.supported_issi);
                Outcome::Ok(o)
            }
            op::SET_ISSI => {
                require!(enabled, CmdStatus::BadSysState, reason::HCA_STATE);
                let v = get16(input, 0x0a);
                require!(
                    v < 32 && self.cfg.supported_issi & (1 << v) != 0,
                    CmdStatus::BadParam,
                    reason::FIELD
                );
                self.issi = v;
                Outcome::Ok(ok(16))
            }
            op::QUERY_PAGES => {
                require!(enabled, CmdStatus::BadSysState, reason::HCA_STATE);
                let held = self.pages.len() as u32;
                let n = match op_mod {
                    1 => self.cfg.boot_pages.saturating_sub(held),
                    2 => match self.cfg.init_pages_reported {
                        Some(n) => n,
                        None => (self.cfg.boot_pages + self.cfg.init_pages).saturating_sub(held),
                    },
                    3 => 0,
                    _ => return Fail(CmdStatus::BadParam, reason::FIELD),
                };
                let mut o = ok(16);
                put32(&mut o, 0x0c, n);
                Outcome::Ok(o)
            }
            op::MANAGE_PAGES => {
                require!(
                    enabled || !self.pages.is_empty(),
                    CmdStatus::BadSysState,
                    reason::HCA_STATE
                );
                let n = get32(input, 0x0c) as usize;
                match op_mod {
                    1 => {
                        require!(
                            n <= MAX_FW_MSG / 8 && need_in(16 + 8 * n),
                            CmdStatus::BadInputLen,
                            reason::INPUT_LEN
                        );
                        let mut new = Vec::with_capacity(n);
                        for i in 0..n {
                            let p = get64(input, 16 + 8 * i);
                            require!(
                                p & 0xfff == 0
                                    && self.mapped(p, 4096)
                                    && !self.pages.contains(&p)
                                    && !new.contains(&p),
                                CmdStatus::BadParam,
                                reason::ADDRESS
                            );
                            new.push(p);
                        }
                        self.pages.extend(new);
                        Outcome::Ok(ok(16))
                    }
                    2 => {
                        let releasable = match self.hca {
                            HcaState::Initialized | HcaState::Enabled => (self.pages.len() as u32)
                                .saturating_sub(self.required_pages())
                                as usize,
                            _ => self.pages.len(),
                        };
                        let room = outlen.saturating_sub(16) / 8;
                        let k = n.min(releasable).min(room);
                        let mut o = ok(16 + 8 * k);
                        put32(&mut o, 0x08, k as u32);
                        for i in 0..k {
                            let p = self.pages.pop().unwrap_or(0);
                            put64(&mut o, 16 + 8 * i, p);
                        }
                        Outcome::Ok(o)
                    }
                    0 => {
                        // Driver cannot give pages: fail whatever waits for them.
                        for s in std::mem::take(&mut self.pending) {
                            let mut o = ok(16);
                            o[0] = CmdStatus::NoResources.code();
                            put32(&mut o, 4, syndrome(opcode, reason::CANT_GIVE));
                            if let Some(a) = self
                                .entry_addr(s)
                                .and_then(|b| b.checked_add(layout::OUT as u64))
                            {
                                self.wr(a, &o);
                            }
                            self.finish(s, 0);
                        }
                        Outcome::Ok(ok(16))
                    }
                    _ => Fail(CmdStatus::BadParam, reason::FIELD),
                }
            }
            op::ACCESS_REG => {
                // Register id at byte 0x0a, data from 0x10 (ref §7.6
                // step 7; op_mod 0 = write, 1 = read). HOST_ENDIANNESS
                // (write only) and PMTU (read only, linux `mlx5_ifc.h`
                // pmtu_reg) are modelled; any other register or direction is
                // BAD_PARAM.
                require!(enabled, CmdStatus::BadSysState, reason::HCA_STATE);
                require!(need_in(0x20), CmdStatus::BadInputLen, reason::INPUT_LEN);
                match (get16(input, 0x0a), op_mod) {
                    (ops::REG_HOST_ENDIANNESS, ops::ACCESS_REG_WRITE) => {
                        self.host_endianness = Some(input[0x10]);
                        Outcome::Ok(ok(0x20.min(outlen)))
                    }
                    (ops::REG_PMTU, ops::ACCESS_REG_READ) if self.cfg.pmtu_supported => {
                        require!(outlen >= 0x20, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
                        let port = get_bits(input, ops::REG_DATA, 0, 23, 16);
                        require!(
                            (1..=cur.num_ports.max(1) as u32).contains(&port),
                            CmdStatus::BadParam,
                            reason::FIELD
                        );
                        let mut o = ok(0x20);
                        let r = ops::REG_DATA;
                        set_bits(&mut o, r, 0, 23, 16, port);
                        set_bits(&mut o, r, 1, 31, 16, self.cfg.port_max_mtu as u32);
                        set_bits(&mut o, r, 2, 31, 16, self.cfg.port_mtu as u32);
                        set_bits(&mut o, r, 3, 31, 16, self.cfg.port_mtu as u32);
                        Outcome::Ok(o)
                    }
                    _ => Fail(CmdStatus::BadParam, reason::FIELD),
                }
            }
            op::QUERY_HCA_CAP if op_mod >> 1 == ops::CapType::Roce as u16 => {
                require!(enabled, CmdStatus::BadSysState, reason::HCA_STATE);
                require!(self.cfg.caps.roce, CmdStatus::BadParam, reason::FIELD);
                require!(outlen >= 0x110, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
                let mut o = ok(0x1010.min(outlen));
                o[0x10] = self.cfg.roce_cap_byte0;
                Outcome::Ok(o)
            }
            op::QUERY_HCA_CAP => {
                require!(enabled, CmdStatus::BadSysState, reason::HCA_STATE);
                require!(op_mod >> 1 == 0, CmdStatus::BadParam, reason::FIELD);
                require!(outlen >= 0x110, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
                if (self.pages.len() as u32) < self.cfg.boot_pages {
                    return NeedPages(self.cfg.boot_pages - self.pages.len() as u32);
                }
                let mut o = ok(0x1010.min(outlen));
                if op_mod & 1 == 1 {
                    o[0x10..0x110].copy_from_slice(&self.cur_caps);
                } else {
                    let mut m = [0u8; 256];
                    max_caps.write(&mut m);
                    o[0x10..0x110].copy_from_slice(&m);
                }
                Outcome::Ok(o)
            }
            op::SET_HCA_CAP => {
                require!(
                    matches!(self.hca, HcaState::Enabled),
                    CmdStatus::BadSysState,
                    reason::HCA_STATE
                );
                require!(op_mod >> 1 == 0, CmdStatus::BadParam, reason::FIELD);
                require!(need_in(0x110), CmdStatus::BadInputLen, reason::INPUT_LEN);
                if (self.pages.len() as u32) < self.cfg.boot_pages {
                    return NeedPages(self.cfg.boot_pages - self.pages.len() as u32);
                }
                let new = HcaCaps::parse(&input[0x10..0x110]);
                require!(
                    new.log_max_qp <= max_caps.log_max_qp
                        && new.log_max_qp_sz <= max_caps.log_max_qp_sz
                        && new.log_max_cq <= max_caps.log_max_cq
                        && new.log_max_cq_sz <= max_caps.log_max_cq_sz
                        && new.log_max_mkey <= max_caps.log_max_mkey
                        && new.log_max_pd <= max_caps.log_max_pd
                        && (!new.uar_4k || max_caps.uar_4k)
                        && (!new.mkey_by_name || max_caps.mkey_by_name),
                    CmdStatus::BadParam,
                    reason::SIZE
                );
                // Settable fields only.
                let mut c = self.cur_caps;
                for f in [
                    caps::field::CMDIF_CHECKSUM,
                    caps::field::LOG_UAR_PAGE_SZ,
                    caps::field::LOG_MAX_QP,
                    caps::field::UAR_4K,
                    caps::field::MKEY_BY_NAME,
                    caps::field::PKEY_TABLE_SIZE,
                ] {
                    caps::set(&mut c, f, caps::get(&input[0x10..0x110], f));
                }
                self.cur_caps = c;
                Outcome::Ok(ok(16))
            }
            op::INIT_HCA => {
                require!(
                    matches!(self.hca, HcaState::Enabled),
                    CmdStatus::BadSysState,
                    reason::HCA_STATE
                );
                let need = self.cfg.boot_pages + self.cfg.init_pages;
                require!(
                    self.pages.len() as u32 >= need,
                    CmdStatus::NoResources,
                    reason::PAGES
                );
                self.hca = HcaState::Initialized;
                Outcome::Ok(ok(16))
            }
            op::TEARDOWN_HCA => {
                require!(initialized, CmdStatus::BadSysState, reason::HCA_STATE);
                let profile = get16(input, 0x0a);
                require!(
                    profile == 0 || profile == 2,
                    CmdStatus::BadParam,
                    reason::FIELD
                );
                let objs = std::mem::take(&mut self.objects);
                for q in objs.qps.keys() {
                    self.notify(ObjectEvent::QpDestroyed(*q));
                }
                for c in objs.cqs.keys() {
                    self.notify(ObjectEvent::CqDestroyed(*c));
                }
                for s in objs.srqs.keys() {
                    self.notify(ObjectEvent::SrqDestroyed(*s));
                }
                for m in objs.mkeys.keys() {
                    self.notify(ObjectEvent::MkeyDestroyed(*m));
                }
                self.objects.next_id = objs.next_id;
                self.objects.next_qpn = objs.next_qpn;
                self.charged_objects = 0;
                self.hca = HcaState::TornDown;
                Outcome::Ok(ok(16))
            }
            _ if !initialized => {
                if is_known(opcode) {
                    Fail(CmdStatus::BadSysState, reason::HCA_STATE)
                } else {
                    Fail(CmdStatus::BadOp, reason::UNKNOWN_OPCODE)
                }
            }
            op::ALLOC_UAR => {
                let used: Vec<u32> = self.objects.uars.keys().copied().collect();
                let idx = (FIRST_UAR..(BAR0_SIZE / 4096) as u32).find(|i| !used.contains(i));
                let Some(idx) = idx else {
                    return Fail(CmdStatus::ExceedLimit, reason::LIMIT);
                };
                self.objects.uars.insert(idx, ());
                let mut o = ok(16);
                set_bits(&mut o, 0, 2, 23, 0, idx);
                Outcome::Ok(o)
            }
            op::DEALLOC_UAR => {
                require!(
                    self.objects.uars.contains_key(&id),
                    CmdStatus::BadResource,
                    reason::UNKNOWN_OBJECT
                );
                let used = self.objects.qps.values().any(|q| q.uar == id)
                    || self.objects.cqs.values().any(|c| c.uar == id)
                    || self.objects.eqs.values().any(|e| e.uar == id);
                require!(!used, CmdStatus::BadResState, reason::IN_USE);
                self.objects.uars.remove(&id);
                Outcome::Ok(ok(16))
            }
            op::ALLOC_PD => {
                require!(
                    (self.objects.pds.len() as u64) < 1u64 << cur.log_max_pd.min(32),
                    CmdStatus::ExceedLimit,
                    reason::LIMIT
                );
                let pd = self.objects.fresh();
                self.objects.pds.insert(pd, ());
                let mut o = ok(16);
                set_bits(&mut o, 0, 2, 23, 0, pd);
                Outcome::Ok(o)
            }
            op::DEALLOC_PD => {
                require!(
                    self.objects.pds.contains_key(&id),
                    CmdStatus::BadResource,
                    reason::UNKNOWN_OBJECT
                );
                let used = self.objects.qps.values().any(|q| q.pd == id)
                    || self.objects.mkeys.values().any(|m| m.pd == id)
                    || self.objects.srqs.values().any(|s| s.pd == id);
                require!(!used, CmdStatus::BadResState, reason::IN_USE);
                self.objects.pds.remove(&id);
                Outcome::Ok(ok(16))
            }
            op::CREATE_MKEY => self.create_mkey(input, &cur),
            op::DESTROY_MKEY => {
                require!(
                    self.objects.mkeys.remove(&id).is_some(),
                    CmdStatus::BadResource,
                    reason::UNKNOWN_OBJECT
                );
                self.uncharge();
                self.notify(ObjectEvent::MkeyDestroyed(id));
                Outcome::Ok(ok(16))
            }
            op::CREATE_EQ => self.create_eq(input, &cur),
            op::DESTROY_EQ => {
                let eqn = input.get(0x0b).copied().unwrap_or(0);
                require!(
                    self.objects.eqs.remove(&eqn).is_some(),
                    CmdStatus::BadResource,
                    reason::UNKNOWN_OBJECT
                );
                Outcome::Ok(ok(16))
            }
            op::CREATE_CQ => self.create_cq(input, &cur),
            op::DESTROY_CQ => {
                require!(
                    self.objects.cqs.contains_key(&id),
                    CmdStatus::BadResource,
                    reason::UNKNOWN_OBJECT
                );
                let used = self
                    .objects
                    .qps
                    .values()
                    .any(|q| q.cqn_snd == id || q.cqn_rcv == id);
                require!(!used, CmdStatus::BadResState, reason::IN_USE);
                self.objects.cqs.remove(&id);
                self.uncharge();
                self.notify(ObjectEvent::CqDestroyed(id));
                Outcome::Ok(ok(16))
            }
            op::CREATE_QP => self.create_qp(input, &cur),
            op::DESTROY_QP => {
                require!(
                    self.objects.qps.remove(&id).is_some(),
                    CmdStatus::BadResource,
                    reason::UNKNOWN_OBJECT
                );
                self.uncharge();
                self.notify(ObjectEvent::QpDestroyed(id));
                Outcome::Ok(ok(16))
            }
            op::RST2INIT_QP
            | op::INIT2INIT_QP
            | op::INIT2RTR_QP
            | op::RTR2RTS_QP
            | op::RTS2RTS_QP
            | op::SQERR2RTS_QP
            | op::SQD_RTS_QP
            | op::QP_2ERR
            | op::QP_2RST => self.modify_qp(opcode, input, &cur),
            op::QUERY_QP => {
                require!(outlen >= 0x100, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
                let Some(q) = self.objects.qps.get(&id) else {
                    return Fail(CmdStatus::BadResource, reason::UNKNOWN_OBJECT);
                };
                let mut o = ok(PAS_OFFSET);
                set_bits(&mut o, QPC, 0, 31, 28, q.state.bits() as u32);
                set_bits(&mut o, QPC, 0, 23, 16, q.st as u32);
                set_bits(&mut o, QPC, 0, 12, 11, 3);
                set_bits(&mut o, QPC, 1, 23, 0, q.pd);
                set_bits(&mut o, QPC, 2, 31, 29, q.mtu as u32);
                set_bits(&mut o, QPC, 2, 22, 19, q.log_rq_size as u32);
                set_bits(&mut o, QPC, 2, 18, 16, q.log_rq_stride as u32);
                set_bits(&mut o, QPC, 2, 14, 11, q.log_sq_size as u32);
                set_bits(&mut o, QPC, 3, 23, 0, q.uar);
                set_bits(&mut o, QPC, 5, 23, 0, q.remote_qpn);
                set_bits(&mut o, QPC_PATH, 0, 31, 31, q.fl as u32);
                set_bits(&mut o, QPC_PATH, 0, 15, 0, q.pkey_index as u32);
                set_bits(&mut o, QPC_PATH, 2, 31, 27, q.ack_timeout as u32);
                set_bits(&mut o, QPC_PATH, 9, 23, 16, q.port as u32);
                set_bits(&mut o, QPC, 28, 18, 16, q.retry_count as u32);
                set_bits(&mut o, QPC, 28, 15, 13, q.rnr_retry as u32);
                set_bits(&mut o, QPC, 30, 23, 0, q.sq_psn);
                set_bits(&mut o, QPC, 31, 23, 0, q.cqn_snd);
                set_bits(&mut o, QPC, 36, 15, 15, q.rre as u32);
                set_bits(&mut o, QPC, 36, 14, 14, q.rwe as u32);
                set_bits(&mut o, QPC, 36, 13, 13, q.rae as u32);
                set_bits(&mut o, QPC, 37, 28, 24, q.min_rnr_nak as u32);
                set_bits(&mut o, QPC, 37, 23, 0, q.rq_psn);
                set_bits(&mut o, QPC, 39, 23, 0, q.cqn_rcv);
                put64(&mut o, QPC + 0xa0, q.dbr_addr);
                o.truncate(outlen.min(PAS_OFFSET));
                Outcome::Ok(o)
            }
            op::CREATE_SRQ => self.create_srq(input, &cur),
            op::DESTROY_SRQ => {
                require!(
                    self.objects.srqs.contains_key(&id),
                    CmdStatus::BadResource,
                    reason::UNKNOWN_OBJECT
                );
                let used = self.objects.qps.values().any(|q| q.srqn == Some(id));
                require!(!used, CmdStatus::BadResState, reason::IN_USE);
                self.objects.srqs.remove(&id);
                self.uncharge();
                self.notify(ObjectEvent::SrqDestroyed(id));
                Outcome::Ok(ok(16))
            }
            op::QUERY_VPORT_STATE => {
                let mut o = ok(16);
                o[0x0f] = (1 << 4) | (self.cfg.port_state & 0xf);
                Outcome::Ok(o)
            }
            op::MODIFY_NIC_VPORT_CONTEXT => {
                let need = ops::MODIFY_VPORT_CTX_OFFSET + 4;
                require!(
                    input.len() >= need,
                    CmdStatus::BadInputLen,
                    reason::INPUT_LEN
                );
                let select = get32(input, 0x0c);
                require!(
                    select & !ops::FIELD_SELECT_ROCE_EN == 0,
                    CmdStatus::BadParam,
                    reason::FIELD
                );
                if select & ops::FIELD_SELECT_ROCE_EN != 0 {
                    self.roce_en = get32(input, ops::MODIFY_VPORT_CTX_OFFSET) & 1 != 0;
                }
                Outcome::Ok(ok(16))
            }
            op::QUERY_NIC_VPORT_CONTEXT => {
                let c = ops::QUERY_VPORT_CTX_OFFSET;
                require!(
                    outlen >= c + 0x100,
                    CmdStatus::BadOutputLen,
                    reason::OUTPUT_LEN
                );
                let mut o = ok(c + 0x100);
                o[c + 3] = self.roce_en as u8;
                // The vport MTU is the hardware MTU, as PMTU reports it.
                o[c + 0x26..c + 0x28].copy_from_slice(&self.cfg.port_mtu.to_be_bytes());
                o[c + 0xf6..c + 0xfc].copy_from_slice(&self.cfg.mac);
                let g = c + ops::NIC_VPORT_SYSTEM_IMAGE_GUID;
                o[g..g + 8].copy_from_slice(&self.cfg.system_image_guid.to_be_bytes());
                o[g + 8..g + 16].copy_from_slice(&self.cfg.node_guid.to_be_bytes());
                o[g + 16..g + 24].copy_from_slice(&self.cfg.node_guid.to_be_bytes());
                Outcome::Ok(o)
            }
            op::QUERY_ADAPTER => {
                let a = ops::QUERY_ADAPTER_STRUCT;
                let need = a + ops::QUERY_ADAPTER_STRUCT_LEN;
                require!(outlen >= need, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
                let mut o = ok(need);
                let v = a + ops::ADAPTER_IEEE_VENDOR_ID;
                o[v..v + 4].copy_from_slice(&(self.cfg.ieee_vendor_id & 0xff_ffff).to_be_bytes());
                let p = a + ops::ADAPTER_PSID;
                o[p..p + 16].copy_from_slice(&self.cfg.psid);
                Outcome::Ok(o)
            }
            op::QUERY_HCA_VPORT_CONTEXT => {
                let c = ops::QUERY_HCA_VPORT_CTX_OFFSET;
                let need = c + ops::HCA_VPORT_CTX_LEN;
                require!(outlen >= need, CmdStatus::BadOutputLen, reason::OUTPUT_LEN);
                let port = (get32(input, 0x08) >> 16) & 0xf;
                let ports = self.cfg.caps.num_ports as u32;
                require!(
                    port <= ports && (port != 0 || ports != 2),
                    CmdStatus::BadParam,
                    reason::FIELD
                );
                let mut o = ok(need);
                let up = self.cfg.port_state == 1;
                // port_physical_state 5 LinkUp / 3 Disabled; vport_state and
                // port_state 4 Active / 1 Down (IB port states).
                let (phys, state) = if up { (5u32, 4u32) } else { (3, 1) };
                let dw8 = (phys << 12) | (state << 4) | state;
                o[c + 0x20..c + 0x24].copy_from_slice(&dw8.to_be_bytes());
                o[c + 0x28..c + 0x30].copy_from_slice(&self.cfg.system_image_guid.to_be_bytes());
                o[c + 0x30..c + 0x38].copy_from_slice(&self.cfg.node_guid.to_be_bytes());
                o[c + 0x38..c + 0x40].copy_from_slice(&self.cfg.node_guid.to_be_bytes());
                let dw24 = ((self.cfg.lid as u32) << 16) | (((self.cfg.lmc & 7) as u32) << 5) | 18;
                o[c + 0x60..c + 0x64].copy_from_slice(&dw24.to_be_bytes());
                let dw25 = (self.cfg.sm_lid as u32) << 16;
                o[c + 0x64..c + 0x68].copy_from_slice(&dw25.to_be_bytes());
                Outcome::Ok(o)
            }
            _ => Fail(CmdStatus::BadOp, reason::UNKNOWN_OPCODE),
        }
    }

    fn uncharge(&mut self) {
        self.charged_objects = self.charged_objects.saturating_sub(1);
    }

    /// Checks `n` pas entries fit the input and are mapped 4 KiB pages.
    fn check_pas(&self, input: &[u8], n: usize) -> Result<Vec<u64>, (CmdStatus, u8)> {
        if input.len() < PAS_OFFSET + 8 * n {
            return Err((CmdStatus::BadInputLen, reason::INPUT_LEN));
        }
        let pas = Self::pas(input, n);
        if pas.iter().any(|&p| !self.mapped(p, 4096)) {
            return Err((CmdStatus::BadParam, reason::ADDRESS));
        }
        Ok(pas)
    }

    fn create_mkey(&mut self, input: &[u8], cur: &HcaCaps) -> Outcome {
        if input.len() < PAS_OFFSET {
            return Fail(CmdStatus::BadInputLen, reason::INPUT_LEN);
        }
        let pd = get_bits(input, MKC, 3, 23, 0);
        if !self.objects.pds.contains_key(&pd) {
            return Fail(CmdStatus::BadResource, reason::UNKNOWN_OBJECT);
        }
        // MTT access with an absolute page size from 4 KiB up to the
        // field's top value.
        let log_page = get_bits(input, MKC, 14, 4, 0) as u8;
        if get_bits(input, MKC, 0, 9, 8) != 1 || log_page < ops::MKEY_LOG_PAGE_MIN {
            return Fail(CmdStatus::BadParam, reason::FIELD);
        }
        let len = get64(input, MKC + 0x18);
        let start = get64(input, MKC + 0x10);
        let npages = (get32(input, 0x60) as usize) * 2;
        // `start` and `len` are guest-provided: a span that overflows 64
        // bits (or a page count beyond usize) is a bad size, not a panic.
        let Some(need) =
            ops::mkey_pages(start, len, log_page).and_then(|(_, n)| usize::try_from(n).ok())
        else {
            return Fail(CmdStatus::BadParam, reason::SIZE);
        };
        if npages < need || npages > (1 << 20) {
            return Fail(CmdStatus::BadParam, reason::SIZE);
        }
        if input.len() < PAS_OFFSET + 8 * need {
            return Fail(CmdStatus::BadInputLen, reason::INPUT_LEN);
        }
        // Each entry a page-aligned device address; the part of the pages
        // the key reaches (its start offset in the first page, then len
        // bytes, pages contiguous) must be mapped.
        // An entry's low 12 bits are flags; the address bits between the
        // 4 KiB boundary and the page size must be zero (a page not
        // aligned to its size is a driver bug, refused, not rounded).
        let size = 1u64 << log_page;
        let pas: Vec<u64> = (0..need)
            .map(|i| get64(input, PAS_OFFSET + 8 * i) & !0xfff)
            .collect();
        if pas.iter().any(|&a| a & (size - 1) != 0) {
            return Fail(CmdStatus::BadParam, reason::ADDRESS);
        }
        if let Some(&first) = pas.first() {
            let reach = first
                .checked_add(start & (size - 1))
                .filter(|_| contiguous_step(&pas, size))
                .and_then(|a| usize::try_from(len).ok().map(|l| (a, l)));
            match reach {
                Some((a, l)) if self.mapped(a, l.max(1)) => {}
                _ => return Fail(CmdStatus::BadParam, reason::ADDRESS),
            }
        }
        if self.objects.mkeys.len() as u64 >= 1u64 << cur.log_max_mkey.min(32) {
            return Fail(CmdStatus::ExceedLimit, reason::LIMIT);
        }
        if let Err(n) = self.charge() {
            return NeedPages(n);
        }
        let index = if self.cfg.reuse_mkey_index {
            (1..=0x00ff_ffffu32)
                .find(|i| !self.objects.mkeys.contains_key(i))
                .unwrap_or(0)
        } else {
            self.objects.fresh()
        };
        let m = MkeyObj {
            index,
            variant: get_bits(input, MKC, 1, 7, 0) as u8,
            pd,
            start,
            len,
            // a, rw, rr, lw, lr: mkc byte 2 bits 6..2.
            access: MkeyAccess::from_bits_truncate(input.get(MKC + 2).copied().unwrap_or(0)),
            pages: pas,
            log_page_size: log_page,
        };
        if !self.admit(ObjectEvent::MkeyCreated(m.clone())) {
            self.uncharge();
            return Fail(CmdStatus::BadParam, reason::DATA_PATH);
        }
        self.objects.mkeys.insert(index, m);
        let mut o = ok(16);
        set_bits(&mut o, 0, 2, 23, 0, index);
        Outcome::Ok(o)
    }

    fn create_eq(&mut self, input: &[u8], cur: &HcaCaps) -> Outcome {
        let log = get_bits(input, EQC, 3, 28, 24) as u8;
        let uar = get_bits(input, EQC, 3, 23, 0);
        if !self.objects.uars.contains_key(&uar) {
            return Fail(CmdStatus::BadParam, reason::UNKNOWN_OBJECT);
        }
        if log > cur.log_max_eq_sz || log > 20 {
            return Fail(CmdStatus::BadParam, reason::SIZE);
        }
        let npages = ((1usize << log) * 64).div_ceil(4096);
        let pages = match self.check_pas(input, npages) {
            Ok(p) => p,
            Err((s, r)) => return Fail(s, r),
        };
        if self.objects.eqs.len() as u64 >= 1u64 << cur.log_max_eq {
            return Fail(CmdStatus::ExceedLimit, reason::LIMIT);
        }
        let Some(eqn) = (0..=255u8).find(|n| !self.objects.eqs.contains_key(n)) else {
            return Fail(CmdStatus::ExceedLimit, reason::LIMIT);
        };
        self.objects.eqs.insert(
            eqn,
            EqObj {
                eqn,
                log_size: log,
                uar,
                mask: get64(input, 0x58),
                pages,
                pi: 0,
                ci: 0,
                overruns: 0,
            },
        );
        let mut o = ok(16);
        o[0x0b] = eqn;
        Outcome::Ok(o)
    }

    fn create_cq(&mut self, input: &[u8], cur: &HcaCaps) -> Outcome {
        let cqe_sz = get_bits(input, CQC, 0, 23, 21) as u8;
        let log = get_bits(input, CQC, 3, 28, 24) as u8;
        let uar = get_bits(input, CQC, 3, 23, 0);
        let eqn = get_bits(input, CQC, 5, 7, 0) as u8;
        let dbr = get64(input, CQC + 0x38);
        if cqe_sz > 1 || log > cur.log_max_cq_sz || log == 0 {
            return Fail(CmdStatus::BadParam, reason::SIZE);
        }
        if !self.objects.uars.contains_key(&uar) {
            return Fail(CmdStatus::BadParam, reason::UNKNOWN_OBJECT);
        }
        if !self.objects.eqs.is_empty() && !self.objects.eqs.contains_key(&eqn) {
            return Fail(CmdStatus::BadParam, reason::UNKNOWN_OBJECT);
        }
        let npages = ((1usize << log) * (64 << cqe_sz)).div_ceil(4096);
        let pages = match self.check_pas(input, npages) {
            Ok(p) => p,
            Err((s, r)) => return Fail(s, r),
        };
        if !self.mapped(dbr, 8) {
            return Fail(CmdStatus::BadParam, reason::ADDRESS);
        }
        if self.objects.cqs.len() as u64 >= 1u64 << cur.log_max_cq.min(32) {
            return Fail(CmdStatus::ExceedLimit, reason::LIMIT);
        }
        if let Err(n) = self.charge() {
            return NeedPages(n);
        }
        let cqn = self.objects.fresh();
        let c = CqObj {
            cqn,
            log_size: log,
            cqe_sz,
            uar,
            eqn,
            dbr_addr: dbr,
            pages,
        };
        if !self.admit(ObjectEvent::CqCreated(c.clone())) {
            self.uncharge();
            return Fail(CmdStatus::BadParam, reason::DATA_PATH);
        }
        self.objects.cqs.insert(cqn, c);
        let mut o = ok(16);
        set_bits(&mut o, 0, 2, 23, 0, cqn);
        Outcome::Ok(o)
    }

    fn create_qp(&mut self, input: &[u8], cur: &HcaCaps) -> Outcome {
        if input.len() < PAS_OFFSET {
            return Fail(CmdStatus::BadInputLen, reason::INPUT_LEN);
        }
        let g = |dw, hi, lo| get_bits(input, QPC, dw, hi, lo);
        let stype = g(0, 23, 16) as u8;
        let pd = g(1, 23, 0);
        let log_rq = g(2, 22, 19) as u8;
        let log_stride = g(2, 18, 16) as u8;
        let no_sq = g(2, 15, 15) != 0;
        let log_sq = g(2, 14, 11) as u8;
        let uar = g(3, 23, 0);
        let cqn_snd = g(31, 23, 0);
        let cqn_rcv = g(39, 23, 0);
        let rq_type = g(43, 26, 24);
        let srqn = g(43, 23, 0);
        let dbr = get64(input, QPC + 0xa0);
        if stype > 2 || rq_type > 1 {
            return Fail(CmdStatus::BadParam, reason::FIELD);
        }
        if log_sq > cur.log_max_qp_sz || log_rq > cur.log_max_qp_sz {
            return Fail(CmdStatus::BadParam, reason::SIZE);
        }
        if !self.objects.pds.contains_key(&pd)
            || !self.objects.cqs.contains_key(&cqn_snd)
            || !self.objects.cqs.contains_key(&cqn_rcv)
            || (rq_type == 1 && !self.objects.srqs.contains_key(&srqn))
        {
            return Fail(CmdStatus::BadResource, reason::UNKNOWN_OBJECT);
        }
        if !self.objects.uars.contains_key(&uar) {
            return Fail(CmdStatus::BadParam, reason::UNKNOWN_OBJECT);
        }
        let rq_bytes = if rq_type == 1 {
            0
        } else {
            (1usize << log_rq) << (log_stride + 4)
        };
        let sq_bytes = if no_sq { 0 } else { 64usize << log_sq };
        let npages = (rq_bytes + sq_bytes).div_ceil(4096).max(1);
        let pages = match self.check_pas(input, npages) {
            Ok(p) => p,
            Err((s, r)) => return Fail(s, r),
        };
        if !self.mapped(dbr, 8) {
            return Fail(CmdStatus::BadParam, reason::ADDRESS);
        }
        if self.objects.qps.len() as u64 >= 1u64 << cur.log_max_qp.min(32) {
            return Fail(CmdStatus::ExceedLimit, reason::LIMIT);
        }
        if let Err(n) = self.charge() {
            return NeedPages(n);
        }
        let qpn = self.objects.fresh_qpn();
        let q = QpObj {
            qpn,
            st: stype,
            state: HwQpState::Reset,
            pd,
            cqn_snd,
            cqn_rcv,
            log_sq_size: log_sq,
            log_rq_size: log_rq,
            log_rq_stride: log_stride,
            no_sq,
            srqn: (rq_type == 1).then_some(srqn),
            uar,
            user_index: g(4, 23, 0),
            dbr_addr: dbr,
            pages,
            port: 0,
            pkey_index: 0,
            rre: false,
            rwe: false,
            rae: false,
            qkey: 0,
            mtu: 0,
            remote_qpn: 0,
            rq_psn: 0,
            min_rnr_nak: 0,
            fl: false,
            sq_psn: 0,
            retry_count: 0,
            rnr_retry: 0,
            ack_timeout: 0,
            rlid: 0,
            grh: false,
            rgid: [0; 16],
            log_rra_max: 0,
            log_sra_max: 0,
        };
        if !self.admit(ObjectEvent::QpCreated(q.clone())) {
            self.uncharge();
            return Fail(CmdStatus::BadParam, reason::DATA_PATH);
        }
        self.objects.qps.insert(qpn, q);
        let mut o = ok(16);
        set_bits(&mut o, 0, 2, 23, 0, qpn);
        Outcome::Ok(o)
    }

    fn modify_qp(&mut self, opcode: u16, input: &[u8], cur: &HcaCaps) -> Outcome {
        use HwQpState as S;
        let qpn = get_bits(input, 0, 2, 23, 0);
        let with_qpc = !matches!(opcode, op::QP_2ERR | op::QP_2RST);
        if with_qpc && input.len() < PAS_OFFSET {
            return Fail(CmdStatus::BadInputLen, reason::INPUT_LEN);
        }
        let num_ports = cur.num_ports;
        let Some(mut q) = self.objects.qps.get(&qpn).cloned() else {
            return Fail(CmdStatus::BadResource, reason::UNKNOWN_OBJECT);
        };
        let (from, to): (&[S], S) = match opcode {
            op::RST2INIT_QP => (&[S::Reset], S::Init),
            op::INIT2INIT_QP => (&[S::Init], S::Init),
            op::INIT2RTR_QP => (&[S::Init], S::Rtr),
            op::RTR2RTS_QP => (&[S::Rtr], S::Rts),
            op::RTS2RTS_QP => (&[S::Rts], S::Rts),
            op::SQERR2RTS_QP => (&[S::SqErr], S::Rts),
            op::SQD_RTS_QP => (&[S::Sqd], S::Rts),
            op::QP_2ERR => (&[], S::Err),
            _ => (&[], S::Reset),
        };
        if !from.is_empty() && !from.contains(&q.state) {
            return Fail(CmdStatus::BadQpState, reason::QP_STATE);
        }
        let g = |dw, hi, lo| get_bits(input, QPC, dw, hi, lo);
        let p = |dw, hi, lo| get_bits(input, QPC_PATH, dw, hi, lo);
        match opcode {
            op::RST2INIT_QP => {
                let port = p(9, 23, 16) as u8;
                if port == 0 || port > num_ports {
                    return Fail(CmdStatus::BadParam, reason::FIELD);
                }
                if cur.port_type == bareverbs::device::PORT_TYPE_ETHERNET && !self.roce_en {
                    return Fail(CmdStatus::BadParam, reason::ROCE_DISABLED);
                }
                q.port = port;
                q.pkey_index = p(0, 15, 0) as u16;
                q.rre = g(36, 15, 15) != 0;
                q.rwe = g(36, 14, 14) != 0;
                q.rae = g(36, 13, 13) != 0;
                q.qkey = get32(input, QPC + 0xa8);
            }
            op::INIT2RTR_QP => {
                let mtu = g(2, 31, 29) as u8;
                if !(1..=5).contains(&mtu) {
                    return Fail(CmdStatus::BadParam, reason::FIELD);
                }
                q.mtu = mtu;
                q.remote_qpn = g(5, 23, 0);
                q.rq_psn = g(37, 23, 0);
                q.min_rnr_nak = g(37, 28, 24) as u8;
                q.log_rra_max = g(36, 23, 21) as u8;
                q.fl = p(0, 31, 31) != 0;
                q.grh = p(1, 23, 23) != 0;
                q.rlid = p(1, 15, 0) as u16;
                q.rgid.copy_from_slice(
                    input
                        .get(QPC_PATH + 0x10..QPC_PATH + 0x20)
                        .unwrap_or(&[0; 16]),
                );
            }
            op::RTR2RTS_QP => {
                q.sq_psn = g(30, 23, 0);
                q.retry_count = g(28, 18, 16) as u8;
                q.rnr_retry = g(28, 15, 13) as u8;
                q.ack_timeout = p(2, 31, 27) as u8;
                q.log_sra_max = g(28, 23, 21) as u8;
            }
            _ => {}
        }
        q.state = to;
        if to == S::Reset {
            q.remote_qpn = 0;
        }
        if !self.admit(ObjectEvent::QpModified(q.clone())) {
            return Fail(CmdStatus::BadParam, reason::DATA_PATH);
        }
        self.objects.qps.insert(qpn, q);
        Outcome::Ok(ok(16))
    }

    fn create_srq(&mut self, input: &[u8], cur: &HcaCaps) -> Outcome {
        if input.len() < PAS_OFFSET {
            return Fail(CmdStatus::BadInputLen, reason::INPUT_LEN);
        }
        let log = get_bits(input, SRQC, 0, 27, 24) as u8;
        let stride = get_bits(input, SRQC, 1, 26, 24) as u8;
        let pd = get_bits(input, SRQC, 6, 23, 0);
        let dbr = get64(input, SRQC + 0x28);
        if log > cur.log_max_srq_sz {
            return Fail(CmdStatus::BadParam, reason::SIZE);
        }
        if !self.objects.pds.contains_key(&pd) {
            return Fail(CmdStatus::BadResource, reason::UNKNOWN_OBJECT);
        }
        let npages = ((1usize << log) << (stride + 4)).div_ceil(4096);
        let pages = match self.check_pas(input, npages) {
            Ok(p) => p,
            Err((s, r)) => return Fail(s, r),
        };
        if !self.mapped(dbr, 4) {
            return Fail(CmdStatus::BadParam, reason::ADDRESS);
        }
        if self.objects.srqs.len() as u64 >= 1u64 << cur.log_max_srq.min(32) {
            return Fail(CmdStatus::ExceedLimit, reason::LIMIT);
        }
        if let Err(n) = self.charge() {
            return NeedPages(n);
        }
        let srqn = self.objects.fresh();
        let s = SrqObj {
            srqn,
            log_size: log,
            log_stride: stride,
            pd,
            dbr_addr: dbr,
            pages,
        };
        if !self.admit(ObjectEvent::SrqCreated(s.clone())) {
            self.uncharge();
            return Fail(CmdStatus::BadParam, reason::DATA_PATH);
        }
        self.objects.srqs.insert(srqn, s);
        let mut o = ok(16);
        set_bits(&mut o, 0, 2, 23, 0, srqn);
        Outcome::Ok(o)
    }
}

fn is_known(opcode: u16) -> bool {
    bareverbs::cmd::opcode_name(opcode) != "UNKNOWN"
}

/// Whether `pages` are consecutive pages of `size` bytes in device address
/// space.
fn contiguous_step(pages: &[u64], size: u64) -> bool {
    pages
        .windows(2)
        .all(|w| w[0].checked_add(size) == Some(w[1]))
}
