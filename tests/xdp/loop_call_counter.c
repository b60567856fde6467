/* A loop whose counter lives in a callee-saved register across a bpf-to-bpf call in its body (as
 * kmesh's authorization loop `for (i = 0; i < 4; i++) { if (i >= rule->n) break; ... match(...) }`):
 * a callee's return restores r6-r9 from the state of its call site in the same iteration. Taken
 * from the whole graph's state there (every iteration's, joined), the counter came back unknown
 * and the loop, which the verifier accepts, had "no evident bound". */
#include "xdp_common.h"

struct rule {
	__u32 n;
	__u32 ports[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rule);
} rules SEC(".maps");

static __noinline int port_matches(const struct rule *r, __u32 i, __u16 port)
{
	if (i >= 4)
		return 0;
	return r->ports[i] == port;
}

SEC("xdp")
int loop_call_counter(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	if (data + 4 > end)
		return XDP_PASS;
	__u16 port = p[2] << 8 | p[3];
	__u32 key = 0;
	struct rule *r = bpf_map_lookup_elem(&rules, &key);
	if (!r)
		return XDP_PASS;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < 4; i++) {
		if (i >= r->n)
			break;
		if (port_matches(r, i, port))
			return XDP_DROP;
	}
	return XDP_PASS;
}
