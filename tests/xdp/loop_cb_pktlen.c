/* bpf_loop with nr_loops from the packet (a u32 at byte 14, so up to 2^32 - 1: above
 * BPF_MAX_LOOPS the call returns -E2BIG without a call). Its callback sums the bytes from 18
 * on (byte 18 + (i & 1023)), stopping at data_end. The bound is not evident: the analysis needs --loop-bound. */
#include "xdp_common.h"

struct sum {
	unsigned char *base;
	void *end;
	__u32 total;
};

static long add(__u32 i, void *data)
{
	struct sum *s = data;
	unsigned char *p = s->base + (i & 0x3ff);
	if ((void *)(p + 1) > s->end)
		return 1;
	s->total += *p;
	return 0;
}

SEC("xdp")
int loop_cb_pktlen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (data + 18 > end)
		return XDP_PASS;
	__u32 n = *(__u32 *)(data + 14);
	struct sum s = { .base = (unsigned char *)data + 18, .end = end, .total = 0 };
	long r = bpf_loop(n, add, &s, 0);
	if (r < 0)
		return XDP_ABORTED;
	return (s.total & 1) ? XDP_DROP : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
