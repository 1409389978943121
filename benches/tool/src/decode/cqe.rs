//! `bareverbs decode cqe`: human and JSON views of one 64- or 128-byte CQE
//! ([ref §5](bareverbs::reference)). The caller parses hex with [`super::parse_hex`].

use anyhow::{bail, Result};
use bareverbs::cqe::{
    parse_any, req_completion, sw_owns, Cqe64, CqeDump, CqeFormat, CqeOpcode, WcFlags, WcOpcode,
    WcStatus,
};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The verbs status a CQE reports: the syndrome mapping for REQ_ERR /
/// RESP_ERR, SUCCESS otherwise. [ref §5.6](bareverbs::reference).
fn status_of(c: &Cqe64) -> WcStatus {
    if c.is_error() {
        c.as_err().status()
    } else {
        WcStatus::Success
    }
}

/// The verbs opcode and flags a successful CQE reports (requester opcodes
/// that take `wr_data` are shown as SEND, the value a plain SQ slot holds).
fn wc_view(c: &Cqe64) -> (Option<WcOpcode>, WcFlags) {
    match CqeOpcode::try_from(c.opcode()) {
        Ok(CqeOpcode::Req) => {
            let m = req_completion(c.send_wqe_opcode(), WcOpcode::Send, c.byte_cnt());
            (m.opcode, m.flags)
        }
        Ok(CqeOpcode::RespWrImm) => (Some(WcOpcode::RecvRdmaWithImm), WcFlags::WITH_IMM),
        Ok(CqeOpcode::RespSend) => (Some(WcOpcode::Recv), WcFlags::empty()),
        Ok(CqeOpcode::RespSendImm) => (Some(WcOpcode::Recv), WcFlags::WITH_IMM),
        Ok(CqeOpcode::RespSendInv) => (Some(WcOpcode::Recv), WcFlags::WITH_INV),
        _ => (None, WcFlags::empty()),
    }
}

fn flag_names(f: WcFlags) -> Vec<&'static str> {
    f.iter_names().map(|(n, _)| n).collect()
}

/// Decodes `bytes` (64 or 128 bytes) as a CQE. With `json`, one JSON
/// object (`opcode`, `opcode_name`, `owner`, `se`, `format`, `qpn`,
/// `wqe_counter`, `byte_cnt`, `imm_inval_pkey`, `syndrome`,
/// `vendor_syndrome`, `status`, …); otherwise a hexdump and decoded fields.
/// With `ci` and `ncqe`, also whether software owns the entry at that
/// consumer index ([ref §5.3](bareverbs::reference)).
pub fn decode_cqe(bytes: &[u8], json: bool, ci: Option<u32>, ncqe: Option<u32>) -> Result<String> {
    let (c, front) = match parse_any(bytes) {
        Ok(v) => v,
        Err(e) => bail!("a CQE is 64 or 128 bytes, got {} ({e})", bytes.len()),
    };
    let owned = ownership(&c, ci, ncqe)?;
    let status = status_of(&c);
    let (wc_op, wc_flags) = wc_view(&c);
    let inline = match c.format_kind() {
        CqeFormat::InlineScatter32 => c.inline_data32().map(<[u8]>::to_vec),
        CqeFormat::InlineScatter64 => front.map(|f| f[..(c.byte_cnt() as usize).min(64)].to_vec()),
        _ => None,
    };
    let d = Decoded {
        cqe_size: bytes.len(),
        c,
        front,
        owned,
        status,
        wc_op,
        wc_flags,
        inline,
    };
    if json {
        let v = crate::envelope::envelope("decode cqe", cqe_json(&d));
        return Ok(serde_json::to_string_pretty(&v)?);
    }
    cqe_text(&d, ci, ncqe)
}

/// A parsed CQE and what [`decode_cqe`] derives from it.
struct Decoded {
    /// 64 or 128.
    cqe_size: usize,
    /// The CQE (bytes 64..127 of a 128-byte one).
    c: Cqe64,
    /// The leading 64 bytes of a 128-byte CQE.
    front: Option<[u8; 64]>,
    /// Whether software owns the entry at `--ci` / `--ncqe`.
    owned: Option<bool>,
    /// The verbs status.
    status: WcStatus,
    /// The verbs opcode, where one is reported.
    wc_op: Option<WcOpcode>,
    /// The verbs flags.
    wc_flags: WcFlags,
    /// Inline-scattered payload.
    inline: Option<Vec<u8>>,
}

/// Whether software owns `c` at consumer index `ci` of an `ncqe`-entry CQ
/// (both or neither must be given; `ncqe` a power of two >= 2).
fn ownership(c: &Cqe64, ci: Option<u32>, ncqe: Option<u32>) -> Result<Option<bool>> {
    Ok(match (ci, ncqe) {
        (Some(ci), Some(n)) => {
            if !n.is_power_of_two() || n < 2 {
                bail!("ncqe {n} is not a power of two >= 2");
            }
            Some(sw_owns(c.op_own(), ci, n))
        }
        (None, None) => None,
        (Some(_), None) => bail!("--ci needs --ncqe"),
        (None, Some(_)) => bail!("--ncqe needs --ci"),
    })
}

