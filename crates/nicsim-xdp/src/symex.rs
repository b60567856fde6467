//! Symbolic execution of one path into an SMT-LIB2 query over bit-vectors and arrays (paper §5.5).
//!
//! The packet is an array from 64-bit offsets (relative to where the packet started when it was
//! received) to bytes, with a symbolic length `len`; every map is an array from (key, byte
//! offset) to bytes, its initial contents symbolic, plus, for hash maps, an array saying which
//! keys are present; the stack is tracked byte by byte per call frame (offsets are constants in
//! verified code), with pointer spills kept as pointers. Helper results the kernel defines
//! exactly (map lookups, `adjust_head`/`_tail` success, `redirect`) are modelled; the others
//! (`ktime_get_ns`, random numbers, `csum_diff`) are fresh values.
//!
//! Principle: never under-approximate feasibility. Whatever is not modelled exactly becomes a
//! fresh, unconstrained value, so a path reported infeasible really is; a spurious "feasible"
//! only makes the guarantee lower, never wrong.
//!
//! Each branch condition is asserted with the name `a<k>` (k = the edge's position on the path),
//! so an unsat core says how long a prefix is already infeasible.

use std::collections::HashMap;
use std::fmt::Write;

use crate::absint::{HELPER_ADJUST_HEAD, HELPER_ADJUST_TAIL, HELPER_MAP_LOOKUP};
use crate::cfg::EdgeKind;
use crate::insn::{AluOp, AtomicOp, Imm64, Insn, JmpOp, Size, Src};
use crate::load::Program;

/// Bytes of headroom in front of the packet (XDP_PACKET_HEADROOM).
const HEADROOM: i64 = 256;
/// Largest frame the analysis considers (MTU plus Ethernet header).
const ETH_HLEN: u64 = 14;

fn bv64(v: u64) -> String {
    format!("#x{v:016x}")
}

#[derive(Debug, Clone, PartialEq)]
enum Region {
    Pkt,
    Stack(u32),
    /// A value of map `m` under key term `key`; `null` is true when the lookup found nothing.
    Map {
        m: u32,
        key: String,
        null: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum V {
    /// A 64-bit scalar term.
    S(String),
    /// A pointer: region plus 64-bit offset term (and the offset if constant).
    P(Region, String, Option<i64>),
    MapPtr(u32),
    Ctx,
}

struct Frame {
    id: u32,
    regs: [V; 11],
    stack: HashMap<i64, String>,
    spills: HashMap<i64, V>,
    /// The call frame's caller registers r6–r9, restored on return.
    saved: Option<[V; 4]>,
}

/// A map entry the path looked up: the model gives its key and initial value.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Lookup {
    pub map: String,
    pub key: String,
    pub key_size: u32,
    /// Initial value bytes (terms), for `value_size` bytes.
    pub value: Vec<String>,
    /// Whether the key was present (term), for hash maps.
    pub present: Option<String>,
}

/// The query for one path, and the terms to read from a model.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Query {
    pub smt: String,
    /// The received packet: `len` bytes of the array `packet`.
    pub len: String,
    pub packet: String,
    /// The program's return value (the XDP action) at the end of the path.
    pub ret: String,
    pub lookups: Vec<Lookup>,
    /// (position on the path, condition text) of every branch assertion; the texts mean the
    /// same on every path (terms are named by their definitions).
    #[serde(skip)]
    pub asserts: Vec<(usize, String)>,
}

struct Sym<'a> {
    p: &'a Program,
    out: String,
    n: usize,
    frames: Vec<Frame>,
    next_frame: u32,
    pkt: String,
    data_off: String,
    end_off: String,
    /// Current array of each map's values, and of its presence bits.
    mem: Vec<String>,
    present: Vec<String>,
    lookups: Vec<Lookup>,
    ret: Option<String>,
    defined: std::collections::HashSet<u64>,
    /// (position on the path, condition) of every branch assertion.
    asserts: Vec<(usize, String)>,
}

