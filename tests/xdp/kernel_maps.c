/* A hash map and a per-CPU array (and a socket storage no code uses): the maps that
 * crates/nicsim-xdp/tests/interp.rs (`kernel_map_entries_are_set_read_and_deleted`) sets, reads
 * and deletes entries of in the kernel, through `nicsim_xdp::kernel::Kernel`, as the accuracy
 * study writes back a path's map entries between runs. It calls no helper a kernel may withhold
 * from XDP programs, so that every kernel loads it. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Socket storage the program does not use (kmesh's objects declare one beside their XDP
 * programs): created as libbpf creates it, with 0 entries and BTF for its key and value. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} sock_marks SEC(".maps");

SEC("xdp")
int kernel_maps(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 key = 0;

	if (data + 1 > data_end)
		return XDP_DROP;
	key = *(__u8 *)data & 3;
	__u64 *f = bpf_map_lookup_elem(&flows, &key);
	if (f)
		__sync_fetch_and_add(f, 1);
	__u64 *c = bpf_map_lookup_elem(&counters, &key);
	if (c)
		*c += 1;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
