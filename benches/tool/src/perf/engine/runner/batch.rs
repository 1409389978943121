//! The SGE lists of a pair's slots ([`Lists`]: each message split over
//! `k` SGEs) and the WRs of one bandwidth batch ([`Batch`],
//! [`build_batch`]), each source stamped with its iteration.

use super::super::consts::QKEY;
use super::super::pair::Slot;
use super::super::payload::stamp;
use crate::perftest::format::Verb;
use bareverbs::sq::{RdmaWr, SendFlags, SendOp, SendWr, Sge, UdDest};
use bareverbs::wqe::AddressVector;

/// SGE lists of one pair's slots (`k`-way splits of the message).
pub(super) struct Lists {
    pub(super) a_src: Vec<Vec<Sge>>,
    pub(super) a_dst: Vec<Vec<Sge>>,
    pub(super) b_src: Vec<Vec<Sge>>,
}

/// Splits slot `s`'s first `size` bytes into `k` SGEs (the last takes the
/// remainder).
pub(super) fn split(s: &Slot, size: usize, k: u32) -> Vec<Sge> {
    let k = k.max(1) as usize;
    let base = size / k;
    let mut off = 0;
    (0..k)
        .map(|i| {
            let len = if i == k - 1 { size - off } else { base };
            let g = Sge {
                addr: s.addr + off as u64,
                length: len as u32,
                lkey: s.key,
            };
            off += len;
            g
        })
        .collect()
}

/// One batch of a bandwidth run and how it posts: the verb, message size,
/// slots per area, the fast path (`post_rdma`: neither inline nor UD),
/// the flags of an unsignaled WR, UD and the peer's QPN, whether B's
/// sources are stamped here, the batch's first iteration and each WR's
/// signaled flag.
pub(super) struct Batch<'f> {
    pub(super) verb: Verb,
    pub(super) size: usize,
    pub(super) slots: u64,
    pub(super) fast: bool,
    pub(super) inline_flags: SendFlags,
    pub(super) ud: bool,
    pub(super) qpn_b: u32,
    /// B's sources are this process's to stamp (not a peer host's).
    pub(super) stamp_b: bool,
    pub(super) first: u64,
    pub(super) signaled: &'f [bool],
}

/// The WRs of batch `b` over the pair's slots (each source stamped with
/// its iteration): RDMA WRs on the fast path, send WRs otherwise (the
/// other list stays empty).
#[inline(always)]
pub(super) fn build_batch<'a>(
    b: &Batch<'_>,
    a_src: &[Slot],
    b_src: &[Slot],
    b_dst: &[Slot],
    sg: &'a Lists,
    av: &'a AddressVector,
) -> (Vec<RdmaWr<'a>>, Vec<SendWr<'a>>) {
    let (verb, size, slots) = (b.verb, b.size, b.slots);
    let m = b.signaled.len() as u64;
    let mut rbatch: Vec<RdmaWr<'_>> = Vec::with_capacity(m as usize);
    let mut sbatch: Vec<SendWr<'_>> = Vec::with_capacity(m as usize);
    for (j, it) in (b.first..b.first + m).enumerate() {
        let slot = (it % slots) as usize;
        let sig = b.signaled[j];
        let remote = match verb {
            Verb::Read => {
                if b.stamp_b {
                    stamp(&b_src[slot], size, it);
                }
                b_src[slot]
            }
            _ => {
                stamp(&a_src[slot], size, it);
                b_dst[slot]
            }
        };
        let sgl = match verb {
            Verb::Read => &sg.a_dst[slot][..],
            _ => &sg.a_src[slot][..],
        };
        if b.fast {
            rbatch.push(RdmaWr {
                wr_id: it,
                remote_addr: remote.addr,
                rkey: remote.key,
                sgl,
                signaled: sig,
            });
        } else {
            let op = match verb {
                Verb::Send => SendOp::Send,
                _ => SendOp::Write {
                    remote_addr: remote.addr,
                    rkey: remote.key,
                },
            };
            let mut fl = b.inline_flags;
            if sig {
                fl |= SendFlags::SIGNALED;
            }
            let mut wr = SendWr::new(it, op, sgl).with_flags(fl);
            if b.ud {
                wr = wr.with_ud(UdDest {
                    av,
                    remote_qpn: b.qpn_b,
                    remote_qkey: QKEY,
                });
            }
            sbatch.push(wr);
        }
    }
    (rbatch, sbatch)
}
