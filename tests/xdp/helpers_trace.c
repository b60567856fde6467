/* Debug output, time and the packet's length (issue 32): bpf_printk with three arguments
 * (bpf_trace_printk) and with five (bpf_trace_vprintk), BPF_SNPRINTF (bpf_snprintf) into a
 * stack buffer whose first byte is then tested, bpf_xdp_get_buff_len, bpf_check_mtu (its
 * result and the MTU it writes), bpf_strncmp against a constant, and the clocks and NUMA node
 * (bpf_ktime_get_boot_ns, _tai_ns, bpf_jiffies64, bpf_get_numa_node_id) added into a map. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} clocks SEC(".maps");

SEC("xdp")
int helpers_trace(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	char buf[16] = {};
	__u32 mtu = 0, key = 0;

	if (p + 8 > (__u8 *)end)
		return XDP_PASS;
	long n = bpf_printk("len %d first %x second %u", (int)(end - data), p[0], p[1]);
	if (n < 0)
		return XDP_ABORTED;
	if (p[0] == 0x42)
		bpf_printk("five %d %d %d %d %d", p[1], p[2], p[3], p[4], p[5]);
	BPF_SNPRINTF(buf, sizeof(buf), "%d", p[2]);
	if (buf[0] == '9')
		return XDP_DROP;
	__u64 len = bpf_xdp_get_buff_len(ctx);
	if (len > 200)
		return XDP_TX;
	mtu = p[3];
	long r = bpf_check_mtu(ctx, 0, &mtu, p[4], 0);
	if (r < 0)
		return XDP_ABORTED;
	if (r == 1 && mtu > 1000)
		return XDP_DROP;
	if (bpf_strncmp((char *)buf, 2, "7") == 0)
		return XDP_TX;
	__u64 *c = bpf_map_lookup_elem(&clocks, &key);
	if (c)
		*c += bpf_ktime_get_boot_ns() + bpf_ktime_get_tai_ns() + bpf_jiffies64() +
		      bpf_get_numa_node_id();
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
