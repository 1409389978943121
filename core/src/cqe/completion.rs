//! [`Completion`]: the lean, 24-byte completion record the fast poll path
//! ([`CompletionQueue::poll_completions`](crate::cq::CompletionQueue::poll_completions))
//! writes, beside the full verbs-shaped [`WorkCompletion`].
//!
//! It holds what a data plane acts on: which WR finished (`wr_id`), how
//! (status, opcode, vendor syndrome), how many bytes, on which QP, and the
//! immediate / invalidated rkey with their flags. The UD/GSI address fields
//! of a responder completion (`src_qp`, `sl`, `slid`, `pkey_index`,
//! `dlid_path_bits`) are not carried: poll with
//! [`CompletionQueue::poll`](crate::cq::CompletionQueue::poll) for those.
//! [ref §5.6–§5.8](crate::reference).

use super::{WcFlags, WcOpcode, WcStatus, WorkCompletion, WrittenFields};
use bitflags::bitflags;
use core::fmt;

bitflags! {
    /// Flags of a [`Completion`]. The low four bits are the [`WcFlags`]
    /// the poller can report, with the same values; bit 7 is lean-only.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct CompletionFlags: u8 {
        /// A GRH is present ([`WcFlags::GRH`]).
        const GRH = 1 << 0;
        /// [`Completion::imm`] holds immediate data ([`WcFlags::WITH_IMM`]).
        const WITH_IMM = 1 << 1;
        /// IP checksum verified ([`WcFlags::IP_CSUM_OK`]).
        const IP_CSUM_OK = 1 << 2;
        /// [`Completion::imm`] holds the invalidated rkey
        /// ([`WcFlags::WITH_INV`]).
        const WITH_INV = 1 << 3;
        /// The CQE completes no work request (RESIZE_CQ, NO_PACKET,
        /// SIG_ERR or an undefined opcode: the full path writes only
        /// `qp_num` and `wc_flags` then): `wr_id`, status and opcode are
        /// zero and mean nothing.
        const NO_WR = 1 << 7;
    }
}

impl CompletionFlags {
    /// The [`WcFlags`] bits a `Completion` carries.
    const WC_MASK: u32 = WcFlags::GRH.bits()
        | WcFlags::WITH_IMM.bits()
        | WcFlags::IP_CSUM_OK.bits()
        | WcFlags::WITH_INV.bits();

    /// The lean flags of verbs flags `f` (tag-matching flags, which this
    /// poller never reports, are dropped).
    #[inline(always)]
    pub const fn from_wc(f: WcFlags) -> Self {
        CompletionFlags::from_bits_retain((f.bits() & Self::WC_MASK) as u8)
    }

    /// The verbs flags of these (without [`Self::NO_WR`]).
    #[inline(always)]
    pub const fn wc_flags(self) -> WcFlags {
        WcFlags::from_bits_retain(self.bits() as u32 & Self::WC_MASK)
    }
}

/// One completion, lean: 24 bytes (three 8-byte words, written with three
/// stores), every field read from the CQE once. Built by the poller or
/// from a [`WorkCompletion`] (`From`); read through its accessors.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Completion {
    wr_id: u64,
    /// `byte_len | qp_num << 32`.
    len_qpn: u64,
    /// `imm | status << 32 | opcode << 40 | flags << 48 | vendor_err << 56`.
    rest: u64,
}

static_assertions::assert_eq_size!(Completion, [u64; 3]);

