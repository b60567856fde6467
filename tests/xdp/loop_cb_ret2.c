/* A bpf_loop callback that returns 2, which the verifier refuses (a callback of bpf_loop must
 * return 0 or 1). The helper stops at any non-zero result, and so does the analysis; the
 * kernel refuses to load the program, with the verifier's reason. */
#include "xdp_common.h"

static long stop_at_3(__u32 i, void *data)
{
	__u32 *n = data;
	*n += 1;
	return i == 3 ? 2 : 0;
}

SEC("xdp")
int loop_cb_ret2(struct xdp_md *ctx)
{
	__u32 n = 0;
	long r = bpf_loop(8, stop_at_3, &n, 0);
	return r == 4 && n == 4 ? XDP_DROP : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
