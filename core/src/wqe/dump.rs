//! Human-readable WQE dumps: decoded segment fields followed by 16-byte hex
//! lines grouped by 4 bytes (the layout of the vector files). [ref §1](crate::reference).

use super::parse::{DataEntry, SendWqe, WqeBytes};
use core::fmt;

/// Hex lines of a byte range: `+OFF: xxxxxxxx xxxxxxxx xxxxxxxx xxxxxxxx`.
#[derive(Clone, Copy, Debug)]
pub struct HexLines<'a>(pub WqeBytes<'a>);

impl fmt::Display for HexLines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        let mut off = 0;
        while off < b.len() {
            write!(f, "    +{off:03x}:")?;
            for g in 0..4 {
                f.write_str(" ")?;
                for i in 0..4 {
                    match b.get(off + g * 4 + i) {
                        Some(x) => write!(f, "{x:02x}")?,
                        None => f.write_str("  ")?,
                    }
                }
            }
            if b.is_wrapped() && off < b.parts().0.len() && off + 16 > b.parts().0.len() {
                f.write_str("  (wraps)")?;
            }
            writeln!(f)?;
            off += 16;
        }
        Ok(())
    }
}

struct Hex<'a>(WqeBytes<'a>);
impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for x in self.0.iter() {
            write!(f, "{x:02x}")?;
        }
        Ok(())
    }
}

/// Display adapter for a parsed send WQE: one line per segment with its
/// decoded fields, then the WQE bytes as hex lines.
#[derive(Clone, Copy, Debug)]
pub struct WqeDump<'w, 'a>(pub &'w SendWqe<'a>);

impl fmt::Display for WqeDump<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = self.0;
        write_ctrl(f, w)?;
        write_addressing(f, w)?;
        write_eth(f, w)?;
        write_memory(f, w)?;
        write_umr(f, w)?;
        write_data(f, w)?;
        if !w.opaque.is_empty() {
            writeln!(f, "  undecoded: {} bytes", w.opaque.len())?;
        }
        write!(f, "{}", HexLines(w.bytes))
    }
}

/// The header line and the control segment's fields.
fn write_ctrl(f: &mut fmt::Formatter<'_>, w: &SendWqe<'_>) -> fmt::Result {
    let c = &w.ctrl;
    let fl = c.flags();
    write!(
        f,
        "{} WQE: opcode={:#04x} ({}) opmod={:#04x} wqe_index={} qpn={:#08x} ds={} ({} bytes, {} WQEBB)",
        w.layout.name(),
        c.opcode(),
        super::opcode_name(c.opcode()),
        c.opmod(),
        c.wqe_index(),
        c.qpn(),
        c.ds(),
        w.len(),
        c.wqebbs()
    )?;
    writeln!(f)?;
    write!(f, "  ctrl: fm_ce_se={:#04x} fence=", c.fm_ce_se)?;
    match fl.fence_mode() {
        Ok(m) => f.write_str(m.name())?,
        Err(v) => write!(f, "reserved({v})")?,
    }
    writeln!(
        f,
        " signaled={} solicited={} signature={:#04x} dci_stream={:#06x} imm={:#010x}",
        fl.signaled() as u8,
        fl.solicited() as u8,
        c.signature,
        c.dci_stream_channel_id.get(),
        c.imm.get()
    )?;
    Ok(())
}

/// The XRC and datagram (address vector) segments, when present.
fn write_addressing(f: &mut fmt::Formatter<'_>, w: &SendWqe<'_>) -> fmt::Result {
    if let Some(x) = w.xrc {
        writeln!(f, "  xrc: xrc_srqn={:#010x}", x.xrc_srqn.get())?;
    }
    if let Some(a) = w.av {
        writeln!(
            f,
            "  datagram: qkey={:#010x} dqp_dct={:#010x} (dqpn={:#08x} ext={}) stat_rate_sl={:#04x} fl_mlid={:#04x} rlid={:#06x}",
            a.qkey(),
            a.dqp_dct.get(),
            a.dqpn(),
            a.extended() as u8,
            a.stat_rate_sl,
            a.fl_mlid,
            a.rlid.get()
        )?;
        write!(f, "            rmac=")?;
        for (i, m) in a.rmac.iter().enumerate() {
            write!(f, "{}{m:02x}", if i == 0 { "" } else { ":" })?;
        }
        write!(
            f,
            " tclass={:#04x} hop_limit={} grh={} sgid_index={} flow_label={:#07x} rgid=",
            a.tclass,
            a.hop_limit,
            a.grh() as u8,
            a.sgid_index(),
            a.flow_label()
        )?;
        for x in a.rgid {
            write!(f, "{x:02x}")?;
        }
        writeln!(f)?;
    }
    Ok(())
}

