//! `bareverbs decode wqe`: a send WQE as a human dump or one JSON object.
//!
//! The QP type selects the transport segments ([ref §1.7](bareverbs::reference)); without one it
//! is guessed from the bytes ([`SendLayout::guess`]).

use anyhow::{anyhow, Context};
use bareverbs::wqe::{DataEntry, SendLayout, SendWqe, WqeBytes, WqeDump};
use serde_json::{json, Value};

fn hex(b: WqeBytes<'_>) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Decodes one send WQE from `bytes` (at least DS·16 bytes; anything past
/// the WQE is ignored). `qp_type` is one of `RC`, `UC`, `UD`, `RAW`, `XRC`,
/// `UD_UNDERLAY` (case-insensitive) or `None` to guess. Returns the
/// [`WqeDump`] text, or with `json` one JSON object: `qp_type`, `ctrl`
/// (opcode, opcode_name, opmod, wqe_index, qpn, ds, fm_ce_se, fence,
/// signaled, solicited, imm, signature), `segments` (each with `type` and
/// its fields) and `inline_hex` (payload of the first inline segment, or
/// null).
pub fn decode_wqe(bytes: &[u8], qp_type: Option<&str>, json: bool) -> anyhow::Result<String> {
    let qpt = match qp_type {
        Some(s) => SendLayout::from_name(s).ok_or_else(|| {
            anyhow!("unknown QP type {s:?} (expected RC, UC, UD, RAW, XRC or UD_UNDERLAY)")
        })?,
        None => SendLayout::guess(bytes),
    };
    let w = SendWqe::parse(bytes, qpt)
        .map_err(|e| anyhow!("{e}"))
        .with_context(|| format!("parsing {} bytes as a {} send WQE", bytes.len(), qpt.name()))?;
    if !json {
        return Ok(WqeDump(&w).to_string());
    }
    let v = crate::envelope::envelope("decode wqe", wqe_json(&w));
    Ok(serde_json::to_string_pretty(&v)?)
}

/// The JSON object of a parsed WQE (see [`decode_wqe`]).
pub fn wqe_json(w: &SendWqe<'_>) -> Value {
    let mut segs: Vec<Value> = Vec::new();
    push_transport_segments(w, &mut segs);
    push_memory_segments(w, &mut segs);
    let inline_hex = push_data_segments(w, &mut segs);
    if !w.opaque.is_empty() {
        segs.push(json!({"type": "undecoded", "len": w.opaque.len(), "hex": hex(w.opaque)}));
    }
    json!({
        "qp_type": w.layout.name(),
        "bytes": w.len(),
        "wqebbs": w.wqebbs(),
        "ctrl": ctrl_json(w),
        "segments": segs,
        "inline_hex": inline_hex,
    })
}

/// The control segment's fields (the `ctrl` object of [`wqe_json`]).
fn ctrl_json(w: &SendWqe<'_>) -> Value {
    let c = &w.ctrl;
    let fl = c.flags();
    let fence = match fl.fence_mode() {
        Ok(m) => m.name().to_string(),
        Err(v) => format!("reserved({v})"),
    };
    json!({
        "opcode": c.opcode(),
        "opcode_name": bareverbs::wqe::opcode_name(c.opcode()),
        "opmod": c.opmod(),
        "wqe_index": c.wqe_index(),
        "qpn": c.qpn(),
        "ds": c.ds(),
        "fm_ce_se": c.fm_ce_se,
        "fence": fence,
        "signaled": fl.signaled(),
        "solicited": fl.solicited(),
        "imm": c.imm.get(),
        "signature": c.signature,
    })
}

/// Pushes the transport and operation segments after the control segment,
/// in WQE order: XRC, datagram (address vector), Ethernet padding and
/// header, remote address, atomic and masked atomic.
fn push_transport_segments(w: &SendWqe<'_>, segs: &mut Vec<Value>) {
    if let Some(x) = w.xrc {
        segs.push(json!({"type": "xrc", "xrc_srqn": x.xrc_srqn.get()}));
    }
    if let Some(a) = w.av {
        segs.push(json!({
            "type": "datagram",
            "qkey": a.qkey(),
            "key": u64::from_be_bytes(a.key),
            "dqp_dct": a.dqp_dct.get(),
            "dqpn": a.dqpn(),
            "extended": a.extended(),
            "stat_rate_sl": a.stat_rate_sl,
            "fl_mlid": a.fl_mlid,
            "rlid": a.rlid.get(),
            "rmac": a.rmac.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":"),
            "tclass": a.tclass,
            "hop_limit": a.hop_limit,
            "grh_gid_fl": a.grh_gid_fl.get(),
            "grh": a.grh(),
            "sgid_index": a.sgid_index(),
            "flow_label": a.flow_label(),
            "rgid": a.rgid.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        }));
    }
    if w.eth_pad.is_some() {
        segs.push(json!({"type": "eth_pad"}));
    }
    if let Some(e) = w.eth {
        segs.push(json!({
            "type": "eth",
            "cs_flags": e.cs_flags,
            "mss": e.mss.get(),
            "inline_hdr_sz": e.inline_hdr_sz.get(),
            "inline_hdr_hex": hex(w.eth_inline_hdr),
        }));
    }
    if let Some(r) = w.raddr {
        segs.push(json!({"type": "raddr", "raddr": r.raddr.get(), "rkey": r.rkey.get()}));
    }
    if let Some(a) = w.atomic {
        segs.push(
            json!({"type": "atomic", "swap_add": a.swap_add.get(), "compare": a.compare.get()}),
        );
    }
    if let Some(a) = w.masked_atomic {
        segs.push(json!({
            "type": "masked_atomic",
            "swap_add": a.swap_add.get(),
            "compare": a.compare.get(),
            "swap_add_mask": a.swap_add_mask.get(),
            "compare_mask": a.compare_mask.get(),
        }));
    }
}

