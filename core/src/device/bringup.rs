//! The bring-up sequence ([`Device::bring_up`], [ref §7.6](crate::reference)): wait for
//! firmware, command queue, ENABLE_HCA, ISSI, boot pages, capabilities,
//! init pages, INIT_HCA, RoCE, UAR and the async EQ.

use super::{Device, DeviceConfig, DeviceError, Step, UarMap, PORT_TYPE_ETHERNET};
use crate::cmd::caps::{self, HcaCaps, GENERAL_CAP_LEN};
use crate::cmd::initseg::{CmdqGeometry, InitSeg, InitSegError};
use crate::cmd::layout::roce_cap;
use crate::cmd::ops::{self, CapType, PagesKind};
use crate::cmd::pages::PagePool;
use crate::cmd::queue::{CmdQueue, SlotKind, MAX_MSG};
use crate::cmd::{Bar0, Clock, CmdError};
use crate::platform::DmaAllocator;

fn bu(step: Step) -> impl FnOnce(CmdError) -> DeviceError {
    move |err| DeviceError::BringUp { step, err }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// Waits until bit 31 of `initializing` clears ([ref §7.6](crate::reference) step 1).
    pub fn wait_fw_init(
        bar: &B,
        clock: &mut C,
        timeout_us: u64,
        poll_us: u32,
    ) -> Result<(), InitSegError> {
        let start = clock.now_us();
        loop {
            if !InitSeg(bar).initializing() {
                return Ok(());
            }
            let waited = clock.now_us().saturating_sub(start);
            if waited >= timeout_us {
                return Err(InitSegError::InitTimeout { waited_us: waited });
            }
            clock.delay_us(poll_us.max(1));
        }
    }

    /// Runs the bring-up sequence of [ref §7.6](crate::reference) and returns a ready device
    /// (INIT_HCA done, one UAR allocated, caps queried).
    pub fn bring_up(
        mut bar: B,
        mut clock: C,
        alloc: A,
        cfg: DeviceConfig,
    ) -> Result<Self, DeviceError> {
        Self::wait_fw_init(&bar, &mut clock, cfg.init_timeout_us, cfg.init_poll_us)
            .map_err(DeviceError::InitSeg)?;
        let geometry: CmdqGeometry = InitSeg(&bar).validate().map_err(DeviceError::InitSeg)?;
        let fw = InitSeg(&bar).fw_version();
        let cmdq = CmdQueue::new(&alloc, &mut bar, geometry).map_err(DeviceError::Cmdq)?;
        let mut d = Device {
            bar,
            clock,
            alloc,
            cfg,
            cmdq,
            pages: PagePool::new(),
            inb: [0; MAX_MSG],
            outb: [0; MAX_MSG],
            pgin: [0; MAX_MSG],
            pgout: [0; MAX_MSG],
            fw,
            issi: 0,
            hca: HcaCaps::default(),
            roce: None,
            roce_enabled: false,
            gids: super::gid_table::GidTable::new(),
            comp_eqs: heapless::Vec::new(),
            bad_events: 0,
            irqs_enabled: 0,
            uar: 0,
            eq: None,
            objs: heapless::Vec::new(),
            page_events: 0,
            health_last: 0,
            health_misses: 0,
            mkey_variant: 0,
        };
        match d.bring_up_steps() {
            Ok(()) => Ok(d),
            Err(e) => {
                // Leave the function disabled; firmware may keep pages, so
                // only the command queue's own memory is left in place.
                let mut b = [0u8; 16];
                let r = ops::disable_hca(&mut b);
                let _ = d.exec_buf(r, &b);
                Err(e)
            }
        }
    }

    /// Steps 2–12 of [ref §7.6](crate::reference), in order, once the
    /// command queue exists; each step is one helper below.
    fn bring_up_steps(&mut self) -> Result<(), DeviceError> {
        // (2) wait again (kernel), short.
        Self::wait_fw_init(
            &self.bar,
            &mut self.clock,
            self.cfg.init_timeout_us,
            self.cfg.init_poll_us,
        )
        .map_err(DeviceError::InitSeg)?;
        // (4) ENABLE_HCA.
        let r = ops::enable_hca(&mut self.inb);
        self.exec(r).map_err(bu(Step::EnableHca))?;
        // (5) ISSI.
        self.negotiate_issi()?;
        // (6) boot pages.
        self.supply_pages(PagesKind::Boot, Step::BootPages)?;
        // (7) host endianness.
        if self.cfg.set_host_endianness {
            let r = ops::set_host_endianness(&mut self.inb);
            self.exec(r).map_err(bu(Step::HostEndianness))?;
        }
        // (8) caps: query max and current, set current with our changes.
        self.set_hca_caps()?;
        // (9) init pages, (10) INIT_HCA.
        self.supply_pages(PagesKind::Init, Step::InitPages)?;
        let r = ops::init_hca(&mut self.inb);
        self.exec(r).map_err(bu(Step::InitHca))?;
        // Caps as in force after init.
        let r = ops::query_hca_cap(&mut self.inb, CapType::General, true);
        self.exec(r).map_err(bu(Step::HcaCaps))?;
        self.hca = HcaCaps::parse(&self.outb[ops::CAP_OFFSET..ops::CAP_OFFSET + GENERAL_CAP_LEN]);
        // Ethernet ports: RoCE must be enabled on the vport (ref §7.6).
        if self.hca.port_type == PORT_TYPE_ETHERNET && self.hca.roce {
            self.set_up_roce()?;
        }
        // (12) UAR.
        self.alloc_uar()?;
        if self.cfg.async_eq {
            self.create_async_eq()?;
        }
        Ok(())
    }

    /// Step 5: QUERY_ISSI, then SET_ISSI 1 when firmware offers it; a
    /// firmware that refuses QUERY_ISSI speaks ISSI 0.
    fn negotiate_issi(&mut self) -> Result<(), DeviceError> {
        let r = ops::query_issi(&mut self.inb);
        match self.exec(r) {
            Ok(_) => {
                let (_, supported) = ops::parse_query_issi(&self.outb);
                let issi = ops::choose_issi(supported)
                    .ok_or(DeviceError::UnsupportedIssi { supported })?;
                if issi == 1 {
                    let r = ops::set_issi(&mut self.inb, 1);
                    self.exec(r).map_err(bu(Step::Issi))?;
                }
                self.issi = issi;
            }
            Err(CmdError::Failed { .. }) => self.issi = 0,
            Err(e) => {
                return Err(DeviceError::BringUp {
                    step: Step::Issi,
                    err: e,
                })
            }
        }
        Ok(())
    }

    /// Step 8: QUERY_HCA_CAP (maximum, then current) and SET_HCA_CAP of
    /// the current capabilities with the driver's changes.
    fn set_hca_caps(&mut self) -> Result<(), DeviceError> {
        let r = ops::query_hca_cap(&mut self.inb, CapType::General, false);
        self.exec(r).map_err(bu(Step::HcaCaps))?;
        let max = HcaCaps::parse(&self.outb[ops::CAP_OFFSET..ops::CAP_OFFSET + GENERAL_CAP_LEN]);
        let r = ops::query_hca_cap(&mut self.inb, CapType::General, true);
        self.exec(r).map_err(bu(Step::HcaCaps))?;
        let mut cap = [0u8; GENERAL_CAP_LEN];
        cap.copy_from_slice(&self.outb[ops::CAP_OFFSET..ops::CAP_OFFSET + GENERAL_CAP_LEN]);
        caps::set(&mut cap, caps::field::CMDIF_CHECKSUM, 0);
        caps::set(&mut cap, caps::field::LOG_UAR_PAGE_SZ, 0);
        if max.mkey_by_name {
            caps::set(&mut cap, caps::field::MKEY_BY_NAME, 1);
        }
        let r = ops::set_hca_cap(&mut self.inb, CapType::General, &cap);
        self.exec(r).map_err(bu(Step::HcaCaps))?;
        if caps::get(&cap, caps::field::ROCE) != 0 {
            self.set_roce_caps()?;
        }
        Ok(())
    }

    /// Step 8, RoCE page (rdma-core `mlx5_vfio.c` `handle_hca_cap_roce`):
    /// on a device with RoCE, query the RoCE capabilities (current, then
    /// maximum) and, when `sw_r_roce_src_udp_port` is off but settable,
    /// send the current page back with it on (SET_HCA_CAP op_mod 8).
    fn set_roce_caps(&mut self) -> Result<(), DeviceError> {
        let page = ops::CAP_OFFSET..ops::CAP_OFFSET + roce_cap::LEN;
        let r = ops::query_hca_cap(&mut self.inb, CapType::Roce, true);
        self.exec(r).map_err(bu(Step::HcaCaps))?;
        let mut cur = [0u8; roce_cap::LEN];
        cur.copy_from_slice(&self.outb[page.clone()]);
        let r = ops::query_hca_cap(&mut self.inb, CapType::Roce, false);
        self.exec(r).map_err(bu(Step::HcaCaps))?;
        let mut max = [0u8; roce_cap::LEN];
        max.copy_from_slice(&self.outb[page]);
        if let Some(r) = ops::set_roce_src_udp_port(&mut self.inb, &cur, &max) {
            self.exec(r).map_err(bu(Step::HcaCaps))?;
        }
        Ok(())
    }

    /// After INIT_HCA on an Ethernet port with RoCE: set the vport's
    /// `roce_en` (if configured) and read the RoCE capabilities.
    fn set_up_roce(&mut self) -> Result<(), DeviceError> {
        if self.cfg.enable_roce {
            let r = ops::modify_nic_vport_roce(&mut self.inb, true);
            self.exec(r).map_err(bu(Step::EnableRoce))?;
            self.roce_enabled = true;
        }
        // RoCE caps (which loopback QPs firmware allows); firmware
        // without the page leaves them unknown.
        let r = ops::query_hca_cap(&mut self.inb, CapType::Roce, true);
        match self.exec(r) {
            Ok(_) => {
                self.roce = Some(ops::parse_roce_caps(&self.outb[ops::CAP_OFFSET..]));
            }
            Err(CmdError::Failed { .. }) => self.roce = None,
            Err(e) => {
                return Err(DeviceError::BringUp {
                    step: Step::HcaCaps,
                    err: e,
                })
            }
        }
        Ok(())
    }

    /// Step 12: ALLOC_UAR; the UAR number must fit 24 bits.
    fn alloc_uar(&mut self) -> Result<(), DeviceError> {
        let r = ops::alloc_uar(&mut self.inb);
        self.exec(r).map_err(bu(Step::AllocUar))?;
        let uar = ops::parse_obj_id(&self.outb);
        if uar > ops::OBJ_NUMBER_MAX {
            return Err(DeviceError::BadObjectNumber {
                what: "UAR",
                number: uar,
            });
        }
        self.uar = uar;
        Ok(())
    }

    /// Steps 6 and 9: QUERY_PAGES of `kind`, then MANAGE_PAGES GIVE of as
    /// many pages as firmware asks for; a command error is named `step`.
    fn supply_pages(&mut self, kind: PagesKind, step: Step) -> Result<(), DeviceError> {
        let r = ops::query_pages(&mut self.inb, kind);
        self.exec(r).map_err(bu(step))?;
        let (func, n) = ops::parse_query_pages(&self.outb);
        if n > 0 {
            self.give_pages(func, n as u32, SlotKind::Regular)
                .map_err(|e| match e {
                    DeviceError::Cmd(err) => DeviceError::BringUp { step, err },
                    o => o,
                })?;
        }
        Ok(())
    }
}
