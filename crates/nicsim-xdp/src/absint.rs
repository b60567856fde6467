//! Abstract register values: unsigned ranges for scalars, and pointers into the packet with a
//! range of offsets. Loop unrolling uses it to find loop bounds that the code makes evident
//! (a counter that starts at a constant and is compared with a constant or a masked value), and
//! the cost analysis uses it to read the minimum packet length off the packet-bounds checks
//! (`data + off > data_end` not taken ⇒ the packet is at least `off` bytes long).
//!
//! Everything here over-approximates: a range holds every value the register can have, and a
//! branch is resolved only when every value in the ranges goes the same way.
//!
//! The stack is tracked in 8-byte slots of the current frame, so that a pointer the compiler
//! spilled and reloaded is still known for what it points to: a full 8-byte store of a register
//! at a constant offset from r10 keeps the register's value in the slot, any other store makes
//! the slots it touches unknown, and a store through a pointer that might point into the stack
//! makes them all unknown.

use crate::insn::{alu, endian, imm_value, jmp_taken, AluOp, Insn, JmpOp, Size, Src};

/// `bpf_map_lookup_elem(map, key)`: a pointer to the value, or NULL.
pub const HELPER_MAP_LOOKUP: u32 = 1;
/// `bpf_map_update_elem(map, key, value, flags)`.
pub const HELPER_MAP_UPDATE: u32 = 2;
/// `bpf_map_delete_elem(map, key)`.
pub const HELPER_MAP_DELETE: u32 = 3;
/// `bpf_xdp_adjust_head(ctx, delta)`: moves the packet start.
pub const HELPER_ADJUST_HEAD: u32 = 44;
/// `bpf_xdp_adjust_tail(ctx, delta)`: moves the packet end.
pub const HELPER_ADJUST_TAIL: u32 = 65;
/// `bpf_tail_call(ctx, prog_array, index)`: jumps to the program in the slot, or returns.
pub const HELPER_TAIL_CALL: u32 = 12;
/// `bpf_loop(nr_loops, callback, ctx, flags)`: calls `callback(i, ctx)` for i = 0, 1, … until
/// it returns non-zero or `nr_loops` calls are made (kernel/bpf/bpf_iter.c).
pub const HELPER_LOOP: u32 = 181;
/// `BPF_MAX_LOOPS`: a larger `nr_loops` makes `bpf_loop` return -E2BIG without calling.
pub const BPF_MAX_LOOPS: u64 = 1 << 23;

/// An unsigned range `lo..=hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iv {
    /// Smallest value.
    pub lo: u64,
    /// Largest value.
    pub hi: u64,
}

impl Iv {
    /// Every 64-bit value.
    pub const TOP: Iv = Iv {
        lo: 0,
        hi: u64::MAX,
    };
    /// Every 32-bit value.
    pub const TOP32: Iv = Iv {
        lo: 0,
        hi: u32::MAX as u64,
    };
    /// The single value `v`.
    pub fn c(v: u64) -> Iv {
        Iv { lo: v, hi: v }
    }
    /// The value, if the range holds only one.
    pub fn konst(self) -> Option<u64> {
        (self.lo == self.hi).then_some(self.lo)
    }
    /// The smallest range holding both.
    pub fn join(self, o: Iv) -> Iv {
        Iv {
            lo: self.lo.min(o.lo),
            hi: self.hi.max(o.hi),
        }
    }
    fn fits32(self) -> bool {
        self.hi <= u32::MAX as u64
    }
    /// The range as a 32-bit operand sees it.
    pub(crate) fn low32(self) -> Iv {
        if self.fits32() {
            self
        } else {
            Iv::TOP32
        }
    }
}

