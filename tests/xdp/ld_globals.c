/* Global data: a counter in .data, a table in .bss, constants in .rodata and a string in
 * .rodata.str1.1. .rodata sections are constants; .data and .bss are one-entry array maps. */
#include "xdp_common.h"

int seen_ipv4 = 1;              /* .data */
__u64 by_len[4];                /* .bss */
const __u16 ports[4] = { 53, 80, 443, 8080 };   /* .rodata */

SEC("xdp")
int ld_globals(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	unsigned char *p = data;
	if ((void *)(p + 16) > end)
		return XDP_PASS;
	const char *magic = "NICSIM";    /* .rodata.str1.1 */
	if (p[14] != (unsigned char)magic[p[15] & 3])
		return XDP_PASS;
	if (p[12] == 0x08)
		seen_ipv4 += 1;
	by_len[(end - data) & 3] += 1;
	return p[13] == ports[p[14] & 3] ? XDP_DROP : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
