/* Externs libbpf fills from the running kernel's configuration (issue 32): __kconfig
 * LINUX_KERNEL_VERSION, a tristate, a number (CONFIG_HZ) and a weak option no kernel has
 * (0). A packet whose first byte is below HZ / 10 is counted in a map; a kernel older than
 * 5.0 would drop everything. */
#include "xdp_common.h"


extern unsigned int LINUX_KERNEL_VERSION __kconfig;
extern unsigned int CONFIG_HZ __kconfig;
extern enum libbpf_tristate CONFIG_BPF_SYSCALL __kconfig;
extern _Bool CONFIG_NICSIM_NO_SUCH_OPTION __kconfig __weak;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} slow SEC(".maps");

SEC("xdp")
int ld_kconfig(struct xdp_md *ctx)
{
	__u8 *p = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u32 key = 0;

	if (LINUX_KERNEL_VERSION < ((5 << 16) | 0) || CONFIG_NICSIM_NO_SUCH_OPTION)
		return XDP_DROP;
	if (p + 1 > end)
		return XDP_PASS;
	if (CONFIG_BPF_SYSCALL == TRI_YES && p[0] < CONFIG_HZ / 10) {
		__u64 *c = bpf_map_lookup_elem(&slow, &key);
		if (c)
			*c += 1;
		return XDP_TX;
	}
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