/// What a register holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Val {
    /// Nothing is known (also: uninitialised).
    Top,
    /// A number in this range.
    Scalar(Iv),
    /// The program's context (`struct xdp_md *`).
    Ctx,
    /// `data + off` (the packet start as the program last loaded it from the context).
    Pkt(Iv),
    /// `data_end`.
    PktEnd,
    /// The stack: r10 plus a constant offset (`None`: an offset not known).
    Fp(Option<i16>),
    /// The address of map `m` (an `LD_IMM64` map reference).
    MapPtr(u32),
    /// A pointer into a value of map `m` (from `bpf_map_lookup_elem`, or global data); the
    /// flag says whether it may be NULL (a lookup that may find nothing).
    MapVal(u32, bool),
    /// A stack cell holding the upper 4 bytes of the 8-byte value in the cell below it.
    Upper,
}

impl Val {
    /// What either value may be (least upper bound).
    pub fn join(self, o: Val) -> Val {
        match (self, o) {
            (a, b) if a == b => a,
            (Val::Scalar(a), Val::Scalar(b)) => Val::Scalar(a.join(b)),
            (Val::Pkt(a), Val::Pkt(b)) => Val::Pkt(a.join(b)),
            (Val::MapVal(m, x), Val::MapVal(n, y)) if m == n => Val::MapVal(m, x || y),
            _ => Val::Top,
        }
    }
    fn scalar(self) -> Iv {
        match self {
            Val::Scalar(iv) => iv,
            _ => Iv::TOP,
        }
    }
}

/// 4-byte stack cells per frame (the BPF stack is 512 bytes). An 8-byte value sits in two
/// cells: its own, and [`Val::Upper`] above it.
pub const SLOTS: usize = 128;

/// The cell of the 4 bytes at `off` from r10, if they are one whole cell.
fn cell(off: i64) -> Option<usize> {
    (-512..0)
        .contains(&off)
        .then_some(off)
        .filter(|o| o % 4 == 0)
        .map(|o| ((o + 512) / 4) as usize)
}

/// [`cell`], for the helper modules.
pub(crate) fn cell_of(off: i64) -> Option<usize> {
    cell(off)
}

/// The cells that bytes `off .. off + len` from r10 touch.
fn cells_touched(off: i64, len: i64) -> std::ops::Range<usize> {
    let lo = (off.max(-512) + 512).div_euclid(4);
    let hi = ((off + len).min(0) + 512 + 3).div_euclid(4);
    lo.max(0) as usize..(hi.max(lo).min(SLOTS as i64)) as usize
}

/// Registers r0..=r10, and the current frame's stack slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    /// Registers r0..=r10.
    pub regs: [Val; 11],
    /// The current frame's 512-byte stack in 4-byte cells (cell 0 at r10 − 512).
    pub stack: [Val; SLOTS],
    /// How far the program moved the packet start with `bpf_xdp_adjust_head` (bytes; `None`
    /// once unknown or once the tail grew, after which checks say nothing of the received
    /// length).
    pub shift: Option<i64>,
}

impl State {
    /// At program entry: r1 is the context.
    pub fn entry() -> State {
        let mut regs = [Val::Top; 11];
        regs[1] = Val::Ctx;
        regs[10] = Val::Fp(Some(0));
        State {
            regs,
            stack: [Val::Top; SLOTS],
            shift: Some(0),
        }
    }
    /// What either state may be, register by register and slot by slot.
    pub fn join(&self, o: &State) -> State {
        let mut regs = self.regs;
        for (r, b) in regs.iter_mut().zip(o.regs) {
            *r = r.join(b);
        }
        let mut stack = self.stack;
        for (r, b) in stack.iter_mut().zip(o.stack) {
            *r = r.join(b);
        }
        State {
            regs,
            stack,
            shift: if self.shift == o.shift {
                self.shift
            } else {
                None
            },
        }
    }
    /// Join that forces every register and slot that changed to Top (widening, for loops).
    pub fn widen(&self, newer: &State) -> State {
        let mut s = self.join(newer);
        for (r, old) in s.regs.iter_mut().zip(self.regs) {
            if *r != old {
                *r = Val::Top;
            }
        }
        for (r, old) in s.stack.iter_mut().zip(self.stack) {
            if *r != old {
                *r = Val::Top;
            }
        }
        s
    }

