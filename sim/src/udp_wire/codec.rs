//! The bytes of a packet on the UDP wire: a fixed header ([`Header`]:
//! magic, source and destination GID, destination MAC, QPNs, fragment
//! numbers) and the packet's [`Body`] encoded once and cut into
//! fragments of at most [`FRAGMENT_BYTES`]. All integers big-endian.
//!
//! | offset | bytes | field |
//! | --- | --- | --- |
//! | 0 | 4 | magic `BVW1` |
//! | 4 | 16 | source GID |
//! | 20 | 16 | destination GID |
//! | 36 | 6 | destination MAC |
//! | 42 | 4 | source QPN |
//! | 46 | 4 | destination QPN |
//! | 50 | 4 | packet id (per sender) |
//! | 54 | 2 | fragment index |
//! | 56 | 2 | fragment count |
//! | 58 | … | this fragment of the encoded body |
//!
//! Body: a tag byte (0 request, 1 ACK, 2 NAK, 3 READ response, 4 atomic
//! response), the PSN, then per kind: a request's packet count, flags
//! (GRH 1, solicited 2, a UD Q_Key follows 4), the Q_Key, the operation
//! tag (0 SEND, 1 WRITE, 2 READ, 3 atomic) and its fields, payloads as a
//! 4-byte length and the bytes; a NAK's kind (0 RNR with its timer byte,
//! 1 sequence, 2 remote access, 3 invalid request, 4 remote operation);
//! a READ response's payload; an atomic response's original value.
//! Decoding trusts nothing: a short, long or unknown encoding is an error.

use crate::wire::{Body, Nak, Req};
use std::rc::Rc;

/// The magic of every datagram.
pub(crate) const MAGIC: [u8; 4] = *b"BVW1";
/// Bytes of the header.
pub(crate) const HEADER_BYTES: usize = 58;
/// Most body bytes in one datagram.
pub(crate) const FRAGMENT_BYTES: usize = 60_000;
/// Largest payload a packet may carry (the simulated port's 1 GiB
/// message limit, `log_max_msg` 30).
pub(crate) const MAX_PAYLOAD: usize = 1 << 30;

/// The header of one datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub src_gid: [u8; 16],
    pub dst_gid: [u8; 16],
    pub dst_mac: [u8; 6],
    pub src_qpn: u32,
    pub dst_qpn: u32,
    pub id: u32,
    pub index: u16,
    pub count: u16,
}

impl Header {
    /// Appends the header's bytes to `out`.
    pub fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.src_gid);
        out.extend_from_slice(&self.dst_gid);
        out.extend_from_slice(&self.dst_mac);
        out.extend_from_slice(&self.src_qpn.to_be_bytes());
        out.extend_from_slice(&self.dst_qpn.to_be_bytes());
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&self.index.to_be_bytes());
        out.extend_from_slice(&self.count.to_be_bytes());
    }

    /// The header of datagram `d` and its fragment bytes.
    pub fn take(d: &[u8]) -> Option<(Header, &[u8])> {
        let mut r = Reader(d);
        if r.bytes(4)? != MAGIC {
            return None;
        }
        let h = Header {
            src_gid: r.array()?,
            dst_gid: r.array()?,
            dst_mac: r.array()?,
            src_qpn: r.u32()?,
            dst_qpn: r.u32()?,
            id: r.u32()?,
            index: r.u16()?,
            count: r.u16()?,
        };
        if h.count == 0 || h.index >= h.count || h.src_qpn > 0xff_ffff || h.dst_qpn > 0xff_ffff {
            return None;
        }
        Some((h, r.0))
    }
}

/// A bounds-checked reader over untrusted bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.bytes(N)?.try_into().ok()
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.bytes(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes(self.array()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.array()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.array()?))
    }
    fn payload(&mut self) -> Option<Vec<u8>> {
        let n = self.u32()? as usize;
        if n > MAX_PAYLOAD {
            return None;
        }
        Some(self.bytes(n)?.to_vec())
    }
    fn opt_u32(&mut self) -> Option<Option<u32>> {
        match self.u8()? {
            0 => {
                self.u32()?;
                Some(None)
            }
            1 => Some(Some(self.u32()?)),
            _ => None,
        }
    }
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_payload(out: &mut Vec<u8>, d: &[u8]) {
    put_u32(out, d.len() as u32);
    out.extend_from_slice(d);
}

fn put_opt(out: &mut Vec<u8>, v: Option<u32>) {
    out.push(u8::from(v.is_some()));
    put_u32(out, v.unwrap_or(0));
}

fn imm_u32(imm: Option<[u8; 4]>) -> Option<u32> {
    imm.map(u32::from_be_bytes)
}

