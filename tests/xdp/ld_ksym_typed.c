/* A typed kernel symbol (`extern const struct rq runqueues __ksym;`, a per-CPU variable read
 * through bpf_this_cpu_ptr): libbpf resolves it by its vmlinux BTF id; the analysis refuses it
 * in one line (kernel memory is not modelled). */
#include "xdp_common.h"

struct rq {
	unsigned int nr_running;
};

extern const struct rq runqueues __ksym;

SEC("xdp")
int ld_ksym_typed(struct xdp_md *ctx)
{
	struct rq *rq = (struct rq *)bpf_this_cpu_ptr(&runqueues);

	return rq->nr_running > 4 ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
