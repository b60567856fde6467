/* Queue, stack and bloom filter maps (kernel/bpf/queue_stack_maps.c, bloom_filter.c), through
 * bpf_map_push_elem, _pop_elem and _peek_elem, steered by the packet: p[0] & 7 values pushed
 * into a queue and a stack of 4 (the fifth -E2BIG, or with BPF_EXIST the oldest dropped), with
 * the flags p[1] & 3 (BPF_NOEXIST and 3: -EINVAL); each peeked, then popped until empty (-ENOENT,
 * zeros written); a bloom filter pushed p[8..12) with the flags p[12] & 1 and asked for the same
 * value or another (p[13] & 1). Every result is written into the packet, so that the kernel's
 * bytes and the interpreter's can be compared; the queue and stack end empty. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 4);
	__type(value, __u32);
} fifo SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK);
	__uint(max_entries, 4);
	__type(value, __u32);
} lifo SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_BLOOM_FILTER);
	__uint(max_entries, 64);
	__type(value, __u32);
} seen SEC(".maps");

SEC("xdp")
int queue_stack(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	if (data + 64 > end)
		return XDP_PASS;
	__u32 n = p[0] & 7, flags = p[1] & 3, v;
	__u8 *out = p + 16;
#pragma unroll
	for (int i = 0; i < 6; i++) {
		if (i < n) {
			v = p[2 + i] | (i << 8);
			out[i] = bpf_map_push_elem(&fifo, &v, flags);
			out[6 + i] = bpf_map_push_elem(&lifo, &v, flags);
		}
	}
	__u32 vals[8] = {};
	out[12] = bpf_map_peek_elem(&fifo, &vals[0]);
	out[13] = bpf_map_peek_elem(&lifo, &vals[1]);
#pragma unroll
	for (int i = 0; i < 3; i++) {
		out[14] = bpf_map_pop_elem(&fifo, &vals[2 + i]);
		bpf_map_pop_elem(&lifo, &vals[5 + i]);
	}
	/* Whatever is left goes: the maps end empty. */
	out[15] = bpf_map_pop_elem(&fifo, &v) | (bpf_map_pop_elem(&lifo, &v) << 4);
	bpf_map_pop_elem(&fifo, &v);
	bpf_map_pop_elem(&lifo, &v);
	__u32 key = *(__u32 *)(p + 8), other = key ^ 0x5a5a;
	p[14] = bpf_map_push_elem(&seen, &key, p[12] & 1);
	p[15] = bpf_map_peek_elem(&seen, (p[13] & 1) ? &other : &key);
	/* The values peeked and popped, low bytes (p[2..8) are below 0x100 apart from i << 8). */
#pragma unroll
	for (int i = 0; i < 8; i++)
		p[32 + 2 * i] = vals[i], p[33 + 2 * i] = vals[i] >> 8;
	return XDP_TX;
}
