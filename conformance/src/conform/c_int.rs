//! The C API's integer domain, for replaying vector files.
//!
//! The vendor's verbs take their sizes as C integers: `ibv_create_cq(ctx, int
//! cqe, …)` and `MLX5_CQE_SIZE` (`atoi`) are `int`; `struct ibv_qp_cap` and
//! `struct ibv_srq_attr` hold `uint32_t`s that a caller fills from `int`s;
//! `ibv_send_wr.num_sge` / `ibv_recv_wr.num_sge` are `int`. A vector may hold
//! any value those types take, negative ones included, so `conform` reads
//! every such column as a 64-bit number in `i32::MIN..=u32::MAX` and maps it
//! into bareverbs' `u32` sizing the way the C code converts it:
//!
//! * a negative value stored into a `uint32_t` field becomes `v mod 2^32`
//!   ([`to_c_u32`]) and then meets the provider's unsigned comparisons (e.g.
//!   `cap.max_send_wr > 0x7fffffff / max_sq_desc_sz`, `srq max_wr >
//!   max_srq_recv_wr`), which [`bareverbs::sizing`] reproduces on that `u32`;
//! * where the provider narrows a wider intermediate into an `int` or a
//!   `uint32_t` before comparing it (`inl_size` in `mlx5_calc_send_wqe`,
//!   `size` in `mlx5_calc_rcv_wqe`, `ncqe` in `create_cq`), this module
//!   computes the narrowed value and hands core the request that yields the
//!   same intermediate ([`send_inline_equivalent`], [`recv_wqe_bytes`],
//!   [`cq_ncqe_as_c_int`]);
//! * a value the provider rejects before any conversion (`cqe <= 0` in
//!   `mlx5_create_cq`) is rejected the same way by the caller.

use anyhow::{anyhow, bail};

/// Parses a decimal column that holds a C `int` or a `uint32_t` filled from
/// one: any value in `i32::MIN..=u32::MAX`. Anything else (not a number, or
/// outside both types) is an input error.
pub fn parse_c_number(column: &str, v: &str) -> anyhow::Result<i64> {
    let n: i64 = v
        .trim()
        .parse()
        .map_err(|_| anyhow!("column {column}: bad number {v:?}"))?;
    if n < i32::MIN as i64 || n > u32::MAX as i64 {
        bail!("column {column}: {n} is neither a C int nor a uint32_t");
    }
    Ok(n)
}

/// The `uint32_t` a C assignment `uint32_t f = v;` stores: `v mod 2^32`
/// (C11 6.3.1.3p2), so `-1` becomes 4294967295.
pub const fn to_c_u32(v: i64) -> u32 {
    v as u32
}

/// The `int` a C conversion of `v` gives on the vendor's build (GCC: modulo
/// 2^32, so 4294967295 becomes −1).
pub const fn to_c_int(v: i64) -> i32 {
    v as u32 as i32
}

/// `max_inline_data` with the same effect on bareverbs' send WQE size as the
/// request has on the provider's.
///
/// `mlx5_calc_send_wqe` (providers/mlx5/verbs.c) computes
/// `inl_size = size + align(sizeof(struct mlx5_wqe_inl_data_seg) +
/// cap.max_inline_data, 16)` in `size_t` (`align` is `unsigned long`) and
/// stores it in an `int`, then takes `tot_size = max_int(size, inl_size)`.
/// bareverbs computes the same sum without narrowing it, so for requests
/// whose sum reaches 2^31 (every negative `max_inline_data`, and positive
/// ones within ~`overhead + 20` of `i32::MAX`) the narrowed `int` decides:
/// a negative or `<= overhead` `inl_size` never wins the `max_int`, which is
/// what a request of 0 gives; a small positive one (the sum wrapped past
/// 2^32) is what `inl_size − overhead − 4` bytes of inline data give.
///
/// Only meaningful when the send queue is sized (`max_send_wr != 0`): without
/// one `mlx5_calc_sq_size` returns before touching `max_inline_data`, and the
/// caller must pass the request unchanged.
pub const fn send_inline_equivalent(max_inline_data: u32, overhead: u32) -> u32 {
    if max_inline_data == 0 {
        return 0;
    }
    let wide = overhead as u64 + ((4 + max_inline_data as u64 + 15) & !15);
    if wide <= i32::MAX as u64 {
        return max_inline_data;
    }
    let narrowed = wide as u32 as i32;
    if narrowed <= overhead as i32 {
        0
    } else {
        // `narrowed − overhead` is a multiple of 16 (the wrap subtracts 2^32),
        // at least 16, so this request aligns back to exactly `narrowed`.
        narrowed as u32 - overhead - 4
    }
}

