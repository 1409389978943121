//! `query_adapter_out`: QUERY_ADAPTER's output (`mlx5_ifc.h`
//! `mlx5_ifc_query_adapter_out_bits`), which carries a
//! [`super::query_adapter_param_block`].

/// Byte offset of `query_adapter_struct` (after status, syndrome and 8
/// reserved bytes).
pub const QUERY_ADAPTER_STRUCT: usize = 0x10;
