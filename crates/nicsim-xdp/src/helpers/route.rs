//! Routing: `bpf_fib_lookup` (`bpf_xdp_fib_lookup`: the arguments checked as Linux 6.1 checks
//! them; a FIB the program does not own, so the symbolic executor takes any result the kernel
//! gives with fresh fields, and the interpreter, which has no FIB, finds forwarding disabled)
//! and `bpf_check_mtu` (`bpf_xdp_check_mtu`: flags other than 0 -EINVAL, an ifindex naming no
//! device -ENODEV, else `BPF_MTU_CHK_RET_SUCCESS` or `_FRAG_NEEDED` with the device's MTU
//! written to `*mtu_len`; the devices are not the program's, so the symbolic executor takes
//! any of those results and a fresh MTU, and the interpreter knows one device, the one the
//! packet arrived on, the loopback device `BPF_PROG_TEST_RUN` runs on: MTU 65,536, a
//! 14-byte header).

use crate::helpers::{Helper, WriteLen};
use crate::interp::HELPER_FIB_LOOKUP;

/// `bpf_check_mtu(ctx, ifindex, *mtu_len, len_diff, flags)`.
pub(crate) const HELPER_CHECK_MTU: u32 = 163;
/// The interpreter's device (the loopback device): MTU and `hard_header_len`.
const RUN_MTU: u64 = 65_536;
const RUN_HARD_HEADER: i64 = 14;

/// The routing helpers.
pub(crate) const HELPERS: &[Helper] = &[
    Helper::new(HELPER_FIB_LOOKUP, "route")
        .writes_only(&[(2, WriteLen::Arg(3))])
        .run(|m, pc, id| m.fib_lookup(pc, id))
        .sym(|s, _, [_, r2, r3, _]| s.fib_lookup(&r2, &r3)),
    Helper::new(HELPER_CHECK_MTU, "route")
        .writes_only(&[(3, WriteLen::Bytes(4))])
        .run(|m, pc, id| m.check_mtu(pc, id))
        .sym(|s, _, [_, _, r3, _]| s.check_mtu(&r3)),
];

/// The interpreter's side.
mod run {
    use super::{RUN_HARD_HEADER, RUN_MTU};
    use crate::insn::Size;

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

        /// `bpf_check_mtu(ctx, ifindex, mtu_len, len_diff, flags)` on the one device the
        /// interpreter knows (the module comment).
        pub(crate) fn check_mtu(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            self.ctx_arg(pc, id)?;
            let (ifindex, mtu_len) = (self.regs[2] as u32, self.regs[3]);
            let (len_diff, flags) = (self.regs[4] as u32 as i32 as i64, self.regs[5]);
            // The verifier checks mtu_len points to 4 writable bytes whatever the result.
            self.place(pc, mtu_len, 4, Access::Store)?;
            if flags != 0 {
                return Ok((-EINVAL) as u64);
            }
            if ifindex != 0 && ifindex != self.opts.ingress_ifindex {
                return Ok((-ENODEV) as u64);
            }
            let asked = self.load(pc, mtu_len, Size::W, Access::HelperRead)? as i64;
            let mut len = if asked != 0 {
                asked + RUN_HARD_HEADER
            } else {
                (self.data_end - self.data) as i64
            };
            len += len_diff;
            self.store(pc, mtu_len, Size::W, RUN_MTU, Access::Store)?;
            Ok(u64::from(len > RUN_MTU as i64 + RUN_HARD_HEADER))
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

        /// `bpf_check_mtu(ctx, ifindex, mtu_len, len_diff, flags)`: flags other than 0 give
        /// -EINVAL and write nothing; else any of 0 (fits), 1 (`BPF_MTU_CHK_RET_FRAG_NEEDED`)
        /// and -ENODEV, the device's MTU (fresh) written to `*mtu_len` unless -ENODEV.
        pub(crate) fn check_mtu(&mut self, mtu_len: &V) -> V {
            let f = self.reg(5);
            let f = self.scalar(&f);
            let x = self.fresh("(_ BitVec 64)", "mtu");
            let c = |v: i64| bv64(v as u64);
            let ret = format!(
                "(ite (not (= {f} {z})) {einval} (ite (bvule {x} {one}) {x} {enodev}))",
                z = c(0),
                one = c(1),
                einval = c(-EINVAL),
                enodev = c(-ENODEV),
            );
            let ret = self.def("(_ BitVec 64)", &ret);
            let wrote = self.def("Bool", &format!("(bvule {ret} {})", c(1)));
            for i in 0..4 {
                let d = self.byte_at(mtu_len, i);
                let V::S(old) = self.load(&d, Size::B) else {
                    unreachable!("loads give scalars")
                };
                let new = self.fresh("(_ BitVec 8)", "mtub");
                let b = self.def(
                    "(_ BitVec 64)",
                    &format!("(ite {wrote} ((_ zero_extend 56) {new}) {old})"),
                );
                self.store(&d, Size::B, &V::S(b));
            }
            V::S(ret)
        }
    }
}
