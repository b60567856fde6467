/* A small load balancer built on tail calls (docs/xdp.md, "Tail calls"). The entry program
 * parses Ethernet/IPv4/UDP, looks the flow up in an LRU hash (a miss picks a backend from the
 * destination port) and tail-calls the backend's program through a prog array the object
 * declares (`.values`): slot 0 is a fast forwarder (MAC swap, XDP_TX), slot 1 a slow one that
 * sums the first 64 payload bytes and counts the sum and its seven successors in a hash map
 * (XDP_DROP). A slot left
 * empty (2, 3) falls through to XDP_PASS. The three ends return three actions, so a run's
 * action says where it went. The analysis's guarantee is the slow target's path. */
#include "xdp_common.h"

struct flow_key {
	__u32 saddr;
	__u32 daddr;
	__u16 sport;
	__u16 dport;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct flow_key);
	__type(value, __u32);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

int lb_fast(struct xdp_md *ctx);
int lb_slow(struct xdp_md *ctx);

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 4);
	__uint(key_size, sizeof(__u32));
	__array(values, int (void *));
} backends SEC(".maps") = {
	.values = { [0] = (void *)&lb_fast, [1] = (void *)&lb_slow },
};

SEC("xdp")
int tail_lb(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end)
		return XDP_DROP;
	struct flow_key k = {
		.saddr = ip->saddr,
		.daddr = ip->daddr,
		.sport = udp->source,
		.dport = udp->dest,
	};
	__u32 backend;
	__u32 *b = bpf_map_lookup_elem(&flows, &k);
	if (b) {
		backend = *b;
	} else {
		backend = bpf_ntohs(udp->dest) & 3;
		bpf_map_update_elem(&flows, &k, &backend, BPF_ANY);
	}
	bpf_tail_call(ctx, &backends, backend);
	/* No program in that slot (2, 3) or an index past the array. */
	return XDP_PASS;
}

SEC("xdp/fast")
int lb_fast(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end)
		return XDP_ABORTED;
	unsigned char tmp[ETH_ALEN];
	__builtin_memcpy(tmp, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, tmp, ETH_ALEN);
	return XDP_TX;
}

SEC("xdp/slow")
int lb_slow(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	/* Ethernet, IPv4 and UDP headers, then 64 payload bytes. */
	__u8 *pay = data + 42;
	if ((void *)(pay + 64) > data_end)
		return XDP_DROP;
	__u32 sum = 0;
	for (int i = 0; i < 64; i += 4)
		sum += *(__u32 *)(pay + i);
	/* Eight counters per packet: the sum and its seven successors. */
	for (__u32 i = 0; i < 8; i++) {
		__u32 key = sum + i;
		__u64 *n = bpf_map_lookup_elem(&counts, &key);
		if (n) {
			__sync_fetch_and_add(n, 1);
		} else {
			__u64 one = 1;
			bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST);
		}
	}
	return XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
