//! `bareverbs decode cqe`.

/// Decodes CQE bytes into a human or JSON view.
///
/// TEMPORARY PLACEHOLDER (branch `vectors`): replaced on merge.
pub fn decode_cqe(
    bytes: &[u8],
    json: bool,
    ci: Option<u32>,
    ncqe: Option<u32>,
) -> anyhow::Result<String> {
    let _ = (bytes, json, ci, ncqe);
    anyhow::bail!("decode cqe not merged yet")
}
