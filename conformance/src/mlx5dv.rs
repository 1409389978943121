//! The vendor header's own answers, through the C shim `c/shim.c` compiled
//! against `infiniband/mlx5dv.h` (Debian `libibverbs-dev`): its segment
//! setters, CQE getters, `sizeof`/`offsetof` values and constants, as safe
//! Rust functions. Built only when `build.rs` finds the header (otherwise
//! `cfg(bv_no_mlx5dv)` leaves it out).

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

mod ffi {
    use super::*;
    extern "C" {
        pub fn bv_shim_set_ctrl_seg(
            out: *mut u8,
            pi: u16,
            opcode: u8,
            opmod: u8,
            qp_num: u32,
            fm_ce_se: u8,
            ds: u8,
            signature: u8,
            imm: u32,
        );
        pub fn bv_shim_set_data_seg(out: *mut u8, length: u32, lkey: u32, address: u64);
        pub fn bv_shim_set_dgram_seg(
            out: *mut u8,
            key: u64,
            dqp_dct: u32,
            ext: u8,
            stat_rate_sl: u8,
            fl_mlid: u8,
            rlid: u16,
            rmac: *const u8,
            tclass: u8,
            hop_limit: u8,
            grh_gid_fl: u32,
            rgid: *const u8,
        );
        pub fn bv_shim_set_eth_seg(
            out: *mut u8,
            out_len: usize,
            cs_flags: u8,
            mss: u16,
            inline_hdr_sz: u16,
            hdr: *const u8,
        ) -> c_int;
        pub fn bv_shim_cqe_owner(cqe: *const u8) -> u8;
        pub fn bv_shim_cqe_se(cqe: *const u8) -> u8;
        pub fn bv_shim_cqe_format(cqe: *const u8) -> u8;
        pub fn bv_shim_cqe_opcode(cqe: *const u8) -> u8;
        pub fn bv_shim_layout_count() -> usize;
        pub fn bv_shim_layout_name(i: usize) -> *const c_char;
        pub fn bv_shim_layout_value(i: usize) -> usize;
        pub fn bv_shim_const(which: c_int) -> u32;
    }
}

/// `mlx5dv_set_ctrl_seg` on a zeroed 16-byte segment.
#[allow(clippy::too_many_arguments)]
pub fn c_ctrl_seg(
    pi: u16,
    opcode: u8,
    opmod: u8,
    qp_num: u32,
    fm_ce_se: u8,
    ds: u8,
    signature: u8,
    imm: u32,
) -> [u8; 16] {
    let mut out = [0u8; 16];
    // SAFETY: `out` is 16 writable bytes, the size of mlx5_wqe_ctrl_seg;
    // the shim copies the segment out with memcpy (no alignment needed).
    unsafe {
        ffi::bv_shim_set_ctrl_seg(
            out.as_mut_ptr(),
            pi,
            opcode,
            opmod,
            qp_num,
            fm_ce_se,
            ds,
            signature,
            imm,
        )
    };
    out
}

/// `mlx5dv_set_data_seg` on a zeroed 16-byte segment.
pub fn c_data_seg(length: u32, lkey: u32, address: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    // SAFETY: 16 writable bytes = sizeof(mlx5_wqe_data_seg).
    unsafe { ffi::bv_shim_set_data_seg(out.as_mut_ptr(), length, lkey, address) };
    out
}

/// `mlx5dv_set_dgram_seg` on a zeroed 48-byte segment.
#[allow(clippy::too_many_arguments)]
pub fn c_dgram_seg(
    key: u64,
    dqp_dct: u32,
    ext: u8,
    stat_rate_sl: u8,
    fl_mlid: u8,
    rlid: u16,
    rmac: [u8; 6],
    tclass: u8,
    hop_limit: u8,
    grh_gid_fl: u32,
    rgid: [u8; 16],
) -> [u8; 48] {
    let mut out = [0u8; 48];
    // SAFETY: 48 writable bytes = sizeof(mlx5_wqe_datagram_seg); rmac and
    // rgid point at 6 and 16 readable bytes, copied by the shim.
    unsafe {
        ffi::bv_shim_set_dgram_seg(
            out.as_mut_ptr(),
            key,
            dqp_dct,
            ext,
            stat_rate_sl,
            fl_mlid,
            rlid,
            rmac.as_ptr(),
            tclass,
            hop_limit,
            grh_gid_fl,
            rgid.as_ptr(),
        )
    };
    out
}

