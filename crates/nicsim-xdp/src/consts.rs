//! Path-sensitive constants, and the graph split by them.
//!
//! Programs keep facts in registers and stack slots that a later branch tests: a parser's
//! "this header is valid" flags are 0 or 1 along any one path, and a deparser tests them long
//! after. The abstract interpretation joins over paths and cannot decide those branches; the
//! SMT solver can, but one whole path at a time, and the ordered enumeration would first list,
//! at the node of a late branch, exponentially many cheaper-to-reach prefixes that differ only
//! in independent choices, before one that agrees with the branch. So the graph is split by
//! constants before the enumeration ([`split`]): its nodes become (node, what is constant
//! there), built forward from the entry, and a branch edge that the constants decide the other
//! way is left out. Constants differ only where paths set different ones, so the split graph
//! stays small (and when it would not, the analysis goes on with the graph as it was); every
//! path in it agrees with its own constants, and its paths are the original graph's paths
//! that do.
//!
//! Sound by construction: a register or tracked stack slot is a constant only when every
//! execution of the prefix gives it that value; whatever is not understood (loads from memory,
//! helper results, bpf-to-bpf calls, stores through pointers that may reach the stack) makes
//! it unknown, and an unknown never decides a branch. The stack is tracked in the 8-byte slots
//! the program spills registers to (at constant offsets from r10, as the abstract
//! interpretation sees them).

use crate::absint::{State, Val};
use crate::cfg::EdgeKind;
use crate::cost::Dag;
use crate::insn::{alu, endian, imm_value, jmp_taken, AluOp, Insn, JmpOp, Size, Src};
use crate::load::Program;

/// Tracked locations: registers r0..=r10, then stack slots.
const W: usize = 32;
const REGS: usize = 11;
const ALL: u32 = u32::MAX;
const SLOT_BITS: u32 = !((1u32 << REGS) - 1);

/// What is known at the end of one prefix: `vals[i]` is meaningful when bit i of `known` is
/// set, and 0 otherwise (so that equal knowledge compares and hashes equal). A location whose
/// bit in `ptr` is set too holds the address of read-only global data (`.rodata`, frozen:
/// its bytes are the object's), `vals[i]` being the map (high half) and the byte offset (low
/// half): loads through it read constants (a program's `const volatile` settings, which
/// xdp-tools' programs test on every packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Consts {
    vals: [u64; W],
    known: u32,
    ptr: u32,
}

