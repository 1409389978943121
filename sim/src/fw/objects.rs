//! The firmware object table: UARs, PDs, memory keys, EQs, CQs, QPs (with
//! the state machine of [ref §6](bareverbs::reference)) and SRQs, plus the hook through which the
//! simulator's data path (another module's device model) learns about them.
//!
//! # Data-path hook
//! A data path registers a [`DataPath`] with
//! [`super::SimFirmware::set_data_path`]. Firmware calls
//! [`DataPath::object_event`] after every successful create, modify and
//! destroy, with the object's full context (ring page addresses, doorbell
//! record address, CQ numbers, QP state and connection attributes), and
//! [`DataPath::uar_write`] for every store to a UAR page (send doorbells,
//! CQ arm, EQ doorbells). Everything a ring executor needs to find WQEs and
//! write CQEs is in [`QpObj`], [`CqObj`], [`SrqObj`] and [`MkeyObj`]; the
//! table itself is readable through [`super::SimFirmware::objects`].

use bareverbs::cmd::ops::HwQpState;
use bareverbs::qp::ServiceType;
use bareverbs::wqe::MkeyAccess;
use std::collections::BTreeMap;

/// A memory key (CREATE_MKEY, [ref §7.12](bareverbs::reference)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MkeyObj {
    /// mkey index; lkey/rkey = `index << 8 | variant`.
    pub index: u32,
    /// Variant byte.
    pub variant: u8,
    /// Protection domain.
    pub pd: u32,
    /// Start (virtual) address.
    pub start: u64,
    /// Length.
    pub len: u64,
    /// Access rights (mkc `lr`, `lw`, `rr`, `rw`, `a`).
    pub access: MkeyAccess,
    /// MTT page addresses (flags stripped).
    pub pages: Vec<u64>,
    /// log2 of the MTT page size (`mkc.log_page_size`).
    pub log_page_size: u8,
}

/// An event queue (CREATE_EQ, [ref §7.9](bareverbs::reference)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EqObj {
    /// EQ number.
    pub eqn: u8,
    /// log2 entries.
    pub log_size: u8,
    /// UAR for the doorbell.
    pub uar: u32,
    /// Event bitmask word 0.
    pub mask: u64,
    /// Ring pages.
    pub pages: Vec<u64>,
    /// Producer index (firmware side).
    pub pi: u32,
    /// Consumer index last published by the driver.
    pub ci: u32,
    /// Entries dropped because the ring was full.
    pub overruns: u64,
    /// MSI-X vector (`eqc.intr`).
    pub intr: u8,
    /// Armed: the next EQE raises `intr` (set by the arm doorbell at UAR
    /// + 0x40, cleared when it fires: the EQ is then FIRED until re-armed).
    pub armed: bool,
}

/// A completion queue (CREATE_CQ, [ref §7.10](bareverbs::reference)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CqObj {
    /// CQ number.
    pub cqn: u32,
    /// log2 entries.
    pub log_size: u8,
    /// cqe_sz field (0 = 64 B, 1 = 128 B).
    pub cqe_sz: u8,
    /// UAR for arming.
    pub uar: u32,
    /// Completion EQ.
    pub eqn: u8,
    /// Doorbell record address.
    pub dbr_addr: u64,
    /// Ring pages.
    pub pages: Vec<u64>,
}

