//! Routing: `bpf_fib_lookup` (`bpf_xdp_fib_lookup`: the arguments checked as Linux 6.1 checks
//! them; a FIB the program does not own, so the symbolic executor takes any result the kernel
//! gives with fresh fields, and the interpreter, which has no FIB, finds forwarding disabled).

use crate::helpers::Helper;
use crate::interp::HELPER_FIB_LOOKUP;

/// The routing helpers.
pub(crate) const HELPERS: &[Helper] = &[Helper::new(HELPER_FIB_LOOKUP, "route")
    .writes()
    .run(|m, pc, id| m.fib_lookup(pc, id))
    .sym(|s, _, [_, r2, r3, _]| s.fib_lookup(&r2, &r3))];

/// The interpreter's side.
mod run {

    use crate::interp::*;

    impl Machine<'_> {
        /// bpf_xdp_fib_lookup(ctx, params, plen, flags): plen below the struct's 64 bytes
        /// -EINVAL, a family other than AF_INET/AF_INET6 -EAFNOSUPPORT (flags beyond
        /// DIRECT|OUTPUT -EINVAL, as 6.1 checks them); the interpreter has no FIB, so a lookup
        /// finds forwarding disabled (BPF_FIB_LKUP_RET_FWD_DISABLED) and writes nothing.
        /// symex.rs: any result in the kernel's range, fresh bytes in params.
        pub(crate) fn fib_lookup(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let err = |e: i64| (-e) as u64;

            self.ctx_arg(pc, id)?;
            let plen = self.regs[3] as u32 as i32;
            let params = self.read(pc, self.regs[2], plen.max(0) as usize)?;
            Ok(
                if (plen as i64) < FIB_LOOKUP_BYTES as i64 || self.regs[4] as u32 & !3 != 0 {
                    err(EINVAL)
                } else if !matches!(params[0], 2 | 10) {
                    err(EAFNOSUPPORT)
                } else {
                    FIB_LKUP_RET_FWD_DISABLED
                },
            )
        }
    }
}

/// The symbolic executor's side.
mod sym {

    use crate::insn::Size;
    use crate::interp::{EAFNOSUPPORT, EINVAL, ENODEV, FIB_LKUP_RET_MAX, FIB_LOOKUP_BYTES};

    use crate::symex::*;

    impl Sym<'_> {
        /// `bpf_xdp_fib_lookup(ctx, params, plen, flags)`: `plen` below 64 (the struct) gives
        /// -EINVAL and writes nothing; otherwise the result is any of the kernel's: a
        /// BPF_FIB_LKUP_RET_* (0 to 9), -EINVAL (flags), -ENODEV (no such ifindex) or
        /// -EAFNOSUPPORT (family), and the struct's 64 bytes are fresh (which fields a lookup
        /// writes depends on its result and the kernel's version: all of them may change).
        pub(crate) fn fib_lookup(&mut self, params: &V, plen: &V) -> V {
            let l = self.scalar(plen);
            let short = self.def(
                "Bool",
                &format!(
                    "(bvslt ((_ extract 31 0) {l}) ((_ extract 31 0) {}))",
                    bv64(FIB_LOOKUP_BYTES)
                ),
            );
            let x = self.fresh("(_ BitVec 64)", "fib");
            let c = |v: i64| bv64(v as u64);
            let ret = format!(
                "(ite {short} {einval} (ite (bvule {x} {max}) {x} (ite (= {x} {a}) {einval} \
             (ite (= {x} {b}) {} {}))))",
                c(-ENODEV),
                c(-EAFNOSUPPORT),
                einval = c(-EINVAL),
                max = bv64(FIB_LKUP_RET_MAX),
                a = bv64(FIB_LKUP_RET_MAX + 1),
                b = bv64(FIB_LKUP_RET_MAX + 2),
            );
            let ret = self.def("(_ BitVec 64)", &ret);
            for i in 0..FIB_LOOKUP_BYTES as i64 {
                let d = self.byte_at(params, i);
                let V::S(old) = self.load(&d, Size::B) else {
                    unreachable!("loads give scalars")
                };
                let new = self.fresh("(_ BitVec 8)", "fibp");
                let b = self.def(
                    "(_ BitVec 64)",
                    &format!("(ite {short} {old} ((_ zero_extend 56) {new}))"),
                );
                self.store(&d, Size::B, &V::S(b));
            }
            V::S(ret)
        }
    }
}
