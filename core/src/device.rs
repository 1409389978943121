//! Device bring-up, firmware objects and teardown over the platform traits
//! ([ref §7.2, §7.6, §7.7, §7.9–§7.12, §6.3](crate::reference)).
//!
//! [`Device::bring_up`] runs the documented sequence: wait for
//! `initializing` to clear, set up the command queue, ENABLE_HCA, ISSI
//! negotiation, boot pages, QUERY/SET_HCA_CAP, init pages, INIT_HCA,
//! ALLOC_UAR and (optionally) an async EQ for page requests. Objects (PD,
//! memory key, CQ, QP, SRQ) are created by command; their rings and
//! doorbell records come from the platform's [`DmaAllocator`] and the
//! returned handles carry everything the data-path queue types need
//! ([`CompletionQueue::new`], [`SendQueue::new`], [`RecvQueue::new`]).
//! [`Device::teardown`] destroys what is left, tears the HCA down, reclaims
//! firmware pages and disables the function. Nothing allocates: live
//! objects are kept in bounded `heapless` tables.

use crate::cmd::caps::{self, HcaCaps, GENERAL_CAP_LEN};
use crate::cmd::eq::{Eqe, EventQueue, EQE_BYTES, NUM_SPARE_EQE};
use crate::cmd::initseg::{CmdqGeometry, FwVersion, InitSeg, InitSegError};
use crate::cmd::ops::{self, CapType, PagesKind, Req};
use crate::cmd::pages::{PageError, PagePool};
use crate::cmd::queue::{dma_write, CmdQueue, CmdqSetupError, SlotKind, MAX_MSG};
use crate::cmd::{op, Bar0, Clock, CmdError};
use crate::cq::{CompletionQueue, CqError};
use crate::cqe::CqeSize;
use crate::mr::{Access, MemoryRegion};
use crate::platform::{DmaAllocator, DmaBuf, Uar, EQ_DOORBELL_ARM, EQ_DOORBELL_NO_ARM};
use crate::qp::QpType;
use crate::queue_pair::QueuePair;
use crate::rq::{RecvQueue, RqConfig, RqSlots, SharedReceiveQueue, SrqConfig, SrqSlots};
use crate::sq::{SendQueue, SqConfig, SqSlots};
use crate::wqe::MkeyAccess;
use core::fmt;

pub use crate::cmd::ops::{AddressPath, HwQpState, Init2Rtr, Rst2Init, Rtr2Rts};

/// Maps UAR pages of BAR0 ([ref §4.2](crate::reference): UAR index N at BAR0 + N · 4 KiB).
pub trait UarMap {
    /// The UAR type handed to queues.
    type Uar: Uar;
    /// The UAR page with index `index`, or `None` if outside BAR0.
    fn map_uar(&mut self, index: u32) -> Option<Self::Uar>;
}

/// Bring-up tunables ([ref §7.3, §7.6](crate::reference) timeouts).
#[derive(Clone, Copy, Debug)]
pub struct DeviceConfig {
    /// How long to wait for `initializing` to clear (VFIO: 120 s).
    pub init_timeout_us: u64,
    /// Poll interval while initializing (VFIO: 2 ms).
    pub init_poll_us: u32,
    /// Command timeout (VFIO: 60 s).
    pub cmd_timeout_us: u64,
    /// Poll interval while a command runs.
    pub cmd_poll_us: u32,
    /// Create an async EQ for page requests ([ref §7.6](crate::reference) "VFIO after setup").
    pub async_eq: bool,
    /// Host page size (for [`crate::sizing::DeviceCaps::page_size`]).
    pub page_size: u32,
    /// Cache-line size (for doorbell records).
    pub cache_line_size: u32,
    /// Write the HOST_ENDIANNESS register after the boot pages ([ref §7.6](crate::reference)
    /// step 7; the kernel does this for physical functions).
    pub set_host_endianness: bool,
    /// Most pages the driver lends firmware in total (default 65536 = 256 MiB,
    /// the pool's capacity); a larger request fails with `TooManyPages`.
    pub max_fw_pages: u32,
    /// On an Ethernet port with RoCE capability, set the vport's `roce_en`
    /// after INIT_HCA ([ref §7.6](crate::reference); the NIC refuses RDMA QPs otherwise).
    pub enable_roce: bool,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            init_timeout_us: 120_000_000,
            init_poll_us: 2_000,
            cmd_timeout_us: 60_000_000,
            cmd_poll_us: 1,
            async_eq: true,
            page_size: 4096,
            cache_line_size: 64,
            set_host_endianness: true,
            max_fw_pages: (crate::cmd::pages::MAX_CHUNKS * crate::cmd::pages::CHUNK_PAGES) as u32,
            enable_roce: true,
        }
    }
}

/// `cap.port_type` of an Ethernet port ([ref §3.11](crate::reference)).
pub const PORT_TYPE_ETHERNET: u8 = 1;

/// The bring-up step that failed ([ref §7.6](crate::reference) numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// 1: wait for firmware initialization.
    WaitFwInit,
    /// 2: command interface setup.
    CmdqSetup,
    /// 4: ENABLE_HCA.
    EnableHca,
    /// 5: ISSI negotiation.
    Issi,
    /// 6: boot pages.
    BootPages,
    /// 7: HOST_ENDIANNESS register.
    HostEndianness,
    /// 8: capabilities.
    HcaCaps,
    /// 9: init pages.
    InitPages,
    /// 10: INIT_HCA.
    InitHca,
    /// After INIT_HCA on Ethernet ports: MODIFY_NIC_VPORT_CONTEXT roce_en.
    EnableRoce,
    /// 12: ALLOC_UAR.
    AllocUar,
    /// 12: async EQ.
    AsyncEq,
}

/// A device-level failure. Each variant names what went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceError {
    /// The initialization segment was rejected.
    InitSeg(InitSegError),
    /// The CQ(s) a new QP reports to cannot hold a completion for every WR
    /// that could be outstanding ([ref §3.7](crate::reference)).
    CqTooSmall(crate::sizing::SizingError),
    /// The command queue could not be set up.
    Cmdq(CmdqSetupError),
    /// A command failed during a bring-up step.
    BringUp {
        /// Step.
        step: Step,
        /// Command error.
        err: CmdError,
    },
    /// A command failed.
    Cmd(CmdError),
    /// Firmware supports no ISSI this driver speaks.
    UnsupportedIssi {
        /// `supported_issi_dw0`.
        supported: u32,
    },
    /// Firmware page supply failed.
    Pages(PageError),
    /// Firmware asks for more pages than the bring-up allows.
    TooManyPages {
        /// Requested.
        requested: i64,
    },
    /// The DMA allocator returned nothing.
    OutOfDmaMemory {
        /// What was being allocated.
        what: &'static str,
    },
    /// A request exceeds a device capability.
    Limit {
        /// What.
        what: &'static str,
        /// Requested value.
        requested: u64,
        /// Device maximum.
        max: u64,
    },
    /// A bounded driver table is full.
    TableFull {
        /// Which table.
        what: &'static str,
    },
    /// A UAR index is outside BAR0.
    NoUar {
        /// The index.
        index: u32,
    },
    /// The QP is not in the state the transition starts from.
    WrongQpState {
        /// QP number.
        qpn: u32,
        /// State the driver tracks.
        state: HwQpState,
        /// Transition requested.
        transition: &'static str,
    },
    /// A QP type the firmware command path does not create (only RC, UC
    /// and UD have a `qpc.st` code here).
    UnsupportedQpType(QpType),
    /// A CQ could not be wired to the data path.
    Cq(CqError),
    /// The device returned an object number that is already live for that
    /// kind (two objects cannot share a QPN, CQN, SRQN, PD or mkey index).
    ///
    /// The new object is neither tracked nor handed out, and nothing is
    /// destroyed: destroying "that number" would destroy the live object
    /// the driver already owns. Whatever firmware created stays with
    /// firmware, and the DMA memory given in the create command (ring and
    /// doorbell record) is deliberately leaked, not freed, because the
    /// device may still write it.
    DuplicateObjectNumber {
        /// Object kind (`"QP"`, `"CQ"`, `"SRQ"`, `"PD"`, `"mkey"`).
        what: &'static str,
        /// The number returned.
        number: u32,
    },
    /// The device returned an object number that does not fit its 24-bit
    /// field ([`ops::OBJ_NUMBER_MAX`]); handled as
    /// [`DeviceError::DuplicateObjectNumber`] (nothing tracked, nothing
    /// destroyed, the create command's DMA memory leaked).
    BadObjectNumber {
        /// Object kind (`"QP"`, `"CQ"`, `"SRQ"`, `"PD"`, `"mkey"`, `"UAR"`).
        what: &'static str,
        /// The whole 32-bit word returned.
        number: u32,
    },
    /// A handle names no object this driver holds (a stale copy of a
    /// destroyed key, a PD number it never allocated, a key whose variant
    /// no longer matches): nothing is sent, so another owner's object with
    /// the same number is never destroyed.
    NotOurs {
        /// Object kind (`"PD"`, `"mkey"`).
        what: &'static str,
        /// The number (mkey: the whole key) the handle names.
        number: u32,
    },
    /// A memory key over this many bytes from this IOVA does not fit the
    /// 64-bit address space.
    MkeyRange {
        /// IOVA of the buffer.
        iova: u64,
        /// Length of the buffer.
        len: usize,
    },
}

impl From<CmdError> for DeviceError {
    fn from(e: CmdError) -> Self {
        DeviceError::Cmd(e)
    }
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceError::InitSeg(e) => write!(f, "initialization segment: {e:?}"),
            DeviceError::CqTooSmall(e) => write!(f, "{e}"),
            DeviceError::Cmdq(e) => write!(f, "command queue setup: {e:?}"),
            DeviceError::BringUp { step, err } => write!(f, "bring-up step {step:?}: {err}"),
            DeviceError::Cmd(e) => write!(f, "{e}"),
            DeviceError::UnsupportedIssi { supported } => {
                write!(
                    f,
                    "firmware supports no usable ISSI (supported_issi_dw0 = 0x{supported:x})"
                )
            }
            DeviceError::Pages(e) => write!(f, "firmware pages: {e:?}"),
            DeviceError::TooManyPages { requested } => {
                write!(f, "firmware requests {requested} pages, more than allowed")
            }
            DeviceError::OutOfDmaMemory { what } => write!(f, "out of DMA memory for {what}"),
            DeviceError::Limit {
                what,
                requested,
                max,
            } => write!(f, "{what} {requested} exceeds the device limit {max}"),
            DeviceError::TableFull { what } => write!(f, "driver table for {what} is full"),
            DeviceError::NoUar { index } => write!(f, "UAR {index} is outside BAR0"),
            DeviceError::WrongQpState {
                qpn,
                state,
                transition,
            } => write!(f, "QP 0x{qpn:x} is in {state:?}, cannot {transition}"),
            DeviceError::UnsupportedQpType(t) => {
                write!(
                    f,
                    "{} QPs cannot be created through the command path (RC, UC and UD can)",
                    t.name()
                )
            }
            DeviceError::Cq(e) => write!(f, "CQ: {e}"),
            DeviceError::DuplicateObjectNumber { what, number } => write!(
                f,
                "device returned {what} number 0x{number:x}, which is already live"
            ),
            DeviceError::NotOurs { what, number } => write!(
                f,
                "{what} 0x{number:x} is not an object this driver holds (stale or foreign handle)"
            ),
            DeviceError::BadObjectNumber { what, number } => write!(
                f,
                "device returned {what} number 0x{number:x}, which does not fit 24 bits"
            ),
            DeviceError::MkeyRange { iova, len } => write!(
                f,
                "a memory key over {len} bytes at 0x{iova:x} exceeds the address space"
            ),
        }
    }
}

