/*
 * Conformance shim: thin wrappers around the vendor header's own inline
 * segment setters and CQE getters (infiniband/mlx5dv.h from Debian's
 * libibverbs-dev), writing into caller byte buffers, plus a table of
 * sizeof/offsetof values of every mlx5dv struct bareverbs mirrors.
 * Only the header's inline functions are called; nothing is linked.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <infiniband/mlx5dv.h>

/* mlx5dv_set_ctrl_seg into a 16-byte buffer (pre-zeroed by the shim). */
void bv_shim_set_ctrl_seg(uint8_t *out, uint16_t pi, uint8_t opcode, uint8_t opmod,
                          uint32_t qp_num, uint8_t fm_ce_se, uint8_t ds,
                          uint8_t signature, uint32_t imm)
{
	struct mlx5_wqe_ctrl_seg seg;
	memset(&seg, 0, sizeof(seg));
	mlx5dv_set_ctrl_seg(&seg, pi, opcode, opmod, qp_num, fm_ce_se, ds, signature, imm);
	memcpy(out, &seg, sizeof(seg));
}

/* mlx5dv_set_data_seg into a 16-byte buffer. */
void bv_shim_set_data_seg(uint8_t *out, uint32_t length, uint32_t lkey, uint64_t address)
{
	struct mlx5_wqe_data_seg seg;
	memset(&seg, 0, sizeof(seg));
	mlx5dv_set_data_seg(&seg, length, lkey, (uintptr_t)address);
	memcpy(out, &seg, sizeof(seg));
}

/* mlx5dv_set_dgram_seg into a 48-byte buffer. */
void bv_shim_set_dgram_seg(uint8_t *out, uint64_t key, uint32_t dqp_dct, uint8_t ext,
                           uint8_t stat_rate_sl, uint8_t fl_mlid, uint16_t rlid,
                           const uint8_t *rmac, uint8_t tclass, uint8_t hop_limit,
                           uint32_t grh_gid_fl, const uint8_t *rgid)
{
	struct mlx5_wqe_datagram_seg seg;
	uint8_t mac[6], gid[16];
	memcpy(mac, rmac, 6);
	memcpy(gid, rgid, 16);
	memset(&seg, 0, sizeof(seg));
	mlx5dv_set_dgram_seg(&seg, key, dqp_dct, ext, stat_rate_sl, fl_mlid, rlid, mac,
			     tclass, hop_limit, grh_gid_fl, gid);
	memcpy(out, &seg, sizeof(seg));
}

/*
 * mlx5dv_set_eth_seg into `out` (out_len bytes). The header copy starts at
 * inline_hdr_start (byte 14) and may run past the 32-byte segment, so the
 * segment is built in a larger zeroed scratch area. Returns 0, or -1 if
 * the header does not fit out_len.
 */
int bv_shim_set_eth_seg(uint8_t *out, size_t out_len, uint8_t cs_flags, uint16_t mss,
                        uint16_t inline_hdr_sz, const uint8_t *hdr)
{
	union {
		struct mlx5_wqe_eth_seg seg;
		uint8_t bytes[1024];
	} scratch;
	uint8_t copy[1024];
	if ((size_t)inline_hdr_sz + 14 > sizeof(scratch.bytes) || out_len > sizeof(scratch.bytes) ||
	    (size_t)inline_hdr_sz + 14 > out_len)
		return -1;
	memcpy(copy, hdr, inline_hdr_sz);
	memset(&scratch, 0, sizeof(scratch));
	mlx5dv_set_eth_seg(&scratch.seg, cs_flags, mss, inline_hdr_sz, copy);
	memcpy(out, scratch.bytes, out_len);
	return 0;
}

/* CQE getters on a 64-byte CQE given as bytes. */
static void load_cqe(struct mlx5_cqe64 *c, const uint8_t *bytes)
{
	memcpy(c, bytes, sizeof(*c));
}
uint8_t bv_shim_cqe_owner(const uint8_t *bytes)
{
	struct mlx5_cqe64 c;
	load_cqe(&c, bytes);
	return mlx5dv_get_cqe_owner(&c);
}
uint8_t bv_shim_cqe_se(const uint8_t *bytes)
{
	struct mlx5_cqe64 c;
	load_cqe(&c, bytes);
	return mlx5dv_get_cqe_se(&c);
}
uint8_t bv_shim_cqe_format(const uint8_t *bytes)
{
	struct mlx5_cqe64 c;
	load_cqe(&c, bytes);
	return mlx5dv_get_cqe_format(&c);
}
uint8_t bv_shim_cqe_opcode(const uint8_t *bytes)
{
	struct mlx5_cqe64 c;
	load_cqe(&c, bytes);
	return mlx5dv_get_cqe_opcode(&c);
}

