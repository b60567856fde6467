/* A value pointer kept across an update of its key. The kernel's hash maps do not update a
 * present key's value in place: they link a new element and unlink the old one, whose memory
 * outlives the program's run (RCU), so the pointer from the lookup before the update still
 * reads the old value (the interpreter models that). The differential soundness test
 * (tests/test_xdp_differential.py) runs this program: the analysis must not assume that the
 * old pointer reads the new value. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} values SEC(".maps");

SEC("xdp")
int stale_value(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	if (data + 16 > end)
		return XDP_DROP;
	__u32 key = p[0] & 3;
	__u64 *v = bpf_map_lookup_elem(&values, &key);
	if (!v)
		return XDP_PASS;
	__u64 nv = *(__u64 *)(p + 8);
	if (bpf_map_update_elem(&values, &key, &nv, BPF_EXIST))
		return XDP_ABORTED;
	/* v points to the element the update unlinked: it reads the value from before. */
	if (*v != nv)
		return XDP_TX;
	return XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
