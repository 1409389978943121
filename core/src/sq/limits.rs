//! The checks a send WR passes before anything is written: [`Limits`]
//! (copied out of the queue once per post call) and the DS table they use.

use super::{PostErrorKind, SendFlags, SendOp, SendWr, SqConfig};
use crate::qp::QpType;
use crate::wqe::{Opcode, DS_BYTES, MAX_DS, SEND_WQE_BB};

/// DS units of the control and operation segments, by mlx5 opcode (UMR
/// counts the LOCAL_INV shape; a bind adds its KLM in `check_rare`).
const BASE_DS: [u8; 64] = {
    let mut t = [1u8; 64];
    t[Opcode::RdmaWrite as usize] = 2;
    t[Opcode::RdmaWriteImm as usize] = 2;
    t[Opcode::RdmaRead as usize] = 2;
    t[Opcode::AtomicCs as usize] = 3;
    t[Opcode::AtomicFa as usize] = 3;
    t[Opcode::Umr as usize] = 8;
    t
};

/// What the WR checks need to know about the queue, copied out of it once
/// per post call (so the loop keeps it in registers).
#[derive(Clone, Copy)]
pub(super) struct Limits {
    /// `sgl.len() < sge_lim` ⇔ posting is enabled and within `max_gs`.
    pub(super) sge_lim: usize,
    /// `sgl.len() < quick[opcode]` ⇔ a non-inline WR with that mlx5
    /// opcode passes every check: the opcode is allowed on this QP,
    /// posting is enabled, the SGEs are within `max_gs` and the WQE fits
    /// the slot. 0 for UMR opcodes and on UD QPs (their WRs always take
    /// the full checks).
    pub(super) quick: [u8; 64],
    pub(super) max_gs: u32,
    pub(super) max_ds: u32,
    pub(super) transport_ds: u32,
    pub(super) allowed: u64,
    pub(super) max_inline: u32,
    pub(super) qp_type: QpType,
    pub(super) atomics: bool,
}

impl Limits {
    /// The limits of a queue of `ring_bytes` configured with `cfg`, posting
    /// disabled: the slot the geometry reserves per WR (ring bytes /
    /// `max_post`, whole WQEBBs, at most 1 KiB) bounds the DS count, the QP
    /// type (and `atomics`) the allowed opcodes.
    pub(super) fn new(cfg: &SqConfig, ring_bytes: usize) -> Self {
        let slot_bytes = ((ring_bytes / cfg.max_post as usize) & !63).min(1024) as u32;
        let max_ds = (slot_bytes / 16).min(MAX_DS);
        let bit = |op: Opcode| 1u64 << op.bits();
        let sends = bit(Opcode::Send) | bit(Opcode::SendImm);
        let allowed = match cfg.qp_type {
            QpType::Ud => sends,
            QpType::RawPacket => bit(Opcode::Send),
            QpType::Uc => {
                sends
                    | bit(Opcode::SendInval)
                    | bit(Opcode::RdmaWrite)
                    | bit(Opcode::RdmaWriteImm)
                    | bit(Opcode::Umr)
            }
            QpType::Rc | QpType::XrcSend => {
                sends
                    | bit(Opcode::SendInval)
                    | bit(Opcode::RdmaWrite)
                    | bit(Opcode::RdmaWriteImm)
                    | bit(Opcode::RdmaRead)
                    | bit(Opcode::Umr)
                    | if cfg.atomics {
                        bit(Opcode::AtomicCs) | bit(Opcode::AtomicFa)
                    } else {
                        0
                    }
            }
            QpType::XrcRecv => 0,
        };
        Limits {
            sge_lim: 0,
            quick: [0; 64],
            max_gs: cfg.max_gs,
            max_ds,
            transport_ds: if cfg.qp_type == QpType::Ud { 3 } else { 0 },
            allowed,
            max_inline: cfg.max_inline_data,
            qp_type: cfg.qp_type,
            atomics: cfg.atomics,
        }
    }

