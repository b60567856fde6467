//! Per-edge cost vectors and minimum packet sizes on the loop-free graph (paper §4 and §5.2).
//!
//! An edge `u → v` carries the cost of executing `u`'s instruction the way the edge leaves it
//! (a branch taken costs more than one not taken); every top-level `exit` gets an edge to one
//! virtual sink, so that paths run from node 0 to the sink. Costs are integer milli-units so
//! that sums and comparisons are exact (millionths of a cycle): component 0 is core cycles, component 1 DRAM-engine
//! cycles.
//!
//! Costs that depend on history are over-estimated, as in the paper: a memory instruction that
//! waits for its result costs `max(issue, latency − cycles since the previous memory
//! instruction)`, and "cycles since" is taken as its minimum over all paths into the node.
//!
//! The minimum packet size of an edge is what its packet-bounds check guarantees (0 if none);
//! a path's is the largest over its edges, and never below the target's minimum packet.

use std::collections::HashMap;

use crate::absint::{State, Val};
use crate::cfg::{EdgeKind, Graph};
use crate::consts::Facts;
use crate::helpers::names::helper_name;
use crate::insn::{AluOp, Insn, JmpOp, Size, Src};
use crate::load::Program;
use crate::target::{InsnCosts, Target};

/// Cost components: core cycles and DRAM-engine cycles.
pub const NC: usize = 2;
/// Names of the cost components, by index.
pub const COMPONENTS: [&str; NC] = ["cores", "dram"];

/// Costs are stored in millionths of a cycle.
pub const UNITS_PER_CYCLE: f64 = 1e6;

fn units(x: f64) -> u64 {
    (x * UNITS_PER_CYCLE).round() as u64
}

/// The class of an instruction, as a path's cost is broken down (`nicsim xdp analyze`'s
/// cost_by_class): `alu`, `byteswap`, `load`, `store`, `atomic`, `ld_imm64`, `jump`, `call`
/// (bpf-to-bpf), `exit`, or `call bpf_<helper>` for each helper.
pub fn insn_class(insn: &Insn) -> String {
    match insn {
        Insn::Alu { .. } => "alu",
        Insn::End { .. } => "byteswap",
        Insn::Ldx { .. } | Insn::LdAbs => "load",
        Insn::St { .. } => "store",
        Insn::Atomic { .. } => "atomic",
        Insn::LdImm64 { .. } => "ld_imm64",
        Insn::Ja { .. } | Insn::Jmp { .. } => "jump",
        Insn::Call { helper } => return format!("call {}", helper_name(*helper)),
        Insn::CallLocal { .. } => "call",
        Insn::Kfunc { .. } => "call kfunc",
        Insn::Exit => "exit",
    }
    .to_string()
}

/// The loop-free graph in compressed form, with a cost vector per edge.
#[derive(Debug, Clone)]
pub struct Dag {
    /// Nodes 0..n; node 0 is the entry and node n−1 the sink.
    pub n: usize,
    /// Edges of node u are `first[u]..first[u+1]`.
    pub first: Vec<u32>,
    /// Target node of each edge.
    pub to: Vec<u32>,
    /// Cost vector of each edge, per component (units of [`UNITS_PER_CYCLE`] per cycle).
    pub cost: Vec<[u64; NC]>,
    /// Packet bytes the edge's bounds check guarantees (0 if none).
    pub need: Vec<u32>,
    /// Instruction the edge executes (the source node's).
    pub pc: Vec<u32>,
    /// What each edge stands for.
    pub kind: Vec<EdgeKind>,
    /// Nodes in topological order.
    pub topo: Vec<u32>,
}

impl Dag {
    /// The sink node (n − 1).
    pub fn sink(&self) -> u32 {
        self.n as u32 - 1
    }
    /// Indices of node `u`'s edges.
    pub fn edges(&self, u: u32) -> std::ops::Range<usize> {
        self.first[u as usize] as usize..self.first[u as usize + 1] as usize
    }
    /// Number of edges.
    pub fn n_edges(&self) -> usize {
        self.to.len()
    }
    /// Bytes the graph's arrays take.
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        (self.first.capacity()
            + self.to.capacity()
            + self.need.capacity()
            + self.pc.capacity()
            + self.topo.capacity())
            * size_of::<u32>()
            + self.cost.capacity() * size_of::<[u64; NC]>()
            + self.kind.capacity() * size_of::<EdgeKind>()
    }
}

/// Why a graph could not be costed on a target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CostError {
    /// The target's costs make the costliest path more than the analysis's fixed-point sums hold.
    #[error(
        "target {target}: its costs make the costliest path of this program at least {cycles} \
         cycles ({component}), more than the analysis adds up ({max}): a cost of the target is \
         far beyond what any machine takes"
    )]
    TooCostly {
        /// The target's name.
        target: String,
        /// `cores` or `dram`.
        component: &'static str,
        /// The costliest path, in cycles (saturated).
        cycles: u64,
        /// The most the sums hold, in cycles.
        max: u64,
    },
    /// A helper the target has no cost for.
    #[error("instruction {pc}: unsupported helper {name} (id {id}) on target {target}{why}")]
    UnsupportedHelper {
        /// Instruction index of the call.
        pc: usize,
        /// Helper id.
        id: u32,
        /// Helper name.
        name: String,
        /// The target's name.
        target: String,
        /// Why, after a colon: the target's rule for helpers ([`Target::helper_rule`]), or that
        /// the kernel does not give XDP programs the helper; empty when neither says.
        why: String,
    },
    /// A helper the analysis refuses whatever the target (crate::helpers, `Helper::refused`).
    #[error("instruction {pc}: helper {name} is not supported: {why}")]
    RefusedHelper {
        /// Instruction index of the call.
        pc: usize,
        /// Helper name.
        name: String,
        /// Why.
        why: String,
    },
    /// A map helper on a map of a type the target has no cost for (the map type, not the
    /// helper, is what is missing).
    #[error("instruction {pc}: map '{map}' of type {map_type} is not supported ({why})")]
    UnsupportedMap {
        /// Instruction index of the call.
        pc: usize,
        /// The map's name.
        map: String,
        /// The kernel's name of the map's type.
        map_type: String,
        /// Why the target has no cost for it.
        why: String,
    },
    /// A kfunc the target has no cost for.
    #[error("instruction {pc}: {why}")]
    UnsupportedKfunc {
        /// Instruction index of the call.
        pc: usize,
        /// The kfunc's name.
        name: String,
        /// Why it cannot be costed.
        why: String,
    },
}

