//! The one path from safe work requests to the ring-level posts: each WR
//! is checked and its [`LocalSge`](super::LocalSge) tokens converted into a
//! gather buffer that is never zero-filled, and the converted WRs are
//! posted in chunks (one doorbell per chunk) — send, receive and SRQ alike.

use super::LocalSge;
use crate::sq::Sge;
use core::mem::MaybeUninit;
use core::ops::Range;

/// SGEs converted per chunk, and the longest list one WR may carry (the
/// device's `max_sge` is below this on every ConnectX).
pub(crate) const MAX_SGE: usize = 64;
/// WRs per chunk (one doorbell each): a batch of 16 single-SGE WRs is one
/// doorbell, as on the ring-level path.
pub(crate) const CHUNK: usize = 16;

/// Converted SGEs of one chunk; only the first `len` are initialised.
pub(super) struct Gather {
    buf: [MaybeUninit<Sge>; MAX_SGE],
    len: usize,
}

impl Gather {
    pub(super) const fn new() -> Self {
        Gather {
            buf: [const { MaybeUninit::uninit() }; MAX_SGE],
            len: 0,
        }
    }

    /// Appends one WR's converted list: `Ok(None)` when it does not fit
    /// what is left of a non-empty chunk (the chunk ends before it),
    /// `too_long(n)` when no chunk can hold its `n` SGEs; a conversion
    /// error leaves the buffer as it was.
    pub(super) fn append<K>(
        &mut self,
        items: impl ExactSizeIterator<Item = Result<Sge, K>>,
        too_long: impl Fn(usize) -> K,
    ) -> Result<Option<Range<usize>>, K> {
        let (start, n) = (self.len, items.len());
        if n > MAX_SGE {
            return Err(too_long(n));
        }
        if n > MAX_SGE - start {
            return Ok(None);
        }
        for (i, item) in items.enumerate() {
            self.buf[start + i] = MaybeUninit::new(item?);
        }
        self.len = start + n;
        Ok(Some(start..self.len))
    }

    /// The converted SGEs in `r` (a range `append` returned).
    pub(super) fn get(&self, r: Range<usize>) -> &[Sge] {
        let r = r.start.min(self.len)..r.end.min(self.len);
        // SAFETY: `r` lies within `0..len`, every element of which
        // `append` initialised; `MaybeUninit<Sge>` has `Sge`'s layout.
        unsafe {
            core::slice::from_raw_parts(self.buf.as_ptr().add(r.start).cast::<Sge>(), r.len())
        }
    }
}

/// A safe work request: its list of [`LocalSge`] tokens.
pub(crate) trait Gathers {
    /// The WR's gather/scatter list.
    fn sgl(&self) -> &[LocalSge<'_>];
}

/// Posts `wrs`: `check(wr)` applies the WR-level rules, `sge(wr, j, s)`
/// checks and converts SGE `j` (`too_long(n)` is the refusal for a list of
/// `n` SGEs longer than [`MAX_SGE`]); `post(chunk, lists)` builds the
/// ring-level WRs of a chunk over their converted lists and rings them
/// (at most [`CHUNK`] WRs); `err(index, kind)` and
/// `shift(e, by)` build and re-index the caller's error. The WRs before the
/// first refusal are posted; a refused WR writes nothing.
pub(crate) fn post_chunked<W: Gathers, K, E>(
    wrs: &[W],
    mut check: impl FnMut(&W) -> Result<(), K>,
    sge: impl Fn(&W, usize, &LocalSge<'_>) -> Result<Sge, K>,
    too_long: impl Fn(usize) -> K,
    mut post: impl FnMut(&[W], &[&[Sge]]) -> Result<(), E>,
    err: impl Fn(usize, K) -> E,
    shift: impl Fn(E, usize) -> E,
) -> Result<(), E> {
    let mut done = 0;
    while done < wrs.len() {
        let mut g = Gather::new();
        let mut ranges: heapless::Vec<Range<usize>, CHUNK> = heapless::Vec::new();
        let mut bad = None;
        for (k, wr) in wrs[done..].iter().enumerate().take(CHUNK) {
            let items = wr.sgl().iter().enumerate().map(|(j, s)| sge(wr, j, s));
            match check(wr).and_then(|()| g.append(items, &too_long)) {
                Ok(Some(r)) => {
                    let _ = ranges.push(r);
                }
                Ok(None) => break,
                Err(kind) => {
                    bad = Some(err(done + k, kind));
                    break;
                }
            }
        }
        let lists: heapless::Vec<&[Sge], CHUNK> = ranges.iter().map(|r| g.get(r.clone())).collect();
        let n = lists.len();
        if n > 0 {
            post(&wrs[done..done + n], &lists).map_err(|e| shift(e, done))?;
        }
        if let Some(e) = bad {
            return Err(e);
        }
        done += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sge(i: u32) -> Result<Sge, ()> {
        Ok(Sge {
            addr: i as u64,
            length: i,
            lkey: 7,
        })
    }

    /// Lists land back to back, a list that does not fit ends the chunk
    /// without being written, one longer than any chunk is refused, and a
    /// conversion error leaves the buffer as it was.
    #[test]
    fn gather_appends_and_reads_back_what_it_wrote() {
        let mut g = Gather::new();
        let a = g.append((0..3).map(sge), |_| ()).unwrap().unwrap();
        let b = g.append((10..72).map(sge), |_| ()).unwrap();
        assert_eq!(b, None, "62 more do not fit after 3 (64 in all)");
        let c = g.append((100..161).map(sge), |_| ()).unwrap().unwrap();
        assert_eq!((a.clone(), c.clone()), (0..3, 3..64));
        assert_eq!(
            g.get(a).iter().map(|s| s.length).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!(g.get(c)[60].addr, 160);
        let mut e = Gather::new();
        let long = (0..65).map(|i| sge(i).map_err(|()| 0usize));
        assert_eq!(e.append(long, |n| n).map(|_| ()), Err(65));
        let bad = [sge(1), Err(()), sge(3)];
        assert!(e.append(bad.into_iter(), |_| ()).is_err());
        assert_eq!(e.len, 0);
    }
}
