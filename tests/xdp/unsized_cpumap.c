/* Unsized maps used only on some paths, as xdp-tools' xdp-bench cpumap programs use them
 * (issue 37): `cpus_available` (an array) and `cpu_map` (a CPU map) are declared without
 * max_entries, as xdp-bench declares them (its loader sizes them to the machine's CPUs). Only
 * IPv4 packets pick a CPU from the one and are redirected through the other; every other packet
 * is passed or dropped without touching either. The query of a path that redirects compares the
 * CPU with the CPU map's unknown size, so that size must be declared in it (it was not: Bitwuzla
 * refused the query, "undefined symbol"), whichever path the target's costs make the slowest. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct bpf_cpumap_val));
} cpu_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
} cpus_available SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cpus_count SEC(".maps");

SEC("xdp")
int unsized_cpumap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	__u32 key0 = 0;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if ((void *)(ip + 1) > data_end)
		return XDP_DROP;
	__u32 *count = bpf_map_lookup_elem(&cpus_count, &key0);
	if (!count || *count == 0)
		return XDP_PASS;
	/* A hash of the addresses picks one of the available CPUs (cpumap_l4_hash's way). */
	__u32 h = ip->saddr ^ ip->daddr;
	h ^= h >> 16;
	h *= 0x9e3779b1;
	__u32 idx = h % *count;
	__u32 *cpu = bpf_map_lookup_elem(&cpus_available, &idx);
	if (!cpu)
		return XDP_ABORTED;
	return bpf_redirect_map(&cpu_map, *cpu, 0);
}
char LICENSE[] SEC("license") = "GPL";
