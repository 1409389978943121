//! Connecting a command-created QP: the run's link settings ([`Link`],
//! the MTU code from [`mtu_enum`]) and the RESET → INIT → RTR → RTS walk
//! by command: on the NIC's force-loopback path ([`connect`]) or any
//! address path ([`connect_on`], toward a peer host).

use crate::perf::engine::QKEY;
use anyhow::{anyhow, bail};
use bareverbs::cmd::{Bar0, Clock};
use bareverbs::device::{
    AddressPath, Device, DeviceError, Init2Rtr, QpHandle, Rst2Init, Rtr2Rts, UarMap,
};
use bareverbs::error::Chain;
use bareverbs::platform::DmaAllocator;
use bareverbs::qp::QpType;

/// The `IbMtu` code of a path MTU in bytes (`-m`).
pub(super) fn mtu_enum(mtu: u32) -> anyhow::Result<u8> {
    bareverbs::cmd::ops::IbMtu::from_bytes(mtu)
        .map(bareverbs::cmd::ops::IbMtu::code)
        .ok_or_else(|| anyhow!("-m {mtu}: the MTU must be 256, 512, 1024, 2048 or 4096"))
}

/// How the QPs of a run are connected (command-path specifics).
pub(super) struct Link {
    /// Transport of both QPs.
    pub(super) qp_type: QpType,
    /// Path MTU code (`IbMtu`).
    pub(super) mtu: u8,
    /// log2 of the RDMA READ / atomic depth, both directions (RC).
    pub(super) log_ra: u8,
}

/// RESET → INIT → RTR → RTS by command toward `peer` on port 1, looped
/// back by the NIC (force-loopback address path).
pub(super) fn connect<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    dev: &mut Device<B, C, A>,
    qp: &mut QpHandle,
    peer: u32,
    plan: &Link,
    psn: (u32, u32),
) -> anyhow::Result<()> {
    let ud = plan.qp_type == QpType::Ud;
    let path = AddressPath {
        fl: !ud,
        port: 1,
        ..Default::default()
    };
    connect_on(dev, qp, peer, plan, psn, path)
}

/// RESET → INIT → RTR → RTS by command toward QP `peer` over `path`
/// (`psn`: the receive PSN the peer starts at, this QP's send PSN).
pub(super) fn connect_on<B: Bar0 + UarMap, C: Clock, A: DmaAllocator>(
    dev: &mut Device<B, C, A>,
    qp: &mut QpHandle,
    peer: u32,
    plan: &Link,
    psn: (u32, u32),
    path: AddressPath,
) -> anyhow::Result<()> {
    let rc = plan.qp_type == QpType::Rc;
    let ud = plan.qp_type == QpType::Ud;
    if rc && path.fl && dev.force_loopback_rc() == Some(false) {
        bail!(
            "this device does not allow force-loopback RC QPs in its RoCE state \
             (RoCE capability fl_rc_qp_when_roce_enabled/_disabled = 0); \
             the single-device perf tests need them"
        );
    }
    let qpn = qp.qpn();
    let ctx = |step: &str, e: DeviceError| anyhow!("{step} of QP {qpn:#x}: {}", Chain::new(&e));
    dev.rst2init(
        qp,
        &Rst2Init {
            port: 1,
            pkey_index: 0,
            remote_read: rc,
            remote_write: !ud,
            remote_atomic: rc,
            qkey: if ud { QKEY } else { 0 },
        },
    )
    .map_err(|e| ctx("RST2INIT", e))?;
    let log_msg = dev.hca_caps().log_max_msg.min(31);
    dev.init2rtr(
        qp,
        &Init2Rtr {
            mtu: plan.mtu,
            log_msg_max: log_msg,
            remote_qpn: if ud { 0 } else { peer },
            rq_psn: psn.0,
            log_rra_max: if rc { plan.log_ra } else { 0 },
            min_rnr_nak: if rc { 12 } else { 0 },
            path,
        },
    )
    .map_err(|e| ctx("INIT2RTR", e))?;
    dev.rtr2rts(
        qp,
        &Rtr2Rts {
            sq_psn: psn.1,
            retry_count: if rc { 7 } else { 0 },
            rnr_retry: if rc { 7 } else { 0 },
            ack_timeout: if rc { 14 } else { 0 },
            log_sra_max: if rc { plan.log_ra } else { 0 },
        },
    )
    .map_err(|e| ctx("RTR2RTS", e))?;
    Ok(())
}
