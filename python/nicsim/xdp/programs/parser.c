/* A P4 header parser in the shape p4c-xdp gives switch.p4's parser (paper §6, "switch.p4
 * (parser)": switch.p4 with everything but the parser removed): a parse graph — Ethernet, up to
 * two VLAN tags, up to two MPLS labels, IPv4 (with options) or IPv6, then TCP, UDP or ICMP, and
 * for UDP port 4789 a VXLAN tunnel with an inner Ethernet, IPv4 or IPv6 and TCP or UDP — that
 * records which headers are valid, then the deparser, which writes every valid header back
 * field by field, as the generated code does. The naive bound emits every header at once (IPv4
 * and IPv6, TCP and UDP, inside and outside the tunnel); no packet has them all, which the SSP
 * search finds.
 *
 * p4c-xdp keeps a header's validity in its struct (`ebpf_valid`), which the deparser tests long
 * after the parser set it; OPAQUE keeps clang from threading those tests back into the parser's
 * branches, as it cannot in the generated code, where the struct lives in memory. */
#include "xdp_common.h"

#define OPAQUE(x) asm volatile("" : "+r"(x))
#define ETH_P_MPLS_UC 0x8847
#define VXLAN_PORT 4789

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

struct vxlan_hdr {
	__be32 flags;
	__be32 vni;
};

/* What the deparser writes back for each header, field by field (p4c-xdp emits a store per
 * field, after re-reading it from the parsed header). */
static __always_inline void emit_eth(struct ethhdr *e)
{
	e->h_proto = e->h_proto;
	*(volatile __u16 *)&e->h_dest[0] = *(__u16 *)&e->h_dest[0];
	*(volatile __u16 *)&e->h_dest[2] = *(__u16 *)&e->h_dest[2];
	*(volatile __u16 *)&e->h_dest[4] = *(__u16 *)&e->h_dest[4];
	*(volatile __u16 *)&e->h_source[0] = *(__u16 *)&e->h_source[0];
	*(volatile __u16 *)&e->h_source[2] = *(__u16 *)&e->h_source[2];
	*(volatile __u16 *)&e->h_source[4] = *(__u16 *)&e->h_source[4];
}

static __always_inline void emit_ip4(struct iphdr *ip)
{
	volatile __u16 *w = (void *)ip;
#pragma clang loop unroll(full)
	for (int i = 0; i < 10; i++)
		w[i] = w[i];
}

static __always_inline void emit_ip6(struct ipv6hdr *ip)
{
	volatile __u32 *w = (void *)ip;
#pragma clang loop unroll(full)
	for (int i = 0; i < 10; i++)
		w[i] = w[i];
}

static __always_inline void emit_tcp(struct tcphdr *t)
{
	volatile __u32 *w = (void *)t;
#pragma clang loop unroll(full)
	for (int i = 0; i < 5; i++)
		w[i] = w[i];
}

static __always_inline void emit_udp(struct udphdr *u)
{
	volatile __u16 *w = (void *)u;
#pragma clang loop unroll(full)
	for (int i = 0; i < 4; i++)
		w[i] = w[i];
}

