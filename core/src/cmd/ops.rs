//! Typed builders and parsers for each command ([ref §6.3, §7.5–§7.12](crate::reference)).
//!
//! A builder zeroes the front of an input buffer, writes the header and
//! fields, and returns a [`Req`] naming the opcode and the input and output
//! lengths. A parser takes the output bytes (the status has already been
//! checked by [`super::queue::CmdQueue::complete`]) and never panics.

use super::bits::{get64, put16, put64, Field};
use super::layout::{
    access_register_in, ads, cmd_in, cmd_out, cqc, create_eq_in, create_mkey_in, eqc, hca_vport,
    host_endianness_reg, manage_pages_in, manage_pages_out, mkc, modify_nic_vport_context_in,
    modify_qp_in, nic_vport, pmtu, qpc, query_adapter_out, query_adapter_param_block,
    query_issi_out, query_pages_out, query_vport_state_out, set_issi_in, srqc, teardown_hca_in,
    teardown_hca_out,
};
use super::{op, CmdError};
use crate::qp::ServiceType;
use crate::wqe::MkeyAccess;

/// A built command: opcode, input bytes to send, output bytes to expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Req {
    /// Opcode ([ref §7.8](crate::reference)).
    pub opcode: u16,
    /// Input length in bytes (header included).
    pub in_len: usize,
    /// Output length in bytes (header included).
    pub out_len: usize,
}

/// Length of a header-only input or output ([ref §7.5](crate::reference)).
pub const HDR_LEN: usize = 0x10;
/// Offset of `pas[]` / MTT lists in CREATE_{CQ,QP,EQ,SRQ,MKEY} inputs.
/// [ref §7.9–§7.12](crate::reference).
pub const PAS_OFFSET: usize = 0x110;
/// Offset of the cqc in create_cq_in. [ref §7.10](crate::reference).
pub const CQC: usize = 0x10;
/// Offset of the qpc in create/modify/query QP messages. [ref §6.3, §7.11](crate::reference).
pub const QPC: usize = 0x18;
/// Offset of the primary address path in a QP message (qpc + 0x18). [ref §7.11](crate::reference).
pub const QPC_PATH: usize = QPC + 0x18;
/// Offset of the eqc in create_eq_in. [ref §7.9](crate::reference).
pub const EQC: usize = 0x10;
/// Offset of the mkc in create_mkey_in. [ref §7.12](crate::reference).
pub const MKC: usize = 0x10;
/// Offset of the srqc in create_srq_in (linux `mlx5_ifc.h`
/// create_srq_in: after the 16-byte header; pas[] at 0x110).
pub const SRQC: usize = 0x10;
/// Capability area in QUERY_HCA_CAP output / SET_HCA_CAP input. [ref §7.6](crate::reference).
pub const CAP_OFFSET: usize = 0x10;
/// Bytes of the capability area. [ref §7.6](crate::reference).
pub const CAP_LEN: usize = 0x1000;

/// Zeroes the first `in_len` bytes and writes `opcode` and `op_mod`
/// ([`cmd_in::OPCODE`], [`cmd_in::OP_MOD`]) as the two 16-bit stores at
/// bytes 0 and 6, so that a buffer shorter than a dword still gets its
/// opcode.
fn hdr(b: &mut [u8], opcode: u16, op_mod: u16, in_len: usize) {
    let n = in_len.min(b.len());
    b[..n].fill(0);
    put16(b, cmd_in::OPCODE.dw * 4, opcode);
    put16(b, cmd_in::OP_MOD.dw * 4 + 2, op_mod);
}

fn simple(b: &mut [u8], opcode: u16, op_mod: u16) -> Req {
    hdr(b, opcode, op_mod, HDR_LEN);
    Req {
        opcode,
        in_len: HDR_LEN,
        out_len: HDR_LEN,
    }
}

/// Writes `npages` BE64 page addresses `base + i·4096` (with `flags` or'ed
/// in) from byte `at`; returns the end offset.
fn put_pas(b: &mut [u8], at: usize, base: u64, npages: usize, flags: u64) -> usize {
    put_pas_sized(b, at, base, npages, 12, flags)
}

/// As `put_pas`, for pages of `1 << log_page` bytes.
fn put_pas_sized(
    b: &mut [u8],
    at: usize,
    base: u64,
    npages: usize,
    log_page: u8,
    flags: u64,
) -> usize {
    for i in 0..npages {
        put64(
            b,
            at + 8 * i,
            base.wrapping_add((i as u64) << log_page) | flags,
        );
    }
    at + 8 * npages
}

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

/// Largest object number: QPN, CQN, SRQN, PD, UAR index and mkey index are
/// 24-bit fields ([ref §7.8](crate::reference) "Simple outputs", §1.2 `qpn_ds`, §7.12).
pub const OBJ_NUMBER_MAX: u32 = 0x00ff_ffff;

/// Reads the object number word dw2 of an output (ALLOC_PD, ALLOC_UAR,
/// CREATE_CQ/QP/MKEY/SRQ; [ref §7.8](crate::reference) "Simple outputs": the number is
/// `dw2[23:0]`).
///
/// The whole word is returned, reserved bits 31:24 included, so that a
/// device writing them is noticed rather than masked away: a value above
/// [`OBJ_NUMBER_MAX`] does not fit the field the number is used in and the
/// caller must refuse it (the device layer does, as
/// `DeviceError::BadObjectNumber`).
pub fn parse_obj_id(out: &[u8]) -> u32 {
    cmd_out::OBJ_ID_DWORD.get(out, 0)
}

// ---- HCA life cycle ---------------------------------------------------

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

/// QUERY_ISSI (0x10a). [ref §7.6](crate::reference) step 5.
pub fn query_issi(b: &mut [u8]) -> Req {
    let mut r = simple(b, op::QUERY_ISSI, 0);
    r.out_len = query_issi_out::LEN;
    r
}
/// QUERY_ISSI output: (current_issi at 0x0a, supported_issi_dw0 at 0x6c;
/// [`query_issi_out`]).
pub fn parse_query_issi(out: &[u8]) -> (u16, u32) {
    (
        query_issi_out::CURRENT_ISSI.get(out, 0) as u16,
        query_issi_out::SUPPORTED_ISSI_DW0.get(out, 0),
    )
}
/// SET_ISSI (0x10b) with current_issi at byte 0x0a ([`set_issi_in`]).
/// [ref §7.6](crate::reference) step 5.
pub fn set_issi(b: &mut [u8], issi: u16) -> Req {
    let r = simple(b, op::SET_ISSI, 0);
    set_issi_in::CURRENT_ISSI.set(b, 0, issi as u32);
    r
}

/// Decides the ISSI from `supported_issi_dw0` ([ref §7.6](crate::reference) step 5): bit 1 →
/// 1; bit 0 or an all-zero word → 0; otherwise unsupported (`None`).
pub fn choose_issi(supported: u32) -> Option<u16> {
    if supported & 2 != 0 {
        Some(1)
    } else if supported & 1 != 0 || supported == 0 {
        Some(0)
    } else {
        None
    }
}

/// Register id of HOST_ENDIANNESS for ACCESS_REG. [ref §7.6](crate::reference) step 7.
pub const REG_HOST_ENDIANNESS: u16 = 0x7004;

