/* An allow list per interface kept as bloom filters inside an array of maps (a scrubbing
 * gateway's pattern): the receive queue's filter is looked up, the packet's IPv4 source peeked
 * in it, a member passed, others dropped; a packet to port 9 adds its source. Push and peek on
 * an inner bloom filter are analysed as on any (their results fresh to the symbolic executor). */
#include "xdp_common.h"

struct allow {
	__uint(type, BPF_MAP_TYPE_BLOOM_FILTER);
	__type(value, __u32);
	__uint(max_entries, 64);
	__uint(map_extra, 3);
} allow0 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct allow);
} allow_lists SEC(".maps") = {.values = {[0] = &allow0}};

SEC("xdp")
int mim_bloom(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);

	if ((void *)(ip + 1) + 4 > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	__u32 q = ctx->rx_queue_index & 1, src = ip->saddr;
	void *allow = bpf_map_lookup_elem(&allow_lists, &q);
	if (!allow)
		return XDP_ABORTED;
	__u16 dport = *(__u16 *)((void *)(ip + 1) + 2);
	if (dport == bpf_htons(9))
		return bpf_map_push_elem(allow, &src, 0) ? XDP_ABORTED : XDP_TX;
	return bpf_map_peek_elem(allow, &src) == 0 ? XDP_PASS : XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