/// Abstract states at every node of an acyclic graph (one pass in topological order). This
/// keeps a state (3.3 kB: registers and 128 stack cells) for every node: the analysis itself
/// uses [`visit_states`], which keeps only those still needed.
pub fn states(p: &Program, g: &Graph, topo: &[u32]) -> Vec<Option<State>> {
    let mut at: Vec<Option<State>> = vec![None; g.nodes.len()];
    let done: Result<(), std::convert::Infallible> = visit_states(p, g, topo, |u, s| {
        at[u as usize] = s.cloned();
        Ok(())
    });
    let Ok(()) = done;
    at
}

/// The abstract state at each node of an acyclic graph, handed to `f` node by node in the
/// order `topo` (`None`: no state reaches the node). One pass, as [`states`], but a state is
/// kept only while it is needed: from the first edge that reaches its node until the node is
/// visited, and at a call node until its `Return` edges are visited (they give the caller's
/// registers and stack back from it). So the pass holds states for the graph's width, not one
/// per node: a state is 3.3 kB, and a graph of a million nodes took 3.5 GB.
pub fn visit_states<E>(
    p: &Program,
    g: &Graph,
    topo: &[u32],
    mut f: impl FnMut(u32, Option<&State>) -> Result<(), E>,
) -> Result<(), E> {
    let mut pending: Vec<Option<Box<State>>> = vec![None; g.nodes.len()];
    if let Some(x) = pending.first_mut() {
        *x = Some(Box::new(State::entry()));
    }
    // Call nodes: how many `Return` edges read each one's state, and those states.
    let mut uses: HashMap<u32, u32> = HashMap::new();
    for n in &g.nodes {
        for e in &n.succ {
            if e.kind == EdgeKind::Return && e.call != crate::cfg::NONE {
                *uses.entry(e.call).or_insert(0) += 1;
            }
        }
    }
    let mut calls: HashMap<u32, State> = HashMap::new();
    for &u in topo {
        let s = pending[u as usize].take();
        f(u, s.as_deref())?;
        let node = &g.nodes[u as usize];
        if let Some(s) = s {
            if uses.contains_key(&u) {
                calls.insert(u, (*s).clone());
            }
            for (_, to, out) in crate::cfg::out_states(g, p, u, &s, |c| calls.get(&c).cloned()) {
                match &mut pending[to as usize] {
                    Some(old) => **old = old.join(&out),
                    slot => *slot = Some(Box::new(out)),
                }
            }
        }
        for e in &node.succ {
            if e.kind != EdgeKind::Return {
                continue;
            }
            if let Some(k) = uses.get_mut(&e.call) {
                *k -= 1;
                if *k == 0 {
                    uses.remove(&e.call);
                    calls.remove(&e.call);
                }
            }
        }
    }
    Ok(())
}

/// Cost of one instruction taking one edge: (core cycles, DRAM cycles, memory wait latency).
struct InsnCost {
    cycles: f64,
    dram: f64,
    /// Latency the instruction waits for (0: not a waiting memory instruction).
    wait_latency: f64,
    /// A memory instruction (resets "cycles since the previous memory instruction").
    memory: bool,
    /// Of `cycles`, those after a memory instruction's command (moving its result out of the
    /// transfer registers): they count towards "cycles since" it.
    tail: f64,
}

/// `immed` instructions that load the 32-bit constant `v` into a register on the NFP (JIT
/// `wrp_immed`): one when `v` or its complement is a 16-bit field shifted by 0, 8 or 16 bits
/// (`pack_immed`), two otherwise (`immed` and `immed_w1`).
pub fn immed_count(v: u32) -> u32 {
    let packs = |x: u32| x & 0xffff_0000 == 0 || x & 0xff00_00ff == 0 || x & 0x0000_ffff == 0;
    if packs(v) || packs(!v) {
        1
    } else {
        2
    }
}

/// `immed` instructions an instruction's constant operand adds, beyond its ALU or compare
/// cost, where an operand encodes constants up to `max` (the NFP JIT's `ur_load_imm_any`, per
/// 32-bit half the instruction works on; a 64-bit operation's upper half of a negative
/// constant is `0xffffffff`).
/// - `mov`: the constant is written with `immed` itself, which the ALU cost counts once per
///   half; a wide lower half takes a second one.
/// - `and`/`or`/`xor` with a half of 0 or all ones need no constant (JIT `wrp_alu_imm`).
/// - Shifts encode their amount; divide is a reciprocal multiply whose constants `div` counts.
/// - A multiply loads its (32-bit) constant once (`wrp_mul`); a 64-bit compare both halves
///   (`cmp_imm`, `jeq_imm`).
pub fn immed_loads(insn: &Insn, max: u32) -> u32 {
    let load = |v: u32| if v <= max { 0 } else { immed_count(v) };
    let halves = |imm: i32, is64: bool, f: &dyn Fn(u32) -> u32| {
        let hi = if is64 && imm < 0 { u32::MAX } else { 0 };
        f(imm as u32) + if is64 { f(hi) } else { 0 }
    };
    match *insn {
        Insn::Alu {
            op,
            is64,
            src: Src::Imm(imm),
            ..
        } => match op {
            AluOp::Mov => immed_count(imm as u32) - 1,
            AluOp::Lsh | AluOp::Rsh | AluOp::Arsh | AluOp::Neg | AluOp::Div | AluOp::Mod => 0,
            AluOp::Mul => load(imm as u32),
            AluOp::And | AluOp::Or | AluOp::Xor => halves(imm, is64, &|v| {
                if v == 0 || v == u32::MAX {
                    0
                } else {
                    load(v)
                }
            }),
            // The JIT turns an add/sub of a negative constant into a sub/add of the positive
            // one (`nfp_bpf_opt_neg_add_sub`).
            AluOp::Add | AluOp::Sub => halves(imm.wrapping_abs(), is64, &load),
        },
        Insn::Jmp {
            op,
            is64,
            src: Src::Imm(imm),
            ..
        } => {
            // ... and so for `>=` and `<` (signed or not): an add of the positive constant.
            let negated = matches!(op, JmpOp::Ge | JmpOp::Sge | JmpOp::Lt | JmpOp::Slt);
            halves(if negated { imm.wrapping_abs() } else { imm }, is64, &load)
        }
        _ => 0,
    }
}