/// ACCESS_REG (0x805) write of HOST_ENDIANNESS: register id at byte 0x0a,
/// argument 0 at 0x0c ([`access_register_in`]), register data from 0x10
/// whose first byte is `he` ([`host_endianness_reg::HE`]: 0x00
/// little-endian host, 0x80 big-endian). [ref §7.6](crate::reference) step 7.
pub fn set_host_endianness(b: &mut [u8]) -> Req {
    let in_len = REG_DATA + host_endianness_reg::LEN;
    hdr(b, op::ACCESS_REG, 0, in_len);
    access_register_in::REGISTER_ID.set(b, 0, REG_HOST_ENDIANNESS as u32);
    access_register_in::ARGUMENT.set(b, 0, 0);
    let he = if cfg!(target_endian = "big") {
        0x80
    } else {
        0x00
    };
    host_endianness_reg::HE.set(b, REG_DATA, he);
    Req {
        opcode: op::ACCESS_REG,
        in_len,
        out_len: REG_DATA + host_endianness_reg::LEN,
    }
}

// ---- pages ----------------------------------------------------------

/// QUERY_PAGES op_mod ([ref §7.7](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum PagesKind {
    /// 1: pages needed before INIT_HCA's capability setup.
    Boot = 1,
    /// 2: pages needed by INIT_HCA.
    Init = 2,
    /// 3: pages wanted after init (kernel).
    PostInit = 3,
}

/// QUERY_PAGES (0x107). [ref §7.7](crate::reference).
pub fn query_pages(b: &mut [u8], kind: PagesKind) -> Req {
    simple(b, op::QUERY_PAGES, kind as u16)
}
/// QUERY_PAGES output: (function_id, num_pages; negative = FW returns
/// pages; [`query_pages_out`]).
pub fn parse_query_pages(out: &[u8]) -> (u16, i32) {
    (
        query_pages_out::FUNCTION_ID.get(out, 0) as u16,
        query_pages_out::NUM_PAGES.get(out, 0) as i32,
    )
}

/// MANAGE_PAGES op_mod ([ref §7.7](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum ManagePagesOp {
    /// 0: driver cannot give pages.
    CantGive = 0,
    /// 1: give pages.
    Give = 1,
    /// 2: take pages back.
    Take = 2,
}

/// Most page addresses one MANAGE_PAGES message carries with the
/// preallocated mailboxes.
pub const MAX_PAGES_PER_CMD: usize = (super::queue::MAX_MSG - HDR_LEN) / 8;

/// MANAGE_PAGES GIVE (0x108, op_mod 1) of `pages` (BE64 addresses from 0x10,
/// [`manage_pages_in::PAS`]). At most [`MAX_PAGES_PER_CMD`] are used.
/// [ref §7.7](crate::reference).
pub fn manage_pages_give(b: &mut [u8], function_id: u16, pages: &[u64]) -> Req {
    let n = pages.len().min(MAX_PAGES_PER_CMD);
    let in_len = manage_pages_in::PAS + 8 * n;
    hdr(b, op::MANAGE_PAGES, ManagePagesOp::Give as u16, in_len);
    manage_pages_in::FUNCTION_ID.set(b, 0, function_id as u32);
    manage_pages_in::INPUT_NUM_ENTRIES.set(b, 0, n as u32);
    for (i, p) in pages[..n].iter().enumerate() {
        put64(b, manage_pages_in::PAS + 8 * i, *p);
    }
    Req {
        opcode: op::MANAGE_PAGES,
        in_len,
        out_len: HDR_LEN,
    }
}
/// MANAGE_PAGES TAKE (op_mod 2) asking for `count` pages back. [ref §7.7](crate::reference).
pub fn manage_pages_take(b: &mut [u8], function_id: u16, count: u32) -> Req {
    let n = (count as usize).min(MAX_PAGES_PER_CMD);
    hdr(b, op::MANAGE_PAGES, ManagePagesOp::Take as u16, HDR_LEN);
    manage_pages_in::FUNCTION_ID.set(b, 0, function_id as u32);
    manage_pages_in::INPUT_NUM_ENTRIES.set(b, 0, n as u32);
    Req {
        opcode: op::MANAGE_PAGES,
        in_len: HDR_LEN,
        out_len: manage_pages_out::PAS + 8 * n,
    }
}
/// MANAGE_PAGES CANT_GIVE (op_mod 0): refuse a page request. [ref §7.7](crate::reference).
pub fn manage_pages_cant_give(b: &mut [u8], function_id: u16) -> Req {
    let r = simple(b, op::MANAGE_PAGES, ManagePagesOp::CantGive as u16);
    manage_pages_in::FUNCTION_ID.set(b, 0, function_id as u32);
    r
}
/// MANAGE_PAGES output: the number of returned pages (byte 0x08,
/// [`manage_pages_out::OUTPUT_NUM_ENTRIES`]), bounded by what the output
/// buffer holds; page `i` is at `0x10 + 8·i`.
pub fn parse_manage_pages(out: &[u8]) -> Result<usize, CmdError> {
    let n = manage_pages_out::OUTPUT_NUM_ENTRIES.get(out, 0) as usize;
    let room = out.len().saturating_sub(manage_pages_out::PAS) / 8;
    if n > room {
        return Err(CmdError::BadOutput {
            opcode: op::MANAGE_PAGES,
            field: "output_num_entries",
            value: n as u64,
        });
    }
    Ok(n)
}
/// Page `i` of a MANAGE_PAGES TAKE output.
pub fn manage_pages_entry(out: &[u8], i: usize) -> u64 {
    get64(out, manage_pages_out::PAS + 8 * i)
}

// ---- capabilities -----------------------------------------------------

/// Capability type ([ref §7.6](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum CapType {
    /// 0 general.
    General = 0,
    /// 2 ODP.
    Odp = 2,
    /// 3 atomic.
    Atomic = 3,
    /// 4 RoCE.
    Roce = 4,
    /// 0x20 general-2.
    General2 = 0x20,
}

/// The RoCE capability bits the driver uses (cap type 4, dword 0; linux
/// `mlx5_ifc.h` roce_cap: roce_apm bit 31, sw_r_roce_src_udp_port bit 27,
/// fl_rc_qp_when_roce_disabled bit 26, fl_rc_qp_when_roce_enabled bit 25).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoceCaps {
    /// The RoCE UDP source port may be set by software.
    pub sw_r_roce_src_udp_port: bool,
    /// RC QPs may use force-loopback (`fl`) while RoCE is disabled.
    pub fl_rc_qp_when_roce_disabled: bool,
    /// RC QPs may use force-loopback (`fl`) while RoCE is enabled.
    pub fl_rc_qp_when_roce_enabled: bool,
}

/// Parses the RoCE capability area (QUERY_HCA_CAP output from
/// [`CAP_OFFSET`]); short input reads as zeros.
pub fn parse_roce_caps(cap: &[u8]) -> RoceCaps {
    let b0 = cap.first().copied().unwrap_or(0);
    RoceCaps {
        sw_r_roce_src_udp_port: b0 & 0x08 != 0,
        fl_rc_qp_when_roce_disabled: b0 & 0x04 != 0,
        fl_rc_qp_when_roce_enabled: b0 & 0x02 != 0,
    }
}

