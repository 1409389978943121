//! Message memory: carving a run's message slots out of DMA buffers of at
//! most [`CHUNK_BYTES`], each buffer under its own memory key ([`area`]).

use super::objects::Objects;
use crate::perf::engine::Slot;
use anyhow::anyhow;
use bareverbs::cmd::{Bar0, Clock};
use bareverbs::device::{Device, Pd, UarMap};
use bareverbs::error::Chain;
use bareverbs::mr::{Access, MemoryRegion};
use bareverbs::platform::DmaAllocator;
use std::ptr::NonNull;

/// Most bytes of message slots packed under one memory key (a larger
/// slot gets a buffer and key of its own: `Device::create_mkey` picks an
/// MTT page size whose list fits one command).
pub const CHUNK_BYTES: usize = 2 << 20;

/// `n` slots of `slot_bytes` in DMA buffers of at most [`CHUNK_BYTES`]
/// (or one slot, when it is larger), each under its own memory key.
pub(super) fn area<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    dev: &mut Device<B, C, A>,
    objs: &mut Objects,
    pd: Pd,
    n: usize,
    slot_bytes: usize,
    mrs: &mut Vec<MemoryRegion>,
) -> anyhow::Result<Vec<Slot>> {
    const ALL: Access = Access::LOCAL_WRITE
        .union(Access::REMOTE_WRITE)
        .union(Access::REMOTE_READ)
        .union(Access::REMOTE_ATOMIC);
    let per_chunk = (CHUNK_BYTES / slot_bytes).max(1);
    let mut slots = Vec::with_capacity(n);
    if n == 0 {
        return Ok(slots);
    }
    while slots.len() < n {
        let m = per_chunk.min(n - slots.len());
        let len = (m * slot_bytes).next_multiple_of(4096);
        let buf = dev
            .allocator()
            .alloc(len, 4096)
            .ok_or_else(|| anyhow!("out of DMA memory for a {len}-byte message buffer"))?;
        // SAFETY: a fresh allocation of `len` bytes that nothing else uses.
        unsafe { std::ptr::write_bytes(buf.cpu.as_ptr(), 0, len) };
        objs.bufs.push(buf);
        // SAFETY: `buf` is a message buffer this run allocated and owns
        // (no ring); it is freed only after the key is destroyed
        // (Objects::destroy) and is accessed only through raw pointers.
        let mkey = unsafe { dev.create_mkey(pd, &buf, ALL) }
            .map_err(|e| anyhow!("CREATE_MKEY over {len} bytes: {}", Chain::new(&e)))?;
        objs.mkeys.push(mkey);
        // SAFETY: `buf` is the key's buffer; it is freed only after the key
        // is destroyed (Objects::destroy), after the queues are dropped.
        let mr = unsafe { mkey.memory_region(&buf) }
            .ok_or_else(|| anyhow!("memory key does not cover its buffer"))?;
        mrs.push(mr);
        for i in 0..m {
            let off = i * slot_bytes;
            slots.push(Slot {
                // SAFETY: off < len, inside the allocation.
                cpu: unsafe { NonNull::new_unchecked(buf.cpu.as_ptr().add(off)) },
                addr: mkey.addr() + off as u64,
                key: mkey.key(),
            });
        }
    }
    Ok(slots)
}
