//! The open-coded number iterator (`bpf_iter_num_new`, `_next`, `_destroy`: libbpf's `bpf_for`
//! and `bpf_repeat`), as kernel/bpf/bpf_iter.c runs it (Linux 6.4+), for the interpreter, the
//! symbolic executor and the abstract values that bound its loop (docs/xdp.md, "kfuncs: open-
//! coded number iterators").
//!
//! The iterator is 8 bytes of the program's stack (`struct bpf_iter_num`, in the kernel
//! `struct bpf_iter_num_kern { int cur; int end; }`): `new(it, start, end)` gives -EINVAL when
//! start > end and -E2BIG when end - start > `BPF_MAX_LOOPS` (2^23), both leaving cur = end =
//! 0, else 0 with cur = start - 1 and end; `next(it)` gives NULL (cur = end = 0) when
//! `(s64)(cur + 1) >= end`, else `&cur` after `cur++`; `destroy(it)` zeroes both. So `next`
//! gives a non-NULL pointer exactly max(0, end - start) times when `new` succeeded, at most
//! 2^23 times: the bound of the loop that calls it ([`absint_step`]).

use crate::absint::{Iv, State, Val, BPF_MAX_LOOPS};

/// The three kfuncs.
pub(crate) const NEW: &str = "bpf_iter_num_new";
pub(crate) const NEXT: &str = "bpf_iter_num_next";
pub(crate) const DESTROY: &str = "bpf_iter_num_destroy";

/// Whether `name` is one of them.
pub(crate) fn is_iter_num(name: &str) -> bool {
    matches!(name, NEW | NEXT | DESTROY)
}

/// The signed 32-bit range of the low half of `v` (an `int` argument), as (lo, hi).
fn int_range(v: Val) -> (i64, i64) {
    let full = (i32::MIN as i64, i32::MAX as i64);
    let Val::Scalar(iv) = v else { return full };
    let iv = iv.low32();
    if iv.hi <= i32::MAX as u64 {
        (iv.lo as i64, iv.hi as i64)
    } else if iv.lo > i32::MAX as u64 && iv.hi <= u32::MAX as u64 {
        (iv.lo as i64 - (1 << 32), iv.hi as i64 - (1 << 32))
    } else {
        full
    }
}

/// The abstract values after a call of iterator kfunc `name` from state `s` (before the call):
/// the iterator's two cells hold, in the upper one (`end`'s), how many more times `next` may
/// give a non-NULL pointer (a range), and in the lower one (`cur`'s) the numbers `next`'s
/// pointer may read, [start, end - 1] (unknown when start may be negative);
/// `next` gives NULL (0) when none remain, else the pointer to `cur` (a stack pointer, which
/// the abstract values do not take for non-NULL: a test of it against NULL may go either way,
/// so the exit is kept, and the loads through it cost as the stack's). The program cannot read or write the iterator's slots itself (the verifier's
/// `STACK_ITER`), so the encoding is not data the program sees. An iterator whose place is not
/// a known stack offset makes the whole stack unknown. r1–r5 are clobbered, as by any call.
pub(crate) fn absint_step(s: &State, name: &str) -> State {
    let mut t = s.clone();
    for r in 0..=5 {
        t.regs[r] = Val::Top;
    }
    let slot = match s.regs[1] {
        Val::Fp(0, Some(off)) => {
            crate::absint::cell_of(off as i64).filter(|&k| k + 1 < crate::absint::SLOTS)
        }
        _ => None,
    };
    let Some(k) = slot else {
        t.forget_stacks();
        return t;
    };
    let max = BPF_MAX_LOOPS;
    match name {
        NEW => {
            let (slo, shi) = int_range(s.regs[2]);
            let (elo, ehi) = int_range(s.regs[3]);
            let hi = (ehi - slo).clamp(0, max as i64) as u64;
            let lo = if ehi - slo <= max as i64 {
                (elo - shi).max(0) as u64
            } else {
                0
            };
            // `cur`'s cell: what `next`'s pointer reads, a number in [start, end - 1] (when
            // start cannot be negative; the program reads `cur` only through that pointer).
            t.stack[k] = if slo >= 0 && ehi >= 1 {
                Val::Scalar(Iv {
                    lo: slo as u64,
                    hi: (ehi - 1).max(slo) as u64,
                })
            } else {
                Val::Top
            };
            t.stack[k + 1] = Val::Scalar(Iv { lo: lo.min(hi), hi });
        }
        NEXT => {
            let rem = match s.stack[k + 1] {
                Val::Scalar(iv) if iv.hi <= max => iv,
                _ => Iv { lo: 0, hi: max },
            };
            t.regs[0] = if rem.hi == 0 {
                Val::Scalar(Iv::c(0))
            } else {
                s.regs[1]
            };
            t.stack[k + 1] = Val::Scalar(Iv {
                lo: rem.lo.saturating_sub(1),
                hi: rem.hi.saturating_sub(1),
            });
        }
        _ => {
            t.stack[k] = Val::Scalar(Iv::c(0));
            t.stack[k + 1] = Val::Scalar(Iv::c(0));
        }
    }
    t
}

