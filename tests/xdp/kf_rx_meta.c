/* The XDP RX metadata kfuncs (net/core/xdp.c): a flow's RSS hash steers it (L4 hashes: the
 * low bit drops or sends back, as a two-way split), VLAN 10 is dropped, a timestamp past a
 * threshold is sent back. Each kfunc may fail: -EOPNOTSUPP when the device does not implement
 * it (the kernel's default, which BPF_PROG_TEST_RUN runs: no device is bound) and -ENODATA
 * when the packet has no such hint; then the packet's first byte decides. The outputs are
 * written only on success. */
#include "xdp_common.h"

#define EOPNOTSUPP 95
#define XDP_RSS_L4 (1 << 3)

extern int bpf_xdp_metadata_rx_timestamp(const struct xdp_md *ctx, __u64 *timestamp) __ksym;
extern int bpf_xdp_metadata_rx_hash(const struct xdp_md *ctx, __u32 *hash, __u32 *rss_type) __ksym;
extern int bpf_xdp_metadata_rx_vlan_tag(const struct xdp_md *ctx, __u16 *vlan_proto,
					__u16 *vlan_tci) __ksym;

SEC("xdp")
int kf_rx_meta(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 hash = 0, type = 0;
	__u16 proto = 0, tci = 0;
	__u64 ts = 0;
	__u8 first;
	int r;

	if (data + 1 > data_end)
		return XDP_ABORTED;
	first = *(__u8 *)data;
	if (bpf_xdp_metadata_rx_hash(ctx, &hash, &type) == 0 && (type & XDP_RSS_L4))
		return hash & 1 ? XDP_DROP : XDP_TX;
	if (bpf_xdp_metadata_rx_vlan_tag(ctx, &proto, &tci) == 0 && (tci & 0xfff) == 10)
		return XDP_DROP;
	r = bpf_xdp_metadata_rx_timestamp(ctx, &ts);
	if (r == -EOPNOTSUPP)
		return first & 1 ? XDP_PASS : XDP_TX;
	if (r == 0 && ts > 1000000)
		return XDP_TX;
	return hash ? XDP_DROP : XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
