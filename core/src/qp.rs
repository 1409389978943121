//! QP types and the QP state machine: states (verbs and mlx5 encodings),
//! the attribute mask of a modify, the legal transitions with their
//! required and optional attributes, and what posting each state allows.
//! [ref §6.1](crate::reference) (encodings), §6.2 (transition table), §1.11 and §6.4
//! (posting rules).
//!
//! ```
//! use bareverbs::qp::{check_transition, QpAttrMask, QpState, QpType};
//! let m = QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::ACCESS_FLAGS;
//! assert!(check_transition(QpType::Rc, QpState::Reset, QpState::Init, m).is_ok());
//! // RTR needs AV, PATH_MTU, DEST_QPN, RQ_PSN, MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER.
//! assert!(check_transition(QpType::Rc, QpState::Init, QpState::Rtr, QpAttrMask::STATE).is_err());
//! ```

pub use crate::sizing::{QpType, ServiceType};
use bitflags::bitflags;
use core::fmt;

/// A QP state. [ref §6.1](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[allow(clippy::exhaustive_enums)] // closed by IBTA: the QP state machine has these seven states
pub enum QpState {
    /// RESET: no work is processed, posting is refused.
    #[default]
    Reset,
    /// INIT: receives may be posted (not yet processed).
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// Send queue drained.
    Sqd,
    /// Send queue error (UD/UC: a send failed; receives still work).
    Sqe,
    /// Error: every outstanding and newly posted WR is flushed.
    Err,
}

impl QpState {
    /// Every state, in verbs order.
    pub const ALL: [QpState; 7] = [
        QpState::Reset,
        QpState::Init,
        QpState::Rtr,
        QpState::Rts,
        QpState::Sqd,
        QpState::Sqe,
        QpState::Err,
    ];

    /// The `ibv_qp_state` value (RESET 0 … SQD 4, SQE 5, ERR 6).
    pub const fn ibv(self) -> u8 {
        self as u8
    }
    /// The state of an `ibv_qp_state` value.
    pub const fn from_ibv(v: u8) -> Option<QpState> {
        match v {
            0 => Some(QpState::Reset),
            1 => Some(QpState::Init),
            2 => Some(QpState::Rtr),
            3 => Some(QpState::Rts),
            4 => Some(QpState::Sqd),
            5 => Some(QpState::Sqe),
            6 => Some(QpState::Err),
            _ => None,
        }
    }
    /// The mlx5 `qpc.state` encoding (SQD 5 and SQER 4 are swapped with
    /// respect to verbs). [ref §6.1](crate::reference).
    pub const fn mlx5(self) -> u8 {
        match self {
            QpState::Reset => 0,
            QpState::Init => 1,
            QpState::Rtr => 2,
            QpState::Rts => 3,
            QpState::Sqe => 4,
            QpState::Sqd => 5,
            QpState::Err => 6,
        }
    }
    /// The state of an mlx5 `qpc.state` value (7 SQ_DRAINING and 9
    /// SUSPENDED have no verbs state: `None`).
    pub const fn from_mlx5(v: u8) -> Option<QpState> {
        match v {
            0 => Some(QpState::Reset),
            1 => Some(QpState::Init),
            2 => Some(QpState::Rtr),
            3 => Some(QpState::Rts),
            4 => Some(QpState::Sqe),
            5 => Some(QpState::Sqd),
            6 => Some(QpState::Err),
            _ => None,
        }
    }
    /// The verbs name.
    pub const fn name(self) -> &'static str {
        match self {
            QpState::Reset => "RESET",
            QpState::Init => "INIT",
            QpState::Rtr => "RTR",
            QpState::Rts => "RTS",
            QpState::Sqd => "SQD",
            QpState::Sqe => "SQE",
            QpState::Err => "ERR",
        }
    }
    /// The provider accepts receive posts in this state (from INIT on,
    /// still in ERR where they flush). [ref §1.11, §2.1, §6.4](crate::reference).
    pub const fn rq_post_allowed(self) -> bool {
        !matches!(self, QpState::Reset)
    }
    /// The provider accepts send posts in this state, for a QP that went
    /// through RTS to get here (posting is enabled on entering RTS and not
    /// disabled by SQD/SQE/ERR; RESET disables it). [ref §1.11, §6.4](crate::reference).
    pub const fn sq_post_allowed(self) -> bool {
        matches!(
            self,
            QpState::Rts | QpState::Sqd | QpState::Sqe | QpState::Err
        )
    }
    /// The device executes send WQEs in this state (only RTS; in SQD it
    /// finishes what it started, in ERR it flushes).
    pub const fn sq_executes(self) -> bool {
        matches!(self, QpState::Rts)
    }
    /// The device accepts incoming requests in this state (RTR and later,
    /// except ERR). IBA 10.3.1.
    pub const fn rq_executes(self) -> bool {
        matches!(
            self,
            QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
        )
    }
    /// The device completes posted WQEs with WR_FLUSH_ERR in this state.
    pub const fn flushes(self) -> bool {
        matches!(self, QpState::Err)
    }
}