    /// The state a bpf-to-bpf callee starts in: a fresh frame; a pointer into the caller's
    /// stack is not one into the callee's.
    pub fn enter_call(&mut self) {
        for r in 1..=5 {
            if matches!(self.regs[r], Val::Fp(_)) {
                self.regs[r] = Val::Top;
            }
        }
        self.regs[10] = Val::Fp(Some(0));
        self.stack = [Val::Top; SLOTS];
    }

    /// Back in the caller (whose state at the call was `caller`): its r6–r10 and stack come
    /// back, unless it passed a pointer into its stack, through which the callee may have
    /// written.
    pub fn return_to(&mut self, caller: &State) {
        self.regs[6..=10].copy_from_slice(&caller.regs[6..=10]);
        let passed_stack = caller.regs[1..=5].iter().any(|r| matches!(r, Val::Fp(_)));
        self.stack = if passed_stack {
            [Val::Top; SLOTS]
        } else {
            caller.stack
        };
    }

    /// A store of `len` bytes through a pointer holding `dst`, at offset `off`: what it does to
    /// the tracked slots (`val`: the value of a whole-slot store).
    fn store(&mut self, dst: Val, off: i16, len: i64, val: Val) {
        match dst {
            Val::Fp(Some(base)) => {
                let at = base as i64 + off as i64;
                let range = cells_touched(at, len);
                // Values that straddle the edges of the store lose their other half.
                if range.start > 0 && self.stack.get(range.start) == Some(&Val::Upper) {
                    self.stack[range.start - 1] = Val::Top;
                }
                if self.stack.get(range.end) == Some(&Val::Upper) {
                    self.stack[range.end] = Val::Top;
                }
                for k in range {
                    self.stack[k] = Val::Top;
                }
                match (cell(at), len) {
                    (Some(k), 8) if k + 1 < SLOTS => {
                        self.stack[k] = val;
                        self.stack[k + 1] = Val::Upper;
                    }
                    (Some(k), 4) => {
                        self.stack[k] = match val {
                            Val::Scalar(iv) => Val::Scalar(iv.low32()),
                            _ => Val::Top,
                        }
                    }
                    _ => {}
                }
            }
            // Somewhere in the stack, or perhaps in it.
            Val::Fp(None) | Val::Top | Val::Scalar(_) => self.stack = [Val::Top; SLOTS],
            Val::Ctx
            | Val::Pkt(_)
            | Val::PktEnd
            | Val::MapPtr(_)
            | Val::MapVal(..)
            | Val::Upper => {}
        }
    }

    /// A load of `len` bytes from the stack at `at` from r10.
    fn load_stack(&self, at: i64, len: u32) -> Val {
        let Some(k) = cell(at) else {
            return Val::Scalar(bits_range(len * 8));
        };
        let upper = self.stack.get(k + 1) == Some(&Val::Upper);
        match (len, self.stack[k]) {
            (8, v) if upper => v,
            (4, Val::Scalar(iv)) => Val::Scalar(iv.low32()),
            _ => Val::Scalar(bits_range(len * 8)),
        }
    }

    fn src(&self, src: Src) -> Val {
        match src {
            Src::Reg(r) => self.regs[r as usize],
            Src::Imm(i) => Val::Scalar(Iv::c(imm_value(i))),
        }
    }

