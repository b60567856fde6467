/* bpf-to-bpf calls: a non-inlined checksum over a constant number of 16-bit words, called twice,
 * with BTF-defined array, hash and per-CPU array maps and a legacy-free layout. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} bytes SEC(".maps");

static __noinline __u32 fold(__u16 *w, void *end, int words)
{
	__u32 s = 0;
#pragma clang loop unroll(disable)
	for (int i = 0; i < words; i++) {
		if ((void *)(w + i + 1) > end)
			break;
		s += w[i];
	}
	return (s & 0xffff) + (s >> 16);
}

SEC("xdp")
int calls(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end)
		return XDP_DROP;
	__u32 a = fold(data, end, 7);
	__u32 b = fold(data + 14, end, 10);
	__u32 k = (a ^ b) & 3;
	__u64 *c = bpf_map_lookup_elem(&counters, &k);
	if (c)
		__sync_fetch_and_add(c, 1);
	__u32 key = a ^ b;
	if (!bpf_map_lookup_elem(&seen, &key)) {
		__u32 one = 1;
		bpf_map_update_elem(&seen, &key, &one, BPF_ANY);
	}
	__u32 z = 0;
	__u64 *by = bpf_map_lookup_elem(&bytes, &z);
	if (by)
		*by += (long)end - (long)data;
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
