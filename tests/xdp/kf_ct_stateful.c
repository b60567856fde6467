/* A stateful firewall with the conntrack kfuncs (net/netfilter/nf_conntrack_bpf.c): IPv4 TCP
 * and UDP flows are looked up (the 16-byte bpf_ct_opts of Linux 6.10+); a connection that has
 * seen a reply and is assured passes, a TCP SYN without a connection passes (a new flow),
 * anything else is dropped; non-IPv4 packets pass. The entry's status is read at a fixed
 * offset (a real program reads it with CO-RE; nicsim models any byte of struct nf_conn as
 * unknown, so the offset does not change the analysis). */
#include "xdp_common.h"

#define ENOENT 2
#define IPS_SEEN_REPLY (1 << 1)
#define IPS_ASSURED (1 << 2)

struct bpf_ct_opts {
	__s32 netns_id;
	__s32 error;
	__u8 l4proto;
	__u8 dir;
	__u16 ct_zone_id;
	__u8 ct_zone_dir;
	__u8 reserved[3];
};

/* The fields read, at illustrative offsets. */
struct nf_conn {
	__u8 pad[128];
	unsigned long status;
	__u32 mark;
};

extern struct nf_conn *bpf_xdp_ct_lookup(struct xdp_md *ctx, struct bpf_sock_tuple *tuple,
					 __u32 tuple_len, struct bpf_ct_opts *opts,
					 __u32 opts_len) __ksym;
extern void bpf_ct_release(struct nf_conn *ct) __ksym;

SEC("xdp")
int kf_ct_stateful(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	struct bpf_ct_opts opts = { .netns_id = -1 };
	struct bpf_sock_tuple t = {};
	struct nf_conn *ct;
	__u16 *ports;
	int syn = 0, verdict;

	if ((void *)(ip + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5)
		return XDP_PASS;
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return XDP_DROP;
	ports = (void *)(ip + 1);
	if ((void *)(ports + 2) > data_end)
		return XDP_DROP;
	if (ip->protocol == IPPROTO_TCP) {
		struct tcphdr *tcp = (void *)(ip + 1);

		if ((void *)(tcp + 1) > data_end)
			return XDP_DROP;
		syn = tcp->syn && !tcp->ack;
	}
	opts.l4proto = ip->protocol;
	t.ipv4.saddr = ip->saddr;
	t.ipv4.daddr = ip->daddr;
	t.ipv4.sport = ports[0];
	t.ipv4.dport = ports[1];
	ct = bpf_xdp_ct_lookup(ctx, &t, sizeof(t.ipv4), &opts, sizeof(opts));
	if (!ct)
		return syn && opts.error == -ENOENT ? XDP_PASS : XDP_DROP;
	verdict = (ct->status & (IPS_SEEN_REPLY | IPS_ASSURED)) == (IPS_SEEN_REPLY | IPS_ASSURED) ||
			  (syn && ct->mark == 0)
		      ? XDP_PASS
		      : XDP_DROP;
	bpf_ct_release(ct);
	return verdict;
}
char LICENSE[] SEC("license") = "GPL";
