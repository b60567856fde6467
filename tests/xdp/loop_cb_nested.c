/* Nested bpf_loop: the outer callback runs a bpf_loop of its own. A 4 x 4 block of the UDP
 * payload is summed (row i, column j at byte 42 + 4 i + j), each byte bounds-checked against
 * data_end through the context struct both callbacks share; a sum above 1000 drops the
 * packet. The analysis unrolls the inner call (4 callback calls) inside each of the outer
 * call's 4. */
#include "xdp_common.h"

struct block {
	unsigned char *base;
	void *end;
	__u32 row;
	__u32 sum;
};

static long add_byte(__u32 j, void *data)
{
	struct block *b = data;
	unsigned char *p = b->base + ((b->row & 3) * 4 + (j & 3));
	if ((void *)(p + 1) > b->end)
		return 1;
	b->sum += *p;
	return 0;
}

static long add_row(__u32 i, void *data)
{
	struct block *b = data;
	b->row = i & 3;
	bpf_loop(4, add_byte, b, 0);
	return 0;
}

SEC("xdp")
int loop_cb_nested(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct block b = { .base = (unsigned char *)data + 42, .end = end, .row = 0, .sum = 0 };
	bpf_loop(4, add_row, &b, 0);
	return b.sum > 1000 ? XDP_DROP : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