/// A queue pair (CREATE_QP and modify commands, [ref §6, §7.11](bareverbs::reference)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QpObj {
    /// QP number.
    pub qpn: u32,
    /// Service type (qpc.st).
    pub st: ServiceType,
    /// State.
    pub state: HwQpState,
    /// Protection domain.
    pub pd: u32,
    /// Send CQ.
    pub cqn_snd: u32,
    /// Receive CQ.
    pub cqn_rcv: u32,
    /// log2 SQ WQEBBs.
    pub log_sq_size: u8,
    /// log2 RQ WQEs.
    pub log_rq_size: u8,
    /// RQ stride − 4.
    pub log_rq_stride: u8,
    /// No SQ.
    pub no_sq: bool,
    /// SRQ number when rq_type = 1.
    pub srqn: Option<u32>,
    /// UAR for the send doorbell.
    pub uar: u32,
    /// User index.
    pub user_index: u32,
    /// Doorbell record address.
    pub dbr_addr: u64,
    /// Buffer pages (RQ first, then SQ; [ref §3.6](bareverbs::reference)).
    pub pages: Vec<u64>,
    /// Port (RST2INIT).
    pub port: u8,
    /// P_Key index.
    pub pkey_index: u16,
    /// Remote read / write / atomic enable.
    pub rre: bool,
    /// Remote write enable.
    pub rwe: bool,
    /// Remote atomic enable.
    pub rae: bool,
    /// Q_Key.
    pub qkey: u32,
    /// MTU enum (INIT2RTR).
    pub mtu: u8,
    /// Remote QPN (INIT2RTR).
    pub remote_qpn: u32,
    /// Receive PSN (INIT2RTR).
    pub rq_psn: u32,
    /// Min RNR NAK (INIT2RTR).
    pub min_rnr_nak: u8,
    /// Force loopback.
    pub fl: bool,
    /// Send PSN (RTR2RTS).
    pub sq_psn: u32,
    /// Retry count (RTR2RTS).
    pub retry_count: u8,
    /// RNR retry (RTR2RTS).
    pub rnr_retry: u8,
    /// ACK timeout (RTR2RTS).
    pub ack_timeout: u8,
    /// Remote LID of the primary path (INIT2RTR).
    pub rlid: u16,
    /// The primary path carries a GRH (INIT2RTR).
    pub grh: bool,
    /// Remote GID of the primary path (INIT2RTR).
    pub rgid: [u8; 16],
    /// Remote MAC of the primary path (INIT2RTR).
    pub rmac: [u8; 6],
    /// The primary path is routed by GID over Ethernet (RoCE): a connected
    /// QP on an Ethernet port whose path is not force-loopback.
    pub roce: bool,
    /// log2 max_dest_rd_atomic (INIT2RTR `log_rra_max`).
    pub log_rra_max: u8,
    /// log2 max_rd_atomic (RTR2RTS `log_sra_max`).
    pub log_sra_max: u8,
}

/// A shared receive queue (CREATE_RMP at ISSI 1, CREATE_SRQ at ISSI 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SrqObj {
    /// Created by CREATE_RMP (destroyed by DESTROY_RMP only), else by
    /// CREATE_SRQ (destroyed by DESTROY_SRQ only).
    pub rmp: bool,
    /// SRQ number.
    pub srqn: u32,
    /// log2 WQEs.
    pub log_size: u8,
    /// Stride − 4.
    pub log_stride: u8,
    /// Protection domain.
    pub pd: u32,
    /// Doorbell record address.
    pub dbr_addr: u64,
    /// Ring pages.
    pub pages: Vec<u64>,
}

/// What changed in the object table.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ObjectEvent {
    /// A memory key was created.
    MkeyCreated(MkeyObj),
    /// A memory key was destroyed.
    MkeyDestroyed(u32),
    /// A CQ was created.
    CqCreated(CqObj),
    /// A CQ was destroyed.
    CqDestroyed(u32),
    /// A QP was created (state RESET).
    QpCreated(QpObj),
    /// A QP changed state / attributes.
    QpModified(QpObj),
    /// A QP was destroyed.
    QpDestroyed(u32),
    /// An SRQ was created.
    SrqCreated(SrqObj),
    /// An SRQ was destroyed.
    SrqDestroyed(u32),
    /// GID table entry `index` now holds `gid` with source MAC `mac`
    /// (SET_ROCE_ADDRESS; an all-zero `gid` is a cleared entry).
    GidSet {
        /// Table index.
        index: u32,
        /// The GID (`source_l3_address`).
        gid: [u8; 16],
        /// The entry's source MAC.
        mac: [u8; 6],
    },
}

