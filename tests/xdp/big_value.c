/* A count-min sketch kept in one array value of 1 MB (four rows of 2^18 counters, as sketches
 * are laid out), indexed by a hash of the packet: the path reads a few bytes of a value far
 * larger than an example can give whole, so the model gives the bytes it reads (symex.rs
 * `Lookup::reads`); asking for every byte took the solver past its memory and the analysis to
 * 1.5 GB on a 4 MB value. */
#include "xdp_common.h"

#define COLS (1 << 18)

struct sketch {
	__u8 rows[4][COLS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sketch);
} sketch SEC(".maps");

SEC("xdp")
int big_value(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u32 zero = 0;

	if (data + 4 > end)
		return XDP_PASS;
	__u32 h = *(__u32 *)data;
	struct sketch *s = bpf_map_lookup_elem(&sketch, &zero);
	if (!s)
		return XDP_ABORTED;
	s->rows[0][h & (COLS - 1)]++;
	s->rows[3][(h >> 7) & (COLS - 1)]++;
	return s->rows[1][(h >> 3) & (COLS - 1)] > 100 ? XDP_DROP : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
