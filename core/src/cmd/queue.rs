//! The command queue: 64-byte entries, ownership handshake, doorbell by slot
//! bit, chained mailboxes ([ref §7.2, §7.3, §7.4](crate::reference)).
//!
//! Two slots are used: slot 0 for regular commands and the last slot for
//! page-management commands ([ref §7.2](crate::reference) step 4, §7.7), so page requests can
//! be served while a regular command waits for pages. Each of the two slots
//! owns a preallocated input and output mailbox chain of [`MAX_BLOCKS`]
//! blocks (1 KiB aligned, as the kernel's pool), so a message may be up to
//! [`MAX_MSG`] bytes.

use super::bits::{get32, get64, put32, put64};
use super::initseg::{CmdqGeometry, InitSegError, CMDQ_ADDR_H, CMDQ_ADDR_L_SZ, CMD_DBELL};
use super::{Bar0, CmdError, CmdStatus, DeliveryStatus, MailboxProblem};
use crate::devmem;
use crate::platform::{
    from_device_barrier, ordering_write_barrier, to_device_barrier, DmaAllocator, DmaBuf,
};

/// Bytes in one command queue entry (`mlx5_cmd_layout`). [ref §7.3](crate::reference).
pub const LAYOUT_BYTES: usize = 64;
/// Bytes in one mailbox block (`mlx5_cmd_prot_block`). [ref §7.4](crate::reference).
pub const MAILBOX_BYTES: usize = 576;
/// Data bytes per mailbox block. [ref §7.4](crate::reference).
pub const MAILBOX_DATA: usize = 512;
/// Distance between preallocated blocks (1 KiB alignment). [ref §7.4](crate::reference).
pub const MAILBOX_STRIDE: usize = 1024;
/// Mailbox blocks preallocated per direction per slot.
pub const MAX_BLOCKS: usize = 10;
/// Bytes of a message (input or output) carried in the entry itself
/// (`in`/`out` of `mlx5_cmd_layout`); the rest goes in mailboxes.
/// [ref §7.3](crate::reference).
pub const INLINE_BYTES: usize = 16;
/// Largest message (input or output): the inline bytes + the mailbox data.
pub const MAX_MSG: usize = INLINE_BYTES + MAX_BLOCKS * MAILBOX_DATA;
/// `status_own` bit 0: the entry belongs to firmware. [ref §7.3](crate::reference).
pub const OWNERSHIP_HW: u8 = 1;

/// The `status_own` byte firmware writes back: delivery status in bits
/// 7:1, ownership (0, software) in bit 0. [ref §7.3](crate::reference).
pub const fn status_own_byte(delivery: u8) -> u8 {
    delivery << 1
}

/// The delivery status bits (7:1) of a `status_own` byte.
/// [ref §7.3](crate::reference).
pub const fn delivery_bits(status_own: u8) -> u8 {
    status_own >> 1
}

/// `type` byte of an entry: PCI command transport. [ref §7.3](crate::reference).
pub const CMD_TYPE_PCI: u8 = 7;

/// Entry field offsets ([ref §7.3](crate::reference)).
pub mod layout {
    /// `type`.
    pub const TYPE: usize = 0x00;
    /// `inlen` (BE32).
    pub const INLEN: usize = 0x04;
    /// `in_ptr` (BE64).
    pub const IN_PTR: usize = 0x08;
    /// First 16 input bytes.
    pub const IN: usize = 0x10;
    /// First 16 output bytes.
    pub const OUT: usize = 0x20;
    /// `out_ptr` (BE64).
    pub const OUT_PTR: usize = 0x30;
    /// `outlen` (BE32).
    pub const OUTLEN: usize = 0x38;
    /// `token`.
    pub const TOKEN: usize = 0x3c;
    /// `sig`.
    pub const SIG: usize = 0x3d;
    /// `status_own`: bit 0 ownership, bits 7:1 delivery status.
    pub const STATUS_OWN: usize = 0x3f;
}