impl<'a> Sym<'a> {
    /// Name a term. Names are hashes of the definition, so the same term gets the same name
    /// on every path: assertions can then be compared across paths by their text.
    fn def(&mut self, sort: &str, expr: &str) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in sort.bytes().chain([0u8]).chain(expr.bytes()) {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
        let name = format!("t{h:016x}");
        if self.defined.insert(h) {
            let _ = writeln!(self.out, "(define-fun {name} () {sort} {expr})");
        }
        name
    }
    fn fresh(&mut self, sort: &str, hint: &str) -> String {
        self.n += 1;
        let name = format!("{hint}_{}", self.n);
        let _ = writeln!(self.out, "(declare-const {name} {sort})");
        name
    }
    fn fresh64(&mut self, hint: &str) -> V {
        V::S(self.fresh("(_ BitVec 64)", hint))
    }
    fn frame(&mut self) -> &mut Frame {
        self.frames.last_mut().unwrap()
    }
    fn reg(&self, r: u8) -> V {
        self.frames.last().unwrap().regs[r as usize].clone()
    }
    fn set(&mut self, r: u8, v: V) {
        self.frame().regs[r as usize] = v;
    }
    fn src(&self, s: Src) -> V {
        match s {
            Src::Reg(r) => self.reg(r),
            Src::Imm(i) => V::S(bv64(i as i64 as u64)),
        }
    }
    /// The value as a 64-bit scalar term (pointers other than scalars become fresh values).
    fn scalar(&mut self, v: &V) -> String {
        match v {
            V::S(t) => t.clone(),
            _ => self.fresh("(_ BitVec 64)", "ptr"),
        }
    }

    fn map_sort(&self, m: u32) -> (u32, String) {
        let ks = self.p.maps[m as usize].key_size.max(1) * 8;
        (ks, format!("(Array (_ BitVec {}) (_ BitVec 8))", ks + 32))
    }

    fn map_index(&self, key: &str, off: &str, i: i64) -> String {
        format!(
            "(concat {key} ((_ extract 31 0) (bvadd {off} {})))",
            bv64(i as u64)
        )
    }

    /// Load `size` bytes at `ptr` (little-endian), zero-extended to 64 bits.
    fn load(&mut self, ptr: &V, size: Size) -> V {
        let n = size.bytes() as i64;
        let bytes: Option<Vec<String>> = match ptr {
            V::P(Region::Pkt, off, _) => Some(
                (0..n)
                    .map(|i| format!("(select {} (bvadd {off} {}))", self.pkt, bv64(i as u64)))
                    .collect(),
            ),
            V::P(Region::Stack(f), _, Some(k)) => {
                let fr = self.frames.iter().rposition(|x| x.id == *f);
                match fr {
                    Some(fi) => {
                        if n == 8 {
                            if let Some(v) = self.frames[fi].spills.get(k).cloned() {
                                return v;
                            }
                        }
                        let mut out = Vec::new();
                        for i in 0..n {
                            let b = match self.frames[fi].stack.get(&(k + i)).cloned() {
                                Some(b) => b,
                                None => {
                                    let b = self.fresh("(_ BitVec 8)", "stk");
                                    self.frames[fi].stack.insert(k + i, b.clone());
                                    b
                                }
                            };
                            out.push(b);
                        }
                        Some(out)
                    }
                    None => None,
                }
            }
            V::P(Region::Map { m, key, .. }, off, _) => {
                let mem = self.mem[*m as usize].clone();
                Some(
                    (0..n)
                        .map(|i| format!("(select {mem} {})", self.map_index(key, off, i)))
                        .collect(),
                )
            }
            _ => None,
        };
        let Some(bytes) = bytes else {
            return self.fresh64("ld");
        };
        let mut t = String::from("(concat");
        for b in bytes.iter().rev() {
            t.push(' ');
            t.push_str(b);
        }
        t.push(')');
        if n == 1 {
            t = bytes[0].clone();
        }
        let ext = 64 - 8 * n;
        let e = if ext > 0 {
            format!("((_ zero_extend {ext}) {t})")
        } else {
            t
        };
        V::S(self.def("(_ BitVec 64)", &e))
    }

