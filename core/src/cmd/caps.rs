//! General HCA capabilities (QUERY_HCA_CAP, cap type 0) → typed fields and
//! [`DeviceCaps`] ([ref §3.1, §3.11](crate::reference)).

use super::bits::Field;
use crate::sizing::DeviceCaps;

/// Bytes of the general capability structure (`cmd_hca_cap`). [ref §7.6](crate::reference).
pub const GENERAL_CAP_LEN: usize = 0x100;

/// The send descriptor size the kernel's `max_send_sge` is computed from
/// at most (`min_t(int, max_wqe_sz_sq, 512)` in mlx5_ib_query_device).
pub const KERNEL_MAX_SQ_DESC: u32 = 512;

/// `MLX5_MAX_SGE_RD`, the kernel's `max_sge_rd` ([ref §3.10](crate::reference)): `(512 −
/// 16 − 16) / 16`.
pub const MAX_SGE_RD: u32 = (KERNEL_MAX_SQ_DESC - CTRL - RADDR) / SEG;

const SEG: u32 = crate::wqe::DS_BYTES as u32;
const CTRL: u32 = core::mem::size_of::<crate::wqe::CtrlSeg>() as u32;
const RADDR: u32 = core::mem::size_of::<crate::wqe::RaddrSeg>() as u32;

/// Field positions inside `cmd_hca_cap`. [ref §3.11](crate::reference).
pub mod field {
    use crate::cmd::bits::Field;

    /// hca_cap_2.
    pub const HCA_CAP_2: Field = Field::new(1, 31, 31);
    /// log_max_srq_sz.
    pub const LOG_MAX_SRQ_SZ: Field = Field::new(4, 31, 24);
    /// log_max_qp_sz.
    pub const LOG_MAX_QP_SZ: Field = Field::new(4, 23, 16);
    /// log_max_qp.
    pub const LOG_MAX_QP: Field = Field::new(4, 4, 0);
    /// log_max_srq.
    pub const LOG_MAX_SRQ: Field = Field::new(5, 20, 16);
    /// log_max_cq_sz.
    pub const LOG_MAX_CQ_SZ: Field = Field::new(6, 23, 16);
    /// log_max_cq.
    pub const LOG_MAX_CQ: Field = Field::new(6, 4, 0);
    /// log_max_eq_sz.
    pub const LOG_MAX_EQ_SZ: Field = Field::new(7, 31, 24);
    /// log_max_mkey.
    pub const LOG_MAX_MKEY: Field = Field::new(7, 21, 16);
    /// log_max_eq.
    pub const LOG_MAX_EQ: Field = Field::new(7, 3, 0);
    /// fast_teardown.
    pub const FAST_TEARDOWN: Field = Field::new(8, 14, 14);
    /// log_max_ra_req_qp.
    pub const LOG_MAX_RA_REQ_QP: Field = Field::new(10, 21, 16);
    /// log_max_ra_res_qp.
    pub const LOG_MAX_RA_RES_QP: Field = Field::new(10, 5, 0);
    /// pkey_table_size.
    pub const PKEY_TABLE_SIZE: Field = Field::new(12, 15, 0);
    /// port_type.
    pub const PORT_TYPE: Field = Field::new(13, 9, 8);
    /// num_ports.
    pub const NUM_PORTS: Field = Field::new(13, 7, 0);
    /// log_max_msg.
    pub const LOG_MAX_MSG: Field = Field::new(14, 28, 24);
    /// cqe_version.
    pub const CQE_VERSION: Field = Field::new(15, 3, 0);
    /// cmdif_checksum.
    pub const CMDIF_CHECKSUM: Field = Field::new(16, 15, 14);
    /// roce.
    pub const ROCE: Field = Field::new(16, 2, 2);
    /// num_vhca_ports (`dw48[15:8]`, byte 0xc2).
    pub const NUM_VHCA_PORTS: Field = Field::new(48, 15, 8);
    /// atomic.
    pub const ATOMIC: Field = Field::new(16, 1, 1);
    /// uar_4k.
    pub const UAR_4K: Field = Field::new(18, 31, 31);
    /// umem_uid_0.
    pub const UMEM_UID_0: Field = Field::new(18, 13, 13);
    /// log_pg_sz.
    pub const LOG_PG_SZ: Field = Field::new(18, 7, 0);
    /// bf.
    pub const BF: Field = Field::new(19, 31, 31);
    /// mkey_by_name.
    pub const MKEY_BY_NAME: Field = Field::new(19, 25, 25);
    /// log_bf_reg_size.
    pub const LOG_BF_REG_SIZE: Field = Field::new(19, 20, 16);
    /// max_wqe_sz_sq.
    pub const MAX_WQE_SZ_SQ: Field = Field::new(20, 15, 0);
    /// max_wqe_sz_rq.
    pub const MAX_WQE_SZ_RQ: Field = Field::new(21, 15, 0);
    /// max_wqe_sz_sq_dc.
    pub const MAX_WQE_SZ_SQ_DC: Field = Field::new(22, 15, 0);
    /// log_max_pd.
    pub const LOG_MAX_PD: Field = Field::new(25, 20, 16);
    /// log_uar_page_sz.
    pub const LOG_UAR_PAGE_SZ: Field = Field::new(36, 15, 0);
    /// num_of_uars_per_page.
    pub const NUM_OF_UARS_PER_PAGE: Field = Field::new(41, 31, 0);
    /// cqe_128_always.
    pub const CQE_128_ALWAYS: Field = Field::new(45, 2, 2);
    /// cqe_compression.
    pub const CQE_COMPRESSION: Field = Field::new(45, 0, 0);
}