/// `mlx5dv_set_eth_seg` on a zeroed area of `out_len` bytes (the header
/// copy may run past the 32-byte segment). `None` if `hdr` does not fit.
pub fn c_eth_seg(out_len: usize, cs_flags: u8, mss: u16, hdr: &[u8]) -> Option<Vec<u8>> {
    let sz = u16::try_from(hdr.len()).ok()?;
    let mut out = vec![0u8; out_len];
    // SAFETY: `out` has out_len writable bytes and `hdr` hdr.len() readable
    // bytes; the shim checks 14 + hdr.len() <= out_len and its scratch size.
    let rc = unsafe {
        ffi::bv_shim_set_eth_seg(out.as_mut_ptr(), out_len, cs_flags, mss, sz, hdr.as_ptr())
    };
    (rc == 0).then_some(out)
}

/// The header's four CQE getters on a 64-byte CQE:
/// `(owner, se, format, opcode)`.
pub fn c_cqe_getters(cqe: &[u8; 64]) -> (u8, u8, u8, u8) {
    // SAFETY: `cqe` points at 64 readable bytes = sizeof(mlx5_cqe64); the
    // shim memcpys them into a local struct.
    unsafe {
        (
            ffi::bv_shim_cqe_owner(cqe.as_ptr()),
            ffi::bv_shim_cqe_se(cqe.as_ptr()),
            ffi::bv_shim_cqe_format(cqe.as_ptr()),
            ffi::bv_shim_cqe_opcode(cqe.as_ptr()),
        )
    }
}

/// The shim's layout table: `"struct"` → `sizeof`, `"struct.field"` →
/// `offsetof`, as compiled against the vendor header.
pub fn c_layouts() -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    // SAFETY: plain call returning a count.
    let n = unsafe { ffi::bv_shim_layout_count() };
    for i in 0..n {
        // SAFETY: i < count, so the shim returns a pointer to a static
        // NUL-terminated string literal.
        let name = unsafe { CStr::from_ptr(ffi::bv_shim_layout_name(i)) };
        // SAFETY: plain call, i < count.
        let v = unsafe { ffi::bv_shim_layout_value(i) };
        m.insert(name.to_string_lossy().into_owned(), v);
    }
    m
}

/// Header constants by name (see `bv_shim_const` in `c/shim.c`).
pub fn c_const(name: &str) -> u32 {
    const NAMES: [&str; 30] = [
        "MLX5_INVALID_LKEY",
        "MLX5_EXTENDED_UD_AV",
        "MLX5_WQE_CTRL_CQ_UPDATE",
        "MLX5_WQE_CTRL_SOLICITED",
        "MLX5_WQE_CTRL_FENCE",
        "MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE",
        "MLX5_SEND_WQE_BB",
        "MLX5_SEND_WQE_SHIFT",
        "MLX5_INLINE_SEG",
        "MLX5_ETH_WQE_L3_CSUM",
        "MLX5_ETH_WQE_L4_CSUM",
        "MLX5_WQE_UMR_CTRL_FLAG_INLINE",
        "MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE",
        "MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET",
        "MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN",
        "MLX5_WQE_MKEY_CONTEXT_FREE",
        "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC",
        "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE",
        "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ",
        "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE",
        "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_READ",
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN",
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR",
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY",
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN",
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_LOCAL_WRITE",
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_READ",
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_WRITE",
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_ATOMIC",
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE",
    ];
    let i = NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("unknown {name}"));
    // SAFETY: plain call with an in-range selector.
    unsafe { ffi::bv_shim_const(i as c_int) }
}
