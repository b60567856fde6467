/* A multi-program dispatcher written to libxdp's convention (xdp-tools'
 * lib/libxdp/xdp-dispatcher.c.in, not a copy of it): a `.rodata` configuration `conf` of type
 * `struct xdp_dispatcher_config` that the loader fills before loading (volatile const), and
 * stub functions prog0..prog3 (global, noinline) that the loader replaces with the component
 * programs (freplace). A component's return value ends the run unless its bit is set in its
 * chain_call_actions. `nicsim xdp analyze disp_mini.o --dispatch disp_comp_a.o,disp_comp_b.o`
 * analyses it with the two components attached (docs/xdp.md, "libxdp's dispatcher";
 * tests/test_xdp_chains.py). */
#include "xdp_common.h"

#define MAX_DISPATCHER_ACTIONS 4
#define XDP_DISPATCHER_RETVAL 31

struct xdp_dispatcher_config {
	__u8 magic;
	__u8 dispatcher_version;
	__u8 num_progs_enabled;
	__u8 is_xdp_frags;
	__u32 chain_call_actions[MAX_DISPATCHER_ACTIONS];
	__u32 run_prios[MAX_DISPATCHER_ACTIONS];
	__u32 program_flags[MAX_DISPATCHER_ACTIONS];
};

static volatile const struct xdp_dispatcher_config conf = {};

#define STUB(n)                                              \
	__attribute__((noinline)) int prog##n(struct xdp_md *ctx) \
	{                                                         \
		volatile int ret = XDP_DISPATCHER_RETVAL;         \
		if (!ctx)                                         \
			return XDP_ABORTED;                       \
		return ret;                                       \
	}
STUB(0)
STUB(1)
STUB(2)
STUB(3)

#define CALL(n)                                              \
	if (num < n + 1)                                      \
		goto out;                                     \
	ret = prog##n(ctx);                                   \
	if (!((1U << ret) & conf.chain_call_actions[n]))      \
		return ret;

SEC("xdp")
int disp_mini(struct xdp_md *ctx)
{
	__u8 num = conf.num_progs_enabled;
	int ret;
	CALL(0)
	CALL(1)
	CALL(2)
	CALL(3)
out:
	return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