    /// Store the low `size` bytes of `val` at `ptr`.
    fn store(&mut self, ptr: &V, size: Size, val: &V) {
        let n = size.bytes() as i64;
        match ptr {
            V::P(Region::Stack(f), _, Some(k)) => {
                let f = *f;
                let k = *k;
                let Some(fi) = self.frames.iter().rposition(|x| x.id == f) else {
                    return;
                };
                for i in 0..n {
                    self.frames[fi]
                        .spills
                        .retain(|&o, _| !(o <= k + i && k + i < o + 8));
                }
                if n == 8 && !matches!(val, V::S(_)) {
                    // A pointer spill: keep it as a pointer; its bytes are unknown.
                    for i in 0..n {
                        self.frames[fi].stack.remove(&(k + i));
                    }
                    self.frames[fi].spills.insert(k, val.clone());
                    return;
                }
                let v = self.scalar(val);
                for i in 0..n {
                    let b = format!("((_ extract {} {}) {v})", 8 * i + 7, 8 * i);
                    self.frames[fi].stack.insert(k + i, b);
                }
            }
            V::P(Region::Pkt, off, _) => {
                let v = self.scalar(val);
                let mut arr = self.pkt.clone();
                for i in 0..n {
                    arr = format!(
                        "(store {arr} (bvadd {off} {}) ((_ extract {} {}) {v}))",
                        bv64(i as u64),
                        8 * i + 7,
                        8 * i
                    );
                }
                self.pkt = self.def("(Array (_ BitVec 64) (_ BitVec 8))", &arr);
            }
            V::P(Region::Map { m, key, .. }, off, _) => {
                let v = self.scalar(val);
                let m = *m as usize;
                let mut arr = self.mem[m].clone();
                for i in 0..n {
                    arr = format!(
                        "(store {arr} {} ((_ extract {} {}) {v}))",
                        self.map_index(key, off, i),
                        8 * i + 7,
                        8 * i
                    );
                }
                let sort = self.map_sort(m as u32).1;
                self.mem[m] = self.def(&sort, &arr);
            }
            _ => {}
        }
    }

    /// Bytes `n` of the stack at `ptr` as one term (a map key), if `ptr` is on the stack.
    fn stack_bytes(&mut self, ptr: &V, n: u32) -> String {
        let mut bytes = Vec::new();
        for i in 0..n as i64 {
            let p = match ptr {
                V::P(r, off, k) => V::P(r.clone(), off.clone(), k.map(|k| k + i)),
                _ => ptr.clone(),
            };
            match self.load(&p, Size::B) {
                V::S(t) => bytes.push(format!("((_ extract 7 0) {t})")),
                _ => unreachable!(),
            }
        }
        let mut t = String::from("(concat");
        for b in bytes.iter().rev() {
            t.push(' ');
            t.push_str(b);
        }
        t.push(')');
        if n == 1 {
            t = bytes[0].clone();
        }
        self.def(&format!("(_ BitVec {})", n * 8), &t)
    }

