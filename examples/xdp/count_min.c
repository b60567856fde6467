/* Count-Min sketch over the 5-tuple with STAGES hash stages (paper §6: N = 1..20), each an
 * atomic add into one row of an array map. Built once per N with -DSTAGES=N. */
#include "xdp_common.h"

#ifndef STAGES
#define STAGES 5
#endif
#define COLUMNS 4096

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, STAGES * COLUMNS);
	__type(key, __u32);
	__type(value, __u32);
} sketch SEC(".maps");

/* Multiply-shift hash constants, one per stage (odd 32-bit numbers). */
static const __u32 seeds[20] = {
	0x9e3779b1, 0x85ebca77, 0xc2b2ae3d, 0x27d4eb2f, 0x165667b1, 0xd3a2646d, 0xfd7046c5,
	0xb55a4f09, 0x2545f491, 0x3c6ef373, 0xa54ff53b, 0x510e527f, 0x9b05688d, 0x1f83d9ab,
	0x5be0cd19, 0xcbbb9d5d, 0x629a292b, 0x9159015b, 0x152fecd9, 0x67332667,
};

SEC("xdp")
int count_min(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *l4 = (void *)(ip + 1);
	if ((void *)(l4 + 1) > end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5)
		return XDP_PASS;
	__u32 key = ip->saddr ^ (ip->daddr * 31) ^ ((__u32)l4->source << 16 | l4->dest) ^ ip->protocol;
#pragma clang loop unroll(disable)
	for (int s = 0; s < STAGES; s++) {
		__u32 idx = s * COLUMNS + ((key * seeds[s]) >> 20);
		__u32 *cell = bpf_map_lookup_elem(&sketch, &idx);
		if (cell)
			__sync_fetch_and_add(cell, 1);
	}
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
