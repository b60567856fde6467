/* A call of a kfunc the analysis does not know (and no kernel has): it loads, and the analysis
 * and validation name it. */
#include "xdp_common.h"

extern int bpf_nicsim_no_such_kfunc(struct xdp_md *ctx) __ksym;

SEC("xdp")
int ld_kfunc_unknown(struct xdp_md *ctx)
{
	return bpf_nicsim_no_such_kfunc(ctx) ? XDP_DROP : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
