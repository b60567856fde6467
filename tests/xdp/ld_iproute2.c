/* nicsim-build: no-btf */
/* iproute2's convention (`ip link set dev X xdp obj O sec prog`): the XDP program in a section
 * named `prog`, maps as iproute2's 36-byte `struct bpf_elf_map` (a map of maps among them),
 * no BTF; beside it a tc program in `classifier`, which the analyzer does not choose on its
 * own. */
#include "xdp_common.h"

struct bpf_elf_map {
	__u32 type, size_key, size_value, max_elem, flags, id, pinning, inner_id, inner_idx;
};
struct bpf_elf_map SEC("maps") vlan_drops = {
	.type = BPF_MAP_TYPE_PERCPU_ARRAY, .size_key = 4, .size_value = 8, .max_elem = 1,
};
struct bpf_elf_map SEC("maps") blocked = {
	.type = BPF_MAP_TYPE_HASH, .size_key = 4, .size_value = 4, .max_elem = 64, .pinning = 2,
};
/* iproute2's map in map: the outer map's inner_id is the id of its inner maps' template. */
struct bpf_elf_map SEC("maps") tmpl = {
	.type = BPF_MAP_TYPE_ARRAY, .size_key = 4, .size_value = 8, .max_elem = 2, .id = 42,
};
struct bpf_elf_map SEC("maps") per_vlan = {
	.type = BPF_MAP_TYPE_HASH_OF_MAPS, .size_key = 4, .size_value = 4, .max_elem = 16,
	.inner_id = 42,
};

SEC("prog")
int xdp_drop_vlan(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_8021Q)) {
		__u32 k = 0;
		__u64 *n = bpf_map_lookup_elem(&vlan_drops, &k);
		if (n)
			*n += 1;
		return XDP_DROP;
	}
	struct iphdr *ip = data + sizeof(*eth);
	if ((void *)(ip + 1) > end)
		return XDP_PASS;
	__u32 src = ip->saddr;
	return bpf_map_lookup_elem(&blocked, &src) ? XDP_DROP : XDP_PASS;
}

SEC("classifier")
int tc_pass(struct __sk_buff *skb)
{
	return 0;
}
char __license[] SEC("license") = "GPL";
