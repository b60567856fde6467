/* A loop with a constant bound (16): sums the first bytes of the packet. */
#include "xdp_common.h"

SEC("xdp")
int loop_const(struct xdp_md *ctx)
{
	unsigned char *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	unsigned int sum = 0;
	if (data + 16 > end)
		return XDP_DROP;
#pragma clang loop unroll(disable)
	for (int i = 0; i < 16; i++)
		sum += data[i];
	return sum & 1 ? XDP_PASS : XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
