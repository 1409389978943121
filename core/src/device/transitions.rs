//! QP state transitions by command (RST2INIT … 2RST), checked against the
//! one QP state table ([ref §6.1–§6.3](crate::reference)).

use super::{
    check_fields, check_roce, has_peer_path, Device, DeviceError, HwQpState, Init2Rtr, LinkLayer,
    QpHandle, Rst2Init, Rtr2Rts, UarMap,
};
use crate::cmd::ops::RoceVersion;
use crate::cmd::ops::{self, Req};
use crate::cmd::{Bar0, Clock};
use crate::platform::DmaAllocator;
use crate::qp::QpType;

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

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// Sends a modify command after checking the edge against the one QP
    /// state table ([`crate::qp::transition_attrs`], [ref §6.2](crate::reference)) for the
    /// QP's type and the state the driver holds it in (`checked`), then
    /// records the new state.
    pub(super) fn transition(
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
    ///
    /// The path is checked before the command: every value must fit its
    /// field, and on an Ethernet port a connected QP's path (not
    /// force-loopback) must be a RoCE path the driver can vouch for — from
    /// a source GID entry this driver programmed ([`Device::set_gid`]),
    /// toward a non-zero GID at a unicast MAC, with `grh` and `rlid` 0.
    /// Once bring-up has turned on `sw_r_roce_src_udp_port`, such a path
    /// from a RoCE v2 entry with `udp_sport` 0 gets the kernel's port for
    /// the QP pair ([`ops::roce_udp_sport`]) instead of going out as 0.
    /// [`AddressHandle::path`](crate::verbs::AddressHandle::path) builds
    /// paths that pass.
    pub fn init2rtr(&mut self, qp: &mut QpHandle, a: &Init2Rtr) -> Result<(), DeviceError> {
        let mut a = *a;
        check_fields(&a.path)?;
        let link = self.link_layer();
        if matches!(link, LinkLayer::Other(_)) && !a.path.fl {
            return Err(DeviceError::BadPath {
                why: "the port's link layer is neither InfiniBand nor Ethernet",
            });
        }
        let roce = link == LinkLayer::Ethernet && has_peer_path(qp.spec.qp_type) && !a.path.fl;
        if roce {
            let source = self.gids.get(a.path.sgid_index as u16).map(|e| e.version);
            let v2 = check_roce(&a.path, source)? == RoceVersion::V2;
            let sw_sport = self.roce.is_some_and(|r| r.sw_r_roce_src_udp_port);
            if v2 && sw_sport && a.path.udp_sport == 0 {
                a.path.udp_sport = ops::roce_udp_sport(qp.qpn, a.remote_qpn);
            }
        }
        let r = ops::init2rtr(&mut self.inb, qp.qpn, &a);
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
}