/// Core cycles of a 64-bit `==` or `!=` jump as the NFP JIT emits it (`jeq_imm`, `jeq_reg`,
/// `jne_imm`, `wrp_test_reg`), before any `immed` its constant needs:
/// - `==` XORs each half that is not known zero, ORs the two and branches once: one compare
///   against 0, two against a non-negative constant, three against a negative one or a register;
/// - `!=` against 0 ORs the halves and branches once; otherwise it tests and branches per half:
///   not taken, two compares and two branches not taken; taken, one compare and a branch taken
///   when the lower halves differ, else both compares, one branch not taken and one taken.
///   When the upper halves are not known equal (both values below 2³²), the latter is charged.
fn eq64_by_halves(c: &InsnCosts, op: JmpOp, src: Src, dst: Val, s: &State, taken: bool) -> f64 {
    let branch = if taken { c.jmp_taken } else { c.jmp_not_taken };
    let upper_zero = |v: Val| matches!(v, Val::Scalar(iv) if iv.hi <= u64::from(u32::MAX));
    match (op, src) {
        (JmpOp::Eq, Src::Imm(0)) | (JmpOp::Ne, Src::Imm(0)) => c.jmp_compare + branch,
        (JmpOp::Eq, Src::Imm(i)) => (if i < 0 { 3.0 } else { 2.0 }) * c.jmp_compare + branch,
        (JmpOp::Eq, Src::Reg(_)) => 3.0 * c.jmp_compare + branch,
        _ if !taken => 2.0 * (c.jmp_compare + c.jmp_not_taken),
        _ => {
            let upper_equal = upper_zero(dst)
                && match src {
                    Src::Imm(i) => i >= 0,
                    Src::Reg(r) => upper_zero(s.regs[r as usize]),
                };
            if upper_equal {
                c.jmp_compare + c.jmp_taken
            } else {
                2.0 * c.jmp_compare + c.jmp_not_taken + c.jmp_taken
            }
        }
    }
}

/// Core cycles of a 64-bit `and`/`or`/`xor` with the constant `imm` as the NFP JIT emits it
/// (`wrp_alu64_imm`, `wrp_alu_imm` per 32-bit half, the upper half the sign extension), before
/// any `immed` its constant needs ([`immed_loads`]): a half that leaves the register as it is
/// (`and` with all ones, `or`/`xor` with 0) emits nothing; one that sets it emits one
/// instruction (`and` with 0 and `or` with all ones: `wrp_immed`; `xor` with all ones: `not`);
/// any other half one ALU instruction. None for other instructions.
pub fn logic64_imm_halves(c: &InsnCosts, insn: &Insn) -> Option<f64> {
    let Insn::Alu {
        op: op @ (AluOp::And | AluOp::Or | AluOp::Xor),
        is64: true,
        src: Src::Imm(imm),
        ..
    } = *insn
    else {
        return None;
    };
    let half = |v: u32| match (op, v) {
        (AluOp::And, u32::MAX) | (AluOp::Or | AluOp::Xor, 0) => 0.0,
        (AluOp::And, 0) | (AluOp::Or, u32::MAX) => c.immed,
        _ => c.alu,
    };
    Some(half(imm as u32) + half(if imm < 0 { u32::MAX } else { 0 }))
}

