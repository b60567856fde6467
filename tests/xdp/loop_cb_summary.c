/* bpf_loop whose nr_loops is known only at run time (a value user space keeps in an array map):
 * the analysis summarises the call (docs/xdp.md, "`bpf_loop`"): the callback is analysed once,
 * as any of its calls, and its slowest path counted BPF_MAX_LOOPS (2^23) times, the kernel's
 * cap. The callback counts in a hash map only from its second call on (`seen`, which the first
 * call sets through the context): a summary that took its one call for the first would miss
 * that path. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} loops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

struct state {
	__u32 seen;
	__u32 acc;
};

static long step(__u32 i, void *data)
{
	struct state *s = data;
	if (s->seen) {
		__u32 k = i & 63;
		__u64 one = 1;
		bpf_map_update_elem(&counts, &k, &one, BPF_ANY);
	}
	s->seen = 1;
	s->acc += i;
	return 0;
}

SEC("xdp")
int loop_cb_summary(struct xdp_md *ctx)
{
	__u32 zero = 0;
	__u32 *n = bpf_map_lookup_elem(&loops, &zero);
	if (!n)
		return XDP_PASS;
	struct state s = { .seen = 0, .acc = 0 };
	long r = bpf_loop(*n, step, &s, 0);
	if (r < 0)
		return XDP_ABORTED;
	return (s.acc & 1) ? XDP_DROP : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
