/* A typeless kernel symbol (`extern const void sym __ksym;`): libbpf resolves it to the
 * symbol's address in /proc/kallsyms, a constant the program stores in a map. (A function: a
 * kernel without CONFIG_KALLSYMS_ALL lists no data symbols there.) */
#include "xdp_common.h"

extern const void xdp_do_redirect __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ksym_addr SEC(".maps");

SEC("xdp")
int ld_ksym(struct xdp_md *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&ksym_addr, &k);

	if (!v)
		return XDP_ABORTED;
	*v = (__u64)&xdp_do_redirect;
	return (*v >> 63) ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