impl Consts {
    /// A number's value (not a read-only data address).
    #[inline]
    fn get(&self, loc: u8) -> Option<u64> {
        (self.known >> loc & 1 == 1 && self.ptr >> loc & 1 == 0).then_some(self.vals[loc as usize])
    }
    /// A read-only data address: (map, byte offset).
    #[inline]
    fn get_ptr(&self, loc: u8) -> Option<(u32, i64)> {
        (self.ptr >> loc & 1 == 1).then(|| {
            let v = self.vals[loc as usize];
            ((v >> 32) as u32, i64::from(v as u32 as i32))
        })
    }
    #[inline]
    fn set(&mut self, loc: u8, v: Option<u64>) {
        self.ptr &= !(1 << loc);
        match v {
            Some(v) => {
                self.vals[loc as usize] = v;
                self.known |= 1 << loc;
            }
            None => {
                self.known &= !(1 << loc);
                self.vals[loc as usize] = 0;
            }
        }
    }
    /// `loc` holds byte `off` of read-only map `map`'s value (offsets out of i32: unknown).
    #[inline]
    fn set_ptr(&mut self, loc: u8, map: u32, off: i64) {
        match i32::try_from(off) {
            Ok(o) => {
                self.vals[loc as usize] = u64::from(map) << 32 | u64::from(o as u32);
                self.known |= 1 << loc;
                self.ptr |= 1 << loc;
            }
            Err(_) => self.set(loc, None),
        }
    }
    /// Copy location `from` (a number or an address) into `to`.
    #[inline]
    fn copy(&mut self, to: u8, from: u8) {
        match self.get_ptr(from) {
            Some((m, o)) => self.set_ptr(to, m, o),
            None => {
                let v = self.get(from);
                self.set(to, v);
            }
        }
    }
    fn forget(&mut self, m: u32) {
        self.known &= !m;
        self.ptr &= !m;
        for (i, v) in self.vals.iter_mut().enumerate() {
            if m >> i & 1 == 1 {
                *v = 0;
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Opd {
    Loc(u8),
    Imm(u64),
}

/// What one edge does to the constants.
#[derive(Debug, Clone, Copy)]
enum Op {
    Nop,
    /// A conditional jump going this way (`taken`).
    Branch {
        op: JmpOp,
        is64: bool,
        a: u8,
        b: Opd,
        taken: bool,
    },
    Alu {
        op: AluOp,
        is64: bool,
        dst: u8,
        src: Opd,
    },
    End {
        dst: u8,
        bits: u32,
        to_be: bool,
    },
    Set {
        dst: u8,
        val: Option<u64>,
    },
    /// An 8-byte reload of a tracked slot.
    Load {
        dst: u8,
        from: u8,
    },
    /// A load through a register that may hold a read-only data address.
    LoadData {
        dst: u8,
        base: u8,
        off: i16,
        size: Size,
    },
    /// The address of byte `off` of read-only map `map`'s value.
    SetPtr {
        dst: u8,
        map: u32,
        off: u32,
    },
    /// An 8-byte store into a tracked slot.
    Store {
        to: u8,
        src: Opd,
    },
    /// These locations become unknown.
    Forget(u32),
}

/// What one edge does to the packet pointers in registers, for the packet length the split
/// graph's bounds checks need ([`split`]): registers are `data + offset` (the offset known on
/// the split node's prefix), `data_end`, or not known.
#[derive(Debug, Clone, Copy)]
enum PtrOp {
    Keep,
    /// `dst = ctx->data` / `dst = ctx->data_end` (a 32-bit load from the context).
    Data(u8),
    End(u8),
    Mov(u8, u8),
    /// `dst += imm` (64-bit; a subtraction as its negation).
    AddImm(u8, i64),
    /// `dst += src` or `dst -= src` (64-bit).
    AddReg {
        dst: u8,
        src: u8,
        sub: bool,
    },
    /// These registers become unknown.
    Clobber(u16),
    /// A 64-bit compare of two registers whose edge holds `a op b`: the packet it needs.
    Need {
        a: u8,
        b: u8,
        op: JmpOp,
    },
}

/// The constant effect of every edge of a costed graph.
pub struct ConstModel {
    ops: Vec<Op>,
    /// Per map, its bytes when they are read-only (frozen global data).
    frozen: Vec<Option<Vec<u8>>>,
    /// Per edge, its effect on packet pointers.
    ptr: Vec<PtrOp>,
    /// The program calls a helper that moves the packet's start or end (`adjust_head`,
    /// `adjust_meta`, `adjust_tail`): then the split keeps the graph's packet needs.
    moves_packet: bool,
}

/// What the split reads of a node's abstract state (which is 3.3 kB; this is 32 bytes, so it is
/// kept for every node): the value of the register its memory instruction goes through (an
/// `Ldx`'s source, a `St`'s or an `Atomic`'s destination; `Top` for other instructions), and
/// whether r1–r5 hold a pointer into the stack (what a helper call may write through).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// The value of the register its memory instruction goes through.
    pub base: Val,
    /// r1–r5 may hold a pointer into the stack.
    pub stack_arg: bool,
}

impl Facts {
    /// The facts of a node executing `insn` in state `s`.
    pub fn of(insn: &Insn, s: &State) -> Facts {
        let base = match *insn {
            Insn::Ldx { src, .. } => s.regs[src as usize],
            Insn::St { dst, .. } | Insn::Atomic { dst, .. } => s.regs[dst as usize],
            _ => Val::Top,
        };
        Facts {
            base,
            stack_arg: s.regs[1..=5].iter().any(|r| matches!(r, Val::Fp(..))),
        }
    }
}

/// Tracked stack slots: the constant r10 offsets of the program's 8-byte stores to its stack,
/// each given a location after the registers (up to W − 11 of them).
fn tracked_slots(p: &Program, dag: &Dag, facts: &[Option<Facts>]) -> Vec<i64> {
    let mut offs: Vec<i64> = Vec::new();
    for (u, s) in facts.iter().enumerate().take(dag.n.saturating_sub(1)) {
        let Some(e) = dag.edges(u as u32).next() else {
            continue;
        };
        let Some(Insn::St {
            size: Size::DW,
            off,
            ..
        }) = p.code[dag.pc[e] as usize]
        else {
            continue;
        };
        if let Some(Val::Fp(0, Some(b))) = s.map(|s| s.base) {
            let o = b as i64 + off as i64;
            if o % 8 == 0 && !offs.contains(&o) {
                offs.push(o);
            }
        }
    }
    offs.sort_unstable();
    offs.truncate(W - REGS);
    offs
}

impl ConstModel {
    /// `at`: the abstract states at the graph's nodes (to tell stack pointers from others).
    pub fn new(p: &Program, dag: &Dag, at: &[Option<State>]) -> ConstModel {
        let facts: Vec<Option<Facts>> = at
            .iter()
            .enumerate()
            .take(dag.n.saturating_sub(1))
            .map(|(u, s)| {
                let e = dag.edges(u as u32).next()?;
                let insn = p.code.get(dag.pc[e] as usize).copied().flatten()?;
                s.as_ref().map(|s| Facts::of(&insn, s))
            })
            .collect();
        ConstModel::from_facts(p, dag, &facts)
    }

    /// As [`ConstModel::new`], from what the split needs of each node's state
    /// ([`crate::cost::costed_with_facts`] gives it).
    pub fn from_facts(p: &Program, dag: &Dag, facts: &[Option<Facts>]) -> ConstModel {
        let slots = tracked_slots(p, dag, facts);
        let slot_of = |base: Val, off: i16| -> Result<Option<u8>, ()> {
            // Ok(Some(loc)): that tracked slot; Ok(None): no tracked slot; Err: maybe any.
            match base {
                Val::Fp(0, Some(b)) => {
                    let o = b as i64 + off as i64;
                    Ok(slots.iter().position(|&s| s == o).map(|i| (REGS + i) as u8))
                }
                // A caller's stack: the tracked slots are the current frame's (a call and a
                // return forget them all).
                Val::Fp(_, Some(_)) => Ok(None),
                Val::Fp(_, None) | Val::Top | Val::Scalar(_) => Err(()),
                Val::Ctx
                | Val::Pkt(_)
                | Val::PktEnd
                | Val::MapPtr(_)
                | Val::MapVal(..)
                | Val::Upper => Ok(None),
            }
        };
        // Tracked slots that bytes off..off+len from r10-relative `base` touch.
        let touched = |base: Val, off: i16, len: i64| -> u32 {
            match base {
                Val::Fp(0, Some(b)) => {
                    let lo = b as i64 + off as i64;
                    let mut m = 0;
                    for (i, &s) in slots.iter().enumerate() {
                        if s < lo + len && lo < s + 8 {
                            m |= 1 << (REGS + i);
                        }
                    }
                    m
                }
                Val::Fp(_, Some(_)) => 0,
                Val::Fp(_, None) | Val::Top | Val::Scalar(_) => SLOT_BITS,
                _ => 0,
            }
        };
        let opd = |src: Src| match src {
            Src::Reg(r) => Opd::Loc(r),
            Src::Imm(i) => Opd::Imm(imm_value(i)),
        };
        let mut ops = Vec::with_capacity(dag.n_edges());
        let mut ptr = Vec::with_capacity(dag.n_edges());
        for u in 0..dag.n {
            for e in dag.edges(u as u32) {
                let kind = dag.kind[e];
                let insn = p.code.get(dag.pc[e] as usize).copied().flatten();
                let s = facts.get(u).copied().flatten();
                ptr.push(ptr_op(kind, insn, s));
                let op = match (kind, insn, s) {
                    (
                        EdgeKind::Call
                        | EdgeKind::CallSummary
                        | EdgeKind::Return
                        | EdgeKind::TailCall { .. },
                        _,
                        _,
                    ) => Op::Forget(ALL),
                    (_, None, _) | (_, _, None) => Op::Forget(ALL),
                    (_, Some(insn), Some(s)) => match insn {
                        Insn::Alu { op, is64, dst, src } => Op::Alu {
                            op,
                            is64,
                            dst,
                            src: opd(src),
                        },
                        Insn::End { dst, bits, to_be } => Op::End { dst, bits, to_be },
                        Insn::LdImm64 { dst, imm } => match imm {
                            crate::insn::Imm64::Const(c) => Op::Set { dst, val: Some(c) },
                            crate::insn::Imm64::MapValue { map, off }
                                if p.maps.get(map as usize).is_some_and(|m| m.frozen) =>
                            {
                                Op::SetPtr { dst, map, off }
                            }
                            _ => Op::Set { dst, val: None },
                        },
                        Insn::Ldx {
                            size,
                            dst,
                            src,
                            off,
                            signed,
                        } => match (size, slot_of(s.base, off)) {
                            (Size::DW, Ok(Some(from))) => Op::Load { dst, from },
                            // Read-only data: what the abstract values place there (frozen
                            // global data), the constants say at which offset.
                            _ if !signed
                                && matches!(s.base, Val::MapVal(m, _)
                                    if p.maps.get(m as usize).is_some_and(|d| d.frozen)) =>
                            {
                                Op::LoadData {
                                    dst,
                                    base: src,
                                    off,
                                    size,
                                }
                            }
                            _ => Op::Set { dst, val: None },
                        },
                        Insn::St { size, src, off, .. } => {
                            let base = s.base;
                            match (size, slot_of(base, off)) {
                                (Size::DW, Ok(Some(to))) => Op::Store { to, src: opd(src) },
                                _ => Op::Forget(touched(base, off, size.bytes() as i64)),
                            }
                        }
                        Insn::Atomic {
                            op,
                            size,
                            src,
                            off,
                            fetch,
                            ..
                        } => {
                            let mut m = touched(s.base, off, size.bytes() as i64);
                            if fetch {
                                let r = if op == crate::insn::AtomicOp::CmpXchg {
                                    0
                                } else {
                                    src
                                };
                                m |= 1 << r;
                            }
                            Op::Forget(m)
                        }
                        Insn::Call { helper } => {
                            let mut m = 0b11_1111; // r0–r5
                            if crate::helpers::writes_args(helper) && s.stack_arg {
                                m |= SLOT_BITS;
                            }
                            Op::Forget(m)
                        }
                        // A kfunc (the metadata kfuncs write their outputs): as a helper
                        // that may write the stack.
                        Insn::Kfunc { .. } => {
                            let mut m = 0b11_1111; // r0–r5
                            if s.stack_arg {
                                m |= SLOT_BITS;
                            }
                            Op::Forget(m)
                        }
                        Insn::Jmp {
                            op, is64, dst, src, ..
                        } if matches!(kind, EdgeKind::Taken | EdgeKind::NotTaken) => Op::Branch {
                            op,
                            is64,
                            a: dst,
                            b: opd(src),
                            taken: kind == EdgeKind::Taken,
                        },
                        _ => Op::Nop,
                    },
                };
                ops.push(op);
            }
        }
        let moves_packet = p.code.iter().flatten().any(|i| {
            matches!(i, Insn::Call { helper } if matches!(*helper,
                crate::absint::HELPER_ADJUST_HEAD | crate::absint::HELPER_ADJUST_TAIL | HELPER_ADJUST_META))
        });
        let frozen = p
            .maps
            .iter()
            .map(|m| (m.frozen && !m.data.is_empty()).then(|| m.data.clone()))
            .collect();
        ConstModel {
            ops,
            frozen,
            ptr,
            moves_packet,
        }
    }

    /// The constants after edge `e` from a prefix with constants `c`, or `None` when the edge
    /// is a branch that `c` decides the other way.
    #[inline]
    pub fn apply(&self, e: usize, c: &Consts) -> Option<Consts> {
        let mut c = *c;
        let val = |c: &Consts, o: Opd| match o {
            Opd::Loc(l) => c.get(l),
            Opd::Imm(v) => Some(v),
        };
        match self.ops[e] {
            Op::Nop => {}
            Op::Branch {
                op,
                is64,
                a,
                b,
                taken,
            } => {
                if let (Some(x), Some(y)) = (c.get(a), val(&c, b)) {
                    if jmp_taken(op, is64, x, y) != taken {
                        return None;
                    }
                }
            }
            // An address into read-only data moves with constants added to it.
            Op::Alu {
                op: AluOp::Mov,
                is64: true,
                dst,
                src: Opd::Loc(l),
            } if c.get_ptr(l).is_some() => c.copy(dst, l),
            Op::Alu {
                op: op @ (AluOp::Add | AluOp::Sub),
                is64: true,
                dst,
                src,
            } if c.get_ptr(dst).is_some() => {
                let (m, o) = c.get_ptr(dst).expect("an address");
                match val(&c, src) {
                    Some(v) if op == AluOp::Add => c.set_ptr(dst, m, o.wrapping_add(v as i64)),
                    Some(v) => c.set_ptr(dst, m, o.wrapping_sub(v as i64)),
                    None => c.set(dst, None),
                }
            }
            Op::Alu { op, is64, dst, src } => {
                let v = match op {
                    AluOp::Mov => val(&c, src).map(|s| alu(op, is64, 0, s)),
                    AluOp::Neg => c.get(dst).map(|d| alu(op, is64, d, 0)),
                    _ => c
                        .get(dst)
                        .zip(val(&c, src))
                        .map(|(d, s)| alu(op, is64, d, s)),
                };
                c.set(dst, v);
            }
            Op::End { dst, bits, to_be } => {
                let v = c.get(dst).map(|d| endian(d, bits, to_be));
                c.set(dst, v);
            }
            Op::Set { dst, val } => c.set(dst, val),
            Op::SetPtr { dst, map, off } => c.set_ptr(dst, map, i64::from(off)),
            Op::LoadData {
                dst,
                base,
                off,
                size,
            } => {
                let v = c.get_ptr(base).and_then(|(m, o)| {
                    let data = self.frozen.get(m as usize)?.as_ref()?;
                    let at = usize::try_from(o + i64::from(off)).ok()?;
                    let b = data.get(at..at.checked_add(size.bytes() as usize)?)?;
                    Some(b.iter().rev().fold(0u64, |a, &x| a << 8 | u64::from(x)))
                });
                c.set(dst, v);
            }
            Op::Load { dst, from } => c.copy(dst, from),
            Op::Store { to, src } => match src {
                Opd::Loc(l) => c.copy(to, l),
                Opd::Imm(v) => c.set(to, Some(v)),
            },
            Op::Forget(m) => c.forget(m),
        }
        Some(c)
    }
}

/// `bpf_xdp_adjust_meta` (uapi bpf.h): it moves `data_meta`; like the other helpers that move
/// the packet, it makes the split keep the graph's packet needs.
const HELPER_ADJUST_META: u32 = 54;
/// Registers r0–r5, which a helper call writes (r0) or leaves undefined (r1–r5).
const CALLER_SAVED: u16 = 0b11_1111;

/// The effect of edge (of `kind`, from `insn` in a state with `facts`) on packet pointers.
fn ptr_op(kind: EdgeKind, insn: Option<Insn>, facts: Option<Facts>) -> PtrOp {
    let (Some(insn), Some(f)) = (insn, facts) else {
        return PtrOp::Clobber(u16::MAX);
    };
    match kind {
        // A callee gets the caller's r1–r5; its r6–r9 are its own. What returns is not known
        // (the caller's r6–r9 are restored from a frame this does not follow).
        EdgeKind::Call => return PtrOp::Clobber(!0b11_1110),
        EdgeKind::CallSummary => return PtrOp::Clobber(u16::MAX),
        EdgeKind::Return | EdgeKind::TailCall { .. } => return PtrOp::Clobber(u16::MAX),
        _ => {}
    }
    match insn {
        Insn::Alu {
            op,
            is64: true,
            dst,
            src,
        } => match (op, src) {
            (AluOp::Mov, Src::Reg(r)) => PtrOp::Mov(dst, r),
            (AluOp::Add, Src::Imm(i)) => PtrOp::AddImm(dst, i64::from(i)),
            (AluOp::Sub, Src::Imm(i)) => PtrOp::AddImm(dst, -i64::from(i)),
            (AluOp::Add | AluOp::Sub, Src::Reg(r)) => PtrOp::AddReg {
                dst,
                src: r,
                sub: op == AluOp::Sub,
            },
            _ => PtrOp::Clobber(1 << dst),
        },
        Insn::Alu { dst, .. } | Insn::End { dst, .. } | Insn::LdImm64 { dst, .. } => {
            PtrOp::Clobber(1 << dst)
        }
        Insn::Ldx { size, dst, off, .. } => match (f.base, size, off) {
            (Val::Ctx, Size::W, 0) => PtrOp::Data(dst),
            (Val::Ctx, Size::W, 4) => PtrOp::End(dst),
            _ => PtrOp::Clobber(1 << dst),
        },
        Insn::Atomic {
            op,
            src,
            fetch: true,
            ..
        } => PtrOp::Clobber(if op == crate::insn::AtomicOp::CmpXchg {
            1
        } else {
            1 << src
        }),
        Insn::Call { .. } | Insn::Kfunc { .. } => PtrOp::Clobber(CALLER_SAVED),
        Insn::Jmp {
            op,
            is64: true,
            dst,
            src: Src::Reg(r),
            ..
        } if matches!(kind, EdgeKind::Taken | EdgeKind::NotTaken) => {
            match if kind == EdgeKind::Taken {
                Some(op)
            } else {
                crate::absint::negate(op)
            } {
                Some(op) => PtrOp::Need { a: dst, b: r, op },
                None => PtrOp::Keep,
            }
        }
        _ => PtrOp::Keep,
    }
}

/// A register's packet pointer on the prefixes into a split node: `data` plus an offset in
/// `lo..=hi`, `data_end`, or not known.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ptr {
    Unknown,
    Pkt(i64, i64),
    End,
}

impl Ptr {
    fn join(self, o: Ptr) -> Ptr {
        match (self, o) {
            (Ptr::Pkt(a, b), Ptr::Pkt(c, d)) => Ptr::Pkt(a.min(c), b.max(d)),
            (Ptr::End, Ptr::End) => Ptr::End,
            _ => Ptr::Unknown,
        }
    }
}

type Ptrs = [Ptr; REGS];

impl ConstModel {
    /// The packet pointers after edge `e` from a split node with constants `c` and pointers
    /// `p`, and the packet length (bytes) the edge needs by them (0: none known).
    fn ptr_step(&self, e: usize, c: &Consts, p: &mut Ptrs) -> u32 {
        let add = |x: Ptr, d: Option<i64>| match (x, d) {
            (Ptr::Pkt(lo, hi), Some(d)) => match (lo.checked_add(d), hi.checked_add(d)) {
                (Some(lo), Some(hi)) => Ptr::Pkt(lo, hi),
                _ => Ptr::Unknown,
            },
            _ => Ptr::Unknown,
        };
        match self.ptr[e] {
            PtrOp::Keep => {}
            PtrOp::Data(d) => p[d as usize] = Ptr::Pkt(0, 0),
            PtrOp::End(d) => p[d as usize] = Ptr::End,
            PtrOp::Mov(d, s) => p[d as usize] = p[s as usize],
            PtrOp::AddImm(d, i) => p[d as usize] = add(p[d as usize], Some(i)),
            PtrOp::AddReg { dst, src, sub } => {
                let k = |r: u8| c.get(r).map(|v| v as i64);
                p[dst as usize] = match (p[dst as usize], p[src as usize]) {
                    (x @ Ptr::Pkt(..), _) => add(
                        x,
                        k(src).and_then(|v| if sub { v.checked_neg() } else { Some(v) }),
                    ),
                    // A constant plus a packet pointer (`r5 = 18; r5 += r1`).
                    (_, y @ Ptr::Pkt(..)) if !sub => add(y, k(dst)),
                    _ => Ptr::Unknown,
                };
            }
            PtrOp::Clobber(m) => {
                for (r, x) in p.iter_mut().enumerate() {
                    if m >> r & 1 == 1 {
                        *x = Ptr::Unknown;
                    }
                }
            }
            PtrOp::Need { a, b, op } => {
                // As the abstract interpretation reads a bounds check (`len_need`).
                let need = match (p[a as usize], p[b as usize], op) {
                    (Ptr::Pkt(lo, _), Ptr::End, JmpOp::Le) => lo,
                    (Ptr::Pkt(lo, _), Ptr::End, JmpOp::Lt) => lo.saturating_add(1),
                    (Ptr::End, Ptr::Pkt(lo, _), JmpOp::Ge) => lo,
                    (Ptr::End, Ptr::Pkt(lo, _), JmpOp::Gt) => lo.saturating_add(1),
                    _ => 0,
                };
                return need.clamp(0, i64::from(u32::MAX)) as u32;
            }
        }
        0
    }
}

/// The graph split by constants: every node of `dag` once per set of constants that reaches it,
/// without the branch edges those constants rule out; the sink stays one node. `None` if it
/// would have more than `max_nodes` nodes. Edges keep their instruction, kind and cost; their
/// packet need is the graph's or, where the split node's constants tell the offsets a bounds
/// check compares (a header offset kept in a register), what those offsets need.
pub fn split(dag: &Dag, model: &ConstModel, max_nodes: usize) -> Option<Dag> {
    use std::collections::HashMap;
    let sink = dag.sink();
    // Topological rank of the original nodes, to order the split ones.
    let mut rank = vec![0u32; dag.n];
    for (r, &u) in dag.topo.iter().enumerate() {
        rank[u as usize] = r as u32;
    }
    // Split nodes: (original node, constants) → id; id 0 is the entry.
    let mut ids: HashMap<(u32, Consts), u32> = HashMap::new();
    let mut nodes: Vec<(u32, Consts)> = vec![(0, Consts::default())];
    ids.insert((0, Consts::default()), 0);
    // Out-edges of each split node: (original edge, split target; u32::MAX for the sink).
    let mut out: Vec<Vec<(u32, u32)>> = vec![Vec::new()];
    let mut work = vec![0u32];
    while let Some(x) = work.pop() {
        let (u, c) = nodes[x as usize];
        for e in dag.edges(u) {
            let Some(c2) = model.apply(e, &c) else {
                continue;
            };
            let v = dag.to[e];
            let y = if v == sink {
                u32::MAX
            } else {
                *ids.entry((v, c2)).or_insert_with(|| {
                    nodes.push((v, c2));
                    out.push(Vec::new());
                    work.push((nodes.len() - 1) as u32);
                    (nodes.len() - 1) as u32
                })
            };
            out[x as usize].push((e as u32, y));
            if nodes.len() > max_nodes {
                return None;
            }
        }
    }
    // Number the split nodes in topological order (the entry stays first), the sink last.
    let mut order: Vec<u32> = (0..nodes.len() as u32).collect();
    order.sort_by_key(|&x| (rank[nodes[x as usize].0 as usize], x));
    let mut new_id = vec![0u32; nodes.len()];
    for (i, &x) in order.iter().enumerate() {
        new_id[x as usize] = i as u32;
    }
    let n = nodes.len() + 1;
    let mut d = Dag {
        n,
        first: Vec::with_capacity(n + 1),
        to: Vec::new(),
        cost: Vec::new(),
        need: Vec::new(),
        pc: Vec::new(),
        kind: Vec::new(),
        topo: (0..n as u32).collect(),
    };
    // The packet each edge needs, by the pointers the split node's constants give (a parser
    // computes its header offsets from constants, which the graph's abstract values, joined over
    // paths, know only as ranges): in topological order, each node's pointers joined over its
    // in-edges, kept until the node is visited.
    let refine = !model.moves_packet;
    let mut ptrs: Vec<Option<Box<Ptrs>>> = (0..nodes.len()).map(|_| None).collect();
    ptrs[0] = Some(Box::new([Ptr::Unknown; REGS]));
    for &x in &order {
        d.first.push(d.to.len() as u32);
        let here = if refine {
            ptrs[x as usize].take()
        } else {
            None
        };
        for &(e, y) in &out[x as usize] {
            let e = e as usize;
            let mut need = dag.need[e];
            if let Some(p0) = &here {
                let mut p = **p0;
                need = need.max(model.ptr_step(e, &nodes[x as usize].1, &mut p));
                if y != u32::MAX {
                    let slot = &mut ptrs[y as usize];
                    match slot {
                        Some(q) => {
                            for (a, b) in q.iter_mut().zip(p) {
                                *a = a.join(b);
                            }
                        }
                        None => *slot = Some(Box::new(p)),
                    }
                }
            }
            d.to.push(if y == u32::MAX {
                n as u32 - 1
            } else {
                new_id[y as usize]
            });
            d.cost.push(dag.cost[e]);
            d.need.push(need);
            d.pc.push(dag.pc[e]);
            d.kind.push(dag.kind[e]);
        }
    }
    d.first.push(d.to.len() as u32);
    d.first.push(d.to.len() as u32);
    Some(d)
}

#[cfg(test)]
mod tests {
    use crate::analysis::{Analysis, Options};
    use crate::cfg::EdgeKind;
    use crate::testasm::*;

    /// A header at offset 20 or 40 by the byte at 12 (kept in r6, a constant on each path),
    /// then its bounds check `data + r6 > data_end` at instruction 11.
    fn two_headers(tail: &[Slot]) -> Vec<Slot> {
        let t = tail.len() as i16; // (the drop is at 14 + t)
        let mut s = vec![
            ldx(W, 2, 1, 0), // r2 = data
            ldx(W, 3, 1, 4), // r3 = data_end
            movr(4, 2),
            add(4, 14),
            i(0x2d, 4, 3, 9 + t, 0), // if data + 14 > data_end goto drop
            ldx(B, 5, 2, 12),
            mov(6, 20),
            jeq(5, 8, 1), // if pkt[12] == 8 goto +1
            mov(6, 40),
            movr(7, 2),
            addr(7, 6),              // r7 = data + r6
            i(0x2d, 7, 3, 2 + t, 0), // if r7 > data_end goto drop
        ];
        s.extend_from_slice(tail);
        s.extend([mov(0, 2), exit(), mov(0, 1), exit()]);
        s
    }

    /// The packet needs of the not-taken edges of the bounds check at `pc`, in the graph and
    /// in the split graph.
    fn needs(a: &Analysis, pc: u32) -> (Vec<u32>, Vec<u32>) {
        let of = |d: &crate::cost::Dag| {
            let mut v: Vec<u32> = (0..d.n_edges())
                .filter(|&e| d.pc[e] == pc && d.kind[e] == EdgeKind::NotTaken)
                .map(|e| d.need[e])
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        (of(&a.dag), of(&a.search_dag))
    }

    fn nfp() -> crate::Target {
        crate::Target::builtin("nfp").unwrap().unwrap()
    }

    #[test]
    fn the_split_graph_needs_the_packet_its_constant_offsets_check() {
        let p = prog(&two_headers(&[]), Vec::new());
        let a = Analysis::of_program(p, nfp(), &Options::default()).unwrap();
        let (graph, split) = needs(&a, 11);
        // The abstract values join the two offsets (20..40): the graph's edge needs 20 bytes.
        assert_eq!(graph, [20]);
        // Split by r6, each copy needs what its own offset checks.
        assert_eq!(split, [20, 40]);
    }

    /// Branch edges of instruction `pc` in the split graph, by kind.
    fn kinds(a: &Analysis, pc: u32) -> Vec<EdgeKind> {
        let d = &a.search_dag;
        let mut v: Vec<EdgeKind> = (0..d.n_edges())
            .filter(|&e| d.pc[e] == pc)
            .map(|e| d.kind[e])
            .collect();
        v.dedup();
        v
    }

    #[test]
    fn settings_in_read_only_data_decide_their_branches() {
        // `.rodata` {7, 0}: `if rodata[1] != 0` (through the address plus 1) is never taken;
        // the same test on writable `.data` may be.
        let body = |m: i32| {
            let mut s = Vec::new();
            s.extend(ld_map_value(1, m, 0));
            s.extend([
                add(1, 1),
                ldx(B, 2, 1, 0),
                jeq(2, 0, 2), // pc 4: if rodata[1] == 0 goto +2
                mov(0, 1),
                exit(),
                mov(0, 2),
                exit(),
            ]);
            s
        };
        let data = |frozen: bool| {
            let mut m = map(if frozen { ".rodata" } else { ".data" }, 2, 4, 2, 1);
            m.data = vec![7, 0];
            m.frozen = frozen;
            m
        };
        let ro = Analysis::of_program(prog(&body(0), vec![data(true)]), nfp(), &Options::default())
            .unwrap();
        assert_eq!(kinds(&ro, 4), [EdgeKind::Taken]);
        let rw = Analysis::of_program(
            prog(&body(0), vec![data(false)]),
            nfp(),
            &Options::default(),
        )
        .unwrap();
        assert_eq!(kinds(&rw, 4).len(), 2);
    }

    #[test]
    fn a_program_that_moves_the_packet_keeps_the_graphs_needs() {
        // bpf_xdp_adjust_head (44) after the check: offsets before it would be the packet's
        // before the move; the split then keeps the graph's needs.
        let tail = [movr(1, 1), mov(2, 0), call(44)];
        let p = prog(&two_headers(&tail), Vec::new());
        let a = Analysis::of_program(p, nfp(), &Options::default()).unwrap();
        let (graph, split) = needs(&a, 11);
        assert_eq!(graph, [20]);
        assert_eq!(split, [20]);
    }
}