/// The Ethernet padding and Ethernet segment, when present.
fn write_eth(f: &mut fmt::Formatter<'_>, w: &SendWqe<'_>) -> fmt::Result {
    if w.eth_pad.is_some() {
        writeln!(f, "  eth_pad")?;
    }
    if let Some(e) = w.eth {
        writeln!(
            f,
            "  eth: cs_flags={:#04x} mss={} inline_hdr_sz={} inline_hdr={}",
            e.cs_flags,
            e.mss.get(),
            e.inline_hdr_sz.get(),
            Hex(w.eth_inline_hdr)
        )?;
    }
    Ok(())
}

/// The remote-address, atomic and masked-atomic segments, when present.
fn write_memory(f: &mut fmt::Formatter<'_>, w: &SendWqe<'_>) -> fmt::Result {
    if let Some(r) = w.raddr {
        writeln!(
            f,
            "  raddr: raddr={:#018x} rkey={:#010x}",
            r.raddr.get(),
            r.rkey.get()
        )?;
    }
    if let Some(a) = w.atomic {
        writeln!(
            f,
            "  atomic: swap_add={:#018x} compare={:#018x}",
            a.swap_add.get(),
            a.compare.get()
        )?;
    }
    if let Some(a) = w.masked_atomic {
        writeln!(
            f,
            "  masked_atomic: swap_add={:#018x} compare={:#018x} swap_add_mask={:#018x} compare_mask={:#018x}",
            a.swap_add.get(),
            a.compare.get(),
            a.swap_add_mask.get(),
            a.compare_mask.get()
        )?;
    }
    Ok(())
}

/// The UMR control segment, mkey context and KLM list, when present.
fn write_umr(f: &mut fmt::Formatter<'_>, w: &SendWqe<'_>) -> fmt::Result {
    if let Some(u) = w.umr {
        writeln!(
            f,
            "  umr_ctrl: flags={:#04x} klm_octowords={} translation_offset={} mkey_mask={:#018x}",
            u.flags,
            u.klm_octowords.get(),
            u.translation_offset.get(),
            u.mkey_mask.get()
        )?;
    }
    if let Some(m) = w.mkey {
        writeln!(
            f,
            "  mkey_context: free={:#04x} access_flags={:#04x} qpn={:#08x} mkey={:#04x} flags_pd={:#010x} start_addr={:#018x} len={:#018x} translations_octword_size={} log_page_size={}",
            m.free,
            m.access_flags,
            m.qpn(),
            m.mkey_variant(),
            m.flags_pd.get(),
            m.start_addr.get(),
            m.len.get(),
            m.translations_octword_size.get(),
            m.log_page_size
        )?;
    }
    for (i, k) in w.klms().enumerate() {
        writeln!(
            f,
            "  klm[{i}]: byte_count={:#x} mkey={:#010x} address={:#018x}",
            k.byte_count.get(),
            k.mkey.get(),
            k.address.get()
        )?;
    }
    Ok(())
}

/// The data segments: pointer entries numbered in order, inline entries with their offsets.
fn write_data(f: &mut fmt::Formatter<'_>, w: &SendWqe<'_>) -> fmt::Result {
    let mut n = 0;
    for e in w.data_entries() {
        match e {
            DataEntry::Ptr(d) => {
                writeln!(
                    f,
                    "  data[{n}]: byte_count={:#x} lkey={:#010x} addr={:#018x}",
                    d.byte_count.get(),
                    d.lkey.get(),
                    d.addr.get()
                )?;
                n += 1;
            }
            DataEntry::Inline(d) => {
                writeln!(
                    f,
                    "  inline: len={} at +{:#x}{} payload={}",
                    d.len,
                    d.offset,
                    if d.payload.is_wrapped() {
                        " (wrapped)"
                    } else {
                        ""
                    },
                    Hex(d.payload)
                )?;
            }
        }
    }
    Ok(())
}
