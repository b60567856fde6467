/* An access list on a longest-prefix-match trie (BPF_MAP_TYPE_LPM_TRIE): the IPv4 source
 * address is looked up with prefix length 32, so the longest stored prefix that covers it
 * decides. No rule: XDP_PASS; rule 0: XDP_DROP; any other rule: the destination is counted in
 * a hash map and the packet sent back (XDP_TX). */
#include "xdp_common.h"

struct lpm_key {
	__u32 prefixlen;
	__u32 addr;
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 256);
	__type(key, struct lpm_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} acl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

SEC("xdp")
int lpm_acl(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end)
		return XDP_DROP;
	struct lpm_key k = { .prefixlen = 32, .addr = ip->saddr };
	__u32 *rule = bpf_map_lookup_elem(&acl, &k);
	if (!rule)
		return XDP_PASS;
	if (*rule == 0)
		return XDP_DROP;
	__u32 d = ip->daddr;
	__u64 *n = bpf_map_lookup_elem(&hits, &d);
	if (n) {
		__sync_fetch_and_add(n, 1);
	} else {
		__u64 one = 1;
		bpf_map_update_elem(&hits, &d, &one, BPF_NOEXIST);
	}
	return XDP_TX;
}
char LICENSE[] SEC("license") = "GPL";
