//! The device-level error type [`DeviceError`], its `Display` texts and
//! the conversion from command errors.

use super::{HwQpState, Step};
use crate::cmd::initseg::InitSegError;
use crate::cmd::pages::PageError;
use crate::cmd::queue::CmdqSetupError;
use crate::cmd::CmdError;
use crate::cq::CqError;
use crate::qp::QpType;
use core::fmt;

/// A device-level failure. Each variant names what went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
    /// The object must name an event queue and the device has none (it
    /// was brought up with `DeviceConfig::async_eq` off): a CQ's `c_eqn`
    /// must be an EQ CREATE_EQ returned ([ref §7.10](crate::reference)).
    NoEventQueue {
        /// The object refused.
        what: &'static str,
    },
    /// The request needs an Ethernet (RoCE) port and the device's port is
    /// not one.
    NotEthernet {
        /// What was refused.
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
    /// QUERY_QP returned a QP context the driver does not accept: a state
    /// code outside the QP state table, or a service type other than the
    /// QP's. The state the driver holds is left as it was.
    BadQpQuery {
        /// QP number.
        qpn: u32,
        /// The field (`"state"`, `"st"`, `"mtu"`).
        field: &'static str,
        /// The value returned.
        value: u32,
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
    /// field ([`ops::OBJ_NUMBER_MAX`](crate::cmd::ops::OBJ_NUMBER_MAX)); handled as
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
    /// An address path names a source GID index this driver never
    /// programmed (RoCE sends from that entry's GID and MAC).
    GidNotProgrammed {
        /// The source GID index.
        index: u16,
    },
    /// An address path cannot reach a peer on this port's link layer.
    BadPath {
        /// What is wrong with it.
        why: &'static str,
    },
    /// A MAC address that no RoCE entry can carry (all-zero or multicast):
    /// given by the caller, or reported by the device as the function's
    /// permanent address.
    BadMac {
        /// The address.
        mac: [u8; 6],
        /// Where it came from.
        what: &'static str,
    },
}

/// A command error becomes [`DeviceError::Cmd`]; the command interface's
/// own failures keep their device-level variants ([`DeviceError::InitSeg`],
/// [`DeviceError::Cmdq`], [`DeviceError::Pages`]), so each failure has
/// one form.
impl From<CmdError> for DeviceError {
    fn from(e: CmdError) -> Self {
        match e {
            CmdError::InitSeg(e) => DeviceError::InitSeg(e),
            CmdError::CmdqSetup(e) => DeviceError::Cmdq(e),
            CmdError::Pages(e) => DeviceError::Pages(e),
            e => DeviceError::Cmd(e),
        }
    }
}

impl From<InitSegError> for DeviceError {
    fn from(e: InitSegError) -> Self {
        DeviceError::InitSeg(e)
    }
}

impl From<CmdqSetupError> for DeviceError {
    fn from(e: CmdqSetupError) -> Self {
        DeviceError::Cmdq(e)
    }
}

impl From<PageError> for DeviceError {
    fn from(e: PageError) -> Self {
        DeviceError::Pages(e)
    }
}

impl From<CqError> for DeviceError {
    fn from(e: CqError) -> Self {
        DeviceError::Cq(e)
    }
}

/// [`source`](core::error::Error::source) follows the
/// [module rule](crate::error#display-and-source-each-message-once). The
/// context variants — `InitSeg` ("initialization segment"), `Cmdq`
/// ("command queue setup"), `BringUp` ("bring-up step …"), `Pages`
/// ("firmware pages"), `Cq` ("CQ") — print only their context and return
/// the wrapped [`InitSegError`], [`CmdqSetupError`], [`CmdError`],
/// [`PageError`] or [`CqError`]. The transparent ones — `Cmd` and
/// `CqTooSmall` — print the wrapped [`CmdError`] or
/// [`SizingError`](crate::sizing::SizingError) as their own message and
/// return its source.
impl core::error::Error for DeviceError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            DeviceError::InitSeg(e) => Some(e),
            DeviceError::CqTooSmall(e) => core::error::Error::source(e),
            DeviceError::Cmdq(e) => Some(e),
            DeviceError::BringUp { err, .. } => Some(err),
            DeviceError::Cmd(e) => core::error::Error::source(e),
            DeviceError::Pages(e) => Some(e),
            DeviceError::Cq(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceError::InitSeg(_) => f.write_str("initialization segment"),
            DeviceError::CqTooSmall(e) => fmt::Display::fmt(e, f),
            DeviceError::Cmdq(_) => f.write_str("command queue setup"),
            DeviceError::BringUp { step, .. } => write!(f, "bring-up step {step:?}"),
            DeviceError::Cmd(e) => fmt::Display::fmt(e, f),
            DeviceError::UnsupportedIssi { supported } => {
                write!(
                    f,
                    "firmware supports no usable ISSI (supported_issi_dw0 = 0x{supported:x})"
                )
            }
            DeviceError::Pages(_) => f.write_str("firmware pages"),
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
            DeviceError::NoEventQueue { what } => write!(
                f,
                "a {what} must name an event queue and the device has none (async_eq is off)"
            ),
            DeviceError::NotEthernet { what } => {
                write!(f, "a {what} needs an Ethernet port")
            }
            DeviceError::NoUar { index } => write!(f, "UAR {index} is outside BAR0"),
            DeviceError::WrongQpState {
                qpn,
                state,
                transition,
            } => write!(f, "QP 0x{qpn:x} is in {state:?}, cannot {transition}"),
            DeviceError::BadQpQuery { qpn, field, value } => write!(
                f,
                "QUERY_QP of QP 0x{qpn:x} returned {field} {value}, which is not valid for it"
            ),
            DeviceError::UnsupportedQpType(t) => {
                write!(
                    f,
                    "{} QPs cannot be created through the command path (RC, UC and UD can)",
                    t.name()
                )
            }
            DeviceError::Cq(_) => f.write_str("CQ"),
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
            DeviceError::GidNotProgrammed { index } => write!(
                f,
                "source GID index {index} holds no address: program it first \
                 (Device::set_gid or add_ip_gids)"
            ),
            DeviceError::BadPath { why } => write!(f, "address path: {why}"),
            DeviceError::BadMac { mac, what } => {
                let [a, b, c, d, e, g] = mac;
                write!(
                    f,
                    "{what} {a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x} is not a unicast MAC"
                )
            }
        }
    }
}
