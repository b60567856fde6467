/* An IPIP encapsulator in the style of the kernel's XDP tunnel selftest: a TCP or UDP packet
 * whose (daddr, dport, protocol) has a tunnel entry gets a new outer IPv4 header in front
 * (bpf_xdp_adjust_head with -20: the packet's start moves into the headroom), its checksum
 * computed, and goes back out (XDP_TX). The bounds checks after the move compare pointers in
 * front of where the packet was received: an analysis that compares packet offsets as
 * unsigned numbers refutes this slowest path and reports a faster one. */
#include "xdp_common.h"

struct tunnel_key {
	__u32 daddr;
	__u16 dport;
	__u8 protocol;
	__u8 pad;
};

struct tunnel {
	__u32 saddr;
	__u32 daddr;
	__u8 dmac[6];
	__u16 family;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct tunnel_key);
	__type(value, struct tunnel);
} tunnels SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} sent SEC(".maps");

SEC("xdp")
int ipip_encap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	struct tunnel_key key = {};
	struct tunnel *t;
	__u16 inner_len;

	if ((void *)(ip + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if (ip->protocol == IPPROTO_TCP) {
		struct tcphdr *tcp = (void *)(ip + 1);
		if ((void *)(tcp + 1) > data_end)
			return XDP_DROP;
		key.dport = tcp->dest;
	} else if (ip->protocol == IPPROTO_UDP) {
		struct udphdr *udp = (void *)(ip + 1);
		if ((void *)(udp + 1) > data_end)
			return XDP_DROP;
		key.dport = udp->dest;
	} else {
		return XDP_PASS;
	}
	key.daddr = ip->daddr;
	key.protocol = ip->protocol;
	inner_len = bpf_ntohs(ip->tot_len);

	t = bpf_map_lookup_elem(&tunnels, &key);
	if (!t || t->family != 2)
		return XDP_PASS;

	if (bpf_xdp_adjust_head(ctx, -(int)sizeof(struct iphdr)))
		return XDP_DROP;

	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	struct ethhdr *new_eth = data;
	struct iphdr *outer = data + sizeof(*new_eth);
	struct ethhdr *old_eth = data + sizeof(*outer);
	if ((void *)(new_eth + 1) > data_end || (void *)(old_eth + 1) > data_end ||
	    (void *)(outer + 1) > data_end)
		return XDP_DROP;

	__builtin_memcpy(new_eth->h_source, old_eth->h_dest, 6);
	__builtin_memcpy(new_eth->h_dest, t->dmac, 6);
	new_eth->h_proto = bpf_htons(ETH_P_IP);

	outer->version = 4;
	outer->ihl = 5;
	outer->tos = 0;
	outer->tot_len = bpf_htons(inner_len + sizeof(*outer));
	outer->id = 0;
	outer->frag_off = 0;
	outer->ttl = 8;
	outer->protocol = IPPROTO_IPIP;
	outer->check = 0;
	outer->saddr = t->saddr;
	outer->daddr = t->daddr;

	__u32 sum = 0;
	__u16 *w = (__u16 *)outer;
#pragma unroll
	for (int i = 0; i < (int)sizeof(*outer) / 2; i++)
		sum += w[i];
	outer->check = ~((sum & 0xffff) + (sum >> 16));

	__u32 proto = key.protocol;
	__u64 *n = bpf_map_lookup_elem(&sent, &proto);
	if (n)
		*n += 1;
	return XDP_TX;
}
char LICENSE[] SEC("license") = "GPL";
