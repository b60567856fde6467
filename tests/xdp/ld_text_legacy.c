/* nicsim-build: llc */
/* The XDP paper's objects' convention: the program is a global function in .text (no SEC),
 * maps are legacy 20-byte `struct bpf_map_def` entries in a `maps` section, and the object has
 * no BTF and no license (built with clang -O2 -emit-llvm, then llc -march=bpf). A static
 * function in .text is a subprogram, not a second program. */
#include "xdp_common.h"

struct bpf_map_def_legacy {
	unsigned int type, key_size, value_size, max_entries, map_flags;
};
struct bpf_map_def_legacy SEC("maps") hits = {
	.type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 4,
};
struct bpf_map_def_legacy SEC("maps") seen = {
	.type = BPF_MAP_TYPE_HASH, .key_size = 4, .value_size = 8, .max_entries = 16,
};

static __noinline int proto_of(void *data, void *end)
{
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return -1;
	return ip->protocol;
}

int ld_text_legacy(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	int proto = proto_of(data, end);
	if (proto < 0)
		return XDP_PASS;
	__u32 k = proto & 3;
	__u64 *v = bpf_map_lookup_elem(&hits, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	__u32 p = proto;
	if (bpf_map_lookup_elem(&seen, &p))
		return XDP_DROP;
	return XDP_PASS;
}
