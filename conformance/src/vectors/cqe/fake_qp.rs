//! The fake QP the provider polled against, as the file header states it:
//! its numbers and the `base + step * i` formulas of its wrid tables.

use anyhow::Result;

use super::text::{num_after, parse_num, value_after};

/// `base + step * i`, as the header writes `sq.wrid[i]=0x5100+i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexFormula {
    /// Constant part.
    pub base: u64,
    /// Multiplier of `i`.
    pub step: u64,
}

impl IndexFormula {
    /// Value for slot `i`.
    pub fn at(&self, i: u64) -> u64 {
        self.base.wrapping_add(self.step.wrapping_mul(i))
    }
    /// Parses `0x5100+i`, `1000+i`, `7+2*i`, `0x10`, `i`.
    pub fn parse(s: &str) -> Result<Self> {
        let s = s.trim().trim_end_matches([',', ';', '.']);
        let mut base = 0u64;
        let mut step = 0u64;
        for term in s.split('+') {
            let t = term.trim();
            if t == "i" {
                step += 1;
            } else if let Some(k) = t.strip_suffix("*i").or_else(|| t.strip_prefix("i*")) {
                step += parse_num(k)?;
            } else {
                base += parse_num(t)?;
            }
        }
        Ok(IndexFormula { base, step })
    }
}

/// The fake QP the provider polled against (from the file header).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeQpSpec {
    /// QP number.
    pub qpn: u32,
    /// User index (carried in CQE srqn_uidx with cqe_version 1).
    pub uidx: u32,
    /// SQ size in WQEBBs.
    pub sq_wqe_cnt: u32,
    /// `sq.wrid[i]`.
    pub sq_wrid: IndexFormula,
    /// `sq.wqe_head[i]`.
    pub sq_wqe_head: IndexFormula,
    /// `sq.wr_data[idx] = value` entries (others 0).
    pub sq_wr_data: Vec<(u32, u32)>,
    /// RQ size in WQEs.
    pub rq_wqe_cnt: u32,
    /// `rq.wrid[i]`.
    pub rq_wrid: IndexFormula,
}

impl Default for FakeQpSpec {
    /// The fake QP described in `cqe_vectors.txt` (used only for facts the
    /// header leaves out).
    fn default() -> Self {
        FakeQpSpec {
            qpn: 0x0abcde,
            uidx: 5,
            sq_wqe_cnt: 256,
            sq_wrid: IndexFormula {
                base: 0x5100,
                step: 1,
            },
            sq_wqe_head: IndexFormula {
                base: 1000,
                step: 1,
            },
            sq_wr_data: Vec::new(),
            rq_wqe_cnt: 16,
            rq_wrid: IndexFormula {
                base: 0x7200,
                step: 1,
            },
        }
    }
}

impl FakeQpSpec {
    /// Updates the spec from the facts stated in one header line.
    pub fn apply_header_line(&mut self, line: &str) {
        if let Some(v) = num_after(line, "qpn=") {
            self.qpn = v as u32;
        }
        if let Some(i) = line.find("user index") {
            // "user index (uidx, ...) = 5"
            if let Some(eq) = line[i..].find('=') {
                if let Ok(v) = parse_num(line[i + eq + 1..].split_whitespace().next().unwrap_or(""))
                {
                    self.uidx = v as u32;
                }
            }
        } else if let Some(v) = num_after(line, "uidx=") {
            self.uidx = v as u32;
        }
        if let Some(v) = num_after(line, "sq.wqe_cnt=") {
            self.sq_wqe_cnt = v as u32;
        }
        if let Some(v) = num_after(line, "rq.wqe_cnt=") {
            self.rq_wqe_cnt = v as u32;
        }
        if let Some(f) = value_after(line, "sq.wrid[i]=").and_then(|v| IndexFormula::parse(v).ok())
        {
            self.sq_wrid = f;
        }
        if let Some(f) =
            value_after(line, "sq.wqe_head[i]=").and_then(|v| IndexFormula::parse(v).ok())
        {
            self.sq_wqe_head = f;
        }
        if let Some(f) = value_after(line, "rq.wrid[i]=").and_then(|v| IndexFormula::parse(v).ok())
        {
            self.rq_wrid = f;
        }
        let mut rest = line;
        while let Some(i) = rest.find("sq.wr_data[") {
            let after = &rest[i + "sq.wr_data[".len()..];
            rest = after;
            let Some(close) = after.find("]=") else {
                continue;
            };
            let Ok(idx) = parse_num(&after[..close]) else {
                continue;
            };
            let val = value_after(after, "]=").unwrap_or("");
            let v = parse_num(val)
                .ok()
                .map(|v| v as u32)
                .or_else(|| bareverbs::cqe::WcOpcode::from_name(val).map(|o| o.as_raw()));
            if let Some(v) = v {
                self.sq_wr_data.retain(|(i, _)| *i != idx as u32);
                self.sq_wr_data.push((idx as u32, v));
            }
        }
    }
    /// `sq.wr_data[idx]`.
    pub fn wr_data(&self, idx: u32) -> u32 {
        self.sq_wr_data
            .iter()
            .find(|(i, _)| *i == idx)
            .map_or(0, |(_, v)| *v)
    }
}
