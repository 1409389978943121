//! Command-created objects on the simulator's data path.
//!
//! [`FabricPath`] is the [`DataPath`] that makes the objects firmware
//! creates by command (CREATE_MKEY, CREATE_CQ, CREATE_QP, CREATE_RMP or CREATE_SRQ and
//! the modify-QP commands, [ref §6–§7](bareverbs::reference)) *the* objects a simulated
//! [`Device`](crate::Device) executes: same numbers (QPN, CQN, SRQN, mkey
//! index), same ring pages, same doorbell records, in one DMA address space
//! shared by firmware, driver and data path. UAR stores on the emulated
//! BAR0 (send doorbells, BlueFlame chunks, CQ arm) go to the device's UAR
//! model. [`bring_up_on`] assembles it: a fabric device, a firmware model
//! behind an emulated BAR0, the path between them, and the core's
//! [`Device::bring_up`] — the code a VFIO host runs against hardware.
//!
//! Translation of firmware contexts into the data path's terms:
//!
//! | firmware | data path |
//! | --- | --- |
//! | mkey `lr/lw/rr/rw/a` | `LOCAL_WRITE 1`, `REMOTE_WRITE 2`, `REMOTE_READ 4`, `REMOTE_ATOMIC 8` |
//! | qpc `st` 0/1/2 | RC / UC / UD |
//! | qpc `log_rq_stride` | RQ WQE shift − 4 |
//! | qpc `rre/rwe/rae` | QP access flags |
//! | ads `fl` | route to the local port |
//! | Ethernet port, connected QP: ads `rgid_rip` + `rmac` | route to the port whose GID table holds that GID with that MAC (none: lost) |
//! | ads `rlid` | route to the port with that LID |
//! | ads `grh` without `rlid` | route to the port whose GID is `rgid` ([`sim_gid`]) |
//! | `log_rra_max` / `log_sra_max` | `max_dest_rd_atomic` / `max_rd_atomic` = 2^log |
//!
//! What the data path cannot execute is refused before firmware commits
//! it (the command fails with BAD_PARAM / [`reason::DATA_PATH`], the reason
//! text is in [`SimFirmware::refusals`](super::SimFirmware::refusals)):
//! 128-byte CQEs, and rings or memory keys whose pages are not one
//! contiguous device range (the data path keeps one CPU pointer per ring).
//!
//! [`reason::DATA_PATH`]: super::reason::DATA_PATH

use super::objects::{CqObj, DataPath, MkeyObj, ObjectEvent, QpObj, SrqObj};
use super::{guid_of_mac, FakeClock, FwConfig, SharedDma, SimBar, SimDevice};
use crate::device::{sim_gid, Device as SimNic, Fabric, Pd, QpInit, SimUar};
use crate::dma::HeapDma;
use crate::objects::QpAttr;
use bareverbs::cmd::ops::HwQpState;
use bareverbs::device::{Device, DeviceConfig, DeviceError};
use bareverbs::mr::Access;
use bareverbs::platform::Uar;
use bareverbs::qp::{transition_attrs, QpAttrMask, QpState, QpType};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The [`DataPath`] joining a firmware model to a simulated device.
pub struct FabricPath {
    nic: SimNic,
    cqe_version: u8,
    uars: BTreeMap<u32, SimUar>,
    types: BTreeMap<u32, QpType>,
}

impl std::fmt::Debug for FabricPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FabricPath")
            .field("nic", &self.nic)
            .field("cqe_version", &self.cqe_version)
            .field("uars", &self.uars.len())
            .field("types", &self.types)
            .finish()
    }
}

impl FabricPath {
    /// A path onto `nic`; CQEs are written in `cqe_version` (the version
    /// QUERY_HCA_CAP reports, which the driver parses with).
    pub fn new(nic: SimNic, cqe_version: u8) -> Self {
        FabricPath {
            nic,
            cqe_version,
            uars: BTreeMap::new(),
            types: BTreeMap::new(),
        }
    }