/// QUERY_HCA_CAP (0x100), op_mod = (type << 1) | current. [ref §7.6](crate::reference).
pub fn query_hca_cap(b: &mut [u8], cap: CapType, current: bool) -> Req {
    let mut r = simple(b, op::QUERY_HCA_CAP, ((cap as u16) << 1) | current as u16);
    r.out_len = CAP_OFFSET + CAP_LEN;
    r
}
/// SET_HCA_CAP (0x109), op_mod = type << 1, capability copied from `caps`
/// (at most 4096 bytes) to byte 0x10. [ref §7.6](crate::reference) step 8.
pub fn set_hca_cap(b: &mut [u8], cap: CapType, caps: &[u8]) -> Req {
    let in_len = CAP_OFFSET + CAP_LEN;
    hdr(b, op::SET_HCA_CAP, (cap as u16) << 1, in_len);
    let n = caps.len().min(CAP_LEN);
    if let Some(d) = b.get_mut(CAP_OFFSET..CAP_OFFSET + n) {
        d.copy_from_slice(&caps[..n]);
    }
    Req {
        opcode: op::SET_HCA_CAP,
        in_len,
        out_len: HDR_LEN,
    }
}

// ---- UAR / PD -------------------------------------------------------

/// ALLOC_UAR (0x802); output uar index at `dw2[23:0]`. [ref §7.8](crate::reference).
pub fn alloc_uar(b: &mut [u8]) -> Req {
    simple(b, op::ALLOC_UAR, 0)
}
/// DEALLOC_UAR (0x803) of `uar` (`dw2[23:0]`).
pub fn dealloc_uar(b: &mut [u8], uar: u32) -> Req {
    let r = simple(b, op::DEALLOC_UAR, 0);
    cmd_in::OBJ_ID.set(b, 0, uar);
    r
}
/// ALLOC_PD (0x800); output pd at `dw2[23:0]`. [ref §7.8](crate::reference).
pub fn alloc_pd(b: &mut [u8]) -> Req {
    simple(b, op::ALLOC_PD, 0)
}
/// DEALLOC_PD (0x801) of `pd` (`dw2[23:0]`).
pub fn dealloc_pd(b: &mut [u8], pd: u32) -> Req {
    let r = simple(b, op::DEALLOC_PD, 0);
    cmd_in::OBJ_ID.set(b, 0, pd);
    r
}

/// Destroy-style command carrying a 24-bit object number at `dw2[23:0]`
/// (DESTROY_MKEY/CQ/QP/SRQ, 2ERR_QP, 2RST_QP, QUERY_QP).
pub fn with_obj(b: &mut [u8], opcode: u16, id: u32) -> Req {
    let r = simple(b, opcode, 0);
    cmd_in::OBJ_ID.set(b, 0, id);
    r
}

// ---- memory keys ------------------------------------------------------

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

/// CREATE_MKEY (0x200). [ref §7.12](crate::reference).
pub fn create_mkey(b: &mut [u8], p: &MkeyParams) -> Req {
    let in_len = PAS_OFFSET + 8 * p.npages;
    hdr(b, op::CREATE_MKEY, 0, in_len);
    // a, rw, rr, lw, lr: mkc byte 2 bits 6..2 (dw0 bits 14..10).
    let a = MkeyAccess::from_ibv(p.access).union(MkeyAccess::LOCAL_READ);
    mkc::ACCESS.set(b, MKC, u32::from(a.bits()) >> 2);
    mkc::ACCESS_MODE_1_0.set(b, MKC, 1); // MTT
    mkc::QPN.set(b, MKC, 0xff_ffff); // not bound to a QP
    mkc::MKEY_7_0.set(b, MKC, p.variant as u32);
    mkc::PD.set(b, MKC, p.pd);
    mkc::START_ADDR.set(b, MKC, p.start_addr);
    mkc::LEN.set(b, MKC, p.len);
    let octwords = p.npages.div_ceil(2) as u32;
    mkc::TRANSLATIONS_OCTWORD_SIZE.set(b, MKC, octwords);
    mkc::LOG_PAGE_SIZE.set(b, MKC, p.log_page_size as u32);
    create_mkey_in::TRANSLATIONS_OCTWORD_ACTUAL_SIZE.set(b, 0, octwords);
    put_pas_sized(b, PAS_OFFSET, p.pages_iova, p.npages, p.log_page_size, 0x3);
    Req {
        opcode: op::CREATE_MKEY,
        in_len,
        out_len: HDR_LEN,
    }
}

// ---- EQ / CQ --------------------------------------------------------

/// CREATE_EQ parameters. [ref §7.9](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EqParams {
    /// log2 number of EQEs.
    pub log_eq_size: u8,
    /// UAR used for the EQ doorbell.
    pub uar_page: u32,
    /// MSI-X vector.
    pub intr: u8,
    /// Event types 0–63 as bits (`1 << type`).
    pub event_bitmask: u64,
    /// DMA address of the first 4 KiB page of the ring.
    pub pages_iova: u64,
    /// Number of 4 KiB pages.
    pub npages: usize,
}

/// CREATE_EQ (0x301); output eq number at byte 0x0b. [ref §7.9](crate::reference).
pub fn create_eq(b: &mut [u8], p: &EqParams) -> Req {
    let in_len = PAS_OFFSET + 8 * p.npages;
    hdr(b, op::CREATE_EQ, 0, in_len);
    eqc::LOG_EQ_SIZE.set(b, EQC, p.log_eq_size as u32);
    eqc::UAR_PAGE.set(b, EQC, p.uar_page);
    eqc::INTR.set(b, EQC, p.intr as u32);
    eqc::LOG_PAGE_SIZE.set(b, EQC, 0);
    create_eq_in::EVENT_BITMASK.set(b, 0, p.event_bitmask);
    put_pas(b, PAS_OFFSET, p.pages_iova, p.npages, 0);
    Req {
        opcode: op::CREATE_EQ,
        in_len,
        out_len: HDR_LEN,
    }
}
/// CREATE_EQ output: eq number (byte 0x0b).
pub fn parse_create_eq(out: &[u8]) -> u8 {
    cmd_in::EQ_NUMBER.get(out, 0) as u8
}
/// DESTROY_EQ (0x302) of `eqn` (byte 0x0b).
pub fn destroy_eq(b: &mut [u8], eqn: u8) -> Req {
    let r = simple(b, op::DESTROY_EQ, 0);
    cmd_in::EQ_NUMBER.set(b, 0, eqn as u32);
    r
}

/// CREATE_CQ parameters. [ref §7.10](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqParams {
    /// log2 number of CQEs.
    pub log_cq_size: u8,
    /// 0 = 64-byte CQEs, 1 = 128-byte.
    pub cqe_sz: u8,
    /// UAR index used for arming.
    pub uar_page: u32,
    /// Completion EQ number.
    pub c_eqn: u8,
    /// Doorbell record DMA address.
    pub dbr_addr: u64,
    /// DMA address of the first 4 KiB page of the ring.
    pub pages_iova: u64,
    /// Number of 4 KiB pages.
    pub npages: usize,
}

/// CREATE_CQ (0x400); output cqn at `dw2[23:0]`. [ref §7.10](crate::reference).
pub fn create_cq(b: &mut [u8], p: &CqParams) -> Req {
    let in_len = PAS_OFFSET + 8 * p.npages;
    hdr(b, op::CREATE_CQ, 0, in_len);
    cqc::CQE_SZ.set(b, CQC, p.cqe_sz as u32);
    cqc::LOG_CQ_SIZE.set(b, CQC, p.log_cq_size as u32);
    cqc::UAR_PAGE.set(b, CQC, p.uar_page);
    cqc::C_EQN.set(b, CQC, p.c_eqn as u32);
    cqc::LOG_PAGE_SIZE.set(b, CQC, 0);
    cqc::DBR_ADDR.set(b, CQC, p.dbr_addr);
    put_pas(b, PAS_OFFSET, p.pages_iova, p.npages, 0);
    Req {
        opcode: op::CREATE_CQ,
        in_len,
        out_len: HDR_LEN,
    }
}

