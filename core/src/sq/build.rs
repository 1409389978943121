//! The WQE builder: [`SqRing::build`], the one builder every post path
//! uses, with the operation segments and inline data it writes through
//! the ring's store primitives. [ref §1.5, §1.7](crate::reference).

use super::ring::SqRing;
use super::{MwBind, SendFlags, SendOp, SendWr};
use crate::sge::{len_key, len_of, Sge};
use crate::wqe::{
    AtomicSeg, Be32, Be64, FmCeSe, InlineHdr, Opcode, RaddrSeg, EXTENDED_UD_AV, SEND_WQE_SHIFT,
};
use static_assertions::const_assert_eq;

// `build` moves the WR's SIGNALED and SOLICITED flags into the `fm_ce_se`
// bits they stand for with one shift each.
const_assert_eq!(
    (SendFlags::SIGNALED.bits() << 2) as u8,
    FmCeSe::CQ_UPDATE.bits()
);
const_assert_eq!(
    (SendFlags::SOLICITED.bits() >> 1) as u8,
    FmCeSe::SOLICITED.bits()
);

impl SqRing {
    /// Builds the WQE of `wr` at WQEBB counter `cur` — the one builder
    /// every post path uses — and returns the WQEBBs it takes.
    ///
    /// # Safety
    /// As `SendQueue::post_send_raw`; the checks of `post_engine` passed
    /// for `wr` (its WQE fits the slot the geometry reserves per WR) and
    /// the queue has room for it.
    #[inline(always)]
    pub(super) unsafe fn build<F: Fn(&Sge) -> *const u8>(
        self,
        wr: &SendWr<'_>,
        opcode: u8,
        fm_base: u8,
        cur: u32,
        cpu_of: &F,
    ) -> u32 {
        // The fence and CQ_UPDATE bits the engine decided, plus the WR's
        // own CE and SE (formed here, where the segment is stored).
        let fm_ce_se = fm_base
            | ((wr.flags.bits() & SendFlags::SIGNALED.bits()) << 2) as u8
            | ((wr.flags.bits() & SendFlags::SOLICITED.bits()) >> 1) as u8;
        let ctrl_off = ((cur & self.mask) as usize) << SEND_WQE_SHIFT;
        let mut off = ctrl_off + 16;
        let mut ds: u32 = 1;

        // SAFETY: every store below (here and in `put_op_segments`) stays
        // inside the ring: segments are 16-byte multiples written at
        // 16-aligned offsets and wrapped at the ring end, and the WQE is at
        // most `max_ds` units, which fit the slot the geometry reserves per
        // WR (checked before `build`). The remote-address and atomic
        // segments start inside the WQE's first WQEBB (at most 48 bytes
        // after the control segment), so they need no wrap; the datagram
        // segment and the UMR segments are followed by an explicit wrap, and
        // every data segment is wrapped (masked) where it could reach the
        // ring end.
        unsafe {
            let imm = self.put_op_segments(wr, &mut off, &mut ds);

            // The data part stays inline here (hot path, measured: moving
            // the multi-SGE stores into a helper moved the callgrind post
            // figures by 1-2 Ir).
            if wr.flags.contains(SendFlags::INLINE) && !wr.sgl.is_empty() {
                ds += self.copy_inline(off, wr.sgl, cpu_of);
            } else {
                let atomic = opcode == Opcode::AtomicCs.bits() || opcode == Opcode::AtomicFa.bits();
                // The ring is a power of two: masking the offset is the
                // wrap rule (an offset at the end becomes 0).
                let end_mask = self.bytes - 1;
                if let [s] = wr.sgl {
                    // One SGE: no loop; no wrap when it starts in the
                    // WQE's first WQEBB (the common shapes).
                    let lk = len_key(s);
                    if len_of(lk) != 0 {
                        // (`off` may have wrapped below `ctrl_off` after a
                        // datagram segment: then it is masked, harmlessly.)
                        if off.wrapping_sub(ctrl_off) >= 64 {
                            off &= end_mask;
                        }
                        self.put_sge(off, lk, s.addr, atomic);
                        ds += 1;
                        // Finished here, so the DS count (and the WQEBBs
                        // it takes) stay constants for a fixed operation.
                        self.put_ctrl(ctrl_off, cur, opcode, ds, fm_ce_se, imm);
                        return (ds + 3) >> 2;
                    }
                } else if wr.sgl.len() * 16 <= self.bytes.saturating_sub(off) {
                    // The data segments end at or before the ring end:
                    // no wrap between them, and the DS count follows from
                    // how far they reach.
                    let start = off;
                    for s in wr.sgl {
                        let lk = len_key(s);
                        if len_of(lk) != 0 {
                            self.put_sge(off, lk, s.addr, atomic);
                            off += 16;
                        }
                    }
                    ds += ((off - start) >> 4) as u32;
                } else {
                    for s in wr.sgl {
                        let lk = len_key(s);
                        if len_of(lk) != 0 {
                            off &= end_mask;
                            self.put_sge(off, lk, s.addr, atomic);
                            off += 16;
                            ds += 1;
                        }
                    }
                }
            }

            self.put_ctrl(ctrl_off, cur, opcode, ds, fm_ce_se, imm);
        }
        (ds + 3) >> 2
    }

