//! A loopback self-test of a brought-up device: "does this card move bytes
//! with this driver?", in one call, with the same code on hardware (VFIO)
//! and on the simulator.
//!
//! [`Device::loopback_selftest`] creates, by command, a PD, one memory key
//! over a 16 KiB DMA buffer, two CQs and two RC QPs, connects the QPs to
//! each other through the port's force-loopback path (`fl = 1`, the
//! minimal RC connection of [ref §7.11](crate::reference)), then runs through the data path:
//!
//! 1. RDMA WRITE of 4096 bytes from QP A's source area into B's target area;
//! 2. SEND of 1000 bytes from A into a receive B posted;
//! 3. RDMA READ of B's target area back into A's read area;
//!
//! checking after each step that the completion is a success of the right
//! opcode and length, and that every byte arrived (read back with volatile
//! loads: the buffer is device-visible memory). Every object is destroyed
//! afterwards, whether the test passed or not. Waiting is bounded by
//! [`SelfTestOptions::timeout_us`] on the device's [`Clock`].
//!
//! Buffer layout (one key, offsets in bytes):
//!
//! | range | use |
//! | --- | --- |
//! | 0 – 4095 | A's source (pattern) |
//! | 4096 – 8191 | B's WRITE target |
//! | 8192 – 12287 | B's receive buffer |
//! | 12288 – 16383 | A's READ destination |

use crate::cmd::{Bar0, Clock};
use crate::cq::{CompletionQueue, PollError};
use crate::cqe::{CqeSize, WcOpcode, WcStatus, WorkCompletion};
use crate::device::{
    AddressPath, CqHandle, Device, DeviceError, Init2Rtr, Mkey, Pd, QpHandle, QpSpec, Rst2Init,
    Rtr2Rts, UarMap,
};
use crate::mr::{Access, MemoryRegion};
use crate::platform::{DmaAllocator, DmaBuf, BF_OFFSET};
use crate::qp::QpType;
use crate::queue_pair::QueuePair;
use crate::rq::{RecvError, RecvWr, RqConfig, RqSlot};
use crate::sq::{BlueFlame, PostError, SendFlags, SendOp, SendWr, SqConfig, SqSlot};
use core::fmt;

const AREA: usize = 4096;
const BUF_LEN: usize = 4 * AREA;
const SRC: usize = 0;
const DST: usize = AREA;
const RECV: usize = 2 * AREA;
const READ: usize = 3 * AREA;
const SEND_LEN: u32 = 1000;
/// SQ ring of the test QPs (WQEBBs) and RQ ring (WQEs).
const SQ_BBS: usize = 64;
const RQ_WQES: usize = 32;
const CQES: usize = 64;

/// Self-test settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelfTestOptions {
    /// Longest wait for one completion (microseconds of the device clock).
    pub timeout_us: u64,
    /// IB MTU enum for the path (1 = 256 … 5 = 4096); 3 (1024) fits a
    /// 1500-byte Ethernet port.
    pub mtu: u8,
    /// Ring doorbells through BlueFlame instead of the 8-byte doorbell
    /// ([ref §4.2](crate::reference); off by default, as over VFIO's uncached BAR mapping).
    pub blueflame: bool,
    /// Port to loop back on (1-based).
    pub port: u8,
}

impl Default for SelfTestOptions {
    fn default() -> Self {
        SelfTestOptions {
            timeout_us: 1_000_000,
            mtu: 3,
            blueflame: false,
            port: 1,
        }
    }
}

/// What the self-test did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelfTestReport {
    /// QP numbers of the two QPs (A, B).
    pub qpns: (u32, u32),
    /// Memory key used (lkey = rkey).
    pub key: u32,
    /// Bytes verified after the WRITE, the SEND and the READ.
    pub verified_bytes: (u32, u32, u32),
    /// Completions polled (all successful).
    pub completions: u32,
    /// Device-clock time from the first post to the last completion (µs).
    pub elapsed_us: u64,
}

/// Which step failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// Creating objects, connecting QPs or building the queues.
    Setup,
    /// The RDMA WRITE.
    Write,
    /// The SEND / RECV.
    Send,
    /// The RDMA READ.
    Read,
}

impl Step {
    const fn name(self) -> &'static str {
        match self {
            Step::Setup => "setup",
            Step::Write => "RDMA WRITE",
            Step::Send => "SEND/RECV",
            Step::Read => "RDMA READ",
        }
    }
}

