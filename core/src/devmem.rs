//! Typed single accesses to device-visible memory through `volatile`'s
//! [`VolatilePtr`], with the access the call site needs: read-only for
//! what the device writes (CQE bytes), write-only for what the device
//! reads (doorbell records, the command ownership handoff, a UAR page),
//! read-write for a read-modify-write (the CQ purge's owner bit).
//!
//! A view is made from a raw pointer for one access and dropped: no Rust
//! reference to the memory exists at any point ([`VolatilePtr`] holds a
//! `NonNull`). `VolatilePtr::read`/`write` are `read_volatile`/
//! `write_volatile` of the whole `T`, so the generated code is the same as
//! a raw volatile access of that type. Byte and word copy loops
//! (mailboxes, buffers, the CQ purge) stay raw `read_volatile`/
//! `write_volatile` (`docs/architecture.md`, "Device memory").

use core::ptr::NonNull;
use volatile::access::{ReadOnly, ReadWrite, WriteOnly};
use volatile::VolatilePtr;

/// A read-only volatile view of the `T` at `p`.
///
/// # Safety
/// `p` is non-null, aligned for `T` and valid for reads of a `T` while the
/// view is used; no Rust reference points at it, and no other thread
/// accesses it meanwhile (the device may: that is why the read is
/// volatile).
#[inline(always)]
pub(crate) unsafe fn read_only<'a, T>(p: *const T) -> VolatilePtr<'a, T, ReadOnly> {
    // SAFETY: `p` is non-null (contract); `VolatilePtr`'s validity and
    // single-thread requirements are this function's contract.
    unsafe { VolatilePtr::new_read_only(NonNull::new_unchecked(p.cast_mut())) }
}

/// A write-only volatile view of the `T` at `p`.
///
/// # Safety
/// As [`read_only`], for writes.
#[inline(always)]
pub(crate) unsafe fn write_only<'a, T>(p: *mut T) -> VolatilePtr<'a, T, WriteOnly> {
    // SAFETY: as in `read_only`.
    unsafe { VolatilePtr::new_restricted(WriteOnly, NonNull::new_unchecked(p)) }
}

/// A read-write volatile view of the `T` at `p`.
///
/// # Safety
/// As [`read_only`], for reads and writes.
#[inline(always)]
pub(crate) unsafe fn read_write<'a, T>(p: *mut T) -> VolatilePtr<'a, T, ReadWrite> {
    // SAFETY: as in `read_only`.
    unsafe { VolatilePtr::new_restricted(ReadWrite, NonNull::new_unchecked(p)) }
}