    /// The state after `insn` (for a conditional jump, before the edge refines it).
    pub fn step(&self, insn: &Insn) -> State {
        let mut s = *self;
        match *insn {
            Insn::Alu { op, is64, dst, src } => {
                let d = s.regs[dst as usize];
                let v = s.src(src);
                s.regs[dst as usize] = alu_val(op, is64, d, v);
            }
            Insn::End { dst, bits, to_be } => {
                s.regs[dst as usize] = match s.regs[dst as usize] {
                    Val::Scalar(iv) => match iv.konst() {
                        Some(c) => Val::Scalar(Iv::c(endian(c, bits, to_be))),
                        None => Val::Scalar(bits_range(bits)),
                    },
                    _ => Val::Top,
                }
            }
            Insn::Ldx {
                size,
                dst,
                src,
                off,
                ..
            } => {
                s.regs[dst as usize] = match (s.regs[src as usize], off, size) {
                    (Val::Ctx, 0, Size::W) => Val::Pkt(Iv::c(0)),
                    (Val::Ctx, 4, Size::W) => Val::PktEnd,
                    (Val::Fp(Some(base)), _, Size::DW | Size::W) => {
                        s.load_stack(base as i64 + off as i64, size.bytes())
                    }
                    _ => Val::Scalar(bits_range(size.bytes() * 8)),
                };
            }
            Insn::St {
                size,
                dst,
                src,
                off,
            } => {
                let val = match src {
                    Src::Reg(r) => s.regs[r as usize],
                    Src::Imm(i) => Val::Scalar(Iv::c(imm_value(i))),
                };
                s.store(s.regs[dst as usize], off, size.bytes() as i64, val);
            }
            Insn::Atomic {
                src,
                fetch,
                op,
                dst,
                off,
                size,
            } => {
                s.store(s.regs[dst as usize], off, size.bytes() as i64, Val::Top);
                if fetch {
                    let r = if op == crate::insn::AtomicOp::CmpXchg {
                        0
                    } else {
                        src
                    };
                    s.regs[r as usize] = Val::Top;
                }
            }
            Insn::LdImm64 { dst, imm } => {
                s.regs[dst as usize] = match imm {
                    crate::insn::Imm64::Const(c) => Val::Scalar(Iv::c(c)),
                    crate::insn::Imm64::Map(m) => Val::MapPtr(m),
                    crate::insn::Imm64::MapValue { map, .. } => Val::MapVal(map, false),
                    crate::insn::Imm64::Func(_) => Val::Top,
                };
            }
            Insn::Call { helper } => {
                let delta = s.regs[2].scalar().konst().map(|d| d as i32 as i64);
                let map = s.regs[1];
                if crate::helpers::writes_args(helper)
                    && s.regs[1..=5].iter().any(|r| matches!(r, Val::Fp(_)))
                {
                    // It may write into the stack.
                    s.stack = [Val::Top; SLOTS];
                }
                // r1–r5 are clobbered; helpers that move the packet invalidate its pointers.
                for r in 0..=5 {
                    s.regs[r] = Val::Top;
                }
                if let (HELPER_MAP_LOOKUP, Val::MapPtr(m)) = (helper, map) {
                    s.regs[0] = Val::MapVal(m, true);
                }
                if crate::helpers::moves_packet(helper) {
                    // The verifier makes the program reload data and data_end.
                    for r in s.regs.iter_mut().chain(s.stack.iter_mut()) {
                        if matches!(r, Val::Pkt(_) | Val::PktEnd) {
                            *r = Val::Top;
                        }
                    }
                    // A check after adjust_head(δ) of `off` bytes means the received packet
                    // had off + δ if the move succeeded, `off` if it failed (the head stays):
                    // whether it did is not known here, so off + min(δ, 0) (a program that
                    // ignores the result of adjust_head(64) and checks 14 bytes takes the same
                    // path with a 60-byte packet as with a 78-byte one). After a tail that
                    // shrank by |δ| it had more than `off`.
                    s.shift = match (helper, delta) {
                        (HELPER_ADJUST_HEAD, Some(d)) => s.shift.map(|x| x + d.min(0)),
                        (HELPER_ADJUST_TAIL, Some(d)) if d <= 0 => s.shift,
                        _ => None,
                    };
                }
            }
            Insn::CallLocal { .. } | Insn::Exit | Insn::Ja { .. } | Insn::Jmp { .. } => {}
            Insn::LdAbs => {}
            // A kfunc, as a helper nothing is known of (r0 unknown; the stack it may write, too).
            Insn::Kfunc { .. } => s = self.step(&Insn::Call { helper: u32::MAX }),
        }
        s
    }

