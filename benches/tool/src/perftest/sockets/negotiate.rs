//! `negotiate_params` (perftest 6.28 and later): one 320-byte block each
//! way (`struct perftest_parameters_negotiate` on x86-64), every test
//! parameter big-endian and compared, then the device attributes (raw,
//! host order) from which the peer's `max_qp_rd_atom` lowers the
//! outstanding reads.

use super::stream::Oob;
use super::versions::Version;
use anyhow::bail;

/// The first perftest version that negotiates (a version number that
/// happens to look like 2π).
#[allow(clippy::approx_constant)]
const NEGOTIATE_SINCE: f64 = 6.28;

/// Bytes of the block.
pub const NEGOTIATE_BYTES: usize = 320;
/// Offset of `struct ibv_device_attr` in the block.
const ATTR: usize = 80;
/// `ibv_device_attr.vendor_id` (x86-64 layout, 232 bytes in all).
const ATTR_VENDOR_ID: usize = ATTR + 96;
/// `ibv_device_attr.max_qp_rd_atom`.
const ATTR_MAX_QP_RD_ATOM: usize = ATTR + 144;
/// The Mellanox vendor id.
const MELLANOX: u32 = 0x02c9;

/// The parameters both sides must agree on, in perftest's encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Negotiate {
    /// `test_method`: RUN_REGULAR 0, RUN_ALL 1, RUN_INFINITELY 2.
    pub test_method: u32,
    /// `connection_type`: RC 0, UC 1, UD 2.
    pub connection_type: u32,
    /// `verb`: SEND 0, SEND_IMM 1, WRITE 2, WRITE_IMM 3, READ 4, ATOMIC 5.
    pub verb: u32,
    /// `tst`: LAT 0, BW 1.
    pub tst: u32,
    /// `atomicType`: CMP_AND_SWAP 0, FETCH_AND_ADD 1.
    pub atomic_type: u32,
    /// `test_type`: ITERATIONS 0, DURATION 1.
    pub test_type: u32,
    /// `report_fmt`: GBS 0, MBS 1.
    pub report_fmt: u32,
    /// Message size.
    pub size: u64,
    /// Iterations.
    pub iters: u64,
    /// QPs.
    pub num_of_qps: u32,
    /// `-D` seconds (perftest's default 5 is sent in iteration runs too).
    pub duration: u32,
    /// This device's `max_qp_rd_atom` (in the attributes, host order).
    pub max_qp_rd_atom: u32,
}

/// perftest's names of each compared field's values (`NULL`: printed as
/// numbers), in its comparison order.
const ENUMS: [(&str, &[&str]); 7] = [
    ("test_method", &["RUN_REGULAR", "RUN_ALL", "RUN_INFINITELY"]),
    (
        "connection_type",
        &["RC", "UC", "UD", "RawEth", "XRC", "DC", "SRD"],
    ),
    (
        "verb",
        &["SEND", "SEND_IMM", "WRITE", "WRITE_IMM", "READ", "ATOMIC"],
    ),
    ("tst", &["LAT", "BW", "LAT_BY_BW", "FS_RATE"]),
    ("atomicType", &["CMP_AND_SWAP", "FETCH_AND_ADD"]),
    ("test_type", &["ITERATIONS", "DURATION"]),
    ("report_fmt", &["GBS", "MBS"]),
];

impl Negotiate {
    /// The block perftest writes (fields that bareverbs does not use are
    /// 0: `aes_xts`, `use_rdma_cm`, `use_write_with_imm`,
    /// `no_enhanced_reorder`, `sig_offload`, `data_validation`,
    /// `mlx5dv_comp_mask`; of the attributes only the vendor id and
    /// `max_qp_rd_atom` are filled).
    pub fn encode(&self) -> [u8; NEGOTIATE_BYTES] {
        let mut b = [0u8; NEGOTIATE_BYTES];
        let ints = [
            self.test_method,
            self.connection_type,
            self.verb,
            self.tst,
            self.atomic_type,
            self.test_type,
            self.report_fmt,
        ];
        for (i, v) in ints.iter().enumerate() {
            b[4 * i..4 * i + 4].copy_from_slice(&v.to_be_bytes());
        }
        b[32..40].copy_from_slice(&self.size.to_be_bytes());
        b[40..48].copy_from_slice(&self.iters.to_be_bytes());
        b[52..56].copy_from_slice(&self.num_of_qps.to_be_bytes());
        b[56..60].copy_from_slice(&self.duration.to_be_bytes());
        b[ATTR_VENDOR_ID..ATTR_VENDOR_ID + 4].copy_from_slice(&MELLANOX.to_le_bytes());
        b[ATTR_MAX_QP_RD_ATOM..ATTR_MAX_QP_RD_ATOM + 4]
            .copy_from_slice(&self.max_qp_rd_atom.to_le_bytes());
        b
    }
}

