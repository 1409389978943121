//! The device limits `budget` sizes against: `--caps FILE` (TOML), the
//! default device, or a real device's QUERY_HCA_CAP (`--device`).

use std::path::Path;

use crate::args::UsageExt as _;
use anyhow::Context;
use bareverbs::sizing::DeviceCaps;
use serde::Deserialize;

/// TOML mirror of [`DeviceCaps`]: every key optional.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CapsFile {
    max_sq_desc_sz: Option<u32>,
    max_rq_desc_sz: Option<u32>,
    max_send_wqebb: Option<u32>,
    max_recv_wr: Option<u32>,
    max_srq_recv_wr: Option<u32>,
    max_sge: Option<u32>,
    max_cqe: Option<u32>,
    bf_reg_size: Option<u32>,
    cqe_version: Option<u32>,
    page_size: Option<u32>,
    cache_line_size: Option<u32>,
}

/// Parse device limits from TOML text (keys = [`DeviceCaps`] field names;
/// missing keys take [`DeviceCaps::DEFAULT`]; unknown keys are an error).
pub fn caps_from_toml(text: &str) -> anyhow::Result<DeviceCaps> {
    let f: CapsFile = toml::from_str(text)?;
    let d = DeviceCaps::DEFAULT;
    let caps = DeviceCaps {
        max_sq_desc_sz: f.max_sq_desc_sz.unwrap_or(d.max_sq_desc_sz),
        max_rq_desc_sz: f.max_rq_desc_sz.unwrap_or(d.max_rq_desc_sz),
        max_send_wqebb: f.max_send_wqebb.unwrap_or(d.max_send_wqebb),
        max_recv_wr: f.max_recv_wr.unwrap_or(d.max_recv_wr),
        max_srq_recv_wr: f.max_srq_recv_wr.unwrap_or(d.max_srq_recv_wr),
        // Without a max_sge key: the kernel's rule on the descriptor sizes.
        max_sge: f.max_sge.unwrap_or_else(|| {
            let desc = |v: u32| v.min(u16::MAX as u32) as u16;
            bareverbs::cmd::caps::HcaCaps {
                max_wqe_sz_sq: desc(f.max_sq_desc_sz.unwrap_or(d.max_sq_desc_sz)),
                max_wqe_sz_rq: desc(f.max_rq_desc_sz.unwrap_or(d.max_rq_desc_sz)),
                ..Default::default()
            }
            .max_sge()
        }),
        max_cqe: f.max_cqe.unwrap_or(d.max_cqe),
        bf_reg_size: f.bf_reg_size.unwrap_or(d.bf_reg_size),
        cqe_version: f.cqe_version.unwrap_or(d.cqe_version),
        page_size: f.page_size.unwrap_or(d.page_size),
        cache_line_size: f.cache_line_size.unwrap_or(d.cache_line_size),
    };
    if caps.max_sq_desc_sz == 0 || caps.page_size == 0 || caps.cache_line_size == 0 {
        anyhow::bail!("max_sq_desc_sz, page_size and cache_line_size must be non-zero");
    }
    Ok(caps)
}

/// Load device limits from `--caps FILE`, or the default device.
pub fn load_caps(path: Option<&Path>) -> anyhow::Result<DeviceCaps> {
    match path {
        None => Ok(DeviceCaps::DEFAULT),
        Some(p) => {
            // An unreadable or malformed file is bad input (exit status 2).
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading {}", p.display()))
                .usage()?;
            caps_from_toml(&text)
                .with_context(|| format!("parsing {}", p.display()))
                .usage()
        }
    }
}

/// The sizing limits of `device` (`budget --device`), from its
/// QUERY_HCA_CAP and the host's page and cache-line sizes the bring-up
/// uses.
pub fn device_caps(device: &crate::device_arg::Device) -> anyhow::Result<DeviceCaps> {
    device.require_device("budget --device")?;
    let d = crate::devinfo::query_device(device)?;
    let host = bareverbs::device::DeviceConfig::default();
    Ok(d.caps.device_caps(host.page_size, host.cache_line_size))
}
