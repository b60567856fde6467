/* Destination NAT of IPv4/UDP with the checksums updated by bpf_csum_diff, as upf-bpf, katran and
 * xdp-tutorial update them: the new address from a hash map, the difference of the old and new
 * words summed onto the old checksum, then folded to 16 bits with each carry added back
 * (csum_fold_helper's four steps). A 32-bit sum needs at most two folds: the third and fourth
 * steps, and the per-carry accounting they guard, are paths no packet takes, which an analysis
 * that takes bpf_csum_diff's result for any number counts as feasible (the guarantee lower, the
 * example packet one the program does not run as reported). With both checksums a carry at
 * the first fold is a matter of the packet's bytes: the slowest path needs the solver to find
 * addresses and checksums that give it. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u32);
} nat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} carries SEC(".maps");

/* Counts a fold step that carried, in slot `step` (a few instructions: the cost of a carry). */
static __always_inline void count(__u32 step)
{
	__u64 *c = bpf_map_lookup_elem(&carries, &step);
	if (c)
		__sync_fetch_and_add(c, 1);
}

static __always_inline __u16 fold(__u64 csum)
{
#pragma unroll
	for (__u32 i = 0; i < 4; i++) {
		if (csum >> 16) {
			csum = (csum & 0xffff) + (csum >> 16);
			count(i);
		}
	}
	return ~csum;
}

SEC("xdp")
int csum_nat(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->ihl != 5)
		return XDP_PASS;
	__u32 old = ip->daddr;
	__u32 *to = bpf_map_lookup_elem(&nat, &old);
	if (!to)
		return XDP_PASS;
	__u32 new = *to;
	__s64 ip_sum = bpf_csum_diff(&old, 4, &new, 4, ~ip->check & 0xffff);
	if (ip_sum < 0)
		return XDP_ABORTED;
	ip->daddr = new;
	ip->check = fold(ip_sum);
	if (ip->protocol != IPPROTO_UDP)
		return XDP_TX;
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end || udp->check == 0)
		return XDP_TX;
	/* The UDP checksum covers the pseudo-header's addresses too. */
	__s64 udp_sum = bpf_csum_diff(&old, 4, &new, 4, ~udp->check & 0xffff);
	if (udp_sum < 0)
		return XDP_ABORTED;
	udp->check = fold(udp_sum);
	return XDP_TX;
}