impl Completion {
    /// A completion from its parts. `imm` is the immediate exactly as
    /// stored in the CQE (see [`Self::imm`]) or the invalidated rkey.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub const fn new(
        wr_id: u64,
        status: WcStatus,
        opcode: WcOpcode,
        byte_len: u32,
        qp_num: u32,
        imm: u32,
        flags: CompletionFlags,
        vendor_err: u8,
    ) -> Self {
        // Every WcStatus (0..=23) and WcOpcode (0..=137) value fits in a
        // byte: the accessors give them back unchanged.
        Completion::from_words(
            wr_id,
            Self::len_qpn(byte_len, qp_num),
            Self::rest(
                imm,
                status.as_raw() as u8,
                opcode.as_raw() as u8,
                flags,
                vendor_err,
            ),
        )
    }

    /// The second word of a completion of `byte_len` bytes on `qp_num`.
    #[inline(always)]
    pub(crate) const fn len_qpn(byte_len: u32, qp_num: u32) -> u64 {
        byte_len as u64 | (qp_num as u64) << 32
    }

    /// The third word. `status` and `opcode` must be `as_raw()` values of
    /// a [`WcStatus`] / [`WcOpcode`] (others read back as `GeneralErr` /
    /// `Send`).
    #[inline(always)]
    pub(crate) const fn rest(
        imm: u32,
        status: u8,
        opcode: u8,
        flags: CompletionFlags,
        vendor_err: u8,
    ) -> u64 {
        imm as u64
            | (status as u64) << 32
            | (opcode as u64) << 40
            | (flags.bits() as u64) << 48
            | (vendor_err as u64) << 56
    }

    /// A completion from its three words ([`Self::len_qpn`],
    /// [`Self::rest`]).
    #[inline(always)]
    pub(crate) const fn from_words(wr_id: u64, len_qpn: u64, rest: u64) -> Self {
        Completion {
            wr_id,
            len_qpn,
            rest,
        }
    }

    /// The work request id (0 with [`CompletionFlags::NO_WR`]).
    #[inline(always)]
    pub const fn wr_id(&self) -> u64 {
        self.wr_id
    }
    /// Completion status.
    #[inline(always)]
    pub const fn status(&self) -> WcStatus {
        match WcStatus::from_raw((self.rest >> 32) as u8 as u32) {
            Some(s) => s,
            None => WcStatus::GeneralErr,
        }
    }
    /// `status() == Success`, without decoding the status.
    #[inline(always)]
    pub const fn is_success(&self) -> bool {
        (self.rest >> 32) as u8 == WcStatus::Success as u8
    }
    /// The operation ([`WcOpcode::Send`] where the full path leaves
    /// `wc.opcode` unwritten: error completions, a failed inline scatter,
    /// send opcodes outside the [ref §5.7](crate::reference) table).
    #[inline(always)]
    pub const fn opcode(&self) -> WcOpcode {
        match WcOpcode::from_raw((self.rest >> 40) as u8 as u32) {
            Some(o) => o,
            None => WcOpcode::Send,
        }
    }
    /// Bytes transferred: responder byte count, RDMA read length, 8 for
    /// atomics; 0 otherwise.
    #[inline(always)]
    pub const fn byte_len(&self) -> u32 {
        self.len_qpn as u32
    }
    /// Local QP number as the CQE states it (`sop_drop_qpn & 0xffffff`).
    #[inline(always)]
    pub const fn qp_num(&self) -> u32 {
        (self.len_qpn >> 32) as u32
    }
    /// The verbs `imm_data`/`invalidated_rkey` union
    /// ([`WorkCompletion::imm_union`]): with [`CompletionFlags::WITH_IMM`]
    /// the immediate exactly as stored (`imm().to_ne_bytes()` are the wire
    /// bytes), with [`CompletionFlags::WITH_INV`] the invalidated rkey in
    /// host order, else 0.
    #[inline(always)]
    pub const fn imm(&self) -> u32 {
        self.rest as u32
    }
    /// The immediate (as stored, see [`Self::imm`]) if the completion
    /// carries one.
    #[inline(always)]
    pub const fn imm_data(&self) -> Option<u32> {
        if self.flags().contains(CompletionFlags::WITH_IMM) {
            Some(self.imm())
        } else {
            None
        }
    }
    /// The invalidated rkey if the completion carries one.
    #[inline(always)]
    pub const fn invalidated_rkey(&self) -> Option<u32> {
        if self.flags().contains(CompletionFlags::WITH_INV) {
            Some(self.imm())
        } else {
            None
        }
    }
    /// Flags.
    #[inline(always)]
    pub const fn flags(&self) -> CompletionFlags {
        CompletionFlags::from_bits_retain((self.rest >> 48) as u8)
    }
    /// Vendor syndrome of an error completion (0 otherwise).
    #[inline(always)]
    pub const fn vendor_err(&self) -> u8 {
        (self.rest >> 56) as u8
    }
    /// Whether the completion retired a work request (not
    /// [`CompletionFlags::NO_WR`]).
    #[inline(always)]
    pub const fn completes_wr(&self) -> bool {
        !self.flags().contains(CompletionFlags::NO_WR)
    }
}

