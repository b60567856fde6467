/* A DoS filter in the style of Cloudflare's XDP mitigations (paper §6, "Cloudflare DoS": rules
 * reconstructed from what Cloudflare published — G. Bertin, "XDP in practice: integrating XDP
 * into our DDoS mitigation pipeline", NETDEV 2.1, 2017, and the rule generators of
 * cloudflare/bpftools). The rules are checked in order; the first that matches drops the packet
 * and counts the drop in a per-CPU counter of its own. Everything else passes.
 *
 *   0. A p0f-style signature of an attack tool's TCP SYNs (the talk's example): to the
 *      protected address and port, TTL in (29, 64], header without options, not a fragment,
 *      40 bytes of TCP options laid out as MSS, SACK permitted, timestamps, NOP, window
 *      scale, and no payload.
 *   1. DNS queries for any name one label under example.com (bpftools: `dns -- -i
 *      *.example.com`): the wildcard label is skipped, the rest compared case-insensitively.
 *   2. Malformed DNS queries to port 53 (bpftools: `dns_validate`): too short to hold a
 *      question, not a plain standard query, not exactly one question, or answer or
 *      authority records present. */
#include "xdp_common.h"

#define PROTECTED_ADDR 0xc000020a /* 192.0.2.10 */
#define PROTECTED_PORT 80
#define RULES 3

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RULES);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

struct dnshdr {
	__be16 id;
	__be16 flags;
	__be16 qdcount;
	__be16 ancount;
	__be16 nscount;
	__be16 arcount;
};

static __always_inline int drop(__u32 rule)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &rule);
	if (n)
		*n += 1;
	return XDP_DROP;
}

/* Rule 0: the SYN signature. */
static __always_inline int syn_signature(struct iphdr *ip, void *end)
{
	if (ip->protocol != IPPROTO_TCP || ip->daddr != bpf_htonl(PROTECTED_ADDR))
		return 0;
	if (ip->ttl > 64 || ip->ttl <= 29 || ip->ihl != 5 || (ip->frag_off & bpf_htons(0x2000)))
		return 0;
	struct tcphdr *tcp = (void *)(ip + 1);
	if ((void *)(tcp + 1) > end)
		return 0;
	if (tcp->dest != bpf_htons(PROTECTED_PORT) || !tcp->syn || tcp->ack || tcp->doff != 10)
		return 0;
	if (bpf_ntohs(ip->tot_len) != 20 + 40) /* no payload */
		return 0;
	__u8 *opt = (void *)(tcp + 1);
	if ((void *)(opt + 20) > end)
		return 0;
	/* MSS (kind 2, 4 bytes), SACK permitted (4, 2), timestamps (8, 10), NOP, window scale (3, 3). */
	return opt[0] == 2 && opt[1] == 4 && opt[4] == 4 && opt[5] == 2 && opt[6] == 8 && opt[7] == 10 &&
	       opt[16] == 1 && opt[17] == 3 && opt[18] == 3;
}

/* Rule 1: a query for <label>.example.com, case-insensitively. */
static __always_inline int dns_name(struct dnshdr *dns, void *end)
{
	__u8 *q = (void *)(dns + 1);
	if ((void *)(q + 1) > end)
		return 0;
	__u8 skip = q[0];
	if (skip == 0 || skip > 63)
		return 0;
	__u8 *rest = q + 1 + skip;
	if ((void *)(rest + 13) > end)
		return 0;
	/* 7 "example" 3 "com" 0; letters are folded to lower case by setting bit 0x20, lengths not. */
	static const __u8 want[13] = {7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0};
	static const __u8 fold[13] = {0, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0, 0x20, 0x20, 0x20, 0};
#pragma clang loop unroll(full)
	for (int i = 0; i < 13; i++)
		if ((rest[i] | fold[i]) != want[i])
			return 0;
	return 1;
}

/* Rule 2: a malformed query. */
static __always_inline int dns_malformed(struct udphdr *udp, struct dnshdr *dns, void *end)
{
	if ((void *)(dns + 1) > end)
		return 1;
	if (bpf_ntohs(udp->len) < 8 + 12 + 5) /* header, a one-byte name, type and class */
		return 1;
	/* QR, opcode, AA, TC and Z must be clear (RD, AD, CD may be set); rcode 0. */
	if (dns->flags & bpf_htons(0xfc8f))
		return 1;
	if (dns->qdcount != bpf_htons(1) || dns->ancount || dns->nscount)
		return 1;
	return bpf_ntohs(dns->arcount) > 1; /* at most an EDNS OPT record */
}

SEC("xdp")
int dos_filter(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if (syn_signature(ip, end))
		return drop(0);
	if (ip->protocol != IPPROTO_UDP || ip->ihl != 5)
		return XDP_PASS;
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end)
		return XDP_PASS;
	if (udp->dest != bpf_htons(53))
		return XDP_PASS;
	struct dnshdr *dns = (void *)(udp + 1);
	if (dns_malformed(udp, dns, end))
		return drop(2);
	if (dns_name(dns, end))
		return drop(1);
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