/// Mailbox block field offsets ([ref §7.4](crate::reference)).
pub mod mailbox {
    /// `next` (BE64 DMA address of the next block, 0 at the end).
    pub const NEXT: usize = 0x230;
    /// `block_num` (BE32).
    pub const BLOCK_NUM: usize = 0x238;
    /// `token`.
    pub const TOKEN: usize = 0x23d;
}

/// Number of mailbox blocks a message of `len` bytes needs:
/// `ceil((len − 16) / 512)`, 0 when it fits inline. [ref §7.4](crate::reference).
pub const fn blocks_for(len: usize) -> usize {
    if len <= INLINE_BYTES {
        0
    } else {
        (len - INLINE_BYTES).div_ceil(MAILBOX_DATA)
    }
}

/// Which of the two used slots a command travels on ([ref §7.2](crate::reference) step 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::exhaustive_enums)] // closed by design: the driver uses exactly two command slots
pub enum SlotKind {
    /// Slot 0: regular commands.
    Regular,
    /// The last slot: page commands (MANAGE_PAGES in answer to events).
    Pages,
}

/// Copies `src` into DMA memory at `buf + off`; false if out of range.
///
/// Every byte is stored by a volatile store: the memory is device-visible,
/// so the stores must not be merged away, elided or invented, and no
/// reference to it is ever formed. Stores are 8 bytes wide where the
/// destination is 8-byte aligned and single bytes at the unaligned ends
/// (`store_volatile`); the bytes written are the same on any host.
///
/// # Safety
/// `buf` must describe live memory (the device may read it concurrently).
pub unsafe fn dma_write(buf: &DmaBuf, off: usize, src: &[u8]) -> bool {
    match off.checked_add(src.len()) {
        Some(end) if end <= buf.len => {
            // SAFETY: `[off, end)` lies inside the live buffer the caller
            // vouches for.
            unsafe { store_volatile(buf.cpu.as_ptr().add(off), src) };
            true
        }
        _ => false,
    }
}

/// Copies DMA memory at `buf + off` into `dst`; false if out of range.
///
/// The source is device-writable, so every byte comes from a volatile load
/// into the host copy `dst` (never a reference to the DMA memory, never a
/// `memcpy` the compiler may assume stable): the driver then validates and
/// acts on the copy only, so a device rewriting the memory meanwhile
/// changes nothing it already checked. Loads are 8 bytes wide where the
/// source is 8-byte aligned (`load_volatile`).
///
/// # Safety
/// `buf` must describe live memory (the device may write it concurrently).
pub unsafe fn dma_read(buf: &DmaBuf, off: usize, dst: &mut [u8]) -> bool {
    match off.checked_add(dst.len()) {
        Some(end) if end <= buf.len => {
            // SAFETY: `[off, end)` lies inside the live buffer; `dst` is
            // host memory.
            unsafe { load_volatile(buf.cpu.as_ptr().add(off), dst) };
            true
        }
        _ => false,
    }
}

/// Writes zeros to `len` bytes at `buf + off` (clamped to the buffer) with
/// volatile stores, 8 bytes wide where aligned.
///
/// # Safety
/// As [`dma_write`].
pub unsafe fn dma_zero(buf: &DmaBuf, off: usize, len: usize) {
    if off >= buf.len {
        return;
    }
    let len = len.min(buf.len - off);
    // SAFETY: `off + len <= buf.len` (clamped above), inside the live
    // buffer.
    unsafe { zero_volatile(buf.cpu.as_ptr().add(off), len) };
}

