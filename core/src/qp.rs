//! Queue pair types and the QP state machine (FACTS §6).

/// QP transport type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QpType {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
    /// Raw Ethernet packet.
    RawPacket,
    /// XRC initiator (send side).
    XrcSend,
    /// XRC target (receive side).
    XrcRecv,
}
