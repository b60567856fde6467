/* Maps declared with max_entries 0, as xdp-tools' samples declare them: their loader sets the
 * size before loading. A lookup in such a map can succeed, and this program's slow path (a
 * rule hit, then an eight-round hash over the packet) is behind one. An analysis that takes
 * the 0 literally finds every lookup failing and reports only the fast drop. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 0);
	__type(key, __u32);
	__type(value, __u32);
} rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 0);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

SEC("xdp")
int unsized_map(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);

	if ((void *)(ip + 1) > data_end)
		return XDP_DROP;
	__u32 idx = ip->protocol;
	__u32 *rule = bpf_map_lookup_elem(&rules, &idx);
	if (!rule)
		return XDP_DROP;
	__u32 h = *rule;
#pragma unroll
	for (int i = 0; i < 8; i++)
		h = (h ^ ip->saddr) * 0x9e3779b1 + (h >> 7);
	__u32 src = ip->saddr;
	__u64 *n = bpf_map_lookup_elem(&seen, &src);
	if (n && *n > h)
		return XDP_PASS;
	return XDP_TX;
}
char LICENSE[] SEC("license") = "GPL";
