/* A BTF map definition put in the legacy "maps" section (as some projects do): every loader
 * reads that section as struct bpf_map_def, whose type is then 0 (the __uint members are
 * pointers, their bytes zero), a map the kernel does not create. Refused in one line. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} allowed SEC("maps");

SEC("xdp")
int ld_maps_unspec(struct xdp_md *ctx)
{
	__u32 key = 0;
	__u32 *v = bpf_map_lookup_elem(&allowed, &key);
	return v && *v == ctx->ingress_ifindex ? XDP_PASS : XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
