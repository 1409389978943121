//! Command execution: reads a command queue entry and its mailbox chains
//! from DMA memory, runs the command, writes the output back
//! ([ref §7.3–§7.12](bareverbs::reference)).

use super::cmdq::MAX_FW_MSG;
use super::handler::{ok, Outcome};
use super::status::{reason, syndrome};
use super::SimFirmware;
use bareverbs::cmd::bits::{get32, get64};
use bareverbs::cmd::layout::{cmd_in, cmd_out};
use bareverbs::cmd::op;
use bareverbs::cmd::queue::{layout, CMD_TYPE_PCI, INLINE_BYTES, LAYOUT_BYTES};
use bareverbs::cmd::{CmdStatus, DeliveryStatus};
use Outcome::{Fail, NeedPages};

impl SimFirmware {
    /// The driver rang the doorbell of `slot` (a hang fault keeps it).
    pub(crate) fn doorbell(&mut self, slot: u8) {
        if self.faults.hang_next > 0 {
            self.faults.hang_next -= 1;
            self.hung.push(slot);
            return;
        }
        self.run_slot(slot);
    }

    /// Executes the entry in `slot` (unless it must wait for pages).
    pub(crate) fn run_slot(&mut self, slot: u8) {
        let Some((base, e)) = self
            .entry_addr(slot)
            .and_then(|base| Some((base, self.rd(base, LAYOUT_BYTES)?)))
        else {
            return; // queue not mapped: nothing a device could do
        };
        if e[layout::TYPE] != CMD_TYPE_PCI {
            return self.finish(slot, DeliveryStatus::BadCmdDescriptor.code());
        }
        let inlen = get32(&e, layout::INLEN) as usize;
        let outlen = get32(&e, layout::OUTLEN) as usize;
        if !(INLINE_BYTES..=MAX_FW_MSG).contains(&inlen) {
            return self.finish(slot, DeliveryStatus::InputLen.code());
        }
        if !(INLINE_BYTES..=MAX_FW_MSG).contains(&outlen) {
            return self.finish(slot, DeliveryStatus::OutputLen.code());
        }
        let mut input = e[layout::IN..layout::IN + INLINE_BYTES].to_vec();
        if inlen > INLINE_BYTES {
            if let Err(d) =
                self.read_chain(get64(&e, layout::IN_PTR), inlen - INLINE_BYTES, &mut input)
            {
                return self.finish(slot, d);
            }
        }
        if let Some(d) = self.faults.delivery_next.take() {
            return self.finish(slot, d);
        }
        let opcode = cmd_in::OPCODE.get(&input, 0) as u16;
        let outcome = if let Some((s, syn)) = self.faults.fail_next.take() {
            let mut o = ok(16);
            cmd_out::STATUS.set(&mut o, 0, s as u32);
            cmd_out::SYNDROME.set(&mut o, 0, syn);
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
                        | op::CREATE_RMP
                );
                if creates && cmd_out::STATUS.get(&o, 0) == 0 {
                    if let Some(n) = self.faults.object_number_next.take() {
                        cmd_out::OBJ_ID_DWORD.set(&mut o, 0, n);
                    }
                }
                o
            }
            Fail(s, r) => {
                let mut o = ok(16);
                cmd_out::STATUS.set(&mut o, 0, s.code() as u32);
                cmd_out::SYNDROME.set(&mut o, 0, syndrome(opcode, r));
                o
            }
            NeedPages(n) => {
                if self.request_pages(n as i32) {
                    self.pending.push(slot);
                    return;
                }
                let mut o = ok(16);
                cmd_out::STATUS.set(&mut o, 0, CmdStatus::NoResources.code() as u32);
                cmd_out::SYNDROME.set(&mut o, 0, syndrome(opcode, reason::PAGES));
                o
            }
        };
        let status = cmd_out::STATUS.get(&out, 0) as u8;
        self.log.push((opcode, status));
        self.slot_log.push((slot, opcode));
        let n = out.len().min(outlen);
        self.wr(base + layout::OUT as u64, &out[..n.min(INLINE_BYTES)]);
        if n > INLINE_BYTES {
            if let Err(d) = self.write_chain(get64(&e, layout::OUT_PTR), &out[INLINE_BYTES..n]) {
                return self.finish(slot, d);
            }
        }
        self.finish(slot, 0);
        // Pages arrived: retry commands waiting for them.
        if opcode == op::MANAGE_PAGES && status == 0 && !self.pending.is_empty() {
            for s in std::mem::take(&mut self.pending) {
                self.run_slot(s);
            }
        }
    }
}
