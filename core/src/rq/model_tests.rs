//! Receive WQE bytes against a model built from the rules of [ref §2.1](crate::reference) and
//! §2.2 alone (not from the queue's code): random geometries, random SGE
//! lists (zero-length SGEs, too many SGEs, single-SGE runs crossing the
//! ring end), random batches and completions.

use core::ptr::NonNull;

use super::*;
use crate::platform::DmaBuf;
use crate::retire::CompletionReject;
use crate::sge::Sge;
use bareverbs_sim::rng::Rng;

fn rounds() -> u64 {
    if cfg!(miri) {
        6
    } else {
        400
    }
}

/// A random SGE list of up to `max_len` entries; a third of the lengths
/// are 0; mostly single SGEs.
fn sgl(r: &mut Rng, max_len: usize) -> Vec<Sge> {
    let len = if r.below(2) == 0 {
        1
    } else {
        r.below(max_len as u64 + 1) as usize
    };
    (0..len)
        .map(|_| Sge {
            addr: r.next_u64(),
            length: if r.below(3) == 0 {
                0
            } else {
                r.next_u64() as u32
            },
            lkey: r.next_u64() as u32,
        })
        .collect()
}

/// [ref §1.5](crate::reference): byte_count, lkey, addr, all big-endian.
fn seg_bytes(len: u32, lkey: u32, addr: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..4].copy_from_slice(&len.to_be_bytes());
    b[4..8].copy_from_slice(&lkey.to_be_bytes());
    b[8..].copy_from_slice(&addr.to_be_bytes());
    b
}
const TERM: [u8; 16] = [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0];

fn read(p: *const u8, len: usize) -> Vec<u8> {
    // SAFETY: `p` is the test's own allocation of `len` bytes; the
    // queue writes it only inside its calls, none runs concurrently.
    (0..len).map(|i| unsafe { p.add(i).read() }).collect()
}

fn dma(p: *mut u64, words: usize) -> DmaBuf {
    DmaBuf {
        cpu: NonNull::new(p.cast::<u8>()).unwrap(),
        iova: 0x1000,
        len: words * 8,
    }
}