    /// [`State::step`] knowing the program: a lookup in an array map with a key that is in
    /// range finds a value (the kernel's array lookup returns NULL only past `max_entries`).
    pub fn step_in(&self, insn: &Insn, p: &crate::load::Program) -> State {
        if let Insn::Kfunc { id } = *insn {
            let name = p.kfunc_name(id);
            if crate::helpers::iter_num::is_iter_num(&name) {
                return crate::helpers::iter_num::absint_step(self, &name);
            }
            if crate::helpers::dynptr::is_dynptr(&name) {
                return crate::helpers::dynptr::absint_step(self, &name);
            }
            if crate::helpers::kfuncs::NO_VALUE.contains(&name.as_str()) {
                let mut s = *self;
                s.regs[..=5].fill(Val::Top);
                return s;
            }
        }
        let mut s = self.step(insn);
        if let (
            Insn::Call {
                helper: HELPER_MAP_LOOKUP,
            },
            Val::MapPtr(m),
            Val::Fp(Some(base)),
        ) = (*insn, self.regs[1], self.regs[2])
        {
            let def = &p.maps[m as usize];
            if let (true, Val::Scalar(key)) = (def.is_array(), self.load_stack(base as i64, 4)) {
                if key.hi < def.max_entries as u64 {
                    s.regs[0] = Val::MapVal(m, false);
                }
            }
        }
        if let (
            Insn::Call {
                helper: HELPER_MAP_LOOKUP,
            },
            Val::MapPtr(m),
        ) = (*insn, self.regs[1])
        {
            // A map of maps gives its inner map or NULL: the inner map's address stands for
            // both (a comparison with NULL may go either way; the verifier refuses a use before
            // the NULL check), so the call through it costs as the inner map's.
            if p.maps[m as usize].is_map_of_maps() {
                s.regs[0] = p.inner_map(m).map_or(Val::Top, Val::MapPtr);
            }
        }
        s
    }

    /// Whether the conditional jump can be taken / not taken from this state.
    pub fn branch(&self, insn: &Insn) -> (bool, bool) {
        let Insn::Jmp {
            op, is64, dst, src, ..
        } = *insn
        else {
            return (true, true);
        };
        let (a, b) = (self.regs[dst as usize], self.src(src));
        match (a, b) {
            (Val::Scalar(x), Val::Scalar(y)) => {
                let (x, y) = if is64 { (x, y) } else { (x.low32(), y.low32()) };
                decide(op, is64, x, y)
            }
            (Val::MapVal(_, false), Val::Scalar(y)) if is64 && y.konst() == Some(0) => match op {
                JmpOp::Eq => (false, true),
                JmpOp::Ne => (true, false),
                _ => (true, true),
            },
            _ => (true, true),
        }
    }

    /// The packet length (bytes, as received) that the edge of a packet-bounds check
    /// guarantees: `data + off <= data_end` guarantees `off`; 0 for every other edge.
    pub fn len_need(&self, insn: &Insn, taken: bool) -> u64 {
        let Insn::Jmp { op, dst, src, .. } = *insn else {
            return 0;
        };
        let Some(op) = (if taken { Some(op) } else { negate(op) }) else {
            return 0;
        };
        let need = match (self.regs[dst as usize], self.src(src), op) {
            (Val::Pkt(off), Val::PktEnd, JmpOp::Le) => off.lo as i64,
            (Val::Pkt(off), Val::PktEnd, JmpOp::Lt) => off.lo as i64 + 1,
            (Val::PktEnd, Val::Pkt(off), JmpOp::Ge) => off.lo as i64,
            (Val::PktEnd, Val::Pkt(off), JmpOp::Gt) => off.lo as i64 + 1,
            _ => return 0,
        };
        self.shift.map_or(0, |sh| (need + sh).max(0) as u64)
    }

    /// Refine the state for the edge of a conditional jump (`taken` or not).
    pub fn refine(&mut self, insn: &Insn, taken: bool) {
        let Insn::Jmp {
            op, is64, dst, src, ..
        } = *insn
        else {
            return;
        };
        let (a, b) = (self.regs[dst as usize], self.src(src));
        // The op that holds on this edge.
        let holds = if taken { Some(op) } else { negate(op) };
        let Some(op) = holds else { return };
        match (a, b) {
            (Val::Scalar(x), Val::Scalar(y)) if is64 || x.fits32() && y.fits32() => {
                // Narrow both register operands, each against the other side's range (a
                // compiler often compares a copy: `if r5 > r0` with r5 = 2, then adds r0).
                if let Some(nx) = narrow(x, op, y) {
                    self.regs[dst as usize] = Val::Scalar(nx);
                }
                if let Src::Reg(r) = src {
                    if let Some(ny) = narrow(y, mirror(op), x) {
                        self.regs[r as usize] = Val::Scalar(ny);
                    }
                }
            }
            _ => {}
        }
    }
}

