//! Dynamic pointers on XDP's packet (`bpf_dynptr_from_xdp`, `bpf_dynptr_slice`,
//! `bpf_dynptr_slice_rdwr`) and the generic dynptr kfuncs that only read or reshape one
//! (`bpf_dynptr_adjust`, `_is_null`, `_is_rdonly`, `_size`, `_clone`), as net/core/filter.c
//! and kernel/bpf/helpers.c (Linux 6.18) run them, for the interpreter, the symbolic executor
//! and the abstract values (docs/xdp.md, "kfuncs: dynptrs").
//!
//! A dynptr is 16 bytes of the program's stack (`struct bpf_dynptr_kern { void *data; u32
//! size; u32 offset; }`, the size's top bits its type, XDP = 4, and read-only bit); the program
//! cannot read or write them itself (the verifier's `STACK_DYNPTR`), so they hold here: bytes
//! 0–7 1 (a dynptr to the packet) or 0 (NULL), bytes 8–11 the size with its type bits, bytes
//! 12–15 the offset from `xdp->data`. The analysis takes a linear packet (no fragments), so
//! a slice inside the dynptr is always a pointer into the packet (`bpf_xdp_pointer`), never a
//! copy into the buffer. A program that also moves the packet (`xdp_adjust_head`/`_tail`/
//! `_meta`) is refused (a slice after the move may be the buffer's copy): [`refusal`].

use crate::absint::{State, Val};

pub(crate) const FROM_XDP: &str = "bpf_dynptr_from_xdp";
pub(crate) const SLICE: &str = "bpf_dynptr_slice";
pub(crate) const SLICE_RDWR: &str = "bpf_dynptr_slice_rdwr";
pub(crate) const ADJUST: &str = "bpf_dynptr_adjust";
pub(crate) const IS_NULL: &str = "bpf_dynptr_is_null";
pub(crate) const IS_RDONLY: &str = "bpf_dynptr_is_rdonly";
pub(crate) const SIZE: &str = "bpf_dynptr_size";
pub(crate) const CLONE: &str = "bpf_dynptr_clone";

/// Every dynptr kfunc modelled here.
pub(crate) const ALL: [&str; 8] = [
    FROM_XDP, SLICE, SLICE_RDWR, ADJUST, IS_NULL, IS_RDONLY, SIZE, CLONE,
];

/// `BPF_DYNPTR_TYPE_XDP << DYNPTR_TYPE_SHIFT`, `DYNPTR_SIZE_MASK`, `DYNPTR_RDONLY_BIT`.
pub(crate) const XDP_TYPE_BITS: u32 = 4 << 28;
pub(crate) const SIZE_MASK: u32 = 0xff_ffff;
pub(crate) const RDONLY_BIT: u32 = 1 << 31;
/// ERANGE (`bpf_dynptr_adjust` past the size).
pub(crate) const ERANGE: i64 = 34;

/// Whether `name` is one of them.
pub(crate) fn is_dynptr(name: &str) -> bool {
    ALL.contains(&name)
}

/// Why a program calling dynptr kfunc `name` is refused, if it is: it also calls a helper
/// that moves the packet.
pub(crate) fn refusal(p: &crate::load::Program, name: &str) -> Option<String> {
    if !is_dynptr(name) {
        return None;
    }
    let mover = p.code.iter().flatten().find_map(|i| match i {
        crate::insn::Insn::Call { helper } if crate::helpers::moves_packet(*helper) => {
            Some(*helper)
        }
        _ => None,
    })?;
    Some(format!(
        "kfunc {name} is not supported in a program that also calls {}: a dynptr slice after \
         the packet moved may be a copy into the buffer, which the analysis does not model",
        crate::helpers::names::helper_name(mover)
    ))
}

/// The stack cells of the 16 bytes at `v` (a known stack offset), if they are whole cells.
fn cells(v: Val) -> Option<std::ops::Range<usize>> {
    let Val::Fp(0, Some(off)) = v else {
        return None;
    };
    let k = crate::absint::cell_of(off as i64)?;
    (k + 4 <= crate::absint::SLOTS).then_some(k..k + 4)
}

