/* Timers (issue 32): a per-flow entry of a hash map holds a struct bpf_timer; the first packet
 * of a flow initialises it, sets its callback and arms it; a packet whose first byte is 0xcc
 * cancels it. The callback (run later, not on the packet's path) deletes the entry. Each
 * helper's failure is handled. */
#include "xdp_common.h"

struct flow {
	__u64 packets;
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct flow);
} flows SEC(".maps");

static int expire(void *map, __u32 *key, struct flow *f)
{
	bpf_map_delete_elem(map, key);
	return 0;
}

SEC("xdp")
int helpers_timer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;

	if (p + 4 > (__u8 *)end)
		return XDP_PASS;
	__u32 key = p[1];
	struct flow *f = bpf_map_lookup_elem(&flows, &key);
	if (!f) {
		struct flow n = {};
		if (bpf_map_update_elem(&flows, &key, &n, BPF_NOEXIST))
			return XDP_DROP;
		f = bpf_map_lookup_elem(&flows, &key);
		if (!f)
			return XDP_DROP;
		long r = bpf_timer_init(&f->timer, &flows, 1 /* CLOCK_MONOTONIC */);
		if (r == -16 /* EBUSY */)
			return XDP_TX;
		if (r)
			return XDP_ABORTED;
		if (bpf_timer_set_callback(&f->timer, expire))
			return XDP_ABORTED;
		if (bpf_timer_start(&f->timer, 1000000000ull * p[2], 0))
			return XDP_ABORTED;
	}
	f->packets++;
	if (p[0] == 0xcc) {
		long c = bpf_timer_cancel(&f->timer);
		if (c == 1)
			return XDP_DROP;
		if (c < 0)
			return XDP_ABORTED;
	}
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
