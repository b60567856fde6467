/* Maps of maps whose slots alias: the kernel lets user space store one map in two slots, or
 * store a map the program also uses directly (here `direct`, the outer map's own `.values`
 * initialiser). Every outcome below is one a real map state gives, so an analysis that refutes
 * any of them is unsound:
 *  - packet byte 0 = 1: a write through slot 0, then a read through slot 1: equal (one map in
 *    both slots: XDP_TX) or not (two maps: XDP_DROP);
 *  - byte 0 = 2: a direct read, a write through slot 0, a direct read again: changed (slot 0
 *    holds `direct`: XDP_TX) or not (XDP_DROP);
 *  - byte 0 = 3: a write to `direct`, then a read through slot 1: it sees the write
 *    (XDP_TX) or not (XDP_DROP).
 * Any other packet, a missing slot or entry: XDP_PASS or XDP_ABORTED. */
#include "xdp_common.h"

struct inner {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 8);
};

struct inner direct SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct inner);
} slots SEC(".maps") = {
	.values = { [0] = &direct },
};

SEC("xdp")
int mim_alias(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	if (data + 1 > data_end)
		return XDP_PASS;
	__u8 op = *(__u8 *)data;
	__u32 s0 = 0, s1 = 1, k = 5, seven = 7;
	void *a = bpf_map_lookup_elem(&slots, &s0);
	void *b = bpf_map_lookup_elem(&slots, &s1);
	if (!a || !b)
		return XDP_PASS;
	if (op == 1) {
		if (bpf_map_update_elem(a, &k, &seven, BPF_ANY))
			return XDP_ABORTED;
		__u32 *v = bpf_map_lookup_elem(b, &k);
		if (!v)
			return XDP_ABORTED;
		return *v == 7 ? XDP_TX : XDP_DROP;
	}
	if (op == 2) {
		__u32 *v1 = bpf_map_lookup_elem(&direct, &k);
		if (!v1)
			return XDP_ABORTED;
		__u32 before = *v1;
		if (before == 7)
			return XDP_ABORTED;
		__u32 *w = bpf_map_lookup_elem(a, &k);
		if (!w)
			return XDP_ABORTED;
		*w = 7;
		__u32 *v2 = bpf_map_lookup_elem(&direct, &k);
		if (!v2)
			return XDP_ABORTED;
		return *v2 != before ? XDP_TX : XDP_DROP;
	}
	if (op == 3) {
		if (bpf_map_update_elem(&direct, &k, &seven, BPF_ANY))
			return XDP_ABORTED;
		__u32 *v = bpf_map_lookup_elem(b, &k);
		if (!v)
			return XDP_ABORTED;
		return *v == 7 ? XDP_TX : XDP_DROP;
	}
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