/// `x`'s range where `x op y` holds for some value of `y` in its range (None: no narrowing, or
/// an empty range — an edge no state reaches is left as it is).
fn narrow(x: Iv, op: JmpOp, y: Iv) -> Option<Iv> {
    let n = match op {
        JmpOp::Eq => Iv {
            lo: x.lo.max(y.lo),
            hi: x.hi.min(y.hi),
        },
        JmpOp::Lt if y.hi > 0 => Iv {
            lo: x.lo,
            hi: x.hi.min(y.hi - 1),
        },
        JmpOp::Le => Iv {
            lo: x.lo,
            hi: x.hi.min(y.hi),
        },
        JmpOp::Gt if y.lo < u64::MAX => Iv {
            lo: x.lo.max(y.lo + 1),
            hi: x.hi,
        },
        JmpOp::Ge => Iv {
            lo: x.lo.max(y.lo),
            hi: x.hi,
        },
        _ => return None,
    };
    (n.lo <= n.hi).then_some(n)
}

/// The op that holds with its operands swapped (`x < y` is `y > x`).
fn mirror(op: JmpOp) -> JmpOp {
    match op {
        JmpOp::Lt => JmpOp::Gt,
        JmpOp::Gt => JmpOp::Lt,
        JmpOp::Le => JmpOp::Ge,
        JmpOp::Ge => JmpOp::Le,
        o => o,
    }
}

fn bits_range(bits: u32) -> Iv {
    if bits >= 64 {
        Iv::TOP
    } else {
        Iv {
            lo: 0,
            hi: (1u64 << bits) - 1,
        }
    }
}

pub(crate) fn negate(op: JmpOp) -> Option<JmpOp> {
    Some(match op {
        JmpOp::Eq => JmpOp::Ne,
        JmpOp::Ne => JmpOp::Eq,
        JmpOp::Gt => JmpOp::Le,
        JmpOp::Le => JmpOp::Gt,
        JmpOp::Ge => JmpOp::Lt,
        JmpOp::Lt => JmpOp::Ge,
        _ => return None,
    })
}

/// (can be taken, can fall through) for `x op y` over the ranges.
fn decide(op: JmpOp, is64: bool, x: Iv, y: Iv) -> (bool, bool) {
    if let (Some(a), Some(b)) = (x.konst(), y.konst()) {
        let t = jmp_taken(op, is64, a, b);
        return (t, !t);
    }
    let signed_ok = if is64 {
        x.hi <= i64::MAX as u64 && y.hi <= i64::MAX as u64
    } else {
        x.hi <= i32::MAX as u64 && y.hi <= i32::MAX as u64
    };
    let op = match op {
        JmpOp::Sgt if signed_ok => JmpOp::Gt,
        JmpOp::Sge if signed_ok => JmpOp::Ge,
        JmpOp::Slt if signed_ok => JmpOp::Lt,
        JmpOp::Sle if signed_ok => JmpOp::Le,
        o => o,
    };
    let always = |c: bool| (c, !c);
    match op {
        JmpOp::Gt if x.lo > y.hi => always(true),
        JmpOp::Gt if x.hi <= y.lo => always(false),
        JmpOp::Ge if x.lo >= y.hi => always(true),
        JmpOp::Ge if x.hi < y.lo => always(false),
        JmpOp::Lt if x.hi < y.lo => always(true),
        JmpOp::Lt if x.lo >= y.hi => always(false),
        JmpOp::Le if x.hi <= y.lo => always(true),
        JmpOp::Le if x.lo > y.hi => always(false),
        JmpOp::Eq | JmpOp::Ne if x.hi < y.lo || y.hi < x.lo => always(op == JmpOp::Ne),
        _ => (true, true),
    }
}

