//! How an [`AddressHandle`] becomes the mlx5 address path of INIT2RTR
//! ([ref §7.16](crate::reference)): the rule of the vendor kernel's
//! `mlx5_set_path` (`drivers/infiniband/hw/mlx5/qp.c`), per link layer.
//!
//! | field | InfiniBand | Ethernet (RoCE) |
//! | --- | --- | --- |
//! | `fl` | force-loopback | 0 (bareverbs: force-loopback, where the RoCE cap's `fl_rc_qp_when_roce_*` allows it) |
//! | `rlid` | `dlid` (1…0xbfff) | 0 |
//! | `grh` | a GRH is given | 0 (RoCE always routes by GID) |
//! | `sl` / `eth_prio` | `sl` (0…15) / 0 | 0 / `sl` (0…7) |
//! | `rmac` | 0 | `dmac` (unicast) |
//! | `src_addr_index`, `hop_limit`, `tclass`, `flow_label`, `rgid_rip` | from the GRH | from the GRH (required) |
//! | `dscp` | 0 | `traffic_class >> 2` when the source entry is RoCE v2 |
//! | `udp_sport` | 0 | RC/UC from a RoCE v2 source: the flow label's port, or 0 for the device to fill with the QP pair's (bareverbs: an explicit `udp_sport` wins) |
//!
//! A UD QP's INIT2RTR names no peer (the address goes in each WQE), so its
//! path carries the port only. Nothing is masked into range: a value its
//! field cannot hold, a RoCE path without a GRH or MAC, an IB path to LID
//! 0, a link layer that is neither, or a source GID index the driver never
//! programmed is refused with a typed error.

use super::qp_attr::AddressHandle;
use crate::cmd::ops::{udp_sport_of_flow_label, AddressPath, RoceVersion};
use crate::device::{check_fields, check_roce, has_peer_path, DeviceError, LinkLayer};
use crate::sizing::QpType;

/// Largest unicast LID (`0xc000` and up are multicast, `0xffff` the
/// permissive LID).
pub const MAX_UNICAST_LID: u16 = 0xbfff;

