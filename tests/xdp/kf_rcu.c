/* The kfuncs that give no value: an RCU read-side section around a map lookup and a count
 * kept with preemption off (bpf_rcu_read_lock/unlock, bpf_preempt_disable/enable). They change
 * nothing the program reads; the analysis costs them as calls. */
#include "xdp_common.h"

extern void bpf_rcu_read_lock(void) __ksym;
extern void bpf_rcu_read_unlock(void) __ksym;
extern void bpf_preempt_disable(void) __ksym;
extern void bpf_preempt_enable(void) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u16);
	__type(value, __u32);
} rcu_allow SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} rcu_count SEC(".maps");

SEC("xdp")
int kf_rcu(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 zero = 0, *ok;
	__u16 proto;
	__u64 *n;

	if ((void *)(eth + 1) > data_end)
		return XDP_ABORTED;
	proto = eth->h_proto;
	bpf_rcu_read_lock();
	ok = bpf_map_lookup_elem(&rcu_allow, &proto);
	int pass = ok && *ok;
	bpf_rcu_read_unlock();
	bpf_preempt_disable();
	n = bpf_map_lookup_elem(&rcu_count, &zero);
	if (n)
		*n += 1;
	bpf_preempt_enable();
	return pass ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
