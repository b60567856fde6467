/* A component for disp_mini.c with a run configuration (libxdp's XDP_RUN_CONFIG: a struct in
 * section .xdp_run_config whose members are `__uint`s): priority 10, so libxdp runs it before a
 * component of the default priority 50, and the chain goes on after XDP_PASS and XDP_DROP. It
 * sums the first 32 bytes after the Ethernet header into a hash map of its own (a slow path)
 * and drops packets whose sum is odd. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} sums SEC(".maps");

struct {
	__uint(priority, 10);
	__uint(XDP_PASS, 1);
	__uint(XDP_DROP, 1);
} _comp_b SEC(".xdp_run_config");

SEC("xdp")
int comp_b(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	if ((void *)(p + 14 + 32) > data_end)
		return XDP_PASS;
	__u32 sum = 0;
	for (int i = 0; i < 32; i++)
		sum += p[14 + i];
	__u64 one = 1, *n = bpf_map_lookup_elem(&sums, &sum);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&sums, &sum, &one, BPF_ANY);
	return (sum & 1) ? XDP_DROP : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