/// Pushes the memory-registration segments of a UMR WQE: the UMR control
/// segment, the mkey context and the KLM list.
fn push_memory_segments(w: &SendWqe<'_>, segs: &mut Vec<Value>) {
    if let Some(u) = w.umr {
        segs.push(json!({
            "type": "umr_ctrl",
            "flags": u.flags,
            "klm_octowords": u.klm_octowords.get(),
            "translation_offset": u.translation_offset.get(),
            "mkey_mask": u.mkey_mask.get(),
        }));
    }
    if let Some(m) = w.mkey {
        segs.push(json!({
            "type": "mkey_context",
            "free": m.free,
            "access_flags": m.access_flags,
            "sf": m.sf,
            "qpn": m.qpn(),
            "mkey": m.mkey_variant(),
            "flags_pd": m.flags_pd.get(),
            "start_addr": m.start_addr.get(),
            "len": m.len.get(),
            "bsf_octword_size": m.bsf_octword_size.get(),
            "translations_octword_size": m.translations_octword_size.get(),
            "log_page_size": m.log_page_size,
        }));
    }
    for k in w.klms() {
        segs.push(json!({
            "type": "klm",
            "byte_count": k.byte_count.get(),
            "mkey": k.mkey.get(),
            "address": k.address.get(),
        }));
    }
}

/// Pushes the data segments (pointer and inline); returns the payload of
/// the first inline segment as hex, or null.
fn push_data_segments(w: &SendWqe<'_>, segs: &mut Vec<Value>) -> Value {
    let mut inline_hex = Value::Null;
    for e in w.data_entries() {
        match e {
            DataEntry::Ptr(d) => segs.push(json!({
                "type": "data",
                "byte_count": d.byte_count.get(),
                "lkey": d.lkey.get(),
                "addr": d.addr.get(),
            })),
            DataEntry::Inline(d) => {
                let h = hex(d.payload);
                if inline_hex.is_null() {
                    inline_hex = Value::String(h.clone());
                }
                segs.push(json!({
                    "type": "inline",
                    "len": d.len,
                    "offset": d.offset,
                    "wrapped": d.payload.is_wrapped(),
                    "hex": h,
                }));
            }
        }
    }
    inline_hex
}

#[cfg(test)]
mod tests {
    //! Expected values come from the decoded comment lines of
    //! `conformance/vectors/wqe_vectors.txt` (WR lines, the WQE summary
    //! lines and the AH header lines), never from this decoder's output.
    use super::*;
    use crate::decode::parse_hex;
    use std::collections::HashMap;

    #[derive(Debug, Default)]
    struct Wqe {
        sq_index: u32,
        fields: HashMap<String, u64>,
        /// (ring offset, 16 bytes) in WQE order.
        lines: Vec<(usize, Vec<u8>)>,
    }

    #[derive(Debug, Default)]
    struct Vector {
        title: String,
        qp_type: String,
        qpn: u64,
        ring_bytes: usize,
        wrs: Vec<HashMap<String, String>>,
        sges: Vec<Vec<(u64, u64, u64)>>,
        wqes: Vec<Wqe>,
    }

