//! `bareverbs selftest` and `bareverbs devinfo --selftest`: the core's loopback self-test
//! ([`bareverbs::selftest`]) on the simulator or a VFIO device.

use bareverbs::error::Chain;
use bareverbs::selftest::{SelfTestOptions, SelfTestReport};
use serde_json::json;

/// Arguments of `bareverbs selftest`.
#[derive(clap::Args, Debug, Clone)]
pub struct SelftestArgs {
    /// `sim` (default; the simulated ConnectX), `fw-sim` (the same device)
    /// or `vfio:DDDD:BB:DD.F`.
    #[arg(short = 'd', long, default_value = "sim")]
    pub device: String,
    /// Ring doorbells through BlueFlame.
    #[arg(long)]
    pub blueflame: bool,
    /// JSON on stdout instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs the self-test on `device` (`sim`, `fw-sim` or `vfio:BDF`).
pub fn run(device: &str, opts: SelfTestOptions) -> anyhow::Result<SelfTestReport> {
    use crate::device_arg::Device;
    let d = crate::device_arg::parse_device(device)?;
    d.require_device("selftest")?;
    if let Device::Vfio(bdf) = &d {
        return bareverbs_vfio::selftest_vfio(bdf, opts)
            .map_err(|e| anyhow::anyhow!("{}", Chain::new(&e)));
    }
    let fabric = bareverbs_sim::Fabric::new(1);
    let (mut dev, _nic) = bareverbs_sim::fw::bring_up_on(
        &fabric,
        bareverbs_sim::fw::FwConfig::default(),
        bareverbs::device::DeviceConfig::default(),
    )
    .map_err(|e| anyhow::anyhow!("simulated bring-up failed: {}", Chain::new(&e)))?;
    let r = dev.loopback_selftest(opts);
    let (rep, ..) = dev.teardown();
    let r = r.map_err(|e| anyhow::anyhow!("loopback self-test: {}", Chain::new(&e)))?;
    if let Some(e) = rep.first_error {
        anyhow::bail!("teardown after the self-test: {}", Chain::new(&e));
    }
    Ok(r)
}

/// One JSON object.
pub fn to_json(r: &SelfTestReport, device: &str, opts: &SelfTestOptions) -> serde_json::Value {
    json!({
        "device": device,
        "result": "PASSED",
        "blueflame": opts.blueflame,
        "qpns": [r.qpns.0, r.qpns.1],
        "key": r.key,
        "write_bytes_verified": r.verified_bytes.0,
        "send_bytes_verified": r.verified_bytes.1,
        "read_bytes_verified": r.verified_bytes.2,
        "completions": r.completions,
        "elapsed_us": r.elapsed_us,
    })
}

/// Human text.
pub fn to_text(r: &SelfTestReport, device: &str, opts: &SelfTestOptions) -> String {
    format!(
        "loopback self-test on {device} ({} doorbells): PASSED\n\
         \tQPs {:#x} <-> {:#x} (RC, force-loopback), key {:#x}\n\
         \tRDMA WRITE {} B, SEND/RECV {} B, RDMA READ {} B: every byte verified\n\
         \t{} completions, {} us on the device clock{}\n",
        if opts.blueflame {
            "BlueFlame"
        } else {
            "8-byte"
        },
        r.qpns.0,
        r.qpns.1,
        r.key,
        r.verified_bytes.0,
        r.verified_bytes.1,
        r.verified_bytes.2,
        r.completions,
        r.elapsed_us,
        if !device.starts_with("vfio:") {
            " (simulated: the fake clock only moves while waiting)"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_selftest_passes_and_vfio_without_hardware_explains_itself() {
        let o = SelfTestOptions::default();
        let r = run("sim", o).unwrap();
        assert_eq!(r.verified_bytes, (4096, 1000, 4096));
        let j = to_json(&r, "sim", &o);
        assert_eq!(j["result"], "PASSED");
        assert!(to_text(&r, "sim", &o).contains("every byte verified"));
        let e = run("vfio:0000:00:00.0", o).unwrap_err().to_string();
        assert!(!e.is_empty() && !e.contains("panicked"), "{e}");
        let e = run("nope", o).unwrap_err();
        assert!(crate::args::is_usage(&e) && e.to_string().starts_with("unknown device"));
        let e = run("model", o).unwrap_err();
        assert!(e.to_string().starts_with("selftest needs a device"), "{e}");
        let r2 = run("fw-sim", o).unwrap();
        assert_eq!(r2.verified_bytes, r.verified_bytes);
    }

    #[test]
    fn json_keys_match_the_doc() {
        let o = SelfTestOptions::default();
        let r = run("sim", o).unwrap();
        let j = crate::envelope::envelope("selftest", to_json(&r, "sim", &o));
        crate::envelope::assert_documented("selftest", &j);
    }
}
