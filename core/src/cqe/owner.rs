//! The CQE ownership rule: who owns the entry at a consumer index, and
//! the owner bit hardware writes on each pass. [ref §5.3](crate::reference).

use super::CqeOpcode;

/// Ownership test of [ref §5.3](crate::reference): the CQE at consumer index `ci` belongs to
/// software iff its opcode is not INVALID (15) and its owner bit equals the
/// parity of the pass, `(ci & ncqe) != 0`. `ncqe` is the (power-of-two)
/// number of entries.
#[inline(always)]
pub const fn sw_owns(op_own: u8, ci: u32, ncqe: u32) -> bool {
    (op_own >> 4) != CqeOpcode::Invalid as u8 && ((op_own & 1) != 0) == ((ci & ncqe) != 0)
}

/// Owner bit hardware writes on the pass that contains consumer index `ci`.
/// [ref §5.3](crate::reference).
#[inline(always)]
pub const fn owner_bit_for(ci: u32, ncqe: u32) -> u8 {
    ((ci & ncqe) != 0) as u8
}