/// The hook connecting firmware objects to a data-path model.
///
/// Creates and modifies are offered to the data path *before* firmware
/// commits them: a refusal (`Err` with a reason text) makes the command
/// fail with BAD_PARAM and [`super::reason::DATA_PATH`], and the object
/// does not exist. Destroys are only announced.
pub trait DataPath {
    /// Called for every object change firmware is about to commit (creates,
    /// modifies) or has committed (destroys).
    fn object_event(&mut self, ev: &ObjectEvent) -> Result<(), &'static str>;
    /// Called for every store to a UAR page (`bytes` as stored, big-endian:
    /// 4 or 8 bytes for doorbells, 64 for a BlueFlame chunk).
    fn uar_write(&mut self, uar: u32, offset: usize, bytes: &[u8]);
    /// Called when the host flushes its write-combining buffer after a
    /// BlueFlame copy (`Uar::flush`).
    fn uar_flush(&mut self, _uar: u32) {}
    /// CQ numbers of the completion events the data path raised since the
    /// last call (a CQE written to an armed CQ), for firmware to post as
    /// EQEs on the EQ each CQ names.
    fn take_completion_events(&mut self) -> Vec<u32> {
        Vec::new()
    }
    /// The state the data path holds QP `qpn` in, `None` when it does not
    /// track it. A ConnectX moves a QP on its own (an error completion on
    /// RC moves it to ERR, on UD/UC the send queue to SQE); firmware
    /// adopts those states before QUERY_QP and the modify commands read
    /// the context ([`SimFirmware`](super::SimFirmware)'s QP handlers).
    fn qp_state(&mut self, _qpn: u32) -> Option<HwQpState> {
        None
    }
}

/// The first QP number firmware hands out: the simulated device's
/// [`QPN_BASE`](crate::world::QPN_BASE), so both number QPs alike.
pub const FIRST_QPN: u32 = crate::world::QPN_BASE;

/// All firmware objects.
#[derive(Clone, Debug, Default)]
pub struct ObjectTable {
    /// Allocated UAR indices.
    pub uars: BTreeMap<u32, ()>,
    /// Allocated PDs.
    pub pds: BTreeMap<u32, ()>,
    /// Memory keys by index.
    pub mkeys: BTreeMap<u32, MkeyObj>,
    /// EQs by number.
    pub eqs: BTreeMap<u8, EqObj>,
    /// CQs by number.
    pub cqs: BTreeMap<u32, CqObj>,
    /// QPs by number.
    pub qps: BTreeMap<u32, QpObj>,
    /// SRQs by number.
    pub srqs: BTreeMap<u32, SrqObj>,
    pub(crate) next_id: u32,
    pub(crate) next_qpn: u32,
}

impl ObjectTable {
    /// A fresh 24-bit object number (shared counter, never 0).
    pub(crate) fn fresh(&mut self) -> u32 {
        self.next_id = (self.next_id + 1) & 0x00ff_ffff;
        if self.next_id == 0 {
            self.next_id = 1;
        }
        self.next_id
    }
    /// A fresh QP number: QPNs have their own 24-bit space, starting at
    /// [`FIRST_QPN`] (0 and 1 are the special QPs in InfiniBand).
    pub(crate) fn fresh_qpn(&mut self) -> u32 {
        if self.next_qpn < FIRST_QPN || self.next_qpn >= 0x00ff_ffff {
            self.next_qpn = FIRST_QPN;
        } else {
            self.next_qpn += 1;
        }
        self.next_qpn
    }
    /// Whether anything but UARs is alive.
    pub fn is_empty(&self) -> bool {
        self.pds.is_empty()
            && self.mkeys.is_empty()
            && self.eqs.is_empty()
            && self.cqs.is_empty()
            && self.qps.is_empty()
            && self.srqs.is_empty()
    }
}