#[test]
fn rq_bytes_match_facts_model() {
    let mut r = Rng::new(0x9e37_79b9_7f4a_7c15);
    for _ in 0..rounds() {
        let n = 1usize << r.below(5);
        let shift = 4 + r.below(3) as u32;
        let stride = 1usize << shift;
        let max_gs = r.below(stride as u64 / 16 + 1) as u32;
        let max_post = 1 + r.below(n as u64) as u32;
        let mut ring = vec![0u64; n * stride / 8];
        let mut db = vec![0u64; 1];
        let (rp, dp) = (ring.as_mut_ptr(), db.as_mut_ptr());
        let cfg = RqConfig {
            wqe_shift: shift,
            max_gs,
            max_post,
        };
        // SAFETY: test memory outliving the queue, read only through
        // the same raw pointers between the queue's calls.
        let mut rq = unsafe {
            RecvQueue::new(
                dma(rp, ring.len()),
                dma(dp, 1),
                cfg,
                vec![RqSlot::default(); n],
            )
        }
        .unwrap();
        let mut exp = vec![0u8; n * stride];
        let mut wrid = vec![0u64; n];
        let (mut head, mut tail, mut dbrec) = (0u32, 0u32, [0u8; 4]);
        let mut enabled = false;
        for step in 0..12 {
            if step > 0 && !enabled {
                rq.enable();
                enabled = true;
            }
            let lists: Vec<Vec<Sge>> = (0..r.below(max_post as u64 + 3))
                .map(|_| sgl(&mut r, max_gs as usize + 1))
                .collect();
            let wrs: Vec<RecvWr> = lists
                .iter()
                .map(|l| RecvWr {
                    wr_id: r.next_u64(),
                    sgl: l,
                })
                .collect();
            // The model (ref §2.1).
            let mut want = Ok(());
            let mut nreq = 0u32;
            for (i, wr) in wrs.iter().enumerate() {
                let outstanding = head - tail + nreq;
                if outstanding >= max_post {
                    want = Err(RecvError {
                        index: i,
                        kind: RecvErrorKind::QueueFull {
                            outstanding,
                            max_post,
                        },
                    });
                    break;
                }
                let lim = if enabled { max_gs as i64 } else { -1 };
                if wr.sgl.len() as i64 > lim {
                    want = Err(RecvError {
                        index: i,
                        kind: RecvErrorKind::TooManySges {
                            num: wr.sgl.len(),
                            max: enabled.then_some(max_gs),
                        },
                    });
                    break;
                }
                let ind = ((head + nreq) as usize) & (n - 1);
                let mut j = 0;
                for s in wr.sgl.iter().filter(|s| s.length != 0) {
                    let o = ind * stride + j * 16;
                    exp[o..o + 16].copy_from_slice(&seg_bytes(s.length, s.lkey, s.addr));
                    j += 1;
                }
                if j < max_gs as usize {
                    let o = ind * stride + j * 16;
                    exp[o..o + 16].copy_from_slice(&TERM);
                }
                wrid[ind] = wr.wr_id;
                nreq += 1;
            }
            if nreq > 0 {
                head += nreq;
                dbrec = (head & 0xffff).to_be_bytes();
            }
            // SAFETY: the SGEs are never dereferenced (memory-only ring).
            let got = unsafe { rq.post_recv_raw(&wrs) };
            assert_eq!(got, want);
            assert_eq!(read(rp.cast(), exp.len()), exp, "ring bytes");
            assert_eq!(read(dp.cast(), 4), dbrec, "doorbell record");
            assert_eq!(rq.head(), head);
            for (i, w) in wrid.iter().enumerate() {
                assert_eq!(rq.wrid(i), Some(*w));
            }
            // Completions of the oldest WRs, in order.
            for _ in 0..r.below((head - tail) as u64 + 1) {
                // SAFETY: memory-only ring, never executed by a device.
                let id = unsafe { rq.retire(tail as u16) };
                assert_eq!(id, Ok(wrid[tail as usize & (n - 1)]));
                tail += 1;
            }
        }
        drop(rq);
    }
}

