/* A dynptr made before bpf_xdp_adjust_head moves the packet, sliced after: the slice may be a
 * copy into the buffer then, which the analysis does not model, so it refuses the program in
 * one line naming the helper. */
#include "xdp_common.h"

extern int bpf_dynptr_from_xdp(struct xdp_md *x, __u64 flags, struct bpf_dynptr *ptr__uninit) __ksym;
extern void *bpf_dynptr_slice(const struct bpf_dynptr *p, __u32 offset, void *buffer__opt,
			      __u32 buffer__szk) __ksym;

SEC("xdp")
int kf_dynptr_moved(struct xdp_md *ctx)
{
	struct bpf_dynptr dp;
	__u8 buf[4] = {};
	__u8 *b;

	if (bpf_dynptr_from_xdp(ctx, 0, &dp))
		return XDP_ABORTED;
	if (bpf_xdp_adjust_head(ctx, 14))
		return XDP_DROP;
	b = bpf_dynptr_slice(&dp, 0, buf, sizeof(buf));
	if (!b)
		return XDP_DROP;
	return b[0] ? XDP_PASS : XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
