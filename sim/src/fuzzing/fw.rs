//! Fuzz body `fw_commands`: arbitrary command inputs to the firmware model
//! with the data path connected ([`crate::fw::bring_up_on`]), interleaved
//! with arbitrary doorbells, must never panic the firmware model, the
//! bridge to the data path, the simulator, or the driver (whose raw
//! [`Device::run`](bareverbs::device::Device::run) submits them and whose
//! teardown must survive whatever state they leave).
//!
//! Input layout (missing bytes read as zero):
//! * 256 bytes: the pattern a 64 KiB scratch DMA buffer is filled with (so
//!   rings created over it hold fuzzer WQEs);
//! * then records `[kind, len_lo, len_hi, out_sel]` + `len` payload bytes:
//!   * `kind < 0xF0`: a command, opcode `OPCODES[kind % OPCODES.len()]`;
//!     the payload is the input from byte 8 (after opcode/op_mod, which
//!     come from the table and `out_sel & 0x0f`), output length
//!     [`OUT_LENS`]`[out_sel >> 5]`;
//!   * `0xF0`: 8-byte send doorbell (payload 8 bytes) on the driver's UAR;
//!   * `0xF1`: CQ arm doorbell; `0xF2`: one BlueFlame chunk (64 bytes)
//!     and the flush.
//!
//! Addresses: every 8-byte big-endian word of a command input whose top
//! 32 bits are [`MARK`] is replaced by `scratch + (low 32 bits mod 64 KiB)`
//! (8-byte aligned), so inputs can name real DMA memory.

use crate::device::Fabric;
use crate::fw::{bring_up_on, FwConfig, SimDevice};
use bareverbs::cmd::op;
use bareverbs::cmd::ops::{self, CqParams, MkeyParams, QpParams, Req};
use bareverbs::device::{AddressPath, DeviceConfig, Init2Rtr, Rst2Init, Rtr2Rts};
use bareverbs::mr::Access;
use bareverbs::platform::{DmaAllocator, DmaBuf, Uar, BF_OFFSET, CQ_DOORBELL};
use bareverbs::qp::ServiceType;
use bareverbs::wqe::{CtrlSeg, DataSeg, FmCeSe, Opcode, RaddrSeg, DS_BYTES, SEND_WQE_BB};
use std::mem::size_of;

/// The marker of an address word (top 32 bits).
pub const MARK: u32 = 0xA5A5_A5A5;
/// Scratch DMA bytes.
pub const SCRATCH: usize = 64 * 1024;

/// Output lengths the fuzzer chooses from (`out_sel >> 5`): header only,
/// small outputs, QUERY_QP's 0x110, capability pages, a mailbox chain.
pub const OUT_LENS: [usize; 8] = [0x10, 0x20, 0x40, 0x110, 0x400, 0x810, 0x1010, 0x10];

/// Opcodes the fuzzer chooses from (every command the model answers plus
/// one it does not).
pub const OPCODES: [u16; 39] = [
    op::ALLOC_PD,
    op::DEALLOC_PD,
    op::CREATE_MKEY,
    op::DESTROY_MKEY,
    op::CREATE_CQ,
    op::DESTROY_CQ,
    op::CREATE_QP,
    op::DESTROY_QP,
    op::RST2INIT_QP,
    op::INIT2INIT_QP,
    op::INIT2RTR_QP,
    op::RTR2RTS_QP,
    op::RTS2RTS_QP,
    op::SQERR2RTS_QP,
    op::QP_2ERR,
    op::QP_2RST,
    op::QUERY_QP,
    op::CREATE_SRQ,
    op::DESTROY_SRQ,
    op::CREATE_EQ,
    op::DESTROY_EQ,
    op::ALLOC_UAR,
    op::DEALLOC_UAR,
    op::QUERY_HCA_CAP,
    op::QUERY_VPORT_STATE,
    op::ACCESS_REG,
    op::QUERY_PAGES,
    op::MANAGE_PAGES,
    op::TEARDOWN_HCA,
    op::DISABLE_HCA,
    0x7ff,
    op::MODIFY_NIC_VPORT_CONTEXT,
    op::QUERY_NIC_VPORT_CONTEXT,
    op::QUERY_ADAPTER,
    op::QUERY_HCA_VPORT_CONTEXT,
    op::CREATE_RMP,
    op::DESTROY_RMP,
    op::SET_ROCE_ADDRESS,
    op::QUERY_ROCE_ADDRESS,
];

fn take<'a>(data: &mut &'a [u8], n: usize) -> &'a [u8] {
    let k = n.min(data.len());
    let (a, b) = data.split_at(k);
    *data = b;
    a
}

