/* Walks a TCP SYN's options with a bounded loop that is not unrolled (at most 8 options, each
 * option's length read from the packet), and counts the MSS values seen in a hash map. In
 * bit-rate mode each extra option a path walks needs a longer packet, so the slowest paths by
 * cycles are not the slowest by bits: the search must order or prune them by the packet size
 * each path needs (issue 17 §4). */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} mss_seen SEC(".maps");

SEC("xdp")
int tcp_options(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_TCP)
		return XDP_PASS;
	struct tcphdr *tcp = (void *)(ip + 1);
	if ((void *)(tcp + 1) > end || !tcp->syn)
		return XDP_PASS;
	unsigned char *opt = (void *)(tcp + 1);
	__u32 mss = 0;
#pragma clang loop unroll(disable)
	for (int i = 0; i < 8; i++) {
		if ((void *)(opt + 1) > end)
			break;
		unsigned char kind = opt[0];
		if (kind == 0)
			break;
		if (kind == 1) {
			opt += 1;
			continue;
		}
		if ((void *)(opt + 2) > end)
			break;
		unsigned char len = opt[1];
		if (len < 2)
			break;
		if (kind == 2 && len == 4) {
			if ((void *)(opt + 4) > end)
				break;
			mss = (opt[2] << 8) | opt[3];
		}
		opt += len;
	}
	if (!mss)
		return XDP_PASS;
	__u64 one = 1, *n = bpf_map_lookup_elem(&mss_seen, &mss);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&mss_seen, &mss, &one, BPF_ANY);
	return XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
