/* A function another object defines (an extern, linked by `bpftool gen object` as libbpf's
 * static linker does): the analyzer says to link the objects first (issue 32 §2). */
#include "xdp_common.h"

extern int nicsim_policy_in_other_object(__u32 first_byte);

SEC("xdp")
int ld_extern_other(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;

	if (p + 1 > (__u8 *)end)
		return XDP_PASS;
	return nicsim_policy_in_other_object(p[0]) ? XDP_DROP : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
