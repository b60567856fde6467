/* Walks a TCP SYN's options (at most 8) with bpf_loop: the callback gets its state through a
 * struct on the caller's stack (the option pointer, data_end and the MSS found), bounds-checks
 * each option against data_end and stops the loop (returns 1) at the end of the options. The
 * MSS seen is counted in a hash map. The analysis unrolls the call as a loop of at most 8
 * callback calls (nr_loops is the constant 8); the callback's frame is fresh and its r2 points
 * into the caller's stack. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} mss_seen SEC(".maps");

struct walk {
	unsigned char *opt;
	void *end;
	__u32 mss;
	__u32 seen;
};

static long walk_option(__u32 i, void *data)
{
	struct walk *w = data;
	unsigned char *opt = w->opt;
	if ((void *)(opt + 1) > w->end)
		return 1;
	unsigned char kind = opt[0];
	if (kind == 0)
		return 1;
	w->seen = i + 1;
	if (kind == 1) {
		w->opt = opt + 1;
		return 0;
	}
	if ((void *)(opt + 2) > w->end)
		return 1;
	unsigned char len = opt[1];
	if (len < 2)
		return 1;
	if (kind == 2 && len == 4) {
		if ((void *)(opt + 4) > w->end)
			return 1;
		w->mss = (opt[2] << 8) | opt[3];
	}
	w->opt = opt + len;
	return 0;
}

SEC("xdp")
int loop_callback(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_TCP)
		return XDP_PASS;
	struct tcphdr *tcp = (void *)(ip + 1);
	if ((void *)(tcp + 1) > end || !tcp->syn)
		return XDP_PASS;
	struct walk w = { .opt = (void *)(tcp + 1), .end = end, .mss = 0, .seen = 0 };
	long n = bpf_loop(8, walk_option, &w, 0);
	if (n < 0)
		return XDP_ABORTED;
	if (!w.mss)
		return XDP_PASS;
	__u32 key = w.mss;
	__u64 one = 1, *cnt = bpf_map_lookup_elem(&mss_seen, &key);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
	else
		bpf_map_update_elem(&mss_seen, &key, &one, BPF_ANY);
	return XDP_DROP;
}
char LICENSE[] SEC("license") = "GPL";
