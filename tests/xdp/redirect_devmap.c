/* Forwards by a device map: bpf_redirect_map gives XDP_REDIRECT when the port has an entry,
 * else the action in its flags' low bits (here XDP_PASS). Its result is the program's action. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u32);
} ports SEC(".maps");

SEC("xdp")
int redirect_devmap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	__u32 port = eth->h_dest[5] & 7;
	return bpf_redirect_map(&ports, port, XDP_PASS);
}
char LICENSE[] SEC("license") = "GPL";
