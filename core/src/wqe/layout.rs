//! Which transport segments follow the control segment of a send WQE: a
//! function of the QP type ([`crate::qp::QpType`], defined once in
//! `sizing/qp_type.rs` and re-exported as `qp::QpType`) and, for UD, of the underlay flag (an IPoIB-underlay UD QP, the
//! vendor's `MLX5_QP_FLAGS_USE_UNDERLAY`, carries an Ethernet pad and an
//! Ethernet segment after the datagram segment). [ref §1.7](crate::reference).

use super::opcode::Opcode;
use super::seg::{AddressVector, Be32, CtrlSeg, Segment};
use super::EXTENDED_UD_AV;
use crate::qp::QpType;
use core::mem::offset_of;

/// The transport layout of a send WQE: the QP type, and whether a UD QP
/// runs over an Ethernet underlay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SendLayout {
    /// The QP type.
    pub qp_type: QpType,
    /// UD over an underlay: datagram segment, Ethernet pad, Ethernet
    /// segment. Only meaningful with [`QpType::Ud`].
    pub underlay: bool,
}

impl From<QpType> for SendLayout {
    fn from(qp_type: QpType) -> Self {
        SendLayout::of(qp_type)
    }
}

impl SendLayout {
    /// RC: no transport segment.
    pub const RC: SendLayout = SendLayout::of(QpType::Rc);
    /// UC: no transport segment.
    pub const UC: SendLayout = SendLayout::of(QpType::Uc);
    /// UD: a 48-byte datagram segment follows ctrl.
    pub const UD: SendLayout = SendLayout::of(QpType::Ud);
    /// Raw packet (Ethernet): an Ethernet segment follows ctrl.
    pub const RAW_PACKET: SendLayout = SendLayout::of(QpType::RawPacket);
    /// XRC send: an XRC segment follows ctrl (except in UMR WQEs).
    pub const XRC: SendLayout = SendLayout::of(QpType::XrcSend);
    /// UD over an underlay: datagram segment, Ethernet pad, Ethernet segment.
    pub const UD_UNDERLAY: SendLayout = SendLayout {
        qp_type: QpType::Ud,
        underlay: true,
    };

    /// Every distinct layout, in a fixed order (fuzz inputs index it).
    pub const ALL: [SendLayout; 6] = [
        Self::RC,
        Self::UC,
        Self::UD,
        Self::RAW_PACKET,
        Self::XRC,
        Self::UD_UNDERLAY,
    ];

    /// The layout of a QP of `qp_type` without an underlay.
    pub const fn of(qp_type: QpType) -> Self {
        SendLayout {
            qp_type,
            underlay: false,
        }
    }

    /// An XRC segment follows ctrl (XRC send and receive QPs).
    pub const fn xrc(self) -> bool {
        matches!(self.qp_type, QpType::XrcSend | QpType::XrcRecv)
    }

    /// A datagram (address vector) segment follows ctrl.
    pub const fn datagram(self) -> bool {
        matches!(self.qp_type, QpType::Ud)
    }

    /// The underlay's Ethernet pad follows the datagram segment.
    pub const fn eth_pad(self) -> bool {
        self.datagram() && self.underlay
    }

    /// An Ethernet segment (with its inline headers) follows.
    pub const fn eth(self) -> bool {
        matches!(self.qp_type, QpType::RawPacket) || self.eth_pad()
    }

    /// A connected transport: the opcode decides the remote-address,
    /// atomic and UMR segments.
    pub const fn connected(self) -> bool {
        matches!(
            self.qp_type,
            QpType::Rc | QpType::Uc | QpType::XrcSend | QpType::XrcRecv
        )
    }

    /// Short name: `"RC"`, `"UC"`, `"UD"`, `"RAW"`, `"XRC"`, `"UD_UNDERLAY"`
    /// (`"XRC_RECV"` for an XRC receive QP).
    pub const fn name(self) -> &'static str {
        match self.qp_type {
            QpType::Rc => "RC",
            QpType::Uc => "UC",
            QpType::Ud if self.underlay => "UD_UNDERLAY",
            QpType::Ud => "UD",
            QpType::RawPacket => "RAW",
            QpType::XrcSend => "XRC",
            QpType::XrcRecv => "XRC_RECV",
        }
    }

    /// Parses a name as [`SendLayout::name`] gives it, or any QP type name
    /// [`QpType::parse`] takes (case-insensitive; `UNDERLAY` too).
    pub fn from_name(s: &str) -> Option<SendLayout> {
        let eq = |a: &str| s.trim().eq_ignore_ascii_case(a);
        if eq("UD_UNDERLAY") || eq("UNDERLAY") {
            Some(Self::UD_UNDERLAY)
        } else {
            QpType::parse(s).map(Self::of)
        }
    }

    /// Best-effort guess of the layout from WQE bytes when the caller does
    /// not know it: a SEND/SEND_IMM whose DS can hold a datagram segment and
    /// whose `dqp_dct` word (bytes 24–27) has the extended-AV bit set
    /// ([ref §1.5](crate::reference)) is taken as UD; everything else as RC.
    pub fn guess(wqe: &[u8]) -> SendLayout {
        // The datagram segment's address vector follows the control
        // segment; `dqp_dct` is its third word.
        const DQP_DCT: usize = CtrlSeg::SIZE + offset_of!(AddressVector, dqp_dct);
        let dqp_dct = wqe
            .get(DQP_DCT..DQP_DCT + 4)
            .and_then(|w| w.try_into().ok());
        if let (Ok(ctrl), Some(dqp_dct)) = (CtrlSeg::parse(wqe), dqp_dct) {
            let op = ctrl.opcode();
            if (op == Opcode::Send as u8 || op == Opcode::SendImm as u8)
                && ctrl.ds() >= 4
                && Be32::from_raw(dqp_dct).get() & EXTENDED_UD_AV != 0
            {
                return Self::UD;
            }
        }
        Self::RC
    }
}
