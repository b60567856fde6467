//! Abstract register values: unsigned ranges for scalars, and pointers into the packet with a
//! range of offsets. Loop unrolling uses it to find loop bounds that the code makes evident
//! (a counter that starts at a constant and is compared with a constant or a masked value), and
//! the cost analysis uses it to read the minimum packet length off the packet-bounds checks
//! (`data + off > data_end` not taken ⇒ the packet is at least `off` bytes long).
//!
//! Everything here over-approximates: a range holds every value the register can have, and a
//! branch is resolved only when every value in the ranges goes the same way.

use crate::insn::{alu, endian, imm_value, jmp_taken, AluOp, Insn, JmpOp, Size, Src};

pub const HELPER_MAP_LOOKUP: u32 = 1;
pub const HELPER_ADJUST_HEAD: u32 = 44;
pub const HELPER_ADJUST_TAIL: u32 = 65;

/// An unsigned range `lo..=hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iv {
    pub lo: u64,
    pub hi: u64,
}

impl Iv {
    pub const TOP: Iv = Iv {
        lo: 0,
        hi: u64::MAX,
    };
    pub const TOP32: Iv = Iv {
        lo: 0,
        hi: u32::MAX as u64,
    };
    pub fn c(v: u64) -> Iv {
        Iv { lo: v, hi: v }
    }
    pub fn konst(self) -> Option<u64> {
        (self.lo == self.hi).then_some(self.lo)
    }
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
    fn low32(self) -> Iv {
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
    Scalar(Iv),
    /// The program's context (`struct xdp_md *`).
    Ctx,
    /// `data + off` (the packet start as the program last loaded it from the context).
    Pkt(Iv),
    /// `data_end`.
    PktEnd,
    /// The stack: r10 and pointers derived from it.
    Fp,
    /// The address of map `m` (an `LD_IMM64` map reference).
    MapPtr(u32),
    /// A pointer into a value of map `m` (from `bpf_map_lookup_elem`, or global data).
    MapVal(u32),
}

impl Val {
    pub fn join(self, o: Val) -> Val {
        match (self, o) {
            (a, b) if a == b => a,
            (Val::Scalar(a), Val::Scalar(b)) => Val::Scalar(a.join(b)),
            (Val::Pkt(a), Val::Pkt(b)) => Val::Pkt(a.join(b)),
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

/// Registers r0..=r10.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    pub regs: [Val; 11],
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
        regs[10] = Val::Fp;
        State {
            regs,
            shift: Some(0),
        }
    }
    pub fn join(&self, o: &State) -> State {
        let mut regs = self.regs;
        for (r, b) in regs.iter_mut().zip(o.regs) {
            *r = r.join(b);
        }
        State {
            regs,
            shift: if self.shift == o.shift {
                self.shift
            } else {
                None
            },
        }
    }
    /// Join that forces every register that changed to Top (widening, for loops).
    pub fn widen(&self, newer: &State) -> State {
        let mut s = self.join(newer);
        for (r, old) in s.regs.iter_mut().zip(self.regs) {
            if *r != old {
                *r = Val::Top;
            }
        }
        s
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
                    _ => Val::Scalar(bits_range(size.bytes() * 8)),
                };
            }
            Insn::St { .. } => {}
            Insn::Atomic { src, fetch, op, .. } => {
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
                    crate::insn::Imm64::MapValue { map, .. } => Val::MapVal(map),
                };
            }
            Insn::Call { helper } => {
                let delta = s.regs[2].scalar().konst().map(|d| d as i32 as i64);
                let map = s.regs[1];
                // r1–r5 are clobbered; helpers that move the packet invalidate its pointers.
                for r in 0..=5 {
                    s.regs[r] = Val::Top;
                }
                if let (HELPER_MAP_LOOKUP, Val::MapPtr(m)) = (helper, map) {
                    s.regs[0] = Val::MapVal(m);
                }
                if matches!(helper, HELPER_ADJUST_HEAD | HELPER_ADJUST_TAIL | 54) {
                    // The verifier makes the program reload data and data_end.
                    for r in s.regs.iter_mut() {
                        if matches!(r, Val::Pkt(_) | Val::PktEnd) {
                            *r = Val::Top;
                        }
                    }
                    // A check after adjust_head(δ) of `off` bytes means the received packet
                    // had off + δ; after a tail that shrank by |δ| it had more than `off`.
                    s.shift = match (helper, delta) {
                        (HELPER_ADJUST_HEAD, Some(d)) => s.shift.map(|x| x + d),
                        (HELPER_ADJUST_TAIL, Some(d)) if d <= 0 => s.shift,
                        _ => None,
                    };
                }
            }
            Insn::CallLocal { .. } | Insn::Exit | Insn::Ja { .. } | Insn::Jmp { .. } => {}
            Insn::LdAbs => {}
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
                // Narrow the register operand against the other side's range.
                let nx = match op {
                    JmpOp::Eq => Some(Iv {
                        lo: x.lo.max(y.lo),
                        hi: x.hi.min(y.hi),
                    }),
                    JmpOp::Lt if y.hi > 0 => Some(Iv {
                        lo: x.lo,
                        hi: x.hi.min(y.hi - 1),
                    }),
                    JmpOp::Le => Some(Iv {
                        lo: x.lo,
                        hi: x.hi.min(y.hi),
                    }),
                    JmpOp::Gt if y.lo < u64::MAX => Some(Iv {
                        lo: x.lo.max(y.lo + 1),
                        hi: x.hi,
                    }),
                    JmpOp::Ge => Some(Iv {
                        lo: x.lo.max(y.lo),
                        hi: x.hi,
                    }),
                    _ => None,
                };
                if let Some(nx) = nx.filter(|n| n.lo <= n.hi) {
                    self.regs[dst as usize] = Val::Scalar(nx);
                }
            }
            _ => {}
        }
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

fn negate(op: JmpOp) -> Option<JmpOp> {
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
    // Packet pointer arithmetic.
    match (op, d, v) {
        (AluOp::Mov, _, v) if is64 => return v,
        (AluOp::Add, Val::Pkt(o), Val::Scalar(s)) if is64 => {
            return match o.lo.checked_add(s.lo).zip(o.hi.checked_add(s.hi)) {
                Some((lo, hi)) => Val::Pkt(Iv { lo, hi }),
                None => Val::Top,
            }
        }
        (AluOp::Add | AluOp::Sub, Val::Fp, Val::Scalar(_)) if is64 => return Val::Fp,
        (AluOp::Add | AluOp::Sub, Val::MapVal(m), Val::Scalar(_)) if is64 => return Val::MapVal(m),
        (AluOp::Sub, Val::Pkt(o), Val::Scalar(s)) if is64 && s.hi <= o.lo => {
            return Val::Pkt(Iv {
                lo: o.lo - s.hi,
                hi: o.hi - s.lo,
            })
        }
        _ => {}
    }
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
            Iv {
                lo: if op == AluOp::Or { x.lo.max(y.lo) } else { 0 },
                hi: hi.min(max),
            }
        }
        AluOp::Rsh if y.konst().is_some() => {
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
        // After adjust_head(+14) the same check means 48 bytes were received.
        s.regs[2] = Val::Scalar(Iv::c(14));
        let mut t = s.step(&Insn::Call {
            helper: HELPER_ADJUST_HEAD,
        });
        t.regs[4] = Val::Pkt(Iv::c(34));
        t.regs[3] = Val::PktEnd;
        assert_eq!(t.len_need(&j, false), 48);
    }
}
