//! Abstract register values: unsigned ranges for scalars, and pointers into the packet with a
//! range of offsets. Loop unrolling uses it to find loop bounds that the code makes evident
//! (a counter that starts at a constant and is compared with a constant or a masked value), and
//! the cost analysis uses it to read the minimum packet length off the packet-bounds checks
//! (`data + off > data_end` not taken ⇒ the packet is at least `off` bytes long).
//!
//! Everything here over-approximates: a range holds every value the register can have, and a
//! branch is resolved only when every value in the ranges goes the same way.
//!
//! The stack is tracked in 8-byte slots per call frame, so that a pointer the compiler
//! spilled and reloaded is still known for what it points to: a full 8-byte store of a register
//! at a constant offset from r10 keeps the register's value in the slot, any other store makes
//! the slots it touches unknown, and a store through a pointer that might point into the stack
//! makes them all unknown. A stack pointer names its frame by how many calls up it is
//! ([`Val::Fp`]: 0 the current frame, 1 the caller's, ...): one the caller passes to a
//! bpf-to-bpf callee (any of r1–r5) or as a `bpf_loop` callback's context stays a stack pointer
//! there, its loads read the caller's slots (a pointer to a pointer too), and its stores
//! update them, so that the caller gets them back when the callee returns. The verifier lets a
//! callee read and write the stacks of its callers through such pointers, and refuses to
//! spill a stack pointer into a caller's frame or to return one in r0, so no pointer to a
//! frame outlives it.

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
    /// The stack of the frame `up` calls up from the current one (0: the current frame, 1: its
    /// caller's, ...): that frame's r10 plus a constant offset (`None`: an offset not known).
    Fp(u8, Option<i16>),
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
            (Val::Fp(j, _), Val::Fp(k, _)) if j == k => Val::Fp(j, None),
            _ => Val::Top,
        }
    }
    /// The value as a frame `up` calls deeper sees it (a stack pointer counts its frame from
    /// the one that holds it).
    pub fn deeper(self, up: u8) -> Val {
        match self {
            Val::Fp(k, o) => k.checked_add(up).map_or(Val::Top, |k| Val::Fp(k, o)),
            v => v,
        }
    }
    /// The value as a frame `up` calls up sees it: a pointer into a frame below that one (gone
    /// when it returns) is unknown.
    pub fn shallower(self, up: u8) -> Val {
        match self {
            Val::Fp(k, o) if k >= up => Val::Fp(k - up, o),
            Val::Fp(..) => Val::Top,
            v => v,
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

/// The stacks of the callers of the current frame, outermost first (shared between the states
/// of a callee until it writes one: copy on write). Each cell's value is as its own frame sees
/// it ([`Val::deeper`] turns it into the current frame's view).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Callers(Option<std::sync::Arc<Vec<[Val; SLOTS]>>>);

impl Callers {
    /// How many callers.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |v| v.len())
    }
    /// The program's own frame (no callers).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn get(&self, up: u8) -> Option<&[Val; SLOTS]> {
        let v = self.0.as_ref()?;
        v.len().checked_sub(up as usize).and_then(|i| v.get(i))
    }
    fn get_mut(&mut self, up: u8) -> Option<&mut [Val; SLOTS]> {
        let n = self.len();
        let i = n.checked_sub(up as usize).filter(|_| up >= 1)?;
        std::sync::Arc::make_mut(self.0.as_mut()?).get_mut(i)
    }
    fn push(&mut self, stack: [Val; SLOTS]) {
        match &mut self.0 {
            Some(v) => std::sync::Arc::make_mut(v).push(stack),
            None => self.0 = Some(std::sync::Arc::new(vec![stack])),
        }
    }
    fn pop(&mut self) -> Option<[Val; SLOTS]> {
        let v = self.0.as_mut()?;
        let top = std::sync::Arc::make_mut(v).pop();
        if v.is_empty() {
            self.0 = None;
        }
        top
    }
    /// Frames `up` and above (further out) forgotten.
    fn forget_from(&mut self, up: u8) {
        let n = self.len();
        let Some(v) = self.0.as_mut() else { return };
        let end = (n + 1).saturating_sub(up.max(1) as usize);
        if v[..end].iter().all(|f| f.iter().all(|c| *c == Val::Top)) {
            return;
        }
        for f in std::sync::Arc::make_mut(v)[..end].iter_mut() {
            *f = [Val::Top; SLOTS];
        }
    }
    fn join(&self, o: &Callers) -> Callers {
        if self == o {
            return self.clone();
        }
        let (a, b) = (self.0.as_deref(), o.0.as_deref());
        let (a, b) = (a.map_or(&[][..], |v| &v[..]), b.map_or(&[][..], |v| &v[..]));
        if a.len() != b.len() {
            // States of different call depths do not meet in a graph inlined per call site;
            // if they did, nothing is known of the callers' stacks.
            let n = a.len().max(b.len());
            return Callers((n > 0).then(|| std::sync::Arc::new(vec![[Val::Top; SLOTS]; n])));
        }
        let v = a
            .iter()
            .zip(b)
            .map(|(x, y)| {
                let mut f = *x;
                for (c, d) in f.iter_mut().zip(y) {
                    *c = c.join(*d);
                }
                f
            })
            .collect();
        Callers(Some(std::sync::Arc::new(v)))
    }
    fn widen(&self, newer: &Callers) -> Callers {
        let mut j = self.join(newer);
        if j == *self {
            return j;
        }
        if let (Some(v), Some(old)) = (j.0.as_mut(), self.0.as_deref()) {
            if v.len() == old.len() {
                for (f, g) in std::sync::Arc::make_mut(v).iter_mut().zip(old) {
                    for (c, d) in f.iter_mut().zip(g) {
                        if c != d {
                            *c = Val::Top;
                        }
                    }
                }
            }
        }
        j
    }
}

