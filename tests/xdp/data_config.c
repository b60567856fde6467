/* Configuration as user space sets it before and after the load: in writable global data, as
 * libbpf skeletons set it (`skel->data->router_mac = ...`, `skel->bss->mode = ...`), and per
 * receiving device, in a hash map keyed by `ctx->ingress_ifindex`. The program compares the
 * packet's destination MAC with the MAC in .data and takes its slowest path (a checksum of 64
 * bytes) only when they match, the mode in .bss is set and the device's entry says so. The
 * analysis takes all of it as user space may set it (free), so its example must give it, and for
 * a device the kernel's test run can use (the loopback, ifindex 1): validate loads the maps with
 * the example's entries, and the interpreter and the kernel take each path the analysis reports. */
#include "xdp_common.h"

unsigned char router_mac[6] = { 0x90, 0xe2, 0xba, 0xf7, 0x32, 0x69 };  /* .data */
__u32 mode;                                                             /* .bss */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u32);
} dev_mode SEC(".maps");

SEC("xdp")
int data_config(struct xdp_md *ctx)
{
	unsigned char *d = (void *)(long)ctx->data, *e = (void *)(long)ctx->data_end;
	__u32 ifindex = ctx->ingress_ifindex, h = 0;
	__u32 *on;

	if (d + 64 > e)
		return XDP_PASS;
	for (int i = 0; i < 6; i++)
		if (d[i] != router_mac[i])
			return XDP_DROP;
	if (!mode)
		return XDP_PASS;
	on = bpf_map_lookup_elem(&dev_mode, &ifindex);
	if (!on || !*on)
		return XDP_PASS;
#pragma unroll
	for (int i = 0; i < 64; i += 4)
		h = h * 31 + *(__u32 *)(d + i);
	return (h & 1) ? XDP_TX : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
