//! The vendor header's CQE getters (`mlx5dv_get_cqe_owner`, `_se`,
//! `_format`, `_opcode`, via the C shim) against bareverbs' `Cqe64` on
//! random 64-byte CQEs.
#![cfg(not(bv_no_mlx5dv))] // needs the C shim: see build.rs

use bareverbs::cqe::Cqe64;
use bareverbs_conformance::{c_cqe_getters, c_layouts};
use bareverbs_sim::rng::Rng;

#[test]
fn cqe_getters_match_mlx5dv() {
    let mut r = Rng::new(0x0c9e_0064);
    for i in 0..20_000 {
        let mut b = [0u8; 64];
        r.fill(&mut b);
        if i < 256 {
            b[63] = i as u8; // every op_own value once
        }
        let (owner, se, format, opcode) = c_cqe_getters(&b);
        let c = Cqe64::from_bytes(b);
        assert_eq!(c.owner(), owner, "owner, op_own={:#04x}", b[63]);
        assert_eq!(c.se(), se, "se, op_own={:#04x}", b[63]);
        assert_eq!(c.format(), format, "format, op_own={:#04x}", b[63]);
        assert_eq!(c.opcode(), opcode, "opcode, op_own={:#04x}", b[63]);
    }
}

#[test]
fn cqe64_size_matches_mlx5dv() {
    assert_eq!(core::mem::size_of::<Cqe64>(), c_layouts()["mlx5_cqe64"]);
}