    fn kv(line: &str, map: &mut HashMap<String, String>) {
        for tok in line.split_whitespace() {
            if let Some((k, v)) = tok.split_once('=') {
                map.insert(
                    k.trim_start_matches('(').to_string(),
                    v.trim_end_matches([',', ')', ';']).to_string(),
                );
            }
        }
    }

    fn num(s: &str) -> u64 {
        let s = s.trim_end_matches([')', ',', ';']);
        if let Some(h) = s.strip_prefix("0x") {
            u64::from_str_radix(h, 16).unwrap()
        } else {
            s.parse().unwrap()
        }
    }

    fn load() -> (Vec<Vector>, Vec<u8>, Vec<u8>) {
        let path = crate::vectors::vectors_dir().join("wqe_vectors.txt");
        let text = std::fs::read_to_string(&path).expect("wqe_vectors.txt");
        let mut out: Vec<Vector> = Vec::new();
        let (mut plain_av, mut grh_av) = (Vec::new(), Vec::new());
        for line in text.lines() {
            let t = line.trim_start();
            if let Some(rest) = t.strip_prefix("#   plain AH mlx5_wqe_av bytes:") {
                plain_av = parse_hex(rest).unwrap();
            } else if let Some(rest) = t.strip_prefix("#   GRH   AH mlx5_wqe_av bytes:") {
                grh_av = parse_hex(rest).unwrap();
            } else if let Some(rest) = t.strip_prefix("=== VECTOR ") {
                out.push(Vector {
                    title: rest.to_string(),
                    ..Default::default()
                });
            } else if let Some(v) = out.last_mut() {
                if t.starts_with("QP: type=") {
                    let mut m = HashMap::new();
                    kv(t, &mut m);
                    v.qp_type = m["type"].clone();
                    v.qpn = num(&m["qpn"]);
                    let b = t.split("WQEBBs (").nth(1).unwrap();
                    v.ring_bytes = b.split_whitespace().next().unwrap().parse().unwrap();
                } else if t.starts_with("WR[") {
                    let mut m = HashMap::new();
                    kv(t, &mut m);
                    v.wrs.push(m);
                    v.sges.push(Vec::new());
                } else if t.starts_with("sge[") {
                    let mut m = HashMap::new();
                    kv(t, &mut m);
                    let addr = if m["addr"].starts_with("0x") {
                        num(&m["addr"])
                    } else {
                        u64::MAX
                    };
                    v.sges
                        .last_mut()
                        .unwrap()
                        .push((addr, num(&m["length"]), num(&m["lkey"])));
                } else if t.starts_with("rdma.")
                    || t.starts_with("atomic.")
                    || t.starts_with("bind_mw:")
                    || t.starts_with("ud:")
                {
                    let wr = v.wrs.last_mut().unwrap();
                    kv(t, wr);
                } else if t.starts_with("WQE[") {
                    let mut m = HashMap::new();
                    kv(t, &mut m);
                    let idx = t.split("sq index ").nth(1).unwrap();
                    let idx = idx.split_whitespace().next().unwrap().parse().unwrap();
                    let mut w = Wqe {
                        sq_index: idx,
                        ..Default::default()
                    };
                    for k in ["wqe_index", "opcode", "opmod", "qpn", "ds"] {
                        w.fields.insert(k.into(), num(&m[k]));
                    }
                    v.wqes.push(w);
                } else if t.starts_with("fm_ce_se=") {
                    let mut m = HashMap::new();
                    kv(t, &mut m);
                    let w = v.wqes.last_mut().unwrap();
                    w.fields.insert("fm_ce_se".into(), num(&m["fm_ce_se"]));
                    w.fields.insert("imm".into(), num(&m["imm"]));
                } else if t.starts_with('+') && t.contains("[ring 0x") {
                    if let Some(w) = v.wqes.last_mut() {
                        let ro = t.split("[ring 0x").nth(1).unwrap();
                        let ro = usize::from_str_radix(&ro[..4], 16).unwrap();
                        let hexpart = t.split("]:").nth(1).unwrap();
                        let hexpart = hexpart.split("unwritten").next().unwrap();
                        w.lines.push((ro, parse_hex(hexpart).unwrap()));
                    }
                } else if t.starts_with("failed WR") {
                    // Lines after this belong to no posted WQE.
                    v.wqes.push(Wqe {
                        sq_index: u32::MAX,
                        ..Default::default()
                    });
                }
            }
        }
        for v in &mut out {
            v.wqes.retain(|w| w.sq_index != u32::MAX);
        }
        (out, plain_av, grh_av)
    }

    fn linear(w: &Wqe) -> Vec<u8> {
        w.lines.iter().flat_map(|(_, b)| b.clone()).collect()
    }

