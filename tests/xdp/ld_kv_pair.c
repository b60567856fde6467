/* What other compilers and older toolchains leave in an object, which libbpf skips and the
 * analyzer must too: iproute2's and old libbpf's BPF_ANNOTATE_KV_PAIR (a `.maps.NAME` section
 * holding a struct of a legacy map's key and value types: no map; CentaurusInfra/mizar's maps
 * are declared so), and empty `.data` and `.bss` sections (GCC's BPF backend writes them
 * always: no map, where a map of 0-byte values is refused by the kernel). */
#include "xdp_common.h"

struct bpf_map_def {
	unsigned int type, key_size, value_size, max_entries, map_flags;
};
#define BPF_ANNOTATE_KV_PAIR(name, type_key, type_val)                                          \
	struct ____btf_map_##name {                                                             \
		type_key key;                                                                   \
		type_val value;                                                                 \
	};                                                                                      \
	struct ____btf_map_##name __attribute__((section(".maps." #name), used))               \
		____btf_map_##name = {}

struct key_t {
	__u32 saddr;
};
struct val_t {
	__u64 pkts;
};
struct bpf_map_def SEC("maps") stats = {
	.type = BPF_MAP_TYPE_HASH,
	.key_size = sizeof(struct key_t),
	.value_size = sizeof(struct val_t),
	.max_entries = 16,
};
BPF_ANNOTATE_KV_PAIR(stats, struct key_t, struct val_t);

/* Empty global-data sections, as GCC emits them. */
asm(".pushsection .data,\"aw\",@progbits\n.popsection\n"
    ".pushsection .bss,\"aw\",@nobits\n.popsection\n");

SEC("xdp")
int ld_kv_pair(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct key_t k = { .saddr = ip->saddr };
	struct val_t *v = bpf_map_lookup_elem(&stats, &k);
	if (v)
		v->pkts++;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