/// Writes `len` zero bytes at `dst` with volatile stores: bytes up to the
/// first 8-byte boundary, then 64-byte blocks and 8-byte words, then bytes.
///
/// # Safety
/// As [`store_volatile`], for `len` bytes.
pub(crate) unsafe fn zero_volatile(dst: *mut u8, len: usize) {
    let head = dst.align_offset(8).min(len);
    let mut i = 0;
    while i < head {
        // SAFETY: i < len: inside the destination.
        unsafe { core::ptr::write_volatile(dst.add(i), 0u8) };
        i += 1;
    }
    while len - i >= 64 {
        // SAFETY: `i + 64 <= len`, and `dst + i` is 8-byte aligned (`dst +
        // head` is, `i - head` is a multiple of 8): aligned for `[u64; 8]`.
        unsafe { core::ptr::write_volatile(dst.add(i).cast::<[u64; 8]>(), [0u64; 8]) };
        i += 64;
    }
    while len - i >= 8 {
        // SAFETY: `i + 8 <= len`, aligned as above.
        unsafe { core::ptr::write_volatile(dst.add(i).cast::<u64>(), 0u64) };
        i += 8;
    }
    while i < len {
        // SAFETY: i < len.
        unsafe { core::ptr::write_volatile(dst.add(i), 0u8) };
        i += 1;
    }
}

/// Stores `src` at `dst` with volatile stores: single bytes up to the
/// first 8-byte boundary of `dst`, then 64-byte blocks and 8-byte words,
/// then single bytes.
/// Each word holds the same bytes in the same order as `src` (its value is
/// `from_ne_bytes` of them), so memory ends up byte-for-byte equal to
/// `src` on any host.
///
/// # Safety
/// `dst` must be valid for writes of `src.len()` bytes and must not be
/// referenced by any Rust reference while this runs.
pub(crate) unsafe fn store_volatile(dst: *mut u8, src: &[u8]) {
    let n = src.len();
    // `align_offset` may decline (usize::MAX): then every store is a byte.
    let head = dst.align_offset(8).min(n);
    let mut i = 0;
    while i < head {
        // SAFETY: i < n: inside the destination; byte stores need no
        // alignment.
        unsafe { core::ptr::write_volatile(dst.add(i), src[i]) };
        i += 1;
    }
    while n - i >= 64 {
        let mut b = [0u8; 64];
        b.copy_from_slice(&src[i..i + 64]);
        // SAFETY: [u8; 64] and [u64; 8] have the same size and every bit
        // pattern is a valid u64: word k holds bytes 8k..8k+8 in memory
        // order (from_ne_bytes), so the store writes `b` unchanged.
        let w: [u64; 8] = unsafe { core::mem::transmute(b) };
        // SAFETY: `i + 64 <= n`: inside the destination; `dst + i` is
        // 8-byte aligned (as below), the alignment of `[u64; 8]`. One
        // volatile store of 64 bytes (the compiler may split it into
        // narrower stores, never merge it with others or elide it).
        unsafe { core::ptr::write_volatile(dst.add(i).cast::<[u64; 8]>(), w) };
        i += 64;
    }
    while n - i >= 8 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&src[i..i + 8]);
        // SAFETY: `i + 8 <= n`: inside the destination; `dst + head` is
        // 8-byte aligned and `i - head` is a multiple of 8, so `dst + i`
        // is aligned for a u64 store.
        unsafe { core::ptr::write_volatile(dst.add(i).cast::<u64>(), u64::from_ne_bytes(w)) };
        i += 8;
    }
    while i < n {
        // SAFETY: i < n, as above.
        unsafe { core::ptr::write_volatile(dst.add(i), src[i]) };
        i += 1;
    }
}

