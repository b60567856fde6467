/* kf_dynptr.c with a writable slice (bpf_dynptr_slice_rdwr) of the IPv4 header, whose TTL is
 * decremented (XDP_TX) or, at 1 or less, dropped. Linux 6.18's verifier refuses the writable
 * slice here ("bpf_dynptr_slice_rdwr() is not allowed"), so only the analysis and the
 * interpreter run it. */
#include "xdp_common.h"

extern int bpf_dynptr_from_xdp(struct xdp_md *x, __u64 flags, struct bpf_dynptr *ptr__uninit) __ksym;
extern void *bpf_dynptr_slice(const struct bpf_dynptr *p, __u32 offset, void *buffer__opt,
			      __u32 buffer__szk) __ksym;
extern void *bpf_dynptr_slice_rdwr(const struct bpf_dynptr *p, __u32 offset, void *buffer__opt,
				   __u32 buffer__szk) __ksym;
extern int bpf_dynptr_adjust(const struct bpf_dynptr *p, __u32 start, __u32 end) __ksym;
extern int bpf_dynptr_clone(const struct bpf_dynptr *p, struct bpf_dynptr *clone__uninit) __ksym;
extern __u32 bpf_dynptr_size(const struct bpf_dynptr *p) __ksym;
extern _Bool bpf_dynptr_is_null(const struct bpf_dynptr *p) __ksym;
extern _Bool bpf_dynptr_is_rdonly(const struct bpf_dynptr *p) __ksym;

SEC("xdp")
int kf_dynptr_rdwr(struct xdp_md *ctx)
{
	struct bpf_dynptr dp, ip;
	__u8 buf[sizeof(struct iphdr)] = {};
	struct ethhdr *eth;
	struct iphdr *iph;

	if (bpf_dynptr_from_xdp(ctx, 0, &dp))
		return XDP_ABORTED;
	eth = bpf_dynptr_slice(&dp, 0, NULL, sizeof(*eth));
	if (!eth)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if (bpf_dynptr_clone(&dp, &ip))
		return XDP_ABORTED;
	if (bpf_dynptr_adjust(&ip, sizeof(*eth), bpf_dynptr_size(&dp)))
		return XDP_ABORTED;
	if (bpf_dynptr_is_null(&ip) || bpf_dynptr_is_rdonly(&ip))
		return XDP_ABORTED;
	iph = bpf_dynptr_slice_rdwr(&ip, 0, buf, sizeof(buf));
	if (!iph)
		return XDP_DROP;
	if (iph->ttl <= 1)
		return XDP_DROP;
	iph->ttl--;
	return XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