    fn alu(&mut self, op: AluOp, is64: bool, d: V, s: V) -> V {
        // Pointer arithmetic keeps the region.
        if is64 {
            match (op, &d, &s) {
                (AluOp::Mov, _, _) => return s,
                (AluOp::Add | AluOp::Sub, V::P(r, off, k), V::S(x)) => {
                    let o = if op == AluOp::Add { "bvadd" } else { "bvsub" };
                    let kk = match (k, x.strip_prefix("#x")) {
                        (Some(k), Some(h)) => u64::from_str_radix(h, 16).ok().map(|c| {
                            if op == AluOp::Add {
                                k.wrapping_add(c as i64)
                            } else {
                                k.wrapping_sub(c as i64)
                            }
                        }),
                        _ => None,
                    };
                    let t = match kk {
                        Some(c) => bv64(c as u64),
                        None => self.def("(_ BitVec 64)", &format!("({o} {off} {x})")),
                    };
                    return V::P(r.clone(), t, kk);
                }
                (AluOp::Add, V::S(_), V::P(..)) => return self.alu(op, is64, s, d),
                (AluOp::Sub, V::P(r1, a, _), V::P(r2, b, _))
                    if std::mem::discriminant(r1) == std::mem::discriminant(r2) =>
                {
                    return V::S(self.def("(_ BitVec 64)", &format!("(bvsub {a} {b})")));
                }
                _ => {}
            }
        } else if op == AluOp::Mov {
            let x = self.scalar(&s);
            return V::S(self.def(
                "(_ BitVec 64)",
                &format!("((_ zero_extend 32) ((_ extract 31 0) {x}))"),
            ));
        }
        let a = self.scalar(&d);
        let b = self.scalar(&s);
        let (w, a, b) = if is64 {
            (64, a, b)
        } else {
            (
                32,
                format!("((_ extract 31 0) {a})"),
                format!("((_ extract 31 0) {b})"),
            )
        };
        let zero = format!("(_ bv0 {w})");
        let mask = format!("(_ bv{} {w})", w - 1);
        let e = match op {
            AluOp::Add => format!("(bvadd {a} {b})"),
            AluOp::Sub => format!("(bvsub {a} {b})"),
            AluOp::Mul => format!("(bvmul {a} {b})"),
            AluOp::Div => format!("(ite (= {b} {zero}) {zero} (bvudiv {a} {b}))"),
            AluOp::Mod => format!("(ite (= {b} {zero}) {a} (bvurem {a} {b}))"),
            AluOp::Or => format!("(bvor {a} {b})"),
            AluOp::And => format!("(bvand {a} {b})"),
            AluOp::Xor => format!("(bvxor {a} {b})"),
            AluOp::Lsh => format!("(bvshl {a} (bvand {b} {mask}))"),
            AluOp::Rsh => format!("(bvlshr {a} (bvand {b} {mask}))"),
            AluOp::Arsh => format!("(bvashr {a} (bvand {b} {mask}))"),
            AluOp::Neg => format!("(bvneg {a})"),
            AluOp::Mov => b,
        };
        let e = if is64 {
            e
        } else {
            format!("((_ zero_extend 32) {e})")
        };
        V::S(self.def("(_ BitVec 64)", &e))
    }

    fn cond(&mut self, op: JmpOp, is64: bool, a: V, b: V) -> String {
        let (x, y) = match (&a, &b) {
            (V::S(x), V::S(y)) => (x.clone(), y.clone()),
            (V::P(r1, x, _), V::P(r2, y, _))
                if std::mem::discriminant(r1) == std::mem::discriminant(r2) =>
            {
                (x.clone(), y.clone())
            }
            // A looked-up map value against 0: the null check.
            (V::P(Region::Map { null, .. }, _, _), V::S(z))
            | (V::S(z), V::P(Region::Map { null, .. }, _, _))
                if z == &bv64(0) =>
            {
                return match op {
                    JmpOp::Eq => null.clone(),
                    JmpOp::Ne => format!("(not {null})"),
                    _ => self.fresh("Bool", "c"),
                };
            }
            // Other pointers are never null.
            (V::P(..) | V::Ctx | V::MapPtr(_), V::S(z)) if z == &bv64(0) => {
                return match op {
                    JmpOp::Eq => "false".into(),
                    JmpOp::Ne => "true".into(),
                    _ => self.fresh("Bool", "c"),
                };
            }
            _ => return self.fresh("Bool", "c"),
        };
        let (x, y) = if is64 {
            (x, y)
        } else {
            (
                format!("((_ extract 31 0) {x})"),
                format!("((_ extract 31 0) {y})"),
            )
        };
        match op {
            JmpOp::Eq => format!("(= {x} {y})"),
            JmpOp::Ne => format!("(not (= {x} {y}))"),
            JmpOp::Gt => format!("(bvugt {x} {y})"),
            JmpOp::Ge => format!("(bvuge {x} {y})"),
            JmpOp::Lt => format!("(bvult {x} {y})"),
            JmpOp::Le => format!("(bvule {x} {y})"),
            JmpOp::Sgt => format!("(bvsgt {x} {y})"),
            JmpOp::Sge => format!("(bvsge {x} {y})"),
            JmpOp::Slt => format!("(bvslt {x} {y})"),
            JmpOp::Sle => format!("(bvsle {x} {y})"),
            JmpOp::Set => {
                let w = if is64 { 64 } else { 32 };
                format!("(not (= (bvand {x} {y}) (_ bv0 {w})))")
            }
        }
    }

