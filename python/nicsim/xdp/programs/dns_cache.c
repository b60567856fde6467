/* A DNS cache responder (paper §6, "DNS Cache": responds with precomputed standard-compliant
 * DNS responses): a standard query for one name over IPv4/UDP port 53 is lower-cased (names
 * compare case-insensitively) into a stack buffer and hashed (rotate and xor over the wire
 * bytes: cheap, and collisions are settled by comparing the whole name) into an array map of
 * precomputed answers; when the entry holds that name, the query is turned into
 * the response in place — the answer record appended after the question, headers swapped and
 * fixed — and sent back (XDP_TX). Everything else goes to the host. The cached name and answer
 * are read from the map byte by byte, which makes the program DRAM-bound on the NFP model, as
 * the paper finds.
 *
 * The naive bound compares the longest cached name against a packet too short to carry it; a
 * name of n bytes compares n, and needs a packet long enough for them, which the SSP search
 * finds. */
#include "xdp_common.h"

#define MAX_NAME 48
#define MAX_ANSWER 32
#define ENTRIES 4096

struct answer {
	__u8 name[MAX_NAME]; /* the question name in wire format (labels), 0-terminated */
	__u32 name_len;      /* bytes of name, with the terminating 0 */
	__u32 answer_len;    /* bytes of rr */
	__u8 rr[MAX_ANSWER]; /* the answer record, wire format (name as a pointer to 0x0c) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ENTRIES);
	__type(key, __u32);
	__type(value, struct answer);
} cache SEC(".maps");

struct dnshdr {
	__be16 id;
	__be16 flags;
	__be16 qdcount;
	__be16 ancount;
	__be16 nscount;
	__be16 arcount;
};

static __always_inline __u16 csum_fold(__u32 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return ~s;
}

SEC("xdp")
int dns_cache(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	struct dnshdr *dns = (void *)(udp + 1);
	__u8 *name = (void *)(dns + 1);
	if ((void *)(dns + 1) > end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
	    udp->dest != bpf_htons(53))
		return XDP_PASS;
	/* A standard query (QR = 0, opcode 0) for exactly one name, nothing else. */
	if ((dns->flags & bpf_htons(0xf800)) || dns->qdcount != bpf_htons(1) || dns->ancount ||
	    dns->nscount || dns->arcount)
		return XDP_PASS;

	/* Lower-case the name's wire bytes into qname and hash them, up to the terminating 0. */
	__u8 qname[MAX_NAME];
	__u32 h = 0x9e3779b9u, n;
#pragma clang loop unroll(disable)
	for (n = 0; n < MAX_NAME; n++) {
		if (name + n + 1 > (__u8 *)end)
			return XDP_PASS;
		__u8 b = name[n];
		/* ASCII lower case without a branch (BPF has no conditional move): d in 0..25 has
		 * both ~d and d - 26 negative. */
		int d = (int)b - 'A';
		b += ((((unsigned)(~d & (d - 26))) >> 31) & 1) << 5;
		qname[n] = b;
		h = ((h << 7) | (h >> 25)) ^ b;
		if (b == 0)
			break;
	}
	if (n == MAX_NAME)
		return XDP_PASS;
	n++; /* with the terminating 0 */
	/* QTYPE and QCLASS must follow and end the packet. */
	if (name + n + 4 != (__u8 *)end)
		return XDP_PASS;

	__u32 key = h % ENTRIES;
	struct answer *a = bpf_map_lookup_elem(&cache, &key);
	if (!a || a->name_len != n)
		return XDP_PASS;
	/* The cached name, stored lower-case, against the query's. */
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < MAX_NAME; i++) {
		if (i >= a->name_len)
			break;
		if (qname[i] != a->name[i])
			return XDP_PASS;
	}
	__u32 len = a->answer_len;
	if (len == 0 || len > MAX_ANSWER)
		return XDP_PASS;

	/* Grow the packet by the answer and rebuild the pointers the verifier asks for. */
	if (bpf_xdp_adjust_tail(ctx, (int)len))
		return XDP_PASS;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	ip = (void *)(eth + 1);
	udp = (void *)(ip + 1);
	dns = (void *)(udp + 1);
	if ((void *)(dns + 1) > end)
		return XDP_PASS;
	/* The answer goes after the question (name, QTYPE, QCLASS). */
	__u8 *rr = (__u8 *)(dns + 1) + n + 4;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < MAX_ANSWER; i++) {
		if (i >= len)
			break;
		if (rr + i + 1 > (__u8 *)end)
			return XDP_PASS;
		rr[i] = a->rr[i];
	}

	/* The response: QR, AA and RA set, one answer; swap the addresses and ports. */
	dns->flags |= bpf_htons(0x8480);
	dns->ancount = bpf_htons(1);
	__u8 mac[ETH_ALEN];
	__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
	__be32 addr = ip->daddr;
	ip->daddr = ip->saddr;
	ip->saddr = addr;
	__be16 port = udp->dest;
	udp->dest = udp->source;
	udp->source = port;
	__u16 tot = bpf_ntohs(ip->tot_len) + len;
	ip->tot_len = bpf_htons(tot);
	ip->ttl = 64;
	udp->len = bpf_htons(bpf_ntohs(udp->len) + len);
	udp->check = 0;
	/* The IPv4 header checksum, anew over its ten 16-bit words. */
	ip->check = 0;
	__u32 s = 0;
	__u16 *w = (void *)ip;
#pragma clang loop unroll(full)
	for (int i = 0; i < 10; i++)
		s += w[i];
	ip->check = csum_fold(s);
	return XDP_TX;
}
char LICENSE[] SEC("license") = "GPL";