fn insn_cost(
    t: &Target,
    p: &Program,
    pc: usize,
    insn: &Insn,
    s: &State,
    kind: EdgeKind,
    gathered: &HashMap<u32, crate::gather::Role>,
) -> Result<InsnCost, CostError> {
    let c = &t.insn;
    let m = &t.memory;
    let (dr, dw, da) = t.dram.as_ref().map_or((0.0, 0.0, 0.0), |d| d.cycles());
    if let Some(ic) = gathered
        .get(&(pc as u32))
        .and_then(|r| gathered_cost(t, r, s, dr))
    {
        return Ok(ic);
    }
    let plain = |cycles: f64| InsnCost {
        cycles,
        dram: 0.0,
        wait_latency: 0.0,
        memory: false,
        tail: 0.0,
    };
    let frozen = |v: Val| matches!(v, Val::MapVal(i, _) if p.maps[i as usize].frozen);
    // A value of a large array (or a pointer we cannot place) is a cache miss where the target
    // says so (x86-jit: `map_latency_large_cycles`, issue 29).
    let large_value = |v: Val| match v {
        Val::MapVal(i, _) => is_large_array(&p.maps[i as usize]),
        _ => true,
    };
    let map_latency = |v: Val| match m.map_latency_large_cycles {
        Some(l) if large_value(v) => l.max(m.map_latency_cycles),
        _ => m.map_latency_cycles,
    };
    // A load's or store's offset wider than its command encodes is loaded first (`immed`).
    let offset_immed = |off: i16| match m.offset_imm_max {
        Some(max) if off < 0 || off as u32 > max => {
            f64::from(immed_count(off as i32 as u32)) * c.immed
        }
        _ => 0.0,
    };
    // A store's value is moved into the transfer registers, a word at a time: a register's
    // with a `mov` each, a constant's with `immed`s.
    let store_moves = |src: Src, size: Size| {
        let words = size.bytes().div_ceil(4);
        match src {
            _ if m.store_move_cycles == 0.0 => 0.0,
            Src::Reg(_) => f64::from(words) * m.store_move_cycles,
            Src::Imm(i) => {
                let v = i as i64 as u64;
                let hi = if words > 1 {
                    immed_count((v >> 32) as u32)
                } else {
                    0
                };
                f64::from(immed_count(v as u32) + hi) * c.immed
            }
        }
    };
    // Constants wider than an operand encodes are loaded first (the NFP JIT's `immed`).
    let immed = c
        .operand_imm_max
        .map_or(0.0, |max| f64::from(immed_loads(insn, max)) * c.immed);
    if let Some(halves) = logic64_imm_halves(c, insn).filter(|_| c.logic64_by_halves) {
        return Ok(plain(halves + immed));
    }
    Ok(match *insn {
        Insn::Alu { op, is64, .. } => plain(
            match op {
                AluOp::Mul => c.mul,
                AluOp::Div | AluOp::Mod => c.div,
                _ if is64 => c.alu64.unwrap_or(c.alu),
                _ => c.alu,
            } + immed,
        ),
        Insn::End { .. } => plain(c.endian),
        Insn::LdImm64 { .. } => plain(c.ld_imm64),
        Insn::Ja { .. } => plain(c.ja),
        Insn::Exit => plain(c.exit),
        Insn::CallLocal { .. } => plain(c.call_local),
        Insn::Jmp {
            op: op @ (JmpOp::Eq | JmpOp::Ne),
            is64: true,
            dst,
            src,
            ..
        } if c.eq64_by_halves => plain(
            eq64_by_halves(c, op, src, s.regs[dst as usize], s, kind == EdgeKind::Taken) + immed,
        ),
        Insn::Jmp { is64, .. } => plain(
            if is64 {
                c.jmp64_compare.unwrap_or(c.jmp_compare)
            } else {
                c.jmp_compare
            } + if kind == EdgeKind::Taken {
                c.jmp_taken
            } else {
                c.jmp_not_taken
            } + immed,
        ),
        Insn::Ldx { src, off, .. } => match s.regs[src as usize] {
            Val::Fp(..) | Val::Ctx => plain(c.stack),
            // Packet data and read-only tables sit in the cores' local SRAM.
            v @ (Val::Pkt(_) | Val::MapVal(..)) if matches!(v, Val::Pkt(_)) || frozen(v) => {
                InsnCost {
                    cycles: offset_immed(off) + m.load_moves_cycles,
                    dram: 0.0,
                    wait_latency: m.packet_latency_cycles,
                    memory: true,
                    tail: m.load_moves_cycles,
                }
            }
            // Map values, and any pointer we cannot place, are DRAM.
            v => InsnCost {
                cycles: offset_immed(off)
                    + if off != 0 { m.map_offset_cycles } else { 0.0 }
                    + m.load_moves_cycles,
                dram: dr,
                wait_latency: map_latency(v),
                memory: true,
                tail: m.load_moves_cycles,
            },
        },
        Insn::St {
            dst,
            src,
            off,
            size,
        } => match s.regs[dst as usize] {
            Val::Fp(..) | Val::Ctx => plain(c.stack),
            // Waited for as a load is, with the latency of where it writes.
            v if m.stores_wait => {
                let packet = matches!(v, Val::Pkt(_));
                InsnCost {
                    cycles: offset_immed(off) + store_moves(src, size),
                    dram: if packet { 0.0 } else { dw },
                    wait_latency: if packet {
                        m.packet_latency_cycles
                    } else {
                        map_latency(v)
                    },
                    memory: true,
                    tail: 0.0,
                }
            }
            Val::Pkt(_) => InsnCost {
                cycles: m.issue_nowait_cycles,
                dram: 0.0,
                wait_latency: 0.0,
                memory: true,
                tail: 0.0,
            },
            _ => InsnCost {
                cycles: m.issue_nowait_cycles,
                dram: dw,
                wait_latency: 0.0,
                memory: true,
                tail: 0.0,
            },
        },
        Insn::Atomic { dst, fetch, .. } => match s.regs[dst as usize] {
            Val::Fp(..) => plain(c.stack),
            v => {
                let atomic = m.atomic_cycles.unwrap_or(m.issue_nowait_cycles);
                InsnCost {
                    cycles: if fetch {
                        0.0
                    } else {
                        match m.atomic_large_cycles {
                            Some(a) if large_value(v) => a.max(atomic),
                            _ => atomic,
                        }
                    },
                    dram: da,
                    wait_latency: if fetch { map_latency(v) } else { 0.0 },
                    memory: true,
                    tail: 0.0,
                }
            }
        },
        Insn::Call { helper } => {
            let name = helper_name(helper);
            let short = name.trim_start_matches("bpf_");
            if let Some(why) = crate::helpers::find(helper).and_then(|h| h.refused) {
                return Err(CostError::RefusedHelper {
                    pc,
                    name,
                    why: why.into(),
                });
            }
            // A map of maps' lookup costs as its own kind's lookup (the kernel's
            // array_of_map_lookup_elem and htab_of_map_lookup_elem are the array and hash
            // lookups plus one load of the inner map's address, which the verifier inlines as
            // array_of_map_gen_lookup / htab_of_map_gen_lookup).
            let map_type = match s.regs[1] {
                Val::MapPtr(i) => Some(map_kind(&p.maps[i as usize])),
                _ if timer_starts_later(helper, s) => Some("later"),
                _ => None,
            };
            let unsupported_map =
                |m: &crate::load::MapDef, why: String| CostError::UnsupportedMap {
                    pc,
                    map: m.name.clone(),
                    map_type: m.type_name().to_string(),
                    why,
                };
            if let Val::MapPtr(i) = s.regs[1] {
                let m = &p.maps[i as usize];
                // A trie's update or delete by the program is not modelled (its walk and node
                // allocation, and how a later lookup finds what it wrote): refused, not costed
                // as a hash's (measured 335-412 ns against a hash update's 149).
                if m.map_type == crate::load::MAP_LPM_TRIE
                    && helper != crate::absint::HELPER_MAP_LOOKUP
                {
                    return Err(unsupported_map(
                        m,
                        format!(
                            "{name} on it: the analysis models a program's lookups of an LPM \
                             trie only (user space fills it), not its updates or deletes"
                        ),
                    ));
                }
                if m.is_map_of_maps() && helper != crate::absint::HELPER_MAP_LOOKUP {
                    return Err(unsupported_map(
                        m,
                        format!("{name} on it: the verifier allows programs only lookups in a map of maps"),
                    ));
                }
                if let Some(o) = p.outer_of(i) {
                    // Lookups, updates and deletes; on a queue, stack or bloom filter the push,
                    // pop and peek (bpf_map_push_elem 87, _pop_elem 88, _peek_elem 89), whose
                    // results and popped values the symbolic executor takes as fresh, inner or not.
                    let keyless = [87, 88, 89];
                    let ok = [
                        crate::absint::HELPER_MAP_LOOKUP,
                        crate::absint::HELPER_MAP_UPDATE,
                        crate::absint::HELPER_MAP_DELETE,
                    ];
                    if !(ok.contains(&helper) || m.is_keyless() && keyless.contains(&helper)) {
                        return Err(unsupported_map(
                            m,
                            format!(
                                "{name} on an inner map of '{}': the analysis models lookups, \
                                 updates and deletes through a map of maps' inner maps (and a \
                                 queue's, stack's or bloom filter's push, pop and peek) only",
                                p.maps[o as usize].name
                            ),
                        ));
                    }
                }
                if m.is_map_of_maps() && p.inner_map(i).is_none() {
                    let why = match &m.inner {
                        Some(d) => format!(
                            "{name} on it gives inner maps of type {}, which the analysis does \
                             not model inside a map of maps",
                            d.type_name()
                        ),
                        None => format!(
                            "{name} on it gives inner maps the object does not define (no \
                             inner map definition)"
                        ),
                    };
                    return Err(unsupported_map(m, why));
                }
            }
            // A map helper whose map the abstract state does not pin down (a pointer that is one
            // of two maps at a join, as a fallback map for a missing inner map: the verifier
            // knows each path's map): the worst of the program's maps, entry by entry.
            let worst;
            // A map of more than SMALL_MAP_ENTRIES entries costs as the target's `.large` entry
            // where it has one (x86-jit: measured on tables of 2^20, each access a cache miss).
            let large = |d: &crate::load::MapDef| {
                t.helpers
                    .get(&format!("{short}.{}.large", map_kind(d)))
                    .filter(|_| is_large(d))
            };
            let mut h = match s.regs[1] {
                Val::MapPtr(i) => large(&p.maps[i as usize]),
                _ => None,
            }
            .or_else(|| t.helper(short, map_type));
            // (Not only when the target lacks a plain entry: x86-jit's plain `map_update_elem` is
            // one map type's cost, an update of a present hash key, and took the place of an LRU
            // insert through such a pointer, which then measured +13 to +29 % over.)
            if map_type.is_none() && is_map_helper(helper) {
                let mut costs = p
                    .maps
                    .iter()
                    .filter_map(|d| large(d).or_else(|| t.helper(short, Some(map_kind(d)))))
                    .chain(h)
                    .peekable();
                if costs.peek().is_some() {
                    worst = costs.fold(crate::target::HelperCost::default(), |w, c| {
                        crate::target::HelperCost {
                            cycles: w.cycles.max(c.cycles),
                            dram_reads: w.dram_reads.max(c.dram_reads),
                            dram_writes: w.dram_writes.max(c.dram_writes),
                            dram_atomics: w.dram_atomics.max(c.dram_atomics),
                            source: "the worst of the program's maps".into(),
                            ..Default::default()
                        }
                    });
                    h = Some(&worst);
                }
            }
            let Some(h) = h else {
                if let (Val::MapPtr(i), Some(_)) = (s.regs[1], t.helper(short, Some("hash"))) {
                    // The helper has a cost on other maps: this map's type is what is missing.
                    return Err(unsupported_map(
                        &p.maps[i as usize],
                        format!(
                            "{name} on it has no cost on target {}{}",
                            t.name,
                            t.map_rule
                                .as_ref()
                                .map_or_else(String::new, |r| format!("; {r}"))
                        ),
                    ));
                }
                let why = if crate::helpers::find(helper).is_none() {
                    ": the kernel does not give XDP programs this helper".to_string()
                } else {
                    t.helper_rule
                        .as_ref()
                        .map_or_else(String::new, |r| format!(": {r}"))
                };
                return Err(CostError::UnsupportedHelper {
                    pc,
                    id: helper,
                    name,
                    target: t.name.clone(),
                    why,
                });
            };
            match sized_bytes(p, helper, s) {
                Some(bytes) => {
                    let c = helper_cost(h, (dr, dw, da));
                    InsnCost {
                        cycles: h.cycles_for_bytes(bytes),
                        ..c
                    }
                }
                None => helper_cost(h, (dr, dw, da)),
            }
        }
        Insn::LdAbs => plain(c.alu),
        Insn::Kfunc { id } => {
            // A modelled kfunc costs as the target's entry of its name without `bpf_`.
            let name = p.kfunc_name(id);
            if let Some(why) = crate::interp::kfunc_refusal(&name)
                .or_else(|| crate::helpers::dynptr::refusal(p, &name))
            {
                return Err(CostError::UnsupportedKfunc { pc, name, why });
            }
            let Some(h) = t.helper(name.trim_start_matches("bpf_"), None) else {
                let why = format!(
                    "kfunc {name} has no cost on target {}{}",
                    t.name,
                    t.kfunc_rule
                        .as_ref()
                        .or(t.helper_rule.as_ref())
                        .map_or_else(String::new, |r| format!(": {r}"))
                );
                return Err(CostError::UnsupportedKfunc { pc, name, why });
            };
            helper_cost(h, (dr, dw, da))
        }
    })
}

