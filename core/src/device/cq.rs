//! Completion queues created by command: the [`CqHandle`], its data-path
//! queue, CREATE_CQ and DESTROY_CQ ([ref §3.7, §7.10](crate::reference)).

use super::objects::{CqLoad, Obj};
use super::{Device, DeviceError, UarMap};
use crate::cmd::caps::HcaCaps;
use crate::cmd::queue::dma_write;
use crate::cmd::{op, ops, Bar0, Clock, CmdError};
use crate::cq::{CompletionQueue, CqError};
use crate::cqe::CqeSize;
use crate::platform::{DmaAllocator, DmaBuf};

/// A completion queue created by command, with its ring and doorbell record.
#[derive(Debug, PartialEq, Eq)]
pub struct CqHandle {
    /// CQ number.
    pub(crate) cqn: u32,
    /// CQE ring (`ncqe × cqe_size` bytes, 4 KiB pages).
    pub(crate) ring: DmaBuf,
    /// Doorbell record (8 bytes).
    pub(crate) dbrec: DmaBuf,
    /// Entries.
    pub(crate) ncqe: u32,
    /// CQE size.
    pub(crate) cqe_size: CqeSize,
    /// CQE version to parse with.
    pub(crate) cqe_version: u8,
}

/// Read-only views of the handle: its fields are the driver's, so safe
/// code cannot change what the driver believes about the object.
impl CqHandle {
    /// CQ number.
    pub const fn cqn(&self) -> u32 {
        self.cqn
    }
    /// CQE ring (`ncqe × cqe_size` bytes, 4 KiB pages).
    pub const fn ring(&self) -> DmaBuf {
        self.ring
    }
    /// Doorbell record (8 bytes).
    pub const fn dbrec(&self) -> DmaBuf {
        self.dbrec
    }
    /// Entries.
    pub const fn ncqe(&self) -> u32 {
        self.ncqe
    }
    /// CQE size.
    pub const fn cqe_size(&self) -> CqeSize {
        self.cqe_size
    }
    /// CQE version to parse with.
    pub const fn cqe_version(&self) -> u8 {
        self.cqe_version
    }
}

impl CqHandle {
    /// The data-path CQ over this handle's memory; `N` must be the entry
    /// count the CQ was created with ([`CqError::EntriesDisagree`]).
    ///
    /// # Safety
    /// Call at most once per handle; drop the queue before destroying the CQ.
    pub unsafe fn completion_queue<const N: usize>(&self) -> Result<CompletionQueue<N>, CqError> {
        if N != self.ncqe as usize {
            return Err(CqError::EntriesDisagree {
                queue: N,
                created: self.ncqe,
            });
        }
        // SAFETY: the ring and record are exclusively this CQ's (allocated
        // by the device for it); caller guarantees a single queue object.
        unsafe {
            CompletionQueue::new(
                self.ring,
                self.dbrec,
                self.cqn,
                self.cqe_size,
                self.cqe_version,
            )
        }
    }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// CREATE_CQ with `ncqe` entries (power of two) of `cqe_size`; the ring
    /// is initialised with op_own = 0xF0 in every CQE ([ref §3.7, §7.10](crate::reference)).
    ///
    /// The CQ names the device's EQ (`c_eqn` = the number CREATE_EQ
    /// returned), as the vendor's VFIO provider does: its `query_eqn`
    /// answers every CQ with the async EQ of vector 0. A device brought up
    /// without an EQ (`DeviceConfig::async_eq` off) has none to name, so
    /// the CQ is refused with [`DeviceError::NoEventQueue`] before any
    /// command: naming EQ 0 would name no EQ at all, and creating one
    /// behind the caller's back would override the configuration.
    pub fn create_cq(&mut self, ncqe: u32, cqe_size: CqeSize) -> Result<CqHandle, DeviceError> {
        self.create_cq_on(ncqe, cqe_size, None)
    }

    /// [`Device::create_cq`] on completion vector `vector`: the CQ names
    /// that vector's completion EQ ([`Device::create_comp_eq`]), so its
    /// events are taken by [`Device::poll_cq_events`] for that vector
    /// (`None`: the async EQ, as `create_cq`). Refused with
    /// [`DeviceError::NoEventQueue`] before any command when the vector has
    /// no EQ.
    pub fn create_cq_on(
        &mut self,
        ncqe: u32,
        cqe_size: CqeSize,
        vector: Option<u16>,
    ) -> Result<CqHandle, DeviceError> {
        let c_eqn = match vector {
            None => self.eq.as_ref().map(|(e, _)| e.eqn()),
            Some(v) => self.comp_eqn(v),
        };
        let Some(c_eqn) = c_eqn else {
            return Err(DeviceError::NoEventQueue { what: "CQ" });
        };
        let max = HcaCaps::pow2(self.hca.log_max_cq_sz);
        if !ncqe.is_power_of_two() || ncqe < 2 || ncqe > max {
            return Err(DeviceError::Limit {
                what: "CQ entries",
                requested: ncqe as u64,
                max: max as u64,
            });
        }
        if self.objs.is_full() {
            return Err(DeviceError::TableFull { what: "objects" });
        }
        let bytes = ncqe as usize * cqe_size.bytes();
        let npages = bytes.div_ceil(4096);
        Self::check_pages(npages)?;
        let ring = self.alloc_dma(npages * 4096, "CQ ring")?;
        let dbrec = match self.alloc_dma(64, "CQ doorbell record") {
            Ok(d) => d,
            Err(e) => {
                self.free_dma(&[ring]);
                return Err(e);
            }
        };
        let off64 = cqe_size.bytes() - 64;
        for i in 0..ncqe as usize {
            // SAFETY: fresh ring, not yet given to the device; in range.
            unsafe {
                dma_write(
                    &ring,
                    i * cqe_size.bytes() + off64 + crate::cqe::OP_OWN_OFFSET,
                    &[crate::cqe::OP_OWN_INIT],
                )
            };
        }
        let p = ops::CqParams {
            log_cq_size: ncqe.trailing_zeros() as u8,
            cqe_sz: cqe_size as u8,
            uar_page: self.uar,
            c_eqn,
            dbr_addr: dbrec.iova,
            pages_iova: ring.iova,
            npages,
        };
        let r = ops::create_cq(&mut self.inb, &p);
        if let Err(e) = self.exec(r) {
            if !matches!(e, CmdError::Timeout { .. }) {
                self.free_dma(&[ring, dbrec]);
            }
            return Err(e.into());
        }
        let cqn = ops::parse_obj_id(&self.outb);
        self.track(Obj::Cq(
            cqn,
            ring,
            dbrec,
            CqLoad {
                ncqe,
                committed: 0,
                eqn: c_eqn,
            },
        ))?;
        Ok(CqHandle {
            cqn,
            ring: ring.slice(0, bytes).unwrap_or(ring),
            dbrec: dbrec.slice(0, 8).unwrap_or(dbrec),
            ncqe,
            cqe_size,
            cqe_version: self.hca.cqe_version.min(1),
        })
    }
    /// DESTROY_CQ and free its memory.
    pub fn destroy_cq(&mut self, cq: CqHandle) -> Result<(), DeviceError> {
        let r = ops::with_obj(&mut self.inb, op::DESTROY_CQ, cq.cqn);
        self.exec(r)?;
        if let Some(Obj::Cq(_, a, b, _)) =
            self.untrack(|o| matches!(o, Obj::Cq(x, ..) if *x == cq.cqn))
        {
            self.free_dma(&[a, b]);
        }
        Ok(())
    }
}