/// Most WQEs one pass over a queue handles in a run
/// ([`Fabric::set_pass_limit`]): rings built over the scratch buffer may
/// claim thousands of WQEs; 64 exercise every flush and fetch path.
pub const PASS_LIMIT: u32 = 64;

/// The firmware the fuzz body brings up: the default model, lending it
/// one boot page and two init pages (instead of 8 and 32) so each input
/// allocates fewer DMA pages; objects past the free ones still charge
/// pages, so page requests keep arriving while commands run.
pub fn fw_config() -> FwConfig {
    FwConfig {
        boot_pages: 1,
        init_pages: 2,
        ..FwConfig::default()
    }
}

/// A fresh simulated function and its scratch buffer (deterministic: the
/// fuzz body and seed generation see the same object numbers).
pub fn setup() -> Option<(Fabric, SimDevice, DmaBuf)> {
    let fabric = Fabric::new(7);
    fabric.set_pass_limit(PASS_LIMIT);
    let (d, _nic) = bring_up_on(&fabric, fw_config(), DeviceConfig::default()).ok()?;
    let scratch = d.allocator().alloc(SCRATCH, 4096)?;
    Some((fabric, d, scratch))
}

/// Fills the scratch buffer with `pattern` repeated (nothing if empty):
/// one copy of the pattern, then the filled prefix copied onto the rest,
/// doubling each time (16 copies for 64 KiB instead of a division per byte).
pub fn fill_scratch(scratch: &DmaBuf, pattern: &[u8]) {
    let len = scratch.len.min(SCRATCH);
    if pattern.is_empty() || len == 0 {
        return;
    }
    let base = scratch.cpu.as_ptr();
    let first = pattern.len().min(len);
    // SAFETY: `first <= len <= scratch.len`: the pattern (host memory)
    // is copied into the start of this run's live DMA buffer; the two
    // never overlap.
    unsafe { core::ptr::copy_nonoverlapping(pattern.as_ptr(), base, first) };
    let mut done = first;
    while done < len {
        let n = done.min(len - done);
        // SAFETY: source `[0, n)` and destination `[done, done + n)` are
        // inside the buffer (`done + n <= len`) and disjoint (`n <= done`);
        // raw copies within DMA memory no other code touches during the
        // fill.
        unsafe { core::ptr::copy_nonoverlapping(base, base.add(done), n) };
        done += n;
    }
}

/// Replaces marked address words of `input` by scratch addresses.
pub fn patch_addresses(input: &mut [u8], scratch: &DmaBuf) {
    for w in input.chunks_exact_mut(8) {
        let v = u64::from_be_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        if (v >> 32) as u32 == MARK {
            let off = ((v & 0xffff_ffff) % SCRATCH as u64) & !7;
            w.copy_from_slice(&(scratch.iova + off).to_be_bytes());
        }
    }
}

/// What one run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FwRun {
    /// Commands that completed with status OK.
    pub ok: u32,
    /// Commands that failed (any error).
    pub failed: u32,
    /// Doorbell records.
    pub doorbells: u32,
}

/// The fuzz body.
pub fn fw_commands(data: &[u8]) {
    let _ = fw_commands_run(data);
}

/// The fuzz body, reporting what happened (for seed tests).
pub fn fw_commands_run(mut data: &[u8]) -> FwRun {
    let mut run = FwRun::default();
    let Some((_fabric, mut d, scratch)) = setup() else {
        return run;
    };
    fill_scratch(&scratch, take(&mut data, 256));
    let uar_index = d.uar_index();
    let mut uar = d.map_uar(uar_index).ok();
    let mut steps = 0;
    while !data.is_empty() && steps < 64 {
        steps += 1;
        let h = take(&mut data, 4);
        let [kind, lo, hi, out_sel] = [
            h.first().copied().unwrap_or(0),
            h.get(1).copied().unwrap_or(0),
            h.get(2).copied().unwrap_or(0),
            h.get(3).copied().unwrap_or(0),
        ];
        let len = u16::from_le_bytes([lo, hi]) as usize;
        let payload = take(&mut data, len);
        match kind {
            0xF0..=0xF2 => {
                let Some(u) = uar.as_mut() else { continue };
                run.doorbells += 1;
                if kind == 0xF2 {
                    let mut c = [0u8; 64];
                    c[..payload.len().min(64)].copy_from_slice(&payload[..payload.len().min(64)]);
                    u.write_bf(BF_OFFSET, &c);
                    u.flush();
                } else {
                    let mut v = [0u8; 8];
                    v[..payload.len().min(8)].copy_from_slice(&payload[..payload.len().min(8)]);
                    u.write64(if kind == 0xF0 { BF_OFFSET } else { CQ_DOORBELL }, v);
                }
            }
            0xF3..=0xFF => {}
            _ => {
                let opcode = OPCODES[kind as usize % OPCODES.len()];
                let inb = d.input();
                let in_len = (8 + payload.len()).clamp(16, inb.len());
                inb[..in_len].fill(0);
                inb[0..2].copy_from_slice(&opcode.to_be_bytes());
                inb[6..8].copy_from_slice(&((out_sel & 0x0f) as u16).to_be_bytes());
                let n = payload.len().min(in_len - 8);
                inb[8..8 + n].copy_from_slice(&payload[..n]);
                patch_addresses(&mut inb[..in_len], &scratch);
                let out_len = OUT_LENS[(out_sel >> 5) as usize].min(inb.len());
                // SAFETY: the device is the simulator. Its firmware model and
                // data path reach host memory only through
                // `HeapDma::translate`, which refuses addresses outside live
                // allocations, and every address the fuzzed input names was
                // patched into `scratch`, which outlives the device (freed
                // after teardown below). A command that breaks the driver's
                // bookkeeping can therefore only cause typed errors or leaks,
                // which is what this target hunts for.
                match unsafe {
                    d.run(Req {
                        opcode,
                        in_len,
                        out_len,
                    })
                } {
                    Ok(_) => run.ok += 1,
                    Err(_) => run.failed += 1,
                }
            }
        }
    }
    drop(uar);
    let (_rep, _bar, _clock, alloc) = d.teardown();
    // SAFETY: the function is torn down; nothing names the scratch buffer.
    unsafe { alloc.free(scratch) };
    run
}

