/* bpf-to-bpf calls that fan out: each of eight levels of functions calls the next at eight
 * sites, so the inlined graph would have 8^7 instances of the innermost function. The
 * analyzer must refuse it as too large, quickly, not build it. */
#include "xdp_common.h"

static __attribute__((noinline)) int f7(int x)
{
	return x * 3 + 1;
}

#define FAN(name, next)                                                                   \
	static __attribute__((noinline)) int name(int x)                                  \
	{                                                                                 \
		return next(x) ^ next(x + 1) ^ next(x + 2) ^ next(x + 3) ^ next(x + 4) ^  \
		       next(x + 5) ^ next(x + 6) ^ next(x + 7);                           \
	}
FAN(f6, f7)
FAN(f5, f6)
FAN(f4, f5)
FAN(f3, f4)
FAN(f2, f3)
FAN(f1, f2)

SEC("xdp")
int call_fanout(struct xdp_md *ctx)
{
	unsigned char *p = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (p + 1 > end)
		return XDP_PASS;
	return (f1(*p) ^ f1(*p + 8) ^ f1(*p + 16) ^ f1(*p + 24) ^ f1(*p + 32) ^ f1(*p + 40) ^
		f1(*p + 48) ^ f1(*p + 56)) & 1 ? XDP_PASS : XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
