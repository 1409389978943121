//! Unit tests comparing the command bytes bareverbs builds with the form
//! the vendor's code sends for the same object (issue 14): each expected
//! value is derived from the vendor rule cited beside it (rdma-core
//! `providers/mlx5/mlx5_vfio.c` and `mlx5_ifc.h` at 691953d8d502, or the
//! Linux file and function named), never from the builder's own output.
//! Byte positions are the `mlx5_ifc.h` offsets written out by hand.

use super::bits::*;
use super::ops::*;
use crate::mr::Access;

/// CREATE_MKEY over 3 pages of 4 KiB (an odd count), compared with
/// mlx5_vfio.c `mlx5_vfio_reg_mr`.
#[test]
fn create_mkey_odd_page_count_is_the_vendor_form() {
    let (iova, npages) = (0x7000u64, 3usize);
    let mut b = [0xeeu8; 0x200];
    let r = create_mkey(
        &mut b,
        &MkeyParams {
            pd: 0x33,
            access: Access::LOCAL_WRITE | Access::REMOTE_WRITE,
            start_addr: iova,
            len: npages as u64 * 4096,
            pages_iova: iova,
            npages,
            log_page_size: 12,
            variant: 0x5a,
        },
    );
    // mlx5_vfio.c L2445: inlen = sizeof(create_mkey_in) (0x110) +
    // 8 * align(num_pas, 2): 3 pages → 4 entries.
    let entries = 4;
    assert_eq!(r.in_len, 0x110 + 8 * entries);
    assert_eq!((r.opcode, r.out_len), (0x200, 0x10));
    // L2463: pg_access = 1 (create_mkey_in dw3 bit 31, mlx5_ifc.h L1665
    // → byte 0x0c mask 0x80); nothing else in dw3.
    assert_eq!(get32(&b, 0x0c), 0x8000_0000, "pg_access");
    // L2470 / L2474 with get_octo_len (L2278–2287): (npages + 1) / 2 = 2,
    // in mkc.translations_octword_size (mkc 0x34 → 0x44) and
    // translations_octword_actual_size (0x60).
    assert_eq!(get32(&b, 0x10 + 0x34), 2, "translations_octword_size");
    assert_eq!(get32(&b, 0x60), 2, "translations_octword_actual_size");
    // L2457–2460 with mlx5_vfio_populate_pas (L2341–2351): entry i =
    // page address | MLX5_MTT_PRESENT (read 1 | write 2, mlx5_vfio.h).
    for i in 0..npages {
        assert_eq!(get64(&b, 0x110 + 8 * i), (iova + 4096 * i as u64) | 0x3);
    }
    // calloc (L2447): the pad entry is zero.
    assert_eq!(get64(&b, 0x110 + 8 * npages), 0, "pad entry");
    // Beyond the input: untouched.
    assert_eq!(b[0x110 + 8 * entries], 0xee);
    // An even count needs no pad: 2 pages → 0x110 + 16, one octword.
    let r = create_mkey(
        &mut b,
        &MkeyParams {
            pd: 1,
            access: Access::empty(),
            start_addr: 0x2000,
            len: 8192,
            pages_iova: 0x2000,
            npages: 2,
            log_page_size: 12,
            variant: 1,
        },
    );
    assert_eq!(r.in_len, 0x110 + 16);
    assert_eq!(get32(&b, 0x60), 1);
    assert_eq!(b[0x0c] & 0x80, 0x80, "pg_access");
}
