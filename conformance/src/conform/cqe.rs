//! conform: CQE files. Replays every case of a CQE vector file through the
//! real [`bareverbs::cq::CompletionQueue::poll`] over a ring in process
//! memory, with a [`WrResolver`] built from the file's fake QP, and
//! compares the return value, consumer index, doorbell record, queue tails,
//! every work-completion field the provider writes (and only those) and the
//! scatter destination buffer.

use crate::vectors::cqe::{
    parse_cqe_file, read_cqe_file, CqeCase, CqeFile, FakeQpSpec, SetupQueue,
};
use anyhow::Result;
use bareverbs::cq::{CompletionReject, DynCompletionQueue, RecvDone, SendDone, WrResolver};
use bareverbs::cqe::{CqeSize, WcOpcode, WorkCompletion, WrittenFields};
use bareverbs::platform::DmaBuf;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::ptr::NonNull;

/// True when the first lines of a file look like a CQE vector file.
pub fn is_cqe_file(first_lines: &str) -> bool {
    first_lines.contains("=== CQE VECTOR")
        || (first_lines.contains("CQE -> ibv_wc") && first_lines.trim_start().starts_with('#'))
}

/// Resolver over the fake QP of a vector file plus its setup posts.
struct FileResolver<'a> {
    spec: &'a FakeQpSpec,
    qp_id: u32,
    sq_tail: u64,
    rq_tail: u64,
    sq_wrid: HashMap<u32, u64>,
    sq_head: HashMap<u32, u64>,
    rq_wrid: HashMap<u32, u64>,
    /// (queue, index) → SGE buffers.
    bufs: Vec<(SetupQueue, u32, Vec<Vec<u8>>)>,
}

impl<'a> FileResolver<'a> {
    fn new(spec: &'a FakeQpSpec, case: &CqeCase) -> Self {
        let qp_id = if case.cqe_version == 1 {
            spec.uidx
        } else {
            spec.qpn
        };
        let fill = case.expected.dest_fill.unwrap_or(0);
        let mut r = FileResolver {
            spec,
            qp_id,
            sq_tail: 0,
            rq_tail: 0,
            sq_wrid: HashMap::new(),
            sq_head: HashMap::new(),
            rq_wrid: HashMap::new(),
            bufs: Vec::new(),
        };
        let mut sends = 0u64;
        for s in &case.setup {
            match s.queue {
                SetupQueue::Send => {
                    let idx = s.index & spec.sq_wqe_cnt.wrapping_sub(1);
                    r.sq_wrid.insert(idx, s.wr_id);
                    // sq.wqe_head = sq.head + nreq at post time (ref §1.10).
                    r.sq_head.insert(idx, sends);
                    sends += 1;
                }
                SetupQueue::Recv => {
                    r.rq_wrid
                        .insert(s.index & spec.rq_wqe_cnt.wrapping_sub(1), s.wr_id);
                }
            }
            let bufs = s.sge_lens.iter().map(|&l| vec![fill; l as usize]).collect();
            r.bufs.push((s.queue, s.index, bufs));
        }
        r
    }

    fn scatter(&mut self, q: SetupQueue, idx: u32, data: &[u8]) -> bool {
        let Some((_, _, bufs)) = self
            .bufs
            .iter_mut()
            .find(|(bq, bi, _)| *bq == q && *bi == idx)
        else {
            return true;
        };
        let mut rest = data;
        for b in bufs.iter_mut() {
            let n = rest.len().min(b.len());
            b[..n].copy_from_slice(&rest[..n]);
            rest = &rest[n..];
        }
        rest.is_empty()
    }

    fn dest(&self) -> Vec<u8> {
        self.bufs
            .iter()
            .flat_map(|(_, _, b)| b.iter().flatten().copied())
            .collect()
    }
}

