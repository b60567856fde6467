/* Two XDP programs in one object: the analyzer needs --section to choose. */
#include "xdp_common.h"

SEC("xdp")
int first(struct xdp_md *ctx)
{
	return XDP_PASS;
}

SEC("xdp")
int second(struct xdp_md *ctx)
{
	return XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
