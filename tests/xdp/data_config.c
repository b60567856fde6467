/* Configuration in writable global data, as libbpf skeletons set it before the load
 * (`skel->data->router_mac = ...`, `skel->bss->mode = ...`): the program compares the packet's
 * destination MAC with a MAC in .data and takes its slowest path (a checksum of 64 bytes) only
 * when they match and a mode in .bss is set. The analysis takes both as user space may set them
 * (free), so its example must give them: validate loads the maps with the example's .data and
 * .bss, and the interpreter and the kernel take each path the analysis reports. */
#include "xdp_common.h"

unsigned char router_mac[6] = { 0x90, 0xe2, 0xba, 0xf7, 0x32, 0x69 };  /* .data */
__u32 mode;                                                             /* .bss */

SEC("xdp")
int data_config(struct xdp_md *ctx)
{
	unsigned char *d = (void *)(long)ctx->data, *e = (void *)(long)ctx->data_end;
	__u32 h = 0;

	if (d + 64 > e)
		return XDP_PASS;
	for (int i = 0; i < 6; i++)
		if (d[i] != router_mac[i])
			return XDP_DROP;
	if (!mode)
		return XDP_PASS;
#pragma unroll
	for (int i = 0; i < 64; i += 4)
		h = h * 31 + *(__u32 *)(d + i);
	return (h & 1) ? XDP_TX : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
