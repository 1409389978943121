//! The device's object tables: placing an object at a number (chosen by
//! the caller, as firmware does, or the next free one), bounded by
//! [`MAX_PLACED_INDEX`], and the power-of-two size check of rings.

use super::SimError;

/// Whether `n` is a power of two (and not 0).
pub(super) fn pow2(n: u32) -> bool {
    n != 0 && n.is_power_of_two()
}

/// Largest table index an explicitly numbered object may take.
pub const MAX_PLACED_INDEX: usize = 1 << 16;

/// Puts `t` at index `idx` of a table (growing it), or at its end when
/// `idx` is `None`; refuses a live slot or an index past
/// [`MAX_PLACED_INDEX`]. Returns the index used.
pub(super) fn place<T>(
    v: &mut Vec<Option<T>>,
    idx: Option<usize>,
    t: T,
    live: impl Fn(&T) -> bool,
) -> Result<usize, SimError> {
    let i = idx.unwrap_or(v.len());
    if i > MAX_PLACED_INDEX {
        return Err(SimError::NumberUnavailable);
    }
    if v.len() <= i {
        v.resize_with(i + 1, || None);
    }
    if matches!(&v[i], Some(x) if live(x)) {
        return Err(SimError::NumberUnavailable);
    }
    v[i] = Some(t);
    Ok(i)
}
