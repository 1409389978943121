//! Whole-QP sizing ([ref §3.6](crate::reference)): SQ and RQ in one buffer,
//! its allocation and the capabilities read back ([`QpLayout`]).

use super::caps::DeviceCaps;
use super::error::{Detail, SizingError, Stage};
use super::math::{align_up, check_page_size};
use super::qp_caps::QpCaps;
use super::qp_type::QpType;
use super::rq::{rq_layout, RqLayout};
use super::sq::{sq_layout, SqLayout};

/// The full QP buffer layout and the capabilities read back to the caller
/// ([ref §3.4–§3.6](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpLayout {
    /// QP type it was computed for.
    pub qp_type: QpType,
    /// Send queue.
    pub sq: SqLayout,
    /// Receive queue.
    pub rq: RqLayout,
    /// RQ bytes + SQ bytes.
    pub total_bytes: u64,
    /// Byte offset of the SQ in the QP buffer: the RQ comes first ([ref §3.6](crate::reference));
    /// 0 for RAW_PACKET, whose SQ is a separate buffer.
    pub sq_offset: u64,
    /// Bytes actually allocated: the buffer rounded up to the page size
    /// (RAW_PACKET: page-aligned RQ buffer + page-aligned SQ buffer).
    pub alloc_bytes: u64,
    /// `cap.max_send_wr` read back (= SQ `max_post`).
    pub ret_max_send_wr: u32,
    /// `cap.max_send_sge` read back (unchanged request).
    pub ret_max_send_sge: u32,
    /// `cap.max_inline_data` read back ([ref §3.4](crate::reference) step 3).
    pub ret_max_inline_data: u32,
    /// `cap.max_recv_wr` read back (= RQ `max_post`).
    pub ret_max_recv_wr: u32,
    /// `cap.max_recv_sge` read back (= RQ `max_gs`).
    pub ret_max_recv_sge: u32,
}

/// Size a QP exactly as the mlx5 provider does ([ref §3.2–§3.6](crate::reference)): SQ first
/// (errors name [`Stage::Sq`]), then RQ ([`Stage::Rq`]). Every error carries
/// [`Detail::Qp`] with the SQ overhead and, when known, the send WQE size.
pub const fn qp_layout(req: &QpCaps, caps: &DeviceCaps) -> Result<QpLayout, SizingError> {
    let sq = match sq_layout(req, caps) {
        Ok(s) => s,
        Err(e) => return Err(e),
    };
    let rq = match rq_layout(req, caps) {
        Ok(r) => r,
        Err(e) => {
            return Err(e.with_detail(Detail::Qp {
                sq_overhead: sq.overhead,
                send_wqe_size: sq.wqe_size,
                max_send_wr: req.max_send_wr,
                max_recv_wr: req.max_recv_wr,
            }))
        }
    };
    let page = match check_page_size(Stage::Sq, caps) {
        Ok(p) => p,
        Err(e) => {
            return Err(e.with_detail(Detail::Qp {
                sq_overhead: sq.overhead,
                send_wqe_size: sq.wqe_size,
                max_send_wr: req.max_send_wr,
                max_recv_wr: req.max_recv_wr,
            }))
        }
    };
    let total = sq.buf_bytes + rq.buf_bytes;
    let (sq_offset, alloc) = match req.qp_type {
        QpType::RawPacket => (
            0,
            align_up(rq.buf_bytes, page) + align_up(sq.buf_bytes, page),
        ),
        _ => (rq.buf_bytes, align_up(total, page)),
    };
    Ok(QpLayout {
        qp_type: req.qp_type,
        sq,
        rq,
        total_bytes: total,
        sq_offset,
        alloc_bytes: alloc,
        ret_max_send_wr: sq.max_post,
        ret_max_send_sge: req.max_send_sge,
        ret_max_inline_data: sq.max_inline_data,
        ret_max_recv_wr: rq.max_post,
        ret_max_recv_sge: rq.max_gs,
    })
}