/// Reads one capability field from a `cmd_hca_cap` image.
pub fn get(cap: &[u8], f: Field) -> u32 {
    f.get(cap, 0)
}
/// Writes one capability field in a `cmd_hca_cap` image.
pub fn set(cap: &mut [u8], f: Field, v: u32) {
    f.set(cap, 0, v)
}

/// The general capabilities bareverbs uses ([ref §3.11](crate::reference)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HcaCaps {
    /// log2 max SRQ WQEs.
    pub log_max_srq_sz: u8,
    /// log2 max WQEBBs (SQ) / WQEs (RQ) per QP.
    pub log_max_qp_sz: u8,
    /// log2 number of QPs.
    pub log_max_qp: u8,
    /// log2 number of SRQs.
    pub log_max_srq: u8,
    /// log2 max CQEs per CQ.
    pub log_max_cq_sz: u8,
    /// log2 number of CQs.
    pub log_max_cq: u8,
    /// log2 max EQEs per EQ.
    pub log_max_eq_sz: u8,
    /// log2 number of memory keys.
    pub log_max_mkey: u8,
    /// log2 number of EQs.
    pub log_max_eq: u8,
    /// Fast teardown supported.
    pub fast_teardown: bool,
    /// log2 max outstanding RDMA read/atomic as requester.
    pub log_max_ra_req_qp: u8,
    /// log2 max outstanding RDMA read/atomic as responder.
    pub log_max_ra_res_qp: u8,
    /// P_Key table size.
    pub pkey_table_size: u16,
    /// Port type: 0 IB, 1 Ethernet.
    pub port_type: u8,
    /// Number of ports.
    pub num_ports: u8,
    /// log2 max message size.
    pub log_max_msg: u8,
    /// CQE version.
    pub cqe_version: u8,
    /// Command-interface checksum mode.
    pub cmdif_checksum: u8,
    /// RoCE supported.
    pub roce: bool,
    /// vHCA ports (GID commands name `vhca_port_num` only when > 0).
    pub num_vhca_ports: u8,
    /// Atomics supported.
    pub atomic: bool,
    /// 4 KiB UARs supported.
    pub uar_4k: bool,
    /// umem_uid_0 (required by the VFIO provider).
    pub umem_uid_0: bool,
    /// log2 of the smallest page size the device maps (12 = 4 KiB).
    pub log_pg_sz: u8,
    /// BlueFlame supported.
    pub bf: bool,
    /// mkey_by_name.
    pub mkey_by_name: bool,
    /// log2 BlueFlame register size.
    pub log_bf_reg_size: u8,
    /// Max send WQE bytes.
    pub max_wqe_sz_sq: u16,
    /// Max receive WQE bytes.
    pub max_wqe_sz_rq: u16,
    /// Max DC send WQE bytes.
    pub max_wqe_sz_sq_dc: u16,
    /// log2 number of PDs.
    pub log_max_pd: u8,
    /// UAR page size = 4 KiB << value.
    pub log_uar_page_sz: u16,
    /// UARs per system page.
    pub num_of_uars_per_page: u32,
    /// 128-byte CQEs always.
    pub cqe_128_always: bool,
    /// CQE compression supported.
    pub cqe_compression: bool,
}