    fn mkey(&mut self, m: &MkeyObj) -> Result<(), &'static str> {
        let size = 1u64 << m.log_page_size;
        let need = bareverbs::cmd::ops::mkey_pages(m.start, m.len, m.log_page_size)
            .and_then(|(_, n)| usize::try_from(n).ok())
            .ok_or("memory key span overflows")?;
        let pages = &m.pages[..need.min(m.pages.len())];
        let first = *pages.first().ok_or("memory key has no pages")?;
        if !pages
            .windows(2)
            .all(|w| w[0].checked_add(size) == Some(w[1]))
        {
            return Err("memory key pages are not one contiguous device range");
        }
        let access = m.access.to_ibv();
        self.nic.adopt_pd(Pd(m.pd));
        let key = bareverbs::mr::mkey_from_parts(m.index, m.variant);
        self.nic
            .reg_mr_as(
                key,
                Pd(m.pd),
                m.start,
                m.len,
                first + (m.start & (size - 1)),
                access,
            )
            .map_err(|_| "memory key range is not inside one DMA allocation")
    }

    fn cq(&mut self, c: &CqObj) -> Result<(), &'static str> {
        if c.cqe_sz != 0 {
            return Err("128-byte CQEs are not simulated");
        }
        let ring = contiguous(&c.pages).ok_or("CQ pages are not one contiguous device range")?;
        self.nic
            .create_cq_as(c.cqn, 1 << c.log_size, self.cqe_version, ring, c.dbr_addr)
            .map_err(|_| "CQ ring or doorbell record not inside a DMA allocation")
    }

    fn srq(&mut self, s: &SrqObj) -> Result<(), &'static str> {
        let ring = contiguous(&s.pages).ok_or("SRQ pages are not one contiguous device range")?;
        self.nic.adopt_pd(Pd(s.pd));
        self.nic
            .create_srq_as(
                s.srqn,
                Pd(s.pd),
                1 << s.log_size,
                s.log_stride as u32 + 4,
                ring,
                s.dbr_addr,
            )
            .map_err(|_| "SRQ ring or doorbell record not inside a DMA allocation")
    }

    fn qp(&mut self, q: &QpObj) -> Result<(), &'static str> {
        let ty = q.st.qp_type();
        let base = contiguous(&q.pages).ok_or("QP pages are not one contiguous device range")?;
        let rq_shift = q.log_rq_stride as u32 + 4;
        let rq_wqes = if q.srqn.is_some() {
            0
        } else {
            1u32 << q.log_rq_size
        };
        let rq_bytes = (rq_wqes as u64) << rq_shift;
        let sq_wqebbs = if q.no_sq { 0 } else { 1u32 << q.log_sq_size };
        self.nic.adopt_pd(Pd(q.pd));
        let init = QpInit {
            qp_type: ty,
            pd: Pd(q.pd),
            send_cq: q.cqn_snd,
            recv_cq: q.cqn_rcv,
            srq: q.srqn,
            sq_wqebbs,
            rq_wqes,
            rq_wqe_shift: rq_shift,
            uidx: q.user_index,
        };
        self.nic
            .create_qp_as(
                q.qpn,
                &init,
                (sq_wqebbs > 0)
                    .then(|| base.checked_add(rq_bytes))
                    .map(|a| a.ok_or("QP buffer address overflows"))
                    .transpose()?,
                (rq_wqes > 0).then_some(base),
                q.dbr_addr,
            )
            .map_err(|_| "QP rings, CQs or doorbell record refused by the data path")?;
        self.types.insert(q.qpn, ty);
        Ok(())
    }

    fn modify(&mut self, q: &QpObj) -> Result<(), &'static str> {
        let ty = *self.types.get(&q.qpn).ok_or("unknown QP")?;
        let from = self.nic.qp_state(q.qpn).ok_or("unknown QP")?;
        let to = QpState::from_mlx5(q.state.bits()).ok_or("QP state not simulated")?;
        let (required, _optional) =
            transition_attrs(ty, from, to).ok_or("transition not legal on the data path")?;
        let dlid = if q.fl {
            self.nic.lid()
        } else if q.roce {
            // RoCE: the port that holds the destination GID with the
            // destination MAC; nobody (LID 0, packets lost) otherwise.
            // A wired fabric routes the other addresses over the wire.
            self.nic
                .roce_lid(&q.rgid, &q.rmac)
                .or_else(|| self.nic.wire_lid(&q.rgid, &q.rmac))
                .unwrap_or(0)
        } else if q.rlid != 0 {
            q.rlid
        } else if q.grh && q.rgid[..14] == sim_gid(0)[..14] {
            u16::from_be_bytes([q.rgid[14], q.rgid[15]])
        } else {
            0
        };
        let attr = QpAttr {
            qp_state: to,
            cur_qp_state: from,
            qp_access_flags: Access::from_bits_retain(
                (q.rwe as u32 * Access::REMOTE_WRITE.bits())
                    | (q.rre as u32 * Access::REMOTE_READ.bits())
                    | (q.rae as u32 * Access::REMOTE_ATOMIC.bits()),
            ),
            pkey_index: q.pkey_index,
            port_num: q.port.max(1),
            qkey: q.qkey,
            dlid,
            grh: q.grh,
            path_mtu: q.mtu,
            timeout: q.ack_timeout,
            retry_cnt: q.retry_count,
            rnr_retry: q.rnr_retry,
            rq_psn: q.rq_psn,
            sq_psn: q.sq_psn,
            max_rd_atomic: 1u8 << q.log_sra_max.min(7),
            max_dest_rd_atomic: 1u8 << q.log_rra_max.min(7),
            min_rnr_timer: q.min_rnr_nak,
            dest_qp_num: q.remote_qpn,
        };
        self.nic
            .modify_qp(q.qpn, &attr, required | QpAttrMask::STATE)
            .map_err(|_| "the data path refused the transition")
    }
}

/// The first page when `pages` are consecutive 4 KiB pages.
fn contiguous(pages: &[u64]) -> Option<u64> {
    let first = *pages.first()?;
    pages
        .iter()
        .enumerate()
        .all(|(i, &p)| Some(p) == first.checked_add(4096 * i as u64))
        .then_some(first)
}