/// The JSON object of [`decode_cqe`] (table-driven: one line per field).
fn cqe_json(d: &Decoded) -> Value {
    let c = &d.c;
    let err = c.as_err();
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    put("cqe_size", json!(d.cqe_size));
    put("opcode", json!(c.opcode()));
    put("opcode_name", json!(CqeOpcode::name_of(c.opcode())));
    put("owner", json!(c.owner()));
    put("se", json!(c.se()));
    put("format", json!(c.format()));
    put("op_own", json!(c.op_own()));
    put("qpn", json!(c.qpn()));
    put("wqe_opcode", json!(c.send_wqe_opcode()));
    put("sop_drop_qpn", json!(c.sop_drop_qpn()));
    put("wqe_counter", json!(c.wqe_counter()));
    put("srqn_uidx", json!(c.srqn_uidx()));
    put("uidx", json!(c.uidx()));
    put("byte_cnt", json!(c.byte_cnt()));
    put("imm_inval_pkey", json!(c.imm_inval_pkey()));
    put("flags_rqpn", json!(c.flags_rqpn()));
    put("src_qp", json!(c.src_qp()));
    put("sl", json!(c.sl()));
    put("grh", json!(c.grh()));
    put("slid", json!(c.slid()));
    put("ml_path", json!(c.ml_path()));
    put("dlid_path_bits", json!(c.dlid_path_bits()));
    put("hds_ip_ext", json!(c.hds_ip_ext()));
    put("l4_hdr_type_etc", json!(c.l4_hdr_type_etc()));
    put("vlan_info", json!(c.vlan_info()));
    put("rss_hash_result", json!(c.rss_hash_result()));
    put("check_sum", json!(c.check_sum()));
    put("wqe_id", json!(c.wqe_id()));
    put("app", json!(c.app()));
    put("app_op", json!(c.app_op()));
    put("app_info", json!(c.app_info()));
    put("timestamp", json!(c.timestamp()));
    put("signature", json!(c.signature()));
    put("syndrome", json!(err.syndrome()));
    put("syndrome_name", json!(err.syndrome_kind().name()));
    put("vendor_syndrome", json!(err.vendor_err_synd()));
    put("is_error", json!(c.is_error()));
    put("status", json!(d.status.name()));
    put("status_code", json!(d.status.as_raw()));
    put(
        "wc_opcode",
        d.wc_op.map_or(Value::Null, |o| json!(o.name())),
    );
    put("wc_flags", json!(flag_names(d.wc_flags)));
    if c.format_kind() == CqeFormat::Compressed {
        put("mini_cqe_count", json!(c.byte_cnt()));
    }
    if let Some(b) = &d.inline {
        put("inline_data", json!(hex(b)));
    }
    if let Some(o) = d.owned {
        put("sw_owned", json!(o));
    }
    Value::Object(m)
}

/// The text of [`decode_cqe`]: the hexdump (with the leading 64 bytes of a
/// 128-byte CQE), the decoded fields, the verbs view, inline data and
/// ownership at `ci` / `ncqe`.
fn cqe_text(d: &Decoded, ci: Option<u32>, ncqe: Option<u32>) -> Result<String> {
    let mut s = String::new();
    if let Some(f) = &d.front {
        writeln!(s, "leading 64 bytes (inline-scatter-64 area):")?;
        for (i, l) in f.chunks(16).enumerate() {
            writeln!(
                s,
                "  +{:02x}: {}",
                i * 16,
                l.chunks(4).map(hex).collect::<Vec<_>>().join(" ")
            )?;
        }
        writeln!(s, "cqe64 (bytes 64..127):")?;
    }
    writeln!(s, "{}", CqeDump(&d.c))?;
    let op = d.wc_op.map_or("(not reported)", WcOpcode::name);
    writeln!(
        s,
        "verbs: status={} opcode={} flags={:?}",
        d.status.name(),
        op,
        flag_names(d.wc_flags)
    )?;
    if let Some(b) = &d.inline {
        writeln!(s, "inline data ({} bytes): {}", b.len(), hex(b))?;
    }
    if let Some(o) = d.owned {
        writeln!(
            s,
            "ownership at ci={} ncqe={}: {}",
            ci.unwrap_or(0),
            ncqe.unwrap_or(0),
            if o {
                "software owns it (valid)"
            } else {
                "not owned / empty"
            }
        )?;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::parse_hex;

    // cqe_vectors.txt vector 21: REQ_ERR LOCAL_PROT_ERR, vendor 0x82.
    const V21: &str = "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
                       00000005 00000000 00000000 00000000 00000000 00008204 0a0abcde 000700d0";

    #[test]
    fn json_of_error_cqe() {
        let b = parse_hex(V21).unwrap();
        let v: Value =
            serde_json::from_str(&decode_cqe(&b, true, Some(0), Some(8)).unwrap()).unwrap();
        assert_eq!(v["opcode"], 13);
        assert_eq!(v["syndrome"], 4);
        assert_eq!(v["vendor_syndrome"], 0x82);
        assert_eq!(v["status"], "LOC_PROT_ERR");
        assert_eq!(v["qpn"], 0x0abcde);
        assert_eq!(v["wqe_counter"], 7);
        assert_eq!(v["sw_owned"], true);
        let h = decode_cqe(&b, false, None, None).unwrap();
        assert!(h.contains("LOC_PROT_ERR"), "{h}");
    }

    #[test]
    fn rejects_bad_lengths_and_accepts_128() {
        assert!(decode_cqe(&[0; 63], true, None, None).is_err());
        let mut b = vec![0u8; 128];
        b[127] = 0x28; // RESP_SEND, inline-scatter-64
        b[64 + 47] = 3;
        b[..3].copy_from_slice(b"abc");
        let v: Value = serde_json::from_str(&decode_cqe(&b, true, None, None).unwrap()).unwrap();
        assert_eq!(v["format"], 2);
        assert_eq!(v["inline_data"], "616263");
        assert_eq!(v["status"], "SUCCESS");
    }
}
