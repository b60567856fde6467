/* Katran's per-CPU LRU pattern (katran/lib/bpf/balancer.bpf.c): an array of maps holds one LRU
 * hash per CPU; a CPU without one uses a directly declared fallback LRU. After the join the
 * map pointer is one of two maps, which each path knows but the abstract state does not: the
 * lookup through it costs as the worst of the program's maps. */
#include "xdp_common.h"

struct flow_lru {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1024);
};

struct flow_lru fallback_cache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 64);
	__type(key, __u32);
	__array(values, struct flow_lru);
} lru_mapping SEC(".maps");

SEC("xdp")
int mim_fallback(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	if (data + 4 > data_end)
		return XDP_PASS;
	__u32 flow = *(__u32 *)data;
	__u32 cpu = bpf_get_smp_processor_id();
	void *lru = bpf_map_lookup_elem(&lru_mapping, &cpu);
	if (!lru)
		lru = &fallback_cache;
	__u64 *seen = bpf_map_lookup_elem(lru, &flow);
	if (seen) {
		*seen += 1;
		return XDP_TX;
	}
	__u64 one = 1;
	bpf_map_update_elem(lru, &flow, &one, BPF_ANY);
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
