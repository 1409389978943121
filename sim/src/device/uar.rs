//! The UAR page of a simulated device ([`SimUar`]): SQ doorbells and
//! BlueFlame writes make the device fetch and execute WQEs; a CQ doorbell
//! arms a CQ.

use super::Device;
use crate::world::World;
use bareverbs::cq::CQ_DB_REQ_NOT_SOL;
use bareverbs::platform::{Uar, BF_OFFSET, CQ_DOORBELL};
use std::cell::RefCell;
use std::rc::Rc;

impl Device {
    /// A new UAR page handle (doorbells, BlueFlame, CQ arm).
    pub fn uar(&self) -> SimUar {
        SimUar {
            w: self.w.clone(),
            dev: self.id,
            bf: Vec::new(),
        }
    }
}

/// A UAR page of a simulated device. Doorbell writes at `0x800 + …` make
/// the device fetch and execute SQ WQEs; BlueFlame chunks are collected and
/// delivered on [`Uar::flush`]; an 8-byte write at 0x20 arms a CQ.
pub struct SimUar {
    w: Rc<RefCell<World>>,
    dev: u16,
    bf: Vec<u8>,
}

/// The device the page belongs to and the BlueFlame bytes not yet
/// delivered.
impl std::fmt::Debug for SimUar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimUar")
            .field("dev", &self.dev)
            .field("pending_bf", &self.bf.len())
            .finish_non_exhaustive()
    }
}

impl SimUar {
    fn doorbell(&mut self, first8: [u8; 8], bf_chunks: u32) {
        let word0 = u32::from_be_bytes([first8[0], first8[1], first8[2], first8[3]]);
        let qpn = u32::from_be_bytes([first8[4], first8[5], first8[6], first8[7]]) >> 8;
        let wqe_index = (word0 >> 8) as u16;
        // A doorbell rung from inside device processing cannot happen (the
        // device never calls back into the host); if the world is busy the
        // write is dropped rather than panicking.
        if let Ok(mut w) = self.w.try_borrow_mut() {
            w.sq_doorbell(self.dev, qpn, wqe_index, bf_chunks);
        }
    }
}

// SAFETY: every store is delivered to the simulated device in program
// order with its full width; nothing is written to host memory.
unsafe impl Uar for SimUar {
    fn write64(&mut self, offset: usize, bytes: [u8; 8]) {
        if offset == CQ_DOORBELL {
            let v = u64::from_be_bytes(bytes);
            let cqn = (v & 0xff_ffff) as usize;
            let cmd = (v >> 32) as u32;
            if let Ok(mut w) = self.w.try_borrow_mut() {
                let dev = &mut w.devs[self.dev as usize];
                if let Some(Some(cq)) = dev.cqs.get_mut(cqn) {
                    // The arm carries the consumer index: with CQEs already
                    // past it the event fires at once (as mlx5 hardware
                    // compares it with its producer index), else on the
                    // next CQE.
                    let ci = cmd & 0x00ff_ffff;
                    if cq.pi & 0x00ff_ffff != ci {
                        cq.armed = None;
                        dev.events
                            .push(crate::objects::AsyncEvent::Completion { cqn: cqn as u32 });
                    } else {
                        cq.armed = Some(cmd & CQ_DB_REQ_NOT_SOL != 0);
                    }
                }
            }
        } else if offset >= BF_OFFSET {
            self.doorbell(bytes, 0);
        }
    }
    fn write32(&mut self, _offset: usize, _bytes: [u8; 4]) {}
    fn write_bf(&mut self, offset: usize, chunk: &[u8; 64]) {
        if offset >= BF_OFFSET && (offset - BF_OFFSET).is_multiple_of(256) {
            self.bf.clear();
        }
        if self.bf.len() < 1024 {
            self.bf.extend_from_slice(chunk);
        }
    }
    fn flush(&mut self) {
        if self.bf.len() >= 64 {
            let mut first = [0u8; 8];
            first.copy_from_slice(&self.bf[..8]);
            let chunks = (self.bf.len() / 64) as u32;
            self.bf.clear();
            self.doorbell(first, chunks);
        }
    }
}
