/* A component for disp_mini.c (libxdp's dispatcher convention): drops IPv4 packets to UDP
 * port 9 and counts the others by protocol in a map of its own; no XDP_RUN_CONFIG, so libxdp's
 * defaults hold (run priority 50, the chain goes on after XDP_PASS only). */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

SEC("xdp")
int comp_a(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end)
		return XDP_ABORTED;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end)
		return XDP_PASS;
	__u32 k = ip->protocol;
	__u64 *n = bpf_map_lookup_elem(&stats, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	if (ip->protocol == IPPROTO_UDP) {
		struct udphdr *udp = (void *)(ip + 1);
		if ((void *)(udp + 1) <= data_end && udp->dest == bpf_htons(9))
			return XDP_DROP;
	}
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
