/* BTF-defined maps of maps: an array of maps initialised with `values`, and a hash of maps.
 * The loader reads them (with their inner maps' definition); the analysis names the map type
 * it does not model. */
#include "xdp_common.h"

struct inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 4);
} inner_a SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct inner);
} outer SEC(".maps") = {
	.values = { [0] = &inner_a },
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 8);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_HASH);
		__type(key, __u32);
		__type(value, __u32);
		__uint(max_entries, 16);
	});
} outer_h SEC(".maps");

SEC("xdp")
int ld_map_in_map(struct xdp_md *ctx)
{
	__u32 k = 0;
	void *m = bpf_map_lookup_elem(&outer, &k);
	if (!m)
		return XDP_PASS;
	__u64 *n = bpf_map_lookup_elem(m, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	return XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
