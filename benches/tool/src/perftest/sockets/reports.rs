//! `xchg_bw_reports`: five exchanges, each client-first: the size (8
//! bytes), the iterations (8 bytes to a peer of 5.33 or later, else 4),
//! the peak and average bandwidth and the message rate (IEEE doubles),
//! all big-endian (`hton_long`, `hton_64`, `bswap_double`). The per-port
//! fields follow only with `--report-per-port`, which bareverbs does not
//! offer.

use super::stream::Oob;
use super::versions::Version;

/// A bandwidth report as perftest exchanges it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BwReport {
    /// Message bytes.
    pub size: u64,
    /// Iterations.
    pub iters: u64,
    /// Peak bandwidth (the run's unit).
    pub bw_peak: f64,
    /// Average bandwidth.
    pub bw_avg: f64,
    /// Average message rate (Mpps).
    pub msg_rate_avg: f64,
}

impl Oob {
    /// `xchg_bw_reports`: sends `ours`, returns the peer's.
    pub fn exchange_bw_reports(
        &mut self,
        peer: &Version,
        ours: &BwReport,
    ) -> anyhow::Result<BwReport> {
        let mut b8 = [0u8; 8];
        self.exchange(&ours.size.to_be_bytes(), &mut b8)?;
        let size = u64::from_be_bytes(b8);
        let iters = if peer.value >= 5.33 {
            self.exchange(&ours.iters.to_be_bytes(), &mut b8)?;
            u64::from_be_bytes(b8)
        } else {
            let mut b4 = [0u8; 4];
            self.exchange(&(ours.iters as u32).to_be_bytes(), &mut b4)?;
            u32::from_be_bytes(b4) as u64
        };
        let mut f = |x: f64| -> anyhow::Result<f64> {
            let mut b = [0u8; 8];
            self.exchange(&x.to_bits().to_be_bytes(), &mut b)?;
            Ok(f64::from_bits(u64::from_be_bytes(b)))
        };
        Ok(BwReport {
            size,
            iters,
            bw_peak: f(ours.bw_peak)?,
            bw_avg: f(ours.bw_avg)?,
            msg_rate_avg: f(ours.msg_rate_avg)?,
        })
    }
}