    #[test]
    fn every_vector_wqe_decodes_to_its_documented_fields() {
        let (vectors, plain_av, grh_av) = load();
        assert!(vectors.len() >= 40, "read {} vectors", vectors.len());
        let mut n = 0;
        for v in &vectors {
            for (i, w) in v.wqes.iter().enumerate() {
                let bytes = linear(w);
                let out = decode_wqe(&bytes, Some(&v.qp_type), true)
                    .unwrap_or_else(|e| panic!("VECTOR {}: {e:#}", v.title));
                let j: Value = serde_json::from_str(&out).unwrap();
                let c = &j["ctrl"];
                for k in [
                    "opcode",
                    "opmod",
                    "wqe_index",
                    "qpn",
                    "ds",
                    "fm_ce_se",
                    "imm",
                ] {
                    assert_eq!(
                        c[k].as_u64().unwrap(),
                        w.fields[k],
                        "VECTOR {} WQE[{i}] {k}",
                        v.title
                    );
                }
                assert_eq!(c["qpn"].as_u64().unwrap(), v.qpn);
                let fm = w.fields["fm_ce_se"];
                assert_eq!(c["signaled"].as_bool().unwrap(), fm & 0x08 != 0);
                assert_eq!(c["solicited"].as_bool().unwrap(), fm & 0x02 != 0);
                let wr = &v.wrs[i];
                let flags = &wr["send_flags"];
                let flags_v = num(flags.split('(').next().unwrap());
                // IBV_SEND_SIGNALED = 2, SOLICITED = 4, INLINE = 8 (verbs.h)
                assert_eq!(
                    c["signaled"].as_bool().unwrap(),
                    flags_v & 2 != 0,
                    "VECTOR {}",
                    v.title
                );
                assert_eq!(c["solicited"].as_bool().unwrap(), flags_v & 4 != 0);
                let segs = j["segments"].as_array().unwrap();
                let data: Vec<&Value> = segs.iter().filter(|s| s["type"] == "data").collect();
                let inline = flags_v & 8 != 0 && !v.sges[i].is_empty();
                if inline {
                    let len: u64 = v.sges[i].iter().map(|s| s.1).sum();
                    let expect: String = (0..len).map(|k| format!("{:02x}", k & 0xff)).collect();
                    assert_eq!(
                        j["inline_hex"].as_str().unwrap(),
                        expect,
                        "VECTOR {}",
                        v.title
                    );
                    assert!(data.is_empty());
                } else if wr["opcode"].starts_with("SEND")
                    || wr["opcode"].starts_with("RDMA")
                    || wr["opcode"].starts_with("ATOMIC")
                {
                    assert!(j["inline_hex"].is_null());
                    assert_eq!(data.len(), v.sges[i].len(), "VECTOR {}", v.title);
                    for (d, s) in data.iter().zip(&v.sges[i]) {
                        assert_eq!(d["addr"].as_u64().unwrap(), s.0);
                        assert_eq!(d["byte_count"].as_u64().unwrap(), s.1);
                        assert_eq!(d["lkey"].as_u64().unwrap(), s.2);
                    }
                }
                if let Some(ra) = wr.get("rdma.remote_addr").or(wr.get("atomic.remote_addr")) {
                    let r = segs.iter().find(|s| s["type"] == "raddr").expect("raddr");
                    assert_eq!(r["raddr"].as_u64().unwrap(), num(ra));
                    let rk = wr.get("rdma.rkey").or(wr.get("atomic.rkey")).unwrap();
                    assert_eq!(r["rkey"].as_u64().unwrap(), num(rk));
                }
                if let Some(cmp) = wr.get("compare_add") {
                    let a = segs.iter().find(|s| s["type"] == "atomic").expect("atomic");
                    assert_eq!(a["compare"].as_u64().unwrap(), num(cmp));
                    assert_eq!(a["swap_add"].as_u64().unwrap(), num(&wr["swap"]));
                }
                if v.qp_type == "UD" {
                    let a = segs.iter().find(|s| s["type"] == "datagram").expect("av");
                    assert_eq!(a["dqpn"].as_u64().unwrap(), num(&wr["remote_qpn"]));
                    assert_eq!(a["qkey"].as_u64().unwrap(), num(&wr["remote_qkey"]));
                    // bytes 12.. of the AH's AV are copied unchanged (ref §1.5)
                    let av = if v.title.contains("GRH") && i == 1 {
                        &grh_av
                    } else {
                        &plain_av
                    };
                    let wqe_av = &bytes[16 + 12..16 + 48];
                    assert_eq!(wqe_av, &av[12..], "VECTOR {}", v.title);
                    assert_eq!(
                        a["rlid"].as_u64().unwrap(),
                        u16::from_be_bytes([av[14], av[15]]) as u64
                    );
                }
                if wr["opcode"].starts_with("LOCAL_INV") {
                    assert_eq!(c["opcode_name"], "UMR");
                    assert_eq!(c["imm"].as_u64().unwrap(), num(&wr["invalidate_rkey"]));
                    let m = segs
                        .iter()
                        .find(|s| s["type"] == "mkey_context")
                        .expect("mkey");
                    assert_eq!(m["free"].as_u64().unwrap(), 0x40);
                }
                if wr["opcode"].starts_with("BIND_MW") {
                    assert_eq!(c["opcode_name"], "UMR");
                    assert_eq!(c["imm"].as_u64().unwrap(), num(&wr["mw.rkey"]));
                    let m = segs
                        .iter()
                        .find(|s| s["type"] == "mkey_context")
                        .expect("mkey");
                    assert_eq!(m["qpn"].as_u64().unwrap(), v.qpn);
                    assert_eq!(m["mkey"].as_u64().unwrap(), num(&wr["rkey"]) & 0xff);
                    assert_eq!(m["start_addr"].as_u64().unwrap(), num(&wr["addr"]));
                    assert_eq!(m["len"].as_u64().unwrap(), num(&wr["length"]));
                    let k = segs.iter().find(|s| s["type"] == "klm").expect("klm");
                    assert_eq!(k["mkey"].as_u64().unwrap(), num(&wr["mr.lkey"]));
                    assert_eq!(k["address"].as_u64().unwrap(), num(&wr["addr"]));
                    assert_eq!(k["byte_count"].as_u64().unwrap(), num(&wr["length"]));
                }
                // Human form decodes too and names the opcode.
                let text = decode_wqe(&bytes, Some(&v.qp_type), false).unwrap();
                assert!(text.contains(c["opcode_name"].as_str().unwrap()));
                n += 1;
            }
        }
        assert!(n >= 45, "decoded {n} WQEs");
    }