// ---- QP ---------------------------------------------------------------

/// mlx5 hardware QP state, qpc.state ([ref §6.1](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HwQpState {
    /// 0 RST.
    Reset,
    /// 1 INIT.
    Init,
    /// 2 RTR.
    Rtr,
    /// 3 RTS.
    Rts,
    /// 4 SQER.
    SqErr,
    /// 5 SQD.
    Sqd,
    /// 6 ERR.
    Err,
    /// 7 SQ_DRAINING.
    SqDraining,
    /// 9 SUSPENDED.
    Suspended,
    /// Anything else.
    Other(u8),
}

impl HwQpState {
    /// Decodes the 4-bit field. [ref §6.1](crate::reference).
    pub const fn from_bits(v: u8) -> Self {
        match v {
            0 => HwQpState::Reset,
            1 => HwQpState::Init,
            2 => HwQpState::Rtr,
            3 => HwQpState::Rts,
            4 => HwQpState::SqErr,
            5 => HwQpState::Sqd,
            6 => HwQpState::Err,
            7 => HwQpState::SqDraining,
            9 => HwQpState::Suspended,
            o => HwQpState::Other(o),
        }
    }
    /// The 4-bit encoding. [ref §6.1](crate::reference).
    pub const fn bits(self) -> u8 {
        match self {
            HwQpState::Reset => 0,
            HwQpState::Init => 1,
            HwQpState::Rtr => 2,
            HwQpState::Rts => 3,
            HwQpState::SqErr => 4,
            HwQpState::Sqd => 5,
            HwQpState::Err => 6,
            HwQpState::SqDraining => 7,
            HwQpState::Suspended => 9,
            HwQpState::Other(o) => o,
        }
    }
}

/// CREATE_QP parameters. [ref §7.11](crate::reference) ("Kernel create … fills").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpParams {
    /// Service type (`qpc.st`): only the QP types the command path creates
    /// have one ([`crate::qp::QpType::service_type`]; `Device::create_qp`
    /// refuses the others before any command).
    pub st: ServiceType,
    /// Protection domain.
    pub pd: u32,
    /// UAR index for the send doorbell.
    pub uar_page: u32,
    /// log2 SQ WQEBBs (ignored when `no_sq`).
    pub log_sq_size: u8,
    /// No send queue.
    pub no_sq: bool,
    /// log2 RQ WQEs (0 with an SRQ).
    pub log_rq_size: u8,
    /// RQ WQE shift − 4.
    pub log_rq_stride: u8,
    /// Receive through this SRQ instead of an RQ.
    pub srqn: Option<u32>,
    /// Send CQ.
    pub cqn_snd: u32,
    /// Receive CQ.
    pub cqn_rcv: u32,
    /// Doorbell record DMA address.
    pub dbr_addr: u64,
    /// User index reported in CQEs (CQE version 1).
    pub user_index: u32,
    /// DMA address of the first 4 KiB page of the QP buffer (RQ then SQ).
    pub pages_iova: u64,
    /// Number of 4 KiB pages.
    pub npages: usize,
}

/// CREATE_QP (0x500); output qpn at `dw2[23:0]`. [ref §7.11](crate::reference).
pub fn create_qp(b: &mut [u8], p: &QpParams) -> Req {
    let in_len = PAS_OFFSET + 8 * p.npages;
    hdr(b, op::CREATE_QP, 0, in_len);
    qpc::ST.set(b, QPC, p.st.code() as u32);
    qpc::PM_STATE.set(b, QPC, 3); // migrated
    qpc::PD.set(b, QPC, p.pd);
    qpc::LOG_RQ_SIZE.set(b, QPC, p.log_rq_size as u32);
    qpc::LOG_RQ_STRIDE.set(b, QPC, p.log_rq_stride as u32);
    qpc::NO_SQ.set(b, QPC, p.no_sq as u32);
    if !p.no_sq {
        qpc::LOG_SQ_SIZE.set(b, QPC, p.log_sq_size as u32);
    }
    qpc::UAR_PAGE.set(b, QPC, p.uar_page);
    qpc::USER_INDEX.set(b, QPC, p.user_index);
    qpc::LOG_PAGE_SIZE.set(b, QPC, 0);
    qpc::CQN_SND.set(b, QPC, p.cqn_snd);
    qpc::CQN_RCV.set(b, QPC, p.cqn_rcv);
    qpc::DBR_ADDR.set(b, QPC, p.dbr_addr);
    if let Some(srqn) = p.srqn {
        qpc::RQ_TYPE.set(b, QPC, 1); // SRQ
        qpc::SRQN_RMPN_XRQN.set(b, QPC, srqn);
    }
    put_pas(b, PAS_OFFSET, p.pages_iova, p.npages, 0);
    Req {
        opcode: op::CREATE_QP,
        in_len,
        out_len: HDR_LEN,
    }
}

/// Primary address path fields ([ref §7.11](crate::reference) "ads").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddressPath {
    /// Force loopback.
    pub fl: bool,
    /// P_Key index.
    pub pkey_index: u16,
    /// GRH present.
    pub grh: bool,
    /// Remote LID (IB).
    pub rlid: u16,
    /// Source GID index.
    pub sgid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Remote GID / IP.
    pub rgid: [u8; 16],
    /// UDP source port (RoCEv2).
    pub udp_sport: u16,
    /// Service level.
    pub sl: u8,
    /// Port number (1-based).
    pub port: u8,
    /// Remote MAC (RoCE).
    pub rmac: [u8; 6],
}

fn put_path(b: &mut [u8], p: &AddressPath) {
    let a = QPC_PATH;
    ads::FL.set(b, a, p.fl as u32);
    ads::PKEY_INDEX.set(b, a, p.pkey_index as u32);
    ads::GRH.set(b, a, p.grh as u32);
    ads::RLID.set(b, a, p.rlid as u32);
    ads::SRC_ADDR_INDEX.set(b, a, p.sgid_index as u32);
    ads::HOP_LIMIT.set(b, a, p.hop_limit as u32);
    let rgid = a + ads::RGID_RIP;
    if let Some(d) = b.get_mut(rgid..rgid + ads::RGID_RIP_LEN) {
        d.copy_from_slice(&p.rgid);
    }
    ads::UDP_SPORT.set(b, a, p.udp_sport as u32);
    ads::SL.set(b, a, p.sl as u32);
    ads::VHCA_PORT_NUM.set(b, a, p.port as u32);
    let [m0, m1, m2, m3, m4, m5] = p.rmac;
    ads::RMAC_47_32.set(b, a, u16::from_be_bytes([m0, m1]) as u32);
    ads::RMAC_31_0.set(b, a, u32::from_be_bytes([m2, m3, m4, m5]));
}