impl WrResolver for FileResolver<'_> {
    fn send_done(&mut self, qp: u32, wqe_counter: u16) -> Result<SendDone, CompletionReject> {
        if qp != self.qp_id {
            return Err(CompletionReject::UnknownQp);
        }
        let idx = wqe_counter as u32 & self.spec.sq_wqe_cnt.wrapping_sub(1);
        let head = self
            .sq_head
            .get(&idx)
            .copied()
            .unwrap_or_else(|| self.spec.sq_wqe_head.at(idx as u64));
        self.sq_tail = head.wrapping_add(1);
        let wr_id = self
            .sq_wrid
            .get(&idx)
            .copied()
            .unwrap_or_else(|| self.spec.sq_wrid.at(idx as u64));
        let raw = if self.sq_wrid.contains_key(&idx) {
            0
        } else {
            self.spec.wr_data(idx)
        };
        let wr_data = WcOpcode::from_raw(raw).unwrap_or(WcOpcode::Send);
        Ok(SendDone { wr_id, wr_data })
    }
    fn recv_done(&mut self, qp: u32, wqe_counter: u16) -> Result<RecvDone, CompletionReject> {
        if qp != self.qp_id {
            return Err(CompletionReject::UnknownQp);
        }
        let idx = wqe_counter as u32 & self.spec.rq_wqe_cnt.wrapping_sub(1);
        self.rq_tail += 1;
        let wr_id = self
            .rq_wrid
            .get(&idx)
            .copied()
            .unwrap_or_else(|| self.spec.rq_wrid.at(idx as u64));
        Ok(RecvDone {
            wr_id,
            rx_csum: false,
        })
    }
    fn scatter_to_send(&mut self, qp: u32, wqe_counter: u16, data: &[u8]) -> bool {
        let idx = wqe_counter as u32 & self.spec.sq_wqe_cnt.wrapping_sub(1);
        qp == self.qp_id && self.scatter(SetupQueue::Send, idx, data)
    }
    fn scatter_to_recv(&mut self, qp: u32, wqe_counter: u16, data: &[u8]) -> bool {
        let idx = wqe_counter as u32 & self.spec.rq_wqe_cnt.wrapping_sub(1);
        qp == self.qp_id && self.scatter(SetupQueue::Recv, idx, data)
    }
}

/// Value and written-flag of a work-completion field by its vector name.
fn wc_field(wc: &WorkCompletion, name: &str) -> Option<(u64, WrittenFields)> {
    use WrittenFields as W;
    Some(match name {
        "wr_id" => (wc.wr_id, W::WR_ID),
        "status" => (wc.status.as_raw() as u64, W::STATUS),
        "opcode" => (wc.opcode.as_raw() as u64, W::OPCODE),
        "vendor_err" => (wc.vendor_err as u64, W::VENDOR_ERR),
        "byte_len" => (wc.byte_len as u64, W::BYTE_LEN),
        "imm_data" => (wc.imm_union() as u64, W::IMM_DATA | W::INVALIDATED_RKEY),
        "invalidated_rkey" => (wc.invalidated_rkey as u64, W::INVALIDATED_RKEY),
        "qp_num" => (wc.qp_num as u64, W::QP_NUM),
        "src_qp" => (wc.src_qp as u64, W::SRC_QP),
        "wc_flags" => (wc.wc_flags.bits() as u64, W::WC_FLAGS),
        "pkey_index" => (wc.pkey_index as u64, W::PKEY_INDEX),
        "slid" => (wc.slid as u64, W::SLID),
        "sl" => (wc.sl as u64, W::SL),
        "dlid_path_bits" => (wc.dlid_path_bits as u64, W::DLID_PATH_BITS),
        _ => return None,
    })
}