impl DataPath for FabricPath {
    fn object_event(&mut self, ev: &ObjectEvent) -> Result<(), &'static str> {
        match ev {
            ObjectEvent::MkeyCreated(m) => self.mkey(m),
            ObjectEvent::MkeyDestroyed(i) => {
                self.nic.destroy_mr_index(*i);
                Ok(())
            }
            ObjectEvent::CqCreated(c) => self.cq(c),
            ObjectEvent::CqDestroyed(n) => {
                self.nic.destroy_cq(*n);
                Ok(())
            }
            ObjectEvent::QpCreated(q) => self.qp(q),
            ObjectEvent::QpModified(q) => self.modify(q),
            ObjectEvent::QpDestroyed(n) => {
                self.nic.destroy_qp(*n);
                self.types.remove(n);
                Ok(())
            }
            ObjectEvent::SrqCreated(s) => self.srq(s),
            ObjectEvent::SrqDestroyed(n) => {
                self.nic.destroy_srq(*n);
                Ok(())
            }
            ObjectEvent::GidSet { index, gid, mac } => {
                self.nic.set_roce_gid(*index as usize, *gid, *mac);
                Ok(())
            }
        }
    }

    fn take_completion_events(&mut self) -> Vec<u32> {
        self.nic.take_completion_events()
    }

    fn qp_state(&mut self, qpn: u32) -> Option<HwQpState> {
        Some(match self.nic.qp_state(qpn)? {
            QpState::Reset => HwQpState::Reset,
            QpState::Init => HwQpState::Init,
            QpState::Rtr => HwQpState::Rtr,
            QpState::Rts => HwQpState::Rts,
            QpState::Sqd => HwQpState::Sqd,
            QpState::Sqe => HwQpState::SqErr,
            QpState::Err => HwQpState::Err,
        })
    }

    fn uar_write(&mut self, uar: u32, offset: usize, bytes: &[u8]) {
        let nic = &self.nic;
        let u = self.uars.entry(uar).or_insert_with(|| nic.uar());
        match bytes.len() {
            8 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(bytes);
                u.write64(offset, b);
            }
            4 => {
                let mut b = [0u8; 4];
                b.copy_from_slice(bytes);
                u.write32(offset, b);
            }
            64 => {
                let mut b = [0u8; 64];
                b.copy_from_slice(bytes);
                u.write_bf(offset, &b);
            }
            _ => {}
        }
    }

    fn uar_flush(&mut self, uar: u32) {
        if let Some(u) = self.uars.get_mut(&uar) {
            u.flush();
        }
    }
}

/// Brings up a simulated ConnectX on `fabric`: a new fabric device (LID =
/// its index + 1, GID [`sim_gid`]), a firmware model with `fw` behind an
/// emulated BAR0, a [`FabricPath`] between them, and the core's
/// [`Device::bring_up`] with `dev`. Objects the returned driver creates by
/// command run on the returned simulated device.
///
/// The fabric plays the subnet manager and the vendor's MAC assignment:
/// when `fw` keeps the defaults, an InfiniBand port reports the fabric's
/// LID for the device (QUERY_HCA_VPORT_CONTEXT), and the device's MAC
/// (and the GUIDs derived from it) ends in its index (the last two bytes
/// count up from the default's), so functions on one
/// fabric are told apart by their addresses as on a real network.
pub fn bring_up_on(
    fabric: &Fabric,
    mut fw: FwConfig,
    dev: DeviceConfig,
) -> Result<(SimDevice, SimNic), DeviceError> {
    let dma = Arc::new(HeapDma::new());
    let nic = fabric.add_device_with_dma(dma.clone());
    let d = FwConfig::default();
    if fw.lid == d.lid {
        fw.lid = nic.lid();
    }
    if fw.mac == d.mac {
        let low = u16::from_be_bytes([fw.mac[4], fw.mac[5]]).wrapping_add(nic.index() as u16);
        [fw.mac[4], fw.mac[5]] = low.to_be_bytes();
        if fw.node_guid == d.node_guid {
            fw.node_guid = guid_of_mac(fw.mac);
        }
        if fw.system_image_guid == d.system_image_guid {
            fw.system_image_guid = guid_of_mac(fw.mac);
        }
    }
    let cqe_version = fw.caps.cqe_version;
    let bar = SimBar::new(dma.clone(), fw);
    bar.fw()
        .set_data_path(Box::new(FabricPath::new(nic.clone(), cqe_version)));
    let d = Device::bring_up(bar, FakeClock::default(), SharedDma(dma), dev)?;
    Ok((d, nic))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguity() {
        assert_eq!(contiguous(&[0x1000, 0x2000, 0x3000]), Some(0x1000));
        assert_eq!(contiguous(&[0x1000, 0x3000]), None);
        assert_eq!(contiguous(&[]), None);
        assert_eq!(contiguous(&[!0xfff, 0]), None);
    }

    #[test]
    fn gid_names_the_lid() {
        assert_eq!(sim_gid(0x0102)[14..], [1, 2]);
        assert_eq!(sim_gid(7)[..2], [0xfe, 0x80]);
    }
}
