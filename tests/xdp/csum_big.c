/* bpf_csum_diff over 1 KiB of the packet (Linux 6.12 on sums any size; before, more than 512
 * bytes is -EINVAL): the call's cost grows with the bytes it sums, which a cost measured on 64
 * bytes alone promised too little for (validate measured it 8 % over the guarantee). */
#include "xdp_common.h"

SEC("xdp")
int csum_big(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (data + 1024 > end)
		return XDP_PASS;
	__s64 sum = bpf_csum_diff(0, 0, data, 1024, 0);
	return sum & 1 ? XDP_DROP : XDP_PASS;
}
