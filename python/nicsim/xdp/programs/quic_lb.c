/* A QUIC load balancer (paper §6, "QUIC LB": computes on the QUIC connection ID as the QUIC-LB
 * Internet draft describes). It implements the draft's "Obfuscated CID" algorithm
 * (draft-ietf-quic-load-balancers-02/-03): the first octet of the destination connection ID
 * (DCID) carries the config rotation in its top two bits; the configuration's routing bit
 * mask selects bits of the following octets, which, read most significant first, form an
 * unsigned integer; that integer modulo the configuration's divisor is the server's modulus.
 *
 * Servers are numbered by their modulus inside one subnet (10.1.0.0/16, or 2001:db8:1::/64),
 * so the new destination address is computed, not looked up; an array map marks which moduli
 * belong to active servers. A DCID whose modulus is not active, or with config rotation 0b11
 * (the draft's failover value), cannot be routed by the algorithm: for long-header packets
 * the balancer falls back to a hash of the addresses and ports (the draft's "5-tuple
 * routing"), short-header packets are dropped, as the draft says. Routed packets go back out
 * with the new destination (XDP_TX); what is not QUIC goes to the host.
 *
 * Built twice: for IPv4 (quic_lb_v4.o) and, with -DQUIC_IPV6, for IPv6 with up to four
 * hop-by-hop, routing and destination-options extension headers (quic_lb_v6.o). */
#include "xdp_common.h"

#define QUIC_PORT 443
#define CID_LEN 9           /* octets of the CIDs this deployment issues (short headers) */
#define DIVISOR 1021        /* odd, larger than the number of servers */
/* The routing bit mask over CID octets 1..8: 32 routing bits among 64. */
#define MASK 0xd3a14c5e96b8207fULL

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, (DIVISOR + 63) / 64);
	__type(key, __u32);
	__type(value, __u64);
} active SEC(".maps");

/* The routing bits of `cid` (octets 1..8) under MASK, most significant first. */
static __always_inline __u32 routing_bits(const __u8 *cid)
{
	__u32 r = 0;
#pragma clang loop unroll(full)
	for (int i = 0; i < 64; i++) {
		if (!((MASK >> (63 - i)) & 1))
			continue;
		r = (r << 1) | ((cid[1 + i / 8] >> (7 - i % 8)) & 1);
	}
	return r;
}

static __always_inline int is_active(__u32 modulus)
{
	__u32 word = modulus / 64;
	__u64 *bits = bpf_map_lookup_elem(&active, &word);
	return bits && ((*bits >> (modulus % 64)) & 1);
}

SEC("xdp")
int quic_lb(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *cur = eth + 1;
	__u32 flow;
	if ((void *)(eth + 1) > end)
		return XDP_DROP;
#ifdef QUIC_IPV6
	struct ipv6hdr *ip6 = cur;
	if (eth->h_proto != bpf_htons(ETH_P_IPV6))
		return XDP_PASS;
	if ((void *)(ip6 + 1) > end)
		return XDP_DROP;
	__u8 nh = ip6->nexthdr;
	cur = ip6 + 1;
	/* Hop-by-hop options, routing and destination options headers, at most four. */
#pragma clang loop unroll(disable)
	for (int i = 0; i < 4; i++) {
		if (nh != 0 && nh != 43 && nh != 60)
			break;
		__u8 *x = cur;
		if ((void *)(x + 2) > end)
			return XDP_DROP;
		nh = x[0];
		cur += (x[1] + 1) * 8;
	}
	if (nh != IPPROTO_UDP)
		return XDP_PASS; /* fragments and the rest go to the host */
	flow = ip6->saddr.in6_u.u6_addr32[3] ^ ip6->daddr.in6_u.u6_addr32[3];
#else
	struct iphdr *ip4 = cur;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if ((void *)(ip4 + 1) > end)
		return XDP_DROP;
	if (ip4->ihl != 5 || ip4->protocol != IPPROTO_UDP || (ip4->frag_off & bpf_htons(0x3fff)))
		return XDP_PASS;
	cur = ip4 + 1;
	flow = ip4->saddr ^ ip4->daddr;
#endif
	struct udphdr *udp = cur;
	if ((void *)(udp + 1) > end)
		return XDP_DROP;
	if (udp->dest != bpf_htons(QUIC_PORT))
		return XDP_PASS;
	flow ^= (__u32)udp->source << 16 | udp->dest;

	/* The destination connection ID. */
	__u8 *q = (void *)(udp + 1), *cid;
	__u32 modulus;
	if ((void *)(q + 1) > end)
		return XDP_DROP;
	int long_header = q[0] & 0x80;
	if (long_header) {
		/* Version (4 octets), DCID length, DCID. Version 0 is version negotiation. */
		if ((void *)(q + 6) > end)
			return XDP_DROP;
		if (!(q[1] | q[2] | q[3] | q[4]))
			return XDP_PASS;
		if (q[5] < CID_LEN || q[5] > 20)
			goto fallback; /* a client-chosen DCID: not ours to decode */
		cid = q + 6;
	} else {
		cid = q + 1;
	}
	if ((void *)(cid + CID_LEN) > end)
		return XDP_DROP;
	if ((cid[0] >> 6) == 3)
		goto fallback;
	modulus = routing_bits(cid) % DIVISOR;
	if (is_active(modulus))
		goto route;
	if (!long_header)
		return XDP_DROP; /* short header, unroutable: the draft says drop */
fallback:
	/* 5-tuple routing: a server by a hash of the addresses and ports. */
	flow ^= flow >> 16;
	flow *= 0x7feb352d;
	flow ^= flow >> 15;
	modulus = flow % DIVISOR;
	if (!is_active(modulus))
		return XDP_PASS;
route:
#ifdef QUIC_IPV6
	/* 2001:db8:1::<modulus> */
	ip6->daddr.in6_u.u6_addr32[0] = bpf_htonl(0x20010db8);
	ip6->daddr.in6_u.u6_addr32[1] = bpf_htonl(0x00010000);
	ip6->daddr.in6_u.u6_addr32[2] = 0;
	ip6->daddr.in6_u.u6_addr32[3] = bpf_htonl(modulus);
	udp->check = 0; /* recomputed by the server's NIC; the balancer does not carry payload sums */
#else
	/* 10.1.<modulus>, with the incremental header checksum update (RFC 1624). */
	;
	__u32 daddr = bpf_htonl(0x0a010000 | modulus), sum = (__u16)~ip4->check;
	sum += (__u16)~(ip4->daddr & 0xffff) + (__u16)~(ip4->daddr >> 16);
	sum += (daddr & 0xffff) + (daddr >> 16);
	ip4->daddr = daddr;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip4->check = ~sum;
	udp->check = 0;
#endif
	/* Swap the MAC addresses: the packet leaves by the port it came in. */
	__u8 mac[ETH_ALEN];
	__builtin_memcpy(mac, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
	return XDP_TX;
}
char LICENSE[] SEC("license") = "GPL";
