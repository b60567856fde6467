/* The packet sampler pattern: a timestamp (bpf_ktime_get_coarse_ns) and the packet's first
 * bytes sent to user space by a perf event array (bpf_perf_event_output) or a ring buffer
 * (bpf_ringbuf_output, or a record reserved, filled and submitted or discarded), chosen by the
 * packet. Every result branched on: an event that
 * could not be sent (no reader, the buffer full) and a failed reservation count as drops. The
 * kernel's verifier accepts it as it is (tests/test_xdp.py runs it in the kernel). */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} rb SEC(".maps");

struct sample {
	__u64 ns;
	__u8 head[16];
};

SEC("xdp")
int sampler(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	struct sample s = {};

	if (p + 16 > (__u8 *)end)
		return XDP_PASS;
	s.ns = bpf_ktime_get_coarse_ns();
	__builtin_memcpy(s.head, p, 16);

	long r;
	switch (p[1] & 3) {
	case 0:
		r = bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &s, sizeof(s));
		break;
	case 1:
		r = bpf_ringbuf_output(&rb, &s, sizeof(s), p[2] & 1 ? BPF_RB_NO_WAKEUP : 0);
		break;
	default: {
		struct sample *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
		if (!e)
			return XDP_DROP;
		e->ns = s.ns;
		__builtin_memcpy(e->head, s.head, 16);
		if (p[1] & 1) {
			bpf_ringbuf_discard(e, 0);
			return XDP_TX;
		}
		bpf_ringbuf_submit(e, 0);
		r = 0;
	}
	}
	return r == 0 ? XDP_PASS : XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
