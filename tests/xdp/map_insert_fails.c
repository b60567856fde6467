/* A path that needs an insert into a hash map to fail: with BPF_NOEXIST it fails when the key is
 * present (-EEXIST) or the map is full (-E2BIG, which the analysis cannot rule out). The example
 * must show the first: an example's maps cannot make the map full, so `validate` would see the
 * insert succeed and the packet take another path. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u32);
} seen SEC(".maps");

SEC("xdp")
int map_insert_fails(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (data + 8 > end)
		return XDP_PASS;
	__u32 k = *(__u32 *)data, one = 1;
	if (bpf_map_update_elem(&seen, &k, &one, BPF_NOEXIST) == 0)
		return XDP_PASS;
	/* Seen before: count it under another key. */
	__u32 *w = data;
	bpf_map_update_elem(&seen, &one, &w[1], BPF_ANY);
	return XDP_DROP;
}
