/* A redirect through a device map held in an array of maps' slot: the analysis models only
 * lookups, updates and deletes through an inner map, so this is one error naming the map. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 4);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_DEVMAP);
		__type(key, __u32);
		__type(value, __u32);
		__uint(max_entries, 8);
	});
} ports SEC(".maps");

SEC("xdp")
int mim_devmap(struct xdp_md *ctx)
{
	__u32 k = 0;
	void *dev = bpf_map_lookup_elem(&ports, &k);
	if (!dev)
		return XDP_PASS;
	return bpf_redirect_map(dev, 1, XDP_DROP);
}

char LICENSE[] SEC("license") = "GPL";
