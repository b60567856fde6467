/* A walk to the end of the packet (no evident bound) around a counted inner loop: once the
 * inner loop is unrolled, each pass of the search for the outer loop's bound covers a
 * thousand copies of its body, so the search must stop at what could be unrolled at all. */
#include "xdp_common.h"

SEC("xdp")
int loop_nested(struct xdp_md *ctx)
{
	unsigned char *p = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	unsigned int acc = 0;
#pragma clang loop unroll(disable)
	while (p + 1 <= end && *p != 0xff) {
#pragma clang loop unroll(disable)
		for (int i = 0; i < 1000; i++)
			acc = acc * 31 + (*p ^ i);
		p++;
	}
	return acc & 1 ? XDP_PASS : XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
