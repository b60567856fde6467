/* The second program of the chain of chain_root.c, in an object of its own: an IPv4/UDP
 * filter with its own maps (`stats`, a hash of UDP ports, is not chain_root.o's `stats`), the
 * map both pin by name (`chain_seen`), its own `.rodata`, and a prog array of its own for the
 * next program, which user space may leave empty (`--tail-call chain_next.o:next_progs=none`). */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 2);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} next_progs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} chain_seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u16);
	__type(value, __u64);
} stats SEC(".maps");

static volatile const __u16 blocked_port = 53;

SEC("xdp")
int chain_next(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end)
		return XDP_PASS;
	__u32 k = 0;
	__u64 *seen = bpf_map_lookup_elem(&chain_seen, &k);
	if (seen)
		__sync_fetch_and_add(seen, 1);
	__u16 port = bpf_ntohs(udp->dest);
	__u64 one = 1, *n = bpf_map_lookup_elem(&stats, &port);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&stats, &port, &one, BPF_ANY);
	if (port == blocked_port)
		return XDP_DROP;
	bpf_tail_call(ctx, &next_progs, 0);
	return XDP_PASS;
}

SEC("xdp")
int chain_tx(struct xdp_md *ctx)
{
	return XDP_TX;
}
char LICENSE[] SEC("license") = "GPL";
