/* A walk to the end of the packet: its bound is the packet length, which the code does not
 * make evident, so the analyzer needs --loop-bound. */
#include "xdp_common.h"

SEC("xdp")
int loop_nobound(struct xdp_md *ctx)
{
	unsigned char *p = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	unsigned int zeros = 0;
#pragma clang loop unroll(disable)
	while (p + 1 <= end && *p != 0xff) {
		zeros += *p == 0;
		p++;
	}
	return zeros ? XDP_PASS : XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
