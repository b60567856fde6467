/* A path that stores what the environment gives: the time a source was last seen
 * (bpf_ktime_get_ns into a hash map, as Vinbero's FDB learning and rate limiters do). The
 * interpreter stores the model's time, the kernel its own: `nicsim xdp validate` must tell
 * that from a wrong map write (tests/test_xdp_validate_paths.py). */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

SEC("xdp")
int env_stamp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (data + 14 > end)
		return XDP_DROP;
	__u32 k = *(__u32 *)(data + 6);
	__u64 now = bpf_ktime_get_ns();
	bpf_map_update_elem(&seen, &k, &now, BPF_ANY);
	return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
