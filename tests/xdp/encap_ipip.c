/* IPIP encapsulation, as the kernel's XDP selftest (test_xdp.c) does it: the head moves 20
 * bytes in front of the received packet (bpf_xdp_adjust_head(ctx, -20)), the Ethernet header
 * is copied to the new front and an outer IPv4 header written behind it, with the bounds
 * checks a verifier wants after the move. A packet offset measured from where the packet was
 * received is negative after the move: the analysis must compare such offsets as the kernel
 * does (the differential soundness test, tests/test_xdp_differential.py, runs this program). */
#include "xdp_common.h"

struct tunnel {
	__u32 saddr; /* network order */
	__u32 daddr;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tunnel);
} tunnels SEC(".maps");

SEC("xdp")
int encap_ipip(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *inner = (void *)(eth + 1);
	if ((void *)(inner + 1) > data_end)
		return XDP_DROP;
	__u16 inner_len = bpf_ntohs(inner->tot_len);
	__u8 tos = inner->tos;
	__u32 key = 0;
	struct tunnel *t = bpf_map_lookup_elem(&tunnels, &key);
	if (!t)
		return XDP_PASS;
	__u32 saddr = t->saddr, daddr = t->daddr;

	if (bpf_xdp_adjust_head(ctx, -(int)sizeof(struct iphdr)))
		return XDP_DROP;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	struct ethhdr *neth = data;
	if ((void *)(neth + 1) > data_end)
		return XDP_DROP;
	struct ethhdr *old = data + sizeof(struct iphdr);
	struct iphdr *outer = data + sizeof(struct ethhdr);
	if (data + sizeof(struct ethhdr) + sizeof(struct iphdr) > data_end)
		return XDP_DROP;
	if ((void *)(old + 1) > data_end)
		return XDP_DROP;
	__builtin_memcpy(neth->h_dest, old->h_source, ETH_ALEN);
	__builtin_memcpy(neth->h_source, old->h_dest, ETH_ALEN);
	neth->h_proto = bpf_htons(ETH_P_IP);

	outer->version = 4;
	outer->ihl = 5;
	outer->tos = tos;
	outer->tot_len = bpf_htons(inner_len + sizeof(struct iphdr));
	outer->id = 0;
	outer->frag_off = 0;
	outer->ttl = 64;
	outer->protocol = IPPROTO_IPIP;
	outer->check = 0;
	outer->saddr = saddr;
	outer->daddr = daddr;
	__u32 csum = 0;
	__u16 *w = (__u16 *)outer;
#pragma clang loop unroll(full)
	for (int i = 0; i < (int)sizeof(struct iphdr) / 2; i++)
		csum += w[i];
	csum = (csum & 0xffff) + (csum >> 16);
	csum = (csum & 0xffff) + (csum >> 16);
	outer->check = ~csum;
	return XDP_TX;
}
char LICENSE[] SEC("license") = "GPL";
