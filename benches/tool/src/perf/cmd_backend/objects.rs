//! [`Objects`]: everything a run created by command (protection domain,
//! DMA buffers, memory keys, CQs, QPs) and their teardown in reverse
//! order of dependence.

use anyhow::anyhow;
use bareverbs::cmd::{Bar0, Clock};
use bareverbs::device::{CqHandle, Device, DeviceError, Mkey, Pd, QpHandle, UarMap};
use bareverbs::error::Chain;
use bareverbs::platform::{DmaAllocator, DmaBuf};

/// Everything created by command for one run, destroyed afterwards.
#[derive(Default)]
pub(super) struct Objects {
    /// The protection domain.
    pub(super) pd: Option<Pd>,
    /// Message buffers (freed only once their keys are gone).
    pub(super) bufs: Vec<DmaBuf>,
    /// Memory keys over `bufs`.
    pub(super) mkeys: Vec<Mkey>,
    /// CQs, two per QP pair (A's, then B's).
    pub(super) cqs: Vec<CqHandle>,
    /// QPs, two per QP pair (A, then B).
    pub(super) qps: Vec<QpHandle>,
}

impl Objects {
    /// Destroys in reverse order of dependence; continues past errors and
    /// returns the first.
    pub(super) fn destroy<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
        self,
        dev: &mut Device<B, C, A>,
    ) -> anyhow::Result<()> {
        let mut first: Option<anyhow::Error> = None;
        let mut note = |r: Result<(), DeviceError>, what: &str| {
            if let Err(e) = r {
                first.get_or_insert_with(|| anyhow!("destroying the {what}: {}", Chain::new(&e)));
                false
            } else {
                true
            }
        };
        for qp in self.qps {
            note(dev.destroy_qp(qp), "QP");
        }
        for cq in self.cqs {
            note(dev.destroy_cq(cq), "CQ");
        }
        let mut keys_gone = true;
        for m in self.mkeys {
            keys_gone &= note(dev.destroy_mkey(m), "memory key");
        }
        if keys_gone {
            for b in self.bufs {
                // SAFETY: every key over these buffers was destroyed by
                // command above and the queues naming them are gone.
                unsafe { dev.allocator().free(b) };
            }
        }
        if let Some(pd) = self.pd {
            note(dev.dealloc_pd(pd), "protection domain");
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
