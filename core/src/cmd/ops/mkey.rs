//! Memory keys: CREATE_MKEY of an MTT key and its page geometry
//! ([ref §7.12](crate::reference)).

use super::pas::{put_pas_sized, PAS_OFFSET};
use super::{hdr, Req, HDR_LEN};
use crate::cmd::layout::{create_mkey_in, mkc};
use crate::cmd::op;
use crate::wqe::MkeyAccess;

/// Offset of the mkc in create_mkey_in. [ref §7.12](crate::reference).
pub const MKC: usize = 0x10;

/// Smallest MTT page size of a memory key (`mkc.log_page_size`): 4 KiB.
pub const MKEY_LOG_PAGE_MIN: u8 = 12;

/// Largest used: 2 GiB pages, the top of the field's low 5 bits
/// (`mkc.log_page_size` is 6 bits wide in current `mlx5_ifc.h`, at dword
/// 14 bits 5:0; the kernel's page-size search covers the same range).
/// One command then describes buffers up to about 1.2 TiB.
/// [ref §7.12](crate::reference).
pub const MKEY_LOG_PAGE_MAX: u8 = 31;

/// The MTT pages of a memory key over `len` bytes at device address
/// `iova` with pages of `1 << log_page` bytes: the first page's address
/// (aligned down) and the count; `None` if the span overflows or the
/// page size is not a 64-bit quantity (`log_page > 63`).
pub fn mkey_pages(iova: u64, len: u64, log_page: u8) -> Option<(u64, u64)> {
    if log_page > 63 {
        return None;
    }
    let size = 1u128 << log_page;
    let off = iova as u128 & (size - 1);
    let n = (off + len as u128).div_ceil(size);
    Some((iova & !(size as u64 - 1), u64::try_from(n).ok()?))
}

/// CREATE_MKEY parameters for an MTT key over a buffer contiguous in
/// device (IOVA) space, described by pages of `1 << log_page_size` bytes.
/// [ref §7.12](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MkeyParams {
    /// Protection domain.
    pub pd: u32,
    /// Access rights (`ibv_access_flags`); the key always grants local
    /// read, as verbs implies.
    pub access: crate::mr::Access,
    /// Virtual start address the key covers (what SGEs name).
    pub start_addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// DMA address of the first page backing the range (aligned to the
    /// page size).
    pub pages_iova: u64,
    /// Number of pages (MTT entries).
    pub npages: usize,
    /// log2 of the page size, `MKEY_LOG_PAGE_MIN..=MKEY_LOG_PAGE_MAX`
    /// (`mkc.log_page_size`, absolute).
    pub log_page_size: u8,
    /// Variant byte (`mkey_7_0`).
    pub variant: u8,
}

/// MTT entry flags of every page of a key: read (bit 0) and write (bit 1),
/// "present" (`MLX5_MTT_PRESENT`); honoured because the command sets
/// `pg_access`. [ref §7.12](crate::reference).
pub const MTT_PRESENT: u64 = 0x3;

/// The MTT entries a CREATE_MKEY input carries for `npages` pages: the
/// count rounded up to an even number, since the list is sent in 16-byte
/// octwords of two entries and the declared octwords must all be present
/// (a pad entry, all zero, completes the last one).
/// [ref §7.12](crate::reference).
pub const fn mtt_entries(npages: usize) -> usize {
    npages.div_ceil(2) * 2
}

/// CREATE_MKEY (0x200): `0x110 + 8 · roundup(npages, 2)` input bytes,
/// both octword sizes `(npages + 1) / 2`, `pg_access` set and every page's
/// entry carrying [`MTT_PRESENT`], as the vendor's VFIO provider sends it.
/// [ref §7.12](crate::reference).
pub fn create_mkey(b: &mut [u8], p: &MkeyParams) -> Req {
    let in_len = PAS_OFFSET + 8 * mtt_entries(p.npages);
    // Zeroes the whole input, the pad entry included.
    hdr(b, op::CREATE_MKEY, 0, in_len);
    create_mkey_in::PG_ACCESS.set(b, 0, 1);
    let a = MkeyAccess::from_ibv(p.access).union(MkeyAccess::LOCAL_READ);
    mkc::ACCESS.set(b, MKC, a.to_mkc_field());
    mkc::ACCESS_MODE_1_0.set(b, MKC, mkc::ACCESS_MODE_MTT);
    mkc::QPN.set(b, MKC, mkc::QPN_NONE);
    mkc::MKEY_7_0.set(b, MKC, p.variant as u32);
    mkc::PD.set(b, MKC, p.pd);
    mkc::START_ADDR.set(b, MKC, p.start_addr);
    mkc::LEN.set(b, MKC, p.len);
    let octwords = p.npages.div_ceil(2) as u32;
    mkc::TRANSLATIONS_OCTWORD_SIZE.set(b, MKC, octwords);
    mkc::LOG_PAGE_SIZE.set(b, MKC, p.log_page_size as u32);
    create_mkey_in::TRANSLATIONS_OCTWORD_ACTUAL_SIZE.set(b, 0, octwords);
    put_pas_sized(
        b,
        PAS_OFFSET,
        p.pages_iova,
        p.npages,
        p.log_page_size,
        MTT_PRESENT,
    );
    Req {
        opcode: op::CREATE_MKEY,
        in_len,
        out_len: HDR_LEN,
    }
}
