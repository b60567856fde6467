/* An open-coded number iterator whose count is a 32-bit field of the packet (bytes 14-17,
 * network order): up to BPF_MAX_LOOPS (2^23) iterations, more than the analysis unrolls, so it
 * names the loop and asks for --loop-bound N (or a count the program clamps); a count the
 * kernel refuses (end < start: -EINVAL, end - start > 2^23: -E2BIG) gives no iteration. */
#include "xdp_common.h"

struct bpf_iter_num {
	__u64 __opaque[1];
} __attribute__((aligned(8)));

extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

SEC("xdp")
int kf_iter_pktlen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct bpf_iter_num it;
	__u32 sum = 0;
	int *v, err;

	if (data + 18 > data_end)
		return XDP_ABORTED;
	int n = (int)bpf_ntohl(*(__u32 *)(data + 14));
	err = bpf_iter_num_new(&it, 0, n);
	while ((v = bpf_iter_num_next(&it)))
		sum += (__u32)*v ^ 0x5a;
	bpf_iter_num_destroy(&it);
	if (err)
		return XDP_PASS;
	return sum & 1 ? XDP_DROP : XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
