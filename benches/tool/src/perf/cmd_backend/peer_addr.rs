//! How this host is addressed in a two-host run and how it reaches the
//! peer ([`HostAddr`]): the GID table entries it programs (from `--ip`,
//! or the simulator wire's identity), the source GID index (`-x`, else
//! perftest's choice), its LID on InfiniBand, and the address path toward
//! the endpoint the peer's key message names ([`path_to`]), with the
//! peer's MAC from `--dmac` or derived from its GID.

use anyhow::{anyhow, bail};
use bareverbs::cmd::ops::RoceVersion;
use bareverbs::cmd::{Bar0, Clock};
use bareverbs::device::{AddressPath, Device, LinkLayer, UarMap};
use bareverbs::error::Chain;
use bareverbs::platform::DmaAllocator;
use bareverbs::qp::QpType;
use bareverbs::verbs::{AddressHandle, GlobalRoute};
use std::net::IpAddr;

/// A MAC derived from a GID by a rule the GID's owner follows (the
/// simulator wire's), `None` when the GID is not of that kind.
pub type MacOfGid = fn(&[u8; 16]) -> Option<[u8; 6]>;

/// The addressing flags of a two-host run.
#[derive(Clone, Debug, Default)]
pub struct HostAddr {
    /// `-x`: the source GID index (default: perftest's choice among the
    /// programmed entries; on InfiniBand: no GRH).
    pub gid_index: Option<u16>,
    /// `--ip`: this port's IP address, programmed into the GID table as
    /// the kernel would (RoCE v1 and v2 entries from index 2).
    pub ip: Option<IpAddr>,
    /// `--dmac`: the peer port's MAC (RoCE; default: derived from the
    /// peer's GID where the GID names it).
    pub dmac: Option<[u8; 6]>,
    /// A GID and MAC programmed as-is (RoCE v1 at index 2, v2 at 3): the
    /// simulator wire's identity.
    pub fixed: Option<([u8; 16], [u8; 6])>,
    /// The peer MAC rule of the GIDs `fixed` is one of.
    pub mac_of_gid: Option<MacOfGid>,
}

/// This host's side of the addressing, once programmed.
#[derive(Clone, Copy, Debug)]
pub(super) struct Local {
    /// LID (InfiniBand; 0 on RoCE).
    pub(super) lid: u16,
    /// The source GID index, when a GRH is sent (always on RoCE).
    pub(super) gid_index: Option<u16>,
    /// The source GID (zero without a GID index).
    pub(super) gid: [u8; 16],
}

/// Programs this host's GID entries (RoCE) and picks its source GID.
pub(super) fn prepare<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    dev: &mut Device<B, C, A>,
    addr: &HostAddr,
) -> anyhow::Result<Local> {
    let link = dev.link_layer();
    if link == LinkLayer::InfiniBand {
        let lid = dev
            .query_hca_vport_context(1)
            .map_err(|e| {
                anyhow!(
                    "QUERY_HCA_VPORT_CONTEXT (the port's LID): {}",
                    Chain::new(&e)
                )
            })?
            .lid;
        let gid_index = addr.gid_index;
        let gid = match gid_index {
            Some(i) => dev.gid(i).map(|g| g.gid).unwrap_or([0; 16]),
            None => [0; 16],
        };
        return Ok(Local {
            lid,
            gid_index,
            gid,
        });
    }
    if link != LinkLayer::Ethernet {
        bail!("port 1's link layer is neither InfiniBand nor Ethernet: no peer can be reached");
    }
    let mut chosen = addr.gid_index;
    if let Some((gid, mac)) = addr.fixed {
        for (index, version) in [(2, RoceVersion::V1), (3, RoceVersion::V2)] {
            let entry = bareverbs::cmd::ops::RoceAddress {
                gid,
                mac,
                vlan: None,
                version,
            };
            dev.set_gid(index, &entry).map_err(|e| {
                anyhow!("SET_ROCE_ADDRESS at GID index {index}: {}", Chain::new(&e))
            })?;
        }
        chosen = chosen.or(Some(3));
    }
    if let Some(ip) = addr.ip {
        let pair = dev.add_ip_gids(ip, None, None).map_err(|e| {
            anyhow!(
                "programming the GID entries of --ip {ip}: {}",
                Chain::new(&e)
            )
        })?;
        chosen = chosen.or(Some(pair.v2));
    }
    let index = match chosen.or_else(|| dev.best_gid_index(false)) {
        Some(i) => i,
        None => bail!(
            "no GID to send from: this port's GID table is empty (over VFIO no kernel fills \
             it); give --ip A.B.C.D, this port's IP address"
        ),
    };
    let gid = dev
        .gid(index)
        .ok_or_else(|| {
            anyhow!("-x {index}: GID index {index} was never programmed (give --ip, or another -x)")
        })?
        .gid;
    Ok(Local {
        lid: 0,
        gid_index: Some(index),
        gid,
    })
}

/// The MAC of an IPv6 link-local GID made from a MAC (`fe80::/64` with
/// the modified EUI-64 interface identifier: `ff:fe` in its middle, the
/// universal/local bit flipped), `None` for any other GID.
pub fn mac_of_link_local(gid: &[u8; 16]) -> Option<[u8; 6]> {
    let link_local = gid[..8] == [0xfe, 0x80, 0, 0, 0, 0, 0, 0];
    if !link_local || gid[11] != 0xff || gid[12] != 0xfe {
        return None;
    }
    Some([gid[8] ^ 0x02, gid[9], gid[10], gid[13], gid[14], gid[15]])
}

/// The address path from `local` toward the peer at (`lid`, `gid`) for a
/// `qp_type` QP on this device's port 1.
pub(super) fn path_to<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    dev: &Device<B, C, A>,
    addr: &HostAddr,
    local: &Local,
    qp_type: QpType,
    peer: (u16, [u8; 16]),
) -> anyhow::Result<AddressPath> {
    let (lid, gid) = peer;
    let link = dev.link_layer();
    let ah = match (link, local.gid_index) {
        (LinkLayer::Ethernet, Some(index)) => {
            let dmac = match addr.dmac {
                Some(m) => m,
                None => addr
                    .mac_of_gid
                    .and_then(|f| f(&gid))
                    .or_else(|| mac_of_link_local(&gid))
                    .ok_or_else(|| {
                        anyhow!(
                            "the peer's GID {} does not name its MAC: give --dmac (the peer \
                             port's MAC address, e.g. from `ip link` on the peer)",
                            std::net::Ipv6Addr::from(gid)
                        )
                    })?,
            };
            AddressHandle::roce(1, gid, dmac, index as u8)
        }
        (LinkLayer::Ethernet, None) => bail!("a RoCE path needs a source GID index"),
        (_, index) => {
            let mut ah = AddressHandle::ib(1, lid);
            if let Some(i) = index {
                ah.grh = Some(GlobalRoute::new(gid, i as u8));
            }
            ah
        }
    };
    let sgid = local.gid_index.and_then(|i| dev.gid(i)).map(|g| g.version);
    ah.path(link, qp_type, sgid)
        .map_err(|e| anyhow!("the address path toward the peer: {}", Chain::new(&e)))
}
