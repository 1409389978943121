//! The HCA life cycle: ENABLE_HCA, DISABLE_HCA, INIT_HCA and
//! TEARDOWN_HCA ([ref §7.6](crate::reference)).

use super::{simple, Req};
use crate::cmd::layout::{teardown_hca_in, teardown_hca_out};
use crate::cmd::op;

/// ENABLE_HCA (0x104), function_id 0 at byte 0x0a. [ref §7.6](crate::reference) step 4.
pub fn enable_hca(b: &mut [u8]) -> Req {
    simple(b, op::ENABLE_HCA, 0)
}

/// DISABLE_HCA (0x105). [ref §7.6](crate::reference) teardown.
pub fn disable_hca(b: &mut [u8]) -> Req {
    simple(b, op::DISABLE_HCA, 0)
}

/// INIT_HCA (0x102), op_mod 0. [ref §7.6](crate::reference) step 10.
pub fn init_hca(b: &mut [u8]) -> Req {
    simple(b, op::INIT_HCA, 0)
}

/// TEARDOWN_HCA profile ([`teardown_hca_in::PROFILE`], byte 0x0a).
/// [ref §7.6](crate::reference) teardown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
#[non_exhaustive]
pub enum TeardownProfile {
    /// 0: graceful close.
    Graceful = 0,
    /// 2: prepare fast teardown.
    PrepareFast = 2,
}

/// TEARDOWN_HCA (0x103). [ref §7.6](crate::reference) teardown.
pub fn teardown_hca(b: &mut [u8], profile: TeardownProfile) -> Req {
    let r = simple(b, op::TEARDOWN_HCA, 0);
    teardown_hca_in::PROFILE.set(b, 0, profile as u32);
    r
}

/// TEARDOWN_HCA output: true when a fast teardown failed
/// ([`teardown_hca_out::STATE`], byte 0x0f bit 0).
pub fn parse_teardown_hca(out: &[u8]) -> bool {
    teardown_hca_out::STATE.get(out, 0) != 0
}