/// Registers r0..=r10, and the stack slots of the current frame and of its callers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// Registers r0..=r10.
    pub regs: [Val; 11],
    /// The current frame's 512-byte stack in 4-byte cells (cell 0 at r10 − 512).
    pub stack: [Val; SLOTS],
    /// The callers' stacks (empty in the program's own frame).
    pub callers: Callers,
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
        regs[10] = Val::Fp(0, Some(0));
        State {
            regs,
            stack: [Val::Top; SLOTS],
            callers: Callers::default(),
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
            callers: self.callers.join(&o.callers),
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
        s.callers = self.callers.widen(&newer.callers);
        s
    }

    /// The state a bpf-to-bpf callee (or a `bpf_loop` callback) starts in: a fresh frame; the
    /// caller's stack becomes the first of the callers', and a pointer into a stack counts one
    /// more frame up.
    pub fn enter_call(&mut self) {
        for r in 0..=9 {
            self.regs[r] = self.regs[r].deeper(1);
        }
        self.regs[10] = Val::Fp(0, Some(0));
        let stack = std::mem::replace(&mut self.stack, [Val::Top; SLOTS]);
        self.callers.push(stack);
    }

    /// Back in the caller (whose state at the call was `caller`, if known): its r6–r10 come
    /// back from there, and its stack (and its callers') as the callee left them, since the
    /// callee may have written them through pointers it was passed. r0–r5 count one frame
    /// less up (r1–r5 are clobbered by the caller of this).
    pub fn return_to(&mut self, caller: Option<&State>) {
        for r in 0..=5 {
            self.regs[r] = self.regs[r].shallower(1);
        }
        match caller {
            Some(c) => self.regs[6..=10].copy_from_slice(&c.regs[6..=10]),
            None => {
                self.regs[6..=9].fill(Val::Top);
                self.regs[10] = Val::Fp(0, Some(0));
            }
        }
        self.stack = self.callers.pop().unwrap_or([Val::Top; SLOTS]);
    }

    /// Every stack, the current frame's and its callers', unknown.
    pub fn forget_stacks(&mut self) {
        self.stack = [Val::Top; SLOTS];
        self.callers.forget_from(1);
    }

    /// The stack `up` frames up, if the state has it.
    pub fn frame(&self, up: u8) -> Option<&[Val; SLOTS]> {
        if up == 0 {
            Some(&self.stack)
        } else {
            self.callers.get(up)
        }
    }

    fn frame_mut(&mut self, up: u8) -> Option<&mut [Val; SLOTS]> {
        if up == 0 {
            Some(&mut self.stack)
        } else {
            self.callers.get_mut(up)
        }
    }

    /// The stack `up` frames up unknown (every stack if the state does not have it).
    fn forget_frame(&mut self, up: u8) {
        match self.frame_mut(up) {
            Some(f) => {
                if f.iter().any(|c| *c != Val::Top) {
                    *f = [Val::Top; SLOTS];
                }
            }
            None => self.forget_stacks(),
        }
    }

    /// Frames `up` calls up and further out unknown: what a callee given a pointer into frame
    /// `up` may reach (a pointer stored in a frame points into it or one further out).
    pub fn forget_from(&mut self, up: u8) {
        if up == 0 {
            self.forget_stacks();
        } else {
            self.callers.forget_from(up);
        }
    }

    /// A store of `len` bytes through a pointer holding `dst`, at offset `off`: what it does to
    /// the tracked slots (`val`: the value of a whole-slot store).
    fn store(&mut self, dst: Val, off: i16, len: i64, val: Val) {
        match dst {
            Val::Fp(up, Some(base)) => {
                // The value as the frame it is stored in sees it.
                let val = val.shallower(up);
                match self.frame_mut(up) {
                    Some(f) => store_cells(f, base as i64 + off as i64, len, val),
                    None => self.forget_stacks(),
                }
            }
            Val::Fp(up, None) => self.forget_frame(up),
            // Somewhere in a stack, or perhaps in one.
            Val::Top | Val::Scalar(_) => self.forget_stacks(),
            Val::Ctx
            | Val::Pkt(_)
            | Val::PktEnd
            | Val::MapPtr(_)
            | Val::MapVal(..)
            | Val::Upper => {}
        }
    }

    /// A load of `len` bytes from the stack `up` frames up at `at` from its r10, as the current
    /// frame sees it.
    fn load_frame(&self, up: u8, at: i64, len: u32) -> Val {
        let (Some(k), Some(f)) = (cell(at), self.frame(up)) else {
            return Val::Scalar(bits_range(len * 8));
        };
        let upper = f.get(k + 1) == Some(&Val::Upper);
        match (len, f[k]) {
            (8, v) if upper => v.deeper(up),
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
        let mut s = self.clone();
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
                    (Val::Fp(up, Some(base)), _, Size::DW | Size::W) => {
                        s.load_frame(up, base as i64 + off as i64, size.bytes())
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
                let d = s.regs[dst as usize];
                s.store(d, off, size.bytes() as i64, val);
            }
            Insn::Atomic {
                src,
                fetch,
                op,
                dst,
                off,
                size,
            } => {
                let d = s.regs[dst as usize];
                s.store(d, off, size.bytes() as i64, Val::Top);
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
                // It may write into the stacks its arguments point into (bpf_loop's callback's
                // writes through its context are the callback's own instructions, which the
                // graph inlines).
                if crate::helpers::writes_args(helper) && helper != HELPER_LOOP {
                    match crate::helpers::writes_to(helper) {
                        // Its prototype bounds the write: those bytes only (a loop counter
                        // spilled beside a `bpf_xdp_load_bytes` buffer keeps its value).
                        Some(spec) => {
                            for &(r, len) in spec {
                                let n = match len {
                                    crate::helpers::WriteLen::Bytes(n) => Some(i64::from(n)),
                                    crate::helpers::WriteLen::Arg(k) => s.regs[k as usize]
                                        .scalar()
                                        .konst()
                                        .map(|v| i64::from(v as u32)),
                                };
                                let dst = s.regs[r as usize];
                                match (n, dst) {
                                    (Some(n), _) => s.store(dst, 0, n, Val::Top),
                                    (None, Val::Fp(up, _)) => s.forget_frame(up),
                                    (None, _) => {}
                                }
                            }
                        }
                        None => {
                            for r in 1..=5 {
                                if let Val::Fp(up, _) = s.regs[r] {
                                    s.forget_frame(up);
                                }
                            }
                        }
                    }
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
                    let pkt = |r: &Val| matches!(r, Val::Pkt(_) | Val::PktEnd);
                    for r in s.regs.iter_mut().chain(s.stack.iter_mut()) {
                        if pkt(r) {
                            *r = Val::Top;
                        }
                    }
                    // And in the callers' frames (the verifier clears them in every frame).
                    for up in 1..=s.callers.len().min(u8::MAX as usize) as u8 {
                        if s.frame(up).is_some_and(|f| f.iter().any(pkt)) {
                            if let Some(f) = s.frame_mut(up) {
                                for r in f.iter_mut().filter(|r| pkt(r)) {
                                    *r = Val::Top;
                                }
                            }
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
                let mut s = self.clone();
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
            Val::Fp(up, Some(base)),
        ) = (*insn, self.regs[1], self.regs[2])
        {
            let def = &p.maps[m as usize];
            let key = self.load_frame(up, base as i64, 4);
            if let (true, Val::Scalar(key)) = (def.is_array(), key) {
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

/// A store of `len` bytes at `at` from r10 into the frame `stack` (`val`: the value of a
/// whole-slot store, as that frame sees it).
fn store_cells(stack: &mut [Val; SLOTS], at: i64, len: i64, val: Val) {
    let range = cells_touched(at, len);
    // Values that straddle the edges of the store lose their other half.
    if range.start > 0 && stack.get(range.start) == Some(&Val::Upper) {
        stack[range.start - 1] = Val::Top;
    }
    if stack.get(range.end) == Some(&Val::Upper) {
        stack[range.end] = Val::Top;
    }
    for k in range {
        stack[k] = Val::Top;
    }
    match (cell(at), len) {
        (Some(k), 8) if k + 1 < SLOTS => {
            stack[k] = val;
            stack[k + 1] = Val::Upper;
        }
        (Some(k), 4) => {
            stack[k] = match val {
                Val::Scalar(iv) => Val::Scalar(iv.low32()),
                _ => Val::Top,
            }
        }
        _ => {}
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
        (AluOp::Add, Val::Scalar(_), Val::Pkt(_) | Val::MapVal(..) | Val::Fp(..)) if is64 => (v, d),
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
        (AluOp::Add | AluOp::Sub, Val::Fp(up, base), Val::Scalar(x)) if is64 => {
            let moved = base.zip(x.konst()).and_then(|(b, c)| {
                let c = c as i64;
                let o = if op == AluOp::Add {
                    b as i64 + c
                } else {
                    b as i64 - c
                };
                i16::try_from(o).ok()
            });
            return Val::Fp(up, moved);
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

    fn ldx(dst: u8, src: u8, off: i16) -> Insn {
        Insn::Ldx {
            size: Size::DW,
            dst,
            src,
            off,
            signed: false,
        }
    }
    fn stx(dst: u8, src: u8, off: i16) -> Insn {
        Insn::St {
            size: Size::DW,
            dst,
            src: Src::Reg(src),
            off,
        }
    }
    fn fp_plus(dst: u8, off: i32) -> [Insn; 2] {
        [
            Insn::Alu {
                op: AluOp::Mov,
                is64: true,
                dst,
                src: Src::Reg(10),
            },
            Insn::Alu {
                op: AluOp::Add,
                is64: true,
                dst,
                src: Src::Imm(off),
            },
        ]
    }

    #[test]
    fn a_pointer_to_the_callers_stack_reads_and_writes_its_slots() {
        let mut s = State::entry();
        // fp-8 = 5; fp-16 = fp-8 (a pointer to a pointer); r3 = fp-16; r1 = fp-8.
        s.regs[2] = Val::Scalar(Iv::c(5));
        s = s.step(&stx(10, 2, -8));
        for i in fp_plus(4, -8) {
            s = s.step(&i);
        }
        s = s.step(&stx(10, 4, -16));
        for i in fp_plus(3, -16).into_iter().chain(fp_plus(1, -8)) {
            s = s.step(&i);
        }
        let caller = s.clone();
        s.enter_call();
        assert_eq!(s.regs[1], Val::Fp(1, Some(-8)));
        assert_eq!(s.regs[3], Val::Fp(1, Some(-16)));
        // In the callee: r4 = *r3 (the caller's fp-8), r5 = *r4 (5).
        s = s.step(&ldx(4, 3, 0)).step(&ldx(5, 4, 0));
        assert_eq!(s.regs[4], Val::Fp(1, Some(-8)));
        assert_eq!(s.regs[5], Val::Scalar(Iv::c(5)));
        // A spill of the pointer into the callee's own stack, reloaded.
        s = s.step(&stx(10, 1, -8)).step(&ldx(6, 10, -8));
        assert_eq!(s.regs[6], Val::Fp(1, Some(-8)));
        // A nested call: two frames up.
        let mid = s.clone();
        let mut t = s.clone();
        t.enter_call();
        assert_eq!(t.regs[6], Val::Fp(2, Some(-8)));
        // The innermost stores 7 into the outermost's fp-8 (through r6, two frames up).
        t.regs[2] = Val::Scalar(Iv::c(7));
        t = t.step(&stx(6, 2, 0));
        t.return_to(Some(&mid));
        assert_eq!(t.regs[6], Val::Fp(1, Some(-8)));
        assert_eq!(t.step(&ldx(0, 6, 0)).regs[0], Val::Scalar(Iv::c(7)));
        // The callee's own slot is still there.
        assert_eq!(t.step(&ldx(0, 10, -8)).regs[0], Val::Fp(1, Some(-8)));
        t.return_to(Some(&caller));
        // Back in the caller: its slot holds what the callees wrote, not the 5 it stored.
        assert_eq!(t.step(&ldx(0, 10, -8)).regs[0], Val::Scalar(Iv::c(7)));
        assert_eq!(t.step(&ldx(0, 10, -16)).regs[0], Val::Fp(0, Some(-8)));
        assert!(t.callers.is_empty());
    }

    #[test]
    fn a_store_the_analysis_cannot_place_forgets_every_frame() {
        let mut s = State::entry();
        s.regs[2] = Val::Scalar(Iv::c(5));
        s = s.step(&stx(10, 2, -8));
        let caller = s.clone();
        s.enter_call();
        s.regs[2] = Val::Scalar(Iv::c(9));
        s = s.step(&stx(10, 2, -8));
        // Through an unknown pointer: any stack.
        s.regs[3] = Val::Top;
        s = s.step(&stx(3, 2, 0));
        assert_eq!(s.stack[cell(-8).unwrap()], Val::Top);
        s.return_to(Some(&caller));
        assert_eq!(s.step(&ldx(0, 10, -8)).regs[0], Val::Scalar(Iv::TOP));
        // A helper that writes through a pointer to the caller's stack forgets that frame.
        let mut s = State::entry();
        s = s.step(&stx(10, 2, -8));
        s.regs[2] = Val::Scalar(Iv::c(5));
        s = s.step(&stx(10, 2, -8));
        for i in fp_plus(1, -8) {
            s = s.step(&i);
        }
        let caller = s.clone();
        s.enter_call();
        s.regs[3] = s.regs[1];
        s = s.step(&Insn::Call { helper: u32::MAX });
        s.return_to(Some(&caller));
        assert_eq!(s.step(&ldx(0, 10, -8)).regs[0], Val::Scalar(Iv::TOP));
        // A pointer to the callee's frame is gone once it returns.
        let mut s = State::entry();
        s.enter_call();
        s.regs[0] = Val::Fp(0, Some(-8));
        s.return_to(None);
        assert_eq!(s.regs[0], Val::Top);
    }

    /// A helper whose prototype bounds its write (`bpf_xdp_load_bytes(ctx, off, buf, len)`:
    /// `len` bytes at `buf`) forgets those bytes only: a loop counter spilled beside the buffer
    /// keeps its value (calico's debug build kept one at r10-72 beside a 2-byte buffer at
    /// r10-24, and its loop was refused "no evident bound"). Without a known length, the frame.
    #[test]
    fn a_helper_write_its_prototype_bounds_forgets_those_bytes_only() {
        let load_bytes = Insn::Call {
            helper: crate::interp::HELPER_XDP_LOAD_BYTES,
        };
        let setup = |len: Val| {
            let mut s = State::entry();
            s.regs[2] = Val::Scalar(Iv::c(8));
            s = s.step(&stx(10, 2, -72)); // the counter
            s = s.step(&stx(10, 2, -24)); // the buffer's old bytes
            s.regs[3] = Val::Fp(0, Some(-24));
            s.regs[4] = len;
            s.step(&load_bytes)
        };
        let s = setup(Val::Scalar(Iv::c(2)));
        assert_eq!(s.step(&ldx(0, 10, -72)).regs[0], Val::Scalar(Iv::c(8)));
        assert_ne!(s.step(&ldx(0, 10, -24)).regs[0], Val::Scalar(Iv::c(8)));
        let s = setup(Val::Scalar(Iv { lo: 1, hi: 64 }));
        assert_ne!(s.step(&ldx(0, 10, -72)).regs[0], Val::Scalar(Iv::c(8)));
        // A length that reaches the counter forgets it.
        let mut s = setup(Val::Scalar(Iv::c(2)));
        s.regs[3] = Val::Fp(0, Some(-80));
        s.regs[4] = Val::Scalar(Iv::c(16));
        let s = s.step(&load_bytes);
        assert_ne!(s.step(&ldx(0, 10, -72)).regs[0], Val::Scalar(Iv::c(8)));
    }
}