    #[test]
    fn ring_aware_parse_follows_the_wrap() {
        let (vectors, _, _) = load();
        let mut wrapped = 0;
        for v in vectors.iter().filter(|v| v.title.contains("wrap")) {
            for w in &v.wqes {
                let mut ring = vec![0u8; v.ring_bytes];
                for (ro, b) in &w.lines {
                    ring[*ro..*ro + 16].copy_from_slice(b);
                }
                let qpt = SendLayout::from_name(&v.qp_type).unwrap();
                let r = SendWqe::parse_ring(&ring, w.sq_index, qpt).unwrap();
                let lin = linear(w);
                let l = SendWqe::parse(&lin, qpt).unwrap();
                assert!(r.bytes.is_wrapped(), "VECTOR {}", v.title);
                // Identical decode except the payload's "wrapped" marker.
                let strip = |mut j: Value| {
                    for s in j["segments"].as_array_mut().unwrap() {
                        s.as_object_mut().unwrap().remove("wrapped");
                    }
                    j
                };
                assert_eq!(
                    strip(wqe_json(&r)),
                    strip(wqe_json(&l)),
                    "VECTOR {}",
                    v.title
                );
                assert_eq!(r.ctrl.wqe_index() as u64, w.fields["wqe_index"]);
                wrapped += 1;
            }
        }
        assert!(wrapped >= 2);
    }

    #[test]
    fn guesses_ud_and_rejects_bad_input() {
        let (vectors, _, _) = load();
        for v in &vectors {
            for w in &v.wqes {
                let j: Value =
                    serde_json::from_str(&decode_wqe(&linear(w), None, true).unwrap()).unwrap();
                if v.qp_type == "UD" {
                    assert_eq!(j["qp_type"], "UD", "VECTOR {}", v.title);
                }
            }
        }
        assert!(decode_wqe(&[0u8; 16], Some("RC"), false).is_err()); // DS 0
        assert!(decode_wqe(&[0u8; 4], Some("RC"), true).is_err());
        assert!(decode_wqe(&[0u8; 64], Some("XYZ"), true).is_err());
        let mut b = [0u8; 32];
        b[7] = 3; // DS 3 but only 32 bytes
        assert!(decode_wqe(&b, Some("RC"), true).is_err());
        b[7] = 0x41; // DS byte > 63
        assert!(decode_wqe(&b, Some("RC"), true).is_err());
    }
}
