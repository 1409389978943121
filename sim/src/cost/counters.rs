//! The counters the simulator keeps per QP and per device: doorbells,
//! BlueFlame writes, fetched bytes, PCIe transactions and link bytes,
//! packets, CQEs and errors.

use serde::{Deserialize, Serialize};

use super::params::{dma_read_more_wire, dma_read_wire};
use super::ModelParams;

/// Counters kept per QP and per device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// 8-byte doorbell writes.
    pub doorbells: u64,
    /// BlueFlame writes (one per doorbell delivered by BlueFlame).
    pub bf_writes: u64,
    /// 64-byte BlueFlame chunks.
    pub bf_chunks: u64,
    /// WQEs executed (fetched by DMA or taken from BlueFlame).
    pub wqes: u64,
    /// Bytes of WQEs fetched by DMA read.
    pub wqe_bytes_fetched: u64,
    /// PCIe read requests the NIC issued (WQE fetch, gathers, doorbell
    /// records, remote READ sources).
    pub pcie_reads: u64,
    /// Bytes the NIC read over PCIe (payload of the completions).
    pub pcie_read_bytes: u64,
    /// PCIe write transactions the NIC issued (scatters, CQEs).
    pub pcie_writes: u64,
    /// Bytes the NIC wrote over PCIe.
    pub pcie_write_bytes: u64,
    /// PCIe bytes on the link including TLP overheads (both directions).
    pub pcie_wire_bytes: u64,
    /// Payload bytes sent on the wire (including retransmissions).
    pub payload_tx_bytes: u64,
    /// Payload bytes received and placed.
    pub payload_rx_bytes: u64,
    /// Packets (messages) sent on the wire, including ACKs and NAKs.
    pub packets_tx: u64,
    /// Retransmitted requests.
    pub retransmits: u64,
    /// CQEs written.
    pub cqes: u64,
    /// Error CQEs written (including flushes).
    pub err_cqes: u64,
    /// RNR NAKs sent (responder) or received (requester).
    pub rnr_naks: u64,
    /// Transport timeouts.
    pub timeouts: u64,
    /// Doorbells ignored (unknown QP, QP not ready).
    pub ignored_doorbells: u64,
    /// QP-context cache misses (context fetched by DMA read).
    pub qpc_misses: u64,
    /// Doorbells whose WQE the doorbell record did not cover yet (the
    /// record must be written before the MMIO, [ref §4.3](bareverbs::reference)).
    pub stale_dbrec: u64,
}

impl Counters {
    /// Adds `o` field by field.
    pub fn add(&mut self, o: &Counters) {
        self.doorbells += o.doorbells;
        self.bf_writes += o.bf_writes;
        self.bf_chunks += o.bf_chunks;
        self.wqes += o.wqes;
        self.wqe_bytes_fetched += o.wqe_bytes_fetched;
        self.pcie_reads += o.pcie_reads;
        self.pcie_read_bytes += o.pcie_read_bytes;
        self.pcie_writes += o.pcie_writes;
        self.pcie_write_bytes += o.pcie_write_bytes;
        self.pcie_wire_bytes += o.pcie_wire_bytes;
        self.payload_tx_bytes += o.payload_tx_bytes;
        self.payload_rx_bytes += o.payload_rx_bytes;
        self.packets_tx += o.packets_tx;
        self.retransmits += o.retransmits;
        self.cqes += o.cqes;
        self.err_cqes += o.err_cqes;
        self.rnr_naks += o.rnr_naks;
        self.timeouts += o.timeouts;
        self.ignored_doorbells += o.ignored_doorbells;
        self.qpc_misses += o.qpc_misses;
        self.stale_dbrec += o.stale_dbrec;
    }
    /// Records one DMA read of `n` bytes (one MRd, completions of
    /// `read_cpl_bytes` each).
    #[inline]
    pub fn dma_read(&mut self, p: &ModelParams, n: u64) {
        self.pcie_reads += 1;
        self.pcie_read_bytes += n;
        self.pcie_wire_bytes += dma_read_wire(p, n);
    }
    /// Records the DMA fetch of one WQE of `n` bytes: the first of a
    /// doorbell's read is one read ([`Self::dma_read`]), a later one only
    /// extends it (its bytes and completions).
    #[inline]
    pub fn wqe_fetch(&mut self, p: &ModelParams, n: u64, first_in_batch: bool) {
        self.wqe_bytes_fetched += n;
        if first_in_batch {
            self.dma_read(p, n)
        } else {
            self.pcie_read_bytes += n;
            self.pcie_wire_bytes += dma_read_more_wire(p, n);
        }
    }
    /// Records one DMA write of `n` bytes (one MWr).
    #[inline]
    pub fn dma_write(&mut self, p: &ModelParams, n: u64) {
        self.pcie_writes += 1;
        self.pcie_write_bytes += n;
        self.pcie_wire_bytes += p.tlp_req_overhead as u64 + n;
    }
}
