//! Shared receive queues created by command: [`SrqSpec`], the
//! [`SrqHandle`] and its data-path queue; created as an RMP
//! (CREATE_RMP/DESTROY_RMP) at ISSI 1 and by CREATE_SRQ/DESTROY_SRQ at
//! ISSI 0, as the vendor kernel's `srq_cmd.c` chooses
//! ([ref §7.13](crate::reference)).

use super::objects::Obj;
use super::{Device, DeviceError, Pd, UarMap};
use crate::cmd::{op, ops, Bar0, Clock, CmdError};
use crate::platform::{DmaAllocator, DmaBuf};
use crate::rq::{SharedReceiveQueue, SrqConfig, SrqSlots};

/// SRQ creation request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqSpec {
    /// Protection domain.
    pub pd: Pd,
    /// log2 WQEs.
    pub log_size: u8,
    /// WQE shift (≥ 5).
    pub wqe_shift: u8,
}

/// An SRQ created by command.
#[derive(Debug, PartialEq, Eq)]
pub struct SrqHandle {
    /// SRQ number (the RMP number at ISSI 1).
    pub(crate) srqn: u32,
    /// WQE ring.
    pub(crate) ring: DmaBuf,
    /// Doorbell record (4 bytes).
    pub(crate) dbrec: DmaBuf,
    /// The spec.
    pub(crate) spec: SrqSpec,
}

/// Read-only views of the handle: its fields are the driver's, so safe
/// code cannot change what the driver believes about the object.
impl SrqHandle {
    /// SRQ number.
    pub const fn srqn(&self) -> u32 {
        self.srqn
    }
    /// WQE ring.
    pub const fn ring(&self) -> DmaBuf {
        self.ring
    }
    /// Doorbell record (4 bytes).
    pub const fn dbrec(&self) -> DmaBuf {
        self.dbrec
    }
    /// The spec.
    pub const fn spec(&self) -> SrqSpec {
        self.spec
    }
}

impl SrqHandle {
    /// The data-path SRQ over this handle's memory.
    ///
    /// # Safety
    /// As [`QpHandle::send_queue`](super::QpHandle::send_queue).
    /// `None` unless `slots.len()` is exactly this SRQ's size.
    pub unsafe fn shared_receive_queue<S: SrqSlots>(
        &self,
        cfg: SrqConfig,
        slots: S,
    ) -> Option<SharedReceiveQueue<S>> {
        if slots.as_ref().len() != 1usize << self.spec.log_size {
            return None;
        }
        // SAFETY: as in `QpHandle::send_queue`.
        unsafe { SharedReceiveQueue::new(self.ring, self.dbrec, cfg, slots) }
    }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// Creates an SRQ: CREATE_RMP at ISSI 1 (its `rmpn` is the SRQ number
    /// QPs name), CREATE_SRQ at ISSI 0 ([ref §7.13](crate::reference)).
    pub fn create_srq(&mut self, spec: SrqSpec) -> Result<SrqHandle, DeviceError> {
        if spec.log_size > self.hca.log_max_srq_sz {
            return Err(DeviceError::Limit {
                what: "log SRQ size",
                requested: spec.log_size as u64,
                max: self.hca.log_max_srq_sz as u64,
            });
        }
        if spec.wqe_shift < 5 || spec.wqe_shift > 11 {
            return Err(DeviceError::Limit {
                what: "SRQ wqe_shift",
                requested: spec.wqe_shift as u64,
                max: 11,
            });
        }
        if self.objs.is_full() {
            return Err(DeviceError::TableFull { what: "objects" });
        }
        let bytes = (1usize << spec.log_size) << spec.wqe_shift;
        let total = bytes.next_multiple_of(4096);
        Self::check_pages(total / 4096)?;
        let ring = self.alloc_dma(total, "SRQ ring")?;
        let dbrec = match self.alloc_dma(64, "SRQ doorbell record") {
            Ok(d) => d,
            Err(e) => {
                self.free_dma(&[ring]);
                return Err(e);
            }
        };
        let npages = total / 4096;
        let r = if self.issi >= 1 {
            let p = ops::RmpParams {
                log_wq_sz: spec.log_size,
                log_wq_stride: spec.wqe_shift,
                pd: spec.pd.0,
                lwm: 0,
                dbr_addr: dbrec.iova,
                pages_iova: ring.iova,
                npages,
            };
            ops::create_rmp(&mut self.inb, &p)
        } else {
            let p = ops::SrqParams {
                log_srq_size: spec.log_size,
                log_rq_stride: spec.wqe_shift - crate::cmd::layout::qpc::LOG_RQ_STRIDE_BASE,
                pd: spec.pd.0,
                cqn: 0,
                lwm: 0,
                dbr_addr: dbrec.iova,
                pages_iova: ring.iova,
                npages,
            };
            ops::create_srq(&mut self.inb, &p)
        };
        if let Err(e) = self.exec(r) {
            if !matches!(e, CmdError::Timeout { .. }) {
                self.free_dma(&[ring, dbrec]);
            }
            return Err(e.into());
        }
        let srqn = ops::parse_obj_id(&self.outb);
        self.track(Obj::Srq(srqn, ring, dbrec))?;
        Ok(SrqHandle {
            srqn,
            ring: ring.slice(0, bytes).unwrap_or(ring),
            dbrec: dbrec.slice(0, 4).unwrap_or(dbrec),
            spec,
        })
    }
    /// DESTROY_RMP (ISSI 1) or DESTROY_SRQ (ISSI 0), and free its memory.
    pub fn destroy_srq(&mut self, srq: SrqHandle) -> Result<(), DeviceError> {
        let opc = self.srq_destroy_op();
        let r = ops::with_obj(&mut self.inb, opc, srq.srqn);
        self.exec(r)?;
        if let Some(Obj::Srq(_, a, b)) =
            self.untrack(|o| matches!(o, Obj::Srq(x, ..) if *x == srq.srqn))
        {
            self.free_dma(&[a, b]);
        }
        Ok(())
    }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// The command that destroys an SRQ of this device: DESTROY_RMP once
    /// ISSI 1 is set (its SRQs are RMPs), DESTROY_SRQ at ISSI 0.
    pub(super) fn srq_destroy_op(&self) -> u16 {
        if self.issi >= 1 {
            op::DESTROY_RMP
        } else {
            op::DESTROY_SRQ
        }
    }
}
