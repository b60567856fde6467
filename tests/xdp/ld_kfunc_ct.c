/* A conntrack firewall with the conntrack kfuncs (net/netfilter/nf_conntrack_bpf.c): the
 * packet's IPv4 TCP tuple looked up, known connections passed (the entry released), others
 * dropped. The lookup's outcome is the conntrack table's, not the program's: the analysis
 * takes either (docs/xdp.md, "kfuncs"). */
#include "xdp_common.h"

struct bpf_ct_opts {
	__s32 netns_id;
	__s32 error;
	__u8 l4proto;
	__u8 dir;
	__u8 reserved[2];
};

struct nf_conn;

extern struct nf_conn *bpf_xdp_ct_lookup(struct xdp_md *ctx, struct bpf_sock_tuple *tuple,
					 __u32 tuple_len, struct bpf_ct_opts *opts,
					 __u32 opts_len) __ksym;
extern void bpf_ct_release(struct nf_conn *ct) __ksym;

SEC("xdp")
int ld_kfunc_ct(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct bpf_ct_opts opts = { .netns_id = -1, .l4proto = 6 };
	struct bpf_sock_tuple t = {};
	struct nf_conn *ct;

	if (data + 34 + 4 > data_end)
		return XDP_PASS;
	__builtin_memcpy(&t.ipv4.saddr, data + 26, 4);
	__builtin_memcpy(&t.ipv4.daddr, data + 30, 4);
	__builtin_memcpy(&t.ipv4.sport, data + 34, 2);
	__builtin_memcpy(&t.ipv4.dport, data + 36, 2);
	ct = bpf_xdp_ct_lookup(ctx, &t, sizeof(t.ipv4), &opts, sizeof(opts));
	if (!ct)
		return XDP_DROP;
	bpf_ct_release(ct);
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
