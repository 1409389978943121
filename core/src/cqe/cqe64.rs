//! The 64-byte CQE view [`Cqe64`]: its field accessors and setters, the
//! op_own decoding and its debug form. [ref §5.1](crate::reference).

use super::{
    sw_owns, CqeFormat, CqeOpcode, ErrCqe, CQE64_SIZE, INLINE_SCATTER_32_MAX, OP_OWN_INIT,
    OP_OWN_OFFSET,
};
use crate::error::ParseError;

macro_rules! be_field {
    ($(#[$m:meta])* $get:ident, $set:ident, u8, $off:expr) => {
        $(#[$m])*
        #[inline(always)]
        pub const fn $get(&self) -> u8 {
            self.0[$off]
        }
        #[doc = concat!("Sets the field read by [`Self::", stringify!($get), "`].")]
        #[inline(always)]
        pub fn $set(&mut self, v: u8) -> &mut Self {
            self.0[$off] = v;
            self
        }
    };
    ($(#[$m:meta])* $get:ident, $set:ident, $t:ty, $off:expr) => {
        $(#[$m])*
        #[inline(always)]
        pub const fn $get(&self) -> $t {
            const N: usize = core::mem::size_of::<$t>();
            let mut b = [0u8; N];
            let mut i = 0;
            while i < N {
                b[i] = self.0[$off + i];
                i += 1;
            }
            <$t>::from_be_bytes(b)
        }
        #[doc = concat!("Sets the field read by [`Self::", stringify!($get), "`] (stored big-endian).")]
        #[inline(always)]
        pub fn $set(&mut self, v: $t) -> &mut Self {
            const N: usize = core::mem::size_of::<$t>();
            self.0[$off..$off + N].copy_from_slice(&v.to_be_bytes());
            self
        }
    };
}

/// A typed view over a *copy* of one 64-byte CQE (`mlx5_cqe64`), in the
/// style of smoltcp's `wire` views: accessors decode fields on demand and
/// setters encode them (used by the simulator and tests). [ref §5.1](crate::reference).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cqe64([u8; 64]);

impl Default for Cqe64 {
    /// All zero except `op_own` = 0xF0 (the software init value).
    fn default() -> Self {
        let mut b = [0u8; 64];
        b[OP_OWN_OFFSET] = OP_OWN_INIT;
        Cqe64(b)
    }
}

impl Cqe64 {
    /// All 64 bytes zero (a REQ CQE with owner 0).
    pub const ZERO: Cqe64 = Cqe64([0; 64]);

    /// Wraps 64 bytes.
    #[inline(always)]
    pub const fn from_bytes(b: [u8; 64]) -> Self {
        Cqe64(b)
    }
    /// Copies the first 64 bytes of `b`; any byte pattern is accepted.
    pub fn parse(b: &[u8]) -> Result<Self, ParseError> {
        match b.get(..CQE64_SIZE) {
            Some(s) => {
                let mut a = [0u8; 64];
                a.copy_from_slice(s);
                Ok(Cqe64(a))
            }
            None => Err(ParseError::Truncated {
                need: CQE64_SIZE,
                have: b.len(),
            }),
        }
    }
    /// The raw bytes in memory order.
    #[inline(always)]
    pub const fn as_bytes(&self) -> &[u8; 64] {
        &self.0
    }
    /// Mutable raw bytes.
    #[inline(always)]
    pub fn as_bytes_mut(&mut self) -> &mut [u8; 64] {
        &mut self.0
    }
    /// Consumes the view, returning the bytes.
    #[inline(always)]
    pub const fn into_bytes(self) -> [u8; 64] {
        self.0
    }

    be_field!(
        /// Bytes 2–3: striding-RQ WQE id.
        wqe_id, set_wqe_id, u16, 2
    );
    be_field!(
        /// Byte 4 (kernel): LRO tcppsh_abort_dupack.
        lro_tcppsh_abort_dupack, set_lro_tcppsh_abort_dupack, u8, 4
    );
    be_field!(
        /// Byte 5 (kernel): LRO min_ttl.
        lro_min_ttl, set_lro_min_ttl, u8, 5
    );
    be_field!(
        /// Bytes 6–7 (kernel): LRO tcp_win.
        lro_tcp_win, set_lro_tcp_win, u16, 6
    );
    be_field!(
        /// Bytes 8–11 (kernel): LRO ack_seq_num.
        lro_ack_seq_num, set_lro_ack_seq_num, u32, 8
    );
    be_field!(
        /// Bytes 12–15 (kernel): RSS hash result.
        rss_hash_result, set_rss_hash_result, u32, 12
    );
    be_field!(
        /// Byte 16 (kernel): RSS hash type.
        rss_hash_type, set_rss_hash_type, u8, 16
    );
    be_field!(
        /// Byte 17: ml_path (bits 6:0 = DLID path bits).
        ml_path, set_ml_path, u8, 17
    );
    be_field!(
        /// Bytes 20–21 (kernel): checksum.
        check_sum, set_check_sum, u16, 20
    );
    be_field!(
        /// Bytes 22–23: source LID (IB).
        slid, set_slid, u16, 22
    );
    be_field!(
        /// Bytes 24–27: flags_rqpn (source QP 23:0, SL 27:24, GRH 29:28).
        flags_rqpn, set_flags_rqpn, u32, 24
    );
    be_field!(
        /// Byte 28: hds_ip_ext (bit0 L2_OK, bit1 L3_OK, bit2 L4_OK).
        hds_ip_ext, set_hds_ip_ext, u8, 28
    );
    be_field!(
        /// Byte 29: l4_hdr_type_etc (L3 type 3:2, L4 type 6:4, cvlan bit 0).
        l4_hdr_type_etc, set_l4_hdr_type_etc, u8, 29
    );
    be_field!(
        /// Bytes 30–31: VLAN TCI.
        vlan_info, set_vlan_info, u16, 30
    );
    be_field!(
        /// Bytes 32–35: srqn_uidx (SRQ number or user index in bits 23:0).
        srqn_uidx, set_srqn_uidx, u32, 32
    );
    be_field!(
        /// Bytes 36–39 decoded as a host value: immediate (see
        /// [`Self::imm_inval_pkey_raw`] for the stored bytes), invalidated
        /// rkey, or pkey index in bits 15:0.
        imm_inval_pkey, set_imm_inval_pkey, u32, 36
    );
    be_field!(
        /// Byte 40: app.
        app, set_app, u8, 40
    );
    be_field!(
        /// Byte 41: app_op.
        app_op, set_app_op, u8, 41
    );
    be_field!(
        /// Bytes 42–43: app_info.
        app_info, set_app_info, u16, 42
    );
    be_field!(
        /// Bytes 44–47: byte count (or mini-CQE count in a compressed title).
        byte_cnt, set_byte_cnt, u32, 44
    );
    be_field!(
        /// Bytes 48–55: timestamp.
        timestamp, set_timestamp, u64, 48
    );
    be_field!(
        /// Bytes 56–59: sop_drop_qpn (send WQE opcode 31:24, QPN 23:0).
        sop_drop_qpn, set_sop_drop_qpn, u32, 56
    );
    be_field!(
        /// Bytes 60–61: WQE counter.
        wqe_counter, set_wqe_counter, u16, 60
    );
    be_field!(
        /// Byte 62: signature.
        signature, set_signature, u8, 62
    );
    be_field!(
        /// Byte 63: op_own (opcode 7:4, format 3:2, SE bit 1, owner bit 0).
        op_own, set_op_own, u8, 63
    );
    be_field!(
        /// Byte 54 (error CQE): vendor_err_synd. [ref §5.5](crate::reference).
        vendor_err_synd, set_vendor_err_synd, u8, 54
    );
    be_field!(
        /// Byte 55 (error CQE): syndrome. [ref §5.5](crate::reference).
        syndrome, set_syndrome, u8, 55
    );

    /// Bytes 36–39 exactly as stored (the immediate is passed through raw).
    #[inline(always)]
    pub const fn imm_inval_pkey_raw(&self) -> [u8; 4] {
        [self.0[36], self.0[37], self.0[38], self.0[39]]
    }
    /// DLID path bits: `ml_path & 0x7f`. [ref §5.8](crate::reference).
    #[inline(always)]
    pub const fn dlid_path_bits(&self) -> u8 {
        self.ml_path() & 0x7f
    }
    /// Source QP (UD): `flags_rqpn` bits 23:0.
    #[inline(always)]
    pub const fn src_qp(&self) -> u32 {
        self.flags_rqpn() & 0x00ff_ffff
    }
    /// Service level: `flags_rqpn` bits 27:24.
    #[inline(always)]
    pub const fn sl(&self) -> u8 {
        ((self.flags_rqpn() >> 24) & 0xf) as u8
    }
    /// GRH / remote-IP type: `flags_rqpn` bits 29:28 (nonzero → GRH).
    #[inline(always)]
    pub const fn grh(&self) -> u8 {
        ((self.flags_rqpn() >> 28) & 3) as u8
    }
    /// L3 header type (`l4_hdr_type_etc` bits 3:2: 0 none, 1 IPv6, 2 IPv4).
    #[inline(always)]
    pub const fn l3_hdr_type(&self) -> u8 {
        (self.l4_hdr_type_etc() >> 2) & 3
    }
    /// L4 header type (`l4_hdr_type_etc` bits 6:4).
    #[inline(always)]
    pub const fn l4_hdr_type(&self) -> u8 {
        (self.l4_hdr_type_etc() >> 4) & 7
    }
    /// The receive checksum rule: L3_OK and L4_OK (`hds_ip_ext` bits 2:1
    /// both set) on an IPv4 packet ([`Self::l3_hdr_type`] 2). [ref §5.8](crate::reference).
    #[inline(always)]
    pub const fn ipv4_csum_ok(&self) -> bool {
        Self::ipv4_csum_ok_bits(self.hds_ip_ext(), self.l3_hdr_type())
    }
    /// [`Self::ipv4_csum_ok`] on raw `hds_ip_ext` and L3-type values (the
    /// lean poll path reads them straight from the ring).
    #[inline(always)]
    pub const fn ipv4_csum_ok_bits(hds_ip_ext: u8, l3_hdr_type: u8) -> bool {
        hds_ip_ext & 0x6 == 0x6 && l3_hdr_type == 2
    }
    /// SRQ number / user index: `srqn_uidx` bits 23:0.
    #[inline(always)]
    pub const fn uidx(&self) -> u32 {
        self.srqn_uidx() & 0x00ff_ffff
    }
    /// Send WQE opcode of a requester CQE: `sop_drop_qpn >> 24`. [ref §5.7](crate::reference).
    #[inline(always)]
    pub const fn send_wqe_opcode(&self) -> u8 {
        (self.sop_drop_qpn() >> 24) as u8
    }
    /// QP number: `sop_drop_qpn & 0xffffff`.
    #[inline(always)]
    pub const fn qpn(&self) -> u32 {
        self.sop_drop_qpn() & 0x00ff_ffff
    }
    /// Owner bit (`op_own` bit 0). [ref §5.3](crate::reference).
    #[inline(always)]
    pub const fn owner(&self) -> u8 {
        self.0[OP_OWN_OFFSET] & 1
    }
    /// Solicited-event bit (`op_own` bit 1) as 0/1.
    #[inline(always)]
    pub const fn se(&self) -> u8 {
        (self.0[OP_OWN_OFFSET] >> 1) & 1
    }
    /// Format (`op_own` bits 3:2) as a number 0–3. [ref §5.1](crate::reference).
    #[inline(always)]
    pub const fn format(&self) -> u8 {
        Self::format_bits(self.0[OP_OWN_OFFSET])
    }
    /// The format field (bits 3:2) of a raw `op_own` byte, 0–3. [ref §5.1](crate::reference).
    #[inline(always)]
    pub const fn format_bits(op_own: u8) -> u8 {
        (op_own >> 2) & 3
    }
    /// Format as an enum.
    #[inline(always)]
    pub const fn format_kind(&self) -> CqeFormat {
        CqeFormat::from_bits(self.format())
    }
    /// CQE opcode (`op_own >> 4`) as a number 0–15. [ref §5.4](crate::reference).
    #[inline(always)]
    pub const fn opcode(&self) -> u8 {
        self.0[OP_OWN_OFFSET] >> 4
    }
    /// CQE opcode as an enum (`Err` for the undefined values 7–11).
    #[inline(always)]
    pub fn cqe_opcode(&self) -> Result<CqeOpcode, ParseError> {
        CqeOpcode::try_from(self.opcode())
    }
    /// Sets `op_own` from its parts.
    pub fn set_op_own_parts(&mut self, opcode: u8, format: u8, se: bool, owner: u8) -> &mut Self {
        self.0[OP_OWN_OFFSET] =
            (opcode << 4) | ((format & 3) << 2) | ((se as u8) << 1) | (owner & 1);
        self
    }
    /// Ownership test against consumer index `ci` in a CQ of `ncqe` entries.
    #[inline(always)]
    pub const fn is_sw_owned(&self, ci: u32, ncqe: u32) -> bool {
        sw_owns(self.0[OP_OWN_OFFSET], ci, ncqe)
    }
    /// The error-CQE view of these bytes. [ref §5.5](crate::reference).
    #[inline(always)]
    pub const fn as_err(&self) -> ErrCqe {
        ErrCqe(*self)
    }
    /// True for REQ_ERR / RESP_ERR.
    #[inline(always)]
    pub const fn is_error(&self) -> bool {
        let op = self.opcode();
        op == CqeOpcode::ReqErr as u8 || op == CqeOpcode::RespErr as u8
    }
    /// Inline-scattered data of a format-1 CQE: the first `min(byte_cnt,
    /// 32)` bytes of the cqe64 (format 2 data lives in the other half of a
    /// [`Cqe128`](super::Cqe128)). `None` for other formats. [ref §5.1](crate::reference).
    pub fn inline_data32(&self) -> Option<&[u8]> {
        if self.format() != CqeFormat::InlineScatter32 as u8 {
            return None;
        }
        let n = (self.byte_cnt() as usize).min(INLINE_SCATTER_32_MAX);
        self.0.get(..n)
    }
    /// Mask of a 24-bit QP number in `sop_drop_qpn` and `flags_rqpn`
    /// (bits 23:0). [ref §5.7](crate::reference).
    pub const QPN_MASK: u32 = 0x00ff_ffff;
    /// Mask of the 24-bit SRQ number / user index in `srqn_uidx`
    /// (bits 23:0). [ref §5.7](crate::reference).
    pub const UIDX_MASK: u32 = 0x00ff_ffff;
    /// `flags_rqpn` GRH field (bits 29:28) value 1: the packet carried a
    /// GRH. [ref §5.8](crate::reference).
    pub const FLAGS_RQPN_GRH: u32 = 1 << 28;
    /// Sets `sop_drop_qpn` to send WQE opcode `opcode` (bits 31:24) and
    /// QP number `qpn` (bits 23:0; OR-ed in unmasked, the caller's QPN
    /// fits 24 bits). The inverse of [`Self::send_wqe_opcode`] and
    /// [`Self::qpn`]. [ref §5.7](crate::reference).
    #[inline(always)]
    pub fn set_send_wqe_opcode_qpn(&mut self, opcode: u8, qpn: u32) -> &mut Self {
        self.set_sop_drop_qpn((opcode as u32) << 24 | qpn)
    }
    /// Stores bytes 36–39 exactly as given (the inverse of
    /// [`Self::imm_inval_pkey_raw`]).
    #[inline(always)]
    pub fn set_imm_inval_pkey_raw(&mut self, raw: [u8; 4]) -> &mut Self {
        self.0[36..40].copy_from_slice(&raw);
        self
    }
}

impl core::fmt::Debug for Cqe64 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Cqe64")
            .field("opcode", &CqeOpcode::name_of(self.opcode()))
            .field("op_own", &format_args!("{:#04x}", self.op_own()))
            .field("qpn", &format_args!("{:#08x}", self.qpn()))
            .field(
                "wqe_opcode",
                &format_args!("{:#04x}", self.send_wqe_opcode()),
            )
            .field("wqe_counter", &self.wqe_counter())
            .field("srqn_uidx", &format_args!("{:#010x}", self.srqn_uidx()))
            .field("byte_cnt", &self.byte_cnt())
            .field(
                "imm_inval_pkey",
                &format_args!("{:#010x}", self.imm_inval_pkey()),
            )
            .field("flags_rqpn", &format_args!("{:#010x}", self.flags_rqpn()))
            .field("syndrome", &format_args!("{:#04x}", self.syndrome()))
            .field(
                "vendor_err_synd",
                &format_args!("{:#04x}", self.vendor_err_synd()),
            )
            .finish()
    }
}

static_assertions::assert_eq_size!(Cqe64, [u8; 64]);
