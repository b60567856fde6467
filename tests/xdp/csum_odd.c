/* bpf_csum_diff over packet bytes at odd and even offsets, of lengths that are not multiples of
 * 4, each kind of call (to alone, from and to, from alone): since Linux 6.12 the kernel sums the
 * buffers where they lie, and x86-64's csum_partial takes a buffer at an odd address its own
 * way (before 6.12 these sizes are -EINVAL). Each result is written into the packet, so that
 * `nicsim xdp validate` compares the interpreter's numbers with the kernel's, byte for byte. */
#include "xdp_common.h"

SEC("xdp")
int csum_odd(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	if (data + 64 > end)
		return XDP_PASS;
	__s64 a = bpf_csum_diff(0, 0, (__be32 *)(p + 15), 9, 0x12345678);
	__s64 b = bpf_csum_diff((__be32 *)(p + 21), 6, (__be32 *)(p + 33), 7, 0);
	__s64 c = bpf_csum_diff((__be32 *)(p + 41), 5, 0, 0, 0xffff);
	__s64 d = bpf_csum_diff(0, 0, (__be32 *)(p + 2), 13, 0);
	*(__u32 *)(p + 48) = a;
	*(__u32 *)(p + 52) = b;
	*(__u32 *)(p + 56) = c;
	*(__u32 *)(p + 60) = d;
	return XDP_TX;
}
