/* A per-flow timer armed one second ahead (a flow's idle timeout), and one whose delay the
 * packet gives in milliseconds, at least 1 ms: neither can expire while the packet is processed,
 * so each start costs as one that expires later (`timer_start.later` on x86-jit), while
 * helpers_timer.c's delay, which may be 0, costs as one that expires at once. */
#include "xdp_common.h"

struct flow {
	__u64 packets;
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct flow);
} flows SEC(".maps");

static int expire(void *map, __u32 *key, struct flow *f)
{
	f->packets = 0;
	return 0;
}

SEC("xdp")
int timer_later(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;

	if (p + 2 > (__u8 *)end)
		return XDP_PASS;
	__u32 key = p[0] & 3;
	struct flow *f = bpf_map_lookup_elem(&flows, &key);
	if (!f)
		return XDP_ABORTED;
	if (f->packets++ == 0) {
		long r = bpf_timer_init(&f->timer, &flows, 1 /* CLOCK_MONOTONIC */);
		if (r && r != -16 /* EBUSY */)
			return XDP_ABORTED;
		if (bpf_timer_set_callback(&f->timer, expire))
			return XDP_ABORTED;
	}
	__u64 delay_ns = p[1] & 0x80 ? 1000000000ull : 1000000ull * (1 + (p[1] & 0x7f));
	if (bpf_timer_start(&f->timer, delay_ns, 0))
		return XDP_DROP;
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