fn modify(b: &mut [u8], opcode: u16, qpn: u32) -> Req {
    let in_len = PAS_OFFSET;
    hdr(b, opcode, 0, in_len);
    cmd_in::OBJ_ID.set(b, 0, qpn);
    // No optional parameters (ref §7.11 minimal sequence).
    modify_qp_in::OPT_PARAM_MASK.set(b, 0, 0);
    Req {
        opcode,
        in_len,
        out_len: HDR_LEN,
    }
}

/// RESET → INIT attributes ([ref §6.2](crate::reference): PKEY_INDEX, PORT, ACCESS_FLAGS; UD:
/// QKEY).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rst2Init {
    /// Port (1-based).
    pub port: u8,
    /// P_Key index.
    pub pkey_index: u16,
    /// Remote read enable.
    pub remote_read: bool,
    /// Remote write enable.
    pub remote_write: bool,
    /// Remote atomic enable.
    pub remote_atomic: bool,
    /// Q_Key (UD only).
    pub qkey: u32,
}

/// RST2INIT_QP (0x502). [ref §6.3, §7.11](crate::reference).
pub fn rst2init(b: &mut [u8], qpn: u32, a: &Rst2Init) -> Req {
    let r = modify(b, op::RST2INIT_QP, qpn);
    qpc::PM_STATE.set(b, QPC, 3); // migrated
    ads::PKEY_INDEX.set(b, QPC_PATH, a.pkey_index as u32);
    ads::VHCA_PORT_NUM.set(b, QPC_PATH, a.port as u32);
    qpc::RRE.set(b, QPC, a.remote_read as u32);
    qpc::RWE.set(b, QPC, a.remote_write as u32);
    qpc::RAE.set(b, QPC, a.remote_atomic as u32);
    qpc::Q_KEY.set(b, QPC, a.qkey);
    r
}

/// INIT → RTR attributes ([ref §6.2](crate::reference) RC: AV, PATH_MTU, DEST_QPN, RQ_PSN,
/// MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Init2Rtr {
    /// IB MTU enum (1 = 256 … 5 = 4096).
    pub mtu: u8,
    /// log2 max message size.
    pub log_msg_max: u8,
    /// Destination QP number.
    pub remote_qpn: u32,
    /// Receive PSN.
    pub rq_psn: u32,
    /// log2 max_dest_rd_atomic.
    pub log_rra_max: u8,
    /// Minimum RNR NAK timer.
    pub min_rnr_nak: u8,
    /// Address vector.
    pub path: AddressPath,
}

/// INIT2RTR_QP (0x503). [ref §6.3, §7.11](crate::reference).
pub fn init2rtr(b: &mut [u8], qpn: u32, a: &Init2Rtr) -> Req {
    let r = modify(b, op::INIT2RTR_QP, qpn);
    qpc::MTU.set(b, QPC, a.mtu as u32);
    qpc::LOG_MSG_MAX.set(b, QPC, a.log_msg_max as u32);
    qpc::REMOTE_QPN.set(b, QPC, a.remote_qpn);
    put_path(b, &a.path);
    qpc::LOG_RRA_MAX.set(b, QPC, a.log_rra_max as u32);
    qpc::MIN_RNR_NAK.set(b, QPC, a.min_rnr_nak as u32);
    qpc::NEXT_RCV_PSN.set(b, QPC, a.rq_psn);
    r
}

/// RTR → RTS attributes ([ref §6.2](crate::reference) RC: TIMEOUT, RETRY_CNT, RNR_RETRY,
/// SQ_PSN, MAX_QP_RD_ATOMIC).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rtr2Rts {
    /// Send PSN.
    pub sq_psn: u32,
    /// Transport retry count (3 bits).
    pub retry_count: u8,
    /// RNR retry count (3 bits).
    pub rnr_retry: u8,
    /// Local ACK timeout (5 bits).
    pub ack_timeout: u8,
    /// log2 max_rd_atomic.
    pub log_sra_max: u8,
}

/// RTR2RTS_QP (0x504). [ref §6.3, §7.11](crate::reference).
pub fn rtr2rts(b: &mut [u8], qpn: u32, a: &Rtr2Rts) -> Req {
    let r = modify(b, op::RTR2RTS_QP, qpn);
    ads::ACK_TIMEOUT.set(b, QPC_PATH, a.ack_timeout as u32);
    qpc::LOG_ACK_REQ_FREQ.set(b, QPC, 0);
    qpc::LOG_SRA_MAX.set(b, QPC, a.log_sra_max as u32);
    qpc::RETRY_COUNT.set(b, QPC, a.retry_count as u32);
    qpc::RNR_RETRY.set(b, QPC, a.rnr_retry as u32);
    qpc::NEXT_SEND_PSN.set(b, QPC, a.sq_psn);
    r
}

/// 2ERR_QP (0x507). [ref §6.3](crate::reference).
pub fn qp_2err(b: &mut [u8], qpn: u32) -> Req {
    with_obj(b, op::QP_2ERR, qpn)
}
/// 2RST_QP (0x50a). [ref §6.3](crate::reference).
pub fn qp_2rst(b: &mut [u8], qpn: u32) -> Req {
    with_obj(b, op::QP_2RST, qpn)
}
/// QUERY_QP (0x50b); output qpc at byte 0x18.
pub fn query_qp(b: &mut [u8], qpn: u32) -> Req {
    let mut r = with_obj(b, op::QUERY_QP, qpn);
    r.out_len = PAS_OFFSET;
    r
}

/// The QUERY_QP fields the driver uses ([ref §7.11](crate::reference) offsets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpQuery {
    /// State.
    pub state: HwQpState,
    /// Service type (qpc.st).
    pub st: u8,
    /// Protection domain.
    pub pd: u32,
    /// MTU enum.
    pub mtu: u8,
    /// Remote QPN.
    pub remote_qpn: u32,
    /// Next send PSN.
    pub sq_psn: u32,
    /// Next receive PSN.
    pub rq_psn: u32,
    /// Send CQ.
    pub cqn_snd: u32,
    /// Receive CQ.
    pub cqn_rcv: u32,
    /// Port.
    pub port: u8,
}

/// Parses a QUERY_QP output.
pub fn parse_query_qp(out: &[u8]) -> QpQuery {
    QpQuery {
        state: HwQpState::from_bits(qpc::STATE.get(out, QPC) as u8),
        st: qpc::ST.get(out, QPC) as u8,
        pd: qpc::PD.get(out, QPC),
        mtu: qpc::MTU.get(out, QPC) as u8,
        remote_qpn: qpc::REMOTE_QPN.get(out, QPC),
        sq_psn: qpc::NEXT_SEND_PSN.get(out, QPC),
        rq_psn: qpc::NEXT_RCV_PSN.get(out, QPC),
        cqn_snd: qpc::CQN_SND.get(out, QPC),
        cqn_rcv: qpc::CQN_RCV.get(out, QPC),
        port: ads::VHCA_PORT_NUM.get(out, QPC_PATH) as u8,
    }
}

// ---- SRQ ------------------------------------------------------------

/// CREATE_SRQ parameters (srqc per linux `mlx5_ifc.h` srqc_bits:
/// log_srq_size `dw0[27:24]`, log_rq_stride `dw1[26:24]`, cqn `dw2[23:0]`,
/// log_page_size `dw4[29:24]`, pd `dw6[23:0]`, lwm `dw7[31:16]`, dbr_addr byte 0x28).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqParams {
    /// log2 number of WQEs.
    pub log_srq_size: u8,
    /// WQE shift − 4.
    pub log_rq_stride: u8,
    /// Protection domain.
    pub pd: u32,
    /// CQ (for XRC; 0 otherwise).
    pub cqn: u32,
    /// Limit watermark.
    pub lwm: u16,
    /// Doorbell record DMA address.
    pub dbr_addr: u64,
    /// DMA address of the first 4 KiB page.
    pub pages_iova: u64,
    /// Number of 4 KiB pages.
    pub npages: usize,
}

