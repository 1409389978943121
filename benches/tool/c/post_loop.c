/*
 * A minimal mlx5 RDMA WRITE post loop in C, for comparison with the Rust
 * post path (bareverbs::sq). Uses only mlx5dv.h's inline setters
 * (mlx5dv_set_ctrl_seg, mlx5dv_set_data_seg); the remote-address segment
 * is written by hand (mlx5dv.h has no setter for it). Per doorbell it does
 * what rdma-core's post_send_db() does on x86 (ref §4.3): compiler
 * barrier, doorbell record store, sfence (mmio_wc_start), 8-byte doorbell
 * store of the last WQE's first ctrl bytes, sfence (mmio_flush_writes),
 * toggle of the BlueFlame half. The "UAR" is ordinary memory.
 *
 * Bookkeeping mirrors the provider: overflow check against max_post,
 * wrid[] and wqe_head[] per WQE, a signaled WR every `signal_every`.
 *
 * Written as a careful C programmer would: the queue struct is `restrict`
 * and its counters are copied into locals for the batch (so stores to
 * wrid[]/wqe_head[] cannot force reloads), the room left is computed once,
 * signaling is a down-counter kept across calls (no division per WR), and
 * the constant control-segment word (qpn | ds) is formed once per batch.
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
	uint32_t to_signal;       /* WRs until the next signaled one */
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
 * Returns the number posted (fewer if the ring is full). WR `wr_id + n`
 * is signaled when the down-counter `sq->to_signal` reaches 0 (every
 * `signal_every`-th WR overall). */
uint32_t bv_c_post_write(struct bv_c_sq *restrict sq, uint32_t nwr,
			 const struct bv_c_sge *restrict sgl, uint32_t nsge, uint64_t raddr,
			 uint32_t rkey, uint64_t wr_id, uint32_t signal_every)
{
	uint8_t *const ring = sq->ring;
	uint8_t *const qend = ring + (size_t)sq->ring_bbs * 64;
	uint64_t *const wrid = sq->wrid;
	uint32_t *const wqe_head = sq->wqe_head;
	const uint32_t mask = sq->ring_bbs - 1;
	const uint32_t qpn = sq->qpn;
	const uint8_t ds = (uint8_t)(2 + nsge);
	const uint32_t bbs = (ds * 16u + 63) / 64;
	const uint64_t be_raddr = htobe64(raddr);
	const uint32_t be_rkey = htobe32(rkey);
	uint32_t cur = sq->cur_post;
	uint32_t head = sq->head;
	uint32_t to_signal = sq->to_signal;
	uint32_t room = sq->max_post - (head - sq->tail);
	struct mlx5_wqe_ctrl_seg *ctrl = NULL;
	uint32_t n;

	if (nwr > room)
		nwr = room;
	for (n = 0; n < nwr; n++) {
		uint32_t idx = cur & mask;
		uint8_t *seg = ring + (size_t)idx * 64;
		uint8_t fm_ce_se = 0;

		if (--to_signal == 0) {
			to_signal = signal_every;
			fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
		}
		ctrl = (struct mlx5_wqe_ctrl_seg *)seg;
		mlx5dv_set_ctrl_seg(ctrl, (uint16_t)cur, MLX5_OPCODE_RDMA_WRITE, 0, qpn, fm_ce_se,
				    ds, 0, 0);

		struct mlx5_wqe_raddr_seg *ra = (struct mlx5_wqe_raddr_seg *)(seg + 16);
		ra->raddr = be_raddr;
		ra->rkey = be_rkey;
		ra->reserved = 0;

		uint8_t *d = seg + 32;
		for (uint32_t i = 0; i < nsge; i++) {
			if (d == qend)
				d = ring;
			mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)d, sgl[i].length,
					    sgl[i].lkey, (uintptr_t)sgl[i].addr);
			d += 16;
		}
		wrid[idx] = wr_id + n;
		wqe_head[idx] = head + n;
		cur += bbs;
	}
	if (n == 0)
		return 0;

	sq->cur_post = cur;
	sq->head = head + n;
	sq->to_signal = to_signal;
	compiler_barrier();                          /* udma_to_device_barrier (x86) */
	sq->dbrec[1] = htobe32(cur & 0xffff);
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
