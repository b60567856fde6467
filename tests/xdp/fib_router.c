/* An IPv4 router on the kernel's FIB (bpf_fib_lookup): the lookup's parameters from the
 * packet, then on success the MAC addresses and the egress device it wrote, the TTL decremented
 * and XDP_REDIRECT; fragmentation needed drops, every other result (no neighbour, no route,
 * forwarding disabled, an error) passes the packet to the stack. The fields the lookup writes
 * and its result are unknown to the analysis: every outcome is a path. */
#include "xdp_common.h"

#define AF_INET 2

SEC("xdp")
int fib_router(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct bpf_fib_lookup fib = {};

	if ((void *)(ip + 1) > end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->ttl <= 1)
		return XDP_PASS;
	fib.family = AF_INET;
	fib.tos = ip->tos;
	fib.l4_protocol = ip->protocol;
	fib.tot_len = bpf_ntohs(ip->tot_len);
	fib.ipv4_src = ip->saddr;
	fib.ipv4_dst = ip->daddr;
	fib.ifindex = ctx->ingress_ifindex;

	long r = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	if (r == BPF_FIB_LKUP_RET_FRAG_NEEDED)
		return XDP_DROP;
	if (r != BPF_FIB_LKUP_RET_SUCCESS)
		return XDP_PASS;
	ip->ttl--;
	ip->check += bpf_htons(0x0100);
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	return bpf_redirect(fib.ifindex, 0);
}
char LICENSE[] SEC("license") = "GPL";
