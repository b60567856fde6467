/* A parser that compares a header pointer with a small constant (`if (opt == (void *)1)`, a
 * sentinel some parsers use): a kernel address is never 1, so the branch that follows is dead,
 * and the slowest path the analysis reports must not be through it (the symbolic executor took
 * the comparison either way, and reported a path whose example no packet follows). */
#include "xdp_common.h"

SEC("xdp")
int ptr_const(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;

	if (p + 16 > (__u8 *)end)
		return XDP_PASS;
	__u8 *opt = p + (p[0] & 7);
	if ((long)opt == 1) {
		/* Dead: a long computation no packet reaches. */
		__u64 h = p[1];
#pragma unroll
		for (int i = 0; i < 64; i++)
			h = h * 31 + (h >> 3);
		return h & 1 ? XDP_DROP : XDP_TX;
	}
	if (opt + 1 > (__u8 *)end)
		return XDP_PASS;
	return opt[0] == 0xff ? XDP_DROP : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