/// The cost of an instruction of a gathered copy ([`crate::gather`]) from a map value into the
/// packet, as the NFP JIT's `nfp_cpp_memcpy` emits it: on the first load, the source offset
/// (`re_load_imm_any`, added to the 40-bit address by `addr40_offset`), the read length when
/// over 32 bytes (`immed`), one read into the transfer registers (waited for, one DRAM read), a
/// `mov` per word into the transfer-out registers, the destination offset, the write (one
/// `write8`/`write32` command, or two past 32 bytes, each with its `immed` of the length where
/// the JIT gives one, waited for as stores are) and the value register loaded as the last
/// load would have (`ld_field` or `mov`, and `immed` clearing the upper half); nothing on the
/// others. None when the pointers are not a map value and the packet (costed pair by pair).
fn gathered_cost(
    t: &Target,
    role: &crate::gather::Role,
    s: &State,
    dram_read: f64,
) -> Option<InsnCost> {
    use crate::gather::Role;
    let (m, c) = (&t.memory, &t.insn);
    let copies = |a: u8, b: u8| {
        m.gather_copies
            && matches!(s.regs[a as usize], Val::MapVal(..))
            && matches!(s.regs[b as usize], Val::Pkt(_))
    };
    let cp = match *role {
        Role::Member { a, b } if copies(a, b) => {
            return Some(InsnCost {
                cycles: 0.0,
                dram: 0.0,
                wait_latency: 0.0,
                memory: false,
                tail: 0.0,
            })
        }
        Role::Head(cp) if copies(cp.a, cp.b) => cp,
        _ => return None,
    };
    let offset = |off: i32| match m.offset_imm_max {
        Some(max) if off < 0 || off as u32 > max => f64::from(immed_count(off as u32)) * c.immed,
        _ => 0.0,
    };
    let (len, words) = (cp.bytes, f64::from(cp.bytes.div_ceil(4)));
    // Before the read: its offset, added to the address, and its length when over 32 bytes.
    let mut cycles = offset(i32::from(cp.ld_off))
        + if cp.ld_off != 0 {
            m.map_offset_cycles
        } else {
            0.0
        }
        + if len > 32 { c.immed } else { 0.0 };
    // After it: the words moved, the destination's offset, then the write commands.
    let mut since = words + offset(i32::from(cp.st_off));
    let write = |since: f64| {
        if m.stores_wait {
            m.issue_wait_cycles.max(m.packet_latency_cycles - since)
        } else {
            m.issue_nowait_cycles
        }
    };
    let aligned = len.is_multiple_of(4);
    let mut writes = 0.0;
    if len <= 8 || (len <= 32 && aligned) {
        writes += write(since);
    } else if len <= 32 || aligned {
        since += c.immed;
        writes += c.immed + write(since);
    } else {
        let pre = if len <= 40 { 0.0 } else { c.immed };
        since += pre;
        writes += pre + write(since);
        let second = i32::from(cp.st_off)
            + if len <= 40 {
                32
            } else {
                4 * (words as i32 - 1)
            };
        writes += offset(second) + write(offset(second));
    }
    let last = m.load_moves_cycles;
    cycles += words + offset(i32::from(cp.st_off)) + writes + last;
    Some(InsnCost {
        cycles,
        dram: dram_read,
        wait_latency: m.map_latency_cycles,
        memory: true,
        tail: last,
    })
}

