//! The BAR0 register model: the initialization segment's registers
//! (firmware version, command-interface revision, `initializing`, health
//! counter, command queue address, command doorbell) and UAR stores (EQ
//! doorbells update the consumer index; everything goes to the data path).

use bareverbs::cmd::initseg;
use bareverbs::platform::{EQ_DOORBELL_ARM, EQ_DOORBELL_NO_ARM};

use super::{SimFirmware, BAR0_SIZE};

impl SimFirmware {
    pub(super) fn read_reg(&mut self, off: usize) -> u32 {
        let (maj, min, sub) = self.cfg.fw_version;
        match off {
            initseg::FW_REV => initseg::fw_rev_word(maj, min),
            initseg::CMDIF_REV_FW_SUB => initseg::cmdif_rev_fw_sub_word(self.cfg.cmdif_rev, sub),
            initseg::CMDQ_ADDR_H => self.cmdq_h,
            initseg::CMDQ_ADDR_L_SZ => initseg::cmdq_addr_l_sz_word(
                self.cmdq_l,
                self.nic_ifc,
                self.cfg.log_cmdq_size,
                self.cfg.log_cmdq_stride,
            ),
            initseg::INITIALIZING => {
                if self.init_reads < self.cfg.init_polls {
                    self.init_reads = self.init_reads.saturating_add(1);
                    initseg::INITIALIZING_BIT
                } else {
                    0
                }
            }
            initseg::HEALTH_FW_VER => ((maj as u32) << 16) | min as u32,
            initseg::HEALTH_COUNTER => {
                if !self.faults.health_stuck {
                    self.health = self.health.wrapping_add(1) & initseg::HEALTH_COUNTER_MASK;
                }
                self.health
            }
            o if o < BAR0_SIZE => 0,
            _ => 0xffff_ffff,
        }
    }

    pub(super) fn write_reg(&mut self, off: usize, v: u32) {
        match off {
            initseg::CMDQ_ADDR_H => self.cmdq_h = v,
            initseg::CMDQ_ADDR_L_SZ => {
                self.cmdq_l = v & initseg::CMDQ_ADDR_L_MASK;
                self.nic_ifc = initseg::nic_ifc_bits(v);
            }
            initseg::CMD_DBELL => {
                let slots = 1u32 << self.cfg.log_cmdq_size.min(initseg::MAX_LOG_CMDQ_SIZE);
                for slot in 0..slots.min(32) {
                    if v & (1 << slot) != 0 {
                        self.doorbell(slot as u8);
                    }
                }
            }
            _ => {}
        }
    }

    pub(super) fn uar_store(&mut self, uar: u32, offset: usize, bytes: &[u8]) {
        // EQ doorbells update the consumer index (ref §4.6).
        if (offset == EQ_DOORBELL_ARM || offset == EQ_DOORBELL_NO_ARM) && bytes.len() == 4 {
            let (eqn, ci) =
                bareverbs::cmd::eq::parse_doorbell([bytes[0], bytes[1], bytes[2], bytes[3]]);
            if let Some(eq) = self.objects.eqs.get_mut(&eqn) {
                eq.ci = ci;
                if offset == EQ_DOORBELL_ARM {
                    eq.armed = true;
                }
            }
            if self.faults.eqe_storm {
                while self.post_event(bareverbs::cmd::eq::event::PORT_CHANGE) {}
            }
        }
        if self.hook.is_none() {
            // Kept only without a data path: a benchmark's doorbells would
            // otherwise grow this log without bound.
            self.uar_writes.push((uar, offset, bytes.to_vec()));
        }
        if let Some(h) = self.hook.as_mut() {
            h.uar_write(uar, offset, bytes);
        }
    }

    pub(super) fn uar_flush(&mut self, uar: u32) {
        if let Some(h) = self.hook.as_mut() {
            h.uar_flush(uar);
        }
    }
}
