//! QP transport types ([`QpType`]) and the `qpc.st` service type the firmware
//! command path creates ([`ServiceType`]).

use core::fmt;

/// QP transport type; it selects the per-WQE transport segment ([ref §3.2](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QpType {
    /// Reliable connected: no transport segment.
    Rc,
    /// Unreliable connected: no transport segment.
    Uc,
    /// Unreliable datagram: +48-byte datagram (address vector) segment.
    Ud,
    /// Raw Ethernet: +32-byte Ethernet segment; SQ in a separate buffer
    /// ([ref §3.6](crate::reference)).
    RawPacket,
    /// XRC initiator: +16-byte XRC segment; no RQ (receives go to an SRQ).
    XrcSend,
    /// XRC target: +16-byte XRC segment; no RQ (receives go to an SRQ).
    XrcRecv,
}

impl QpType {
    /// Numeric id for const generics ([`QpGeometry`](super::QpGeometry)): RC.
    pub const RC_ID: u8 = 0;
    /// Numeric id for const generics: UC.
    pub const UC_ID: u8 = 1;
    /// Numeric id for const generics: UD.
    pub const UD_ID: u8 = 2;
    /// Numeric id for const generics: RAW_PACKET.
    pub const RAW_PACKET_ID: u8 = 3;
    /// Numeric id for const generics: XRC_SEND.
    pub const XRC_SEND_ID: u8 = 4;
    /// Numeric id for const generics: XRC_RECV.
    pub const XRC_RECV_ID: u8 = 5;

    /// The type for a numeric id (see the `*_ID` constants); `None` if unknown.
    pub const fn from_id(id: u8) -> Option<QpType> {
        match id {
            Self::RC_ID => Some(QpType::Rc),
            Self::UC_ID => Some(QpType::Uc),
            Self::UD_ID => Some(QpType::Ud),
            Self::RAW_PACKET_ID => Some(QpType::RawPacket),
            Self::XRC_SEND_ID => Some(QpType::XrcSend),
            Self::XRC_RECV_ID => Some(QpType::XrcRecv),
            _ => None,
        }
    }

    /// Bytes of transport segment(s) after the operation part ([ref §3.2](crate::reference) table).
    pub const fn transport_overhead(self) -> u32 {
        match self {
            QpType::Rc | QpType::Uc => 0,
            QpType::Ud => 48,
            QpType::RawPacket => 32,
            QpType::XrcSend | QpType::XrcRecv => 16,
        }
    }

    /// The `qpc.st` service type, for the types the firmware command path
    /// creates: RC, UC, UD ([ref §7.11](crate::reference)). `None` for the
    /// others (XRC needs an XRC domain, raw packet QPs are SQ/RQ objects),
    /// which `Device::create_qp` refuses.
    pub const fn service_type(self) -> Option<ServiceType> {
        match self {
            QpType::Rc => Some(ServiceType::Rc),
            QpType::Uc => Some(ServiceType::Uc),
            QpType::Ud => Some(ServiceType::Ud),
            _ => None,
        }
    }

    /// The type of a `qpc.st` code the command path creates (the inverse
    /// of [`QpType::service_type`], through [`ServiceType::from_code`]).
    pub const fn from_service_type(st: u8) -> Option<QpType> {
        match ServiceType::from_code(st) {
            Some(s) => Some(s.qp_type()),
            None => None,
        }
    }

    /// Whether this type never has its own RQ (XRC uses SRQs).
    pub const fn has_rq(self) -> bool {
        !matches!(self, QpType::XrcSend | QpType::XrcRecv)
    }

    /// Name as used in the vector files (`RC`, `UC`, `UD`, `RAW_PACKET`, `XRC_SEND`, `XRC_RECV`).
    pub const fn name(self) -> &'static str {
        match self {
            QpType::Rc => "RC",
            QpType::Uc => "UC",
            QpType::Ud => "UD",
            QpType::RawPacket => "RAW_PACKET",
            QpType::XrcSend => "XRC_SEND",
            QpType::XrcRecv => "XRC_RECV",
        }
    }

    /// Parse a QP type name, case-insensitive: `rc`, `uc`, `ud`, `raw`/`raw_packet`,
    /// `xrc`/`xrc_send`, `xrc_recv`.
    pub fn parse(s: &str) -> Option<QpType> {
        let s = s.trim();
        let eq = |n: &str| s.eq_ignore_ascii_case(n);
        if eq("rc") {
            Some(QpType::Rc)
        } else if eq("uc") {
            Some(QpType::Uc)
        } else if eq("ud") {
            Some(QpType::Ud)
        } else if eq("raw") || eq("raw_packet") || eq("raw-packet") {
            Some(QpType::RawPacket)
        } else if eq("xrc") || eq("xrc_send") || eq("xrc-send") {
            Some(QpType::XrcSend)
        } else if eq("xrc_recv") || eq("xrc-recv") {
            Some(QpType::XrcRecv)
        } else {
            None
        }
    }
}

/// The `qpc.st` service type of a QP the firmware command path creates
/// ([ref §7.11](crate::reference)): the subset of [`QpType`] with a code
/// there, so a command cannot carry a type it cannot create.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum ServiceType {
    /// Reliable connected (`st` 0).
    Rc = 0,
    /// Unreliable connected (`st` 1).
    Uc = 1,
    /// Unreliable datagram (`st` 2).
    Ud = 2,
}

impl ServiceType {
    /// The `qpc.st` code.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The service type of `qpc.st` code `c`; `None` for a code the
    /// command path does not create.
    pub const fn from_code(c: u8) -> Option<Self> {
        match c {
            0 => Some(ServiceType::Rc),
            1 => Some(ServiceType::Uc),
            2 => Some(ServiceType::Ud),
            _ => None,
        }
    }

    /// The QP type of this service type.
    pub const fn qp_type(self) -> QpType {
        match self {
            ServiceType::Rc => QpType::Rc,
            ServiceType::Uc => QpType::Uc,
            ServiceType::Ud => QpType::Ud,
        }
    }
}

impl fmt::Display for QpType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
