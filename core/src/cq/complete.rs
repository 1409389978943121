//! One owned CQE → a work completion: requester, responder and error
//! CQEs, checked through the resolver, and inline scatter
//! ([ref §5.5–§5.8](crate::reference)).

use super::error::PollError;
use super::resolver::WrResolver;
use super::CompletionQueue;
use crate::cqe::{
    req_completion, Cqe64, CqeFormat, CqeSize, WcFlags, WcOpcode, WcStatus, WorkCompletion,
    WrittenFields, CQE128_SIZE, CQE64_SIZE,
};
use crate::devmem;

impl<const N: usize> CompletionQueue<N> {
    /// Turns one owned CQE into a completion. `p` is its cqe64 in the ring
    /// (used only for inline-scatter-64 data). A CQE the resolver refuses
    /// is an error (`wc` is then garbage).
    #[inline(always)]
    pub(super) fn complete<R: WrResolver + ?Sized>(
        &self,
        cqe: &Cqe64,
        p: *const u8,
        r: &mut R,
        wc: &mut WorkCompletion,
    ) -> Result<(), PollError> {
        *wc = WorkCompletion {
            qp_num: cqe.qpn(),
            written: WrittenFields::COMMON,
            ..WorkCompletion::default()
        };
        let qp = if self.cqe_version == 1 {
            cqe.uidx()
        } else {
            cqe.qpn()
        };
        match cqe.opcode() {
            0 => {
                let mut status = WcStatus::Success;
                if cqe.format() != 0 {
                    status = self.scatter(cqe, p, r, qp, true);
                }
                let d = r
                    .send_done(qp, cqe.wqe_counter())
                    .map_err(|why| PollError::reject(qp, cqe.wqe_counter(), why))?;
                let m = req_completion(cqe.send_wqe_opcode(), d.wr_data, cqe.byte_cnt());
                wc.wr_id = d.wr_id;
                wc.status = status;
                wc.wc_flags = m.flags;
                wc.written |= WrittenFields::WR_ID | WrittenFields::STATUS;
                if let Some(o) = m.opcode {
                    wc.opcode = o;
                    wc.written |= WrittenFields::OPCODE;
                }
                if let Some(b) = m.byte_len {
                    wc.byte_len = b;
                    wc.written |= WrittenFields::BYTE_LEN;
                }
            }
            op @ 1..=4 => {
                let mut status = WcStatus::Success;
                if cqe.format() != 0 {
                    status = self.scatter(cqe, p, r, qp, false);
                }
                let d = r
                    .recv_done(qp, cqe.wqe_counter())
                    .map_err(|why| PollError::reject(qp, cqe.wqe_counter(), why))?;
                wc.wr_id = d.wr_id;
                wc.status = status;
                wc.byte_len = cqe.byte_cnt();
                if status != WcStatus::Success {
                    // The provider returns right after a failed copy.
                    wc.written |=
                        WrittenFields::WR_ID | WrittenFields::STATUS | WrittenFields::BYTE_LEN;
                    return Ok(());
                }
                wc.written |= WrittenFields::WR_ID
                    | WrittenFields::STATUS
                    | WrittenFields::OPCODE
                    | WrittenFields::RESPONDER;
                let raw = cqe.imm_inval_pkey_raw();
                match op {
                    1 => {
                        wc.opcode = WcOpcode::RecvRdmaWithImm;
                        wc.imm_data = u32::from_ne_bytes(raw);
                        wc.wc_flags = WcFlags::WITH_IMM;
                        wc.written |= WrittenFields::IMM_DATA;
                    }
                    2 => wc.opcode = WcOpcode::Recv,
                    3 => {
                        wc.opcode = WcOpcode::Recv;
                        wc.imm_data = u32::from_ne_bytes(raw);
                        wc.wc_flags = WcFlags::WITH_IMM;
                        wc.written |= WrittenFields::IMM_DATA;
                    }
                    _ => {
                        wc.opcode = WcOpcode::Recv;
                        wc.invalidated_rkey = cqe.imm_inval_pkey();
                        wc.wc_flags = WcFlags::WITH_INV;
                        wc.written |= WrittenFields::INVALIDATED_RKEY;
                    }
                }
                wc.src_qp = cqe.src_qp();
                wc.sl = cqe.sl();
                if cqe.grh() != 0 {
                    wc.wc_flags |= WcFlags::GRH;
                }
                wc.slid = cqe.slid();
                wc.dlid_path_bits = cqe.dlid_path_bits();
                wc.pkey_index = cqe.imm_inval_pkey() as u16;
                // L3_OK and L4_OK on an IPv4 packet.
                if d.rx_csum && cqe.ipv4_csum_ok() {
                    wc.wc_flags |= WcFlags::IP_CSUM_OK;
                }
            }
            13 | 14 => return Self::complete_error(cqe, r, qp, wc),
            // RESIZE_CQ, NO_PACKET, SIG_ERR and undefined opcodes complete
            // no work request: counted, only qp_num and wc_flags written.
            _ => {}
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn complete_error<R: WrResolver + ?Sized>(
        cqe: &Cqe64,
        r: &mut R,
        qp: u32,
        wc: &mut WorkCompletion,
    ) -> Result<(), PollError> {
        let e = cqe.as_err();
        let ctr = e.wqe_counter();
        let wr_id = if cqe.opcode() == 13 {
            r.send_done(qp, ctr).map(|d| d.wr_id)
        } else {
            r.recv_done(qp, ctr).map(|d| d.wr_id)
        }
        .map_err(|why| PollError::reject(qp, ctr, why))?;
        wc.wr_id = wr_id;
        wc.status = e.status();
        wc.vendor_err = e.vendor_err_synd() as u32;
        wc.written |= WrittenFields::WR_ID | WrittenFields::STATUS | WrittenFields::VENDOR_ERR;
        Ok(())
    }
    /// Inline scatter (format 1 or 2): hands the data to the resolver.
    /// Format 2 data is the 64 bytes before the cqe64, which exist only with
    /// 128-byte CQEs; on a 64-byte CQ it is treated as empty.
    #[cold]
    #[inline(never)]
    fn scatter<R: WrResolver + ?Sized>(
        &self,
        cqe: &Cqe64,
        p: *const u8,
        r: &mut R,
        qp: u32,
        send: bool,
    ) -> WcStatus {
        let len = if send {
            req_completion(cqe.send_wqe_opcode(), WcOpcode::Send, cqe.byte_cnt())
                .byte_len
                .unwrap_or(cqe.byte_cnt())
        } else {
            cqe.byte_cnt()
        } as usize;
        // As the provider does, `len` bytes are copied from the start of
        // the inline area; here the copy is bounded by the entry (64 bytes
        // of cqe64 for format 1, the whole 128-byte entry for format 2).
        let buf: [u8; CQE128_SIZE];
        let data: &[u8] = match cqe.format_kind() {
            CqeFormat::InlineScatter32 => &cqe.as_bytes()[..len.min(CQE64_SIZE)],
            CqeFormat::InlineScatter64 if self.cqe_size == CqeSize::B128 => {
                let mut b = [0u8; CQE128_SIZE];
                // SAFETY: with 128-byte CQEs the cqe64 is the second half
                // of its entry, so the 64 bytes before `p` are the first
                // half of the same entry, inside the ring; the entry is
                // software-owned (checked before this call). A read-only
                // volatile view of 64 bytes (alignment 1), no reference.
                let front = unsafe { devmem::read_only(p.sub(64).cast::<[u8; 64]>()) }.read();
                b[..64].copy_from_slice(&front);
                b[64..].copy_from_slice(cqe.as_bytes());
                buf = b;
                &buf[..len.min(CQE128_SIZE)]
            }
            _ => &[],
        };
        let ok = if send {
            r.scatter_to_send(qp, cqe.wqe_counter(), data)
        } else {
            r.scatter_to_recv(qp, cqe.wqe_counter(), data)
        };
        if ok {
            WcStatus::Success
        } else {
            WcStatus::LocLenErr
        }
    }
}