/// The abstract values after dynptr kfunc `name` from state `s` (before the call): the
/// dynptr it writes (`from_xdp`'s r3, `clone`'s r2, `adjust`'s r1) unknown, or the whole stack
/// if its place is not known; a slice is a pointer into the packet at an unknown offset (its
/// loads cost as the packet's; a test of it against NULL may go either way); r0–r5 otherwise
/// unknown.
pub(crate) fn absint_step(s: &State, name: &str) -> State {
    let mut t = s.clone();
    t.regs[..=5].fill(Val::Top);
    let written = match name {
        FROM_XDP => Some(s.regs[3]),
        CLONE => Some(s.regs[2]),
        ADJUST => Some(s.regs[1]),
        _ => None,
    };
    if let Some(v) = written {
        match cells(v) {
            Some(r) => t.stack[r].fill(Val::Top),
            None => t.forget_stacks(),
        }
    }
    if matches!(name, SLICE | SLICE_RDWR) {
        t.regs[0] = Val::Pkt(crate::absint::Iv::TOP);
    }
    t
}

/// The interpreter's side.
mod run {
    use super::*;
    use crate::insn::Size;
    use crate::interp::*;

    impl Machine<'_> {
        /// The dynptr kfunc `name` (its arguments in r1–r4).
        pub(crate) fn dynptr(&mut self, pc: u32, name: &str) -> Result<u64, Fault> {
            let on_stack = |m: &Self, r: usize| -> Result<u64, Fault> {
                let v = m.regs[r];
                match m.region_of(v) {
                    (Region::Stack { .. }, _) => Ok(v),
                    _ => Err(invalid(
                        pc,
                        format!("kfunc {name}: r{r} is not a dynptr on the stack"),
                    )),
                }
            };
            let read = |m: &Self, at: u64| -> Result<(u64, u32, u32), Fault> {
                Ok((
                    m.load(pc, at, Size::DW, Access::HelperRead)?,
                    m.load(pc, at + 8, Size::W, Access::HelperRead)? as u32,
                    m.load(pc, at + 12, Size::W, Access::HelperRead)? as u32,
                ))
            };
            let write = |m: &mut Self, at: u64, d: (u64, u32, u32)| -> Result<(), Fault> {
                m.store(pc, at, Size::DW, d.0, Access::Store)?;
                m.store(pc, at + 8, Size::W, d.1 as u64, Access::Store)?;
                m.store(pc, at + 12, Size::W, d.2 as u64, Access::Store)
            };
            let int = |e: i64| e as u32 as u64;
            match name {
                FROM_XDP => {
                    if !matches!(self.region_of(self.regs[1]), (Region::Ctx, 0)) {
                        return Err(invalid(pc, format!("kfunc {name}: r1 is not the context")));
                    }
                    let at = on_stack(self, 3)?;
                    if self.regs[2] != 0 {
                        write(self, at, (0, 0, 0))?;
                        return Ok(int(-EINVAL));
                    }
                    let len = (self.packet_len() as u32) & SIZE_MASK;
                    write(self, at, (1, len | XDP_TYPE_BITS, 0))?;
                    Ok(0)
                }
                SLICE | SLICE_RDWR => {
                    let at = on_stack(self, 1)?;
                    let (data, size, doff) = read(self, at)?;
                    let (off, len) = (self.regs[2] as u32, self.regs[4] as u32);
                    if data == 0 || (name == SLICE_RDWR && size & RDONLY_BIT != 0) {
                        return Ok(0);
                    }
                    let sz = size & SIZE_MASK;
                    if len > sz || off > sz - len {
                        return Ok(0);
                    }
                    // bpf_xdp_pointer: inside the linear packet as it is now.
                    let start = doff as u64 + off as u64;
                    if start + len as u64 > self.packet_len() as u64 {
                        return Err(invalid(
                            pc,
                            format!(
                                "kfunc {name}: a slice past the packet's current end (the \
                                 packet moved after the dynptr was made) is not modelled"
                            ),
                        ));
                    }
                    Ok(self.packet_ptr(start as i64))
                }
                ADJUST => {
                    let at = on_stack(self, 1)?;
                    let (data, size, doff) = read(self, at)?;
                    let (start, end) = (self.regs[2] as u32, self.regs[3] as u32);
                    if data == 0 || start > end {
                        return Ok(int(-EINVAL));
                    }
                    let sz = size & SIZE_MASK;
                    if start > sz || end > sz {
                        return Ok(int(-ERANGE));
                    }
                    let size = (end - start) | (size & !SIZE_MASK);
                    write(self, at, (data, size, doff.wrapping_add(start)))?;
                    Ok(0)
                }
                IS_NULL => {
                    let at = on_stack(self, 1)?;
                    Ok((read(self, at)?.0 == 0) as u64)
                }
                IS_RDONLY => {
                    let at = on_stack(self, 1)?;
                    let (data, size, _) = read(self, at)?;
                    Ok((data != 0 && size & RDONLY_BIT != 0) as u64)
                }
                SIZE => {
                    let at = on_stack(self, 1)?;
                    let (data, size, _) = read(self, at)?;
                    Ok(if data == 0 {
                        int(-EINVAL)
                    } else {
                        (size & SIZE_MASK) as u64
                    })
                }
                CLONE => {
                    let (at, to) = (on_stack(self, 1)?, on_stack(self, 2)?);
                    let d = read(self, at)?;
                    // A NULL dynptr's bytes are all 0: its clone is set NULL (zeroed) too.
                    write(self, to, d)?;
                    Ok(if d.0 == 0 { int(-EINVAL) } else { 0 })
                }
                _ => unreachable!("a dynptr kfunc"),
            }
        }
    }
}

