//! Vendor syndromes written in error CQEs, by syndrome.
//!
//! Only WR_FLUSH_ERR's 0xF9 is confirmed from public logs of ConnectX
//! hardware ("syndrome 0x5, vendor syndrome 0xf9", linux-nvme/nvme-cli
//! issue #3268; "Work Request Flushed Error, vendor_err:0xf9",
//! accelio/accelio issue #181). The others are model values, not taken
//! from hardware: the vendor syndrome is opaque to verbs ([ref §5.6](bareverbs::reference):
//! `wc.vendor_err = vendor_err_synd`).

use bareverbs::cqe::Syndrome;

/// WR_FLUSH_ERR (0x05) → 0xF9 (observed on hardware, see above).
pub const FLUSH: u8 = 0xf9;
/// LOCAL_LENGTH_ERR (0x01).
pub const LOCAL_LENGTH: u8 = 0x68;
/// LOCAL_QP_OP_ERR (0x02).
pub const LOCAL_QP_OP: u8 = 0x69;
/// LOCAL_PROT_ERR (0x04).
pub const LOCAL_PROT: u8 = 0x6a;
/// REMOTE_INVAL_REQ_ERR (0x12).
pub const REMOTE_INVAL_REQ: u8 = 0x8a;
/// REMOTE_ACCESS_ERR (0x13).
pub const REMOTE_ACCESS: u8 = 0x88;
/// REMOTE_OP_ERR (0x14).
pub const REMOTE_OP: u8 = 0x89;
/// TRANSPORT_RETRY_EXC_ERR (0x15).
pub const RETRY_EXC: u8 = 0x81;
/// RNR_RETRY_EXC_ERR (0x16).
pub const RNR_RETRY_EXC: u8 = 0x82;

/// The vendor syndrome for `syndrome`.
pub const fn of(syndrome: u8) -> u8 {
    match Syndrome::from_u8(syndrome) {
        Syndrome::LocalLengthErr => LOCAL_LENGTH,
        Syndrome::LocalQpOpErr => LOCAL_QP_OP,
        Syndrome::LocalProtErr => LOCAL_PROT,
        Syndrome::WrFlushErr => FLUSH,
        Syndrome::RemoteInvalReqErr => REMOTE_INVAL_REQ,
        Syndrome::RemoteAccessErr => REMOTE_ACCESS,
        Syndrome::RemoteOpErr => REMOTE_OP,
        Syndrome::TransportRetryExcErr => RETRY_EXC,
        Syndrome::RnrRetryExcErr => RNR_RETRY_EXC,
        _ => 0,
    }
}