/// Runs one case; `Ok(())` or the first difference as `field expected X got Y`.
pub fn run_case(spec: &FakeQpSpec, case: &CqeCase) -> std::result::Result<(), String> {
    let cqe_size = CqeSize::from_bytes(case.cqe_size).map_err(|e| format!("cqe_size: {e}"))?;
    let ncqe = case.ncqe as usize;
    let ring_len = ncqe
        .checked_mul(case.cqe_size)
        .ok_or("ring size overflow")?;
    // u64 backing keeps the ring 8-aligned like a page would be.
    let mut mem = vec![0u64; (ring_len + 8).div_ceil(8)];
    let base = NonNull::new(mem.as_mut_ptr().cast::<u8>()).ok_or("null")?;
    let ring = DmaBuf {
        cpu: base,
        iova: 0x10_0000,
        len: ring_len,
    };
    let dbrec = DmaBuf {
        // SAFETY: mem holds at least ring_len + 8 bytes, so base + ring_len
        // is in bounds.
        cpu: unsafe { base.add(ring_len) },
        iova: 0x20_0000,
        len: 8,
    };
    // SAFETY: `mem` outlives `cq` (both locals; cq dropped first) and is
    // accessed only through the CQ's raw pointers and the raw writes below.
    let mut cq = unsafe {
        DynCompletionQueue::with_entries(ncqe, ring, dbrec, 0x80, cqe_size, case.cqe_version)
    }
    .map_err(|e| format!("CQ: {e}"))?;
    cq.init_ring();
    for c in &case.cqes {
        if c.bytes.len() != case.cqe_size {
            return Err(format!(
                "CQE in slot {} has {} bytes, cqe_size {}",
                c.slot,
                c.bytes.len(),
                case.cqe_size
            ));
        }
        let off = (c.slot as usize % ncqe) * case.cqe_size;
        // SAFETY: off + cqe_size <= ring_len; raw copy into the ring.
        unsafe {
            std::ptr::copy_nonoverlapping(c.bytes.as_ptr(), base.as_ptr().add(off), c.bytes.len())
        };
    }
    cq.set_consumer_index(case.ci_before);
    let mut r = FileResolver::new(spec, case);
    let mut out = vec![WorkCompletion::default(); case.ne];
    let res = cq.poll(&mut r, &mut out);
    let e = &case.expected;
    let (ret, n) = match res {
        Ok(n) => (n as i64, n),
        Err(_) => (-2, 0),
    };
    let cmp = |field: &str, exp: Option<u64>, got: u64| -> std::result::Result<(), String> {
        match exp {
            Some(x) if x != got => Err(format!("{field} expected {x:#x} got {got:#x}")),
            _ => Ok(()),
        }
    };
    if ret != e.ret {
        return Err(format!("ret expected {} got {}", e.ret, ret));
    }
    cmp(
        "cons_index after",
        e.cons_index_after,
        cq.consumer_index() as u64,
    )?;
    cmp("dbrec[SET_CI]", e.dbrec, cq.read_dbrec(0) as u64)?;
    cmp("sq.tail after", e.sq_tail, r.sq_tail)?;
    cmp("rq.tail after", e.rq_tail, r.rq_tail)?;
    if e.ret > 0 && e.wcs.len() != n {
        return Err(format!("wc count expected {} got {}", e.wcs.len(), n));
    }
    for (i, (exp, got)) in e.wcs.iter().zip(out.iter()).enumerate() {
        for (name, v) in &exp.fields {
            let Some((val, flag)) = wc_field(got, name) else {
                continue;
            };
            let written = got.written.intersects(flag);
            match v {
                Some(x) => {
                    if !written {
                        return Err(format!("wc[{i}].{name} expected {x:#x} got <not written>"));
                    }
                    if *x != val {
                        return Err(format!("wc[{i}].{name} expected {x:#x} got {val:#x}"));
                    }
                }
                None => {
                    if written {
                        return Err(format!("wc[{i}].{name} expected <not written by provider> got written {val:#x}"));
                    }
                }
            }
        }
    }
    if let Some(d) = &e.dest_after {
        let got = r.dest();
        if &got != d {
            let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
            return Err(format!(
                "destination buffer expected {} got {}",
                hex(d),
                hex(&got)
            ));
        }
    }
    Ok(())
}

/// Replays every case of `path`, printing `PASS <file> vector N: title` or
/// `FAIL <file> vector N: title: <field> expected X got Y` per case.
/// Returns `(passed, failed)`.
pub fn run_cqe_file(path: &Path, out: &mut dyn Write) -> Result<(usize, usize)> {
    let f = read_cqe_file(path)?;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    report_cases(&name, &f, out)
}

/// [`run_cqe_file`] on a file's text; `name` labels the report lines.
pub fn run_cqe_text(name: &str, text: &str, out: &mut dyn Write) -> Result<(usize, usize)> {
    let f = parse_cqe_file(text).map_err(|e| e.context(format!("parsing {name}")))?;
    report_cases(name, &f, out)
}

/// Runs every case of a parsed file, one PASS/FAIL line each.
fn report_cases(name: &str, f: &CqeFile, out: &mut dyn Write) -> Result<(usize, usize)> {
    let (mut pass, mut fail) = (0, 0);
    for case in &f.cases {
        match run_case(&f.qp, case) {
            Ok(()) => {
                pass += 1;
                writeln!(out, "PASS {name} vector {}: {}", case.number, case.title)?;
            }
            Err(why) => {
                fail += 1;
                writeln!(
                    out,
                    "FAIL {name} vector {}: {}: {why}",
                    case.number, case.title
                )?;
            }
        }
    }
    Ok((pass, fail))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_cqe_files_all_pass() {
        let dir = crate::vectors::vectors_dir();
        let mut total = 0;
        for file in ["cqe_vectors.txt", "cqe_random_visible.txt"] {
            let p = dir.join(file);
            assert!(
                p.exists(),
                "vector file missing: {} (set BAREVERBS_VECTORS)",
                p.display()
            );
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(is_cqe_file(&text[..text.len().min(2000)]));
            let mut out = Vec::new();
            let (pass, fail) = run_cqe_file(&p, &mut out).unwrap();
            let out = String::from_utf8(out).unwrap();
            let failures: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
            assert_eq!(
                fail,
                0,
                "{} failures, first: {:#?}",
                fail,
                &failures[..failures.len().min(10)]
            );
            assert_eq!(pass, text.matches("=== CQE VECTOR").count());
            total += pass;
        }
        assert!(total > 400);
    }

    #[test]
    fn detection() {
        assert!(!is_cqe_file("# mlx5 WQE ground truth\n=== WQE VECTOR 1"));
    }
}