fn alu_val(op: AluOp, is64: bool, d: Val, v: Val) -> Val {
    // scalar + pointer is pointer + scalar.
    let (d, v) = match (op, d, v) {
        (AluOp::Add, Val::Scalar(_), Val::Pkt(_) | Val::MapVal(..) | Val::Fp(_)) if is64 => (v, d),
        _ => (d, v),
    };
    // Packet pointer arithmetic.
    match (op, d, v) {
        (AluOp::Mov, _, v) if is64 => return v,
        // A negative constant (an immediate is sign-extended) moves the pointer back.
        (AluOp::Add, Val::Pkt(o), Val::Scalar(s))
            if is64 && s.konst().is_some_and(|c| (c as i64) < 0) =>
        {
            let back = (s.lo as i64).unsigned_abs();
            return if back <= o.lo {
                Val::Pkt(Iv {
                    lo: o.lo - back,
                    hi: o.hi - back,
                })
            } else {
                Val::Top
            };
        }
        (AluOp::Add, Val::Pkt(o), Val::Scalar(s)) if is64 => {
            return match o.lo.checked_add(s.lo).zip(o.hi.checked_add(s.hi)) {
                Some((lo, hi)) => Val::Pkt(Iv { lo, hi }),
                None => Val::Top,
            }
        }
        (AluOp::Add | AluOp::Sub, Val::Fp(base), Val::Scalar(x)) if is64 => {
            let moved = base.zip(x.konst()).and_then(|(b, c)| {
                let c = c as i64;
                let o = if op == AluOp::Add {
                    b as i64 + c
                } else {
                    b as i64 - c
                };
                i16::try_from(o).ok()
            });
            return Val::Fp(moved);
        }
        (AluOp::Add | AluOp::Sub, Val::MapVal(m, n), Val::Scalar(_)) if is64 => {
            return Val::MapVal(m, n)
        }
        (AluOp::Sub, Val::Pkt(o), Val::Scalar(s)) if is64 && s.hi <= o.lo => {
            return Val::Pkt(Iv {
                lo: o.lo - s.hi,
                hi: o.hi - s.lo,
            })
        }
        _ => {}
    }
    // The verifier allows only add and sub on pointers, so the operands of any other
    // operation are scalars, known or not.
    let scalar = |x: Val| match x {
        Val::Top if !matches!(op, AluOp::Add | AluOp::Sub | AluOp::Mov) => Val::Scalar(Iv::TOP),
        x => x,
    };
    let (d, v) = (scalar(d), scalar(v));
    let (Val::Scalar(x), Val::Scalar(y)) = (
        if op == AluOp::Mov {
            Val::Scalar(Iv::c(0))
        } else {
            d
        },
        v,
    ) else {
        return if is64 {
            Val::Top
        } else {
            Val::Scalar(Iv::TOP32)
        };
    };
    let (x, y) = if is64 { (x, y) } else { (x.low32(), y.low32()) };
    if let (Some(a), Some(b)) = (x.konst(), y.konst()) {
        return Val::Scalar(Iv::c(alu(op, is64, a, b)));
    }
    let max = if is64 { u64::MAX } else { u32::MAX as u64 };
    let top = Iv { lo: 0, hi: max };
    let r = match op {
        AluOp::Mov => y,
        AluOp::Add => match (x.lo.checked_add(y.lo), x.hi.checked_add(y.hi)) {
            (Some(lo), Some(hi)) if hi <= max => Iv { lo, hi },
            _ => top,
        },
        AluOp::Sub if x.lo >= y.hi => Iv {
            lo: x.lo - y.hi,
            hi: x.hi - y.lo,
        },
        AluOp::Mul => match (x.lo.checked_mul(y.lo), x.hi.checked_mul(y.hi)) {
            (Some(lo), Some(hi)) if hi <= max => Iv { lo, hi },
            _ => top,
        },
        AluOp::And => Iv {
            lo: 0,
            hi: x.hi.min(y.hi),
        },
        AluOp::Or | AluOp::Xor => {
            let m = x.hi.max(y.hi);
            let hi = if m == 0 {
                0
            } else {
                u64::MAX >> m.leading_zeros()
            };
            // a | b and a ^ b never exceed a + b.
            let sum = x.hi.saturating_add(y.hi);
            Iv {
                lo: if op == AluOp::Or { x.lo.max(y.lo) } else { 0 },
                hi: hi.min(sum).min(max),
            }
        }
        AluOp::Rsh if y.konst().is_some() => {
            let c = y.lo & if is64 { 63 } else { 31 };
            Iv {
                lo: x.lo >> c,
                hi: x.hi >> c,
            }
        }
        // An arithmetic shift of numbers whose sign bit is clear is a logical one (clang's
        // sign extension of an `int`, `<<= 32; s>>= 32`, of a non-negative one).
        AluOp::Arsh if y.konst().is_some() && x.hi <= max >> 1 => {
            let c = y.lo & if is64 { 63 } else { 31 };
            Iv {
                lo: x.lo >> c,
                hi: x.hi >> c,
            }
        }
        AluOp::Lsh if y.konst().is_some() => {
            let c = y.lo & if is64 { 63 } else { 31 };
            if c < 64 && x.hi.leading_zeros() as u64 >= c && (x.hi << c) <= max {
                Iv {
                    lo: x.lo << c,
                    hi: x.hi << c,
                }
            } else {
                top
            }
        }
        AluOp::Div if y.lo > 0 => Iv {
            lo: x.lo / y.hi,
            hi: x.hi / y.lo,
        },
        AluOp::Mod if y.lo > 0 => Iv {
            lo: 0,
            hi: x.hi.min(y.hi - 1),
        },
        _ => top,
    };
    Val::Scalar(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_value_bounds_a_counter() {
        let mut s = State::entry();
        s.regs[2] = Val::Scalar(Iv::TOP);
        // r2 &= 31 ; r3 = 40
        s = s.step(&Insn::Alu {
            op: AluOp::And,
            is64: true,
            dst: 2,
            src: Src::Imm(31),
        });
        s.regs[3] = Val::Scalar(Iv::c(40));
        let j = Insn::Jmp {
            op: JmpOp::Lt,
            is64: true,
            dst: 2,
            src: Src::Reg(3),
            off: 1,
        };
        assert_eq!(s.branch(&j), (true, false));
    }

    #[test]
    fn bounds_check_gives_min_length() {
        let mut s = State::entry();
        s = s.step(&Insn::Ldx {
            size: Size::W,
            dst: 2,
            src: 1,
            off: 0,
            signed: false,
        });
        s = s.step(&Insn::Ldx {
            size: Size::W,
            dst: 3,
            src: 1,
            off: 4,
            signed: false,
        });
        s = s.step(&Insn::Alu {
            op: AluOp::Mov,
            is64: true,
            dst: 4,
            src: Src::Reg(2),
        });
        s = s.step(&Insn::Alu {
            op: AluOp::Add,
            is64: true,
            dst: 4,
            src: Src::Imm(34),
        });
        // if r4 > r3 goto drop
        let j = Insn::Jmp {
            op: JmpOp::Gt,
            is64: true,
            dst: 4,
            src: Src::Reg(3),
            off: 5,
        };
        assert_eq!(s.len_need(&j, false), 34);
        assert_eq!(s.len_need(&j, true), 0);
        // After adjust_head(+14) the same check means 48 bytes were received if the move
        // succeeded, 34 if it failed (the head stays; nothing here says which): 34. After
        // adjust_head(-20), 14 (or 34).
        for (delta, need) in [(14, 34), (-20, 14)] {
            s.regs[2] = Val::Scalar(Iv::c(delta as i64 as u64));
            let mut t = s.step(&Insn::Call {
                helper: HELPER_ADJUST_HEAD,
            });
            t.regs[4] = Val::Pkt(Iv::c(34));
            t.regs[3] = Val::PktEnd;
            assert_eq!(t.len_need(&j, false), need, "adjust_head({delta})");
        }
    }
}