    /// Posting enabled (RTS and later) or disabled (RESET/INIT/RTR): sets
    /// the SGE limit and the one-compare bounds derived from it.
    pub(super) fn set_enabled(&mut self, on: bool) {
        self.sge_lim = if on { self.max_gs as usize + 1 } else { 0 };
        let (sge_lim, max_ds, udp) = (self.sge_lim, self.max_ds as usize, self.transport_ds != 0);
        let allowed = self.allowed;
        self.quick = core::array::from_fn(|op| {
            if udp || op == Opcode::Umr as usize || allowed & (1 << op) == 0 {
                0
            } else {
                // At most 64: max_ds <= 63.
                sge_lim.min((max_ds + 1).saturating_sub(BASE_DS[op] as usize)) as u8
            }
        });
    }

    #[cold]
    #[inline]
    pub(super) fn too_many_sges(&self, num: usize) -> PostErrorKind {
        PostErrorKind::TooManySges {
            num,
            max: if self.sge_lim == 0 {
                None
            } else {
                Some(self.max_gs)
            },
        }
    }

    /// Checks that need the opcode; nothing is written yet.
    #[inline(always)]
    pub(super) fn check_late(&self, wr: &SendWr<'_>, opcode: u8) -> Result<(), PostErrorKind> {
        if self.allowed & (1u64 << (opcode & 63)) == 0 {
            return Err(self.not_allowed(wr.op.is_atomic(), wr.op.name()));
        }
        let base_ds = BASE_DS[(opcode & 63) as usize] as u32 + self.transport_ds;
        let data_ds = if wr.flags.contains(SendFlags::INLINE) && !wr.sgl.is_empty() {
            let len: u64 = wr.sgl.iter().map(|s| s.length as u64).sum();
            if len > self.max_inline as u64 {
                return Err(PostErrorKind::InlineTooLarge {
                    len,
                    max: self.max_inline,
                });
            }
            (len as u32 + 4).div_ceil(16)
        } else {
            wr.sgl.len() as u32
        };
        if base_ds + data_ds > self.max_ds || opcode == Opcode::Umr.bits() || self.transport_ds != 0
        {
            let bind_len = match wr.op {
                SendOp::BindMw { bind, .. } => Some(bind.length),
                _ => None,
            };
            return self.check_rare(bind_len, wr.ud.is_some(), base_ds + data_ds);
        }
        Ok(())
    }

    #[cold]
    #[inline]
    fn not_allowed(&self, atomic: bool, op: &'static str) -> PostErrorKind {
        if atomic && !self.atomics && self.qp_type != QpType::Ud {
            PostErrorKind::AtomicsDisabled
        } else {
            PostErrorKind::OpNotAllowed {
                op,
                qp_type: self.qp_type,
            }
        }
    }

    /// Checks of the rarer shapes: UMR WQEs (`bind_len`: a bind's length),
    /// UD destinations, oversize. Takes plain values, not the WR, so the
    /// common path never has to keep the WR in memory for it. Inlined into
    /// the (rarely taken) full-check branch: an out-of-line call that might
    /// unwind would make the compiler keep a batch in memory to drop it.
    #[inline(always)]
    fn check_rare(
        &self,
        bind_len: Option<u64>,
        has_ud: bool,
        mut ds: u32,
    ) -> Result<(), PostErrorKind> {
        if let Some(length) = bind_len {
            if length > 1 << 31 {
                return Err(PostErrorKind::BindTooLong { length });
            }
            if length != 0 {
                ds += 4; // inline KLM
            }
        }
        if self.qp_type == QpType::Ud && !has_ud {
            return Err(PostErrorKind::MissingUdDest);
        }
        if ds > self.max_ds {
            let bytes = (ds * DS_BYTES as u32).next_multiple_of(SEND_WQE_BB as u32);
            return Err(PostErrorKind::WqeTooLarge {
                bytes,
                slot: self.max_ds * DS_BYTES as u32,
            });
        }
        Ok(())
    }
}