    fn call(&mut self, helper: u32) {
        let r1 = self.reg(1);
        let r2 = self.reg(2);
        let r3 = self.reg(3);
        let r4 = self.reg(4);
        let r0 = match (helper, &r1) {
            (HELPER_MAP_LOOKUP, V::MapPtr(m)) => {
                let m = *m;
                let def = self.p.maps[m as usize].clone();
                let key = self.stack_bytes(&r2, def.key_size.max(1));
                let ks = def.key_size.max(1) * 8;
                let null = if def.is_array() {
                    self.def(
                        "Bool",
                        &format!("(bvuge {key} (_ bv{} {ks}))", def.max_entries),
                    )
                } else {
                    let pres = self.present[m as usize].clone();
                    self.def("Bool", &format!("(not (select {pres} {key}))"))
                };
                let mem0 = format!("m{m}_0");
                let value = (0..def.value_size)
                    .map(|i| format!("(select {mem0} (concat {key} (_ bv{i} 32)))"))
                    .collect();
                let present = (!def.is_array()).then(|| format!("(select p{m}_0 {key})"));
                self.lookups.push(Lookup {
                    map: def.name.clone(),
                    key: key.clone(),
                    key_size: def.key_size,
                    value,
                    present,
                });
                V::P(Region::Map { m, key, null }, bv64(0), Some(0))
            }
            (2, V::MapPtr(m)) | (3, V::MapPtr(m)) => {
                // update / delete
                let m = *m;
                let def = self.p.maps[m as usize].clone();
                let key = self.stack_bytes(&r2, def.key_size.max(1));
                if helper == 2 {
                    let val = V::P(
                        Region::Map {
                            m,
                            key: key.clone(),
                            null: "false".into(),
                        },
                        bv64(0),
                        Some(0),
                    );
                    for i in 0..def.value_size as i64 {
                        let src = match &r3 {
                            V::P(r, off, k) => V::P(r.clone(), off.clone(), k.map(|k| k + i)),
                            other => other.clone(),
                        };
                        let b = self.load(&src, Size::B);
                        let dst = match &val {
                            V::P(r, _, _) => V::P(r.clone(), bv64(i as u64), Some(i)),
                            _ => unreachable!(),
                        };
                        self.store(&dst, Size::B, &b);
                    }
                }
                if !def.is_array() {
                    let pres = self.present[m as usize].clone();
                    let (ks, _) = self.map_sort(m);
                    let on = if helper == 2 { "true" } else { "false" };
                    self.present[m as usize] = self.def(
                        &format!("(Array (_ BitVec {ks}) Bool)"),
                        &format!("(store {pres} {key} {on})"),
                    );
                }
                let _ = r4;
                self.fresh64("upd")
            }
            (HELPER_ADJUST_HEAD, _) => {
                let d = self.scalar(&r2);
                let delta = self.def(
                    "(_ BitVec 64)",
                    &format!("((_ sign_extend 32) ((_ extract 31 0) {d}))"),
                );
                let new = self.def(
                    "(_ BitVec 64)",
                    &format!("(bvadd {} {delta})", self.data_off),
                );
                let ok = self.def(
                    "Bool",
                    &format!(
                        "(and (bvsge {new} {}) (bvsle (bvadd {new} {}) {}))",
                        bv64((-HEADROOM) as u64),
                        bv64(ETH_HLEN),
                        self.end_off
                    ),
                );
                let cur = self.data_off.clone();
                self.data_off = self.def("(_ BitVec 64)", &format!("(ite {ok} {new} {cur})"));
                V::S(self.def(
                    "(_ BitVec 64)",
                    &format!("(ite {ok} {} {})", bv64(0), bv64((-22i64) as u64)),
                ))
            }
            (HELPER_ADJUST_TAIL, _) => {
                let d = self.scalar(&r2);
                let delta = self.def(
                    "(_ BitVec 64)",
                    &format!("((_ sign_extend 32) ((_ extract 31 0) {d}))"),
                );
                let new = self.def(
                    "(_ BitVec 64)",
                    &format!("(bvadd {} {delta})", self.end_off),
                );
                let ok = self.def(
                    "Bool",
                    &format!(
                        "(and (bvsge {new} (bvadd {} {})) (bvsle {new} (bvadd {} {})))",
                        self.data_off,
                        bv64(ETH_HLEN),
                        self.data_off,
                        bv64(3520)
                    ),
                );
                let cur = self.end_off.clone();
                self.end_off = self.def("(_ BitVec 64)", &format!("(ite {ok} {new} {cur})"));
                V::S(self.def(
                    "(_ BitVec 64)",
                    &format!("(ite {ok} {} {})", bv64(0), bv64((-22i64) as u64)),
                ))
            }
            (23, _) => {
                // bpf_redirect: XDP_REDIRECT unless flags are set (then XDP_ABORTED).
                let f = self.scalar(&r2);
                V::S(self.def(
                    "(_ BitVec 64)",
                    &format!("(ite (= {f} {}) {} {})", bv64(0), bv64(4), bv64(0)),
                ))
            }
            _ => self.fresh64("h"),
        };
        for r in 1..=5 {
            let v = self.fresh64("clob");
            self.set(r, v);
        }
        self.set(0, r0);
    }