/// Why the self-test failed.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum SelfTestError {
    /// The device does not allow force-loopback RC QPs in its current
    /// RoCE state (RoCE capability `fl_rc_qp_when_roce_enabled` /
    /// `_disabled` = 0); nothing was created.
    LoopbackUnsupported,
    /// A command or allocation failed.
    Device(Step, DeviceError),
    /// The data-path queues refused the created objects' memory (`what`).
    Queue(&'static str),
    /// A send WR was refused.
    Post(Step, PostError),
    /// A receive WR was refused.
    PostRecv(Step, RecvError),
    /// The CQ held something the queues cannot account for.
    Poll(Step, PollError),
    /// A completion arrived with an error status or the wrong opcode/length.
    Completion {
        /// Step.
        step: Step,
        /// The completion.
        wc: WorkCompletion,
    },
    /// No completion within the timeout.
    Timeout {
        /// Step.
        step: Step,
        /// Which completion was awaited.
        what: &'static str,
        /// Microseconds waited.
        waited_us: u64,
    },
    /// A byte did not arrive as sent.
    Mismatch {
        /// Step.
        step: Step,
        /// Offset inside the checked area.
        offset: usize,
        /// Byte sent.
        expected: u8,
        /// Byte found.
        got: u8,
    },
}

impl fmt::Display for SelfTestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelfTestError::LoopbackUnsupported => f.write_str(
                "setup: this device does not allow force-loopback RC QPs in its RoCE state \
                 (RoCE capability fl_rc_qp_when_roce_enabled/_disabled = 0)",
            ),
            SelfTestError::Device(s, _) => f.write_str(s.name()),
            SelfTestError::Queue(w) => write!(f, "setup: the {w} queue refused its memory"),
            SelfTestError::Post(s, _) => write!(f, "{}: post refused", s.name()),
            SelfTestError::PostRecv(s, _) => write!(f, "{}: receive post refused", s.name()),
            SelfTestError::Poll(s, _) => write!(f, "{}: poll", s.name()),
            SelfTestError::Completion { step, wc } => write!(
                f,
                "{}: completion {} for opcode {} ({} bytes, vendor syndrome {:#x})",
                step.name(),
                wc.status.name(),
                wc.opcode.name(),
                wc.byte_len,
                wc.vendor_err
            ),
            SelfTestError::Timeout {
                step,
                what,
                waited_us,
            } => write!(
                f,
                "{}: no {what} completion after {waited_us} µs (is the port up? does loopback work?)",
                step.name()
            ),
            SelfTestError::Mismatch {
                step,
                offset,
                expected,
                got,
            } => write!(
                f,
                "{}: byte {offset} arrived as {got:#04x}, sent {expected:#04x}",
                step.name()
            ),
        }
    }
}

/// [`source`](core::error::Error::source) is the device, post or poll
/// error a step failed with; those variants print only the step (and
/// what was refused), so print the chain
/// ([`Chain`](crate::error::Chain)) for the whole message.
impl core::error::Error for SelfTestError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            SelfTestError::Device(_, e) => Some(e),
            SelfTestError::Post(_, e) => Some(e),
            SelfTestError::PostRecv(_, e) => Some(e),
            SelfTestError::Poll(_, e) => Some(e),
            _ => None,
        }
    }
}

/// The pattern byte at `i` of the source area.
const fn pattern(i: usize) -> u8 {
    (i as u8).wrapping_mul(7).wrapping_add(0x3b) ^ ((i >> 8) as u8)
}

/// Objects created so far, destroyed in reverse order by `cleanup`.
struct Made {
    pd: Option<Pd>,
    buf: Option<DmaBuf>,
    mkey: Option<Mkey>,
    cqs: [Option<CqHandle>; 2],
    qps: [Option<QpHandle>; 2],
}

struct Side<U: crate::platform::Uar> {
    qp: QueuePair<U, [SqSlot; SQ_BBS], [RqSlot; RQ_WQES]>,
    cq: CompletionQueue<CQES>,
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// Runs the loopback self-test (module docs): WRITE, SEND/RECV and READ
    /// between two RC QPs of this device, bytes verified, every object
    /// destroyed afterwards.
    pub fn loopback_selftest(
        &mut self,
        opts: SelfTestOptions,
    ) -> Result<SelfTestReport, SelfTestError> {
        if self.force_loopback_rc() == Some(false) {
            return Err(SelfTestError::LoopbackUnsupported);
        }
        let mut made = Made {
            pd: None,
            buf: None,
            mkey: None,
            cqs: [None, None],
            qps: [None, None],
        };
        let r = self.selftest_body(&opts, &mut made);
        let c = self.selftest_cleanup(made);
        let report = r?;
        c.map_err(|e| SelfTestError::Device(Step::Setup, e))?;
        Ok(report)
    }

