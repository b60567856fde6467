/* A path that the environment decides: an entry's age against a timeout (the time) and a
 * sampling decision (a random number), as rate limiters, LRU ageing and samplers decide. The
 * slowest path needs a fresh entry (now - seen <= 30 s) and the sample (prandom & 0xff == 7):
 * its example is only taken in the interpreter when the interpreter replays the time and the
 * random number the model chose (`helper_results`, `RunOptions::replay`;
 * crates/nicsim-xdp/tests/search.rs, tests/test_xdp.py). */
#include "xdp_common.h"

struct entry {
	__u64 seen_ns;
	__u64 samples;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct entry);
} ages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} sampled SEC(".maps");

SEC("xdp")
int env_age(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 key = 0;

	if (data + 4 > data_end)
		return XDP_DROP;
	struct entry *e = bpf_map_lookup_elem(&ages, &key);
	if (!e)
		return XDP_ABORTED;
	__u64 now = bpf_ktime_get_ns();
	if (now - e->seen_ns > 30000000000ULL) {
		e->seen_ns = now; /* expired: start again */
		return XDP_PASS;
	}
	if ((bpf_get_prandom_u32() & 0xff) != 7)
		return XDP_TX;
	/* The sample: count the packet's first word in a hash map (the slow path). */
	__u32 word = *(__u32 *)data;
	__u64 *n = bpf_map_lookup_elem(&sampled, &word);
	if (n) {
		__sync_fetch_and_add(n, 1);
	} else {
		__u64 one = 1;
		bpf_map_update_elem(&sampled, &word, &one, BPF_ANY);
	}
	e->samples += 1;
	return XDP_DROP;
}