    fn step(&mut self, insn: &Insn, kind: EdgeKind, k: usize) {
        match *insn {
            Insn::Alu { op, is64, dst, src } => {
                let v = self.alu(op, is64, self.reg(dst), self.src(src));
                self.set(dst, v);
            }
            Insn::End { dst, bits, to_be } => {
                let x = self.scalar(&self.reg(dst));
                let e = if to_be {
                    let n = bits / 8;
                    let parts: Vec<String> = (0..n)
                        .map(|i| format!("((_ extract {} {}) {x})", 8 * i + 7, 8 * i))
                        .collect();
                    let cat = if n == 1 {
                        parts[0].clone()
                    } else {
                        format!("(concat {})", parts.join(" "))
                    };
                    if bits < 64 {
                        format!("((_ zero_extend {}) {cat})", 64 - bits)
                    } else {
                        cat
                    }
                } else if bits < 64 {
                    format!(
                        "((_ zero_extend {}) ((_ extract {} 0) {x}))",
                        64 - bits,
                        bits - 1
                    )
                } else {
                    x
                };
                let v = V::S(self.def("(_ BitVec 64)", &e));
                self.set(dst, v);
            }
            Insn::Ldx {
                size,
                dst,
                src,
                off,
                signed,
            } => {
                let base = self.reg(src);
                let v = match &base {
                    V::Ctx => match off {
                        0 | 8 => {
                            let k = (self.data_off == bv64(0)).then_some(0);
                            V::P(Region::Pkt, self.data_off.clone(), k)
                        }
                        4 => V::P(Region::Pkt, self.end_off.clone(), None),
                        _ => {
                            let t = self.fresh("(_ BitVec 32)", "ctx");
                            V::S(self.def("(_ BitVec 64)", &format!("((_ zero_extend 32) {t})")))
                        }
                    },
                    _ => {
                        let p = self.offset(&base, off as i64);
                        self.load(&p, size)
                    }
                };
                let v = if signed && size != Size::DW {
                    let x = self.scalar(&v);
                    let b = size.bytes() * 8;
                    V::S(self.def(
                        "(_ BitVec 64)",
                        &format!("((_ sign_extend {}) ((_ extract {} 0) {x}))", 64 - b, b - 1),
                    ))
                } else {
                    v
                };
                self.set(dst, v);
            }
            Insn::St {
                size,
                dst,
                src,
                off,
            } => {
                let p = self.offset(&self.reg(dst), off as i64);
                let v = self.src(src);
                self.store(&p, size, &v);
            }
            Insn::Atomic {
                op,
                size,
                dst,
                src,
                off,
                fetch,
            } => {
                let p = self.offset(&self.reg(dst), off as i64);
                let old = self.load(&p, size);
                let s = self.reg(src);
                let w = size.bytes() * 8;
                let o = self.scalar(&old);
                let x = self.scalar(&s);
                let new = match op {
                    AtomicOp::Add => format!("(bvadd {o} {x})"),
                    AtomicOp::Or => format!("(bvor {o} {x})"),
                    AtomicOp::And => format!("(bvand {o} {x})"),
                    AtomicOp::Xor => format!("(bvxor {o} {x})"),
                    AtomicOp::Xchg => x.clone(),
                    AtomicOp::CmpXchg => {
                        let r0 = self.scalar(&self.reg(0));
                        format!(
                            "(ite (= ((_ extract {} 0) {o}) ((_ extract {} 0) {r0})) {x} {o})",
                            w - 1,
                            w - 1
                        )
                    }
                };
                let nv = V::S(self.def("(_ BitVec 64)", &new));
                self.store(&p, size, &nv);
                if fetch {
                    let r = if op == AtomicOp::CmpXchg { 0 } else { src };
                    self.set(r, old);
                }
            }
            Insn::LdImm64 { dst, imm } => {
                let v = match imm {
                    Imm64::Const(c) => V::S(bv64(c)),
                    Imm64::Map(m) => V::MapPtr(m),
                    Imm64::MapValue { map, off } => V::P(
                        Region::Map {
                            m: map,
                            key: format!("(_ bv0 {})", self.map_sort(map).0),
                            null: "false".into(),
                        },
                        bv64(off as u64),
                        Some(off as i64),
                    ),
                };
                self.set(dst, v);
            }
            Insn::Jmp {
                op, is64, dst, src, ..
            } => {
                let c = self.cond(op, is64, self.reg(dst), self.src(src));
                let c = match kind {
                    EdgeKind::Taken => c,
                    EdgeKind::NotTaken => format!("(not {c})"),
                    // A branch the static analysis decided: its condition holds anyway.
                    _ => return,
                };
                let _ = writeln!(self.out, "(assert (! {c} :named a{k}))");
                self.asserts.push((k, c));
            }
            Insn::Call { helper } => self.call(helper),
            Insn::CallLocal { .. } => {
                self.next_frame += 1;
                let f = self.next_frame;
                let caller = self.frames.last().unwrap();
                let mut regs = caller.regs.clone();
                let saved = [
                    regs[6].clone(),
                    regs[7].clone(),
                    regs[8].clone(),
                    regs[9].clone(),
                ];
                regs[10] = V::P(Region::Stack(f), bv64(0), Some(0));
                self.frames.push(Frame {
                    id: f,
                    regs,
                    stack: HashMap::new(),
                    spills: HashMap::new(),
                    saved: Some(saved),
                });
            }
            Insn::Exit => {
                if self.frames.len() > 1 {
                    let done = self.frames.pop().unwrap();
                    let r0 = done.regs[0].clone();
                    let saved = done.saved.unwrap();
                    let fr = self.frame();
                    fr.regs[0] = r0;
                    for (i, v) in saved.into_iter().enumerate() {
                        fr.regs[6 + i] = v;
                    }
                    for r in 1..=5 {
                        let v = self.fresh64("clob");
                        self.set(r, v);
                    }
                } else {
                    let r0 = self.scalar(&self.reg(0));
                    self.ret = Some(r0);
                }
            }
            Insn::Ja { .. } | Insn::LdAbs => {}
        }
    }

