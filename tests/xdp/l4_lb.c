/* A small L4 load balancer as a new user writes it (issue 29): IPv4 TCP/UDP to a virtual IP
 * (a hash map of VIPs) is pinned per 5-tuple to a backend in an LRU hash flow table of 2^20
 * entries; a new flow picks a backend (array of 4,096) by a hash of its 5-tuple and is
 * inserted. The packet's MACs and destination IP are rewritten, the IP checksum updated
 * incrementally, and it goes back out (XDP_TX). The slowest path is a new flow: an LRU miss,
 * an insert (which may evict), the rewrite. */
#include "xdp_common.h"

#define MAX_BACKENDS 4096

struct flow_key {
	__u32 saddr;
	__u32 daddr;
	__u16 sport;
	__u16 dport;
	__u8 protocol;
	__u8 pad[3];
};

struct vip_key {
	__u32 addr;
	__u16 port;
	__u8 protocol;
	__u8 pad;
};

struct vip {
	__u32 first;  /* first backend index */
	__u32 count;  /* how many (count <= MAX_BACKENDS) */
};

struct backend {
	__u32 addr;
	__u8 mac[6];
	__u8 pad[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct vip_key);
	__type(value, struct vip);
} vips SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 20);
	__type(key, struct flow_key);
	__type(value, __u32);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct backend);
} backends SEC(".maps");

static __always_inline __u16 csum_fold(__u32 c)
{
	c = (c & 0xffff) + (c >> 16);
	c = (c & 0xffff) + (c >> 16);
	return (__u16)~c;
}

SEC("xdp")
int l4_lb(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->ihl != 5)
		return XDP_PASS;
	if (ip->frag_off & bpf_htons(0x3fff))
		return XDP_PASS;
	struct flow_key fk = {};
	fk.saddr = ip->saddr;
	fk.daddr = ip->daddr;
	fk.protocol = ip->protocol;
	if (ip->protocol == IPPROTO_TCP) {
		struct tcphdr *tcp = (void *)(ip + 1);
		if ((void *)(tcp + 1) > end)
			return XDP_DROP;
		fk.sport = tcp->source;
		fk.dport = tcp->dest;
	} else if (ip->protocol == IPPROTO_UDP) {
		struct udphdr *udp = (void *)(ip + 1);
		if ((void *)(udp + 1) > end)
			return XDP_DROP;
		fk.sport = udp->source;
		fk.dport = udp->dest;
	} else {
		return XDP_PASS;
	}
	struct vip_key vk = {.addr = fk.daddr, .port = fk.dport, .protocol = fk.protocol};
	struct vip *v = bpf_map_lookup_elem(&vips, &vk);
	if (!v)
		return XDP_PASS;
	__u32 *pinned = bpf_map_lookup_elem(&flows, &fk);
	__u32 idx;
	if (pinned) {
		idx = *pinned;
	} else {
		__u32 count = v->count;
		if (count == 0 || count > MAX_BACKENDS)
			return XDP_DROP;
		__u32 h = fk.saddr * 2654435761u ^ fk.daddr;
		h ^= ((__u32)fk.sport << 16 | fk.dport) * 2246822519u;
		h ^= h >> 15;
		idx = v->first + h % count;
		if (bpf_map_update_elem(&flows, &fk, &idx, BPF_ANY))
			return XDP_DROP;
	}
	struct backend *b = bpf_map_lookup_elem(&backends, &idx);
	if (!b)
		return XDP_DROP;
	/* Rewrite: MACs swapped towards the backend, the destination IP, the IP checksum
	 * updated incrementally (RFC 1624). */
	__u32 old = ip->daddr, new = b->addr;
	__u32 c = (__u16)~ip->check;
	c += (__u16)~(old & 0xffff) + (__u16)~(old >> 16);
	c += (new & 0xffff) + (new >> 16);
	ip->daddr = new;
	ip->check = csum_fold(c);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, b->mac, ETH_ALEN);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