/// A protection domain (ALLOC_PD output).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pd(pub u32);

/// A memory key over a DMA buffer (CREATE_MKEY). [ref §7.12](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mkey {
    /// mkey index (CREATE_MKEY output).
    pub(crate) index: u32,
    /// lkey = rkey = `(index << 8) | variant`.
    pub(crate) key: u32,
    /// First address SGEs use (the buffer's IOVA).
    pub(crate) addr: u64,
    /// Length in bytes.
    pub(crate) len: u64,
    /// Access rights granted (local read is always granted besides).
    pub(crate) access: Access,
}

/// Read-only views of the handle: its fields are the driver's, so safe
/// code cannot change what the driver believes about the object.
impl Mkey {
    /// mkey index (CREATE_MKEY output).
    pub const fn index(&self) -> u32 {
        self.index
    }
    /// lkey = rkey = `(index << 8) | variant`.
    pub const fn key(&self) -> u32 {
        self.key
    }
    /// First address SGEs use (the buffer's IOVA).
    pub const fn addr(&self) -> u64 {
        self.addr
    }
    /// Length in bytes.
    pub const fn len(&self) -> u64 {
        self.len
    }
    /// Access rights granted (local read is always granted besides).
    pub const fn access(&self) -> Access {
        self.access
    }
    /// Whether the key covers no bytes.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Mkey {
    /// The data-path view of this key over `buf`, for
    /// [`SendQueue::post_send`](crate::sq::SendQueue::post_send)'s SGE
    /// checks: lkey = rkey = [`Mkey::key`], addresses from [`Mkey::addr`].
    /// `None` when `buf` is not the range the key covers.
    ///
    /// # Safety
    /// `buf` must be the buffer this key was created over, and it must stay
    /// allocated while the region (or a WR naming it) is in use.
    pub unsafe fn memory_region(&self, buf: &DmaBuf) -> Option<MemoryRegion> {
        if buf.iova != self.addr || buf.len as u64 != self.len {
            return None;
        }
        // SAFETY: `buf` is live DMA memory (DmaAllocator contract) that the
        // device reaches at `addr + i` under `key` (CREATE_MKEY over exactly
        // this range); the caller keeps it allocated while in use.
        Some(unsafe {
            MemoryRegion::new(
                buf.cpu,
                self.addr,
                self.len,
                self.key,
                self.key,
                self.access,
            )
        })
    }
}

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

/// QP creation request ([ref §3.6, §7.11](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpSpec {
    /// QP type: RC, UC or UD (the types with a `qpc.st` code,
    /// [`QpType::service_type`]); others are refused.
    pub qp_type: QpType,
    /// Protection domain.
    pub pd: Pd,
    /// Send CQ number.
    pub send_cqn: u32,
    /// Receive CQ number.
    pub recv_cqn: u32,
    /// log2 SQ WQEBBs.
    pub log_sq_size: u8,
    /// log2 RQ WQEs (ignored with an SRQ).
    pub log_rq_size: u8,
    /// RQ WQE shift (log2 stride, ≥ 4).
    pub rq_wqe_shift: u8,
    /// Receive through this SRQ.
    pub srqn: Option<u32>,
    /// User index reported in CQEs (CQE version 1).
    pub user_index: u32,
    /// WRs the send queue may have outstanding (its `max_post`); with
    /// `max_recv_wr`, checked against the CQs' capacity ([ref §3.7](crate::reference): a CQ
    /// must hold a completion for every WR that can be outstanding).
    /// 0 = not counted.
    pub max_send_wr: u32,
    /// WRs the receive queue may have outstanding (0 with an SRQ).
    pub max_recv_wr: u32,
}

/// A QP created by command: number, buffers, geometry, tracked state.
#[derive(Debug, PartialEq, Eq)]
pub struct QpHandle {
    /// QP number.
    pub(crate) qpn: u32,
    /// Whole QP buffer (RQ at 0, SQ at `rq.len`; [ref §3.6](crate::reference)).
    pub(crate) buf: DmaBuf,
    /// Receive part (empty with an SRQ).
    pub(crate) rq: DmaBuf,
    /// Send part.
    pub(crate) sq: DmaBuf,
    /// Doorbell record (8 bytes: RCV, SND).
    pub(crate) dbrec: DmaBuf,
    /// UAR index of the send doorbell.
    pub(crate) uar_index: u32,
    /// The spec it was created from.
    pub(crate) spec: QpSpec,
    /// State the driver believes the QP is in ([ref §6.1](crate::reference)).
    pub(crate) state: HwQpState,
    /// CQE version of the device's CQs (1: completions carry the user
    /// index): how [`QpHandle::queue_pair`] routes completions.
    pub(crate) cqe_version: u8,
}

/// Read-only views of the handle: its fields are the driver's, so safe
/// code cannot change what the driver believes about the object.
impl QpHandle {
    /// QP number.
    pub const fn qpn(&self) -> u32 {
        self.qpn
    }
    /// Whole QP buffer (RQ at 0, SQ at `rq.len`; [ref §3.6](crate::reference)).
    pub const fn buf(&self) -> DmaBuf {
        self.buf
    }
    /// Receive part (empty with an SRQ).
    pub const fn rq(&self) -> DmaBuf {
        self.rq
    }
    /// Send part.
    pub const fn sq(&self) -> DmaBuf {
        self.sq
    }
    /// Doorbell record (8 bytes: RCV, SND).
    pub const fn dbrec(&self) -> DmaBuf {
        self.dbrec
    }
    /// UAR index of the send doorbell.
    pub const fn uar_index(&self) -> u32 {
        self.uar_index
    }
    /// The spec it was created from.
    pub const fn spec(&self) -> QpSpec {
        self.spec
    }
    /// State the driver holds the QP in ([ref §6.1](crate::reference)); it changes only through the
    /// transition calls.
    pub const fn state(&self) -> HwQpState {
        self.state
    }
    /// CQE version of the CQs this QP reports to.
    pub const fn cqe_version(&self) -> u8 {
        self.cqe_version
    }
}

impl QpHandle {
    /// SQ WQEBBs.
    pub fn sq_wqebbs(&self) -> u32 {
        1 << self.spec.log_sq_size
    }
    /// RQ WQEs (0 with an SRQ).
    pub fn rq_wqes(&self) -> u32 {
        if self.spec.srqn.is_some() {
            0
        } else {
            1 << self.spec.log_rq_size
        }
    }
    /// The data-path send queue over this QP's SQ and doorbell record
    /// (`dbrec + 4` is the SND word), keeping its per-WQEBB records in
    /// `slots`. `cfg.qpn` is overwritten with the QPN. `None` unless
    /// `slots.len()` is exactly this QP's send ring ([`Self::sq_wqebbs`]):
    /// the queue cannot disagree with the geometry the device was given.
    ///
    /// # Safety
    /// Call at most once per handle; drop the queue before destroying the QP.
    pub unsafe fn send_queue<U: Uar, S: SqSlots>(
        &self,
        uar: U,
        mut cfg: SqConfig,
        slots: S,
    ) -> Option<SendQueue<U, S>> {
        if slots.as_ref().len() != self.sq_wqebbs() as usize {
            return None;
        }
        cfg.qpn = self.qpn;
        // SAFETY: SQ memory and the record are this QP's alone; the caller
        // guarantees one queue object.
        unsafe { SendQueue::new(self.sq, self.dbrec, uar, cfg, slots) }
    }
    /// The data-path receive queue over this QP's RQ; `None` unless
    /// `slots.len()` is exactly this QP's receive ring ([`Self::rq_wqes`]).
    ///
    /// # Safety
    /// As [`QpHandle::send_queue`].
    pub unsafe fn recv_queue<S: RqSlots>(&self, cfg: RqConfig, slots: S) -> Option<RecvQueue<S>> {
        if slots.as_ref().len() != self.rq_wqes() as usize {
            return None;
        }
        // SAFETY: as in `send_queue`.
        unsafe { RecvQueue::new(self.rq, self.dbrec, cfg, slots) }
    }
    /// The data-path queue pair over this QP: its send queue, its receive
    /// queue (none when the QP receives through an SRQ; `rq_slots` is then
    /// dropped), the QPN and the user index CQEs carry. Both queues start
    /// disabled: enable them as the QP reaches INIT (receive) and RTS
    /// (send). `None` when a storage length disagrees with the geometry.
    ///
    /// # Safety
    /// As [`QpHandle::send_queue`]; do not also call `send_queue` or
    /// `recv_queue` on this handle.
    pub unsafe fn queue_pair<U: Uar, SS: SqSlots, RS: RqSlots>(
        &self,
        uar: U,
        sq: SqConfig,
        rq: RqConfig,
        sq_slots: SS,
        rq_slots: RS,
    ) -> Option<QueuePair<U, SS, RS>> {
        // SAFETY: forwarded: one queue object per handle and queue.
        let send = unsafe { self.send_queue(uar, sq, sq_slots) }?;
        let recv = match self.spec.srqn {
            Some(_) => None,
            // SAFETY: as above.
            None => Some(unsafe { self.recv_queue(rq, rq_slots) }?),
        };
        Some(QueuePair {
            qpn: self.qpn,
            uidx: self.spec.user_index,
            cqe_version: self.cqe_version,
            sq: send,
            rq: recv,
        })
    }
}

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
    /// SRQ number.
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
    /// As [`QpHandle::send_queue`].
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

/// Link layer of a port (cap.port_type; [ref §3.11](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkLayer {
    /// InfiniBand.
    InfiniBand,
    /// Ethernet (RoCE).
    Ethernet,
    /// Another value.
    Other(u8),
}

/// Port state as `ibv_port_state` numbers it (`ibv_devinfo` prints
/// `PORT_ACTIVE (4)`). An Ethernet port's comes from QUERY_VPORT_STATE (up
/// → Active, down → Down), an InfiniBand port's from the HCA vport
/// context's `vport_state`, which uses these numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortState {
    /// Down (1).
    Down,
    /// Initialize (2).
    Init,
    /// Armed (3).
    Armed,
    /// Active (4).
    Active,
    /// Another value: the number the device reported.
    Other(u8),
}

impl PortState {
    /// The `ibv_port_state` number (the device's own for [`PortState::Other`]).
    pub const fn code(self) -> u8 {
        match self {
            PortState::Down => 1,
            PortState::Init => 2,
            PortState::Armed => 3,
            PortState::Active => 4,
            PortState::Other(v) => v,
        }
    }
    /// The state for an `ibv_port_state` number (IB vport state).
    pub const fn from_ib(v: u8) -> PortState {
        match v {
            1 => PortState::Down,
            2 => PortState::Init,
            3 => PortState::Armed,
            4 => PortState::Active,
            o => PortState::Other(o),
        }
    }
}