    fn offset(&mut self, base: &V, off: i64) -> V {
        if off == 0 {
            return base.clone();
        }
        self.alu(AluOp::Add, true, base.clone(), V::S(bv64(off as u64)))
    }
}

/// The SMT-LIB2 query for the path that executes `steps` (instruction index, how it leaves),
/// in order; `min_len`..=`max_len` bounds the received packet.
pub fn query(p: &Program, steps: &[(u32, EdgeKind)], min_len: u64, max_len: u64) -> Query {
    let mut s = Sym {
        p,
        out: String::new(),
        n: 0,
        frames: Vec::new(),
        next_frame: 0,
        pkt: "pkt0".into(),
        data_off: bv64(0),
        end_off: "len".into(),
        mem: (0..p.maps.len()).map(|m| format!("m{m}_0")).collect(),
        present: (0..p.maps.len()).map(|m| format!("p{m}_0")).collect(),
        lookups: Vec::new(),
        ret: None,
        defined: Default::default(),
        asserts: Vec::new(),
    };
    let _ = writeln!(
        s.out,
        "(declare-const pkt0 (Array (_ BitVec 64) (_ BitVec 8)))"
    );
    let _ = writeln!(s.out, "(declare-const len (_ BitVec 64))");
    let _ = writeln!(
        s.out,
        "(assert (! (and (bvuge len {}) (bvule len {})) :named len_range))",
        bv64(min_len),
        bv64(max_len)
    );
    for (m, def) in p.maps.iter().enumerate() {
        let (ks, sort) = s.map_sort(m as u32);
        let _ = writeln!(s.out, "(declare-const m{m}_0 {sort})");
        let _ = writeln!(s.out, "(declare-const p{m}_0 (Array (_ BitVec {ks}) Bool))");
        if def.frozen && !def.data.is_empty() {
            // Read-only data: its bytes are constants.
            for (i, b) in def.data.iter().enumerate() {
                let _ = writeln!(
                    s.out,
                    "(assert (= (select m{m}_0 (concat (_ bv0 {ks}) (_ bv{i} 32))) #x{b:02x}))"
                );
            }
        }
    }
    let mut regs: [V; 11] = std::array::from_fn(|_| V::S(bv64(0)));
    for (r, slot) in regs.iter_mut().enumerate() {
        *slot = V::S(format!("r{r}_in"));
        let _ = writeln!(s.out, "(declare-const r{r}_in (_ BitVec 64))");
    }
    regs[1] = V::Ctx;
    regs[10] = V::P(Region::Stack(0), bv64(0), Some(0));
    s.frames.push(Frame {
        id: 0,
        regs,
        stack: HashMap::new(),
        spills: HashMap::new(),
        saved: None,
    });
    for (k, &(pc, kind)) in steps.iter().enumerate() {
        let insn = p.code[pc as usize].expect("instruction");
        s.step(&insn, kind, k);
    }
    let ret = s.ret.clone().unwrap_or_else(|| bv64(0));
    let ret = s.def("(_ BitVec 64)", &ret);
    Query {
        smt: s.out,
        len: "len".into(),
        packet: "pkt0".into(),
        ret,
        lookups: s.lookups,
        asserts: s.asserts,
    }
}