/* Layout table: "struct" = sizeof, "struct.field" = offsetof. */
struct bv_layout {
	const char *name;
	size_t value;
};

#define SZ(s) { #s, sizeof(struct s) }
#define OFF(s, f) { #s "." #f, offsetof(struct s, f) }

static const struct bv_layout layouts[] = {
	SZ(mlx5_wqe_ctrl_seg),
	OFF(mlx5_wqe_ctrl_seg, opmod_idx_opcode),
	OFF(mlx5_wqe_ctrl_seg, qpn_ds),
	OFF(mlx5_wqe_ctrl_seg, signature),
	OFF(mlx5_wqe_ctrl_seg, dci_stream_channel_id),
	OFF(mlx5_wqe_ctrl_seg, fm_ce_se),
	OFF(mlx5_wqe_ctrl_seg, imm),

	SZ(mlx5_wqe_data_seg),
	OFF(mlx5_wqe_data_seg, byte_count),
	OFF(mlx5_wqe_data_seg, lkey),
	OFF(mlx5_wqe_data_seg, addr),

	SZ(mlx5_wqe_raddr_seg),
	OFF(mlx5_wqe_raddr_seg, raddr),
	OFF(mlx5_wqe_raddr_seg, rkey),
	OFF(mlx5_wqe_raddr_seg, reserved),

	SZ(mlx5_wqe_atomic_seg),
	OFF(mlx5_wqe_atomic_seg, swap_add),
	OFF(mlx5_wqe_atomic_seg, compare),

	SZ(mlx5_wqe_inl_data_seg),
	OFF(mlx5_wqe_inl_data_seg, byte_count),

	SZ(mlx5_wqe_av),
	OFF(mlx5_wqe_av, key),
	OFF(mlx5_wqe_av, dqp_dct),
	OFF(mlx5_wqe_av, stat_rate_sl),
	OFF(mlx5_wqe_av, fl_mlid),
	OFF(mlx5_wqe_av, rlid),
	OFF(mlx5_wqe_av, reserved0),
	OFF(mlx5_wqe_av, rmac),
	OFF(mlx5_wqe_av, tclass),
	OFF(mlx5_wqe_av, hop_limit),
	OFF(mlx5_wqe_av, grh_gid_fl),
	OFF(mlx5_wqe_av, rgid),

	SZ(mlx5_wqe_datagram_seg),
	OFF(mlx5_wqe_datagram_seg, av),

	SZ(mlx5_wqe_eth_seg),
	OFF(mlx5_wqe_eth_seg, rsvd0),
	OFF(mlx5_wqe_eth_seg, cs_flags),
	OFF(mlx5_wqe_eth_seg, rsvd1),
	OFF(mlx5_wqe_eth_seg, mss),
	OFF(mlx5_wqe_eth_seg, rsvd2),
	OFF(mlx5_wqe_eth_seg, inline_hdr_sz),
	OFF(mlx5_wqe_eth_seg, inline_hdr_start),
	OFF(mlx5_wqe_eth_seg, inline_hdr),

	SZ(mlx5_wqe_srq_next_seg),
	OFF(mlx5_wqe_srq_next_seg, rsvd0),
	OFF(mlx5_wqe_srq_next_seg, next_wqe_index),
	OFF(mlx5_wqe_srq_next_seg, signature),
	OFF(mlx5_wqe_srq_next_seg, rsvd1),

	SZ(mlx5_wqe_umr_ctrl_seg),
	OFF(mlx5_wqe_umr_ctrl_seg, flags),
	OFF(mlx5_wqe_umr_ctrl_seg, rsvd0),
	OFF(mlx5_wqe_umr_ctrl_seg, klm_octowords),
	OFF(mlx5_wqe_umr_ctrl_seg, translation_offset),
	OFF(mlx5_wqe_umr_ctrl_seg, mkey_mask),
	OFF(mlx5_wqe_umr_ctrl_seg, rsvd1),

	SZ(mlx5_wqe_umr_klm_seg),
	OFF(mlx5_wqe_umr_klm_seg, byte_count),
	OFF(mlx5_wqe_umr_klm_seg, mkey),
	OFF(mlx5_wqe_umr_klm_seg, address),

	SZ(mlx5_wqe_mkey_context_seg),
	OFF(mlx5_wqe_mkey_context_seg, free),
	OFF(mlx5_wqe_mkey_context_seg, reserved1),
	OFF(mlx5_wqe_mkey_context_seg, access_flags),
	OFF(mlx5_wqe_mkey_context_seg, sf),
	OFF(mlx5_wqe_mkey_context_seg, qpn_mkey),
	OFF(mlx5_wqe_mkey_context_seg, reserved2),
	OFF(mlx5_wqe_mkey_context_seg, flags_pd),
	OFF(mlx5_wqe_mkey_context_seg, start_addr),
	OFF(mlx5_wqe_mkey_context_seg, len),
	OFF(mlx5_wqe_mkey_context_seg, bsf_octword_size),
	OFF(mlx5_wqe_mkey_context_seg, reserved3),
	OFF(mlx5_wqe_mkey_context_seg, translations_octword_size),
	OFF(mlx5_wqe_mkey_context_seg, reserved4),
	OFF(mlx5_wqe_mkey_context_seg, log_page_size),
	OFF(mlx5_wqe_mkey_context_seg, reserved),

	SZ(mlx5_cqe64),
	OFF(mlx5_cqe64, wqe_id),
	OFF(mlx5_cqe64, ml_path),
	OFF(mlx5_cqe64, slid),
	OFF(mlx5_cqe64, flags_rqpn),
	OFF(mlx5_cqe64, hds_ip_ext),
	OFF(mlx5_cqe64, l4_hdr_type_etc),
	OFF(mlx5_cqe64, vlan_info),
	OFF(mlx5_cqe64, srqn_uidx),
	OFF(mlx5_cqe64, imm_inval_pkey),
	OFF(mlx5_cqe64, app),
	OFF(mlx5_cqe64, app_op),
	OFF(mlx5_cqe64, app_info),
	OFF(mlx5_cqe64, byte_cnt),
	OFF(mlx5_cqe64, timestamp),
	OFF(mlx5_cqe64, sop_drop_qpn),
	OFF(mlx5_cqe64, wqe_counter),
	OFF(mlx5_cqe64, signature),
	OFF(mlx5_cqe64, op_own),

	SZ(mlx5_err_cqe),
	OFF(mlx5_err_cqe, srqn),
	OFF(mlx5_err_cqe, vendor_err_synd),
	OFF(mlx5_err_cqe, syndrome),
	OFF(mlx5_err_cqe, s_wqe_opcode_qpn),
	OFF(mlx5_err_cqe, wqe_counter),
	OFF(mlx5_err_cqe, signature),
	OFF(mlx5_err_cqe, op_own),
};

