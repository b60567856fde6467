/* A program whose slowest path is taken only for packets received on interface 7 (a per-port
 * policy, as a router's programs keep one): a test run gives the loopback's ifindex 1, so
 * validate cannot replay that path, and its row says which field the example needs. */
#include "xdp_common.h"

SEC("xdp")
int ctx_ifindex(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;

	if (p + 16 > (__u8 *)end)
		return XDP_PASS;
	if (ctx->ingress_ifindex == 7) {
		__u64 h = p[1];
#pragma unroll
		for (int i = 0; i < 32; i++)
			h = h * 31 + (h >> 3);
		return h & 1 ? XDP_DROP : XDP_TX;
	}
	return p[0] == 0xff ? XDP_DROP : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