impl fmt::Display for QpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

bitflags! {
    /// The attribute mask of a modify-QP (`ibv_qp_attr_mask` values).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct QpAttrMask: u32 {
        /// IBV_QP_STATE.
        const STATE = 1 << 0;
        /// IBV_QP_CUR_STATE.
        const CUR_STATE = 1 << 1;
        /// IBV_QP_EN_SQD_ASYNC_NOTIFY.
        const EN_SQD_ASYNC_NOTIFY = 1 << 2;
        /// IBV_QP_ACCESS_FLAGS.
        const ACCESS_FLAGS = 1 << 3;
        /// IBV_QP_PKEY_INDEX.
        const PKEY_INDEX = 1 << 4;
        /// IBV_QP_PORT.
        const PORT = 1 << 5;
        /// IBV_QP_QKEY.
        const QKEY = 1 << 6;
        /// IBV_QP_AV.
        const AV = 1 << 7;
        /// IBV_QP_PATH_MTU.
        const PATH_MTU = 1 << 8;
        /// IBV_QP_TIMEOUT.
        const TIMEOUT = 1 << 9;
        /// IBV_QP_RETRY_CNT.
        const RETRY_CNT = 1 << 10;
        /// IBV_QP_RNR_RETRY.
        const RNR_RETRY = 1 << 11;
        /// IBV_QP_RQ_PSN.
        const RQ_PSN = 1 << 12;
        /// IBV_QP_MAX_QP_RD_ATOMIC.
        const MAX_QP_RD_ATOMIC = 1 << 13;
        /// IBV_QP_ALT_PATH.
        const ALT_PATH = 1 << 14;
        /// IBV_QP_MIN_RNR_TIMER.
        const MIN_RNR_TIMER = 1 << 15;
        /// IBV_QP_SQ_PSN.
        const SQ_PSN = 1 << 16;
        /// IBV_QP_MAX_DEST_RD_ATOMIC.
        const MAX_DEST_RD_ATOMIC = 1 << 17;
        /// IBV_QP_PATH_MIG_STATE.
        const PATH_MIG_STATE = 1 << 18;
        /// IBV_QP_CAP.
        const CAP = 1 << 19;
        /// IBV_QP_DEST_QPN.
        const DEST_QPN = 1 << 20;
        /// IBV_QP_RATE_LIMIT.
        const RATE_LIMIT = 1 << 25;
    }
}

/// Why a modify-QP is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum QpTransitionError {
    /// `from → to` is not an edge of the state machine for this QP type.
    Illegal {
        /// Current state.
        from: QpState,
        /// Requested state.
        to: QpState,
    },
    /// The mask lacks attributes the transition requires.
    Missing {
        /// The required attributes that are absent.
        missing: QpAttrMask,
    },
    /// The mask holds attributes the transition does not accept.
    NotAllowed {
        /// The attributes outside required ∪ optional ∪ STATE.
        extra: QpAttrMask,
    },
    /// STATE is not in the mask (every modify here is a transition).
    NoState,
}

impl QpTransitionError {
    /// The errno `ibv_modify_qp` returns (EINVAL for all of them).
    pub const fn errno(&self) -> i32 {
        crate::errno::EINVAL
    }
}

