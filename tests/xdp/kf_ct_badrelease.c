/* A release of a pointer that is not a conntrack entry (the packet, when its first byte is
 * 0x42): the verifier refuses it; the analysis changes no value (a sound reading), the
 * interpreter faults in one line. Other packets pass untouched. */
#include "xdp_common.h"

struct nf_conn;

extern void bpf_ct_release(struct nf_conn *ct) __ksym;

SEC("xdp")
int kf_ct_badrelease(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if (data + 1 > data_end)
		return XDP_DROP;
	if (*(__u8 *)data == 0x42) {
		bpf_ct_release(data);
		return XDP_TX;
	}
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
