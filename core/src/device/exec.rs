//! Command execution: posting a built command on a command-queue slot,
//! waiting for it (serving events meanwhile) and reading its output, and
//! the raw-command entry points [`Device::run`] / [`Device::input`]
//! ([ref §7.3, §7.7](crate::reference)).

use super::{Device, UarMap};
use crate::cmd::ops::Req;
use crate::cmd::queue::{SlotKind, MAX_MSG};
use crate::cmd::{Bar0, Clock, CmdError};
use crate::platform::DmaAllocator;

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    pub(super) fn exec(&mut self, r: Req) -> Result<usize, CmdError> {
        self.exec_slot(SlotKind::Regular, r)
    }

    pub(super) fn exec_buf(&mut self, r: Req, input: &[u8]) -> Result<usize, CmdError> {
        let n = r.in_len.min(input.len());
        self.inb[..n].copy_from_slice(&input[..n]);
        self.exec(r)
    }

    /// Posts the command in the slot's input buffer, waits (serving page
    /// requests from the async EQ while a regular command waits), and reads
    /// the output into the slot's output buffer ([ref §7.3, §7.7](crate::reference)).
    pub(super) fn exec_slot(&mut self, slot: SlotKind, r: Req) -> Result<usize, CmdError> {
        let input = match slot {
            SlotKind::Regular => &self.inb[..r.in_len.min(MAX_MSG)],
            SlotKind::Pages => &self.pgin[..r.in_len.min(MAX_MSG)],
        };
        self.cmdq.post(&mut self.bar, slot, input, r.out_len)?;
        let start = self.clock.now_us();
        loop {
            if self.cmdq.done(slot) {
                break;
            }
            if slot == SlotKind::Regular {
                self.serve_events();
                if self.cmdq.done(slot) {
                    break;
                }
            }
            let waited = self.clock.now_us().saturating_sub(start);
            if waited >= self.cfg.cmd_timeout_us {
                self.cmdq.abandon(slot);
                return Err(CmdError::Timeout {
                    opcode: r.opcode,
                    waited_us: waited,
                });
            }
            self.clock.delay_us(self.cfg.cmd_poll_us.max(1));
        }
        let out = match slot {
            SlotKind::Regular => &mut self.outb[..r.out_len.min(MAX_MSG)],
            SlotKind::Pages => &mut self.pgout[..r.out_len.min(MAX_MSG)],
        };
        self.cmdq.complete(slot, out)
    }

    /// Runs an arbitrary prepared command (input built with an [`ops`](crate::cmd::ops)
    /// builder into the buffer returned by [`Device::input`]) and returns
    /// the output bytes.
    ///
    /// # Safety
    /// The driver tracks every object, page and state it made the device
    /// hold and frees DMA memory on that basis; a raw command bypasses all
    /// of it. The caller must ensure the command does not:
    /// * destroy or modify an object this `Device` created (QP, CQ, SRQ,
    ///   memory key, PD, UAR, EQ), nor change a QP's state: the driver's
    ///   view (e.g. [`QpHandle::state`](super::QpHandle::state), the CQ load table) would be wrong,
    ///   and a later destroy could free memory the device still uses or act
    ///   on an object number firmware has since given to someone else;
    /// * create an object, give pages (MANAGE_PAGES GIVE) or name any DMA
    ///   address unless that memory stays allocated, and is used by nothing
    ///   else, for as long as the device may access it (the device will
    ///   write there);
    /// * change the HCA life cycle (ENABLE/DISABLE/INIT/TEARDOWN_HCA),
    ///   take pages back (MANAGE_PAGES TAKE) or change capabilities
    ///   (SET_HCA_CAP): the page pool and command queue would be freed or
    ///   kept on a false premise.
    ///
    /// Queries, NOP and commands firmware is expected to refuse (unknown
    /// opcodes, unknown object numbers: the output is then an error) are
    /// fine, as long as a command that unexpectedly succeeds would also
    /// meet the rules above. Commands that only change state the driver
    /// caches without relying on it for memory safety (e.g. the vport's
    /// `roce_en`) are allowed; the cached view may then be stale.
    ///
    /// It is `unsafe` to call (this does not compile):
    ///
    /// ```compile_fail,E0133
    /// use bareverbs::cmd::{ops::Req, Bar0, Clock};
    /// use bareverbs::device::{Device, HwQpState, QpHandle, UarMap};
    /// use bareverbs::platform::DmaAllocator;
    /// fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    ///     d: &mut Device<B, C, A>,
    ///     q: &mut QpHandle,
    ///     r: Req,
    /// ) {
    ///     let _ = d.run(r);
    /// }
    /// ```
    ///
    /// while the same call in an `unsafe` block, under the contract, does:
    ///
    /// ```
    /// use bareverbs::cmd::{ops::Req, Bar0, Clock};
    /// use bareverbs::device::{Device, HwQpState, QpHandle, UarMap};
    /// use bareverbs::platform::DmaAllocator;
    /// fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    ///     d: &mut Device<B, C, A>,
    ///     q: &mut QpHandle,
    ///     r: Req,
    /// ) {
    ///     // SAFETY: (the caller's reasoning under the contract above)
    ///     let _ = unsafe { d.run(r) };
    ///     let _ = q;
    /// }
    /// ```
    pub unsafe fn run(&mut self, r: Req) -> Result<&[u8], CmdError> {
        let n = self.exec(r)?;
        Ok(&self.outb[..n])
    }
    /// The regular-slot input buffer, for [`Device::run`].
    ///
    /// Safe on its own: every command the driver sends is rebuilt from
    /// scratch over the first `in_len` bytes by its builder (which zeroes
    /// them first), so bytes left here never reach the device except
    /// through the `unsafe` [`Device::run`] / [`Device::modify_unchecked`].
    pub fn input(&mut self) -> &mut [u8; MAX_MSG] {
        &mut self.inb
    }
}
