/* A per-flow counter and timestamp updated under the value's spin lock (bpf_spin_lock,
 * bpf_spin_unlock), the timestamp from bpf_ktime_get_coarse_ns; the packet is passed when the
 * flow had been seen before (the counter, read under the lock, was not 0), else dropped. The
 * verifier needs the map's BTF for the lock: nicsim's kernel loader creates the map with BTF
 * that places it (kernel.rs `value_btf`), so `validate` runs it, and the soundness sweep times
 * its paths. */
#include "xdp_common.h"

struct flow {
	struct bpf_spin_lock lock;
	__u32 packets;
	__u64 last_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct flow);
} flows SEC(".maps");

SEC("xdp")
int spin_lock(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;

	if (p + 1 > (__u8 *)end)
		return XDP_PASS;
	__u32 key = p[0] & 7;
	struct flow *f = bpf_map_lookup_elem(&flows, &key);
	if (!f)
		return XDP_ABORTED;
	__u64 now = bpf_ktime_get_coarse_ns();
	bpf_spin_lock(&f->lock);
	__u32 seen = f->packets++;
	f->last_ns = now;
	bpf_spin_unlock(&f->lock);
	return seen ? XDP_PASS : XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