SEC("xdp")
int parser(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data, *ieth = data;
	struct vlan_hdr *vlan0 = data, *vlan1 = data;
	__be32 *mpls0 = data, *mpls1 = data;
	struct iphdr *ip4 = data, *iip4 = data;
	struct ipv6hdr *ip6 = data, *iip6 = data;
	struct tcphdr *tcp = data, *itcp = data;
	struct udphdr *udp = data, *iudp = data;
	struct vxlan_hdr *vx = data;
	__u32 v_vlan0 = 0, v_vlan1 = 0, v_mpls0 = 0, v_mpls1 = 0, v_ip4 = 0, v_ip6 = 0, v_tcp = 0,
	      v_udp = 0, v_vx = 0, v_ieth = 0, v_iip4 = 0, v_iip6 = 0, v_itcp = 0, v_iudp = 0;
	void *cur;
	__u16 proto;
	__u8 l4;

	/* parse_ethernet */
	if ((void *)(eth + 1) > end)
		return XDP_DROP;
	proto = eth->h_proto;
	cur = eth + 1;
	/* parse_vlan (802.1Q or 802.1ad), at most two tags */
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		vlan0 = cur;
		if ((void *)(vlan0 + 1) > end)
			return XDP_DROP;
		v_vlan0 = 1;
		proto = vlan0->proto;
		cur = vlan0 + 1;
		if (proto == bpf_htons(ETH_P_8021Q)) {
			vlan1 = cur;
			if ((void *)(vlan1 + 1) > end)
				return XDP_DROP;
			v_vlan1 = 1;
			proto = vlan1->proto;
			cur = vlan1 + 1;
		}
	}
	/* parse_mpls: at most two labels, then IPv4 or IPv6 by the version nibble */
	if (proto == bpf_htons(ETH_P_MPLS_UC)) {
		mpls0 = cur;
		if ((void *)(mpls0 + 1) > end)
			return XDP_DROP;
		v_mpls0 = 1;
		cur = mpls0 + 1;
		if (!(*mpls0 & bpf_htonl(0x100))) {
			mpls1 = cur;
			if ((void *)(mpls1 + 1) > end)
				return XDP_DROP;
			v_mpls1 = 1;
			cur = mpls1 + 1;
			if (!(*mpls1 & bpf_htonl(0x100)))
				return XDP_PASS; /* deeper label stacks go to the host */
		}
		if ((void *)((__u8 *)cur + 1) > end)
			return XDP_DROP;
		proto = (*(__u8 *)cur >> 4) == 6 ? bpf_htons(ETH_P_IPV6) : bpf_htons(ETH_P_IP);
	}
	/* parse_ipv4 / parse_ipv6 */
	if (proto == bpf_htons(ETH_P_IP)) {
		ip4 = cur;
		if ((void *)(ip4 + 1) > end)
			return XDP_DROP;
		if (ip4->ihl < 5 || ip4->version != 4)
			return XDP_DROP;
		v_ip4 = 1;
		l4 = ip4->protocol;
		cur = (void *)ip4 + ip4->ihl * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		ip6 = cur;
		if ((void *)(ip6 + 1) > end)
			return XDP_DROP;
		v_ip6 = 1;
		l4 = ip6->nexthdr;
		cur = ip6 + 1;
	} else {
		return XDP_PASS;
	}
	/* parse_tcp / parse_udp / parse_icmp */
	if (l4 == IPPROTO_TCP) {
		tcp = cur;
		if ((void *)(tcp + 1) > end)
			return XDP_DROP;
		v_tcp = 1;
	} else if (l4 == IPPROTO_UDP) {
		udp = cur;
		if ((void *)(udp + 1) > end)
			return XDP_DROP;
		v_udp = 1;
		cur = udp + 1;
		/* parse_vxlan → parse_inner_ethernet → parse_inner_ipv4/6 → parse_inner_tcp/udp */
		if (udp->dest == bpf_htons(VXLAN_PORT)) {
			vx = cur;
			ieth = (void *)(vx + 1);
			if ((void *)(ieth + 1) > end)
				return XDP_DROP;
			v_vx = 1;
			v_ieth = 1;
			cur = ieth + 1;
			if (ieth->h_proto == bpf_htons(ETH_P_IP)) {
				iip4 = cur;
				if ((void *)(iip4 + 1) > end)
					return XDP_DROP;
				v_iip4 = 1;
				l4 = iip4->protocol;
				cur = iip4 + 1;
			} else if (ieth->h_proto == bpf_htons(ETH_P_IPV6)) {
				iip6 = cur;
				if ((void *)(iip6 + 1) > end)
					return XDP_DROP;
				v_iip6 = 1;
				l4 = iip6->nexthdr;
				cur = iip6 + 1;
			} else {
				l4 = 0;
			}
			if (l4 == IPPROTO_TCP) {
				itcp = cur;
				if ((void *)(itcp + 1) > end)
					return XDP_DROP;
				v_itcp = 1;
			} else if (l4 == IPPROTO_UDP) {
				iudp = cur;
				if ((void *)(iudp + 1) > end)
					return XDP_DROP;
				v_iudp = 1;
			}
		}
	}
	OPAQUE(v_vlan0);
	OPAQUE(v_vlan1);
	OPAQUE(v_mpls0);
	OPAQUE(v_mpls1);
	OPAQUE(v_ip4);
	OPAQUE(v_ip6);
	OPAQUE(v_tcp);
	OPAQUE(v_udp);
	OPAQUE(v_vx);
	OPAQUE(v_ieth);
	OPAQUE(v_iip4);
	OPAQUE(v_iip6);
	OPAQUE(v_itcp);
	OPAQUE(v_iudp);

	/* deparser: emit every valid header, field by field */
	emit_eth(eth);
	if (v_vlan0 && (void *)(vlan0 + 1) <= end)
		*(volatile __u32 *)vlan0 = *(__u32 *)vlan0;
	if (v_vlan1 && (void *)(vlan1 + 1) <= end)
		*(volatile __u32 *)vlan1 = *(__u32 *)vlan1;
	if (v_mpls0 && (void *)(mpls0 + 1) <= end)
		*(volatile __u32 *)mpls0 = *mpls0;
	if (v_mpls1 && (void *)(mpls1 + 1) <= end)
		*(volatile __u32 *)mpls1 = *mpls1;
	if (v_ip4 && (void *)(ip4 + 1) <= end)
		emit_ip4(ip4);
	if (v_ip6 && (void *)(ip6 + 1) <= end)
		emit_ip6(ip6);
	if (v_tcp && (void *)(tcp + 1) <= end)
		emit_tcp(tcp);
	if (v_udp && (void *)(udp + 1) <= end)
		emit_udp(udp);
	if (v_ieth && (void *)(ieth + 1) <= end)
		emit_eth(ieth);
	if (v_iip4 && (void *)(iip4 + 1) <= end)
		emit_ip4(iip4);
	if (v_iip6 && (void *)(iip6 + 1) <= end)
		emit_ip6(iip6);
	if (v_itcp && (void *)(itcp + 1) <= end)
		emit_tcp(itcp);
	if (v_vx && (void *)(vx + 1) <= end) {
		*(volatile __u32 *)&vx->flags = vx->flags;
		*(volatile __u32 *)&vx->vni = vx->vni;
	}
	if (v_iudp && (void *)(iudp + 1) <= end)
		emit_udp(iudp);
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
