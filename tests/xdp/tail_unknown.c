/* A tail call through a prog array whose contents the object does not declare (user space
 * fills it at run time): the analysis answers "unbounded" (docs/xdp.md, "Tail calls"), unless
 * --tail-call says what the array holds, e.g. `--tail-call jumps=0:tu_drop,1:tu_count`. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 8);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} jumps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} packets SEC(".maps");

SEC("xdp")
int tail_unknown(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	if ((void *)(p + 15) > data_end)
		return XDP_ABORTED;
	/* The byte after the Ethernet header chooses the program. */
	bpf_tail_call(ctx, &jumps, p[14] & 7);
	return XDP_PASS;
}

SEC("xdp/drop")
int tu_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

SEC("xdp/count")
int tu_count(struct xdp_md *ctx)
{
	__u32 k = 0;
	__u64 *n = bpf_map_lookup_elem(&packets, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	/* Again through the array: slot 1 again until the kernel's limit of 33 tail calls. */
	bpf_tail_call(ctx, &jumps, 1);
	return XDP_TX;
}
char LICENSE[] SEC("license") = "GPL";
