/* A per-CPU LRU hash (BPF_MAP_TYPE_LRU_PERCPU_HASH), as per-flow counters are kept: a flow's
 * first packet inserts its entry (BPF_NOEXIST; a full map of 2 evicts its least recently used
 * entry), later ones add to it in place through the pointer a lookup gives; a packet whose
 * flow is found with a count past 3 is dropped, one whose byte 14 is odd deletes its flow
 * first. The interpreter, the symbolic executor and the kernel's validation must agree. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} flows SEC(".maps");

SEC("xdp")
int lru_percpu(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;

	if (data + 18 > end)
		return XDP_PASS;
	__u32 flow = *(__u32 *)(p + 6) & 0x7;
	if (p[14] & 1)
		bpf_map_delete_elem(&flows, &flow);
	__u64 *count = bpf_map_lookup_elem(&flows, &flow);
	if (!count) {
		__u64 one = 1;
		if (bpf_map_update_elem(&flows, &flow, &one, BPF_NOEXIST))
			return XDP_ABORTED;
		return XDP_PASS;
	}
	*count += 1;
	if (*count > 3)
		return XDP_DROP;
	return XDP_TX;
}
char LICENSE[] SEC("license") = "GPL";