/// Fills `dst` from `src` with volatile loads: single bytes up to the
/// first 8-byte boundary of `src`, then 64-byte blocks and 8-byte words
/// (split back into
/// bytes with `to_ne_bytes`, so `dst` holds the memory's bytes in order on
/// any host), then single bytes.
///
/// # Safety
/// `src` must be valid for reads of `dst.len()` bytes and must not be
/// referenced by any Rust reference while this runs.
pub(crate) unsafe fn load_volatile(src: *const u8, dst: &mut [u8]) {
    let n = dst.len();
    let head = src.align_offset(8).min(n);
    let mut i = 0;
    while i < head {
        // SAFETY: i < n: inside the source; byte loads need no alignment.
        dst[i] = unsafe { core::ptr::read_volatile(src.add(i)) };
        i += 1;
    }
    while n - i >= 64 {
        // SAFETY: `i + 64 <= n`: inside the source; `src + i` is 8-byte
        // aligned (as below), the alignment of `[u64; 8]`: one volatile
        // load of 64 bytes (possibly split, never elided or cached).
        let w = unsafe { core::ptr::read_volatile(src.add(i).cast::<[u64; 8]>()) };
        // SAFETY: same size, and any u64 is 8 valid bytes (its memory
        // order, to_ne_bytes).
        let b: [u8; 64] = unsafe { core::mem::transmute(w) };
        dst[i..i + 64].copy_from_slice(&b);
        i += 64;
    }
    while n - i >= 8 {
        // SAFETY: `i + 8 <= n`: inside the source, and `src + i` is 8-byte
        // aligned (`src + head` is, and `i - head` is a multiple of 8).
        let w = unsafe { core::ptr::read_volatile(src.add(i).cast::<u64>()) };
        dst[i..i + 8].copy_from_slice(&w.to_ne_bytes());
        i += 8;
    }
    while i < n {
        // SAFETY: i < n, as above.
        dst[i] = unsafe { core::ptr::read_volatile(src.add(i)) };
        i += 1;
    }
}

/// Volatile byte load (for bytes the device may write at any time).
///
/// # Safety
/// As [`dma_write`], except the device may write concurrently.
pub unsafe fn dma_load8(buf: &DmaBuf, off: usize) -> u8 {
    if off >= buf.len {
        return 0;
    }
    // SAFETY: in range; volatile because the device writes this byte. Raw
    // `read_volatile` rather than a `devmem` view: the source test
    // `hostile_fw::dma_copies_of_device_memory_are_volatile` pins it.
    unsafe { core::ptr::read_volatile(buf.cpu.as_ptr().add(off)) }
}

/// Volatile byte store.
///
/// # Safety
/// As [`dma_write`].
pub unsafe fn dma_store8(buf: &DmaBuf, off: usize, v: u8) {
    if off < buf.len {
        // SAFETY: in range (non-null, alignment 1); a write-only volatile
        // view, so the store is not elided or moved across the barrier
        // that follows it; no reference.
        unsafe { devmem::write_only(buf.cpu.as_ptr().add(off)) }.write(v);
    }
}

#[derive(Clone, Copy, Debug)]
struct SlotMem {
    index: u8,
    entry: DmaBuf,
    in_mb: DmaBuf,
    out_mb: DmaBuf,
    /// Opcode of the command in flight, if any.
    pending: Option<u16>,
    out_len: usize,
    /// A command timed out here; the slot is unusable until ownership returns.
    stuck: bool,
}

/// Failure to set up the command queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CmdqSetupError {
    /// The DMA allocator returned nothing.
    OutOfDmaMemory,
    /// The queue page is not 4 KiB aligned.
    Misaligned {
        /// IOVA returned.
        iova: u64,
    },
    /// The geometry is unusable ([`CmdqGeometry::check`]): slots would
    /// overlap, share an entry or fall outside the queue page.
    Geometry(InitSegError),
}

impl core::fmt::Display for CmdqSetupError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            CmdqSetupError::OutOfDmaMemory => {
                f.write_str("out of DMA memory for the command queue")
            }
            CmdqSetupError::Misaligned { iova } => {
                write!(f, "command queue page 0x{iova:x} is not 4 KiB aligned")
            }
            CmdqSetupError::Geometry(_) => f.write_str("unusable command queue geometry"),
        }
    }
}

/// [`source`](core::error::Error::source) is the [`InitSegError`] of
/// [`CmdqSetupError::Geometry`].
impl core::error::Error for CmdqSetupError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            CmdqSetupError::Geometry(e) => Some(e),
            _ => None,
        }
    }
}

/// The command queue of one function ([ref §7.2](crate::reference)).
#[derive(Debug)]
pub struct CmdQueue {
    page: DmaBuf,
    mbox: DmaBuf,
    geometry: CmdqGeometry,
    slots: [SlotMem; 2],
}

