/* bpf_xdp_adjust_head(ctx, 64) with its result ignored, then a bounds check. On a packet of
 * fewer than 78 bytes the move fails (it would leave fewer than ETH_HLEN bytes) and the head
 * stays: the check's 14 bytes are then 14 received bytes, not 78. The differential soundness
 * test (tests/test_xdp_differential.py) runs this program: the minimum packet the graph gives
 * the path, which the bit-rate guarantee takes for the path's shortest packet, must not assume
 * that the move succeeded. */
#include "xdp_common.h"

SEC("xdp")
int head_unchecked(struct xdp_md *ctx)
{
	bpf_xdp_adjust_head(ctx, 64);
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (data + 14 > end)
		return XDP_DROP;
	return ((__u8 *)data)[12] == 0x08 ? XDP_PASS : XDP_TX;
}
char LICENSE[] SEC("license") = "GPL";