/// CREATE_SRQ (0x700); output srqn at `dw2[23:0]`.
pub fn create_srq(b: &mut [u8], p: &SrqParams) -> Req {
    let in_len = PAS_OFFSET + 8 * p.npages;
    hdr(b, op::CREATE_SRQ, 0, in_len);
    srqc::LOG_SRQ_SIZE.set(b, SRQC, p.log_srq_size as u32);
    srqc::LOG_RQ_STRIDE.set(b, SRQC, p.log_rq_stride as u32);
    srqc::CQN.set(b, SRQC, p.cqn);
    srqc::LOG_PAGE_SIZE.set(b, SRQC, 0);
    srqc::PD.set(b, SRQC, p.pd);
    srqc::LWM.set(b, SRQC, p.lwm as u32);
    srqc::DBR_ADDR.set(b, SRQC, p.dbr_addr);
    put_pas(b, PAS_OFFSET, p.pages_iova, p.npages, 0);
    Req {
        opcode: op::CREATE_SRQ,
        in_len,
        out_len: HDR_LEN,
    }
}

// ---- port -------------------------------------------------------------

/// QUERY_VPORT_STATE (0x750) for the function's own vport; output state
/// in the low nibble of byte 0x0f, admin state in the high nibble (linux
/// `mlx5_ifc.h` query_vport_state_out).
pub fn query_vport_state(b: &mut [u8]) -> Req {
    simple(b, op::QUERY_VPORT_STATE, 0)
}
/// QUERY_VPORT_STATE output: (state, admin_state); 1 = up, 0 = down
/// ([`query_vport_state_out`]).
pub fn parse_query_vport_state(out: &[u8]) -> (u8, u8) {
    (
        query_vport_state_out::STATE.get(out, 0) as u8,
        query_vport_state_out::ADMIN_STATE.get(out, 0) as u8,
    )
}

// ---- NIC vport context (RoCE enable) ------------------------------------

/// Byte offset of `nic_vport_context` in MODIFY_NIC_VPORT_CONTEXT's input
/// (after the 0x780-bit reserved area; linux `mlx5_ifc.h`
/// modify_nic_vport_context_in).
pub use modify_nic_vport_context_in::NIC_VPORT_CONTEXT as MODIFY_VPORT_CTX_OFFSET;
/// Byte offset of `nic_vport_context` in QUERY_NIC_VPORT_CONTEXT's output.
pub const QUERY_VPORT_CTX_OFFSET: usize = 0x10;
/// Bytes of `nic_vport_context` without its trailing address list.
pub const VPORT_CTX_LEN: usize = 0x100;
/// `field_select.roce_en` (bit 1 of the BE32 at byte 0x0c).
pub use modify_nic_vport_context_in::FIELD_SELECT_ROCE_EN;

/// MODIFY_NIC_VPORT_CONTEXT (0x755) setting only `roce_en` of the own
/// vport: field_select.roce_en at 0x0c, nic_vport_context at 0x100 with
/// roce_en in bit 0 of its first dword (linux `mlx5_ifc.h`
/// modify_nic_vport_context_in / nic_vport_context; [ref §7.6](crate::reference): VFIO sets
/// roce_en = 1 on Ethernet ports after INIT_HCA — without it the NIC
/// refuses RDMA QPs on the port and treats RoCE packets as plain Ethernet).
pub fn modify_nic_vport_roce(b: &mut [u8], enable: bool) -> Req {
    let in_len = MODIFY_VPORT_CTX_OFFSET + VPORT_CTX_LEN;
    hdr(b, op::MODIFY_NIC_VPORT_CONTEXT, 0, in_len);
    modify_nic_vport_context_in::FIELD_SELECT.set(b, 0, FIELD_SELECT_ROCE_EN);
    nic_vport::ROCE_EN.set(b, MODIFY_VPORT_CTX_OFFSET, enable as u32);
    Req {
        opcode: op::MODIFY_NIC_VPORT_CONTEXT,
        in_len,
        out_len: HDR_LEN,
    }
}

/// QUERY_NIC_VPORT_CONTEXT (0x754) of the own vport.
pub fn query_nic_vport_context(b: &mut [u8]) -> Req {
    hdr(b, op::QUERY_NIC_VPORT_CONTEXT, 0, HDR_LEN);
    Req {
        opcode: op::QUERY_NIC_VPORT_CONTEXT,
        in_len: HDR_LEN,
        out_len: QUERY_VPORT_CTX_OFFSET + VPORT_CTX_LEN,
    }
}

/// The `nic_vport_context` fields the driver uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NicVportContext {
    /// RoCE enabled on the vport (dw0 bit 0).
    pub roce_en: bool,
    /// Port MTU (bytes; bits 15:0 at byte 0x24).
    pub mtu: u16,
    /// System image GUID (64 bits at byte 0x28; linux
    /// `mlx5_query_nic_vport_system_image_guid`, what `ibv_devinfo` prints
    /// as `sys_image_guid` on an Ethernet port).
    pub system_image_guid: u64,
    /// Port GUID (64 bits at byte 0x30).
    pub port_guid: u64,
    /// Node GUID (64 bits at byte 0x38; linux
    /// `mlx5_query_nic_vport_node_guid`, `ibv_devinfo`'s `node_guid` on an
    /// Ethernet port).
    pub node_guid: u64,
    /// Permanent MAC address (mac_47_32 at 0xF6, mac_31_0 at 0xF8).
    pub permanent_mac: [u8; 6],
}

/// Parses a `nic_vport_context` (starting at byte 0 of `ctx`); short input
/// reads as zeros.
pub fn parse_nic_vport_context(ctx: &[u8]) -> NicVportContext {
    let mut permanent_mac = [0u8; 6];
    for (i, m) in permanent_mac.iter_mut().enumerate() {
        *m = ctx.get(nic_vport::PERMANENT_MAC + i).copied().unwrap_or(0);
    }
    NicVportContext {
        roce_en: nic_vport::ROCE_EN.get(ctx, 0) != 0,
        mtu: nic_vport::MTU.get(ctx, 0) as u16,
        system_image_guid: nic_vport::SYSTEM_IMAGE_GUID.get(ctx, 0),
        port_guid: nic_vport::PORT_GUID.get(ctx, 0),
        node_guid: nic_vport::NODE_GUID.get(ctx, 0),
        permanent_mac,
    }
}

// ---- adapter identity (QUERY_ADAPTER) -----------------------------------

/// Byte offset of `query_adapter_struct` in QUERY_ADAPTER's output (after
/// status, syndrome and 8 reserved bytes; linux `mlx5_ifc.h`
/// query_adapter_out).
pub use query_adapter_out::QUERY_ADAPTER_STRUCT;
/// Bytes of `query_adapter_struct` (`query_adapter_param_block`: 0x19
/// bytes before `ieee_vendor_id`, then `vsd_vendor_id`, 208 bytes of
/// `vsd`, 16 of `vsd_contd_psid`).
pub use query_adapter_param_block::LEN as QUERY_ADAPTER_STRUCT_LEN;