// SAFETY: the queue exclusively owns its DMA memory; DmaBuf is a plain
// description. Moving it to another thread moves that ownership.
unsafe impl Send for CmdQueue {}

impl CmdQueue {
    /// Number of slots (`1 << log_sz`).
    pub fn slots(&self) -> u8 {
        self.geometry.slots()
    }

    /// The slot index used for `kind`.
    pub fn slot_index(&self, kind: SlotKind) -> u8 {
        self.slots[kind as usize].index
    }

    /// The queue page (for platforms that want to inspect it).
    pub fn page(&self) -> DmaBuf {
        self.page
    }

    /// Allocates the queue page and mailboxes and programs `cmdq_addr_h` /
    /// `cmdq_addr_l_sz` ([ref §7.2](crate::reference) step 3). `geometry` comes from
    /// [`super::initseg::InitSeg::validate`]; it is checked again here
    /// ([`CmdqGeometry::check`]) before anything is allocated, so a
    /// geometry built by hand cannot make two slots share an entry.
    pub fn new<A: DmaAllocator, B: Bar0>(
        alloc: &A,
        bar: &mut B,
        geometry: CmdqGeometry,
    ) -> Result<CmdQueue, CmdqSetupError> {
        geometry.check().map_err(CmdqSetupError::Geometry)?;
        let page = alloc
            .alloc(4096, 4096)
            .ok_or(CmdqSetupError::OutOfDmaMemory)?;
        if page.iova & 0xfff != 0 {
            // SAFETY: fresh allocation, never given to the device.
            unsafe { alloc.free(page) };
            return Err(CmdqSetupError::Misaligned { iova: page.iova });
        }
        let chain = MAX_BLOCKS * MAILBOX_STRIDE;
        let Some(mbox) = alloc.alloc(4 * chain, 4096) else {
            // SAFETY: fresh allocation, never given to the device.
            unsafe { alloc.free(page) };
            return Err(CmdqSetupError::OutOfDmaMemory);
        };
        let stride = 1usize << geometry.log_stride;
        let nslots = geometry.slots();
        // After `check`: nslots ≥ 2 and nslots · stride ≤ 4096, so both
        // entries lie inside the page and are distinct.
        let mk = |i: usize, index: u8| -> SlotMem {
            let off = index as usize * stride;
            SlotMem {
                index,
                entry: page.slice(off, LAYOUT_BYTES).unwrap_or(page),
                in_mb: mbox.slice(2 * i * chain, chain).unwrap_or(mbox),
                out_mb: mbox.slice((2 * i + 1) * chain, chain).unwrap_or(mbox),
                pending: None,
                out_len: 0,
                stuck: false,
            }
        };
        let q = CmdQueue {
            page,
            mbox,
            geometry,
            slots: [mk(0, 0), mk(1, nslots - 1)],
        };
        for s in &q.slots {
            // SAFETY: the chains are ours and not yet known to the device.
            unsafe {
                link_chain(&s.in_mb, MAX_BLOCKS);
                link_chain(&s.out_mb, MAX_BLOCKS);
            }
        }
        to_device_barrier();
        bar.write32(CMDQ_ADDR_H, (page.iova >> 32) as u32);
        bar.write32(CMDQ_ADDR_L_SZ, page.iova as u32 & !0xfff);
        to_device_barrier();
        Ok(q)
    }

    /// Returns the queue's DMA memory to `alloc`.
    ///
    /// # Safety
    /// The device must no longer use the queue (after DISABLE_HCA or a reset).
    pub unsafe fn free<A: DmaAllocator>(self, alloc: &A) {
        // SAFETY: caller guarantees the device is done with this memory;
        // both buffers came from `alloc` in `new`.
        unsafe {
            alloc.free(self.mbox);
            alloc.free(self.page);
        }
    }

    /// Whether a command is in flight on `kind`.
    pub fn pending(&self, kind: SlotKind) -> Option<u16> {
        self.slots[kind as usize].pending
    }

