/* Per-tenant ACLs in a map of maps: an outer array, indexed by the VLAN ID of an 802.1Q
 * frame, holds one hash map per tenant (source IPv4 address -> verdict); a frame whose VLAN
 * has no tenant map passes, a source the tenant lists gets its verdict (counted), any other is
 * dropped. A second outer map, a hash of maps keyed by the IP protocol, holds per-protocol
 * counters (arrays). The inner maps' contents are set by user space. (Keys come from the
 * packet, so that an example packet with its map entries reproduces a path.) */
#include "xdp_common.h"

struct acl {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 64);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 16);
	__type(key, __u32);
	__array(values, struct acl);
} tenants SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 8);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_ARRAY);
		__type(key, __u32);
		__type(value, __u64);
		__uint(max_entries, 2);
	});
} protos SEC(".maps");

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

SEC("xdp")
int map_in_map_acl(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETH_P_8021Q))
		return XDP_PASS;
	struct vlan_hdr *vh = (void *)(eth + 1);
	if ((void *)(vh + 1) > data_end)
		return XDP_DROP;
	if (vh->proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(vh + 1);
	if ((void *)(ip + 1) > data_end)
		return XDP_DROP;

	__u32 proto = ip->protocol;
	void *counters = bpf_map_lookup_elem(&protos, &proto);
	if (counters) {
		__u32 slot = 0;
		__u64 *n = bpf_map_lookup_elem(counters, &slot);
		if (n)
			__sync_fetch_and_add(n, 1);
	}

	__u32 vlan = bpf_ntohs(vh->tci) & 0x0fff;
	if (vlan >= 16)
		return XDP_ABORTED;
	void *acl = bpf_map_lookup_elem(&tenants, &vlan);
	if (!acl)
		return XDP_PASS;
	__u32 src = ip->saddr;
	__u32 *verdict = bpf_map_lookup_elem(acl, &src);
	if (!verdict)
		return XDP_DROP;
	return *verdict == XDP_TX ? XDP_TX : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
