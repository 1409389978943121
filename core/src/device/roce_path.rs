//! The checks an INIT2RTR address path passes before it is sent, with one
//! owner: [`AddressHandle::path`](crate::verbs::AddressHandle::path)
//! (verbs) and [`Device::init2rtr`](super::Device::init2rtr) (commands)
//! both run them ([ref §7.16](crate::reference)).

use super::gid::unicast_mac;
use super::DeviceError;
use crate::cmd::layout::ads;
use crate::cmd::ops::{AddressPath, RoceVersion};
use crate::sizing::QpType;

/// QP types whose INIT2RTR carries a peer address (RC and UC; a UD QP's
/// peers are named per WQE).
pub(crate) const fn has_peer_path(ty: QpType) -> bool {
    matches!(ty, QpType::Rc | QpType::Uc)
}

fn within(what: &'static str, v: u32, f: crate::cmd::bits::Field) -> Result<(), DeviceError> {
    if v > f.max() {
        return Err(DeviceError::Limit {
            what,
            requested: v as u64,
            max: f.max() as u64,
        });
    }
    Ok(())
}

/// Every value fits its `ads` field (nothing is masked into range).
pub(crate) fn check_fields(p: &AddressPath) -> Result<(), DeviceError> {
    within("service level", p.sl as u32, ads::SL)?;
    within(
        "RoCE service level (Ethernet priority)",
        p.eth_prio as u32,
        ads::ETH_PRIO,
    )?;
    within("DSCP", p.dscp as u32, ads::DSCP)?;
    within("GRH flow label", p.flow_label, ads::FLOW_LABEL)?;
    within("LID path bits (mlid)", p.mlid as u32, ads::MLID)?;
    Ok(())
}

/// A RoCE path (Ethernet port, connected QP, not force-loopback): it
/// routes by GID, so it must send from a source entry the driver
/// programmed (`source`: that entry's RoCE version as recorded), toward a
/// non-zero GID at a unicast MAC, with the InfiniBand fields `grh` and
/// `rlid` left 0 as the kernel leaves them. Returns the source's version.
pub(crate) fn check_roce(
    p: &AddressPath,
    source: Option<RoceVersion>,
) -> Result<RoceVersion, DeviceError> {
    let Some(version) = source else {
        return Err(DeviceError::GidNotProgrammed {
            index: p.sgid_index as u16,
        });
    };
    if p.rgid == [0; 16] {
        return Err(DeviceError::BadPath {
            why: "the destination GID is all zero",
        });
    }
    if !unicast_mac(p.rmac) {
        return Err(DeviceError::BadMac {
            mac: p.rmac,
            what: "destination MAC",
        });
    }
    if p.grh || p.rlid != 0 {
        return Err(DeviceError::BadPath {
            why: "a RoCE path routes by GID: its grh and rlid fields stay 0",
        });
    }
    Ok(version)
}
