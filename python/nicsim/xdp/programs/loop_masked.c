/* A loop bounded by a masked packet byte (n = pkt[0] & 31) and by the packet's end. */
#include "xdp_common.h"

SEC("xdp")
int loop_masked(struct xdp_md *ctx)
{
	unsigned char *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	unsigned int sum = 0;
	if (data + 1 > end)
		return XDP_DROP;
	unsigned int n = data[0] & 31;
#pragma clang loop unroll(disable)
	for (unsigned int i = 0; i < n; i++) {
		if (data + i + 2 > end)
			break;
		sum += data[i + 1];
	}
	return sum > 100 ? XDP_PASS : XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
