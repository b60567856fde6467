/* Hostile arguments to the conntrack lookup: a tuple length that is neither the IPv4 nor the
 * IPv6 tuple's (-EAFNOSUPPORT), then an opts length that is neither 12 nor 16 (-EINVAL). Both
 * lookups give NULL: only the XDP_DROP path is feasible (XDP_TX and XDP_ABORTED are not). */
#include "xdp_common.h"

#define EINVAL 22
#define EAFNOSUPPORT 97

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
int kf_ct_badargs(struct xdp_md *ctx)
{
	struct bpf_ct_opts opts = { .netns_id = -1, .l4proto = 6 };
	struct bpf_sock_tuple t = {};
	struct nf_conn *ct;

	ct = bpf_xdp_ct_lookup(ctx, &t, 16, &opts, sizeof(opts));
	if (ct) {
		bpf_ct_release(ct);
		return XDP_TX;
	}
	if (opts.error != -EAFNOSUPPORT)
		return XDP_ABORTED;
	opts.error = 0;
	ct = bpf_xdp_ct_lookup(ctx, &t, sizeof(t.ipv4), &opts, 8);
	if (ct) {
		bpf_ct_release(ct);
		return XDP_TX;
	}
	return opts.error == -EINVAL ? XDP_DROP : XDP_ABORTED;
}
char LICENSE[] SEC("license") = "GPL";