/// The most bytes a helper whose work grows with a size argument works on at this call (`None`
/// for other helpers): `csum_diff`'s two sizes (r2 + r4), `xdp_load_bytes`' and
/// `xdp_store_bytes`' length (r4), as the abstract state bounds them. What the state does not
/// bound is the most the kernel works on: `csum_diff` 512 bytes before Linux 6.12 (-EINVAL
/// above), since then the largest buffer the program can pass (a 64 KiB packet, or a larger
/// map value); the packet helpers 0xffff bytes (-EFAULT above).
/// The least delay (ns) of a `bpf_timer_start` whose cost is the target's `timer_start.later`:
/// a timer armed this far ahead does not expire within the packet's run (`timer_start`, the
/// worse of a start that expires at once and one that does not, is the cost otherwise).
pub const TIMER_LATER_NS: u64 = 1_000_000;

/// Whether a call of `helper` is a `bpf_timer_start` shown to expire later: its delay (r2) at
/// least [`TIMER_LATER_NS`] on every path here, relative (r3's `BPF_F_TIMER_ABS`, bit 0, clear).
fn timer_starts_later(helper: u32, s: &State) -> bool {
    let (Val::Scalar(delay), Val::Scalar(flags)) = (s.regs[2], s.regs[3]) else {
        return false;
    };
    helper == crate::helpers::timers::HELPER_TIMER_START
        && delay.lo >= TIMER_LATER_NS
        && flags.lo == flags.hi
        && flags.lo & 1 == 0
}

pub(crate) fn sized_bytes(p: &Program, helper: u32, s: &State) -> Option<u64> {
    let most = |r: usize, cap: u64| match s.regs[r] {
        Val::Scalar(iv) => iv.hi.min(cap),
        _ => cap,
    };
    match helper {
        crate::interp::HELPER_CSUM_DIFF => {
            let cap = if crate::helpers::csum::folds(p.kernel_version) {
                p.maps
                    .iter()
                    .map(|m| u64::from(m.value_size))
                    .max()
                    .unwrap_or(0)
                    .max(1 << 16)
            } else {
                u64::from(crate::interp::CSUM_DIFF_MAX_BYTES)
            };
            Some((most(2, cap) + most(4, cap)).min(cap))
        }
        crate::interp::HELPER_XDP_LOAD_BYTES | crate::interp::HELPER_XDP_STORE_BYTES => {
            Some(most(4, crate::interp::XDP_BYTES_MAX))
        }
        _ => None,
    }
}

/// A helper's (or kfunc's) cost entry as an instruction's cost: its cycles, and its DRAM
/// reads, writes and atomics at the target's DRAM cycles for each (`dram_cycles`).
fn helper_cost(h: &crate::target::HelperCost, (dr, dw, da): (f64, f64, f64)) -> InsnCost {
    let dram = h.dram_reads * dr + h.dram_writes * dw + h.dram_atomics * da;
    InsnCost {
        cycles: h.cycles,
        dram,
        wait_latency: 0.0,
        memory: dram > 0.0,
        tail: 0.0,
    }
}

/// The map type whose entry in a target's `[helpers]` a map helper on map `d` costs as: a map
/// of maps' lookup as its own kind's, the kernel's `array_of_map_lookup_elem` and
/// `htab_of_map_lookup_elem` being the array and hash lookups plus one load.
fn map_kind(d: &crate::load::MapDef) -> &'static str {
    match d.map_type {
        crate::load::MAP_ARRAY_OF_MAPS => "array",
        crate::load::MAP_HASH_OF_MAPS => "hash",
        _ => d.type_name(),
    }
}

/// Arrays with more value bytes than this are large: a random value is a cache miss (x86-jit:
/// measured on 2^20 values of 64 bytes; smaller ones on 2^14, which the level-2 cache holds).
pub const SMALL_ARRAY_BYTES: u64 = 1 << 20;

/// Whether map `d` is an array (or per-CPU array, or global data) with more than
/// [`SMALL_ARRAY_BYTES`] of values, or one sized by its loader (declared 0).
fn is_large_array(d: &crate::load::MapDef) -> bool {
    !d.frozen
        && d.is_array()
        && (d.max_entries == 0
            || u64::from(d.max_entries) * u64::from(d.value_size) > SMALL_ARRAY_BYTES)
}

/// Whether map `d` is costed by a target's `.large` helper entries: more than
/// [`crate::calibrate::SMALL_MAP_ENTRIES`] entries, or a size its loader sets (declared 0).
fn is_large(d: &crate::load::MapDef) -> bool {
    d.max_entries == 0 || d.max_entries > crate::calibrate::SMALL_MAP_ENTRIES
}

/// `bpf_map_lookup_elem`, `bpf_map_update_elem`, `bpf_map_delete_elem`: helpers whose r1 the
/// verifier requires to be a map.
fn is_map_helper(helper: u32) -> bool {
    use crate::absint::{HELPER_MAP_DELETE, HELPER_MAP_LOOKUP, HELPER_MAP_UPDATE};
    matches!(
        helper,
        HELPER_MAP_LOOKUP | HELPER_MAP_UPDATE | HELPER_MAP_DELETE
    )
}

/// Cost of a `bpf_loop` call node leaving by `kind`: the target's `loop` (the call: its checks
/// and return) once, at the call's first visit (`first`), and `loop.iteration` (one call of the
/// callback: the counter, the indirect call, the test of its result) on each `Call` edge into
/// the callback; a summarised call's `CallSummary` edge (its one copy of the callback stands
/// for `calls` calls) `calls` times. The callback's own instructions cost as any callee's
/// (times their node's [`crate::cfg::Node::times`]).
fn loop_call_cost(
    t: &Target,
    pc: usize,
    first: bool,
    kind: EdgeKind,
    calls: u64,
) -> Result<InsnCost, CostError> {
    let (dr, dw, da) = t.dram.as_ref().map_or((0.0, 0.0, 0.0), |d| d.cycles());
    let get = |key: &str| {
        t.helpers
            .get(key)
            .ok_or_else(|| CostError::UnsupportedHelper {
                pc,
                id: crate::absint::HELPER_LOOP,
                name: if key == "loop" {
                    "bpf_loop".into()
                } else {
                    format!("bpf_loop (its per-iteration cost, helpers.\"{key}\")")
                },
                target: t.name.clone(),
                why: t
                    .helper_rule
                    .as_ref()
                    .map_or_else(String::new, |r| format!(": {r}")),
            })
    };
    let call = get("loop")?;
    let iteration = get("loop.iteration")?;
    let mut cycles = 0.0;
    let mut dram = 0.0;
    let mut add = |h: &crate::target::HelperCost| {
        let c = helper_cost(h, (dr, dw, da));
        cycles += c.cycles;
        dram += c.dram;
    };
    if first {
        add(call);
    }
    match kind {
        EdgeKind::Call => add(iteration),
        EdgeKind::CallSummary => {
            let c = helper_cost(iteration, (dr, dw, da));
            cycles += c.cycles * calls as f64;
            dram += c.dram * calls as f64;
        }
        _ => {}
    }
    Ok(InsnCost {
        cycles,
        dram,
        wait_latency: 0.0,
        memory: dram > 0.0,
        tail: 0.0,
    })
}