    fn selftest_cleanup(&mut self, made: Made) -> Result<(), DeviceError> {
        let mut first = Ok(());
        let mut keep = |r: Result<(), DeviceError>| {
            if first.is_ok() {
                first = r;
            }
        };
        for q in made.qps.into_iter().flatten() {
            keep(self.destroy_qp(q));
        }
        for c in made.cqs.into_iter().flatten() {
            keep(self.destroy_cq(c));
        }
        let key_gone = match made.mkey {
            Some(k) => {
                let r = self.destroy_mkey(k);
                let ok = r.is_ok();
                keep(r);
                ok
            }
            None => true,
        };
        if let Some(b) = made.buf {
            if key_gone {
                // SAFETY: no object of the device names the buffer any more
                // (the key over it was destroyed, the queues are dropped).
                unsafe { self.allocator().free(b) };
            }
        }
        if let Some(pd) = made.pd {
            keep(self.dealloc_pd(pd));
        }
        first
    }

    fn selftest_body(
        &mut self,
        o: &SelfTestOptions,
        made: &mut Made,
    ) -> Result<SelfTestReport, SelfTestError> {
        let (pd, buf, mkey) = self.selftest_memory(made)?;
        // SAFETY: `buf` is the key's buffer; it stays allocated until
        // cleanup, after the queues (and the region) are gone.
        let mr = unsafe { mkey.memory_region(&buf) }.ok_or(SelfTestError::Queue("memory"))?;
        let (an, bn) = self.selftest_queues(o, pd, made)?;
        let mut sides = [
            self.selftest_side(made, 0, o)?,
            self.selftest_side(made, 1, o)?,
        ];
        let t0 = self.clock_mut().now_us();
        let [a, b] = &mut sides;
        self.selftest_write(a, &buf, mkey, &mr, o)?;
        self.selftest_send(a, b, &buf, &mr, o)?;
        self.selftest_read(a, &buf, mkey, &mr, o)?;
        // WRITE, SEND + RECV, READ.
        let completions = 4u32;
        let elapsed_us = self.clock_mut().now_us().saturating_sub(t0);
        drop(sides);
        Ok(SelfTestReport {
            qpns: (an, bn),
            key: mkey.key,
            verified_bytes: (AREA as u32, SEND_LEN, AREA as u32),
            completions,
            elapsed_us,
        })
    }

    /// The protection domain, the patterned buffer and the key over it.
    fn selftest_memory(&mut self, made: &mut Made) -> Result<(Pd, DmaBuf, Mkey), SelfTestError> {
        let setup = |e| SelfTestError::Device(Step::Setup, e);
        let pd = self.alloc_pd().map_err(setup)?;
        made.pd = Some(pd);
        let buf = self
            .allocator()
            .alloc(BUF_LEN, 4096)
            .ok_or(SelfTestError::Device(
                Step::Setup,
                DeviceError::OutOfDmaMemory {
                    what: "self-test buffer",
                },
            ))?;
        made.buf = Some(buf);
        for i in 0..BUF_LEN {
            let v = if i < AREA { pattern(i) } else { 0 };
            // SAFETY: `i` < BUF_LEN = buf.len; raw volatile store into the
            // live DMA buffer, which no device object names yet.
            unsafe { buf.cpu.as_ptr().add(i).write_volatile(v) };
        }
        let access = Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE;
        // SAFETY: `buf` is the self-test's own data buffer (no ring), freed
        // only in cleanup after the key is destroyed, and accessed only
        // through volatile raw-pointer copies.
        let mkey = unsafe { self.create_mkey(pd, &buf, access) }.map_err(setup)?;
        made.mkey = Some(mkey);
        Ok((pd, buf, mkey))
    }

    /// Two CQs and two RC QPs, connected to each other; their QPNs.
    fn selftest_queues(
        &mut self,
        o: &SelfTestOptions,
        pd: Pd,
        made: &mut Made,
    ) -> Result<(u32, u32), SelfTestError> {
        let setup = |e| SelfTestError::Device(Step::Setup, e);
        for i in 0..2 {
            let cq = self.create_cq(CQES as u32, CqeSize::B64).map_err(setup)?;
            let spec = QpSpec {
                qp_type: QpType::Rc,
                pd,
                send_cqn: cq.cqn,
                recv_cqn: cq.cqn,
                log_sq_size: SQ_BBS.trailing_zeros() as u8,
                log_rq_size: RQ_WQES.trailing_zeros() as u8,
                rq_wqe_shift: 5,
                srqn: None,
                user_index: i,
                max_send_wr: 16,
                max_recv_wr: 16,
            };
            made.cqs[i as usize] = Some(cq);
            made.qps[i as usize] = Some(self.create_qp(spec).map_err(setup)?);
        }
        let (Some(qa), Some(qb)) = (made.qps[0].as_ref(), made.qps[1].as_ref()) else {
            return Err(SelfTestError::Queue("QP"));
        };
        let (an, bn) = (qa.qpn, qb.qpn);
        for (i, peer) in [(0usize, bn), (1, an)] {
            let Some(qp) = made.qps[i].as_mut() else {
                return Err(SelfTestError::Queue("QP"));
            };
            self.selftest_connect(qp, peer, o).map_err(setup)?;
        }
        Ok((an, bn))
    }

