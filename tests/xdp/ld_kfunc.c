/* A call of a kernel function (kfunc) through BTF, bpf_xdp_metadata_rx_timestamp: it loads,
 * and the analysis models it (0 with the timestamp written, -ENODATA or -EOPNOTSUPP). */
#include "xdp_common.h"

extern int bpf_xdp_metadata_rx_timestamp(const struct xdp_md *ctx, __u64 *timestamp) __ksym;

SEC("xdp")
int ld_kfunc(struct xdp_md *ctx)
{
	__u64 ts = 0;
	if (bpf_xdp_metadata_rx_timestamp(ctx, &ts))
		return XDP_PASS;
	return ts & 1 ? XDP_DROP : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
