/* The root of a chain whose programs live in other objects (katran's and l3af's `xdp_root`
 * convention): it counts the packet in a map pinned by name and tail-calls slot 0 of a prog
 * array that user space fills. Alone it is "unbounded"; `--tail-call
 * root_progs=0:chain_next.o` analyses it with chain_next.o's program in the slot, linked with
 * its own maps (docs/xdp.md, "Tail calls"; tests/test_xdp_chains.py). */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 4);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} root_progs SEC(".maps");

/* Shared with chain_next.o: both pin it by name, so libbpf makes it one map. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} chain_seen SEC(".maps");

/* The root's own: chain_next.o has a map of this name too, a different one. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

SEC("xdp")
int chain_root(struct xdp_md *ctx)
{
	__u32 k = 0;
	__u64 *n = bpf_map_lookup_elem(&chain_seen, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	n = bpf_map_lookup_elem(&stats, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	bpf_tail_call(ctx, &root_progs, 0);
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