/// QUERY_ADAPTER (0x101): the adapter's vendor id and board id (linux
/// `drivers/net/ethernet/mellanox/mlx5/core/fw.c` mlx5_query_board_id,
/// mlx5_core_query_vendor_id).
pub fn query_adapter(b: &mut [u8]) -> Req {
    hdr(b, op::QUERY_ADAPTER, 0, HDR_LEN);
    Req {
        opcode: op::QUERY_ADAPTER,
        in_len: HDR_LEN,
        out_len: QUERY_ADAPTER_STRUCT + QUERY_ADAPTER_STRUCT_LEN,
    }
}

/// What QUERY_ADAPTER reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Adapter {
    /// IEEE vendor id (OUI; Mellanox 0x02c9), 24 bits.
    pub ieee_vendor_id: u32,
    /// The PSID bytes as the firmware wrote them (NUL-padded ASCII on real
    /// boards, e.g. `MT_0000000008`).
    pub psid: [u8; 16],
}

impl Adapter {
    /// The PSID as text: the bytes before the first NUL, `None` when that
    /// is empty or not printable ASCII (hostile or blank firmware data).
    pub fn board_id(&self) -> Option<&str> {
        let n = self.psid.iter().position(|&c| c == 0).unwrap_or(16);
        let s = &self.psid[..n];
        if s.is_empty() || !s.iter().all(|c| c.is_ascii_graphic()) {
            return None;
        }
        core::str::from_utf8(s).ok()
    }
}

/// Parses a QUERY_ADAPTER output (the whole mailbox, header included);
/// short output reads as zeros.
pub fn parse_query_adapter(out: &[u8]) -> Adapter {
    use query_adapter_param_block as q;
    let base = QUERY_ADAPTER_STRUCT;
    let mut psid = [0u8; q::VSD_CONTD_PSID_LEN];
    for (i, p) in psid.iter_mut().enumerate() {
        *p = out.get(base + q::VSD_CONTD_PSID + i).copied().unwrap_or(0);
    }
    Adapter {
        ieee_vendor_id: q::IEEE_VENDOR_ID.get(out, base),
        psid,
    }
}

// ---- HCA vport context (InfiniBand ports) -------------------------------

/// Byte offset of `hca_vport_context` in QUERY_HCA_VPORT_CONTEXT's output.
pub const QUERY_HCA_VPORT_CTX_OFFSET: usize = 0x10;
/// Bytes of `hca_vport_context` read (the fields parsed end at 0x6c; linux
/// `mlx5_ifc.h` hca_vport_context is 0x100 bytes).
pub const HCA_VPORT_CTX_LEN: usize = 0x100;

/// QUERY_HCA_VPORT_CONTEXT (0x762) of the own vport on 1-based `port`
/// (linux `drivers/net/ethernet/mellanox/mlx5/core/vport.c`
/// mlx5_query_hca_vport_context: `port_num` in `dw2[19:16]`, set only on
/// two-port devices; `None` leaves it 0).
pub fn query_hca_vport_context(b: &mut [u8], port: Option<u8>) -> Req {
    let in_len = HDR_LEN;
    hdr(b, op::QUERY_HCA_VPORT_CONTEXT, 0, in_len);
    // The function's own vport.
    hca_vport::IN_OTHER_VPORT.set(b, 0, 0);
    hca_vport::IN_VPORT_NUMBER.set(b, 0, 0);
    if let Some(p) = port {
        hca_vport::IN_PORT_NUM.set(b, 0, p as u32);
    }
    Req {
        opcode: op::QUERY_HCA_VPORT_CONTEXT,
        in_len,
        out_len: QUERY_HCA_VPORT_CTX_OFFSET + HCA_VPORT_CTX_LEN,
    }
}

/// The `hca_vport_context` fields `ibv_devinfo` shows for an InfiniBand
/// port (linux `mlx5_ifc.h` hca_vport_context; `mlx5_query_hca_port` in
/// `drivers/infiniband/hw/mlx5/main.c` copies them into ib_port_attr).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HcaVportContext {
    /// Physical port state (`dw8[15:12]`; 5 = LinkUp).
    pub port_physical_state: u8,
    /// Port state (`dw8[7:4]`).
    pub port_state: u8,
    /// Vport state (`dw8[3:0]`): the IB port state the kernel reports
    /// (1 Down, 2 Init, 3 Armed, 4 Active).
    pub vport_state: u8,
    /// System image GUID (byte 0x28).
    pub system_image_guid: u64,
    /// Port GUID (byte 0x30).
    pub port_guid: u64,
    /// Node GUID (byte 0x38).
    pub node_guid: u64,
    /// Capability mask 1 (byte 0x40).
    pub cap_mask1: u32,
    /// LID (`dw24[31:16]`).
    pub lid: u16,
    /// InitTypeReply (`dw24[11:8]`).
    pub init_type_reply: u8,
    /// LMC (`dw24[7:5]`).
    pub lmc: u8,
    /// Subnet timeout (`dw24[4:0]`).
    pub subnet_timeout: u8,
    /// Subnet manager LID (`dw25[31:16]`).
    pub sm_lid: u16,
    /// Subnet manager SL (`dw25[15:12]`).
    pub sm_sl: u8,
    /// Q_Key violation counter (`dw26[31:16]`).
    pub qkey_violation_counter: u16,
    /// P_Key violation counter (`dw26[15:0]`).
    pub pkey_violation_counter: u16,
}

/// Parses a `hca_vport_context` (starting at byte 0 of `ctx`); short input
/// reads as zeros.
pub fn parse_hca_vport_context(ctx: &[u8]) -> HcaVportContext {
    use hca_vport as h;
    let f = |field: Field| field.get(ctx, 0);
    HcaVportContext {
        port_physical_state: f(h::PORT_PHYSICAL_STATE) as u8,
        port_state: f(h::PORT_STATE) as u8,
        vport_state: f(h::VPORT_STATE) as u8,
        system_image_guid: h::SYSTEM_IMAGE_GUID.get(ctx, 0),
        port_guid: h::PORT_GUID.get(ctx, 0),
        node_guid: h::NODE_GUID.get(ctx, 0),
        cap_mask1: f(h::CAP_MASK1),
        lid: f(h::LID) as u16,
        init_type_reply: f(h::INIT_TYPE_REPLY) as u8,
        lmc: f(h::LMC) as u8,
        subnet_timeout: f(h::SUBNET_TIMEOUT) as u8,
        sm_lid: f(h::SM_LID) as u16,
        sm_sl: f(h::SM_SL) as u8,
        qkey_violation_counter: f(h::QKEY_VIOLATION_COUNTER) as u16,
        pkey_violation_counter: f(h::PKEY_VIOLATION_COUNTER) as u16,
    }
}

// ---- port MTU (PMTU register) -----------------------------------------

/// ACCESS_REG op_mod for a register write (linux `mlx5_ifc.h`
/// access_register_in; [ref §7.6](crate::reference) step 7).
pub const ACCESS_REG_WRITE: u16 = 0;
/// ACCESS_REG op_mod for a register read (linux `mlx5_ifc.h`
/// access_register_in).
pub const ACCESS_REG_READ: u16 = 1;
/// Offset of the register data in ACCESS_REG input and output ([ref §7.6](crate::reference)
/// step 7; linux `mlx5_ifc.h` access_register_in/out).
pub use access_register_in::REGISTER_DATA as REG_DATA;

