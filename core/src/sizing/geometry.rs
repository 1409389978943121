//! Compile-time checked geometry: device caps as a type ([`ConstCaps`]) and
//! QP / SQ capacities whose layout is a constant ([`QpGeometry`],
//! [`SqGeometry`]), so an impossible capacity fails to compile.

use super::caps::DeviceCaps;
use super::error::Stage;
use super::ops::SendOps;
use super::qp::{qp_layout, QpLayout};
use super::qp_caps::QpCaps;
use super::qp_type::QpType;

/// Device capabilities known at compile time, for [`QpGeometry`].
pub trait ConstCaps {
    /// The device limits.
    const CAPS: DeviceCaps;
}

/// [`DeviceCaps::DEFAULT`] as a [`ConstCaps`].
#[derive(Clone, Copy, Debug)]
pub struct DefaultCaps;

impl ConstCaps for DefaultCaps {
    const CAPS: DeviceCaps = DeviceCaps::DEFAULT;
}

/// Op-set parameter value meaning "the classic default set" for [`QpGeometry`].
pub const CLASSIC_OPS: u32 = u32::MAX;

/// A QP capacity checked at compile time. Using [`QpGeometry::LAYOUT`] with an
/// impossible capacity is a compile error.
///
/// Parameters: device caps `C`, QP type id `QPT` ([`QpType::RC_ID`] …), op-set
/// bits `OPS` ([`CLASSIC_OPS`] for the default set), `max_send_wr`,
/// `max_send_sge`, `max_inline_data`, `max_recv_wr`, `max_recv_sge`.
///
/// ```
/// use bareverbs::sizing::{QpGeometry, DefaultCaps, QpType, CLASSIC_OPS};
/// // ref §3.9: RC, 1024 WRs × 16 SGEs → 448-byte WQEs, 8192 WQEBBs, max_post 1170.
/// type G = QpGeometry<DefaultCaps, { QpType::RC_ID }, CLASSIC_OPS, 1024, 16, 0, 1024, 1>;
/// const L: bareverbs::sizing::QpLayout = G::LAYOUT;
/// assert_eq!(L.sq.wqe_size, 448);
/// assert_eq!(L.sq.wqe_cnt, 8192);
/// assert_eq!(L.sq.max_post, 1170);
/// ```
///
/// 65536 WRs × 16 SGEs need 524288 WQEBBs; the device allows 32768, so this
/// does not compile:
///
/// ```compile_fail
/// use bareverbs::sizing::{QpGeometry, DefaultCaps, QpType, CLASSIC_OPS};
/// type G = QpGeometry<DefaultCaps, { QpType::RC_ID }, CLASSIC_OPS, 65536, 16, 0, 0, 0>;
/// const L: bareverbs::sizing::QpLayout = G::LAYOUT;
/// ```
pub struct QpGeometry<
    C: ConstCaps,
    const QPT: u8,
    const OPS: u32,
    const WR: u32,
    const SGE: u32,
    const INLINE: u32,
    const RECV_WR: u32,
    const RECV_SGE: u32,
>(core::marker::PhantomData<C>);

impl<
        C: ConstCaps,
        const QPT: u8,
        const OPS: u32,
        const WR: u32,
        const SGE: u32,
        const INLINE: u32,
        const RECV_WR: u32,
        const RECV_SGE: u32,
    > core::fmt::Debug for QpGeometry<C, QPT, OPS, WR, SGE, INLINE, RECV_WR, RECV_SGE>
{
    /// The parameters only: formatting never evaluates the layout.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QpGeometry")
            .field("qp_type", &QPT)
            .field("ops", &OPS)
            .field("wr", &WR)
            .field("sge", &SGE)
            .field("inline", &INLINE)
            .field("recv_wr", &RECV_WR)
            .field("recv_sge", &RECV_SGE)
            .finish()
    }
}

impl<
        C: ConstCaps,
        const QPT: u8,
        const OPS: u32,
        const WR: u32,
        const SGE: u32,
        const INLINE: u32,
        const RECV_WR: u32,
        const RECV_SGE: u32,
    > QpGeometry<C, QPT, OPS, WR, SGE, INLINE, RECV_WR, RECV_SGE>
{
    /// The request these parameters describe.
    pub const CAPS: QpCaps = {
        let qp_type = match QpType::from_id(QPT) {
            Some(t) => t,
            None => panic!("unknown QP type id"),
        };
        let req = QpCaps::new(qp_type)
            .send(WR, SGE, INLINE)
            .recv(RECV_WR, RECV_SGE);
        if OPS == CLASSIC_OPS {
            req
        } else {
            req.ops(SendOps::from_bits_truncate(OPS))
        }
    };

    /// The layout; evaluating it fails to compile if the device cannot hold the QP.
    pub const LAYOUT: QpLayout = match qp_layout(&Self::CAPS, &C::CAPS) {
        Ok(l) => l,
        Err(e) => match e.stage {
            Stage::Sq => panic!("QP does not fit the device: send queue limit exceeded"),
            _ => panic!("QP does not fit the device: receive queue limit exceeded"),
        },
    };
}

/// An SQ-only RC capacity (classic op set) checked at compile time; shorthand
/// for [`QpGeometry`] without an RQ.
///
/// ```
/// use bareverbs::sizing::{SqGeometry, DefaultCaps};
/// // ref §3.9: RC 8192 × 1 SGE is exactly at the 32768-WQEBB limit.
/// assert_eq!(SqGeometry::<DefaultCaps, 8192, 1>::LAYOUT.sq.wqe_cnt, 32768);
/// ```
///
/// ```compile_fail
/// use bareverbs::sizing::{SqGeometry, DefaultCaps};
/// let _ = SqGeometry::<DefaultCaps, 65536, 16>::LAYOUT;
/// ```
pub struct SqGeometry<C: ConstCaps, const WR: u32, const SGE: u32, const INLINE: u32 = 0>(
    core::marker::PhantomData<C>,
);

impl<C: ConstCaps, const WR: u32, const SGE: u32, const INLINE: u32> core::fmt::Debug
    for SqGeometry<C, WR, SGE, INLINE>
{
    /// The parameters only: formatting never evaluates the layout.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SqGeometry")
            .field("wr", &WR)
            .field("sge", &SGE)
            .field("inline", &INLINE)
            .finish()
    }
}

impl<C: ConstCaps, const WR: u32, const SGE: u32, const INLINE: u32>
    SqGeometry<C, WR, SGE, INLINE>
{
    /// The layout; a compile error if the device cannot hold the SQ.
    pub const LAYOUT: QpLayout =
        match qp_layout(&QpCaps::new(QpType::Rc).send(WR, SGE, INLINE), &C::CAPS) {
            Ok(l) => l,
            Err(_) => panic!("SQ does not fit the device"),
        };
}
