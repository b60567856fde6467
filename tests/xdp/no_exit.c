/* A program that never exits: a counted inner loop inside an endless outer one. Once the
 * inner loop is unrolled, no path from the entry reaches an exit. */
#include "xdp_common.h"

SEC("xdp")
int no_exit(struct xdp_md *ctx)
{
	volatile unsigned int x = 0;
	(void)x;
	for (;;) {
#pragma clang loop unroll(disable)
		for (int i = 0; i < 100; i++)
			x += i;
	}
}
char LICENSE[] SEC("license") = "GPL";