/// The nodes a `bpf_loop` callback returns to: a visit of the call after a call of its
/// callback (not its first visit, which costs the call itself).
pub fn loop_resumed(g: &Graph) -> Vec<bool> {
    let mut resumed = vec![false; g.nodes.len()];
    for node in &g.nodes {
        for e in &node.succ {
            if e.kind == EdgeKind::Return
                && e.call != crate::cfg::NONE
                && g.nodes[e.call as usize].pc == g.nodes[e.to as usize].pc
            {
                resumed[e.to as usize] = true;
            }
        }
    }
    resumed
}

/// Build the costed graph of `g` on target `t`.
pub fn costed(p: &Program, g: &Graph, t: &Target) -> Result<Dag, CostError> {
    costed_with_facts(p, g, t).map(|(dag, _)| dag)
}

/// [`costed`], and what the split by constants needs of each node's abstract state
/// ([`crate::consts::ConstModel::from_facts`]), from the same pass over the states.
pub fn costed_with_facts(
    p: &Program,
    g: &Graph,
    t: &Target,
) -> Result<(Dag, Vec<Option<Facts>>), CostError> {
    let topo = g.topo_order();
    // The NFP JIT's gathered copies, where the target costs them so.
    let gathered = if t.memory.gather_copies {
        crate::gather::chains(p)
    } else {
        HashMap::new()
    };
    let mut facts: Vec<Option<Facts>> = vec![None; g.nodes.len()];
    let n = g.nodes.len() + 1;
    let sink = (n - 1) as u32;
    // Cycles since the previous memory instruction, minimum over paths into each node.
    let mut since = vec![f64::INFINITY; n];
    since[0] = f64::INFINITY; // nothing outstanding at entry
                              // Per node: (to, cost, need, kind) of each edge.
    type Out = (u32, [u64; NC], u32, EdgeKind);
    let mut per_node: Vec<Vec<Out>> = vec![Vec::new(); n];
    let resumed = loop_resumed(g);
    visit_states(p, g, &topo, |u, at| {
        let node = &g.nodes[u as usize];
        let pc = node.pc as usize;
        let insn = p.code[pc].as_ref().expect("node on an instruction");
        facts[u as usize] = at.map(|s| Facts::of(insn, s));
        let s = at.cloned().unwrap_or_else(State::entry);
        let (can_take, can_fall) = s.branch(insn);
        let mut edges: Vec<(u32, EdgeKind)> = node
            .succ
            .iter()
            .filter(|e| match e.kind {
                EdgeKind::Taken => can_take,
                EdgeKind::NotTaken => can_fall,
                EdgeKind::TailCall { map, slot } => crate::cfg::tail_call_possible(&s, map, slot),
                _ => true,
            })
            .map(|e| (e.to, e.kind))
            .collect();
        if node.succ.is_empty() {
            edges.push((sink, EdgeKind::Next));
        }
        for (to, kind) in edges {
            let ic = if crate::cfg::is_loop_call(p, pc) {
                let calls = g
                    .nodes
                    .get(to as usize)
                    .map_or(1, |v| v.times / node.times.max(1));
                loop_call_cost(t, pc, !resumed[u as usize], kind, calls)?
            } else {
                insn_cost(t, p, pc, insn, &s, kind, &gathered)?
            };
            let wait = if ic.wait_latency > 0.0 {
                t.memory
                    .issue_wait_cycles
                    .max(ic.wait_latency - since[u as usize].min(ic.wait_latency))
            } else {
                0.0
            };
            let cycles = ic.cycles + wait;
            let after = if kind == EdgeKind::CallSummary {
                // A summarised callback's one copy is also every later call, which starts
                // right after the call before it: nothing is known of the time since its
                // last memory instruction.
                0.0
            } else if ic.memory {
                ic.tail
            } else {
                since[u as usize] + cycles
            };
            if (to as usize) < n {
                since[to as usize] = since[to as usize].min(after);
            }
            let need = if matches!(kind, EdgeKind::Taken | EdgeKind::NotTaken) {
                s.len_need(insn, kind == EdgeKind::Taken) as u32
            } else {
                0
            };
            // A branch the abstract values decide has one edge left, whose condition always
            // holds: it is no constraint on the path (`Next`), which spares the solver a
            // condition it would have to prove again.
            let kind =
                if matches!(kind, EdgeKind::Taken | EdgeKind::NotTaken) && can_take != can_fall {
                    EdgeKind::Next
                } else {
                    kind
                };
            // An instance that stands for `times` executions (in a summarised bpf_loop's
            // callback) costs that many times.
            let times = node.times;
            let cost = [
                units(cycles).saturating_mul(times),
                units(ic.dram).saturating_mul(times),
            ];
            per_node[u as usize].push((to, cost, need, kind));
        }
        Ok(())
    })?;
    let mut dag = Dag {
        n,
        first: Vec::with_capacity(n + 1),
        to: Vec::new(),
        cost: Vec::new(),
        need: Vec::new(),
        pc: Vec::new(),
        kind: Vec::new(),
        topo: Vec::new(),
    };
    for (u, edges) in per_node.into_iter().enumerate() {
        dag.first.push(dag.to.len() as u32);
        let pc = g.nodes.get(u).map_or(u32::MAX, |x| x.pc);
        for (to, c, need, kind) in edges {
            dag.to.push(to);
            dag.cost.push(c);
            dag.need.push(need);
            dag.pc.push(pc);
            dag.kind.push(kind);
        }
    }
    dag.first.push(dag.to.len() as u32);
    dag.topo = topo;
    dag.topo.push(sink);
    Ok((dag, facts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::absint::Iv;

    fn alu(op: AluOp, is64: bool, imm: i32) -> Insn {
        Insn::Alu {
            op,
            is64,
            dst: 1,
            src: Src::Imm(imm),
        }
    }

    #[test]
    fn immed_count_follows_pack_immed() {
        // A 16-bit field at byte shift 0, 1 or 2, or the complement of one: one `immed`.
        for v in [
            0,
            0xff,
            0xffff,
            0x00ff_ff00,
            0xffff_0000,
            !0x1234,
            0xff00_00ff,
            u32::MAX,
        ] {
            assert_eq!(immed_count(v), 1, "{v:#x}");
        }
        // Anything else: `immed` and `immed_w1`.
        for v in [0x0001_0001, 739_982_445, 0x1234_5678, 0xf00f_000f] {
            assert_eq!(immed_count(v), 2, "{v:#x}");
        }
    }

    #[test]
    fn immed_loads_per_operand() {
        // Fits the 8-bit operand: nothing to load.
        assert_eq!(immed_loads(&alu(AluOp::Add, false, 255), 255), 0);
        assert_eq!(immed_loads(&alu(AluOp::Add, false, 256), 255), 1);
        // The Count-Min hash multiplier: immed + immed_w1.
        assert_eq!(immed_loads(&alu(AluOp::Mul, true, 739_982_445), 255), 2);
        // An add of a negative constant is a sub of the positive one (nfp_bpf_opt_neg_add_sub).
        assert_eq!(immed_loads(&alu(AluOp::Add, true, -8), 255), 0);
        assert_eq!(immed_loads(&alu(AluOp::Sub, false, -300), 255), 1);
        assert_eq!(immed_loads(&alu(AluOp::Add, true, 0x1234_5678), 255), 2);
        // `and` with all ones in a half needs no constant there.
        assert_eq!(immed_loads(&alu(AluOp::And, true, -1), 255), 0);
        assert_eq!(immed_loads(&alu(AluOp::And, true, -256), 255), 1);
        // Shifts encode their amount; mov pays only a second immed.
        assert_eq!(immed_loads(&alu(AluOp::Lsh, true, 40), 255), 0);
        assert_eq!(immed_loads(&alu(AluOp::Mov, true, 0x800), 255), 0);
        assert_eq!(immed_loads(&alu(AluOp::Mov, false, 0x1234_5678), 255), 1);
        let jmp = |is64, imm| Insn::Jmp {
            op: JmpOp::Eq,
            is64,
            dst: 1,
            src: Src::Imm(imm),
            off: 1,
        };
        assert_eq!(immed_loads(&jmp(false, 0x86dd), 255), 1);
        assert_eq!(immed_loads(&jmp(true, -2), 255), 2);
        assert_eq!(immed_loads(&jmp(true, 17), 255), 0);
        // `>=` a negative constant adds the positive one.
        let ge = Insn::Jmp {
            op: JmpOp::Ge,
            is64: true,
            dst: 1,
            src: Src::Imm(-2),
            off: 1,
        };
        assert_eq!(immed_loads(&ge, 255), 0);
    }

    #[test]
    fn eq64_follows_the_jit() {
        let c: InsnCosts = toml::from_str(
            "alu = 1.0\nmul = 1.0\ndiv = 1.0\nendian = 1.0\nld_imm64 = 1.0\njmp_compare = 1.0\n\
             jmp_taken = 4.0\njmp_not_taken = 1.0\nja = 3.0\nexit = 3.0\ncall_local = 3.0\n\
             stack = 1.0\neq64_by_halves = true\n",
        )
        .unwrap();
        let s = State::entry();
        let byte = Val::Scalar(Iv { lo: 0, hi: 255 });
        let eq = |src, taken| eq64_by_halves(&c, JmpOp::Eq, src, byte, &s, taken);
        let ne = |src, dst, taken| eq64_by_halves(&c, JmpOp::Ne, src, dst, &s, taken);
        assert_eq!(eq(Src::Imm(0), true), 5.0);
        assert_eq!(eq(Src::Imm(8), false), 3.0);
        assert_eq!(eq(Src::Imm(-1), false), 4.0);
        assert_eq!(ne(Src::Imm(0), byte, true), 5.0);
        // Not taken: both halves tested (the packet-check pattern); taken on the lower half.
        assert_eq!(ne(Src::Imm(8), byte, false), 4.0);
        assert_eq!(ne(Src::Imm(8), byte, true), 5.0);
        // Upper half unknown: charged as taken on the upper half.
        assert_eq!(ne(Src::Imm(8), Val::Top, true), 7.0);
    }

    #[test]
    fn logic64_follows_the_jit() {
        let c: InsnCosts = toml::from_str(
            "alu = 1.0\nmul = 1.0\ndiv = 1.0\nendian = 1.0\nld_imm64 = 1.0\njmp_compare = 1.0\n\
             jmp_taken = 4.0\njmp_not_taken = 1.0\nja = 4.0\nexit = 4.0\ncall_local = 4.0\n\
             stack = 1.0\nimmed = 1.0\nlogic64_by_halves = true\n",
        )
        .unwrap();
        let alu = |op, is64, imm| Insn::Alu {
            op,
            is64,
            dst: 1,
            src: Src::Imm(imm),
        };
        let cost = |op, imm| logic64_imm_halves(&c, &alu(op, true, imm));
        // xdp-alaw2ulaw-opt.asm .103 and .112: `r7 ^= 85`, `r7 ^= 127` are one `alu` each (the
        // upper half's xor with 0 emits nothing); .99-.100: `r8 &= 128` is an `alu` and an
        // `immed` clearing the upper half.
        assert_eq!(cost(AluOp::Xor, 85), Some(1.0));
        assert_eq!(cost(AluOp::Or, 1), Some(1.0));
        assert_eq!(cost(AluOp::And, 128), Some(2.0));
        // Halves that keep the register: nothing (the JIT skips the instruction).
        assert_eq!(cost(AluOp::And, -1), Some(0.0));
        assert_eq!(cost(AluOp::Or, 0), Some(0.0));
        assert_eq!(cost(AluOp::Xor, 0), Some(0.0));
        // Halves that set it: an `immed` (and 0, or all ones) or a `not` (xor all ones).
        assert_eq!(cost(AluOp::And, 0), Some(2.0));
        assert_eq!(cost(AluOp::Or, -1), Some(2.0));
        assert_eq!(cost(AluOp::Xor, -1), Some(2.0));
        // A negative constant: its upper half is all ones.
        assert_eq!(cost(AluOp::And, -256), Some(1.0));
        assert_eq!(cost(AluOp::Or, -256), Some(2.0));
        // Not a 64-bit logic operation with a constant.
        assert_eq!(logic64_imm_halves(&c, &alu(AluOp::Xor, false, 85)), None);
        assert_eq!(logic64_imm_halves(&c, &alu(AluOp::Add, true, 85)), None);
    }
}
