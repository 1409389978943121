//! The adapter's identity: QUERY_ADAPTER, its vendor id and board id
//! (PSID).

use super::{hdr, Req, HDR_LEN};
use crate::cmd::layout::{query_adapter_out, query_adapter_param_block};
use crate::cmd::op;

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