/// Seed inputs: a well-formed object life cycle (PD, memory key, CQ, QP
/// over scratch pages, the connection commands, an 8-byte doorbell, error,
/// reset, destroys), built with the core's command builders against a
/// live run of [`setup`] so the object numbers match.
pub fn seeds() -> Vec<Vec<u8>> {
    let Some((_f, d, scratch)) = setup() else {
        return Vec::new();
    };
    let mut s = Seeder {
        d,
        scratch,
        out: vec![0u8; 256],
    };
    let uar = s.d.uar_index();
    let (cq, qp) = s.create_objects(uar);
    s.connect(qp);
    s.use_and_destroy(qp, cq);
    let _ = s.d.teardown();
    let out = s.out;
    let second = with_wqe_pattern(&out);
    vec![out, second]
}

/// A seed being written: the live function its commands run on (so later
/// records can name earlier results), its scratch buffer, the bytes so far.
struct Seeder {
    d: SimDevice,
    scratch: DmaBuf,
    out: Vec<u8>,
}

/// An address word naming scratch offset `off` (see [`MARK`]).
fn mark(off: u64) -> u64 {
    (MARK as u64) << 32 | off
}

impl Seeder {
    /// A record for command `opcode` built into the input buffer by `build`.
    fn cmd(&mut self, build: &dyn Fn(&mut [u8]) -> Req) -> u32 {
        let Seeder { d, scratch, out } = self;
        let r = build(d.input());
        let Some(k) = OPCODES.iter().position(|&o| o == r.opcode) else {
            return 0;
        };
        let payload = d.input()[8..r.in_len].to_vec();
        let op_mod = d.input()[7] & 0x0f;
        out.push(k as u8);
        out.extend_from_slice(&(payload.len() as u16).to_le_bytes());
        let sel = OUT_LENS
            .iter()
            .position(|&l| l >= r.out_len)
            .unwrap_or(OUT_LENS.len() - 1) as u8;
        out.push(sel << 5 | op_mod);
        out.extend_from_slice(&payload);
        // Run it for real so later records can name its result.
        let mut inb = d.input()[..r.in_len].to_vec();
        patch_addresses(&mut inb, scratch);
        d.input()[..r.in_len].copy_from_slice(&inb);
        // SAFETY: the seed commands build a well-formed object life cycle
        // over `scratch` (addresses patched above), which outlives the
        // device; the model reaches memory only through HeapDma::translate.
        unsafe { d.run(r) }.map(ops::parse_obj_id).unwrap_or(0)
    }