/// The InfiniBand-only port attributes, from QUERY_HCA_VPORT_CONTEXT (linux
/// `mlx5_query_hca_port`); an Ethernet port has none of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IbPortInfo {
    /// Subnet manager SL.
    pub sm_sl: u8,
    /// Subnet timeout.
    pub subnet_timeout: u8,
    /// InitTypeReply.
    pub init_type_reply: u8,
    /// Physical port state (`ibv_devinfo` phys_state; 5 = LINK_UP).
    pub phys_state: u8,
    /// P_Key violation counter.
    pub bad_pkey_cntr: u16,
    /// Q_Key violation counter.
    pub qkey_viol_cntr: u16,
}

/// One port in [`DevInfo`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// 1-based port number.
    pub port: u8,
    /// State.
    pub state: PortState,
    /// Link layer.
    pub link_layer: LinkLayer,
    /// Active MTU in bytes (an IB MTU, 256 … 4096), from the PMTU
    /// register's `oper_mtu`: on an InfiniBand port the IB MTU it names, on
    /// an Ethernet (RoCE) port the RoCE MTU of its netdev MTU
    /// ([`ops::roce_mtu_of_hw_mtu`]). `None` when the firmware rejects the
    /// PMTU read (older firmware) or reports a value with no IB MTU.
    pub active_mtu: Option<u32>,
    /// Maximum MTU in bytes, from PMTU `max_mtu` by the same rule as
    /// `active_mtu`.
    pub max_mtu: Option<u32>,
    /// Subnet manager LID: from the HCA vport context on an InfiniBand
    /// port, 0 on an Ethernet port (linux `mlx5_query_port_roce` leaves it
    /// 0); `None` when the firmware refused the query.
    pub sm_lid: Option<u16>,
    /// The port's LID, by the same rule as `sm_lid`.
    pub lid: Option<u16>,
    /// The LID mask count, by the same rule as `sm_lid`.
    pub lmc: Option<u8>,
    /// Largest message (`1 << log_max_msg`).
    pub max_msg_sz: u32,
    /// InfiniBand-only attributes (`None` on Ethernet or when the query
    /// failed).
    pub ib: Option<IbPortInfo>,
}

impl PortInfo {
    /// `active_mtu` as an [`ops::IbMtu`] (for its enum code, as
    /// `ibv_devinfo` prints `4096 (5)`).
    pub fn active_ib_mtu(&self) -> Option<ops::IbMtu> {
        self.active_mtu.and_then(ops::IbMtu::from_bytes)
    }
    /// `max_mtu` as an [`ops::IbMtu`].
    pub fn max_ib_mtu(&self) -> Option<ops::IbMtu> {
        self.max_mtu.and_then(ops::IbMtu::from_bytes)
    }
}

/// The IB MTU a port reports for a PMTU value (bytes): on an InfiniBand
/// port the IB MTU of exactly that size (linux `mlx5_ib` main.c
/// mlx5_mtu_to_ib_mtu), on an Ethernet port the RoCE MTU of the hardware
/// MTU ([`ops::roce_mtu_of_hw_mtu`], linux iboe_get_mtu). Other link layers:
/// `None`.
pub fn port_mtu(link_layer: LinkLayer, pmtu_bytes: u16) -> Option<ops::IbMtu> {
    match link_layer {
        LinkLayer::InfiniBand => ops::IbMtu::from_bytes(pmtu_bytes as u32),
        LinkLayer::Ethernet => ops::roce_mtu_of_hw_mtu(pmtu_bytes as u32),
        LinkLayer::Other(_) => None,
    }
}

/// What `bareverbs devinfo` prints, from QUERY_HCA_CAP, QUERY_ADAPTER,
/// the NIC or HCA vport context and port queries, with the values the mlx5
/// kernel driver derives from them (`mlx5_ib_query_device`,
/// `mlx5_ib_query_port`). `None` marks what the device did not tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DevInfo {
    /// Firmware version (initialization segment).
    pub fw_ver: FwVersion,
    /// Node GUID: NIC vport context on Ethernet, HCA vport context on
    /// InfiniBand (linux `mlx5_query_node_guid`).
    pub node_guid: Option<u64>,
    /// System image GUID, from the same context.
    pub sys_image_guid: Option<u64>,
    /// IEEE vendor id from QUERY_ADAPTER (Mellanox 0x02c9).
    pub vendor_id: Option<u32>,
    /// PCI device id (`vendor_part_id`; the kernel takes it from PCI config
    /// space, so the host fills it in: the core cannot see config space).
    pub vendor_part_id: Option<u16>,
    /// PCI revision (`hw_ver`; host-filled like `vendor_part_id`).
    pub hw_ver: Option<u8>,
    /// QUERY_ADAPTER's PSID bytes (`board_id`; see
    /// [`ops::Adapter::board_id`]).
    pub adapter: Option<ops::Adapter>,
    /// Number of physical ports (`cap.num_ports`).
    pub phys_port_cnt: u8,
    /// Largest memory region: the kernel reports `~0` (all ones).
    pub max_mr_size: u64,
    /// Page sizes: `~(min_page_size − 1)` with `min_page_size = 1 <<
    /// cap.log_pg_sz` (`None` for a nonsense log).
    pub page_size_cap: Option<u64>,
    /// Max QPs (`1 << log_max_qp`).
    pub max_qp: u32,
    /// Max WRs per QP (`1 << log_max_qp_sz`).
    pub max_qp_wr: u32,
    /// Max SGEs (see [`HcaCaps::max_sge`]).
    pub max_sge: u32,
    /// Max SGEs of an RDMA READ ([`crate::cmd::caps::MAX_SGE_RD`]).
    pub max_sge_rd: u32,
    /// Max CQs (`1 << log_max_cq`).
    pub max_cq: u32,
    /// Max CQEs per CQ as ibv reports it (`(1 << log_max_cq_sz) − 1`;
    /// [ref §3.7](crate::reference)).
    pub max_cqe: u32,
    /// Max memory regions (`1 << log_max_mkey`).
    pub max_mr: u32,
    /// Max PDs (`1 << log_max_pd`).
    pub max_pd: u32,
    /// `max_qp_rd_atom` as the mlx5 kernel driver fills it: `1 <<
    /// log_max_ra_req_qp`.
    pub max_qp_rd_atom: u32,
    /// `max_qp_init_rd_atom` as the mlx5 kernel driver fills it: `1 <<
    /// log_max_ra_res_qp`.
    pub max_qp_init_rd_atom: u32,
    /// `max_qp_rd_atom × max_qp` (saturating).
    pub max_res_rd_atom: u32,
    /// Max SRQs (`1 << log_max_srq`).
    pub max_srq: u32,
    /// Max SRQ WRs (`(1 << log_max_srq_sz) − 1`, as the kernel reports it).
    pub max_srq_wr: u32,
    /// Max SRQ SGEs ([`HcaCaps::max_srq_sge`]).
    pub max_srq_sge: u32,
    /// The raw general capabilities.
    pub caps: HcaCaps,
    /// Ports.
    pub ports: heapless::Vec<PortInfo, 4>,
}

/// What one [`Device::serve_events`] call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventsServed {
    /// EQEs taken from the ring (at most the EQ's size).
    pub handled: usize,
    /// The per-call bound stopped the call while the next EQE already
    /// looked valid: call again (a device flooding the EQ cannot keep one
    /// call running forever).
    pub more: bool,
}

/// Most live objects of each kind the device tracks.
pub const MAX_OBJECTS: usize = 64;

#[derive(Clone, Copy, Debug)]
enum Obj {
    Pd(u32),
    /// Index and the whole key (index and variant) handed out.
    Mkey(u32, u32),
    Cq(u32, DmaBuf, DmaBuf, CqLoad),
    Qp(u32, DmaBuf, DmaBuf, QpLoad),
    Srq(u32, DmaBuf, DmaBuf),
}

impl Obj {
    /// Kind and number: the key of the object table (numbers are unique
    /// per kind, not across kinds).
    fn id(&self) -> (&'static str, u32) {
        match self {
            Obj::Pd(n) => ("PD", *n),
            Obj::Mkey(n, _) => ("mkey", *n),
            Obj::Cq(n, ..) => ("CQ", *n),
            Obj::Qp(n, ..) => ("QP", *n),
            Obj::Srq(n, ..) => ("SRQ", *n),
        }
    }
}

/// A CQ's capacity and the outstanding WRs of the QPs reporting to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CqLoad {
    ncqe: u32,
    committed: u32,
}

/// The outstanding WRs a QP may have, and the CQs they complete into.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct QpLoad {
    send_cqn: u32,
    recv_cqn: u32,
    send: u32,
    recv: u32,
}

/// Whether `from → to` is an edge of the QP state table
/// ([`crate::qp::transition_attrs`], [ref §6.2](crate::reference)) for service type `st`.
/// Any state may go to RESET or ERR; otherwise states the table does not
/// know (SQ draining, suspended, unknown codes) have no legal edge.
fn legal_edge(ty: QpType, from: HwQpState, to: HwQpState) -> bool {
    use crate::qp::{transition_attrs, QpState};
    if matches!(to, HwQpState::Reset | HwQpState::Err) {
        return true;
    }
    let state = |h: HwQpState| match h {
        HwQpState::Reset => Some(QpState::Reset),
        HwQpState::Init => Some(QpState::Init),
        HwQpState::Rtr => Some(QpState::Rtr),
        HwQpState::Rts => Some(QpState::Rts),
        HwQpState::Sqd => Some(QpState::Sqd),
        HwQpState::SqErr => Some(QpState::Sqe),
        HwQpState::Err => Some(QpState::Err),
        _ => None,
    };
    match (state(from), state(to)) {
        (Some(f), Some(t)) => transition_attrs(ty, f, t).is_some(),
        _ => false,
    }
}

/// What teardown did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TeardownReport {
    /// Objects destroyed by teardown (left alive by the user).
    pub objects_destroyed: usize,
    /// Pages firmware returned.
    pub pages_reclaimed: usize,
    /// Pages firmware kept (their memory is not freed).
    pub pages_leaked: usize,
    /// The first command error met (teardown continues past errors).
    pub first_error: Option<CmdError>,
}

/// An mlx5 function brought up through the command interface.
pub struct Device<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> {
    bar: B,
    clock: C,
    alloc: A,
    cfg: DeviceConfig,
    cmdq: CmdQueue,
    pages: PagePool,
    inb: [u8; MAX_MSG],
    outb: [u8; MAX_MSG],
    pgin: [u8; MAX_MSG],
    pgout: [u8; MAX_MSG],
    fw: FwVersion,
    issi: u16,
    hca: HcaCaps,
    roce: Option<ops::RoceCaps>,
    roce_enabled: bool,
    uar: u32,
    eq: Option<(EventQueue, B::Uar)>,
    objs: heapless::Vec<Obj, { 5 * MAX_OBJECTS }>,
    page_events: u64,
    health_last: u32,
    health_misses: u8,
    /// Variant byte (`mkey_7_0`) of the last memory key created.
    mkey_variant: u8,
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> fmt::Debug for Device<B, C, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("fw", &self.fw)
            .field("issi", &self.issi)
            .field("uar", &self.uar)
            .field("pages_held", &self.pages.held())
            .finish()
    }
}

