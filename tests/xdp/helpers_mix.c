/* The semantics the analyzer's symbolic execution models, in one program for the differential
 * soundness test (tests/test_xdp_differential.py): a callee writing into its caller's stack,
 * stack bytes at computed offsets, 32-bit, signed and 64-bit arithmetic, division and modulo by
 * packet bytes (0 included), byte swaps, hash, LRU and per-CPU maps (lookups, updates with
 * each flag, deletes, atomic adds), global data (.bss, .data, .rodata at a computed index), and,
 * chosen by the packet, one change of the packet: the head moved forward, the tail cut or
 * grown, metadata added; then bpf_redirect with the packet's flags or bpf_redirect_map. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} recent SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
} ports SEC(".maps");

__u64 seen;              /* .bss */
__u32 salt = 0x9e3779b9; /* .data */
const volatile __u8 table[16] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3}; /* .rodata */

#define OPAQUE(x) asm volatile("" : "+r"(x))

/* Writes into the caller's buffer: the caller reads it back after the call. */
static __noinline int mix(__u8 *buf, __u32 n, __u32 x)
{
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < 8; i++) {
		if (i >= n)
			break;
		buf[i] ^= (__u8)(x >> i);
	}
	return buf[0] + buf[7];
}

SEC("xdp")
int helpers_mix(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	if (data + 24 > end)
		return XDP_DROP;
	__u8 sel = p[14];
	int ret = XDP_PASS;

	/* The stack: a byte at a computed offset, a callee writing into it. */
	__u8 buf[16] = {};
	buf[p[0] & 15] = p[1];
	int m = mix(buf, p[2] & 7, bpf_ntohl(*(__u32 *)(p + 2)));
	if (buf[p[3] & 15] == 0x5a || m == 0x1ff)
		ret = XDP_TX;

	/* Arithmetic: 32-bit wrap, signed comparison, division and modulo by a packet byte. */
	__u32 a = p[4] | (p[5] << 8) | (p[6] << 16) | ((__u32)p[7] << 24);
	__u32 w = a * 0x01000193u + salt;
	__s32 s = (__s8)p[8];
	/* d may be 0: BPF defines x / 0 = 0 and x % 0 = x, and clang, not knowing d (OPAQUE), emits
	 * the instructions without a test. */
	__u64 d = p[9];
	OPAQUE(d);
	__u64 q = ((__u64)a << 3) / d, r = (__u64)a % d;
	if (s < -3 && q > 1000)
		ret = XDP_DROP;
	if ((__s64)(r - 5) < 0 && (w >> 28) == 7)
		ret = XDP_TX;
	__u64 be = bpf_be64_to_cpu(*(__u64 *)(p + 16));
	if ((be & 0xff) == 0x42)
		ret = XDP_DROP;

	/* Maps: a hash counter (NOEXIST on a miss, deleted past 3), an LRU (BPF_ANY, then looked
	 * up: it may have evicted), a per-CPU counter, global data. */
	__u32 key = p[10] & 7;
	__u64 *f = bpf_map_lookup_elem(&flows, &key);
	if (f) {
		__sync_fetch_and_add(f, 1);
		if (*f > 3 && bpf_map_delete_elem(&flows, &key) == 0)
			ret = XDP_DROP;
	} else {
		__u64 one = 1;
		if (bpf_map_update_elem(&flows, &key, &one, p[11] & 3))
			ret = XDP_ABORTED;
	}
	__u32 val = w;
	if (bpf_map_update_elem(&recent, &key, &val, BPF_ANY) == 0) {
		__u32 *rv = bpf_map_lookup_elem(&recent, &key);
		if (rv && *rv != w)
			return XDP_ABORTED; /* never: what was stored is read back */
	}
	__u32 ck = sel & 3;
	__u64 *c = bpf_map_lookup_elem(&counters, &ck);
	if (c)
		*c += end - data;
	seen++;
	if (table[p[12] & 15] == 9 && seen > 1)
		ret = XDP_PASS;

	/* One change of the packet, chosen by sel's top two bits; pointers reloaded after it (p is
	 * stale from here on). */
	__u8 by = p[13], port = p[15];
	switch (sel >> 6) {
	case 0:
		if (bpf_xdp_adjust_head(ctx, 14))
			return XDP_ABORTED;
		data = (void *)(long)ctx->data;
		end = (void *)(long)ctx->data_end;
		if (data + 20 > end)
			return XDP_DROP;
		if (((__u8 *)data)[0] == 0x45)
			ret = XDP_PASS;
		break;
	case 1:
		if (bpf_xdp_adjust_tail(ctx, -(int)(by & 63)))
			return XDP_ABORTED;
		data = (void *)(long)ctx->data;
		end = (void *)(long)ctx->data_end;
		if (data + 60 > end)
			ret = XDP_DROP;
		break;
	case 2:
		if (bpf_xdp_adjust_tail(ctx, by & 63))
			return XDP_ABORTED;
		data = (void *)(long)ctx->data;
		end = (void *)(long)ctx->data_end;
		if (data + 100 > end)
			return XDP_PASS;
		((__u8 *)data)[99] = 0xee;
		break;
	default: {
		if (bpf_xdp_adjust_meta(ctx, -8))
			return XDP_ABORTED;
		void *meta = (void *)(long)ctx->data_meta;
		data = (void *)(long)ctx->data;
		if (meta + 8 > data)
			return XDP_DROP;
		*(__u64 *)meta = be;
		break;
	}
	}
	if (sel & 0x20)
		return bpf_redirect(port, by & 1);
	if (sel & 0x10)
		return bpf_redirect_map(&ports, port & 3, XDP_PASS);
	return ret;
}
char LICENSE[] SEC("license") = "GPL";
