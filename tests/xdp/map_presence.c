/* Paths whose map results depend on whether a key had an entry before the run: a delete that
 * succeeds, an update with BPF_EXIST that succeeds, one with BPF_NOEXIST that fails (-EEXIST).
 * The slowest path needs all three keys present, so the example must give them (a path the
 * example leaves them out of takes another way in the interpreter and the kernel). */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u32);
} flows SEC(".maps");

SEC("xdp")
int map_presence(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (data + 16 > end)
		return XDP_PASS;
	__u32 *w = data, a = w[0], b = w[1], c = w[2], one = 1;
	if (bpf_map_delete_elem(&flows, &a) < 0)
		return XDP_ABORTED;
	if (bpf_map_update_elem(&flows, &b, &one, BPF_EXIST) != 0)
		return XDP_DROP;
	if (bpf_map_update_elem(&flows, &c, &one, BPF_NOEXIST) == 0)
		return XDP_DROP;
	/* All three were there: some work only such packets do. */
	__u32 sum = a ^ b ^ c;
#pragma unroll
	for (int i = 0; i < 8; i++)
		sum = sum * 31 + w[3];
	w[3] = sum;
	return XDP_TX;
}