impl fmt::Display for QpTransitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QpTransitionError::Illegal { from, to } => {
                write!(f, "illegal transition {from} -> {to}")
            }
            QpTransitionError::Missing { missing } => {
                write!(f, "missing required attributes {:#x}", missing.bits())
            }
            QpTransitionError::NotAllowed { extra } => {
                write!(f, "attributes {:#x} not allowed here", extra.bits())
            }
            QpTransitionError::NoState => f.write_str("mask lacks IBV_QP_STATE"),
        }
    }
}

impl core::error::Error for QpTransitionError {}

/// Required and optional attributes of one transition for one QP type, or
/// `None` when the edge does not exist. Any state → RESET and → ERR need
/// and accept nothing but STATE. [ref §6.2](crate::reference).
///
/// Table-driven: one arm per edge of the state diagram, one row per QP
/// type shape, so it is longer than a function would otherwise be.
pub const fn transition_attrs(
    qp_type: QpType,
    from: QpState,
    to: QpState,
) -> Option<(QpAttrMask, QpAttrMask)> {
    use QpAttrMask as M;
    use QpState::*;
    const NONE: QpAttrMask = QpAttrMask::empty();
    const fn m(bits: u32) -> QpAttrMask {
        QpAttrMask::from_bits_truncate(bits)
    }
    if matches!(to, Reset | Err) {
        return Some((NONE, NONE));
    }
    let (pk, port, acc, qkey) = (
        M::PKEY_INDEX.bits(),
        M::PORT.bits(),
        M::ACCESS_FLAGS.bits(),
        M::QKEY.bits(),
    );
    let cur = M::CUR_STATE.bits();
    let alt = M::ALT_PATH.bits();
    let mig = M::PATH_MIG_STATE.bits();
    let rnr_t = M::MIN_RNR_TIMER.bits();
    // Shapes: "datagram" = UD-like (UD, raw packet except where noted).
    let ud = matches!(qp_type, QpType::Ud);
    let raw = matches!(qp_type, QpType::RawPacket);
    let uc = matches!(qp_type, QpType::Uc);
    let xrc_ini = matches!(qp_type, QpType::XrcSend);
    let xrc_tgt = matches!(qp_type, QpType::XrcRecv);
    let r = match (from, to) {
        (Reset, Init) => {
            if raw {
                (m(port), NONE)
            } else if ud {
                (m(pk | port | qkey), NONE)
            } else {
                (m(pk | port | acc), NONE)
            }
        }
        (Init, Init) => {
            if raw {
                (NONE, m(port))
            } else if ud {
                (NONE, m(pk | port | qkey))
            } else {
                (NONE, m(pk | port | acc))
            }
        }
        (Init, Rtr) => {
            if raw {
                (NONE, NONE)
            } else if ud {
                (NONE, m(pk | qkey))
            } else if uc || xrc_ini {
                (
                    m(M::AV.bits() | M::PATH_MTU.bits() | M::DEST_QPN.bits() | M::RQ_PSN.bits()),
                    m(alt | acc | pk),
                )
            } else {
                (
                    m(M::AV.bits()
                        | M::PATH_MTU.bits()
                        | M::DEST_QPN.bits()
                        | M::RQ_PSN.bits()
                        | M::MAX_DEST_RD_ATOMIC.bits()
                        | rnr_t),
                    m(alt | acc | pk),
                )
            }
        }
        (Rtr, Rts) => {
            if raw {
                (NONE, m(M::RATE_LIMIT.bits()))
            } else if ud {
                (m(M::SQ_PSN.bits()), m(cur | qkey))
            } else if uc {
                (m(M::SQ_PSN.bits()), m(cur | alt | acc | mig))
            } else if xrc_tgt {
                (
                    m(M::TIMEOUT.bits() | M::SQ_PSN.bits()),
                    m(cur | alt | acc | rnr_t | mig),
                )
            } else {
                (
                    m(M::TIMEOUT.bits()
                        | M::RETRY_CNT.bits()
                        | M::RNR_RETRY.bits()
                        | M::SQ_PSN.bits()
                        | M::MAX_QP_RD_ATOMIC.bits()),
                    m(cur | alt | acc | rnr_t | mig),
                )
            }
        }
        (Rts, Rts) => {
            if raw {
                (NONE, m(M::RATE_LIMIT.bits()))
            } else if ud {
                (NONE, m(cur | qkey))
            } else if uc {
                (NONE, m(cur | acc | alt | mig))
            } else {
                (NONE, m(cur | acc | alt | mig | rnr_t))
            }
        }
        (Rts, Sqd) => (NONE, m(M::EN_SQD_ASYNC_NOTIFY.bits())),
        (Sqd, Rts) => {
            if ud || raw {
                (NONE, m(cur | qkey))
            } else if uc {
                (NONE, m(cur | alt | acc | mig))
            } else {
                (NONE, m(cur | alt | acc | rnr_t | mig))
            }
        }
        (Sqd, Sqd) => {
            if ud || raw {
                (NONE, m(pk | qkey))
            } else if uc {
                (NONE, m(M::AV.bits() | alt | acc | pk | mig))
            } else {
                (
                    NONE,
                    m(port
                        | M::AV.bits()
                        | M::TIMEOUT.bits()
                        | M::RETRY_CNT.bits()
                        | M::RNR_RETRY.bits()
                        | M::MAX_QP_RD_ATOMIC.bits()
                        | M::MAX_DEST_RD_ATOMIC.bits()
                        | alt
                        | acc
                        | pk
                        | rnr_t
                        | mig),
                )
            }
        }
        (Sqe, Rts) => {
            if ud || raw {
                (NONE, m(cur | qkey))
            } else if uc {
                (NONE, m(cur | acc))
            } else {
                (NONE, NONE)
            }
        }
        _ => return None,
    };
    Some(r)
}

