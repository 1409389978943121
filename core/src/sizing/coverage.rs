//! The CQ-covers-outstanding rule ([ref §3.7, §4.1](crate::reference)): how a
//! QP's completions spread over CQs ([`CqAttach`]) and whether each CQ has
//! room for every WR that may be outstanding on it.

use super::error::{Detail, Limit, SizingError, Stage};

const fn coverage_err(cqe: u32, s: u32, r: u32) -> SizingError {
    SizingError::new(
        Stage::Cq,
        Limit::CqCoverage,
        s as u64 + r as u64,
        cqe as u64,
    )
    .with_detail(Detail::Outstanding { send: s, recv: r })
}

/// How a QP's completions are spread over CQs, with each CQ's **reported**
/// `cqe` ([`CqLayout::reported_cqe`](super::CqLayout::reported_cqe) = `ncqe − 1`, the usable entries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::exhaustive_enums)] // closed: a QP's send and receive CQs are one CQ or two
pub enum CqAttach {
    /// Send and receive completions share one CQ.
    Shared {
        /// Reported `cqe` of the shared CQ.
        cqe: u32,
    },
    /// Separate send and receive CQs.
    Separate {
        /// Reported `cqe` of the send CQ.
        send_cqe: u32,
        /// Reported `cqe` of the receive CQ.
        recv_cqe: u32,
    },
}

/// The CQ-covers-outstanding rule: a CQ must have room for a completion of
/// every WR that can be outstanding on the queues feeding it, or it can
/// overrun (a CQ error, lost completions).
///
/// Compared numbers: the CQ's **reported** `cqe` (`ncqe − 1`, [ref §3.7](crate::reference)) against
/// the **sum of `max_post`** of every SQ and RQ that completes into it
/// (`send_outstanding` = Σ SQ `max_post`, `recv_outstanding` = Σ RQ `max_post`
/// of all QPs sharing the CQ; [ref §3.4](crate::reference) step 7, §3.5 step 5). For
/// [`CqAttach::Separate`] each CQ is checked against its own side.
///
/// A 3000-entry CQ (reported 4095) under 2048 send + 2048 receive WRs fails:
/// "CQ with 4095 usable entries cannot hold 2048 send + 2048 receive outstanding WRs".
pub const fn check_cq_covers(
    cqs: CqAttach,
    send_outstanding: u32,
    recv_outstanding: u32,
) -> Result<(), SizingError> {
    match cqs {
        CqAttach::Shared { cqe } => {
            if (send_outstanding as u64 + recv_outstanding as u64) > cqe as u64 {
                return Err(coverage_err(cqe, send_outstanding, recv_outstanding));
            }
        }
        CqAttach::Separate { send_cqe, recv_cqe } => {
            if send_outstanding > send_cqe {
                return Err(coverage_err(send_cqe, send_outstanding, 0));
            }
            if recv_outstanding > recv_cqe {
                return Err(coverage_err(recv_cqe, 0, recv_outstanding));
            }
        }
    }
    Ok(())
}

/// The smallest CQ request (`cqe` argument) whose reported `cqe` covers `outstanding`
/// WRs: any request ≥ `outstanding` works, since `rup2(n + 1) − 1 ≥ n`.
pub const fn cqe_for_outstanding(outstanding: u32) -> u32 {
    if outstanding == 0 {
        1
    } else {
        outstanding
    }
}
