//! Writes to the doorbell record and the UAR: publishing the consumer
//! index and arming for the next completion event, with the arm sequence
//! number ([ref §4.1, §4.5](crate::reference)).

use super::doorbell::{CQ_DB_REQ_NOT, CQ_DB_REQ_NOT_SOL, DBREC_ARM, DBREC_SET_CI};
use super::CompletionQueue;
use crate::devmem;
use crate::platform::{self, Uar};

impl<const N: usize> CompletionQueue<N> {
    /// Current arm sequence number.
    #[inline(always)]
    pub const fn arm_sn(&self) -> u32 {
        self.arm_sn
    }
    /// Records that a completion event for this CQ was consumed
    /// (`arm_sn += 1`, as mlx5_cq_event does). [ref §4.5](crate::reference).
    pub fn event_consumed(&mut self) {
        self.arm_sn = self.arm_sn.wrapping_add(1);
    }

    /// Stores `BE32(ci & 0xffffff)` into the SET_CI word. [ref §4.1, §4.5](crate::reference).
    #[inline(always)]
    pub fn publish_ci(&mut self) {
        // Order the CQE reads (and any INVALID marks) of this batch before
        // the store that hands the slots back to the device.
        platform::release_to_device_barrier();
        self.write_dbrec(DBREC_SET_CI, self.ci & 0x00ff_ffff);
    }

    #[inline(always)]
    fn write_dbrec(&mut self, word: usize, v: u32) {
        let p = self.dbrec.cpu.as_ptr().wrapping_add(word * 4).cast::<u32>();
        // SAFETY: the record is at least 8 bytes and 8-byte aligned
        // (construction) and word is 0 or 1, so p is non-null, valid and
        // aligned for a 4-byte store; this queue (not `Sync`) is borrowed
        // mutably. A write-only volatile view: the device reads the word.
        // The stored bytes are BE32(v) on any host.
        unsafe { devmem::write_only(p) }.write(u32::from_ne_bytes(v.to_be_bytes()));
    }

    /// Reads the doorbell record word `word` (0 = SET_CI, 1 = ARM) as a
    /// host value.
    pub fn read_dbrec(&self, word: usize) -> u32 {
        if word > 1 {
            return 0;
        }
        let p = self
            .dbrec
            .cpu
            .as_ptr()
            .wrapping_add(word * 4)
            .cast::<[u8; 4]>();
        // SAFETY: as in write_dbrec: non-null, in bounds, alignment 1; a
        // read-only volatile view, no reference.
        u32::from_be_bytes(unsafe { devmem::read_only(p) }.read())
    }

    /// Requests a completion event: `arm = (arm_sn & 3) << 28 | cmd | (ci &
    /// 0xffffff)` with cmd = [`CQ_DB_REQ_NOT_SOL`] when `solicited_only`,
    /// else [`CQ_DB_REQ_NOT`]; stores BE32(arm) in the ARM word of the
    /// record, then one 64-bit big-endian MMIO write of `arm << 32 | cqn`
    /// at UAR + 0x20: the record store, [`platform::mmio_wc_start`] (it
    /// orders the record before the MMIO store, as rdma-core's
    /// `mlx5_arm_cq` does), the doorbell, then the UAR's flush
    /// (`mmio_flush_writes`). [ref §4.5](crate::reference).
    pub fn arm<U: Uar + ?Sized>(&mut self, solicited_only: bool, uar: &mut U) {
        let sn = self.arm_sn & 3;
        let cmd = if solicited_only {
            CQ_DB_REQ_NOT_SOL
        } else {
            CQ_DB_REQ_NOT
        };
        let arm = (sn << 28) | cmd | (self.ci & 0x00ff_ffff);
        self.write_dbrec(DBREC_ARM, arm);
        platform::mmio_wc_start();
        let v = ((arm as u64) << 32) | self.cqn as u64;
        uar.write64(platform::CQ_DOORBELL, v.to_be_bytes());
        uar.flush();
    }
}