impl HcaCaps {
    /// Parses a `cmd_hca_cap` image (short images read as zeros).
    pub fn parse(cap: &[u8]) -> HcaCaps {
        use field::*;
        let g = |f| get(cap, f);
        HcaCaps {
            log_max_srq_sz: g(LOG_MAX_SRQ_SZ) as u8,
            log_max_qp_sz: g(LOG_MAX_QP_SZ) as u8,
            log_max_qp: g(LOG_MAX_QP) as u8,
            log_max_srq: g(LOG_MAX_SRQ) as u8,
            log_max_cq_sz: g(LOG_MAX_CQ_SZ) as u8,
            log_max_cq: g(LOG_MAX_CQ) as u8,
            log_max_eq_sz: g(LOG_MAX_EQ_SZ) as u8,
            log_max_mkey: g(LOG_MAX_MKEY) as u8,
            log_max_eq: g(LOG_MAX_EQ) as u8,
            fast_teardown: g(FAST_TEARDOWN) != 0,
            log_max_ra_req_qp: g(LOG_MAX_RA_REQ_QP) as u8,
            log_max_ra_res_qp: g(LOG_MAX_RA_RES_QP) as u8,
            pkey_table_size: g(PKEY_TABLE_SIZE) as u16,
            port_type: g(PORT_TYPE) as u8,
            num_ports: g(NUM_PORTS) as u8,
            log_max_msg: g(LOG_MAX_MSG) as u8,
            cqe_version: g(CQE_VERSION) as u8,
            cmdif_checksum: g(CMDIF_CHECKSUM) as u8,
            roce: g(ROCE) != 0,
            num_vhca_ports: g(NUM_VHCA_PORTS) as u8,
            atomic: g(ATOMIC) != 0,
            uar_4k: g(UAR_4K) != 0,
            umem_uid_0: g(UMEM_UID_0) != 0,
            log_pg_sz: g(LOG_PG_SZ) as u8,
            bf: g(BF) != 0,
            mkey_by_name: g(MKEY_BY_NAME) != 0,
            log_bf_reg_size: g(LOG_BF_REG_SIZE) as u8,
            max_wqe_sz_sq: g(MAX_WQE_SZ_SQ) as u16,
            max_wqe_sz_rq: g(MAX_WQE_SZ_RQ) as u16,
            max_wqe_sz_sq_dc: g(MAX_WQE_SZ_SQ_DC) as u16,
            log_max_pd: g(LOG_MAX_PD) as u8,
            log_uar_page_sz: g(LOG_UAR_PAGE_SZ) as u16,
            num_of_uars_per_page: g(NUM_OF_UARS_PER_PAGE),
            cqe_128_always: g(CQE_128_ALWAYS) != 0,
            cqe_compression: g(CQE_COMPRESSION) != 0,
        }
    }

    /// Writes these fields into a `cmd_hca_cap` image (used by the
    /// simulator to publish its capabilities).
    pub fn write(&self, cap: &mut [u8]) {
        use field::*;
        let mut s = |f, v: u32| set(cap, f, v);
        s(LOG_MAX_SRQ_SZ, self.log_max_srq_sz as u32);
        s(LOG_MAX_QP_SZ, self.log_max_qp_sz as u32);
        s(LOG_MAX_QP, self.log_max_qp as u32);
        s(LOG_MAX_SRQ, self.log_max_srq as u32);
        s(LOG_MAX_CQ_SZ, self.log_max_cq_sz as u32);
        s(LOG_MAX_CQ, self.log_max_cq as u32);
        s(LOG_MAX_EQ_SZ, self.log_max_eq_sz as u32);
        s(LOG_MAX_MKEY, self.log_max_mkey as u32);
        s(LOG_MAX_EQ, self.log_max_eq as u32);
        s(FAST_TEARDOWN, self.fast_teardown as u32);
        s(LOG_MAX_RA_REQ_QP, self.log_max_ra_req_qp as u32);
        s(LOG_MAX_RA_RES_QP, self.log_max_ra_res_qp as u32);
        s(PKEY_TABLE_SIZE, self.pkey_table_size as u32);
        s(PORT_TYPE, self.port_type as u32);
        s(NUM_PORTS, self.num_ports as u32);
        s(LOG_MAX_MSG, self.log_max_msg as u32);
        s(CQE_VERSION, self.cqe_version as u32);
        s(CMDIF_CHECKSUM, self.cmdif_checksum as u32);
        s(ROCE, self.roce as u32);
        s(NUM_VHCA_PORTS, self.num_vhca_ports as u32);
        s(ATOMIC, self.atomic as u32);
        s(UAR_4K, self.uar_4k as u32);
        s(UMEM_UID_0, self.umem_uid_0 as u32);
        s(LOG_PG_SZ, self.log_pg_sz as u32);
        s(BF, self.bf as u32);
        s(MKEY_BY_NAME, self.mkey_by_name as u32);
        s(LOG_BF_REG_SIZE, self.log_bf_reg_size as u32);
        s(MAX_WQE_SZ_SQ, self.max_wqe_sz_sq as u32);
        s(MAX_WQE_SZ_RQ, self.max_wqe_sz_rq as u32);
        s(MAX_WQE_SZ_SQ_DC, self.max_wqe_sz_sq_dc as u32);
        s(LOG_MAX_PD, self.log_max_pd as u32);
        s(LOG_UAR_PAGE_SZ, self.log_uar_page_sz as u32);
        s(NUM_OF_UARS_PER_PAGE, self.num_of_uars_per_page);
        s(CQE_128_ALWAYS, self.cqe_128_always as u32);
        s(CQE_COMPRESSION, self.cqe_compression as u32);
    }