/// The encoded body.
pub(crate) fn encode_body(b: &Body) -> Vec<u8> {
    let mut out = Vec::new();
    match b {
        Body::Req {
            psn,
            npkts,
            req,
            ud_qkey,
            grh,
            solicited,
        } => {
            out.push(0);
            put_u32(&mut out, *psn);
            put_u32(&mut out, *npkts);
            let flags =
                u8::from(*grh) | (u8::from(*solicited) << 1) | (u8::from(ud_qkey.is_some()) << 2);
            out.push(flags);
            put_u32(&mut out, ud_qkey.unwrap_or(0));
            match &**req {
                Req::Send { data, imm, inv } => {
                    out.push(0);
                    put_opt(&mut out, imm_u32(*imm));
                    put_opt(&mut out, *inv);
                    put_payload(&mut out, data);
                }
                Req::Write {
                    raddr,
                    rkey,
                    data,
                    imm,
                } => {
                    out.push(1);
                    put_u64(&mut out, *raddr);
                    put_u32(&mut out, *rkey);
                    put_opt(&mut out, imm_u32(*imm));
                    put_payload(&mut out, data);
                }
                Req::Read { raddr, rkey, len } => {
                    out.push(2);
                    put_u64(&mut out, *raddr);
                    put_u32(&mut out, *rkey);
                    put_u32(&mut out, *len);
                }
                Req::Atomic {
                    raddr,
                    rkey,
                    cs,
                    swap_add,
                    compare,
                } => {
                    out.push(3);
                    put_u64(&mut out, *raddr);
                    put_u32(&mut out, *rkey);
                    out.push(u8::from(*cs));
                    put_u64(&mut out, *swap_add);
                    put_u64(&mut out, *compare);
                }
            }
        }
        Body::Ack { psn } => {
            out.push(1);
            put_u32(&mut out, *psn);
        }
        Body::Nak { psn, nak } => {
            out.push(2);
            put_u32(&mut out, *psn);
            let (k, v) = match nak {
                Nak::Rnr(t) => (0, *t),
                Nak::Seq => (1, 0),
                Nak::RemAccess => (2, 0),
                Nak::InvReq => (3, 0),
                Nak::RemOp => (4, 0),
            };
            out.push(k);
            out.push(v);
        }
        Body::ReadResp { psn, data } => {
            out.push(3);
            put_u32(&mut out, *psn);
            put_payload(&mut out, data);
        }
        Body::AtomicResp { psn, orig } => {
            out.push(4);
            put_u32(&mut out, *psn);
            put_u64(&mut out, *orig);
        }
    }
    out
}

/// The body encoded in `b`, which must be exactly one encoding.
/// Most PSNs one request may span (half the 24-bit PSN space).
pub(crate) const MAX_NPKTS: u32 = 1 << 23;

