/* XDP dropper for recording captures with real TCP loss: drops DROP_PERMILLE per mille of the
 * IPv4/IPv6 TCP packets that reach it, chosen at random, and passes everything else. Attached
 * to a veth end (this kernel has no netem), it makes the kernel's TCP retransmit and the
 * receiver see segments out of order. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#ifndef DROP_PERMILLE
#define DROP_PERMILLE 30
#endif

SEC("xdp")
int xdp_drop_tcp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u8 proto;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > data_end)
			return XDP_PASS;
		proto = ip->protocol;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > data_end)
			return XDP_PASS;
		proto = ip6->nexthdr;
	} else {
		return XDP_PASS;
	}
	if (proto != IPPROTO_TCP)
		return XDP_PASS;
	return bpf_get_prandom_u32() % 1000 < DROP_PERMILLE ? XDP_DROP : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
