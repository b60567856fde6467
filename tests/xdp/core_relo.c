/* CO-RE relocations, resolved against the kernel's BTF as libbpf resolves them before it loads a
 * program (crates/nicsim-xdp/src/core_reloc.rs): the context declared with 64-bit fields under
 * preserve_access_index, as userspace-xdp's programs declare it (the kernel's fields are 32-bit,
 * at offsets 0 and 4: the loads become 4-byte loads there), a field the kernel's struct lacks (its
 * existence check becomes 0 and the load it guards is poisoned, never reached), a type's
 * existence and a kernel enum's value. Unrelocated, the loads would be 8 bytes at offsets 0 and 8,
 * which the verifier refuses, and the slowest path (a checksum of 64 bytes) would look
 * infeasible. */
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

struct xdp_md {
	__u64 data;
	__u64 data_end;
	__u32 nicsim_no_such_field;
} __attribute__((preserve_access_index));

enum xdp_action { XDP_ABORTED = 0, XDP_DROP, XDP_PASS, XDP_TX, XDP_REDIRECT };

SEC("xdp")
int core_relo(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 s = 0;

	if (bpf_core_field_exists(ctx->nicsim_no_such_field))
		return ctx->nicsim_no_such_field;
	if (!bpf_core_type_exists(struct xdp_md))
		return XDP_ABORTED;
	if (data + 64 > data_end)
		return XDP_PASS;
#pragma unroll
	for (int i = 0; i < 64; i += 4)
		s = s * 31 + *(__u32 *)(data + i);
	return (s & 1) ? bpf_core_enum_value(enum xdp_action, XDP_TX) : XDP_DROP;
}

char _license[] SEC("license") = "GPL";
