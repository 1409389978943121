//! Human-readable CQE dump: 16-byte hex lines plus decoded fields.

use super::{Cqe64, CqeFormat, CqeOpcode};
use core::fmt;

/// Displays a CQE as four `+OO: xxxxxxxx …` hex lines (the layout of the
/// vector files) followed by its decoded fields. Never panics.
#[derive(Clone, Copy, Debug)]
pub struct CqeDump<'a>(pub &'a Cqe64);

impl fmt::Display for CqeDump<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.0;
        for (i, line) in c.as_bytes().chunks(16).enumerate() {
            write!(f, "+{:02x}:", i * 16)?;
            for w in line.chunks(4) {
                f.write_str(" ")?;
                for b in w {
                    write!(f, "{b:02x}")?;
                }
            }
            writeln!(f)?;
        }
        let op = c.opcode();
        writeln!(
            f,
            "op_own={:#04x} opcode={} ({}) format={} se={} owner={}",
            c.op_own(),
            op,
            CqeOpcode::name_of(op),
            c.format(),
            c.se(),
            c.owner()
        )?;
        writeln!(
            f,
            "qpn={:#08x} wqe_opcode={:#04x} wqe_counter={} srqn_uidx={:#010x} byte_cnt={}",
            c.qpn(),
            c.send_wqe_opcode(),
            c.wqe_counter(),
            c.srqn_uidx(),
            c.byte_cnt()
        )?;
        if c.is_error() {
            let e = c.as_err();
            write!(
                f,
                "syndrome={:#04x} ({}) -> {} vendor_err_synd={:#04x}",
                e.syndrome(),
                e.syndrome_kind().name(),
                e.status().name(),
                e.vendor_err_synd()
            )
        } else {
            write!(
                f,
                "imm_inval_pkey={:#010x} flags_rqpn={:#010x} (src_qp={:#08x} sl={} grh={}) slid={:#06x} ml_path={:#04x} timestamp={:#x}",
                c.imm_inval_pkey(),
                c.flags_rqpn(),
                c.src_qp(),
                c.sl(),
                c.grh(),
                c.slid(),
                c.ml_path(),
                c.timestamp()
            )?;
            if c.format_kind() == CqeFormat::Compressed {
                write!(f, "\ncompressed title: {} mini CQEs follow", c.byte_cnt())?;
            }
            Ok(())
        }
    }
}
