/* bpf_loop callbacks whose context points to the caller's stack: a struct there holding the
 * loop's limit, a running sum and a pointer to another of the caller's variables (a pointer to
 * a pointer), read and written by the callback. The first call is unrolled (nr_loops is 8),
 * the second summarised (nr_loops a 32-bit packet field: up to BPF_MAX_LOOPS; its callback reads
 * and writes the struct only: a summary forgets what the caller's stack holds, so a pointer
 * loaded from it there is not placed). The caller then tests what the callbacks wrote (0
 * before the calls). Every load and store is a stack access (or the context's or the
 * packet's): none may cost as an unplaced pointer. */
#include "xdp_common.h"

struct lctx {
	__u32 lim;
	__u32 sum;
	__u32 *hits;
};

static long step(__u32 i, void *v)
{
	struct lctx *c = v;
	if (i >= c->lim)
		return 1;
	c->sum += i;
	if (i & 1)
		*c->hits += 1;
	return 0;
}

static long step_sum(__u32 i, void *v)
{
	struct lctx *c = v;
	if (i >= c->lim)
		return 1;
	c->sum += i;
	return 0;
}

SEC("xdp")
int loop_cb_stack(struct xdp_md *ctx)
{
	unsigned char *p = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (p + 6 > end)
		return XDP_PASS;
	__u32 hits = 0;
	struct lctx c = { .lim = p[0] & 7, .sum = 0, .hits = &hits };
	bpf_loop(8, step, &c, 0);
	if (c.sum == 0 && hits == 0)
		return XDP_PASS;
	c.lim = 3;
	bpf_loop(*(__u32 *)(p + 2), step_sum, &c, 0);
	return (c.sum + hits) & 1 ? XDP_DROP : XDP_TX;
}

char _license[] SEC("license") = "GPL";