impl fmt::Debug for Completion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completion")
            .field("wr_id", &self.wr_id())
            .field("status", &self.status())
            .field("opcode", &self.opcode())
            .field("byte_len", &self.byte_len())
            .field("qp_num", &format_args!("{:#x}", self.qp_num()))
            .field("imm", &format_args!("{:#x}", self.imm()))
            .field("flags", &self.flags())
            .field("vendor_err", &format_args!("{:#x}", self.vendor_err()))
            .finish()
    }
}

impl From<&WorkCompletion> for Completion {
    /// The lean view of a full completion: the shared fields as they are
    /// (unwritten ones keep their value, `Default` when the poller filled
    /// it), [`WorkCompletion::imm_union`] as `imm`, the vendor syndrome
    /// saturated to a byte, [`CompletionFlags::NO_WR`] when no `wr_id` was
    /// written. This is exactly what
    /// [`poll_completions`](crate::cq::CompletionQueue::poll_completions)
    /// writes for the CQE [`poll`](crate::cq::CompletionQueue::poll) turned
    /// into `wc`.
    fn from(wc: &WorkCompletion) -> Self {
        let mut flags = CompletionFlags::from_wc(wc.wc_flags);
        if !wc.written.contains(WrittenFields::WR_ID) {
            flags |= CompletionFlags::NO_WR;
        }
        Completion::new(
            wc.wr_id,
            wc.status,
            wc.opcode,
            wc.byte_len,
            wc.qp_num,
            wc.imm_union(),
            flags,
            u8::try_from(wc.vendor_err).unwrap_or(u8::MAX),
        )
    }
}

impl From<WorkCompletion> for Completion {
    /// As `From<&WorkCompletion>`.
    #[inline]
    fn from(wc: WorkCompletion) -> Self {
        Completion::from(&wc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_and_opcode_round_trips() {
        for &s in WcStatus::ALL {
            for &o in WcOpcode::ALL {
                let c = Completion::new(1, s, o, 2, 3, 4, CompletionFlags::GRH, 5);
                assert_eq!((c.status(), c.opcode()), (s, o));
                assert_eq!(c.is_success(), s == WcStatus::Success);
            }
        }
    }

    #[test]
    fn from_work_completion() {
        let mut wc = WorkCompletion {
            wr_id: 9,
            opcode: WcOpcode::Recv,
            byte_len: 100,
            qp_num: 0x1234,
            invalidated_rkey: 0xabcd,
            imm_data: 7,
            wc_flags: WcFlags::WITH_INV | WcFlags::GRH | WcFlags::TM_MATCH,
            vendor_err: 0x1ff,
            written: WrittenFields::WR_ID,
            ..WorkCompletion::default()
        };
        let c = Completion::from(&wc);
        assert_eq!((c.wr_id(), c.byte_len(), c.qp_num()), (9, 100, 0x1234));
        assert_eq!(c.invalidated_rkey(), Some(0xabcd));
        assert_eq!(c.imm_data(), None);
        assert_eq!(c.flags(), CompletionFlags::WITH_INV | CompletionFlags::GRH);
        assert_eq!(c.flags().wc_flags(), WcFlags::WITH_INV | WcFlags::GRH);
        assert_eq!(c.vendor_err(), 0xff);
        assert!(c.completes_wr());
        wc.written = WrittenFields::COMMON;
        assert!(!Completion::from(wc).completes_wr());
    }
}