    /// Posts a command: copies `input` (header + body) into the entry and
    /// input mailboxes, prepares `out_len` bytes of output, hands the entry
    /// to firmware and rings the doorbell ([ref §7.3](crate::reference) "Execution").
    pub fn post<B: Bar0>(
        &mut self,
        bar: &mut B,
        kind: SlotKind,
        input: &[u8],
        out_len: usize,
    ) -> Result<(), CmdError> {
        // The opcode is `cmd_in::OPCODE` (bits 31:16 of dword 0), read here as
        // the first two bytes on purpose: the dword accessor yields 0 for a
        // 2–3 byte input, which would change the opcode named in the error.
        let opcode = super::bits::get16(input, 0);
        let s = &mut self.slots[kind as usize];
        if s.stuck || s.pending.is_some() {
            // SAFETY: our entry; the device may write status_own, hence volatile.
            let own = unsafe { dma_load8(&s.entry, layout::STATUS_OWN) } & OWNERSHIP_HW;
            if own != 0 {
                return Err(CmdError::SlotBusy {
                    opcode,
                    slot: s.index,
                });
            }
            s.stuck = false;
            s.pending = None;
        }
        let max = MAX_MSG;
        if input.len() > max || input.len() < INLINE_BYTES {
            return Err(CmdError::TooLong {
                opcode,
                len: input.len(),
                max,
            });
        }
        if out_len > max || out_len < INLINE_BYTES {
            return Err(CmdError::TooLong {
                opcode,
                len: out_len,
                max,
            });
        }
        let mut e = [0u8; LAYOUT_BYTES];
        e[layout::TYPE] = CMD_TYPE_PCI;
        put32(&mut e, layout::INLEN, input.len() as u32);
        e[layout::IN..layout::IN + INLINE_BYTES].copy_from_slice(&input[..INLINE_BYTES]);
        if input.len() > INLINE_BYTES {
            put64(&mut e, layout::IN_PTR, s.in_mb.iova);
        }
        if out_len > INLINE_BYTES {
            put64(&mut e, layout::OUT_PTR, s.out_mb.iova);
        }
        put32(&mut e, layout::OUTLEN, out_len as u32);
        // token 0, no signature (checksums off; ref §7.4), status_own 0 for now.
        // SAFETY: the slot is not owned by the device (checked above); all
        // buffers are ours.
        unsafe {
            // Only the blocks this command uses are read by the device;
            // their headers are rewritten (the chain was linked whole at
            // creation), so whatever a device left in them is gone.
            link_chain(&s.in_mb, blocks_for(input.len()));
            link_chain(&s.out_mb, blocks_for(out_len));
            let rest = &input[INLINE_BYTES..];
            for (i, chunk) in rest.chunks(MAILBOX_DATA).enumerate() {
                let off = i * MAILBOX_STRIDE;
                dma_write(&s.in_mb, off, chunk);
                dma_zero(&s.in_mb, off + chunk.len(), MAILBOX_DATA - chunk.len());
            }
            for i in 0..blocks_for(out_len) {
                dma_zero(&s.out_mb, i * MAILBOX_STRIDE, MAILBOX_DATA);
            }
            dma_write(&s.entry, 0, &e);
        }
        // The entry and mailboxes are complete before their ownership bit.
        ordering_write_barrier();
        // SAFETY: as above; the ownership byte is stored last.
        unsafe { dma_store8(&s.entry, layout::STATUS_OWN, OWNERSHIP_HW) };
        to_device_barrier();
        s.pending = Some(opcode);
        s.out_len = out_len;
        bar.write32(CMD_DBELL, 1u32 << s.index);
        Ok(())
    }

    /// True when firmware has handed the entry back (ownership bit clear).
    pub fn done(&self, kind: SlotKind) -> bool {
        let s = &self.slots[kind as usize];
        // SAFETY: our entry; volatile since the device writes status_own.
        (unsafe { dma_load8(&s.entry, layout::STATUS_OWN) } & OWNERSHIP_HW) == 0
    }

    /// Marks the command on `kind` as timed out: the slot stays unusable
    /// until firmware releases it.
    pub fn abandon(&mut self, kind: SlotKind) {
        let s = &mut self.slots[kind as usize];
        s.stuck = true;
    }

