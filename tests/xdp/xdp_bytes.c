/* bpf_xdp_load_bytes and bpf_xdp_store_bytes: the Ethernet header copied to the stack at an
 * offset the packet chooses, its MAC addresses swapped and written back (XDP_TX); a copy past
 * the packet's end fails with -EINVAL (XDP_DROP) and leaves the buffer as it was (its first
 * byte tested); an offset above 0xffff -EFAULT (XDP_ABORTED). A 4-byte field is also read into
 * a map value. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} last SEC(".maps");

SEC("xdp")
int xdp_bytes(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	__u8 hdr[14] = {};

	if (p + 2 > (__u8 *)end)
		return XDP_PASS;
	__u32 off = p[0];
	if (p[1] == 0xff)
		off = 0x10000;
	hdr[0] = 0xaa;
	long r = bpf_xdp_load_bytes(ctx, off, hdr, sizeof(hdr));
	if (r == -14)
		return XDP_ABORTED;
	if (r != 0)
		return hdr[0] == 0xaa ? XDP_DROP : XDP_PASS;

	__u32 key = 0;
	__u32 *v = bpf_map_lookup_elem(&last, &key);
	if (v && bpf_xdp_load_bytes(ctx, 0, v, sizeof(*v)) == 0 && *v == 0x01020304)
		return XDP_PASS;

	__u8 mac[6];
	__builtin_memcpy(mac, hdr, 6);
	__builtin_memcpy(hdr, hdr + 6, 6);
	__builtin_memcpy(hdr + 6, mac, 6);
	if (bpf_xdp_store_bytes(ctx, off, hdr, sizeof(hdr)) != 0)
		return XDP_ABORTED;
	return XDP_TX;
}
char LICENSE[] SEC("license") = "GPL";