/// The most times `bpf_iter_num_next` may still give a pointer, in state `s` before a call
/// of it (r1 the iterator), if the abstract values say.
pub(crate) fn count_at(s: &State) -> Option<u64> {
    let Val::Fp(0, Some(off)) = s.regs[1] else {
        return None;
    };
    let k = crate::absint::cell_of(off as i64).filter(|&k| k + 1 < crate::absint::SLOTS)?;
    match s.stack[k + 1] {
        Val::Scalar(iv) if iv.hi <= BPF_MAX_LOOPS => Some(iv.hi),
        _ => None,
    }
}

/// The interpreter's side.
mod run {
    use super::{DESTROY, NEW, NEXT};
    use crate::absint::BPF_MAX_LOOPS;
    use crate::insn::Size;
    use crate::interp::*;

    impl Machine<'_> {
        /// `bpf_iter_num_new/next/destroy` on the iterator r1 points to (8 bytes of the
        /// stack), as kernel/bpf/bpf_iter.c.
        pub(crate) fn iter_num(&mut self, pc: u32, name: &str) -> Result<u64, Fault> {
            let it = self.regs[1];
            if !matches!(self.region_of(it), (Region::Stack { .. }, _)) {
                return Err(invalid(
                    pc,
                    format!("kfunc {name}: r1 is not an iterator on the stack"),
                ));
            }
            let set = |m: &mut Self, cur: i32, end: i32| -> Result<(), Fault> {
                m.store(pc, it, Size::W, cur as u32 as u64, Access::Store)?;
                m.store(pc, it + 4, Size::W, end as u32 as u64, Access::Store)
            };
            match name {
                NEW => {
                    let (start, end) = (self.regs[2] as u32 as i32, self.regs[3] as u32 as i32);
                    if start > end {
                        set(self, 0, 0)?;
                        Ok((-EINVAL) as u32 as u64)
                    } else if end as i64 - start as i64 > BPF_MAX_LOOPS as i64 {
                        set(self, 0, 0)?;
                        Ok((-E2BIG) as u32 as u64)
                    } else {
                        set(self, start.wrapping_sub(1), end)?;
                        Ok(0)
                    }
                }
                NEXT => {
                    let cur = self.load(pc, it, Size::W, Access::HelperRead)? as u32 as i32;
                    let end = self.load(pc, it + 4, Size::W, Access::HelperRead)? as u32 as i32;
                    if cur.wrapping_add(1) as i64 >= end as i64 {
                        set(self, 0, 0)?;
                        Ok(0)
                    } else {
                        set(self, cur.wrapping_add(1), end)?;
                        Ok(it)
                    }
                }
                DESTROY => {
                    set(self, 0, 0)?;
                    Ok(0)
                }
                _ => unreachable!("an iterator kfunc"),
            }
        }
    }
}

/// The symbolic executor's side.
mod sym {
    use super::{DESTROY, NEW, NEXT};
    use crate::absint::BPF_MAX_LOOPS;
    use crate::insn::Size;
    use crate::interp::{E2BIG, EINVAL};
    use crate::symex::*;

