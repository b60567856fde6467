/* A TCP-options walker with no maps (issue 29): a TCP packet's options are walked, up to
 * 8 of them (the loop of tests/xdp/tcp_options.c, which the verifier can follow), each
 * option's kind and length read from the packet; a packet announcing an MSS goes back out
 * (XDP_TX) with its IP addresses swapped. Compute- and packet-bound only: what a path costs
 * is instructions and packet loads, so its estimate is the instruction costs' alone. */
#include "xdp_common.h"

SEC("xdp")
int tcp_opts_walk(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_TCP)
		return XDP_PASS;
	struct tcphdr *tcp = (void *)(ip + 1);
	if ((void *)(tcp + 1) > end)
		return XDP_PASS;
	unsigned char *opt = (void *)(tcp + 1);
	__u32 mss = 0;
#pragma clang loop unroll(disable)
	for (int i = 0; i < 8; i++) {
		if ((void *)(opt + 1) > end)
			break;
		unsigned char kind = opt[0];
		if (kind == 0)
			break;
		if (kind == 1) {
			opt += 1;
			continue;
		}
		if ((void *)(opt + 2) > end)
			break;
		unsigned char len = opt[1];
		if (len < 2)
			break;
		if (kind == 2 && len == 4) {
			if ((void *)(opt + 4) > end)
				break;
			mss = (opt[2] << 8) | opt[3];
		}
		opt += len;
	}
	/* A packet that announces an MSS is bounced (XDP_TX) with its addresses swapped; others
	 * pass. */
	if (!mss)
		return XDP_PASS;
	__u32 a = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = a;
	return XDP_TX;
}
char LICENSE[] SEC("license") = "GPL";