    /// Step 1: WRITE A.src → B.dst, verified.
    fn selftest_write(
        &mut self,
        a: &mut Side<B::Uar>,
        buf: &DmaBuf,
        mkey: Mkey,
        mr: &MemoryRegion,
        o: &SelfTestOptions,
    ) -> Result<(), SelfTestError> {
        // 1. WRITE A.src → B.dst.
        let sge = [mr
            .sge(SRC as u64, AREA as u32)
            .ok_or(SelfTestError::Queue("memory"))?];
        let op = SendOp::Write {
            remote_addr: mkey.addr + DST as u64,
            rkey: mkey.key,
        };
        let wr = SendWr::new(1, op, &sge).with_flags(SendFlags::SIGNALED);
        a.qp.sq
            .post_send(&[wr], &[*mr])
            .map_err(|e| SelfTestError::Post(Step::Write, e))?;
        self.selftest_wait(a, Step::Write, "WRITE", o, WcOpcode::RdmaWrite, None)?;
        verify(buf, DST, AREA, Step::Write)?;

        Ok(())
    }

    /// Step 2: SEND A.src[..1000] → B.recv, verified.
    fn selftest_send(
        &mut self,
        a: &mut Side<B::Uar>,
        b: &mut Side<B::Uar>,
        buf: &DmaBuf,
        mr: &MemoryRegion,
        o: &SelfTestOptions,
    ) -> Result<(), SelfTestError> {
        // 2. SEND A.src[..1000] → B.recv.
        let rsge = [mr
            .sge(RECV as u64, AREA as u32)
            .ok_or(SelfTestError::Queue("memory"))?];
        let Some(rq) = b.qp.rq.as_mut() else {
            return Err(SelfTestError::Queue("receive"));
        };
        // SAFETY: the SGE lies inside the registered, live buffer.
        unsafe {
            rq.post_recv_raw(&[RecvWr {
                wr_id: 2,
                sgl: &rsge,
            }])
        }
        .map_err(|e| SelfTestError::PostRecv(Step::Send, e))?;
        let sge = [mr
            .sge(SRC as u64, SEND_LEN)
            .ok_or(SelfTestError::Queue("memory"))?];
        let wr = SendWr::new(3, SendOp::Send, &sge).with_flags(SendFlags::SIGNALED);
        a.qp.sq
            .post_send(&[wr], &[*mr])
            .map_err(|e| SelfTestError::Post(Step::Send, e))?;
        self.selftest_wait(a, Step::Send, "SEND", o, WcOpcode::Send, None)?;
        self.selftest_wait(b, Step::Send, "RECV", o, WcOpcode::Recv, Some(SEND_LEN))?;
        verify(buf, RECV, SEND_LEN as usize, Step::Send)?;

        Ok(())
    }

    /// Step 3: READ B.dst → A.read, verified.
    fn selftest_read(
        &mut self,
        a: &mut Side<B::Uar>,
        buf: &DmaBuf,
        mkey: Mkey,
        mr: &MemoryRegion,
        o: &SelfTestOptions,
    ) -> Result<(), SelfTestError> {
        // 3. READ B.dst → A.read.
        let sge = [mr
            .sge(READ as u64, AREA as u32)
            .ok_or(SelfTestError::Queue("memory"))?];
        let op = SendOp::Read {
            remote_addr: mkey.addr + DST as u64,
            rkey: mkey.key,
        };
        let wr = SendWr::new(4, op, &sge).with_flags(SendFlags::SIGNALED);
        a.qp.sq
            .post_send(&[wr], &[*mr])
            .map_err(|e| SelfTestError::Post(Step::Read, e))?;
        self.selftest_wait(
            a,
            Step::Read,
            "READ",
            o,
            WcOpcode::RdmaRead,
            Some(AREA as u32),
        )?;
        verify(buf, READ, AREA, Step::Read)?;

        Ok(())
    }

