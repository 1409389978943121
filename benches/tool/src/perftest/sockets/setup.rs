//! `check_sys_data` (the cycle buffer and cache line size, each side
//! taking the larger) and `check_mtu` (the path MTU, each side taking the
//! smaller valid one).

use super::stream::Oob;
use super::versions::Version;

/// What `check_sys_data` agreed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysData {
    /// Bytes of a buffer the peer addresses (perftest: the page size).
    pub cycle_buffer: u32,
    /// Cache line size.
    pub cache_line: u32,
}

impl Oob {
    /// `check_sys_data`: with a peer of 5.32 or later, two exchanges of a
    /// 4-byte big-endian int (cycle buffer, then cache line size); the
    /// larger of each. An older peer exchanges nothing.
    pub fn check_sys_data(&mut self, peer: &Version, ours: SysData) -> anyhow::Result<SysData> {
        if peer.value < 5.32 {
            return Ok(ours);
        }
        let mut one = |v: u32| -> anyhow::Result<u32> {
            let mut b = [0u8; 4];
            self.exchange(&v.to_be_bytes(), &mut b)?;
            // perftest keeps the larger as a C int: a negative one loses.
            Ok((i32::from_be_bytes(b).max(0) as u32).max(v))
        };
        Ok(SysData {
            cycle_buffer: one(ours.cycle_buffer)?,
            cache_line: one(ours.cache_line)?,
        })
    }

    /// `check_mtu` with this side's MTU code `ours` (`enum ibv_mtu`, 1 =
    /// 256 … 5 = 4096): with a peer of 5.1 or later the code as decimal
    /// text, 2 bytes (`"5\0"`; 4 bytes to a peer before 5.31); the peer's
    /// code is taken when it is valid and smaller.
    pub fn check_mtu(&mut self, peer: &Version, ours: u8) -> anyhow::Result<u8> {
        if peer.value < 5.1 {
            return Ok(ours);
        }
        let n = if peer.value >= 5.31 { 2 } else { 4 };
        let mut mine = [0u8; 4];
        let text = ours.to_string();
        mine[..text.len().min(3)].copy_from_slice(&text.as_bytes()[..text.len().min(3)]);
        let mut theirs = [0u8; 4];
        self.exchange(&mine[..n], &mut theirs[..n])?;
        let end = theirs[..n].iter().position(|&c| c == 0).unwrap_or(n);
        let rem: Option<u8> = std::str::from_utf8(&theirs[..end])
            .ok()
            .and_then(|s| s.trim().parse().ok());
        Ok(match rem {
            Some(r) if (1..=5).contains(&r) && r < ours => r,
            _ => ours,
        })
    }
}
