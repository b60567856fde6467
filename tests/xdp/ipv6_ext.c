/* Walks an IPv6 packet's extension headers (hop-by-hop, routing, destination options,
 * fragment) with a bounded loop that is not unrolled, each header's length read from the
 * packet, to find the UDP header, and drops UDP to one port. In bit-rate mode each header a
 * path walks needs a longer packet (issue 17 §4). */
#include "xdp_common.h"

#define MAX_EXT 6

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dropped SEC(".maps");

SEC("xdp")
int ipv6_ext(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IPV6))
		return XDP_PASS;
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	if ((void *)(ip6 + 1) > end)
		return XDP_PASS;
	unsigned char *hdr = (void *)(ip6 + 1);
	__u8 next = ip6->nexthdr;
#pragma clang loop unroll(disable)
	for (int i = 0; i < MAX_EXT; i++) {
		if (next != IPPROTO_HOPOPTS && next != IPPROTO_ROUTING && next != IPPROTO_DSTOPTS &&
		    next != IPPROTO_FRAGMENT)
			break;
		if ((void *)(hdr + 2) > end)
			return XDP_PASS;
		__u8 len = next == IPPROTO_FRAGMENT ? 1 : hdr[1] + 1;
		next = hdr[0];
		hdr += len * 8;
	}
	if (next != IPPROTO_UDP)
		return XDP_PASS;
	struct udphdr *udp = (void *)hdr;
	if ((void *)(udp + 1) > end || udp->dest != bpf_htons(9))
		return XDP_PASS;
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&dropped, &zero);
	if (n)
		__sync_fetch_and_add(n, 1);
	return XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
