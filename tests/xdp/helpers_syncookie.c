/* SYN cookies and sockets (issue 32), as an XDP SYN proxy does: a TCP SYN gets a cookie
 * (bpf_tcp_raw_gen_syncookie_ipv4) written into its sequence number and goes back (XDP_TX);
 * an ACK whose cookie checks (bpf_tcp_raw_check_syncookie_ipv4) passes, else it is dropped
 * unless a listening socket has it (bpf_skc_lookup_tcp, released); a packet to a port whose
 * entry in a device map exists is counted by the map's value (a devmap lookup). */
#include "xdp_common.h"
#include <linux/ip.h>
#include <linux/tcp.h>

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u32);
} ports SEC(".maps");

SEC("xdp")
int helpers_syncookie(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct tcphdr *th = (void *)(ip + 1);

	if ((void *)(th + 1) > end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 || ip->protocol != IPPROTO_TCP)
		return XDP_PASS;
	__u32 port = bpf_ntohs(th->dest) & 7;
	__u32 *ifindex = bpf_map_lookup_elem(&ports, &port);
	if (ifindex && *ifindex == 0)
		return XDP_ABORTED;
	if (th->syn && !th->ack) {
		__s64 c = bpf_tcp_raw_gen_syncookie_ipv4(ip, th, sizeof(*th));
		if (c < 0)
			return XDP_DROP;
		th->seq = bpf_htonl((__u32)c);
		return XDP_TX;
	}
	if (th->ack) {
		if (bpf_tcp_raw_check_syncookie_ipv4(ip, th) == 0)
			return XDP_PASS;
		struct bpf_sock_tuple t = {};
		t.ipv4.saddr = ip->saddr;
		t.ipv4.daddr = ip->daddr;
		t.ipv4.sport = th->source;
		t.ipv4.dport = th->dest;
		struct bpf_sock *sk = bpf_skc_lookup_tcp(ctx, &t, sizeof(t.ipv4), -1, 0);
		if (sk) {
			bpf_sk_release(sk);
			return XDP_PASS;
		}
		return XDP_DROP;
	}
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