    /// PD, memory key, CQ and QP (RC, on the CQ, over scratch pages, UAR
    /// `uar`); returns (CQ number, QP number).
    fn create_objects(&mut self, uar: u32) -> (u32, u32) {
        let pd = self.cmd(&|b| ops::alloc_pd(b));
        let all = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
        let _mk = self.cmd(&|b| {
            ops::create_mkey(
                b,
                &MkeyParams {
                    pd,
                    access: all,
                    start_addr: 0x1000,
                    len: 0x4000,
                    pages_iova: mark(0x8000),
                    npages: 4,
                    log_page_size: 12,
                    variant: 0,
                },
            )
        });
        let cq = self.cmd(&|b| {
            ops::create_cq(
                b,
                &CqParams {
                    log_cq_size: 4,
                    cqe_sz: 0,
                    uar_page: uar,
                    c_eqn: 0,
                    dbr_addr: mark(0xF000),
                    pages_iova: mark(0x0000),
                    npages: 1,
                },
            )
        });
        let qp = self.cmd(&|b| {
            ops::create_qp(
                b,
                &QpParams {
                    st: ServiceType::Rc,
                    pd,
                    uar_page: uar,
                    log_sq_size: 2,
                    no_sq: false,
                    log_rq_size: 2,
                    log_rq_stride: 0,
                    srqn: None,
                    ts_format: 0,
                    cqn_snd: cq,
                    cqn_rcv: cq,
                    dbr_addr: mark(0xF040),
                    user_index: 0,
                    pages_iova: mark(0x2000),
                    npages: 1,
                },
            )
        });
        (cq, qp)
    }

    /// RST2INIT, INIT2RTR (to itself) and RTR2RTS of QP `qp`.
    fn connect(&mut self, qp: u32) {
        let r2i = Rst2Init {
            port: 1,
            remote_read: true,
            remote_write: true,
            ..Default::default()
        };
        self.cmd(&|b| ops::rst2init(b, qp, &r2i));
        let i2r = Init2Rtr {
            mtu: 3,
            log_msg_max: 30,
            remote_qpn: qp,
            path: AddressPath {
                fl: true,
                port: 1,
                ..Default::default()
            },
            ..Default::default()
        };
        self.cmd(&|b| ops::init2rtr(b, qp, &i2r));
        self.cmd(&|b| ops::rtr2rts(b, qp, &Rtr2Rts::default()));
    }

    /// A send doorbell naming QP `qp`, QUERY_QP, error and reset, then the
    /// QP's and CQ `cq`'s destroys.
    fn use_and_destroy(&mut self, qp: u32, cq: u32) {
        // Send doorbell naming the QP, WQE index 1.
        self.out.extend_from_slice(&[0xF0, 8, 0, 0]);
        self.out.extend_from_slice(&0x0000_0100u32.to_be_bytes());
        self.out.extend_from_slice(&(qp << 8).to_be_bytes());
        self.cmd(&|b| ops::query_qp(b, qp));
        self.cmd(&|b| ops::qp_2err(b, qp));
        self.cmd(&|b| ops::qp_2rst(b, qp));
        self.cmd(&|b| ops::with_obj(b, op::DESTROY_QP, qp));
        self.cmd(&|b| ops::with_obj(b, op::DESTROY_CQ, cq));
    }
}

/// A second seed: `out`, with the scratch pattern a ring of WRITE
/// WQE-like bytes (ctrl opcode RDMA_WRITE, DS 3, signaled).
fn with_wqe_pattern(out: &[u8]) -> Vec<u8> {
    /// DS of a WRITE with one data segment: control, remote address, data.
    const WRITE_DS: u8 =
        ((size_of::<CtrlSeg>() + size_of::<RaddrSeg>() + size_of::<DataSeg>()) / DS_BYTES) as u8;
    let mut second = out.to_vec();
    for (i, b) in second[..256].iter_mut().enumerate() {
        *b = match i % SEND_WQE_BB {
            CtrlSeg::OPCODE_BYTE => Opcode::RdmaWrite.bits(),
            CtrlSeg::DS_BYTE => WRITE_DS,
            CtrlSeg::FM_CE_SE_BYTE => FmCeSe::CQ_UPDATE.bits(),
            _ => (i as u8).wrapping_mul(13),
        };
    }
    second
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dma::HeapDma;

    /// The doubling fill leaves byte `i` equal to `pattern[i % len]`, the
    /// input layout's definition, for pattern lengths that divide the
    /// buffer and ones that do not.
    #[test]
    fn fill_scratch_repeats_the_pattern() {
        let dma = HeapDma::new();
        let buf = dma.alloc(SCRATCH, 4096).unwrap();
        for plen in [1usize, 2, 3, 7, 64, 100, 255, 256] {
            let pattern: Vec<u8> = (0..plen).map(|k| (k * 37 + plen) as u8 | 1).collect();
            // SAFETY: zeroes this test's own DMA buffer of SCRATCH bytes.
            unsafe { core::ptr::write_bytes(buf.cpu.as_ptr(), 0, SCRATCH) };
            fill_scratch(&buf, &pattern);
            for i in 0..SCRATCH {
                // SAFETY: i < SCRATCH, inside the live buffer.
                let b = unsafe { *buf.cpu.as_ptr().add(i) };
                assert_eq!(b, pattern[i % plen], "pattern length {plen}, byte {i}");
            }
        }
    }
}