pub(crate) fn decode_body(b: &[u8]) -> Option<Body> {
    let mut r = Reader(b);
    let tag = r.u8()?;
    let psn = r.u32()?;
    if psn > 0xff_ffff {
        return None;
    }
    let body = match tag {
        0 => {
            let npkts = r.u32()?;
            let flags = r.u8()?;
            let qkey = r.u32()?;
            // A message spans at least one PSN and at most half the
            // 24-bit PSN space (IBA's valid window): more could only be
            // hostile, and would move the responder's expected PSN.
            if flags & !7 != 0 || npkts == 0 || npkts > MAX_NPKTS {
                return None;
            }
            let imm = |v: Option<u32>| v.map(u32::to_be_bytes);
            let req = match r.u8()? {
                0 => {
                    let i = r.opt_u32()?;
                    let inv = r.opt_u32()?;
                    Req::Send {
                        imm: imm(i),
                        inv,
                        data: r.payload()?,
                    }
                }
                1 => {
                    let raddr = r.u64()?;
                    let rkey = r.u32()?;
                    let i = r.opt_u32()?;
                    Req::Write {
                        raddr,
                        rkey,
                        imm: imm(i),
                        data: r.payload()?,
                    }
                }
                2 => Req::Read {
                    raddr: r.u64()?,
                    rkey: r.u32()?,
                    len: r.u32()?,
                },
                3 => {
                    let raddr = r.u64()?;
                    let rkey = r.u32()?;
                    let cs = match r.u8()? {
                        0 => false,
                        1 => true,
                        _ => return None,
                    };
                    Req::Atomic {
                        raddr,
                        rkey,
                        cs,
                        swap_add: r.u64()?,
                        compare: r.u64()?,
                    }
                }
                _ => return None,
            };
            Body::Req {
                psn,
                npkts,
                req: Rc::new(req),
                ud_qkey: (flags & 4 != 0).then_some(qkey),
                grh: flags & 1 != 0,
                solicited: flags & 2 != 0,
            }
        }
        1 => Body::Ack { psn },
        2 => {
            let k = r.u8()?;
            let v = r.u8()?;
            let nak = match k {
                0 => Nak::Rnr(v),
                1 => Nak::Seq,
                2 => Nak::RemAccess,
                3 => Nak::InvReq,
                4 => Nak::RemOp,
                _ => return None,
            };
            Body::Nak { psn, nak }
        }
        3 => Body::ReadResp {
            psn,
            data: Rc::new(r.payload()?),
        },
        4 => Body::AtomicResp {
            psn,
            orig: r.u64()?,
        },
        _ => return None,
    };
    r.0.is_empty().then_some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bodies() -> Vec<Body> {
        let req = |r: Req| Body::Req {
            psn: 0x12_3456,
            npkts: 3,
            req: Rc::new(r),
            ud_qkey: None,
            grh: true,
            solicited: false,
        };
        vec![
            req(Req::Send {
                data: vec![1, 2, 3],
                imm: Some([9, 8, 7, 6]),
                inv: None,
            }),
            req(Req::Write {
                raddr: 0x1000,
                rkey: 0x77,
                data: (0..5000u32).map(|i| i as u8).collect(),
                imm: None,
            }),
            req(Req::Read {
                raddr: 0x2000,
                rkey: 0x88,
                len: 4096,
            }),
            req(Req::Atomic {
                raddr: 0x3000,
                rkey: 0x99,
                cs: true,
                swap_add: 5,
                compare: 6,
            }),
            Body::Ack { psn: 1 },
            Body::Nak {
                psn: 2,
                nak: Nak::Rnr(14),
            },
            Body::Nak {
                psn: 3,
                nak: Nak::Seq,
            },
            Body::ReadResp {
                psn: 4,
                data: Rc::new(vec![5; 100]),
            },
            Body::AtomicResp { psn: 5, orig: 42 },
        ]
    }

    #[test]
    fn every_body_round_trips() {
        for b in bodies() {
            let e = encode_body(&b);
            let d = decode_body(&e).expect("decodes");
            assert_eq!(encode_body(&d), e, "{b:?}");
        }
    }

    #[test]
    fn truncated_extended_or_garbage_bytes_are_refused() {
        for b in bodies() {
            let e = encode_body(&b);
            for n in 0..e.len() {
                assert!(decode_body(&e[..n]).is_none(), "{b:?} cut at {n}");
            }
            let mut long = e.clone();
            long.push(0);
            assert!(decode_body(&long).is_none());
        }
        let mut x = 0x1234_5678u32;
        for _ in 0..20_000 {
            let len = (x % 64) as usize;
            let v: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            let _ = decode_body(&v);
            let _ = Header::take(&v);
        }
        // A length field claiming more than the rest is refused, not read.
        let mut e = encode_body(&Body::ReadResp {
            psn: 1,
            data: Rc::new(vec![0; 4]),
        });
        e[5..9].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode_body(&e).is_none());
    }

    /// npkts is bounded by the PSN window (IBA: half the 24-bit space);
    /// a larger count could move a responder's expected PSN anywhere.
    #[test]
    fn a_request_spanning_more_than_half_the_psn_space_is_refused() {
        let req = |npkts: u32| Body::Req {
            psn: 0xff_ffff,
            npkts,
            req: Rc::new(Req::Read {
                raddr: 0,
                rkey: 1,
                len: 1,
            }),
            ud_qkey: None,
            grh: true,
            solicited: false,
        };
        assert!(decode_body(&encode_body(&req(1 << 23))).is_some());
        for n in [(1 << 23) + 1, 1 << 24, u32::MAX] {
            assert!(decode_body(&encode_body(&req(n))).is_none(), "{n}");
        }
    }

    #[test]
    fn header_round_trips_and_checks() {
        let h = Header {
            src_gid: [1; 16],
            dst_gid: [2; 16],
            dst_mac: [3; 6],
            src_qpn: 0x48,
            dst_qpn: 0x49,
            id: 7,
            index: 1,
            count: 2,
        };
        let mut v = Vec::new();
        h.put(&mut v);
        assert_eq!(v.len(), HEADER_BYTES);
        v.extend_from_slice(b"xyz");
        let (g, rest) = Header::take(&v).unwrap();
        assert_eq!((g, rest), (h, &b"xyz"[..]));
        let mut bad = v.clone();
        bad[0] = b'X';
        assert!(Header::take(&bad).is_none());
        let mut bad = v.clone();
        bad[54..56].copy_from_slice(&2u16.to_be_bytes());
        assert!(Header::take(&bad).is_none(), "index beyond count");
    }
}