    fn selftest_connect(
        &mut self,
        qp: &mut QpHandle,
        peer: u32,
        o: &SelfTestOptions,
    ) -> Result<(), DeviceError> {
        self.rst2init(
            qp,
            &Rst2Init {
                port: o.port,
                remote_read: true,
                remote_write: true,
                ..Default::default()
            },
        )?;
        self.init2rtr(
            qp,
            &Init2Rtr {
                mtu: o.mtu,
                log_msg_max: 30,
                remote_qpn: peer,
                min_rnr_nak: 1,
                path: AddressPath {
                    fl: true,
                    port: o.port,
                    ..Default::default()
                },
                ..Default::default()
            },
        )?;
        self.rtr2rts(
            qp,
            &Rtr2Rts {
                retry_count: 7,
                rnr_retry: 7,
                ack_timeout: 14,
                ..Default::default()
            },
        )
    }

    fn selftest_side(
        &mut self,
        made: &Made,
        i: usize,
        o: &SelfTestOptions,
    ) -> Result<Side<B::Uar>, SelfTestError> {
        let (Some(qp), Some(cqh)) = (made.qps[i].as_ref(), made.cqs[i].as_ref()) else {
            return Err(SelfTestError::Queue("QP"));
        };
        let uar = self
            .map_uar(qp.uar_index)
            .map_err(|e| SelfTestError::Device(Step::Setup, e))?;
        let half = if o.blueflame {
            (1usize << self.hca_caps().log_bf_reg_size) / 2
        } else {
            0
        };
        let sqc = SqConfig::new(QpType::Rc, 16, 1).blueflame(BlueFlame {
            reg_offset: BF_OFFSET,
            buf_size: half,
            enabled: o.blueflame,
            prefer: o.blueflame,
        });
        let rqc = RqConfig {
            wqe_shift: 5,
            max_gs: 2,
            max_post: 16,
        };
        // SAFETY: one queue object per handle (each side is built once);
        // the queues are dropped before cleanup destroys the objects.
        let (qpair, cq) = unsafe {
            (
                qp.queue_pair(
                    uar,
                    sqc,
                    rqc,
                    [SqSlot::default(); SQ_BBS],
                    [RqSlot::default(); RQ_WQES],
                ),
                cqh.completion_queue::<CQES>(),
            )
        };
        let mut qpair = qpair.ok_or(SelfTestError::Queue("send or receive"))?;
        let mut cq = cq.map_err(|_| SelfTestError::Queue("completion"))?;
        cq.init_ring();
        qpair.sq.enable();
        if let Some(rq) = qpair.rq.as_mut() {
            rq.enable();
        }
        Ok(Side { qp: qpair, cq })
    }

    fn selftest_wait(
        &mut self,
        s: &mut Side<B::Uar>,
        step: Step,
        what: &'static str,
        o: &SelfTestOptions,
        opcode: WcOpcode,
        len: Option<u32>,
    ) -> Result<(), SelfTestError> {
        let t0 = self.clock_mut().now_us();
        let mut wc = [WorkCompletion::default(); 1];
        let mut spins = 0u32;
        loop {
            let n =
                s.cq.poll(&mut s.qp, &mut wc)
                    .map_err(|e| SelfTestError::Poll(step, e))?;
            if n == 1 {
                let w = wc[0];
                if w.status != WcStatus::Success
                    || w.opcode != opcode
                    || len.is_some_and(|l| l != w.byte_len)
                {
                    return Err(SelfTestError::Completion { step, wc: w });
                }
                return Ok(());
            }
            spins += 1;
            if spins.is_multiple_of(1024) {
                let waited = self.clock_mut().now_us().saturating_sub(t0);
                if waited >= o.timeout_us {
                    return Err(SelfTestError::Timeout {
                        step,
                        what,
                        waited_us: waited,
                    });
                }
                self.clock_mut().delay_us(1);
            }
        }
    }
}

/// Compares `len` bytes at `off` of `buf` with the source pattern.
fn verify(buf: &DmaBuf, off: usize, len: usize, step: Step) -> Result<(), SelfTestError> {
    for i in 0..len {
        // SAFETY: off + len ≤ BUF_LEN = buf.len (callers pass areas of the
        // layout); raw volatile load from device-written memory.
        let got = unsafe { buf.cpu.as_ptr().add(off + i).read_volatile() };
        if got != pattern(i) {
            return Err(SelfTestError::Mismatch {
                step,
                offset: i,
                expected: pattern(i),
                got,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_not_periodic_in_256() {
        // A shifted copy (off by one page of 256) must not verify.
        assert!((0..AREA).any(|i| pattern(i) != pattern(i + 256)));
        assert!((0..AREA).any(|i| pattern(i) != pattern(i + 1)));
    }
}
