/* Uses bpf_trace_printk, a helper no target models: the analyzer must name it in its error. */
#include "xdp_common.h"

SEC("xdp")
int bad_printk(struct xdp_md *ctx)
{
	bpf_printk("hello");
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