    impl Sym<'_> {
        /// `bpf_iter_num_new/next/destroy`: the iterator's 8 bytes on the stack hold `cur` and
        /// `end` exactly as the kernel keeps them, so `next`'s NULL is exactly the kernel's
        /// condition, and the pointer it gives is `&cur` on the stack (`Region::StackOrNull`,
        /// whose null condition is that one), so the loop's index is the kernel's. An `int`
        /// result's upper 32 bits are fresh (the verifier reads only the low half). r1–r5 are
        /// clobbered.
        pub(crate) fn iter_num(&mut self, name: &str) -> V {
            let it = self.reg(1);
            let r0 = if !matches!(it, V::P(Region::Stack(_), _, Some(_))) {
                // Not an iterator at a known stack place (the verifier refuses that): unknown.
                self.havoc(&it);
                self.fresh64("itn")
            } else {
                let hi = self.fresh("(_ BitVec 32)", "ithi");
                let end_at = self.byte_at(&it, 4);
                let z32 = "#x00000000";
                match name {
                    NEW => {
                        let s = format!("((_ extract 31 0) {})", self.scalar(&self.reg(2)));
                        let e = format!("((_ extract 31 0) {})", self.scalar(&self.reg(3)));
                        let inval = self.def("Bool", &format!("(bvsgt {s} {e})"));
                        let big = self.def(
                            "Bool",
                            &format!(
                                "(bvsgt (bvsub ((_ sign_extend 32) {e}) ((_ sign_extend 32) {s})) \
                                 {})",
                                bv64(BPF_MAX_LOOPS)
                            ),
                        );
                        let ok = format!("(and (not {inval}) (not {big}))");
                        let cur = self.def(
                            "(_ BitVec 64)",
                            &format!(
                                "((_ zero_extend 32) (ite {ok} (bvsub {s} #x00000001) {z32}))"
                            ),
                        );
                        let end = self.def(
                            "(_ BitVec 64)",
                            &format!("((_ zero_extend 32) (ite {ok} {e} {z32}))"),
                        );
                        self.store(&it, Size::W, &V::S(cur));
                        self.store(&end_at, Size::W, &V::S(end));
                        let lo = format!(
                            "(ite {inval} ((_ extract 31 0) {}) (ite {big} ((_ extract 31 0) {}) {z32}))",
                            bv64((-EINVAL) as u64),
                            bv64((-E2BIG) as u64)
                        );
                        V::S(self.def("(_ BitVec 64)", &format!("(concat {hi} {lo})")))
                    }
                    NEXT => {
                        let V::S(c) = self.load(&it, Size::W) else {
                            unreachable!("loads give scalars")
                        };
                        let V::S(e) = self.load(&end_at, Size::W) else {
                            unreachable!("loads give scalars")
                        };
                        let (c, e) = (
                            format!("((_ extract 31 0) {c})"),
                            format!("((_ extract 31 0) {e})"),
                        );
                        let next = format!("(bvadd {c} #x00000001)");
                        let done = self.def("Bool", &format!("(bvsge {next} {e})"));
                        let cur = self.def(
                            "(_ BitVec 64)",
                            &format!("((_ zero_extend 32) (ite {done} {z32} {next}))"),
                        );
                        let end = self.def(
                            "(_ BitVec 64)",
                            &format!("((_ zero_extend 32) (ite {done} {z32} {e}))"),
                        );
                        self.store(&it, Size::W, &V::S(cur));
                        self.store(&end_at, Size::W, &V::S(end));
                        match it {
                            V::P(Region::Stack(frame), off, k) => {
                                V::P(Region::StackOrNull { frame, null: done }, off, k)
                            }
                            _ => unreachable!("checked: a stack pointer"),
                        }
                    }
                    DESTROY => {
                        let z = V::S(bv64(0));
                        self.store(&it, Size::W, &z);
                        self.store(&end_at, Size::W, &z);
                        self.fresh64("itd")
                    }
                    _ => unreachable!("an iterator kfunc"),
                }
            };
            for r in 1..=5 {
                let v = self.fresh64("clob");
                self.set(r, v);
            }
            r0
        }
    }
}