size_t bv_shim_layout_count(void)
{
	return sizeof(layouts) / sizeof(layouts[0]);
}
const char *bv_shim_layout_name(size_t i)
{
	return i < bv_shim_layout_count() ? layouts[i].name : 0;
}
size_t bv_shim_layout_value(size_t i)
{
	return i < bv_shim_layout_count() ? layouts[i].value : (size_t)-1;
}

/* Constants of the header that bareverbs mirrors. */
uint32_t bv_shim_const(int which)
{
	switch (which) {
	case 0: return MLX5_INVALID_LKEY;
	case 1: return MLX5_EXTENDED_UD_AV;
	case 2: return MLX5_WQE_CTRL_CQ_UPDATE;
	case 3: return MLX5_WQE_CTRL_SOLICITED;
	case 4: return MLX5_WQE_CTRL_FENCE;
	case 5: return MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE;
	case 6: return MLX5_SEND_WQE_BB;
	case 7: return MLX5_SEND_WQE_SHIFT;
	case 8: return MLX5_INLINE_SEG;
	case 9: return MLX5_ETH_WQE_L3_CSUM;
	case 10: return MLX5_ETH_WQE_L4_CSUM;
	case 11: return MLX5_WQE_UMR_CTRL_FLAG_INLINE;
	case 12: return MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE;
	case 13: return MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET;
	case 14: return MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN;
	case 15: return MLX5_WQE_MKEY_CONTEXT_FREE;
	case 16: return MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC;
	case 17: return MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE;
	case 18: return MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ;
	case 19: return MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE;
	case 20: return MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_READ;
	case 21: return MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN;
	case 22: return MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR;
	case 23: return MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY;
	case 24: return MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN;
	case 25: return MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_LOCAL_WRITE;
	case 26: return MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_READ;
	case 27: return MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_WRITE;
	case 28: return MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_ATOMIC;
	case 29: return MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE;
	default: return 0xffffffffu;
	}
}
