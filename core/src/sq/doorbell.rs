//! The doorbell sequence of a send queue: the doorbell record, the 8-byte
//! doorbell and the BlueFlame copy. [ref §4.3](crate::reference).

use super::{SendQueue, SqSlots};
use crate::devmem;
use crate::platform::{self, Uar};
use crate::wqe::{CtrlSeg, DS_BYTES, MAX_DS, SEND_WQE_BB, SEND_WQE_SHIFT};

/// Offset of the DS byte (bits 5:0 of `qpn_ds`, its last byte) in a
/// control segment. [ref §1.2](crate::reference).
const DS_BYTE: usize = core::mem::offset_of!(CtrlSeg, qpn_ds) + 3;

impl<U: Uar, S: SqSlots> SendQueue<U, S> {
    #[inline(always)]
    pub(super) fn write_dbrec(&mut self, value: u32) {
        // SAFETY: dbrec is 8 bytes of DMA memory this queue owns (contract
        // of `new`, borrowed mutably here), non-null and 4-byte aligned
        // (checked by `new`); word 1 (bytes 4..8) is the send counter,
        // stored big-endian as one word. A write-only volatile view: the
        // device reads it asynchronously.
        unsafe { devmem::write_only(self.dbrec.as_ptr().add(4).cast::<u32>()) }
            .write(u32::from_ne_bytes(value.to_be_bytes()))
    }

    /// The doorbell sequence of [ref §4.3](crate::reference) for `nreq` WRs whose last WQE
    /// starts at WQEBB counter `last_cur` (`cur_post` and `head` already
    /// count them). `single_inline` tells, for a single-WR post, whether
    /// it was inline (asked only when a BlueFlame copy is possible).
    #[inline(always)]
    pub(crate) fn ring_doorbell(
        &mut self,
        nreq: u32,
        last_cur: u32,
        single_inline: impl FnOnce() -> bool,
    ) {
        platform::to_device_barrier();
        self.write_dbrec(self.cur_post & 0xffff);
        platform::mmio_wc_start();
        let bf = self.cfg.bf;
        let reg = bf.reg_offset + self.bf_offset;
        let ctrl_off = ((last_cur & self.ring.mask) as usize) << SEND_WQE_SHIFT;
        if bf.enabled && bf.buf_size != 0 && nreq == 1 && (bf.prefer || single_inline()) {
            // SAFETY: byte 7 of the control segment at `ctrl_off`, inside
            // the ring this queue owns; a raw read, no reference.
            let ds =
                unsafe { self.ring.base.as_ptr().add(ctrl_off + DS_BYTE).read() } as u32 & MAX_DS;
            if ds > 1 && (ds as usize) <= bf.buf_size / 16 {
                self.blueflame_copy(reg, ctrl_off, ds);
                self.uar.flush();
                self.bf_offset ^= bf.buf_size;
                return;
            }
        }
        let mut first = [0u8; 8];
        // SAFETY: the control segment of the last WQE lies inside the
        // ring at `ctrl_off`.
        unsafe {
            core::ptr::copy_nonoverlapping(
                self.ring.base.as_ptr().add(ctrl_off),
                first.as_mut_ptr(),
                8,
            )
        };
        self.uar.write64(reg, first);
        self.uar.flush();
        self.bf_offset ^= bf.buf_size;
    }
    /// Copies the single WQE of `ds` units at `ctrl_off` into the
    /// BlueFlame register at `reg` in 64-byte chunks, wrapping at the ring
    /// end.
    #[inline(never)]
    fn blueflame_copy(&mut self, reg: usize, ctrl_off: usize, ds: u32) {
        let bytes = (ds as usize * DS_BYTES).div_ceil(SEND_WQE_BB) * SEND_WQE_BB;
        let mut src = ctrl_off;
        let mut dst = reg;
        let mut chunk = [0u8; SEND_WQE_BB];
        for _ in 0..bytes / SEND_WQE_BB {
            // SAFETY: `src` is a 64-aligned offset inside the ring (it
            // wraps to 0 at the end); the chunk is copied out of DMA
            // memory with a raw read, no reference to the ring.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    self.ring.base.as_ptr().add(src),
                    chunk.as_mut_ptr(),
                    SEND_WQE_BB,
                )
            };
            self.uar.write_bf(dst, &chunk);
            src = self.ring.wrap(src + SEND_WQE_BB);
            dst += SEND_WQE_BB;
        }
    }
}