/// Register id of PMTU, the port MTU register (linux
/// `include/linux/mlx5/driver.h` MLX5_REG_PMTU).
pub const REG_PMTU: u16 = 0x5003;
/// Bytes of the PMTU register (linux `mlx5_ifc.h` pmtu_reg: four dwords).
pub const PMTU_LEN: usize = 0x10;

/// ACCESS_REG (0x805) read of PMTU for 1-based `port`, as linux
/// `drivers/net/ethernet/mellanox/mlx5/core/port.c` (mlx5_query_port_mtu)
/// issues it: op_mod 1 (read), register_id 0x5003 at byte 0x0a, argument 0
/// at 0x0c, register data from 0x10 with `local_port` in `dw0[23:16]`
/// (byte 0x11). Output: header, then the register image at 0x10, parsed by
/// [`parse_pmtu`].
pub fn query_pmtu(b: &mut [u8], port: u8) -> Req {
    let in_len = REG_DATA + PMTU_LEN;
    hdr(b, op::ACCESS_REG, ACCESS_REG_READ, in_len);
    access_register_in::REGISTER_ID.set(b, 0, REG_PMTU as u32);
    access_register_in::ARGUMENT.set(b, 0, 0);
    pmtu::LOCAL_PORT.set(b, REG_DATA, port as u32);
    Req {
        opcode: op::ACCESS_REG,
        in_len,
        out_len: REG_DATA + PMTU_LEN,
    }
}

/// The PMTU register (linux `mlx5_ifc.h` pmtu_reg). All MTUs are in bytes;
/// on an Ethernet port they are hardware MTUs (netdev MTU + 22, see
/// [`ETH_HW_MTU_OVERHEAD`]), on an InfiniBand port the IB MTU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pmtu {
    /// 1-based local port (`dw0[23:16]`).
    pub local_port: u8,
    /// Largest MTU the port supports (`dw1[31:16]`).
    pub max_mtu: u16,
    /// MTU the administrator configured (`dw2[31:16]`).
    pub admin_mtu: u16,
    /// MTU in effect (`dw3[31:16]`).
    pub oper_mtu: u16,
}

/// Parses an ACCESS_REG PMTU read output (register image at byte 0x10;
/// layout of linux `mlx5_ifc.h` pmtu_reg). Short outputs read as zero.
pub fn parse_pmtu(out: &[u8]) -> Pmtu {
    Pmtu {
        local_port: pmtu::LOCAL_PORT.get(out, REG_DATA) as u8,
        max_mtu: pmtu::MAX_MTU.get(out, REG_DATA) as u16,
        admin_mtu: pmtu::ADMIN_MTU.get(out, REG_DATA) as u16,
        oper_mtu: pmtu::OPER_MTU.get(out, REG_DATA) as u16,
    }
}

/// An InfiniBand MTU, `enum ib_mtu` / `ibv_mtu` (1 = 256 … 5 = 4096; the
/// qpc.mtu encoding of [ref §7.11](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum IbMtu {
    /// 256 bytes (1).
    Mtu256 = 1,
    /// 512 bytes (2).
    Mtu512 = 2,
    /// 1024 bytes (3).
    Mtu1024 = 3,
    /// 2048 bytes (4).
    Mtu2048 = 4,
    /// 4096 bytes (5).
    Mtu4096 = 5,
}

impl IbMtu {
    /// Every IB MTU, smallest first.
    pub const ALL: [IbMtu; 5] = [
        IbMtu::Mtu256,
        IbMtu::Mtu512,
        IbMtu::Mtu1024,
        IbMtu::Mtu2048,
        IbMtu::Mtu4096,
    ];

    /// The enum value (1 … 5), as `ibv_devinfo` prints it in parentheses.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The MTU in bytes: `256 << (code − 1)`.
    pub const fn bytes(self) -> u32 {
        256 << (self as u8 - 1)
    }

    /// The IB MTU of exactly `bytes` bytes, `None` for any other size (as
    /// linux `mlx5_mtu_to_ib_mtu` in `drivers/infiniband/hw/mlx5/main.c`
    /// treats an IB port's PMTU value).
    pub const fn from_bytes(bytes: u32) -> Option<IbMtu> {
        match bytes {
            256 => Some(IbMtu::Mtu256),
            512 => Some(IbMtu::Mtu512),
            1024 => Some(IbMtu::Mtu1024),
            2048 => Some(IbMtu::Mtu2048),
            4096 => Some(IbMtu::Mtu4096),
            _ => None,
        }
    }

    /// The IB MTU of code `c` (1 … 5), `None` otherwise.
    pub const fn from_code(c: u8) -> Option<IbMtu> {
        match c {
            1 => Some(IbMtu::Mtu256),
            2 => Some(IbMtu::Mtu512),
            3 => Some(IbMtu::Mtu1024),
            4 => Some(IbMtu::Mtu2048),
            5 => Some(IbMtu::Mtu4096),
            _ => None,
        }
    }

    /// The largest IB MTU not above `bytes` (capped at 4096), `None` below
    /// 256.
    pub const fn at_most(bytes: u32) -> Option<IbMtu> {
        if bytes >= 4096 {
            Some(IbMtu::Mtu4096)
        } else if bytes >= 2048 {
            Some(IbMtu::Mtu2048)
        } else if bytes >= 1024 {
            Some(IbMtu::Mtu1024)
        } else if bytes >= 512 {
            Some(IbMtu::Mtu512)
        } else if bytes >= 256 {
            Some(IbMtu::Mtu256)
        } else {
            None
        }
    }
}

/// Bytes an Ethernet port's hardware MTU (what PMTU reports) adds to the
/// netdev MTU: ETH_HLEN 14 + VLAN_HLEN 4 + ETH_FCS_LEN 4 (linux mlx5e
/// `MLX5E_SW2HW_MTU`).
pub const ETH_HW_MTU_OVERHEAD: u32 = 14 + 4 + 4;

/// RoCE headers a RoCE MTU must leave room for inside the netdev MTU:
/// GRH 40 + UDP 8 + BTH 12 + XRC extension 4 + AtomicETH 28 + ICRC 4
/// (linux `include/rdma/ib_addr.h` iboe_get_mtu).
pub const ROCE_HEADERS: u32 = 40 + 8 + 12 + 4 + 28 + 4;

/// The RoCE MTU of a netdev MTU: the largest IB MTU not above
/// `netdev_mtu − 96` ([`ROCE_HEADERS`]), at most 4096; `None` when not even
/// 256 bytes fit (the rule of linux iboe_get_mtu, which mlx5_ib uses for a
/// RoCE port's active MTU).
pub const fn roce_mtu(netdev_mtu: u32) -> Option<IbMtu> {
    IbMtu::at_most(netdev_mtu.saturating_sub(ROCE_HEADERS))
}

/// The RoCE MTU of an Ethernet port whose PMTU reports hardware MTU
/// `hw_mtu`: [`roce_mtu`] of `hw_mtu − 22` ([`ETH_HW_MTU_OVERHEAD`]).
pub const fn roce_mtu_of_hw_mtu(hw_mtu: u32) -> Option<IbMtu> {
    if hw_mtu < ETH_HW_MTU_OVERHEAD {
        return None;
    }
    roce_mtu(hw_mtu - ETH_HW_MTU_OVERHEAD)
}