/// The symbolic executor's side.
mod sym {
    use super::*;
    use crate::insn::Size;
    use crate::interp::EINVAL;
    use crate::symex::*;

    /// The low 32 bits of a 64-bit term.
    fn lo32(t: &str) -> String {
        format!("((_ extract 31 0) {t})")
    }

    impl Sym<'_> {
        /// The dynptr at `at`: (data, size field, offset) as 64-bit, 32-bit, 32-bit terms.
        fn dynptr_read(&mut self, at: &V) -> (String, String, String) {
            let s_at = self.byte_at(at, 8);
            let o_at = self.byte_at(at, 12);
            let V::S(d) = self.load(at, Size::DW) else {
                unreachable!("loads give scalars")
            };
            let V::S(s) = self.load(&s_at, Size::W) else {
                unreachable!("loads give scalars")
            };
            let V::S(o) = self.load(&o_at, Size::W) else {
                unreachable!("loads give scalars")
            };
            (d, lo32(&s), lo32(&o))
        }

        fn dynptr_write(&mut self, at: &V, d: &str, s: &str, o: &str) {
            let s_at = self.byte_at(at, 8);
            let o_at = self.byte_at(at, 12);
            self.store(at, Size::DW, &V::S(d.to_string()));
            let s = self.def("(_ BitVec 64)", &format!("((_ zero_extend 32) {s})"));
            let o = self.def("(_ BitVec 64)", &format!("((_ zero_extend 32) {o})"));
            self.store(&s_at, Size::W, &V::S(s));
            self.store(&o_at, Size::W, &V::S(o));
        }

        /// A result of `bits` bits (an `int`, `u32` or `bool`): the term `low`, the register's
        /// upper bits fresh (the verifier reads only the low ones).
        fn narrow_result(&mut self, bits: u32, low: &str) -> V {
            let hi = self.fresh(&format!("(_ BitVec {})", 64 - bits), "dph");
            V::S(self.def("(_ BitVec 64)", &format!("(concat {hi} {low})")))
        }

