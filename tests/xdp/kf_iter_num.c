/* Open-coded number iterators (bpf_iter_num_new/next/destroy, what libbpf's bpf_for expands
 * to): a loop over 8 bytes after the Ethernet header (a constant count, each byte checked
 * against data_end), then one whose count comes from a map value the program clamps to 0..3.
 * The analysis bounds each loop by the iterator's count (8, then 3). */
#include "xdp_common.h"

struct bpf_iter_num {
	__u64 __opaque[1];
} __attribute__((aligned(8)));

extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} iter_cfg SEC(".maps");

SEC("xdp")
int kf_iter_num(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct bpf_iter_num it;
	__u32 sum = 0, k = 0;
	int *v;

	if ((void *)(eth + 1) > data_end)
		return XDP_ABORTED;
	__u8 *pl = (void *)(eth + 1);
	bpf_iter_num_new(&it, 0, 8);
	while ((v = bpf_iter_num_next(&it))) {
		int i = *v;
		if (i < 0 || i >= 8)
			break;
		if ((void *)(pl + i + 1) > data_end)
			break;
		sum += pl[i];
	}
	bpf_iter_num_destroy(&it);

	__u32 *c = bpf_map_lookup_elem(&iter_cfg, &k);
	int n = c ? (int)(*c & 3) : 0;
	bpf_iter_num_new(&it, 1, n + 1);
	while ((v = bpf_iter_num_next(&it)))
		sum = sum * 31 + (__u32)*v;
	bpf_iter_num_destroy(&it);
	return sum & 1 ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
