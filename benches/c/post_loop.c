/*
 * A minimal mlx5 RDMA WRITE post loop in C, for comparison with the Rust
 * post path (bareverbs::sq). Uses only mlx5dv.h's inline setters
 * (mlx5dv_set_ctrl_seg, mlx5dv_set_data_seg); the remote-address segment
 * is written by hand (mlx5dv.h has no setter for it). Per doorbell it does
 * what rdma-core's post_send_db() does on x86 (FACTS 4.3): compiler
 * barrier, doorbell record store, sfence (mmio_wc_start), 8-byte doorbell
 * store of the last WQE's first ctrl bytes, sfence (mmio_flush_writes),
 * toggle of the BlueFlame half. The "UAR" is ordinary memory.
 *
 * Bookkeeping mirrors the provider: overflow check against max_post,
 * wrid[] and wqe_head[] per WQE, a signaled WR every `signal_every`.
 */
#include <stdint.h>
#include <string.h>
#include <endian.h>
#include <infiniband/mlx5dv.h>

struct bv_c_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct bv_c_sq {
	uint8_t *ring;            /* ring_bbs * 64 bytes */
	uint32_t ring_bbs;        /* power of two */
	uint32_t max_post;
	uint32_t qpn;
	uint32_t cur_post;        /* WQEBB counter */
	uint32_t head;            /* WR counter */
	uint32_t tail;            /* retired WR counter */
	uint32_t bf_offset;
	uint32_t bf_size;
	volatile uint32_t *dbrec; /* 2 x BE32 */
	volatile uint8_t *uar;    /* 4 KiB */
	uint64_t *wrid;           /* ring_bbs */
	uint32_t *wqe_head;       /* ring_bbs */
	uint64_t doorbells;
};

static inline void compiler_barrier(void)
{
	__asm__ __volatile__("" ::: "memory");
}

static inline void wc_fence(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("sfence" ::: "memory");
#else
	__sync_synchronize();
#endif
}

/* Posts `nwr` RDMA WRITEs of `nsge` SGEs each and rings one doorbell.
 * Returns the number posted (fewer if the ring is full). */
uint32_t bv_c_post_write(struct bv_c_sq *sq, uint32_t nwr, const struct bv_c_sge *sgl,
			 uint32_t nsge, uint64_t raddr, uint32_t rkey, uint64_t wr_id,
			 uint32_t signal_every)
{
	const uint32_t mask = sq->ring_bbs - 1;
	uint8_t *const qend = sq->ring + (size_t)sq->ring_bbs * 64;
	struct mlx5_wqe_ctrl_seg *ctrl = NULL;
	uint32_t n;

	for (n = 0; n < nwr; n++) {
		if (sq->head + n - sq->tail >= sq->max_post)
			break;
		uint32_t idx = sq->cur_post & mask;
		uint8_t *seg = sq->ring + (size_t)idx * 64;
		uint8_t ds = (uint8_t)(2 + nsge);
		uint64_t id = wr_id + n;
		uint8_t fm_ce_se = ((id + 1) % signal_every == 0) ? MLX5_WQE_CTRL_CQ_UPDATE : 0;

		ctrl = (struct mlx5_wqe_ctrl_seg *)seg;
		mlx5dv_set_ctrl_seg(ctrl, (uint16_t)sq->cur_post, MLX5_OPCODE_RDMA_WRITE, 0,
				    sq->qpn, fm_ce_se, ds, 0, 0);

		struct mlx5_wqe_raddr_seg *ra = (struct mlx5_wqe_raddr_seg *)(seg + 16);
		ra->raddr = htobe64(raddr);
		ra->rkey = htobe32(rkey);
		ra->reserved = 0;

		uint8_t *d = seg + 32;
		for (uint32_t i = 0; i < nsge; i++) {
			if (d == qend)
				d = sq->ring;
			mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)d, sgl[i].length,
					    sgl[i].lkey, (uintptr_t)sgl[i].addr);
			d += 16;
		}
		sq->wrid[idx] = id;
		sq->wqe_head[idx] = sq->head + n;
		sq->cur_post += (ds * 16 + 63) / 64;
	}
	if (n == 0)
		return 0;

	sq->head += n;
	compiler_barrier();                          /* udma_to_device_barrier (x86) */
	sq->dbrec[1] = htobe32(sq->cur_post & 0xffff);
	wc_fence();                                  /* mmio_wc_start */
	uint64_t first8;
	memcpy(&first8, ctrl, 8);
	*(volatile uint64_t *)(sq->uar + 0x800 + sq->bf_offset) = first8;
	wc_fence();                                  /* mmio_flush_writes */
	sq->bf_offset ^= sq->bf_size;
	sq->doorbells++;
	return n;
}

/* Posts `iters` WRs in batches of `batch`, retiring everything when half
 * the ring is outstanding (as PostBench does). Returns WRs posted. */
uint64_t bv_c_run(struct bv_c_sq *sq, uint64_t iters, uint32_t batch, const struct bv_c_sge *sgl,
		  uint32_t nsge, uint32_t signal_every)
{
	uint64_t done = 0;
	while (done < iters) {
		uint32_t n = bv_c_post_write(sq, batch, sgl, nsge, 0x20000000ull, 0x77, done,
					     signal_every);
		done += n;
		if (n < batch || (sq->head - sq->tail) * 2 >= sq->max_post)
			sq->tail = sq->head;
	}
	return done;
}
