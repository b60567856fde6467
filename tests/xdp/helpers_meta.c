/* Metadata in front of the packet (issue 32): bpf_xdp_adjust_meta makes room for a 4- or
 * 8-byte mark chosen by the packet (AF_XDP and the stack's later programs read it), checks
 * the room against ctx->data as the verifier demands, and writes the packet's first bytes and
 * its length into it; a request the kernel refuses (a delta that is not a multiple of 4, or
 * more than 32 bytes) is the packet's choice too. */
#include "xdp_common.h"

struct meta {
	__u32 mark;
	__u32 len;
};

SEC("xdp")
int helpers_meta(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;

	if (p + 4 > (__u8 *)end)
		return XDP_PASS;
	int delta = p[0] == 1 ? -4 : p[0] == 2 ? -(int)sizeof(struct meta) : -(int)(p[1] & 63);
	if (bpf_xdp_adjust_meta(ctx, delta) < 0)
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	void *meta = (void *)(long)ctx->data_meta;
	struct meta *m = meta;
	if (data + 4 > end)
		return XDP_ABORTED;
	if ((void *)(m + 1) <= data) {
		m->mark = *(__u32 *)data;
		m->len = end - data;
		return XDP_PASS;
	}
	if (meta + 4 <= data) {
		*(__u32 *)meta = 0x5a5a5a5a;
		return XDP_PASS;
	}
	return XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