#[test]
fn srq_bytes_match_facts_model() {
    let mut r = Rng::new(0x2545_f491_4f6c_dd1d);
    for _ in 0..rounds() {
        let n = 2usize << r.below(4);
        let shift = 5 + r.below(2) as u32;
        let stride = 1usize << shift;
        let max_gs = r.below(stride as u64 / 16) as u32;
        let nw = 1 + r.below(n as u64) as u32;
        let wait_queue = r.below(2) == 0;
        let mut ring = vec![0u64; n * stride / 8];
        let mut db = vec![0u64; 1];
        let (rp, dp) = (ring.as_mut_ptr(), db.as_mut_ptr());
        let cfg = SrqConfig {
            wqe_shift: shift,
            max_gs,
            nwqes: nw,
            wait_queue,
        };
        // SAFETY: as in the RQ test.
        let mut srq = unsafe {
            SharedReceiveQueue::new(
                dma(rp, ring.len()),
                dma(dp, 1),
                cfg,
                vec![SrqSlot::default(); n],
            )
        }
        .unwrap();
        // The model (ref §2.2): links 0 → 1 → … → nw−1 (and the wait
        // queue nw → … → n−1), head 0, tail nw−1.
        let mut exp = vec![0u8; n * stride];
        let mut next = vec![0u32; n];
        let mut free = vec![false; n];
        let mut posted = vec![false; n];
        let mut wrid = vec![0u64; n];
        let link = |exp: &mut Vec<u8>, next: &mut Vec<u32>, from: u32, to: u32| {
            next[from as usize] = to;
            let o = from as usize * stride + 2;
            exp[o..o + 2].copy_from_slice(&(to as u16).to_be_bytes());
        };
        for i in 0..nw - 1 {
            link(&mut exp, &mut next, i, i + 1);
        }
        if wait_queue {
            for i in nw..(n as u32).saturating_sub(1) {
                link(&mut exp, &mut next, i, i + 1);
            }
        }
        let (mut head, mut tail, mut counter) = (0u32, nw - 1, 0u16);
        let mut dbrec = [0u8; 4];
        for _ in 0..12 {
            let lists: Vec<Vec<Sge>> = (0..r.below(nw as u64 + 2))
                .map(|_| sgl(&mut r, max_gs as usize + 1))
                .collect();
            let wrs: Vec<RecvWr> = lists
                .iter()
                .map(|l| RecvWr {
                    wr_id: r.next_u64(),
                    sgl: l,
                })
                .collect();
            let mut want = Ok(());
            let mut nreq = 0u16;
            for (i, wr) in wrs.iter().enumerate() {
                if wr.sgl.len() > max_gs as usize {
                    want = Err(RecvError {
                        index: i,
                        kind: RecvErrorKind::TooManySges {
                            num: wr.sgl.len(),
                            max: Some(max_gs),
                        },
                    });
                    break;
                }
                if head == tail {
                    // Extend: the slot after the tail if free, else the
                    // first run of free slots after the head, then
                    // before it; none: full.
                    let nt = (tail + 1) % nw;
                    if free[nt as usize] {
                        link(&mut exp, &mut next, tail, nt);
                        tail = nt;
                        free[nt as usize] = false;
                    } else {
                        let run = |lo: u32, hi: u32| -> Option<(u32, u32)> {
                            let s = (lo..hi).find(|&i| free[i as usize])?;
                            let e = (s..hi).find(|&i| !free[i as usize]).unwrap_or(hi);
                            Some((s, e))
                        };
                        let Some((s, e)) = run(head + 1, nw).or_else(|| run(0, head)) else {
                            want = Err(RecvError {
                                index: i,
                                kind: RecvErrorKind::QueueFull {
                                    outstanding: nw - 1,
                                    max_post: nw - 1,
                                },
                            });
                            break;
                        };
                        link(&mut exp, &mut next, tail, s);
                        for k in s..e - 1 {
                            link(&mut exp, &mut next, k, k + 1);
                        }
                        for k in s..e {
                            free[k as usize] = false;
                        }
                        tail = e - 1;
                    }
                }
                let slot = head as usize;
                wrid[slot] = wr.wr_id;
                posted[slot] = true;
                head = next[slot];
                let mut j = 0;
                for s in wr.sgl {
                    let o = slot * stride + 16 + j * 16;
                    exp[o..o + 16].copy_from_slice(&seg_bytes(s.length, s.lkey, s.addr));
                    j += 1;
                }
                if j < max_gs as usize {
                    let o = slot * stride + 16 + j * 16;
                    exp[o..o + 16].copy_from_slice(&TERM);
                }
                nreq += 1;
            }
            if nreq > 0 {
                counter = counter.wrapping_add(nreq);
                dbrec = (counter as u32).to_be_bytes();
            }
            // SAFETY: the SGEs are never dereferenced (memory-only ring).
            let got = unsafe { srq.post_recv_raw(&wrs) };
            assert_eq!(got, want);
            assert_eq!(read(rp.cast(), exp.len()), exp, "ring bytes");
            assert_eq!(read(dp.cast(), 4), dbrec, "doorbell record");
            assert_eq!(
                (srq.head(), srq.tail(), srq.counter()),
                (head, tail, counter)
            );
            for i in 0..n {
                assert_eq!(srq.wrid(i), Some(wrid[i]));
                assert_eq!(srq.is_posted(i), posted[i]);
            }
            let free_now: Vec<u32> = (0..n as u32).filter(|&i| free[i as usize]).collect();
            assert_eq!(srq.free_slots().collect::<Vec<_>>(), free_now);
            // Completions in any order; a slot not posted is refused.
            for _ in 0..r.below(nw as u64 + 1) {
                let slot = r.below(n as u64) as u16;
                // SAFETY: memory-only ring, never executed by a device.
                let got = unsafe { srq.retire(slot) };
                if posted[slot as usize] {
                    assert_eq!(got, Ok(wrid[slot as usize]));
                    posted[slot as usize] = false;
                    free[slot as usize] = true;
                } else {
                    assert_eq!(got, Err(CompletionReject::SlotNotPosted));
                }
            }
        }
        drop(srq);
    }
}
