/* Flags set in one branch and tested in a later one, with an independent branch in between:
 * the analyzer's split graph must keep exactly the paths that agree with their own flags. */
#include "xdp_common.h"

#define OPAQUE(x) asm volatile("" : "+r"(x))

SEC("xdp")
int flags(struct xdp_md *ctx)
{
	unsigned char *p = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (p + 4 > end)
		return XDP_DROP;
	__u32 a = 0, b = 0, n = 0;
	if (p[0] == 1)
		a = 1;
	else if (p[0] == 2)
		b = 1;
	if (p[1] & 1)
		n += p[2];
	OPAQUE(a);
	OPAQUE(b);
	if (a)
		n += 3;
	if (b)
		n *= 5;
	return n > 7 ? XDP_PASS : XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
