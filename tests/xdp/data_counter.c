/* A port allocator in writable global data (.data, initialised to 10000 in the object; user space
 * or earlier packets move it): each packet gets the next port written into it. The analysis
 * takes .data as free, so its example gives the value its path needs, often zeros; validate must
 * load that value (an entry of zeros is a write, not the array's initial state) or the kernel
 * writes another port into the packet. */
#include "xdp_common.h"

int next_port = 10000;

SEC("xdp")
int data_counter(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;

	if (data + 36 > end)
		return XDP_PASS;
	*(__u16 *)(data + 34) = (__u16)next_port;
	next_port++;
	return XDP_TX;
}
char LICENSE[] SEC("license") = "GPL";
