/* Count-Min sketch (Cormode and Muthukrishnan 2005; paper §6: "counts the number of UDP and
 * TCP flows, using a varying number of hash functions", N = 1..20) over the flow of every
 * IPv4 UDP or TCP packet. The flow key is the 5-tuple folded by a 32-bit mixing hash; stage s
 * hashes the key with its own seed and adds one, atomically, to its counter in row s of an
 * array map. Built once per N with -DSTAGES=N.
 *
 * The hash is C. Wellons' "lowbias32" from hash-prospector (two multiply/xor-shift rounds,
 * public domain), seeded per stage; the seeds are 20 random 32-bit numbers (Python's
 * random.Random(20211207).getrandbits(32)). */
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

static const __u32 seeds[20] = {
	0x262fcdb8, 0xddf99a28, 0xbc0489ca, 0x0c7d44dc, 0x7db13ff5,
	0xd57f3ed8, 0xb6e58918, 0x99903584, 0xf274bb08, 0xa413a3d0,
	0xaf835dea, 0x705d8b69, 0xdf2c5795, 0x792934d9, 0xb62a6fe7,
	0x528f73dc, 0x38787af6, 0x6bd7c842, 0xde3b8cdf, 0x34e04367,
};

static __always_inline __u32 lowbias32(__u32 x)
{
	x ^= x >> 16;
	x *= 0x7feb352d;
	x ^= x >> 15;
	x *= 0x846ca68b;
	x ^= x >> 16;
	return x;
}

SEC("xdp")
int count_min(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *l4 = (void *)(ip + 1); /* TCP's ports sit where UDP's do */
	if ((void *)(l4 + 1) > end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5)
		return XDP_PASS;
	if (ip->protocol != IPPROTO_UDP && ip->protocol != IPPROTO_TCP)
		return XDP_PASS;
	__u32 key = lowbias32(ip->saddr);
	key = lowbias32(key ^ ip->daddr);
	key = lowbias32(key ^ ((__u32)l4->source << 16 | l4->dest));
	key ^= ip->protocol;
#pragma clang loop unroll(disable)
	for (__u32 s = 0; s < STAGES; s++) {
		__u32 idx = s * COLUMNS + (lowbias32(key ^ seeds[s]) & (COLUMNS - 1));
		__u32 *cell = bpf_map_lookup_elem(&sketch, &idx);
		if (cell)
			__sync_fetch_and_add(cell, 1);
	}
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
