/* Reads a UDP header without a bounds check on it (issue 29): only the IPv4 header is checked
 * against data_end, then the UDP destination port is read past it. The kernel's verifier
 * rejects the program ("invalid access to packet"); the analysis must not give it a
 * guarantee as if it ran: it reports the access with its source line and marks the guarantee
 * as one the kernel would refuse to load. */
#include "xdp_common.h"

SEC("xdp")
int udp_unchecked(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	struct udphdr *udp = (void *)(ip + 1);
	if (udp->dest == bpf_htons(53))
		return XDP_DROP;
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
