//! Read-only views of what bring-up learned (firmware version, ISSI,
//! capabilities, UAR) and access to the platform parts the device owns.

use super::{Device, DeviceError, UarMap};
use crate::cmd::caps::HcaCaps;
use crate::cmd::initseg::FwVersion;
use crate::cmd::{ops, Bar0, Clock};
use crate::platform::DmaAllocator;

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// Firmware version read at bring-up.
    pub fn fw_version(&self) -> FwVersion {
        self.fw
    }
    /// Negotiated ISSI.
    pub fn issi(&self) -> u16 {
        self.issi
    }
    /// General capabilities in force (QUERY_HCA_CAP current, after INIT_HCA).
    pub fn hca_caps(&self) -> &HcaCaps {
        &self.hca
    }
    /// Sizing inputs from the capabilities ([ref §3.1](crate::reference)).
    pub fn device_caps(&self) -> crate::sizing::DeviceCaps {
        self.hca
            .device_caps(self.cfg.page_size, self.cfg.cache_line_size)
    }
    /// The UAR allocated at bring-up.
    pub fn uar_index(&self) -> u32 {
        self.uar
    }
    /// Maps a UAR page for a data-path queue.
    pub fn map_uar(&mut self, index: u32) -> Result<B::Uar, DeviceError> {
        self.bar.map_uar(index).ok_or(DeviceError::NoUar { index })
    }
    /// Pages firmware holds.
    pub fn pages_held(&self) -> usize {
        self.pages.held()
    }
    /// Page-request events served so far.
    pub fn page_events(&self) -> u64 {
        self.page_events
    }
    /// The BAR (for health checks).
    pub fn bar(&self) -> &B {
        &self.bar
    }
    /// The BAR, mutably (for host-specific settings of `B`, such as a
    /// benchmark's BlueFlame switch). Read-only uses need only
    /// [`Device::bar`].
    ///
    /// # Safety
    /// The driver owns the function's command interface and relies on the
    /// BAR state it programmed. Through the returned reference the caller
    /// must not:
    /// * write the command-queue registers (`cmdq_addr_h`,
    ///   `cmdq_addr_l_sz`) or the command doorbell (`cmd_dbell`): the device
    ///   would fetch commands, and DMA outputs, at addresses the driver does
    ///   not own, or execute half-written entries;
    /// * request a NIC-interface state (reset, disable) or otherwise reset
    ///   the function: the driver would keep using and freeing memory the
    ///   device's view of which it no longer knows;
    /// * change any state of `B` that makes the device (or the model behind
    ///   `B`) read or write memory other than what the driver gave it.
    ///
    /// Settings of `B` that only affect how the host side issues its own
    /// accesses (or a simulator's fault injection, which models a device
    /// the driver must survive anyway) are fine.
    ///
    /// Not callable outside `unsafe` (this does not compile):
    ///
    /// ```compile_fail,E0133
    /// use bareverbs::cmd::{ops::Req, Bar0, Clock};
    /// use bareverbs::device::{Device, HwQpState, QpHandle, UarMap};
    /// use bareverbs::platform::DmaAllocator;
    /// fn f<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    ///     d: &mut Device<B, C, A>,
    ///     q: &mut QpHandle,
    ///     r: Req,
    /// ) {
    ///     let _ = d.bar_mut();
    ///     let _ = (q, r);
    /// }
    /// ```
    pub unsafe fn bar_mut(&mut self) -> &mut B {
        &mut self.bar
    }
    /// The clock.
    pub fn clock_mut(&mut self) -> &mut C {
        &mut self.clock
    }
    /// RoCE capabilities (Ethernet ports with RoCE; `None` otherwise or
    /// when firmware does not report them).
    pub fn roce_caps(&self) -> Option<ops::RoceCaps> {
        self.roce
    }
    /// Whether RC QPs may use the force-loopback path (`fl = 1`) on this
    /// device: on an Ethernet port the RoCE capability for the vport's
    /// RoCE state decides; `None` when unknown (InfiniBand ports, or no
    /// RoCE capability page).
    pub fn force_loopback_rc(&self) -> Option<bool> {
        let r = self.roce?;
        Some(if self.roce_enabled {
            r.fl_rc_qp_when_roce_enabled
        } else {
            r.fl_rc_qp_when_roce_disabled
        })
    }
    /// The port's link layer (`cap.port_type`).
    pub fn link_layer(&self) -> super::LinkLayer {
        super::LinkLayer::from_port_type(self.hca.port_type)
    }
    /// The DMA allocator.
    pub fn allocator(&self) -> &A {
        &self.alloc
    }
}
