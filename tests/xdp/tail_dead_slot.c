/* A tail call whose index never names the slot given for it: the root jumps to slot 0 or 1 of
 * its prog array (the packet's first bit), and `--tail-call jumps=2:walker` puts a program in
 * slot 2. The walker's loop (a walk to the end of the packet, whose bound the code does not make
 * evident) is then code no state reaches: the analysis drops it as dead rather than ask for a
 * --loop-bound (ellanetworks' UPF, whose entry program's index is 0 or 1, was refused so with
 * its GTP-U program in slot 2). Alone, the walker needs --loop-bound. cfg.rs
 * `drop_unreachable`; crates/nicsim-xdp/tests/chains.rs. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 4);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} jumps SEC(".maps");

SEC("xdp")
int tail_dead_slot(struct xdp_md *ctx)
{
	unsigned char *p = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;

	if (p + 1 > end)
		return XDP_DROP;
	bpf_tail_call(ctx, &jumps, *p & 1);
	return XDP_PASS;
}

SEC("xdp")
int walker(struct xdp_md *ctx)
{
	unsigned char *p = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	unsigned int zeros = 0;
#pragma clang loop unroll(disable)
	while (p + 1 <= end && *p != 0xff) {
		zeros += *p == 0;
		p++;
	}
	return zeros ? XDP_PASS : XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
