//! Firmware access to driver memory: reads, writes and mapping checks
//! through [`HeapDma::translate`](crate::dma::HeapDma::translate), and the
//! physical address (PAS) lists of create commands.

use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::bits::get64;
use bareverbs::cmd::ops::PAS_OFFSET;
use bareverbs::cmd::CmdStatus;

impl SimFirmware {
    /// Reads `len` bytes at device address `iova`; `None` if unmapped.
    pub(super) fn rd(&self, iova: u64, len: usize) -> Option<Vec<u8>> {
        let p = self.dma.translate(iova, len)?;
        let mut v = vec![0u8; len];
        // SAFETY: translate guarantees [iova, iova+len) is inside one live
        // allocation; `v` is separate host memory.
        unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), v.as_mut_ptr(), len) };
        Some(v)
    }

    /// Writes `data` at device address `iova`; false if unmapped.
    pub(super) fn wr(&self, iova: u64, data: &[u8]) -> bool {
        match self.dma.translate(iova, data.len()) {
            Some(p) => {
                // SAFETY: as in `rd`, writing.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p.as_ptr(), data.len()) };
                true
            }
            None => false,
        }
    }

    /// Whether `[iova, iova + len)` is mapped.
    pub(super) fn mapped(&self, iova: u64, len: usize) -> bool {
        self.dma.translate(iova, len).is_some()
    }

    /// The first `n` PAS entries of `input` from byte `at`, flags stripped.
    fn pas(input: &[u8], at: usize, n: usize) -> Vec<u64> {
        (0..n).map(|i| get64(input, at + 8 * i) & !0xfff).collect()
    }

    /// Checks `n` pas entries fit the input and are mapped 4 KiB pages.
    pub(super) fn check_pas(&self, input: &[u8], n: usize) -> Result<Vec<u64>, (CmdStatus, u8)> {
        self.check_pas_at(input, PAS_OFFSET, n)
    }

    /// As [`Self::check_pas`], for a list starting at byte `at`.
    pub(super) fn check_pas_at(
        &self,
        input: &[u8],
        at: usize,
        n: usize,
    ) -> Result<Vec<u64>, (CmdStatus, u8)> {
        if input.len() < at + 8 * n {
            return Err((CmdStatus::BadInputLen, reason::INPUT_LEN));
        }
        let pas = Self::pas(input, at, n);
        if pas.iter().any(|&p| !self.mapped(p, 4096)) {
            return Err((CmdStatus::BadParam, reason::ADDRESS));
        }
        Ok(pas)
    }
}