    /// Reads the output of a finished command into `out` (which must hold
    /// the `out_len` given to [`CmdQueue::post`]), checks the delivery
    /// status, the mailbox chain and the command status ([ref §7.3–§7.5](crate::reference)).
    /// Returns the number of output bytes.
    pub fn complete(&mut self, kind: SlotKind, out: &mut [u8]) -> Result<usize, CmdError> {
        let s = &mut self.slots[kind as usize];
        let opcode = s.pending.take().unwrap_or(0);
        from_device_barrier();
        // SAFETY: ownership returned to software, the entry is ours.
        let so = unsafe { dma_load8(&s.entry, layout::STATUS_OWN) };
        if let Some(status) = DeliveryStatus::from_u8(delivery_bits(so)) {
            return Err(CmdError::Delivery { opcode, status });
        }
        let n = s.out_len.min(out.len());
        let head = n.min(INLINE_BYTES);
        // SAFETY: as above.
        unsafe { dma_read(&s.entry, layout::OUT, &mut out[..head]) };
        let mut done = head;
        let mut block = 0u32;
        while done < n {
            let off = block as usize * MAILBOX_STRIDE;
            let mut tail = [0u8; MAILBOX_BYTES - MAILBOX_DATA];
            // SAFETY: block `block` < MAX_BLOCKS lies inside our chain.
            unsafe { dma_read(&s.out_mb, off + MAILBOX_DATA, &mut tail) };
            let bn = get32(&tail, mailbox::BLOCK_NUM - MAILBOX_DATA);
            if bn != block {
                return Err(CmdError::Mailbox {
                    opcode,
                    problem: MailboxProblem::BlockNumber {
                        expected: block,
                        found: bn,
                    },
                });
            }
            let next = get64(&tail, mailbox::NEXT - MAILBOX_DATA);
            let want_next = if (block as usize) + 1 < MAX_BLOCKS {
                s.out_mb.iova + (block as u64 + 1) * MAILBOX_STRIDE as u64
            } else {
                0
            };
            if next != want_next {
                return Err(CmdError::Mailbox {
                    opcode,
                    problem: MailboxProblem::NextPointer { block, found: next },
                });
            }
            let take = (n - done).min(MAILBOX_DATA);
            // SAFETY: inside our chain.
            unsafe { dma_read(&s.out_mb, off, &mut out[done..done + take]) };
            done += take;
            block += 1;
        }
        if let Some(status) = CmdStatus::from_u8(out.first().copied().unwrap_or(0)) {
            return Err(CmdError::Failed {
                opcode,
                status,
                syndrome: super::layout::cmd_out::SYNDROME.get(out, 0),
            });
        }
        Ok(n)
    }
}

/// Writes `next` and `block_num` of the first `blocks` blocks of a chain
/// (at most [`MAX_BLOCKS`]), zeroing token and signatures ([ref §7.4](crate::reference)).
/// Each block's `next` names the following block of the whole chain (0 for
/// the last of the [`MAX_BLOCKS`]), whichever prefix is linked.
///
/// # Safety
/// `chain` must be live DMA memory not owned by the device.
unsafe fn link_chain(chain: &DmaBuf, blocks: usize) {
    for i in 0..blocks.min(MAX_BLOCKS) {
        let mut tail = [0u8; MAILBOX_BYTES - MAILBOX_DATA];
        let next = if i + 1 < MAX_BLOCKS {
            chain.iova + ((i + 1) * MAILBOX_STRIDE) as u64
        } else {
            0
        };
        put64(&mut tail, mailbox::NEXT - MAILBOX_DATA, next);
        put32(&mut tail, mailbox::BLOCK_NUM - MAILBOX_DATA, i as u32);
        // SAFETY: block i lies inside the chain (MAX_BLOCKS * STRIDE bytes).
        unsafe { dma_write(chain, i * MAILBOX_STRIDE + MAILBOX_DATA, &tail) };
    }
}