    /// Stores the segments between the control segment and the data part
    /// of `wr`'s WQE from ring offset `*off` (the datagram segment on a UD
    /// QP, then the remote-address, atomic or UMR segments its operation
    /// has), advancing `*off` and `*ds` past them; returns the control
    /// segment's `imm` (immediate data, an rkey, or 0).
    ///
    /// # Safety
    /// As `build`: `*off` is the offset right after the control segment of
    /// a WQE that fits the slot the geometry reserves per WR.
    #[inline(always)]
    unsafe fn put_op_segments(self, wr: &SendWr<'_>, off: &mut usize, ds: &mut u32) -> u32 {
        let mut imm = 0u32;
        // SAFETY: the stores stay inside the ring (see `build`): the
        // remote-address and atomic segments start inside the WQE's first
        // WQEBB (at most 48 bytes after the control segment), so they need
        // no wrap; the datagram segment and the UMR segments are followed
        // by an explicit wrap.
        unsafe {
            if self.datagram {
                if let Some(ud) = wr.ud {
                    let mut av = *ud.av;
                    av.dqp_dct = Be32::new(ud.remote_qpn | EXTENDED_UD_AV);
                    av.key[..4].copy_from_slice(&ud.remote_qkey.to_be_bytes());
                    self.put(*off, av);
                    *off = self.wrap(*off + 48);
                    *ds += 3;
                }
            }
            match wr.op {
                SendOp::Send => {}
                SendOp::SendImm { imm: v } => imm = v,
                SendOp::SendInv { invalidate_rkey } => imm = invalidate_rkey,
                SendOp::Write { remote_addr, rkey } | SendOp::Read { remote_addr, rkey } => {
                    self.put(*off, RaddrSeg::new(remote_addr, rkey));
                    *off += 16;
                    *ds += 1;
                }
                SendOp::WriteImm {
                    remote_addr,
                    rkey,
                    imm: v,
                } => {
                    imm = v;
                    self.put(*off, RaddrSeg::new(remote_addr, rkey));
                    *off += 16;
                    *ds += 1;
                }
                SendOp::CompSwap {
                    remote_addr,
                    rkey,
                    compare,
                    swap,
                } => {
                    self.put(*off, RaddrSeg::new(remote_addr, rkey));
                    self.put(
                        *off + 16,
                        AtomicSeg {
                            swap_add: Be64::new(swap),
                            compare: Be64::new(compare),
                        },
                    );
                    *off += 32;
                    *ds += 2;
                }
                SendOp::FetchAdd {
                    remote_addr,
                    rkey,
                    add,
                } => {
                    self.put(*off, RaddrSeg::new(remote_addr, rkey));
                    // compare is not written for fetch-and-add (ref §1.5)
                    self.put(*off + 16, Be64::new(add));
                    *off += 32;
                    *ds += 2;
                }
                SendOp::LocalInv { invalidate_rkey } => {
                    imm = invalidate_rkey;
                    self.umr(off, ds, &MwBind::UNBIND);
                }
                SendOp::BindMw { mw_rkey, bind } => {
                    imm = mw_rkey;
                    self.umr(off, ds, &bind);
                }
            }
        }
        imm
    }

    /// Copies an inline payload after its 4-byte header at `off`, splitting
    /// at the ring end; returns the DS units used (0 for an empty payload).
    ///
    /// # Safety
    /// As `build`: the payload fits the slot; `cpu_of(s)` is readable.
    #[inline(never)]
    unsafe fn copy_inline<F: Fn(&Sge) -> *const u8>(
        self,
        off: usize,
        sgl: &[Sge],
        cpu_of: &F,
    ) -> u32 {
        let mut p = off + 4;
        let mut total = 0u32;
        // SAFETY: the caller guarantees room for the payload in the ring
        // (split at the end) and readable sources.
        unsafe {
            for s in sgl {
                if s.length == 0 {
                    continue;
                }
                let mut src = cpu_of(s);
                let mut len = s.length as usize;
                total += s.length;
                let room = self.bytes - p;
                if len > room {
                    core::ptr::copy_nonoverlapping(src, self.base.as_ptr().add(p), room);
                    src = src.add(room);
                    len -= room;
                    p = 0;
                }
                core::ptr::copy_nonoverlapping(src, self.base.as_ptr().add(p), len);
                p += len;
            }
            if total == 0 {
                return 0;
            }
            self.put(off, InlineHdr::new(total));
        }
        (total + 4).div_ceil(16)
    }
}