/// The compared fields of a block: (name, value, value names), in
/// perftest's order.
fn fields(b: &[u8; NEGOTIATE_BYTES]) -> Vec<(&'static str, u64, Option<&'static [&'static str]>)> {
    let be32 = |o: usize| u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]) as u64;
    let be64 = |o: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[o..o + 8]);
        u64::from_be_bytes(x)
    };
    let off: [&[&str]; 6] = [&["OFF", "ON"]; 6];
    let mut v: Vec<_> = ENUMS
        .iter()
        .enumerate()
        .map(|(i, (n, names))| (*n, be32(4 * i), Some(*names)))
        .collect();
    v.push(("size", be64(32), None));
    v.push(("iters", be64(40), None));
    v.push(("aes_xts", be32(48), Some(off[0])));
    v.push(("num_of_qps", be32(52), None));
    v.push(("duration", be32(56), None));
    v.push(("use_rdma_cm", be32(60), Some(off[1])));
    v.push(("use_write_with_imm", be32(64), Some(off[2])));
    v.push(("no_enhanced_reorder", be32(68), Some(off[3])));
    v.push(("sig_offload", be32(72), Some(off[4])));
    v.push(("data_validation", be32(76), Some(off[5])));
    v
}

/// perftest's name of value `v` (its number when the table has none:
/// perftest would index past its table, bareverbs does not).
fn name_of(v: u64, names: Option<&[&str]>) -> String {
    match names.and_then(|n| n.get(v as usize)) {
        Some(s) => (*s).to_string(),
        None => v.to_string(),
    }
}

impl Oob {
    /// `negotiate_params` with a peer of 6.28 or later (an older peer
    /// negotiates nothing): exchanges the blocks and fails on the first
    /// field that differs with perftest's message; returns the
    /// outstanding reads `out_reads` lowered to the peer's
    /// `max_qp_rd_atom` (perftest's `compare_ibv_device`).
    pub fn negotiate(
        &mut self,
        peer: &Version,
        ours: &Negotiate,
        out_reads: u32,
    ) -> anyhow::Result<u32> {
        if peer.value < NEGOTIATE_SINCE {
            return Ok(out_reads);
        }
        let mine = ours.encode();
        let mut theirs = [0u8; NEGOTIATE_BYTES];
        self.exchange(&mine, &mut theirs)?;
        check(&mine, &theirs)?;
        let o = ATTR_MAX_QP_RD_ATOM;
        let rd = i32::from_le_bytes([theirs[o], theirs[o + 1], theirs[o + 2], theirs[o + 3]]);
        Ok(
            if ours.connection_type != 5 && out_reads as i64 > rd as i64 {
                rd.max(0) as u32
            } else {
                out_reads
            },
        )
    }
}

/// perftest's comparison of two blocks: the first field that differs is
/// " <name> mismatch: local=…, remote=…".
pub(super) fn check(
    mine: &[u8; NEGOTIATE_BYTES],
    theirs: &[u8; NEGOTIATE_BYTES],
) -> anyhow::Result<()> {
    for ((name, l, names), (_, r, _)) in fields(mine).into_iter().zip(fields(theirs)) {
        if l != r {
            bail!(
                "{name} mismatch: local={}, remote={}",
                name_of(l, names),
                name_of(r, names)
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_layout_and_mismatches() {
        let n = Negotiate {
            verb: 2,
            tst: 1,
            report_fmt: 1,
            size: 65536,
            iters: 5000,
            num_of_qps: 1,
            duration: 5,
            max_qp_rd_atom: 16,
            ..Negotiate::default()
        };
        let b = n.encode();
        // perftest_parameters_negotiate: verb at 8, tst at 12, size at 32.
        assert_eq!(&b[8..16], &[0, 0, 0, 2, 0, 0, 0, 1]);
        assert_eq!(&b[32..40], &65536u64.to_be_bytes());
        assert_eq!(&b[40..48], &5000u64.to_be_bytes());
        assert_eq!(&b[56..60], &5u32.to_be_bytes());
        assert_eq!(&b[224..228], &16u32.to_le_bytes());
        assert!(check(&b, &b).is_ok());
        let mut other = n;
        other.verb = 0;
        let e = check(&b, &other.encode()).unwrap_err().to_string();
        assert_eq!(e, "verb mismatch: local=WRITE, remote=SEND");
        other = n;
        other.iters = 1000;
        let e = check(&b, &other.encode()).unwrap_err().to_string();
        assert_eq!(e, "iters mismatch: local=5000, remote=1000");
        // A value past perftest's table names its number.
        let mut bad = b;
        bad[8..12].copy_from_slice(&99u32.to_be_bytes());
        let e = check(&b, &bad).unwrap_err().to_string();
        assert_eq!(e, "verb mismatch: local=WRITE, remote=99");
    }
}
