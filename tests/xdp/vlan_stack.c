/* Pops up to four VLAN tags (802.1Q or 802.1ad) with a bounded loop that is not unrolled and
 * counts packets per innermost VLAN id in a hash map. In bit-rate mode each tag a path walks
 * needs four more bytes (issue 17 §4). */
#include "xdp_common.h"

struct vlan_tag {
	__be16 tci;
	__be16 proto;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u16);
	__type(value, __u64);
} per_vlan SEC(".maps");

SEC("xdp")
int vlan_stack(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	__be16 proto = eth->h_proto;
	struct vlan_tag *tag = (void *)(eth + 1);
	__u16 vid = 0;
#pragma clang loop unroll(disable)
	for (int i = 0; i < 4; i++) {
		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if ((void *)(tag + 1) > end)
			return XDP_DROP;
		vid = bpf_ntohs(tag->tci) & 0xfff;
		proto = tag->proto;
		tag++;
	}
	if (!vid)
		return XDP_PASS;
	__u64 one = 1, *n = bpf_map_lookup_elem(&per_vlan, &vid);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&per_vlan, &vid, &one, BPF_NOEXIST);
	return proto == bpf_htons(ETH_P_IP) ? XDP_PASS : XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