        /// The dynptr kfunc `name`, as the kernel runs it on the dynptr's bytes (module
        /// comment); r1–r5 clobbered.
        pub(crate) fn dynptr(&mut self, name: &str) -> V {
            let arg = |s: &Self, r: u8| s.reg(r);
            let stack = |v: &V| matches!(v, V::P(Region::Stack(_), _, Some(_)));
            let einval = format!("((_ extract 31 0) {})", bv64((-EINVAL) as u64));
            let z32 = "#x00000000".to_string();
            let mask = format!("#x{SIZE_MASK:08x}");
            let at = match name {
                FROM_XDP => arg(self, 3),
                _ => arg(self, 1),
            };
            let r0 = if !stack(&at) || (name == CLONE && !stack(&arg(self, 2))) {
                // Not a dynptr at a known stack place (the verifier refuses that).
                self.havoc(&at);
                self.fresh64("dpx")
            } else {
                match name {
                    FROM_XDP => {
                        let f = self.scalar(&arg(self, 2));
                        let ok = self.def("Bool", &format!("(= {f} {})", bv64(0)));
                        let len = self.def(
                            "(_ BitVec 32)",
                            &format!(
                                "((_ extract 31 0) (bvsub {} {}))",
                                self.end_off, self.data_off
                            ),
                        );
                        let d = format!("(ite {ok} {} {})", bv64(1), bv64(0));
                        let s = format!(
                            "(ite {ok} (bvor (bvand {len} {mask}) #x{XDP_TYPE_BITS:08x}) {z32})"
                        );
                        self.dynptr_write(&at, &d, &s, &z32);
                        let low = format!("(ite {ok} {z32} {einval})");
                        self.narrow_result(32, &low)
                    }
                    SLICE | SLICE_RDWR => {
                        let (d, s, o) = self.dynptr_read(&at);
                        let off = lo32(&self.scalar(&arg(self, 2)));
                        let len = lo32(&self.scalar(&arg(self, 4)));
                        let sz = format!("(bvand {s} {mask})");
                        let rdonly = if name == SLICE_RDWR {
                            format!("(= ((_ extract 31 31) {s}) #b1)")
                        } else {
                            "false".into()
                        };
                        let null = self.def(
                            "Bool",
                            &format!(
                                "(or (= {d} {}) {rdonly} (bvugt {len} {sz}) \
                                 (bvugt {off} (bvsub {sz} {len})))",
                                bv64(0)
                            ),
                        );
                        let at = self.def(
                            "(_ BitVec 64)",
                            &format!(
                                "(bvadd {} ((_ zero_extend 32) {o}) ((_ zero_extend 32) {off}))",
                                self.data_off
                            ),
                        );
                        V::P(Region::Slice { null }, at, None)
                    }
                    ADJUST => {
                        let (d, s, o) = self.dynptr_read(&at);
                        let start = lo32(&self.scalar(&arg(self, 2)));
                        let end = lo32(&self.scalar(&arg(self, 3)));
                        let sz = format!("(bvand {s} {mask})");
                        let inval = self.def(
                            "Bool",
                            &format!("(or (= {d} {}) (bvugt {start} {end}))", bv64(0)),
                        );
                        let range = self.def(
                            "Bool",
                            &format!("(or (bvugt {start} {sz}) (bvugt {end} {sz}))"),
                        );
                        let ok = format!("(and (not {inval}) (not {range}))");
                        let s2 = format!(
                            "(ite {ok} (bvor (bvsub {end} {start}) (bvand {s} #x{:08x})) {s})",
                            !SIZE_MASK
                        );
                        let o2 = format!("(ite {ok} (bvadd {o} {start}) {o})");
                        self.dynptr_write(&at, &d, &s2, &o2);
                        let low = format!(
                            "(ite {inval} {einval} (ite {range} ((_ extract 31 0) {}) {z32}))",
                            bv64((-ERANGE) as u64)
                        );
                        self.narrow_result(32, &low)
                    }
                    IS_NULL => {
                        let (d, _, _) = self.dynptr_read(&at);
                        let low = format!("(ite (= {d} {}) #x01 #x00)", bv64(0));
                        self.narrow_result(8, &low)
                    }
                    IS_RDONLY => {
                        let (d, s, _) = self.dynptr_read(&at);
                        let low = format!(
                            "(ite (and (not (= {d} {})) (= ((_ extract 31 31) {s}) #b1)) #x01 #x00)",
                            bv64(0)
                        );
                        self.narrow_result(8, &low)
                    }
                    SIZE => {
                        let (d, s, _) = self.dynptr_read(&at);
                        let low = format!("(ite (= {d} {}) {einval} (bvand {s} {mask}))", bv64(0));
                        self.narrow_result(32, &low)
                    }
                    CLONE => {
                        let to = arg(self, 2);
                        let (d, s, o) = self.dynptr_read(&at);
                        self.dynptr_write(&to, &d, &s, &o);
                        let low = format!("(ite (= {d} {}) {einval} {z32})", bv64(0));
                        self.narrow_result(32, &low)
                    }
                    _ => unreachable!("a dynptr kfunc"),
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