/// The receive WQE byte count `mlx5_calc_rcv_wqe` (providers/mlx5/verbs.c)
/// compares with `max_rq_desc_sz`: `num_scatter = max_t(uint32_t,
/// cap.max_recv_sge, 1)` is an `int`, `size` a `uint32_t`, so `size = 16 ·
/// num_scatter mod 2^32` (no signature segment: `wq_sig = 0`). A request of
/// 2^28·k + j SGEs therefore sizes like j SGEs, and one of 2^28·k like 0 bytes.
pub const fn recv_wqe_bytes(max_recv_sge: u32) -> u32 {
    let n = if max_recv_sge > 1 { max_recv_sge } else { 1 };
    n.wrapping_mul(16)
}

/// `ncqe` as `create_cq` (providers/mlx5/verbs.c) holds it:
/// `int ncqe = align_queue_size(cq_attr->cqe + 1)`, where `cq_attr->cqe` is a
/// `uint32_t` and `align_queue_size` returns `roundup_pow_of_two(req)` as an
/// `int`. For `2^30 <= cqe <= i32::MAX` the power of two is 2^31, which the
/// `int` holds as `i32::MIN`. `cqe` must be positive (`mlx5_create_cq`
/// rejects `cqe <= 0` first).
pub const fn cq_ncqe_as_c_int(cqe: i32) -> i32 {
    let req = cqe as u64 + 1;
    let p = if req <= 1 {
        1
    } else {
        1u64 << (64 - (req - 1).leading_zeros())
    };
    p as u32 as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_the_int_and_uint32_domains_only() {
        assert_eq!(parse_c_number("x", "-2147483648").unwrap(), i32::MIN as i64);
        assert_eq!(parse_c_number("x", "4294967295").unwrap(), u32::MAX as i64);
        assert!(parse_c_number("x", "-2147483649").is_err());
        assert!(parse_c_number("x", "4294967296").is_err());
        assert!(parse_c_number("x", "1e3").is_err());
        assert_eq!(to_c_u32(-1), u32::MAX);
        assert_eq!(to_c_u32(i32::MIN as i64), 0x8000_0000);
        assert_eq!(to_c_int(u32::MAX as i64), -1);
        assert_eq!(to_c_int(7), 7);
    }

    #[test]
    fn inline_narrowing() {
        // Small requests are untouched.
        assert_eq!(send_inline_equivalent(0, 192), 0);
        assert_eq!(send_inline_equivalent(1000, 192), 1000);
        // -1 → 0xffffffff: 4 + 0xffffffff aligned to 16 is 2^32 + 16, so the
        // narrowed inl_size is overhead + 16, i.e. 12 inline bytes.
        assert_eq!(send_inline_equivalent(u32::MAX, 192), 12);
        // -4: 4 + 0xfffffffc = 2^32 exactly → inl_size = overhead → like 0.
        assert_eq!(send_inline_equivalent(-4i32 as u32, 48), 0);
        // i32::MIN → 0x80000000: 0x80000010 + overhead is a negative int.
        assert_eq!(send_inline_equivalent(0x8000_0000, 16), 0);
        // i32::MAX: 0x80000010 + overhead, a negative int as well.
        assert_eq!(send_inline_equivalent(i32::MAX as u32, 16), 0);
    }

    #[test]
    fn recv_narrowing() {
        assert_eq!(recv_wqe_bytes(0), 16);
        assert_eq!(recv_wqe_bytes(3), 48);
        assert_eq!(recv_wqe_bytes(u32::MAX), 0xffff_fff0);
        assert_eq!(recv_wqe_bytes(0x8000_0000), 0);
        assert_eq!(recv_wqe_bytes(0xf000_0001), 16);
    }

    #[test]
    fn ncqe_narrowing() {
        assert_eq!(cq_ncqe_as_c_int(1), 2);
        assert_eq!(cq_ncqe_as_c_int(4_194_303), 4_194_304);
        assert_eq!(cq_ncqe_as_c_int((1 << 30) - 1), 1 << 30);
        assert_eq!(cq_ncqe_as_c_int(1 << 30), i32::MIN);
        assert_eq!(cq_ncqe_as_c_int(i32::MAX), i32::MIN);
    }
}
