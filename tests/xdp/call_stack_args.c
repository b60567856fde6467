/* Pointers to the caller's stack passed to bpf-to-bpf (noinline) functions: in r1 and in r3
 * and r5 of a five-argument call, down three levels of calls, spilled to the callee's own
 * stack and reloaded (a volatile local), a pointer to a struct on the caller's stack that
 * holds pointers to two more of its variables (a pointer to a pointer), and stores through
 * them: the callees write the caller's variables, whose values the caller then tests (the
 * analysis must not keep the values they had before the call). Every load and store here is
 * a stack access (or the context's or the packet's): none may cost as an unplaced pointer. */
#include "xdp_common.h"

struct st {
	__u32 a, b, c, d;
};

struct refs {
	struct st *s;
	__u32 *out;
};

static __noinline __u32 level3(struct st *p)
{
	struct st *volatile q = p; /* spilled to this frame's stack, reloaded */
	p->d = p->a ^ p->b;
	return q->a + q->b * q->c - q->d;
}

static __noinline __u32 level2(struct st *p, __u32 k)
{
	p->c += k;
	return level3(p) + p->c;
}

static __noinline __u32 level1(struct st *p)
{
	return level2(p, p->a & 7);
}

static __noinline int five(__u32 x, __u32 y, __u32 *flag, __u32 z, struct st *s)
{
	if (s->a == x + y + z)
		*flag = 1;
	s->b = s->b + x;
	return 0;
}

static __noinline void through(struct refs *r)
{
	struct st *s = r->s;
	*r->out = s->a + s->d;
	s->c = s->a | 1;
}

SEC("xdp")
int call_stack_args(struct xdp_md *ctx)
{
	unsigned char *p = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (p + 4 > end)
		return XDP_PASS;
	struct st s = { p[0], p[1], 3, 4 };
	__u32 flag = 0, out = 0;
	__u32 v = level1(&s);
	five(p[2], p[3], &flag, v & 1, &s);
	struct refs r = { &s, &out };
	through(&r);
	/* flag was 0 before the call: the callee may have set it. */
	if (flag)
		return out & 1 ? XDP_DROP : XDP_TX;
	return (v + s.b + s.c + out) & 1 ? XDP_DROP : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
