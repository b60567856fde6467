/* Several programs in sections named as older loaders and the kernel samples name them
 * (`xdp_fwd`, `xdp_icmp`, `xdp_sock`), and two of other types (`tc`, `socket`): with no
 * --section or --program the analyzer names them all. Maps are the kernel samples' 28-byte
 * `struct bpf_map_def` (with inner_map_idx and numa_node); one is a map of maps whose inner
 * map is named by its index. */
#include "xdp_common.h"

struct bpf_map_def_samples {
	unsigned int type, key_size, value_size, max_entries, map_flags, inner_map_idx, numa_node;
};
struct bpf_map_def_samples SEC("maps") tx_port = {
	.type = BPF_MAP_TYPE_DEVMAP, .key_size = 4, .value_size = 4, .max_entries = 8,
};
struct bpf_map_def_samples SEC("maps") counts = {
	.type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 2,
};
struct bpf_map_def_samples SEC("maps") per_port = {
	.type = BPF_MAP_TYPE_ARRAY_OF_MAPS, .key_size = 4, .value_size = 4, .max_entries = 8,
	.inner_map_idx = 1,
};

SEC("xdp_fwd")
int fwd(struct xdp_md *ctx)
{
	return bpf_redirect_map(&tx_port, 0, 0);
}

SEC("xdp_icmp")
int icmp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	__u32 k = ip->protocol == IPPROTO_ICMP;
	__u64 *n = bpf_map_lookup_elem(&counts, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	return XDP_PASS;
}

SEC("xdp_sock")
int sock(struct xdp_md *ctx)
{
	return XDP_DROP;
}

SEC("tc")
int tc_prog(struct __sk_buff *skb)
{
	return 0;
}

SEC("socket")
int sock_filter(struct __sk_buff *skb)
{
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
