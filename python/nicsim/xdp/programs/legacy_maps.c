/* A legacy `maps` section (struct bpf_map_def), as older toolchains wrote it. */
#include "xdp_common.h"

struct bpf_map_def_legacy {
	unsigned int type, key_size, value_size, max_entries, map_flags;
};
struct bpf_map_def_legacy SEC("maps") packets = {
	.type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 2,
};

SEC("xdp")
int legacy_maps(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u32 k = data + 60 <= end;
	__u64 *v = bpf_map_lookup_elem(&packets, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
