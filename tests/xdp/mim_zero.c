/* Hostile map of maps: an array of maps declared with max_entries 0 (its loader sizes it), and
 * a lookup through the inner map. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 0);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_ARRAY);
		__type(key, __u32);
		__type(value, __u32);
		__uint(max_entries, 4);
	});
} zero_outer SEC(".maps");

SEC("xdp")
int mim_zero(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	if (data + 1 > data_end)
		return XDP_DROP;
	__u32 k = *(__u8 *)data;
	__u32 *inner = bpf_map_lookup_elem(&zero_outer, &k);
	if (!inner)
		return XDP_PASS;
	__u32 z = 1;
	__u32 *v = bpf_map_lookup_elem(inner, &z);
	if (!v)
		return XDP_ABORTED;
	return *v == 7 ? XDP_DROP : XDP_TX;
}
char LICENSE[] SEC("license") = "GPL";