impl AddressHandle {
    /// The address path of a `qp_type` QP on a `link` port toward this
    /// address; `sgid` is the RoCE version of the source GID entry the GRH
    /// names, as the driver programmed it (`None`: not programmed).
    pub fn path(
        &self,
        link: LinkLayer,
        qp_type: QpType,
        sgid: Option<RoceVersion>,
    ) -> Result<AddressPath, DeviceError> {
        let mut p = AddressPath {
            port: self.port_num,
            ..AddressPath::default()
        };
        if !has_peer_path(qp_type) {
            return Ok(p);
        }
        let ethernet = match link {
            LinkLayer::Ethernet => true,
            LinkLayer::InfiniBand => false,
            LinkLayer::Other(_) => {
                return Err(DeviceError::BadPath {
                    why: "the port's link layer is neither InfiniBand nor Ethernet",
                })
            }
        };
        p.fl = self.force_loopback;
        if let Some(g) = self.grh {
            p.sgid_index = g.sgid_index;
            p.hop_limit = g.hop_limit;
            p.tclass = g.traffic_class;
            p.flow_label = g.flow_label;
            p.rgid = g.dgid;
        }
        if ethernet {
            p.eth_prio = self.sl;
        } else {
            p.sl = self.sl;
            p.grh = self.grh.is_some();
        }
        check_fields(&p)?;
        if self.force_loopback {
            return Ok(p);
        }
        if !ethernet {
            if self.dlid == 0 || self.dlid > MAX_UNICAST_LID {
                return Err(DeviceError::BadPath {
                    why: "an InfiniBand path needs the peer's unicast LID (1..=0xbfff)",
                });
            }
            p.rlid = self.dlid;
            return Ok(p);
        }
        if self.grh.is_none() {
            return Err(DeviceError::BadPath {
                why: "a RoCE path routes by GID: give the peer's GID (AddressHandle::roce)",
            });
        }
        p.rmac = self.dmac;
        if check_roce(&p, sgid)? == RoceVersion::V2 {
            p.dscp = p.tclass >> 2;
            p.udp_sport = match (self.udp_sport, p.flow_label) {
                (0, 0) => 0,
                (0, fl) => udp_sport_of_flow_label(fl),
                (port, _) => port,
            };
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    //! The path bytes against the vendor kernel's `mlx5_set_path`
    //! (`drivers/infiniband/hw/mlx5/qp.c`), field by field, for the same
    //! `rdma_ah_attr`.
    use super::*;
    use crate::cmd::layout::{ads, qpc};
    use crate::cmd::ops::{init2rtr, Init2Rtr};
    use crate::verbs::GlobalRoute;

    const PATH: usize = crate::cmd::ops::QPC + qpc::PRI_PATH;

    fn bytes(p: AddressPath) -> [u8; 0x200] {
        let mut b = [0u8; 0x200];
        let a = Init2Rtr {
            path: p,
            ..Init2Rtr::default()
        };
        init2rtr(&mut b, 0x1234, &a);
        b
    }

    fn roce_ah() -> AddressHandle {
        let dgid = crate::cmd::ops::gid_ipv4_mapped([192, 168, 7, 9]);
        let mut ah = AddressHandle::roce(1, dgid, [0x0c, 0x42, 0xa1, 1, 2, 3], 3);
        ah.sl = 5;
        ah.udp_sport = 0xc123;
        ah.grh = Some(GlobalRoute {
            flow_label: 0x12345,
            hop_limit: 64,
            traffic_class: 0x6b,
            ..GlobalRoute::new(dgid, 3)
        });
        ah
    }

    #[test]
    fn roce_v2_path_is_the_kernels() {
        let ah = roce_ah();
        let p = ah
            .path(LinkLayer::Ethernet, QpType::Rc, Some(RoceVersion::V2))
            .unwrap();
        let b = bytes(p);
        let f = |x: crate::cmd::bits::Field| x.get(&b, PATH);
        // RoCE branch: rmac = dmac, udp_sport (RC), eth_prio = sl & 7,
        // dscp = traffic_class >> 2 for a RoCE v2 source GID ...
        assert_eq!(f(ads::RMAC_47_32), 0x0c42);
        assert_eq!(f(ads::RMAC_31_0), 0xa1010203);
        assert_eq!(f(ads::UDP_SPORT), 0xc123);
        assert_eq!(f(ads::ETH_PRIO), 5);
        assert_eq!(f(ads::DSCP), 0x6b >> 2);
        // ... and none of the IB branch: no fl, rlid, grh bit, sl.
        assert_eq!(
            (f(ads::FL), f(ads::RLID), f(ads::GRH), f(ads::SL)),
            (0, 0, 0, 0)
        );
        // GRH part (both link layers): src_addr_index, hop_limit, tclass,
        // flow_label, rgid_rip.
        assert_eq!(f(ads::SRC_ADDR_INDEX), 3);
        assert_eq!(f(ads::HOP_LIMIT), 64);
        assert_eq!(f(ads::TCLASS), 0x6b);
        assert_eq!(f(ads::FLOW_LABEL), 0x12345);
        let rgid = PATH + ads::RGID_RIP;
        assert_eq!(b[rgid..rgid + 16], ah.grh.unwrap().dgid);
        assert_eq!(f(ads::VHCA_PORT_NUM), 1);
        // Byte positions from mlx5_ifc.h `ads`: tclass at bits 0x64..0x6c
        // (dword 3, bits 27..20), dscp at 0x10a..0x110 (dword 8, 21..16),
        // eth_prio at 0x121..0x124 (dword 9, 30..28).
        assert_eq!(b[PATH + 0x0c] & 0x0f, 0x6b >> 4);
        // flow_label at 0x6c..0x80: the low nibble of byte 0x0d and bytes
        // 0x0e, 0x0f; tclass's low nibble above it.
        assert_eq!(b[PATH + 0x0d..PATH + 0x10], [0xb1, 0x23, 0x45]);
        assert_eq!(b[PATH + 0x22..PATH + 0x24], [0xc1, 0x23], "udp_sport");
        assert_eq!(b[PATH + 0x21] & 0x3f, 0x6b >> 2);
        assert_eq!(b[PATH + 0x24] >> 4, 5);
    }

    #[test]
    fn roce_v1_has_no_dscp_or_udp_sport_and_ud_no_peer() {
        let ah = roce_ah();
        let v1 = ah
            .path(LinkLayer::Ethernet, QpType::Rc, Some(RoceVersion::V1))
            .unwrap();
        assert_eq!((v1.dscp, v1.tclass, v1.udp_sport), (0, 0x6b, 0));
        let uc = ah
            .path(LinkLayer::Ethernet, QpType::Uc, Some(RoceVersion::V2))
            .unwrap();
        assert_eq!(uc.udp_sport, 0xc123);
        // UD: INIT2RTR names no peer; the port only, on any link layer,
        // whatever the handle holds (even nothing).
        for link in [LinkLayer::Ethernet, LinkLayer::InfiniBand] {
            for h in [ah, AddressHandle::default()] {
                let ud = h.path(link, QpType::Ud, None).unwrap();
                let want = AddressPath {
                    port: h.port_num,
                    ..AddressPath::default()
                };
                assert_eq!(ud, want);
            }
        }
    }

    #[test]
    fn udp_sport_follows_the_flow_label_then_the_device() {
        let mut ah = roce_ah();
        ah.udp_sport = 0;
        let p = ah
            .path(LinkLayer::Ethernet, QpType::Rc, Some(RoceVersion::V2))
            .unwrap();
        // rdma_flow_label_to_udp_sport(0x12345): (0x2345 ^ 0x4) | 0xc000.
        assert_eq!(p.udp_sport, 0xe341);
        if let Some(g) = ah.grh.as_mut() {
            g.flow_label = 0;
        }
        let p = ah
            .path(LinkLayer::Ethernet, QpType::Rc, Some(RoceVersion::V2))
            .unwrap();
        assert_eq!(p.udp_sport, 0, "left to the device (the QP pair's port)");
    }

    #[test]
    fn ib_path_is_the_kernels() {
        let mut ah = AddressHandle::ib(1, 0x0017);
        ah.sl = 11;
        let p = ah.path(LinkLayer::InfiniBand, QpType::Rc, None).unwrap();
        let b = bytes(p);
        let f = |x: crate::cmd::bits::Field| x.get(&b, PATH);
        // IB branch: rlid, sl & 0xf, grh bit only with a GRH; no RoCE fields.
        assert_eq!((f(ads::RLID), f(ads::SL), f(ads::GRH)), (0x17, 11, 0));
        assert_eq!(
            (f(ads::ETH_PRIO), f(ads::DSCP), f(ads::UDP_SPORT)),
            (0, 0, 0)
        );
        assert_eq!((f(ads::RMAC_47_32), f(ads::RMAC_31_0)), (0, 0));
        ah.grh = Some(GlobalRoute {
            traffic_class: 0x20,
            ..GlobalRoute::new([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8], 0)
        });
        let p = ah.path(LinkLayer::InfiniBand, QpType::Rc, None).unwrap();
        let b = bytes(p);
        let f = |x: crate::cmd::bits::Field| x.get(&b, PATH);
        assert_eq!(
            (f(ads::GRH), f(ads::TCLASS), f(ads::HOP_LIMIT)),
            (1, 0x20, 0xff)
        );
        assert_eq!(f(ads::DSCP), 0, "DSCP is a RoCE v2 field");
    }

    #[test]
    fn values_outside_their_fields_are_refused_not_masked() {
        let mut ah = AddressHandle::ib(1, 1);
        ah.sl = 16;
        assert!(matches!(
            ah.path(LinkLayer::InfiniBand, QpType::Rc, None),
            Err(DeviceError::Limit {
                requested: 16,
                max: 15,
                ..
            })
        ));
        let mut ah = roce_ah();
        if let Some(g) = ah.grh.as_mut() {
            g.flow_label = 0x10_0000;
        }
        assert!(matches!(
            ah.path(LinkLayer::Ethernet, QpType::Rc, Some(RoceVersion::V2)),
            Err(DeviceError::Limit { max: 0xf_ffff, .. })
        ));
        let ah = AddressHandle::ib(1, 0xc000);
        assert!(matches!(
            ah.path(LinkLayer::InfiniBand, QpType::Rc, None),
            Err(DeviceError::BadPath { .. })
        ));
        // Force-loopback needs no address on either link layer.
        for link in [LinkLayer::Ethernet, LinkLayer::InfiniBand] {
            let p = AddressHandle::loopback(1)
                .path(link, QpType::Rc, None)
                .unwrap();
            assert!(p.fl && p.rlid == 0 && p.rmac == [0; 6]);
        }
        // An IB force-loopback path with a GRH keeps the grh bit.
        let mut fl = AddressHandle::loopback(1);
        let gid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        fl.grh = Some(GlobalRoute::new(gid, 0));
        assert!(
            fl.path(LinkLayer::InfiniBand, QpType::Rc, None)
                .unwrap()
                .grh
        );
        // A link layer that is neither is refused.
        assert!(matches!(
            AddressHandle::ib(1, 1).path(LinkLayer::Other(7), QpType::Rc, None),
            Err(DeviceError::BadPath { .. })
        ));
    }
}