    /// `1 << log`, saturating at `u32::MAX` for nonsense logs from a device.
    pub const fn pow2(log: u8) -> u32 {
        if log >= 32 {
            u32::MAX
        } else {
            1u32 << log
        }
    }

    /// Device `max_sge` as the mlx5 kernel driver reports it
    /// (`drivers/infiniband/hw/mlx5/main.c` mlx5_ib_query_device,
    /// [ref §3.10](crate::reference)): receive side `max_wqe_sz_rq / 16` (data segments), send side
    /// `(min(max_wqe_sz_sq, 512) − 16 − 16) / 16` (one 16-byte control and
    /// one 16-byte remote-address segment in a send descriptor capped at
    /// 512 bytes), and `ibv_query_device`'s `max_sge` is the smaller of the
    /// two (the uverbs ABI reports `min(max_send_sge, max_recv_sge)`). 30
    /// for the usual 512/1024-byte descriptors.
    pub fn max_sge(&self) -> u32 {
        self.max_recv_sge().min(self.max_send_sge())
    }

    /// The kernel's `max_recv_sge`: `max_wqe_sz_rq / 16`.
    pub fn max_recv_sge(&self) -> u32 {
        self.max_wqe_sz_rq as u32 / SEG
    }

    /// The kernel's `max_send_sge`: `(min(max_wqe_sz_sq, 512) − ctrl −
    /// raddr) / 16`.
    pub fn max_send_sge(&self) -> u32 {
        let desc = (self.max_wqe_sz_sq as u32).min(KERNEL_MAX_SQ_DESC);
        desc.saturating_sub(CTRL + RADDR) / SEG
    }

    /// The kernel's `max_srq_sge`: `max_recv_sge − 1` (the SRQ next-segment
    /// header takes one 16-byte slot).
    pub fn max_srq_sge(&self) -> u32 {
        self.max_recv_sge().saturating_sub(1)
    }

    /// The sizing inputs derived from these capabilities ([ref §3.1](crate::reference)):
    /// descriptor sizes, `1 << log_max_qp_sz` WQEBBs/WQEs, `1 <<
    /// log_max_srq_sz`, `1 << log_max_cq_sz` CQ entries, BlueFlame register
    /// size when `bf` is set, CQE version; `page_size` and `cache_line_size`
    /// come from the host.
    pub fn device_caps(&self, page_size: u32, cache_line_size: u32) -> DeviceCaps {
        DeviceCaps {
            max_sq_desc_sz: self.max_wqe_sz_sq as u32,
            max_rq_desc_sz: self.max_wqe_sz_rq as u32,
            max_send_wqebb: Self::pow2(self.log_max_qp_sz),
            max_recv_wr: Self::pow2(self.log_max_qp_sz),
            max_srq_recv_wr: Self::pow2(self.log_max_srq_sz),
            max_sge: self.max_sge(),
            max_cqe: Self::pow2(self.log_max_cq_sz),
            bf_reg_size: if self.bf {
                Self::pow2(self.log_bf_reg_size)
            } else {
                0
            },
            cqe_version: self.cqe_version as u32,
            page_size,
            cache_line_size,
        }
    }
}
