/* The program the paper wrote to resist the analysis (§6: "2^64 unsatisfiable paths which are
 * slower than the SSP"): 64 counters each added to when one bit of a packet word is set, then 64
 * more each added to when the same bit is clear. The slowest paths add to both counters of some
 * bit, which no packet does; every path slower than the SSP (exactly one add per bit) is one of
 * those, and there are about 2^128 of them. The naive bound comes at once and stays valid; the
 * search improves on it until its timeout. */
#include "xdp_common.h"

struct counters {
	__u64 c[128];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct counters);
} counts SEC(".maps");

/* Each bit is tested on a shifted copy of the word, out of clang's sight (barrier_var), so the
 * kernel's verifier learns the bit on that copy, which dies at once, and not on `w`: otherwise
 * every combination of bits would be a verifier state of its own, and the verifier gives up at
 * its million instructions. */
#define SET(i) \
	{ \
		__u64 t = w >> (i); \
		barrier_var(t); \
		if (t & 1) \
			__sync_fetch_and_add(&c->c[i], 1); \
	}
#define CLEAR(i) \
	{ \
		__u64 t = w >> (i); \
		barrier_var(t); \
		if (!(t & 1)) \
			__sync_fetch_and_add(&c->c[64 + (i)], 1); \
	}

SEC("xdp")
int path_explosion(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (data + 22 > end)
		return XDP_DROP;
	__u64 w = *(__u64 *)(data + 14);
	__u32 zero = 0;
	struct counters *c = bpf_map_lookup_elem(&counts, &zero);
	if (!c)
		return XDP_PASS;
	SET(0)
	SET(1)
	SET(2)
	SET(3)
	SET(4)
	SET(5)
	SET(6)
	SET(7)
	SET(8)
	SET(9)
	SET(10)
	SET(11)
	SET(12)
	SET(13)
	SET(14)
	SET(15)
	SET(16)
	SET(17)
	SET(18)
	SET(19)
	SET(20)
	SET(21)
	SET(22)
	SET(23)
	SET(24)
	SET(25)
	SET(26)
	SET(27)
	SET(28)
	SET(29)
	SET(30)
	SET(31)
	SET(32)
	SET(33)
	SET(34)
	SET(35)
	SET(36)
	SET(37)
	SET(38)
	SET(39)
	SET(40)
	SET(41)
	SET(42)
	SET(43)
	SET(44)
	SET(45)
	SET(46)
	SET(47)
	SET(48)
	SET(49)
	SET(50)
	SET(51)
	SET(52)
	SET(53)
	SET(54)
	SET(55)
	SET(56)
	SET(57)
	SET(58)
	SET(59)
	SET(60)
	SET(61)
	SET(62)
	SET(63)
	CLEAR(0)
	CLEAR(1)
	CLEAR(2)
	CLEAR(3)
	CLEAR(4)
	CLEAR(5)
	CLEAR(6)
	CLEAR(7)
	CLEAR(8)
	CLEAR(9)
	CLEAR(10)
	CLEAR(11)
	CLEAR(12)
	CLEAR(13)
	CLEAR(14)
	CLEAR(15)
	CLEAR(16)
	CLEAR(17)
	CLEAR(18)
	CLEAR(19)
	CLEAR(20)
	CLEAR(21)
	CLEAR(22)
	CLEAR(23)
	CLEAR(24)
	CLEAR(25)
	CLEAR(26)
	CLEAR(27)
	CLEAR(28)
	CLEAR(29)
	CLEAR(30)
	CLEAR(31)
	CLEAR(32)
	CLEAR(33)
	CLEAR(34)
	CLEAR(35)
	CLEAR(36)
	CLEAR(37)
	CLEAR(38)
	CLEAR(39)
	CLEAR(40)
	CLEAR(41)
	CLEAR(42)
	CLEAR(43)
	CLEAR(44)
	CLEAR(45)
	CLEAR(46)
	CLEAR(47)
	CLEAR(48)
	CLEAR(49)
	CLEAR(50)
	CLEAR(51)
	CLEAR(52)
	CLEAR(53)
	CLEAR(54)
	CLEAR(55)
	CLEAR(56)
	CLEAR(57)
	CLEAR(58)
	CLEAR(59)
	CLEAR(60)
	CLEAR(61)
	CLEAR(62)
	CLEAR(63)
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