fn bu(step: Step) -> impl FnOnce(CmdError) -> DeviceError {
    move |err| DeviceError::BringUp { step, err }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// Waits until bit 31 of `initializing` clears ([ref §7.6](crate::reference) step 1).
    pub fn wait_fw_init(
        bar: &B,
        clock: &mut C,
        timeout_us: u64,
        poll_us: u32,
    ) -> Result<(), InitSegError> {
        let start = clock.now_us();
        loop {
            if !InitSeg(bar).initializing() {
                return Ok(());
            }
            let waited = clock.now_us().saturating_sub(start);
            if waited >= timeout_us {
                return Err(InitSegError::InitTimeout { waited_us: waited });
            }
            clock.delay_us(poll_us.max(1));
        }
    }

    /// Runs the bring-up sequence of [ref §7.6](crate::reference) and returns a ready device
    /// (INIT_HCA done, one UAR allocated, caps queried).
    pub fn bring_up(
        mut bar: B,
        mut clock: C,
        alloc: A,
        cfg: DeviceConfig,
    ) -> Result<Self, DeviceError> {
        Self::wait_fw_init(&bar, &mut clock, cfg.init_timeout_us, cfg.init_poll_us)
            .map_err(DeviceError::InitSeg)?;
        let geometry: CmdqGeometry = InitSeg(&bar).validate().map_err(DeviceError::InitSeg)?;
        let fw = InitSeg(&bar).fw_version();
        let cmdq = CmdQueue::new(&alloc, &mut bar, geometry).map_err(DeviceError::Cmdq)?;
        let mut d = Device {
            bar,
            clock,
            alloc,
            cfg,
            cmdq,
            pages: PagePool::new(),
            inb: [0; MAX_MSG],
            outb: [0; MAX_MSG],
            pgin: [0; MAX_MSG],
            pgout: [0; MAX_MSG],
            fw,
            issi: 0,
            hca: HcaCaps::default(),
            roce: None,
            roce_enabled: false,
            uar: 0,
            eq: None,
            objs: heapless::Vec::new(),
            page_events: 0,
            health_last: 0,
            health_misses: 0,
            mkey_variant: 0,
        };
        match d.bring_up_steps() {
            Ok(()) => Ok(d),
            Err(e) => {
                // Leave the function disabled; firmware may keep pages, so
                // only the command queue's own memory is left in place.
                let mut b = [0u8; 16];
                let r = ops::disable_hca(&mut b);
                let _ = d.exec_buf(r, &b);
                Err(e)
            }
        }
    }

    fn bring_up_steps(&mut self) -> Result<(), DeviceError> {
        // (2) wait again (kernel), short.
        Self::wait_fw_init(
            &self.bar,
            &mut self.clock,
            self.cfg.init_timeout_us,
            self.cfg.init_poll_us,
        )
        .map_err(DeviceError::InitSeg)?;
        // (4) ENABLE_HCA.
        let r = ops::enable_hca(&mut self.inb);
        self.exec(r).map_err(bu(Step::EnableHca))?;
        // (5) ISSI.
        let r = ops::query_issi(&mut self.inb);
        match self.exec(r) {
            Ok(_) => {
                let (_, supported) = ops::parse_query_issi(&self.outb);
                let issi = ops::choose_issi(supported)
                    .ok_or(DeviceError::UnsupportedIssi { supported })?;
                if issi == 1 {
                    let r = ops::set_issi(&mut self.inb, 1);
                    self.exec(r).map_err(bu(Step::Issi))?;
                }
                self.issi = issi;
            }
            Err(CmdError::Failed { .. }) => self.issi = 0,
            Err(e) => {
                return Err(DeviceError::BringUp {
                    step: Step::Issi,
                    err: e,
                })
            }
        }
        // (6) boot pages.
        self.supply_pages(PagesKind::Boot, Step::BootPages)?;
        // (7) host endianness.
        if self.cfg.set_host_endianness {
            let r = ops::set_host_endianness(&mut self.inb);
            self.exec(r).map_err(bu(Step::HostEndianness))?;
        }
        // (8) caps: query max and current, set current with our changes.
        let r = ops::query_hca_cap(&mut self.inb, CapType::General, false);
        self.exec(r).map_err(bu(Step::HcaCaps))?;
        let max = HcaCaps::parse(&self.outb[ops::CAP_OFFSET..ops::CAP_OFFSET + GENERAL_CAP_LEN]);
        let r = ops::query_hca_cap(&mut self.inb, CapType::General, true);
        self.exec(r).map_err(bu(Step::HcaCaps))?;
        let mut cap = [0u8; GENERAL_CAP_LEN];
        cap.copy_from_slice(&self.outb[ops::CAP_OFFSET..ops::CAP_OFFSET + GENERAL_CAP_LEN]);
        caps::set(&mut cap, caps::field::CMDIF_CHECKSUM, 0);
        caps::set(&mut cap, caps::field::LOG_UAR_PAGE_SZ, 0);
        if max.mkey_by_name {
            caps::set(&mut cap, caps::field::MKEY_BY_NAME, 1);
        }
        let r = ops::set_hca_cap(&mut self.inb, CapType::General, &cap);
        self.exec(r).map_err(bu(Step::HcaCaps))?;
        // (9) init pages, (10) INIT_HCA.
        self.supply_pages(PagesKind::Init, Step::InitPages)?;
        let r = ops::init_hca(&mut self.inb);
        self.exec(r).map_err(bu(Step::InitHca))?;
        // Caps as in force after init.
        let r = ops::query_hca_cap(&mut self.inb, CapType::General, true);
        self.exec(r).map_err(bu(Step::HcaCaps))?;
        self.hca = HcaCaps::parse(&self.outb[ops::CAP_OFFSET..ops::CAP_OFFSET + GENERAL_CAP_LEN]);
        // Ethernet ports: RoCE must be enabled on the vport (ref §7.6).
        if self.hca.port_type == PORT_TYPE_ETHERNET && self.hca.roce {
            if self.cfg.enable_roce {
                let r = ops::modify_nic_vport_roce(&mut self.inb, true);
                self.exec(r).map_err(bu(Step::EnableRoce))?;
                self.roce_enabled = true;
            }
            // RoCE caps (which loopback QPs firmware allows); firmware
            // without the page leaves them unknown.
            let r = ops::query_hca_cap(&mut self.inb, CapType::Roce, true);
            match self.exec(r) {
                Ok(_) => {
                    self.roce = Some(ops::parse_roce_caps(&self.outb[ops::CAP_OFFSET..]));
                }
                Err(CmdError::Failed { .. }) => self.roce = None,
                Err(e) => {
                    return Err(DeviceError::BringUp {
                        step: Step::HcaCaps,
                        err: e,
                    })
                }
            }
        }
        // (12) UAR.
        let r = ops::alloc_uar(&mut self.inb);
        self.exec(r).map_err(bu(Step::AllocUar))?;
        let uar = ops::parse_obj_id(&self.outb);
        if uar > ops::OBJ_NUMBER_MAX {
            return Err(DeviceError::BadObjectNumber {
                what: "UAR",
                number: uar,
            });
        }
        self.uar = uar;
        if self.cfg.async_eq {
            self.create_async_eq()?;
        }
        Ok(())
    }

    fn create_async_eq(&mut self) -> Result<(), DeviceError> {
        // 32 requested + spare, rounded up: 256 entries (ref §4.6, §7.6).
        let nent = (32 + NUM_SPARE_EQE).next_power_of_two();
        let bytes = nent as usize * EQE_BYTES;
        let ring = self
            .alloc
            .alloc(bytes, 4096)
            .ok_or(DeviceError::OutOfDmaMemory { what: "async EQ" })?;
        let uar = match self.bar.map_uar(self.uar) {
            Some(u) => u,
            None => {
                // SAFETY: fresh ring, never given to the device.
                unsafe { self.alloc.free(ring) };
                return Err(DeviceError::NoUar { index: self.uar });
            }
        };
        // SAFETY: fresh ring owned by the EQ.
        let Some(mut eq) = (unsafe { EventQueue::new(ring, nent) }) else {
            // SAFETY: as above.
            unsafe { self.alloc.free(ring) };
            return Err(DeviceError::OutOfDmaMemory { what: "async EQ" });
        };
        let p = ops::EqParams {
            log_eq_size: nent.trailing_zeros() as u8,
            uar_page: self.uar,
            intr: 0,
            event_bitmask: 1u64 << crate::cmd::eq::event::PAGE_REQUEST,
            pages_iova: ring.iova,
            npages: bytes.div_ceil(4096),
        };
        let r = ops::create_eq(&mut self.inb, &p);
        if let Err(err) = self.exec(r) {
            // SAFETY: CREATE_EQ failed, the device does not use the ring.
            unsafe { self.alloc.free(ring) };
            return Err(DeviceError::BringUp {
                step: Step::AsyncEq,
                err,
            });
        }
        eq.set_eqn(ops::parse_create_eq(&self.outb));
        let mut uar = uar;
        uar.write32(EQ_DOORBELL_ARM, eq.doorbell());
        self.eq = Some((eq, uar));
        Ok(())
    }

    fn supply_pages(&mut self, kind: PagesKind, step: Step) -> Result<(), DeviceError> {
        let r = ops::query_pages(&mut self.inb, kind);
        self.exec(r).map_err(bu(step))?;
        let (func, n) = ops::parse_query_pages(&self.outb);
        if n > 0 {
            self.give_pages(func, n as u32, SlotKind::Regular)
                .map_err(|e| match e {
                    DeviceError::Cmd(err) => DeviceError::BringUp { step, err },
                    o => o,
                })?;
        }
        Ok(())
    }

    /// Gives `count` pages to firmware with MANAGE_PAGES GIVE ([ref §7.7](crate::reference)).
    fn give_pages(&mut self, func: u16, count: u32, slot: SlotKind) -> Result<(), DeviceError> {
        if (self.pages.held() as u64 + count as u64) > self.cfg.max_fw_pages as u64 {
            return Err(DeviceError::TooManyPages {
                requested: count as i64,
            });
        }
        let mut left = count as usize;
        let mut list = [0u64; 64];
        while left > 0 {
            let n = left.min(list.len());
            let got = self
                .pages
                .take_for_fw(&self.alloc, &mut list[..n])
                .map_err(DeviceError::Pages)?;
            let res = match slot {
                SlotKind::Regular => {
                    let r = ops::manage_pages_give(&mut self.inb, func, &list[..got]);
                    self.exec(r).map(|_| ())
                }
                SlotKind::Pages => {
                    let r = ops::manage_pages_give(&mut self.pgin, func, &list[..got]);
                    self.exec_slot(SlotKind::Pages, r).map(|_| ())
                }
            };
            if let Err(e) = res {
                if !matches!(e, CmdError::Timeout { .. }) {
                    self.pages.undo(&list[..got]);
                }
                return Err(DeviceError::Cmd(e));
            }
            left -= got;
        }
        Ok(())
    }

    /// Takes up to `count` pages back (MANAGE_PAGES TAKE). Returns how many
    /// firmware returned.
    fn take_pages(&mut self, func: u16, count: u32, slot: SlotKind) -> Result<usize, DeviceError> {
        let r = match slot {
            SlotKind::Regular => ops::manage_pages_take(&mut self.inb, func, count),
            SlotKind::Pages => ops::manage_pages_take(&mut self.pgin, func, count),
        };
        self.exec_slot(slot, r)?;
        let out = match slot {
            SlotKind::Regular => &self.outb[..r.out_len],
            SlotKind::Pages => &self.pgout[..r.out_len],
        };
        let n = ops::parse_manage_pages(out)?;
        let mut bad = None;
        for i in 0..n {
            let p = ops::manage_pages_entry(out, i);
            if let Err(e) = self.pages.returned(p) {
                bad = Some(e);
            }
        }
        if let Some(e) = bad {
            return Err(DeviceError::Pages(e));
        }
        Ok(n)
    }

    fn exec(&mut self, r: Req) -> Result<usize, CmdError> {
        self.exec_slot(SlotKind::Regular, r)
    }

    fn exec_buf(&mut self, r: Req, input: &[u8]) -> Result<usize, CmdError> {
        let n = r.in_len.min(input.len());
        self.inb[..n].copy_from_slice(&input[..n]);
        self.exec(r)
    }

    /// Posts the command in the slot's input buffer, waits (serving page
    /// requests from the async EQ while a regular command waits), and reads
    /// the output into the slot's output buffer ([ref §7.3, §7.7](crate::reference)).
    fn exec_slot(&mut self, slot: SlotKind, r: Req) -> Result<usize, CmdError> {
        let input = match slot {
            SlotKind::Regular => &self.inb[..r.in_len.min(MAX_MSG)],
            SlotKind::Pages => &self.pgin[..r.in_len.min(MAX_MSG)],
        };
        self.cmdq.post(&mut self.bar, slot, input, r.out_len)?;
        let start = self.clock.now_us();
        loop {
            if self.cmdq.done(slot) {
                break;
            }
            if slot == SlotKind::Regular {
                self.serve_events();
                if self.cmdq.done(slot) {
                    break;
                }
            }
            let waited = self.clock.now_us().saturating_sub(start);
            if waited >= self.cfg.cmd_timeout_us {
                self.cmdq.abandon(slot);
                return Err(CmdError::Timeout {
                    opcode: r.opcode,
                    waited_us: waited,
                });
            }
            self.clock.delay_us(self.cfg.cmd_poll_us.max(1));
        }
        let out = match slot {
            SlotKind::Regular => &mut self.outb[..r.out_len.min(MAX_MSG)],
            SlotKind::Pages => &mut self.pgout[..r.out_len.min(MAX_MSG)],
        };
        self.cmdq.complete(slot, out)
    }

    /// Serves the async EQ: answers page requests on the page slot
    /// ([ref §7.7](crate::reference)), at most one EQ's worth of entries per call.
    ///
    /// The bound matters because the EQ ring is device-writable: a device
    /// that keeps producing EQEs (or keeps every owner bit looking valid)
    /// would otherwise keep this loop, and the command wait that calls it,
    /// spinning forever. After `nent` entries the call stops, publishes
    /// the consumer index and re-arms the EQ ([ref §4.6](crate::reference)), and reports
    /// [`EventsServed::more`] so the caller knows to call again; the
    /// remaining entries stay in the ring for the next call.
    pub fn serve_events(&mut self) -> EventsServed {
        let mut served = EventsServed::default();
        let budget = match self.eq.as_ref() {
            Some((eq, _)) => eq.nent() as usize,
            None => return served,
        };
        loop {
            let Some((eq, _)) = self.eq.as_mut() else {
                return served;
            };
            if served.handled >= budget {
                served.more = eq.peek_valid();
                break;
            }
            let Some(ev) = eq.poll() else {
                break;
            };
            served.handled += 1;
            // Publish the consumer index (no re-arm) at least every 0x80
            // EQEs while draining (ref §4.6).
            if served.handled % NUM_SPARE_EQE as usize == 0 {
                if let Some((eq, uar)) = self.eq.as_mut() {
                    uar.write32(EQ_DOORBELL_NO_ARM, eq.doorbell());
                }
            }
            if let Eqe::PageRequest {
                function_id,
                num_pages,
            } = ev
            {
                self.page_events += 1;
                if num_pages > 0 {
                    if self
                        .give_pages(function_id, num_pages as u32, SlotKind::Pages)
                        .is_err()
                    {
                        let r = ops::manage_pages_cant_give(&mut self.pgin, function_id);
                        let _ = self.exec_slot(SlotKind::Pages, r);
                    }
                } else if num_pages < 0 {
                    let _ = self.take_pages(function_id, num_pages.unsigned_abs(), SlotKind::Pages);
                }
            }
        }
        if let Some((eq, uar)) = self.eq.as_mut() {
            uar.write32(EQ_DOORBELL_ARM, eq.doorbell());
        }
        served
    }

    /// One health poll ([ref §7.1](crate::reference) health checks): link down, NIC interface
    /// DISABLED/SW_RESET, `rfr` with a syndrome, or a health counter that
    /// did not change for 3 consecutive polls. Call it about once a second
    /// (VFIO: POLL_HEALTH_INTERVAL 1000 ms, MAX_MISSES 3).
    pub fn check_health(&mut self) -> Result<(), crate::cmd::initseg::HealthProblem> {
        let seg = InitSeg(&self.bar);
        seg.check_health()?;
        let c = seg.health_counter();
        if (c ^ self.health_last) & 0x00ff_ffff == 0 {
            self.health_misses = self.health_misses.saturating_add(1);
            if self.health_misses >= 3 {
                return Err(crate::cmd::initseg::HealthProblem::CounterStuck { counter: c });
            }
        } else {
            self.health_misses = 0;
        }
        self.health_last = c;
        Ok(())
    }

    // ---- accessors ------------------------------------------------------

    /// Firmware version read at bring-up.
    pub fn fw_version(&self) -> FwVersion {
        self.fw
    }
    /// Negotiated ISSI.
    pub fn issi(&self) -> u16 {
        self.issi
    }
    /// General capabilities in force (QUERY_HCA_CAP current, after INIT_HCA).
    pub fn hca_caps(&self) -> &HcaCaps {
        &self.hca
    }
    /// Sizing inputs from the capabilities ([ref §3.1](crate::reference)).
    pub fn device_caps(&self) -> crate::sizing::DeviceCaps {
        self.hca
            .device_caps(self.cfg.page_size, self.cfg.cache_line_size)
    }
    /// The UAR allocated at bring-up.
    pub fn uar_index(&self) -> u32 {
        self.uar
    }
    /// Maps a UAR page for a data-path queue.
    pub fn map_uar(&mut self, index: u32) -> Result<B::Uar, DeviceError> {
        self.bar.map_uar(index).ok_or(DeviceError::NoUar { index })
    }
    /// Pages firmware holds.
    pub fn pages_held(&self) -> usize {
        self.pages.held()
    }
    /// Page-request events served so far.
    pub fn page_events(&self) -> u64 {
        self.page_events
    }
    /// The BAR (for health checks).
    pub fn bar(&self) -> &B {
        &self.bar
    }
    /// The BAR, mutably (for host-specific settings of `B`, such as a
    /// benchmark's BlueFlame switch). Read-only uses need only
    /// [`Device::bar`].
    ///
    /// # Safety
    /// The driver owns the function's command interface and relies on the
    /// BAR state it programmed. Through the returned reference the caller
    /// must not:
    /// * write the command-queue registers (`cmdq_addr_h`,
    ///   `cmdq_addr_l_sz`) or the command doorbell (`cmd_dbell`): the device
    ///   would fetch commands, and DMA outputs, at addresses the driver does
    ///   not own, or execute half-written entries;
    /// * request a NIC-interface state (reset, disable) or otherwise reset
    ///   the function: the driver would keep using and freeing memory the
    ///   device's view of which it no longer knows;
    /// * change any state of `B` that makes the device (or the model behind
    ///   `B`) read or write memory other than what the driver gave it.
    ///
    /// Settings of `B` that only affect how the host side issues its own
    /// accesses (or a simulator's fault injection, which models a device
    /// the driver must survive anyway) are fine.
    ///
    /// Not callable outside `unsafe` (this does not compile):
    ///
    /// ```compile_fail,E0133
    /// use bareverbs::cmd::{ops::Req, Bar0, Clock};
    /// use bareverbs::device::{Device, HwQpState, QpHandle, UarMap};
    /// use bareverbs::platform::DmaAllocator;
    /// fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    ///     d: &mut Device<B, C, A>,
    ///     q: &mut QpHandle,
    ///     r: Req,
    /// ) {
    ///     let _ = d.bar_mut();
    ///     let _ = (q, r);
    /// }
    /// ```
    pub unsafe fn bar_mut(&mut self) -> &mut B {
        &mut self.bar
    }
    /// The clock.
    pub fn clock_mut(&mut self) -> &mut C {
        &mut self.clock
    }
    /// RoCE capabilities (Ethernet ports with RoCE; `None` otherwise or
    /// when firmware does not report them).
    pub fn roce_caps(&self) -> Option<ops::RoceCaps> {
        self.roce
    }
    /// Whether RC QPs may use the force-loopback path (`fl = 1`) on this
    /// device: on an Ethernet port the RoCE capability for the vport's
    /// RoCE state decides; `None` when unknown (InfiniBand ports, or no
    /// RoCE capability page).
    pub fn force_loopback_rc(&self) -> Option<bool> {
        let r = self.roce?;
        Some(if self.roce_enabled {
            r.fl_rc_qp_when_roce_enabled
        } else {
            r.fl_rc_qp_when_roce_disabled
        })
    }
    /// The DMA allocator.
    pub fn allocator(&self) -> &A {
        &self.alloc
    }

    /// Records an object the device just created, keyed by the number the
    /// device returned — which is not trusted: a number above 24 bits
    /// ([`DeviceError::BadObjectNumber`]) or one already live for the same
    /// kind ([`DeviceError::DuplicateObjectNumber`]) is refused and nothing
    /// is recorded. The caller then returns that error without handing out
    /// a handle and without freeing the create command's DMA memory (the
    /// device may use it: leaked on purpose) or destroying anything (the
    /// number names an object the driver already owns).
    fn track(&mut self, o: Obj) -> Result<(), DeviceError> {
        let (what, number) = o.id();
        if number > ops::OBJ_NUMBER_MAX {
            return Err(DeviceError::BadObjectNumber { what, number });
        }
        if self.objs.iter().any(|x| x.id() == (what, number)) {
            return Err(DeviceError::DuplicateObjectNumber { what, number });
        }
        self.objs
            .push(o)
            .map_err(|_| DeviceError::TableFull { what: "objects" })
    }
    /// The capacity and committed load of CQ `cqn`, if it is ours.
    fn cq_load(&self, cqn: u32) -> Option<CqLoad> {
        self.objs.iter().find_map(|o| match o {
            Obj::Cq(n, _, _, l) if *n == cqn => Some(*l),
            _ => None,
        })
    }

    /// Adds (or removes) a QP's outstanding WRs to the load of its CQs.
    fn commit_cq_load(&mut self, q: &QpLoad, add: bool) {
        for o in self.objs.iter_mut() {
            if let Obj::Cq(n, _, _, l) = o {
                let mut d = 0;
                if *n == q.send_cqn {
                    d += q.send;
                }
                if *n == q.recv_cqn {
                    d += q.recv;
                }
                l.committed = if add {
                    l.committed.saturating_add(d)
                } else {
                    l.committed.saturating_sub(d)
                };
            }
        }
    }

    /// The CQ-covers-outstanding rule ([ref §3.7](crate::reference)): every WR that can be
    /// outstanding on the QPs reporting to a CQ needs a CQE slot, counting
    /// the QPs already attached. Refused with the sizing error that says so.
    fn check_cq_room(&self, q: &QpLoad) -> Result<(), DeviceError> {
        use crate::sizing::{check_cq_covers, CqAttach};
        let (Some(sc), Some(rc)) = (self.cq_load(q.send_cqn), self.cq_load(q.recv_cqn)) else {
            return Ok(()); // unknown CQ numbers are refused by firmware
        };
        let attach = if q.send_cqn == q.recv_cqn {
            CqAttach::Shared {
                cqe: sc.ncqe - 1 - sc.committed.min(sc.ncqe - 1),
            }
        } else {
            CqAttach::Separate {
                send_cqe: sc.ncqe - 1 - sc.committed.min(sc.ncqe - 1),
                recv_cqe: rc.ncqe - 1 - rc.committed.min(rc.ncqe - 1),
            }
        };
        check_cq_covers(attach, q.send, q.recv).map_err(DeviceError::CqTooSmall)
    }

    fn untrack(&mut self, f: impl Fn(&Obj) -> bool) -> Option<Obj> {
        let i = self.objs.iter().position(f)?;
        Some(self.objs.remove(i))
    }

    /// Runs an arbitrary prepared command (input built with an [`ops`]
    /// builder into the buffer returned by [`Device::input`]) and returns
    /// the output bytes.
    ///
    /// # Safety
    /// The driver tracks every object, page and state it made the device
    /// hold and frees DMA memory on that basis; a raw command bypasses all
    /// of it. The caller must ensure the command does not:
    /// * destroy or modify an object this `Device` created (QP, CQ, SRQ,
    ///   memory key, PD, UAR, EQ), nor change a QP's state: the driver's
    ///   view (e.g. [`QpHandle::state`], the CQ load table) would be wrong,
    ///   and a later destroy could free memory the device still uses or act
    ///   on an object number firmware has since given to someone else;
    /// * create an object, give pages (MANAGE_PAGES GIVE) or name any DMA
    ///   address unless that memory stays allocated, and is used by nothing
    ///   else, for as long as the device may access it (the device will
    ///   write there);
    /// * change the HCA life cycle (ENABLE/DISABLE/INIT/TEARDOWN_HCA),
    ///   take pages back (MANAGE_PAGES TAKE) or change capabilities
    ///   (SET_HCA_CAP): the page pool and command queue would be freed or
    ///   kept on a false premise.
    ///
    /// Queries, NOP and commands firmware is expected to refuse (unknown
    /// opcodes, unknown object numbers: the output is then an error) are
    /// fine, as long as a command that unexpectedly succeeds would also
    /// meet the rules above. Commands that only change state the driver
    /// caches without relying on it for memory safety (e.g. the vport's
    /// `roce_en`) are allowed; the cached view may then be stale.
    ///
    /// It is `unsafe` to call (this does not compile):
    ///
    /// ```compile_fail,E0133
    /// use bareverbs::cmd::{ops::Req, Bar0, Clock};
    /// use bareverbs::device::{Device, HwQpState, QpHandle, UarMap};
    /// use bareverbs::platform::DmaAllocator;
    /// fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    ///     d: &mut Device<B, C, A>,
    ///     q: &mut QpHandle,
    ///     r: Req,
    /// ) {
    ///     let _ = d.run(r);
    /// }
    /// ```
    ///
    /// while the same call in an `unsafe` block, under the contract, does:
    ///
    /// ```
    /// use bareverbs::cmd::{ops::Req, Bar0, Clock};
    /// use bareverbs::device::{Device, HwQpState, QpHandle, UarMap};
    /// use bareverbs::platform::DmaAllocator;
    /// fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    ///     d: &mut Device<B, C, A>,
    ///     q: &mut QpHandle,
    ///     r: Req,
    /// ) {
    ///     // SAFETY: (the caller's reasoning under the contract above)
    ///     let _ = unsafe { d.run(r) };
    ///     let _ = q;
    /// }
    /// ```
    pub unsafe fn run(&mut self, r: Req) -> Result<&[u8], CmdError> {
        let n = self.exec(r)?;
        Ok(&self.outb[..n])
    }
    /// The regular-slot input buffer, for [`Device::run`].
    ///
    /// Safe on its own: every command the driver sends is rebuilt from
    /// scratch over the first `in_len` bytes by its builder (which zeroes
    /// them first), so bytes left here never reach the device except
    /// through the `unsafe` [`Device::run`] / [`Device::modify_unchecked`].
    pub fn input(&mut self) -> &mut [u8; MAX_MSG] {
        &mut self.inb
    }

    // ---- objects ----------------------------------------------------------

    /// ALLOC_PD.
    pub fn alloc_pd(&mut self) -> Result<Pd, DeviceError> {
        if self.objs.is_full() {
            return Err(DeviceError::TableFull { what: "objects" });
        }
        let r = ops::alloc_pd(&mut self.inb);
        self.exec(r)?;
        let pd = ops::parse_obj_id(&self.outb);
        self.track(Obj::Pd(pd))?;
        Ok(Pd(pd))
    }
    /// DEALLOC_PD.
    /// Refused with [`DeviceError::NotOurs`] for a PD number this driver
    /// does not hold.
    pub fn dealloc_pd(&mut self, pd: Pd) -> Result<(), DeviceError> {
        if !self
            .objs
            .iter()
            .any(|o| matches!(o, Obj::Pd(x) if *x == pd.0))
        {
            return Err(DeviceError::NotOurs {
                what: "PD",
                number: pd.0,
            });
        }
        let r = ops::dealloc_pd(&mut self.inb, pd.0);
        self.exec(r)?;
        self.untrack(|o| matches!(o, Obj::Pd(x) if *x == pd.0));
        Ok(())
    }

    /// CREATE_MKEY over `buf`, addressed by its IOVA ([ref §7.12](crate::reference)).
    ///
    /// `buf` need not be aligned: the MTT lists every page the range
    /// touches, counted from the IOVA's offset in its first page
    /// (`((iova & (page − 1)) + len)` rounded up to pages), starting at the
    /// page holding `iova`. Pages are 4 KiB unless the list would not fit
    /// one command (more than about 600 entries, a 2.4 MiB buffer): then
    /// the smallest power-of-two page size up to 2 GiB whose list fits
    /// (`mkc.log_page_size`). The buffer is contiguous in device address
    /// space, so every page size describes it; the pages' parts outside
    /// the buffer are not reachable through the key, whose start and
    /// length bound every access.
    ///
    /// The key's low byte (`mkey_7_0`, the variant) rotates on every
    /// creation through 1..=255: firmware may hand a destroyed key's index
    /// to a new key, and the new key must not answer to the old lkey/rkey
    /// (a stale key then fails on access instead of reaching the new
    /// buffer). Firmware chooses the index only after the variant is sent,
    /// so the rotation is per device rather than per index: a stale key
    /// aliases a new one only if its index comes back after a multiple of
    /// 255 creations. Variant 0 is skipped, so no key is ever 0x100
    /// (MLX5_INVALID_LKEY, [ref §2.1](crate::reference)) or has a zero low byte.
    ///
    /// The safe way to register memory is
    /// [`Context::reg_mr`](crate::verbs::Context::reg_mr), over a buffer it
    /// owns.
    ///
    /// # Safety
    /// The key lets the device (and, with remote rights, any peer that
    /// learns the key) read and write `[buf.iova, buf.iova + buf.len)`.
    /// `buf` must describe DMA memory the caller owns and may hand to the
    /// device: not a ring, doorbell record, command or event queue page of
    /// any object, and not memory anything else uses. It must stay
    /// allocated, and never be read or written through Rust references
    /// while the device may write it, until the key is destroyed
    /// ([`Device::destroy_mkey`] or teardown).
    pub unsafe fn create_mkey(
        &mut self,
        pd: Pd,
        buf: &DmaBuf,
        access: Access,
    ) -> Result<Mkey, DeviceError> {
        // The key grants exactly the rights CREATE_MKEY encodes.
        let access = MkeyAccess::from_ibv(access).to_ibv();
        if self.objs.is_full() {
            return Err(DeviceError::TableFull { what: "objects" });
        }
        let range = DeviceError::MkeyRange {
            iova: buf.iova,
            len: buf.len,
        };
        // The last byte must be addressable: iova + len − 1 ≤ u64::MAX.
        if buf.len > 0 && buf.iova.checked_add(buf.len as u64 - 1).is_none() {
            return Err(range);
        }
        // The smallest page size whose MTT list fits one command: a buffer
        // is contiguous in device address space, so any page size
        // describes it, and the key's start and length (not the pages)
        // bound what the device may touch.
        let max = ((MAX_MSG - ops::PAS_OFFSET) / 8) as u64;
        let mut log_page = ops::MKEY_LOG_PAGE_MIN;
        let (pages_iova, npages) = loop {
            let Some((first, n)) = ops::mkey_pages(buf.iova, buf.len as u64, log_page) else {
                return Err(range);
            };
            if n <= max {
                break (first, n as usize);
            }
            if log_page == ops::MKEY_LOG_PAGE_MAX {
                return Err(DeviceError::Limit {
                    what: "memory key pages",
                    requested: n,
                    max,
                });
            }
            log_page += 1;
        };
        let variant = match self.mkey_variant {
            255 => 1,
            v => v + 1,
        };
        let p = ops::MkeyParams {
            pd: pd.0,
            access,
            start_addr: buf.iova,
            len: buf.len as u64,
            pages_iova,
            npages,
            log_page_size: log_page,
            variant,
        };
        let r = ops::create_mkey(&mut self.inb, &p);
        self.exec(r)?;
        // Consumed even if the answer is refused below: firmware may have
        // created a key with this variant.
        self.mkey_variant = variant;
        let index = ops::parse_obj_id(&self.outb);
        let key = (index << 8) | variant as u32;
        self.track(Obj::Mkey(index, key))?;
        Ok(Mkey {
            index,
            key,
            addr: buf.iova,
            len: buf.len as u64,
            access,
        })
    }
    /// DESTROY_MKEY.
    ///
    /// `Mkey` is `Copy`: a stale copy (its index since reused by a new key,
    /// whose variant differs) is refused with [`DeviceError::NotOurs`], so
    /// the new key is never destroyed through an old handle.
    pub fn destroy_mkey(&mut self, mkey: Mkey) -> Result<(), DeviceError> {
        if !self
            .objs
            .iter()
            .any(|o| matches!(o, Obj::Mkey(x, k) if *x == mkey.index && *k == mkey.key))
        {
            return Err(DeviceError::NotOurs {
                what: "mkey",
                number: mkey.key,
            });
        }
        let r = ops::with_obj(&mut self.inb, op::DESTROY_MKEY, mkey.index);
        self.exec(r)?;
        self.untrack(|o| matches!(o, Obj::Mkey(x, _) if *x == mkey.index));
        Ok(())
    }

    fn alloc_dma(&mut self, len: usize, what: &'static str) -> Result<DmaBuf, DeviceError> {
        self.alloc
            .alloc(len, 4096)
            .ok_or(DeviceError::OutOfDmaMemory { what })
    }
    fn free_dma(&mut self, bufs: &[DmaBuf]) {
        for b in bufs {
            // SAFETY: callers pass buffers the device was never given or
            // whose object firmware destroyed.
            unsafe { self.alloc.free(*b) };
        }
    }
    fn check_pages(npages: usize) -> Result<(), DeviceError> {
        let max = (MAX_MSG - ops::PAS_OFFSET) / 8;
        if npages > max {
            return Err(DeviceError::Limit {
                what: "queue buffer pages",
                requested: npages as u64,
                max: max as u64,
            });
        }
        Ok(())
    }

    /// CREATE_CQ with `ncqe` entries (power of two) of `cqe_size`; the ring
    /// is initialised with op_own = 0xF0 in every CQE ([ref §3.7, §7.10](crate::reference)).
    pub fn create_cq(&mut self, ncqe: u32, cqe_size: CqeSize) -> Result<CqHandle, DeviceError> {
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
            c_eqn: self.eq.as_ref().map(|(e, _)| e.eqn()).unwrap_or(0),
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
        self.track(Obj::Cq(cqn, ring, dbrec, CqLoad { ncqe, committed: 0 }))?;
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

    /// CREATE_QP: allocates the buffer (RQ then SQ, [ref §3.6](crate::reference)) and the
    /// doorbell record, and creates the QP in RESET ([ref §7.11](crate::reference)).
    pub fn create_qp(&mut self, spec: QpSpec) -> Result<QpHandle, DeviceError> {
        if spec.qp_type.service_type().is_none() {
            return Err(DeviceError::UnsupportedQpType(spec.qp_type));
        }
        let lim = self.hca.log_max_qp_sz;
        for (what, v) in [
            ("log_sq_size", spec.log_sq_size),
            ("log_rq_size", spec.log_rq_size),
        ] {
            if v > lim {
                return Err(DeviceError::Limit {
                    what,
                    requested: v as u64,
                    max: lim as u64,
                });
            }
        }
        if spec.rq_wqe_shift < 4 || spec.rq_wqe_shift > 11 {
            return Err(DeviceError::Limit {
                what: "rq_wqe_shift",
                requested: spec.rq_wqe_shift as u64,
                max: 11,
            });
        }
        if self.objs.is_full() {
            return Err(DeviceError::TableFull { what: "objects" });
        }
        let load = QpLoad {
            send_cqn: spec.send_cqn,
            recv_cqn: spec.recv_cqn,
            send: spec.max_send_wr,
            recv: if spec.srqn.is_some() {
                0
            } else {
                spec.max_recv_wr
            },
        };
        self.check_cq_room(&load)?;
        let rq_bytes = if spec.srqn.is_some() {
            0
        } else {
            (1usize << spec.log_rq_size) << spec.rq_wqe_shift
        };
        let sq_bytes = (1usize << spec.log_sq_size) * 64;
        let total = (rq_bytes + sq_bytes).next_multiple_of(4096);
        let npages = total / 4096;
        Self::check_pages(npages)?;
        let buf = self.alloc_dma(total, "QP buffer")?;
        let dbrec = match self.alloc_dma(64, "QP doorbell record") {
            Ok(d) => d,
            Err(e) => {
                self.free_dma(&[buf]);
                return Err(e);
            }
        };
        let p = ops::QpParams {
            qp_type: spec.qp_type,
            pd: spec.pd.0,
            uar_page: self.uar,
            log_sq_size: spec.log_sq_size,
            no_sq: false,
            log_rq_size: if spec.srqn.is_some() {
                0
            } else {
                spec.log_rq_size
            },
            log_rq_stride: spec.rq_wqe_shift - 4,
            srqn: spec.srqn,
            cqn_snd: spec.send_cqn,
            cqn_rcv: spec.recv_cqn,
            dbr_addr: dbrec.iova,
            user_index: spec.user_index,
            pages_iova: buf.iova,
            npages,
        };
        let r = ops::create_qp(&mut self.inb, &p);
        if let Err(e) = self.exec(r) {
            if !matches!(e, CmdError::Timeout { .. }) {
                self.free_dma(&[buf, dbrec]);
            }
            return Err(e.into());
        }
        let qpn = ops::parse_obj_id(&self.outb);
        self.track(Obj::Qp(qpn, buf, dbrec, load))?;
        self.commit_cq_load(&load, true);
        Ok(QpHandle {
            qpn,
            buf,
            rq: buf.slice(0, rq_bytes).unwrap_or(buf),
            sq: buf.slice(rq_bytes, sq_bytes).unwrap_or(buf),
            dbrec: dbrec.slice(0, 8).unwrap_or(dbrec),
            uar_index: self.uar,
            spec,
            state: HwQpState::Reset,
            cqe_version: self.hca.cqe_version.min(1),
        })
    }

    /// Sends a modify command after checking the edge against the one QP
    /// state table ([`crate::qp::transition_attrs`], [ref §6.2](crate::reference)) for the
    /// QP's type and the state the driver holds it in (`checked`), then
    /// records the new state.
    fn transition(
        &mut self,
        qp: &mut QpHandle,
        checked: bool,
        to: HwQpState,
        name: &'static str,
        r: Req,
    ) -> Result<(), DeviceError> {
        if checked && !legal_edge(qp.spec.qp_type, qp.state, to) {
            return Err(DeviceError::WrongQpState {
                qpn: qp.qpn,
                state: qp.state,
                transition: name,
            });
        }
        self.exec(r)?;
        qp.state = to;
        Ok(())
    }

    /// RESET → INIT (RST2INIT_QP; [ref §6.2, §6.3](crate::reference)).
    pub fn rst2init(&mut self, qp: &mut QpHandle, a: &Rst2Init) -> Result<(), DeviceError> {
        let r = ops::rst2init(&mut self.inb, qp.qpn, a);
        self.transition(qp, true, HwQpState::Init, "RST2INIT", r)
    }
    /// INIT → RTR (INIT2RTR_QP).
    pub fn init2rtr(&mut self, qp: &mut QpHandle, a: &Init2Rtr) -> Result<(), DeviceError> {
        let r = ops::init2rtr(&mut self.inb, qp.qpn, a);
        self.transition(qp, true, HwQpState::Rtr, "INIT2RTR", r)
    }
    /// RTR → RTS (RTR2RTS_QP).
    pub fn rtr2rts(&mut self, qp: &mut QpHandle, a: &Rtr2Rts) -> Result<(), DeviceError> {
        let r = ops::rtr2rts(&mut self.inb, qp.qpn, a);
        self.transition(qp, true, HwQpState::Rts, "RTR2RTS", r)
    }
    /// Any state → ERR (2ERR_QP).
    pub fn qp_to_err(&mut self, qp: &mut QpHandle) -> Result<(), DeviceError> {
        let r = ops::qp_2err(&mut self.inb, qp.qpn);
        self.transition(qp, true, HwQpState::Err, "2ERR", r)
    }
    /// Any state → RESET (2RST_QP).
    pub fn qp_to_reset(&mut self, qp: &mut QpHandle) -> Result<(), DeviceError> {
        let r = ops::qp_2rst(&mut self.inb, qp.qpn);
        self.transition(qp, true, HwQpState::Reset, "2RST", r)
    }
    /// Sends a modify command without the driver-side state check (for
    /// testing firmware's own checks). On success the driver records `to`
    /// as the QP's state.
    ///
    /// # Safety
    /// `r` must be a QP modify command (RST2INIT … 2RST, [ref §6.3](crate::reference)) built
    /// into [`Device::input`] for `qp.qpn`, and `to` must be the state that
    /// command leaves the QP in when firmware accepts it: the driver's view
    /// of the QP state must stay true, because the data-path queues over
    /// the QP and its later transitions and destruction are decided on it.
    /// Any other command is subject to the contract of [`Device::run`].
    ///
    /// Not callable outside `unsafe` (this does not compile):
    ///
    /// ```compile_fail,E0133
    /// use bareverbs::cmd::{ops::Req, Bar0, Clock};
    /// use bareverbs::device::{Device, HwQpState, QpHandle, UarMap};
    /// use bareverbs::platform::DmaAllocator;
    /// fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    ///     d: &mut Device<B, C, A>,
    ///     q: &mut QpHandle,
    ///     r: Req,
    /// ) {
    ///     let _ = d.modify_unchecked(q, r, HwQpState::Rts);
    /// }
    /// ```
    pub unsafe fn modify_unchecked(
        &mut self,
        qp: &mut QpHandle,
        r: Req,
        to: HwQpState,
    ) -> Result<(), DeviceError> {
        self.transition(qp, false, to, "modify", r)
    }
    /// QUERY_QP; also refreshes the tracked state.
    pub fn query_qp(&mut self, qp: &mut QpHandle) -> Result<ops::QpQuery, DeviceError> {
        let r = ops::query_qp(&mut self.inb, qp.qpn);
        self.exec(r)?;
        let q = ops::parse_query_qp(&self.outb[..r.out_len]);
        qp.state = q.state;
        Ok(q)
    }
    /// DESTROY_QP and free its memory.
    pub fn destroy_qp(&mut self, qp: QpHandle) -> Result<(), DeviceError> {
        let r = ops::with_obj(&mut self.inb, op::DESTROY_QP, qp.qpn);
        self.exec(r)?;
        if let Some(Obj::Qp(_, a, b, load)) =
            self.untrack(|o| matches!(o, Obj::Qp(x, ..) if *x == qp.qpn))
        {
            self.commit_cq_load(&load, false);
            self.free_dma(&[a, b]);
        }
        Ok(())
    }

    /// CREATE_SRQ.
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
        let p = ops::SrqParams {
            log_srq_size: spec.log_size,
            log_rq_stride: spec.wqe_shift - 4,
            pd: spec.pd.0,
            cqn: 0,
            lwm: 0,
            dbr_addr: dbrec.iova,
            pages_iova: ring.iova,
            npages: total / 4096,
        };
        let r = ops::create_srq(&mut self.inb, &p);
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
    /// DESTROY_SRQ and free its memory.
    pub fn destroy_srq(&mut self, srq: SrqHandle) -> Result<(), DeviceError> {
        let r = ops::with_obj(&mut self.inb, op::DESTROY_SRQ, srq.srqn);
        self.exec(r)?;
        if let Some(Obj::Srq(_, a, b)) =
            self.untrack(|o| matches!(o, Obj::Srq(x, ..) if *x == srq.srqn))
        {
            self.free_dma(&[a, b]);
        }
        Ok(())
    }

    /// QUERY_VPORT_STATE: (state, admin_state).
    pub fn query_vport_state(&mut self) -> Result<(u8, u8), DeviceError> {
        let r = ops::query_vport_state(&mut self.inb);
        self.exec(r)?;
        Ok(ops::parse_query_vport_state(&self.outb))
    }

    /// ACCESS_REG read of the PMTU register of 1-based `port`
    /// ([`ops::query_pmtu`]).
    pub fn query_pmtu(&mut self, port: u8) -> Result<ops::Pmtu, DeviceError> {
        let r = ops::query_pmtu(&mut self.inb, port);
        self.exec(r)?;
        Ok(ops::parse_pmtu(&self.outb))
    }

    /// QUERY_ADAPTER ([`ops::query_adapter`]).
    pub fn query_adapter(&mut self) -> Result<ops::Adapter, DeviceError> {
        let r = ops::query_adapter(&mut self.inb);
        self.exec(r)?;
        Ok(ops::parse_query_adapter(&self.outb))
    }

    /// QUERY_NIC_VPORT_CONTEXT of the own vport.
    pub fn query_nic_vport_context(&mut self) -> Result<ops::NicVportContext, DeviceError> {
        let r = ops::query_nic_vport_context(&mut self.inb);
        self.exec(r)?;
        let at = ops::QUERY_VPORT_CTX_OFFSET;
        let end = (at + ops::VPORT_CTX_LEN).min(self.outb.len());
        Ok(ops::parse_nic_vport_context(&self.outb[at..end]))
    }

    /// QUERY_HCA_VPORT_CONTEXT of the own vport on 1-based `port` (the
    /// port number is sent only on a two-port device, as linux does).
    pub fn query_hca_vport_context(
        &mut self,
        port: u8,
    ) -> Result<ops::HcaVportContext, DeviceError> {
        let p = (self.hca.num_ports == 2).then_some(port);
        let r = ops::query_hca_vport_context(&mut self.inb, p);
        self.exec(r)?;
        let at = ops::QUERY_HCA_VPORT_CTX_OFFSET;
        let end = (at + ops::HCA_VPORT_CTX_LEN).min(self.outb.len());
        Ok(ops::parse_hca_vport_context(&self.outb[at..end]))
    }

    /// Device information for `bareverbs devinfo`, from the capabilities,
    /// QUERY_ADAPTER (vendor id, board id), the vport context (GUIDs; on an
    /// InfiniBand port also its state and LIDs), QUERY_VPORT_STATE (an
    /// Ethernet port's state) and a PMTU read per port for the MTUs. A
    /// query the firmware fails with a status (older firmware, an opcode
    /// it does not know) leaves what it would have told `None`; any other
    /// command error fails `devinfo`. PCI identity (`vendor_part_id`,
    /// `hw_ver`) is left `None` for the host to fill in.
    pub fn devinfo(&mut self) -> Result<DevInfo, DeviceError> {
        /// A refused query is "unknown"; a broken command interface is not.
        fn soft<T>(r: Result<T, DeviceError>) -> Result<Option<T>, DeviceError> {
            match r {
                Ok(v) => Ok(Some(v)),
                Err(DeviceError::Cmd(CmdError::Failed { .. })) => Ok(None),
                Err(e) => Err(e),
            }
        }
        let c = self.hca;
        let link_layer = match c.port_type {
            0 => LinkLayer::InfiniBand,
            1 => LinkLayer::Ethernet,
            o => LinkLayer::Other(o),
        };
        let adapter = soft(self.query_adapter())?;
        // Ethernet: one vport state for the function, reported per port.
        let eth_state = if link_layer == LinkLayer::InfiniBand {
            None
        } else {
            let (state, _) = self.query_vport_state()?;
            Some(match state {
                0 => PortState::Down,
                1 => PortState::Active,
                o => PortState::Other(o),
            })
        };
        let (mut node_guid, mut sys_image_guid) = (None, None);
        if link_layer != LinkLayer::InfiniBand {
            if let Some(v) = soft(self.query_nic_vport_context())? {
                node_guid = Some(v.node_guid);
                sys_image_guid = Some(v.system_image_guid);
            }
        }
        let max_msg_sz = HcaCaps::pow2(c.log_max_msg);
        let mut ports = heapless::Vec::new();
        for p in 1..=c.num_ports.clamp(1, 4) {
            let (active_mtu, max_mtu) = match soft(self.query_pmtu(p))? {
                Some(r) => (
                    port_mtu(link_layer, r.oper_mtu).map(ops::IbMtu::bytes),
                    port_mtu(link_layer, r.max_mtu).map(ops::IbMtu::bytes),
                ),
                None => (None, None),
            };
            let mut info = PortInfo {
                port: p,
                state: eth_state.unwrap_or(PortState::Other(0)),
                link_layer,
                active_mtu,
                max_mtu,
                sm_lid: Some(0),
                lid: Some(0),
                lmc: Some(0),
                max_msg_sz,
                ib: None,
            };
            if link_layer == LinkLayer::InfiniBand {
                match soft(self.query_hca_vport_context(p))? {
                    Some(h) => {
                        info.state = PortState::from_ib(h.vport_state);
                        info.sm_lid = Some(h.sm_lid);
                        info.lid = Some(h.lid);
                        info.lmc = Some(h.lmc);
                        info.ib = Some(IbPortInfo {
                            sm_sl: h.sm_sl,
                            subnet_timeout: h.subnet_timeout,
                            init_type_reply: h.init_type_reply,
                            phys_state: h.port_physical_state,
                            bad_pkey_cntr: h.pkey_violation_counter,
                            qkey_viol_cntr: h.qkey_violation_counter,
                        });
                        if p == 1 {
                            node_guid = Some(h.node_guid);
                            sys_image_guid = Some(h.system_image_guid);
                        }
                    }
                    None => {
                        info.sm_lid = None;
                        info.lid = None;
                        info.lmc = None;
                    }
                }
            }
            let _ = ports.push(info);
        }
        let max_qp = HcaCaps::pow2(c.log_max_qp);
        let max_qp_rd_atom = HcaCaps::pow2(c.log_max_ra_req_qp);
        Ok(DevInfo {
            fw_ver: self.fw,
            node_guid,
            sys_image_guid,
            vendor_id: adapter.map(|a| a.ieee_vendor_id),
            vendor_part_id: None,
            hw_ver: None,
            adapter,
            phys_port_cnt: c.num_ports,
            max_mr_size: u64::MAX,
            page_size_cap: (c.log_pg_sz < 64).then(|| !((1u64 << c.log_pg_sz) - 1)),
            max_qp,
            max_qp_wr: HcaCaps::pow2(c.log_max_qp_sz),
            max_sge: c.max_sge(),
            max_sge_rd: crate::cmd::caps::MAX_SGE_RD,
            max_cq: HcaCaps::pow2(c.log_max_cq),
            max_cqe: HcaCaps::pow2(c.log_max_cq_sz).saturating_sub(1),
            max_mr: HcaCaps::pow2(c.log_max_mkey),
            max_pd: HcaCaps::pow2(c.log_max_pd),
            max_qp_rd_atom,
            max_qp_init_rd_atom: HcaCaps::pow2(c.log_max_ra_res_qp),
            max_res_rd_atom: max_qp_rd_atom.saturating_mul(max_qp),
            max_srq: HcaCaps::pow2(c.log_max_srq),
            max_srq_wr: HcaCaps::pow2(c.log_max_srq_sz).saturating_sub(1),
            max_srq_sge: c.max_srq_sge(),
            caps: c,
            ports,
        })
    }

    // ---- teardown ---------------------------------------------------------

    /// Destroys every object still alive, the EQ and the UAR; TEARDOWN_HCA;
    /// reclaims firmware pages; DISABLE_HCA; frees DMA memory the device no
    /// longer uses ([ref §7.6](crate::reference) teardown). Continues past errors and reports
    /// the first.
    pub fn teardown(mut self) -> (TeardownReport, B, C, A) {
        let mut rep = TeardownReport::default();
        let note = |rep: &mut TeardownReport, e: Result<usize, CmdError>| {
            if let Err(e) = e {
                rep.first_error.get_or_insert(e);
                false
            } else {
                true
            }
        };
        // Reverse creation order: QPs before SRQs/CQs, keys before PDs.
        while let Some(o) = self.objs.pop() {
            let (opc, id, bufs) = match o {
                Obj::Qp(n, a, b, _) => (op::DESTROY_QP, n, Some((a, b))),
                Obj::Srq(n, a, b) => (op::DESTROY_SRQ, n, Some((a, b))),
                Obj::Cq(n, a, b, _) => (op::DESTROY_CQ, n, Some((a, b))),
                Obj::Mkey(n, _) => (op::DESTROY_MKEY, n, None),
                Obj::Pd(n) => (op::DEALLOC_PD, n, None),
            };
            let r = ops::with_obj(&mut self.inb, opc, id);
            let res = self.exec(r);
            if note(&mut rep, res) {
                rep.objects_destroyed += 1;
                if let Some((a, b)) = bufs {
                    self.free_dma(&[a, b]);
                }
            }
        }
        if let Some((eq, _)) = self.eq.take() {
            let r = ops::destroy_eq(&mut self.inb, eq.eqn());
            let res = self.exec(r);
            if note(&mut rep, res) {
                self.free_dma(&[eq.ring()]);
            }
        }
        let r = ops::dealloc_uar(&mut self.inb, self.uar);
        let res = self.exec(r);
        note(&mut rep, res);
        let r = ops::teardown_hca(&mut self.inb, ops::TeardownProfile::Graceful);
        let res = self.exec(r);
        note(&mut rep, res);
        // Reclaim pages until firmware returns none.
        loop {
            let held = self.pages.held();
            if held == 0 {
                break;
            }
            let ask = held.min(ops::MAX_PAGES_PER_CMD) as u32;
            match self.take_pages(0, ask, SlotKind::Regular) {
                Ok(0) => break,
                Ok(n) => rep.pages_reclaimed += n,
                Err(DeviceError::Cmd(e)) => {
                    rep.first_error.get_or_insert(e);
                    break;
                }
                Err(_) => break,
            }
        }
        rep.pages_leaked = self.pages.held();
        let r = ops::disable_hca(&mut self.inb);
        let res = self.exec(r);
        let disabled = note(&mut rep, res);
        // SAFETY: chunks with no page held by firmware are unused by it.
        unsafe { self.pages.release_unused(&self.alloc) };
        let Device {
            bar,
            clock,
            alloc,
            cmdq,
            ..
        } = self;
        if disabled {
            // SAFETY: DISABLE_HCA succeeded: the function no longer reads
            // its command queue.
            unsafe { cmdq.free(&alloc) };
        }
        (rep, bar, clock, alloc)
    }
}
