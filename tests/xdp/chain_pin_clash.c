/* A program that pins a map by the name chain_root.c pins `chain_seen` with, but with another
 * value size: libbpf refuses to reuse the pinned map, and so does the link of
 * `--tail-call root_progs=0:chain_pin_clash.o` (one error naming the map). */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} chain_seen SEC(".maps");

SEC("xdp")
int chain_pin_clash(struct xdp_md *ctx)
{
	__u32 k = 0, *n = bpf_map_lookup_elem(&chain_seen, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