/// Checks a modify-QP from `from` to `to` with attribute mask `mask`
/// (which must contain [`QpAttrMask::STATE`]): the edge must exist for
/// `qp_type`, every required attribute must be present, and nothing outside
/// required ∪ optional ∪ STATE may be. [ref §6.2](crate::reference).
pub const fn check_transition(
    qp_type: QpType,
    from: QpState,
    to: QpState,
    mask: QpAttrMask,
) -> Result<(), QpTransitionError> {
    if !mask.contains(QpAttrMask::STATE) {
        return Err(QpTransitionError::NoState);
    }
    let Some((req, opt)) = transition_attrs(qp_type, from, to) else {
        return Err(QpTransitionError::Illegal { from, to });
    };
    let missing = req.difference(mask);
    if !missing.is_empty() {
        return Err(QpTransitionError::Missing { missing });
    }
    let extra = mask.difference(req.union(opt).union(QpAttrMask::STATE));
    if !extra.is_empty() {
        return Err(QpTransitionError::NotAllowed { extra });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use QpAttrMask as M;
    use QpState::{Init, Reset, Rtr, Rts, Sqd, Sqe};
    const ERR: QpState = QpState::Err;

    fn rc_init() -> QpAttrMask {
        M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS
    }
    fn rc_rtr() -> QpAttrMask {
        M::STATE
            | M::AV
            | M::PATH_MTU
            | M::DEST_QPN
            | M::RQ_PSN
            | M::MAX_DEST_RD_ATOMIC
            | M::MIN_RNR_TIMER
    }
    fn rc_rts() -> QpAttrMask {
        M::STATE | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::SQ_PSN | M::MAX_QP_RD_ATOMIC
    }

    #[test]
    fn encodings_follow_facts_6_1() {
        let ibv = [0, 1, 2, 3, 4, 5, 6];
        let mlx5 = [0, 1, 2, 3, 5, 4, 6];
        for (i, s) in QpState::ALL.iter().enumerate() {
            assert_eq!(s.ibv(), ibv[i]);
            assert_eq!(s.mlx5(), mlx5[i]);
            assert_eq!(QpState::from_ibv(ibv[i]), Some(*s));
            assert_eq!(QpState::from_mlx5(mlx5[i]), Some(*s));
        }
        assert_eq!(QpState::from_mlx5(7), None);
        assert_eq!(QpState::from_mlx5(9), None);
    }

    #[test]
    fn mask_values_are_ibv() {
        assert_eq!(M::STATE.bits(), 1);
        assert_eq!(M::ACCESS_FLAGS.bits(), 8);
        assert_eq!(M::AV.bits(), 128);
        assert_eq!(M::SQ_PSN.bits(), 65536);
        assert_eq!(M::DEST_QPN.bits(), 1 << 20);
    }

    #[test]
    fn rc_bring_up() {
        assert_eq!(check_transition(QpType::Rc, Reset, Init, rc_init()), Ok(()));
        assert_eq!(check_transition(QpType::Rc, Init, Rtr, rc_rtr()), Ok(()));
        assert_eq!(check_transition(QpType::Rc, Rtr, Rts, rc_rts()), Ok(()));
        assert_eq!(
            check_transition(QpType::Rc, Init, Rtr, M::STATE | M::AV),
            Err(QpTransitionError::Missing {
                missing: M::PATH_MTU
                    | M::DEST_QPN
                    | M::RQ_PSN
                    | M::MAX_DEST_RD_ATOMIC
                    | M::MIN_RNR_TIMER
            })
        );
        // QKEY is a UD attribute.
        assert_eq!(
            check_transition(QpType::Rc, Reset, Init, rc_init() | M::QKEY),
            Err(QpTransitionError::NotAllowed { extra: M::QKEY })
        );
        // CUR_STATE is not accepted from INIT.
        assert!(check_transition(QpType::Rc, Init, Rtr, rc_rtr() | M::CUR_STATE).is_err());
        assert!(check_transition(QpType::Rc, Rtr, Rts, rc_rts() | M::CUR_STATE).is_ok());
    }

    #[test]
    fn ud_and_uc() {
        let ud_init = M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY;
        assert!(check_transition(QpType::Ud, Reset, Init, ud_init).is_ok());
        assert!(check_transition(QpType::Ud, Init, Rtr, M::STATE).is_ok());
        assert!(check_transition(QpType::Ud, Rtr, Rts, M::STATE | M::SQ_PSN).is_ok());
        assert!(check_transition(QpType::Ud, Sqe, Rts, M::STATE | M::QKEY).is_ok());
        let uc_rtr = M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN;
        assert!(check_transition(QpType::Uc, Init, Rtr, uc_rtr).is_ok());
        assert!(check_transition(QpType::Uc, Rtr, Rts, M::STATE | M::SQ_PSN).is_ok());
        assert!(
            check_transition(QpType::Uc, Rtr, Rts, M::STATE | M::SQ_PSN | M::RETRY_CNT).is_err()
        );
    }

    #[test]
    fn illegal_edges_and_always_legal_ones() {
        for t in [QpType::Rc, QpType::Uc, QpType::Ud] {
            for s in QpState::ALL {
                assert_eq!(check_transition(t, s, Reset, M::STATE), Ok(()));
                assert_eq!(check_transition(t, s, ERR, M::STATE), Ok(()));
            }
            assert_eq!(
                check_transition(t, Reset, Rts, M::STATE | M::SQ_PSN),
                Err(QpTransitionError::Illegal {
                    from: Reset,
                    to: Rts
                })
            );
            assert!(check_transition(t, Init, Rts, M::STATE).is_err());
            assert!(check_transition(t, ERR, Init, M::STATE).is_err());
            assert!(check_transition(t, Rtr, Init, M::STATE).is_err());
        }
        assert_eq!(
            check_transition(QpType::Rc, Reset, Init, M::PORT),
            Err(QpTransitionError::NoState)
        );
        // RC SQE -> RTS accepts no attribute but STATE.
        assert!(check_transition(QpType::Rc, Sqe, Rts, M::STATE).is_ok());
        assert!(check_transition(QpType::Rc, Sqe, Rts, M::STATE | M::CUR_STATE).is_err());
    }

    #[test]
    fn posting_rules() {
        assert!(!Reset.rq_post_allowed());
        assert!(Init.rq_post_allowed() && ERR.rq_post_allowed());
        assert!(!Init.sq_post_allowed() && !Rtr.sq_post_allowed());
        assert!(Rts.sq_post_allowed() && ERR.sq_post_allowed());
        assert!(Rts.sq_executes() && !Sqd.sq_executes());
        assert!(!Init.rq_executes() && Rtr.rq_executes() && !ERR.rq_executes());
        assert!(ERR.flushes());
    }
}
