//! Probe functions for `scripts/check-barriers.sh`: compiled only with
//! `--cfg bareverbs_barrier_probes` (never in a normal build), each
//! `#[inline(never)]` so the emitted assembly has one symbol per barrier
//! and per doorbell sequence whose instructions the script checks. The
//! barrier probes return distinct constants so that no two of them have
//! the same body (identical functions may be merged into one symbol).

use crate::cq::CompletionQueue;
use crate::platform::{self, MemUar};
use crate::sq::{SendQueue, SqSlot};

/// [`platform::to_device_barrier`] alone.
#[inline(never)]
pub fn to_device() -> u32 {
    platform::to_device_barrier();
    1
}

/// [`platform::ordering_write_barrier`] alone.
#[inline(never)]
pub fn ordering_write() -> u32 {
    platform::ordering_write_barrier();
    2
}

/// [`platform::from_device_barrier`] alone.
#[inline(never)]
pub fn from_device() -> u32 {
    platform::from_device_barrier();
    3
}

/// [`platform::release_to_device_barrier`] alone.
#[inline(never)]
pub fn release_to_device() -> u32 {
    platform::release_to_device_barrier();
    4
}

/// [`platform::mmio_wc_start`] alone.
#[inline(never)]
pub fn mmio_wc_start() -> u32 {
    platform::mmio_wc_start();
    5
}

/// [`platform::mmio_flush_writes`] alone.
#[inline(never)]
pub fn mmio_flush_writes() -> u32 {
    platform::mmio_flush_writes();
    6
}

/// The SET_CI store after polling: barrier, then the record word.
#[inline(never)]
pub fn cq_publish_ci(cq: &mut CompletionQueue<0>) {
    cq.publish_ci();
}

/// The CQ arm sequence: record word, `mmio_wc_start`, the 8-byte UAR
/// doorbell, the UAR flush.
#[inline(never)]
pub fn cq_arm(cq: &mut CompletionQueue<0>, uar: &mut MemUar) {
    cq.arm(false, uar);
}

/// The send doorbell sequence: `to_device_barrier`, the record word,
/// `mmio_wc_start`, the doorbell or BlueFlame copy, the UAR flush.
#[inline(never)]
pub fn sq_ring_doorbell(sq: &mut SendQueue<MemUar, [SqSlot; 64]>, nreq: u32, last_cur: u32) {
    sq.ring_doorbell(nreq, last_cur, || false);
}
