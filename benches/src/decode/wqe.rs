//! `bareverbs decode wqe`.

/// Decodes a send WQE (hex bytes) into a human or JSON view.
///
/// TEMPORARY PLACEHOLDER (branch `vectors`): replaced on merge.
pub fn decode_wqe(bytes: &[u8], qp_type: Option<&str>, json: bool) -> anyhow::Result<String> {
    let _ = (bytes, qp_type, json);
    anyhow::bail!("decode wqe not merged yet")
}
