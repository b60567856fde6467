//! The loop-free control-flow graph that path enumeration runs on.
//!
//! One node per instruction *instance*: bpf-to-bpf calls are inlined (a callee's instructions
//! get a node per call site), and loops are unrolled (a loop body gets a node per iteration).
//! Unrolling goes innermost loop first. A loop's bound is the number of times its back edges can
//! be taken; it is found by running the loop's body again and again over abstract register
//! values ([`crate::absint`]) until no back edge is reachable any more — which works when the
//! code makes the bound evident (a counter from a constant, stepped by a constant, compared
//! with a constant or a masked value). Otherwise the caller's `--loop-bound` is used, and
//! without one the loop is an error — except a `bpf_loop` call, whose calls the kernel caps:
//! one that cannot be unrolled is *summarised* (its callback is held once, entered by a
//! `CallSummary` edge, its nodes' [`Node::times`] multiplied by the bound; docs/xdp.md,
//! "`bpf_loop`"). The unrolled copies are then chained: copy k's back edges
//! go to copy k+1's header, the last copy's back edges are removed, and instructions that can
//! no longer reach an `exit` are pruned.
//!
//! Invariant after [`build`]: the graph is acyclic, node 0 is the entry, every node reaches a
//! top-level `exit`, and edges of a node are ordered fall-through first, then taken.

use std::collections::HashMap;

use crate::absint::State;
use crate::insn::Insn;
use crate::load::Program;

/// No node: the `call` of an edge other than `Return`.
pub const NONE: u32 = u32::MAX;

/// What an edge of the graph stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeKind {
    /// To the next instruction (or an unconditional jump's target).
    Next,
    /// A conditional jump taken.
    Taken,
    /// A conditional jump not taken.
    NotTaken,
    /// Into a bpf-to-bpf callee.
    Call,
    /// Into a summarised `bpf_loop`'s callback: the one copy of the callback stands for every
    /// call the loop makes (up to its bound, its nodes' [`Node::times`]); the callback's
    /// `exit` returns to the call, which then returns (`Next`).
    CallSummary,
    /// From a callee's `exit` back to the instruction after the call.
    Return,
    /// A `bpf_tail_call` that jumps: into the program in slot `slot` of prog array `map` (the
    /// call's other edge, `Next`, is the call returning: no program there, or the index past
    /// the array, or [`MAX_TAIL_CALLS`](crate::load::MAX_TAIL_CALLS) calls made already).
    TailCall {
        /// Map index of the prog array.
        map: u32,
        /// The slot it jumps through.
        slot: u32,
    },
}

/// An edge of the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    /// The node it goes to.
    pub to: u32,
    /// What it stands for.
    pub kind: EdgeKind,
    /// For a `Return` edge: the call node whose registers r6–r9 the caller gets back.
    pub call: u32,
}

/// A node of the graph: one instance of an instruction.
#[derive(Debug, Clone)]
pub struct Node {
    /// Instruction index in the program.
    pub pc: u32,
    /// Call depth (0 = the program itself).
    pub depth: u8,
    /// Its outgoing edges, fall-through first, then taken.
    pub succ: Vec<Edge>,
    /// How many executions of the instruction one pass over this node stands for: 1, or,
    /// inside summarised `bpf_loop` callbacks, the product of their bounds.
    pub times: u64,
}

/// The inlined, unrolled, acyclic control-flow graph; node 0 is the entry.
#[derive(Debug, Clone)]
pub struct Graph {
    /// The nodes, by index.
    pub nodes: Vec<Node>,
    /// Bounds of the unrolled loops: (header instruction, bound, found automatically).
    pub loops: Vec<LoopInfo>,
}

/// An unrolled loop and its bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopInfo {
    /// Instruction index of the loop's header.
    pub header_pc: u32,
    /// Times its back edges can be taken.
    pub bound: u32,
    /// The bound was found from the code (else it is `--loop-bound`).
    pub evident: bool,
    /// A summarised `bpf_loop` call: its callback is held once and counted `bound` times.
    pub summary: bool,
}

/// Why the graph could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CfgError {
    #[error("instruction {pc}: jump to {target}, outside the program")]
    /// A jump to outside the program (or into the second slot of an `LD_IMM64`).
    BadJump {
        /// Instruction index of the jump.
        pc: usize,
        /// The instruction index it jumps to.
        target: i64,
    },
    #[error("instruction {pc}: falls off the end of the program")]
    /// Control runs past the last instruction of the program.
    FallsOff {
        /// Instruction index control runs on from.
        pc: usize,
    },
    #[error("instruction {pc}: bpf-to-bpf calls nest deeper than 8 frames (recursion?)")]
    /// bpf-to-bpf calls nest deeper than 8 frames.
    TooDeep {
        /// Instruction index of the call that goes too deep.
        pc: usize,
    },
    #[error("loop at instruction {pc}{line}: no evident bound; give one with --loop-bound N")]
    /// A loop with no evident bound and no `--loop-bound`.
    Unbounded {
        /// Instruction index of the loop's header.
        pc: usize,
        /// Its source line, as ` (file:line: text)`, or empty.
        line: String,
    },
    #[error("loop at instruction {pc}{line}: control flow enters it other than through its head (irreducible)")]
    /// A loop that control flow enters other than through its header.
    Irreducible {
        /// Instruction index of the loop's header.
        pc: usize,
        /// Its source line, as ` (file:line: text)`, or empty.
        line: String,
    },
    /// The unrolled graph would have more instances than this limit.
    #[error("the unrolled graph would exceed {0} instruction instances")]
    TooLarge(usize),
    /// Building the graph would take more than [`Limits::max_bytes`]: `what` would need
    /// `need_bytes`.
    #[error("{what} would need about {} MB", need_bytes.div_ceil(1 << 20))]
    Memory {
        /// The step that would need the memory.
        what: String,
        /// Bytes it would need.
        need_bytes: usize,
    },
    /// No path from the entry reaches an `exit`.
    #[error(
        "no path from the entry reaches an exit (every path ends in a loop that cannot end, or at \
         an instruction the abstract values do not get past)"
    )]
    NoExit,
    /// An instruction whose CO-RE relocation the BTF could not satisfy (libbpf, and
    /// `crate::core_reloc`, write a call of helper 0xbad2310 over it) is reachable: the
    /// verifier refuses such a program.
    #[error(
        "instruction {pc}{line}: its CO-RE relocation found nothing in the BTF {btf} (a field, \
         type or enum value the kernel lacks), and the code that uses it is reachable: libbpf \
         poisons it and the kernel refuses the program; guard it with bpf_core_field_exists() \
         or give the BTF of the kernel the program is for with --btf FILE"
    )]
    CoreUnresolved {
        /// Instruction index of the poisoned instruction.
        pc: usize,
        /// Its source line, as ` (file:line: text)`, or empty.
        line: String,
        /// The BTF the relocations were resolved against.
        btf: String,
    },
    /// A `bpf_loop` whose callback the analyzer cannot follow.
    #[error("bpf_loop at instruction {pc}{line}: {why}")]
    LoopCallback {
        /// Instruction index of the `bpf_loop` call.
        pc: usize,
        /// Its source line, as ` (file:line: text)`, or empty.
        line: String,
        /// What is wrong with the callback.
        why: String,
    },
    /// A loop driven by `bpf_iter_num_next` whose count the abstract values bound only by more
    /// iterations than can be unrolled (at most `BPF_MAX_LOOPS`).
    #[error(
        "loop at instruction {pc}{line}: its bpf_iter_num_next may give a number {bound} more \
         times (the iterator's end - start, at most BPF_MAX_LOOPS = 8388608), more than can be \
         unrolled; clamp the count in the program or give a bound with --loop-bound N"
    )]
    IterBound {
        /// Instruction index of the loop's header.
        pc: usize,
        /// Its source line, as ` (file:line: text)`, or empty.
        line: String,
        /// The largest count the abstract values allow.
        bound: u64,
    },
    /// A `bpf_loop` whose iteration count (r1) has no bound.
    #[error("bpf_loop at instruction {pc}{line}: nr_loops (r1) {what}; give a bound with --loop-bound N")]
    LoopCallBound {
        /// Instruction index of the `bpf_loop` call.
        pc: usize,
        /// Its source line, as ` (file:line: text)`, or empty.
        line: String,
        /// What is known of `nr_loops`.
        what: String,
    },
}

/// Limits for [`build`].
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bound for loops whose bound is not evident (`--loop-bound`).
    pub loop_bound: Option<u32>,
    /// Most iterations tried when looking for an evident bound. Fewer are tried when the loop
    /// could not be unrolled that many times within `max_nodes`: a bound found past that would
    /// be too large anyway, and the search would take that many passes over a body that may
    /// itself be large (an unrolled inner loop).
    pub max_iterations: u32,
    /// Most instruction instances in the unrolled graph.
    pub max_nodes: usize,
    /// Most bytes the graph and the abstract states of a loop's bound search may take
    /// together (the states: [`STATE_BYTES`] per node of the graph at the time).
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            loop_bound: None,
            max_iterations: 1 << 16,
            max_nodes: 4_000_000,
            max_bytes: usize::MAX,
        }
    }
}

/// Bytes of one node's abstract state while a loop's bound is searched for (registers and
/// 128 stack cells: about 3.3 kB; every node of the graph at that time has one), with its
/// share of the predecessor lists and the loop's tables.
pub const STATE_BYTES: usize = std::mem::size_of::<Option<State>>() + 64;

fn line_note(p: &Program, pc: usize) -> String {
    p.line(pc)
        .map(|l| format!(" ({}: {})", l.short(), l.text))
        .unwrap_or_default()
}

/// The inlined, unrolled graph of `p`.
pub fn build(p: &Program, limits: Limits) -> Result<Graph, CfgError> {
    let mut g = inline(p, limits.max_nodes)?;
    while let Some(lp) = innermost_loop(&g) {
        if lp.entered_elsewhere {
            let pc = g.nodes[lp.header as usize].pc as usize;
            return Err(CfgError::Irreducible {
                pc,
                line: line_note(p, pc),
            });
        }
        let header_pc = g.nodes[lp.header as usize].pc;
        // The bound search keeps an abstract state for every node of the graph, and those of
        // the body's nodes not visited yet in the current iteration.
        let need_bytes = |states: usize| g.memory_bytes() + states * STATE_BYTES;
        let too_much = |states: usize| CfgError::Memory {
            what: format!(
                "finding the bound of the loop at instruction {header_pc}{} (abstract states for \
                 {states} instruction instances)",
                line_note(p, header_pc as usize),
            ),
            need_bytes: need_bytes(states),
        };
        let n = g.nodes.len();
        if need_bytes(n) > limits.max_bytes {
            return Err(too_much(n));
        }
        let max_local = (limits.max_bytes - need_bytes(n)) / STATE_BYTES;
        // Iterations an unrolling could still take (see `Limits::max_iterations`).
        let room = limits.max_nodes.saturating_sub(g.nodes.len()) / lp.body.len();
        let tries = limits
            .max_iterations
            .min(room.try_into().unwrap_or(u32::MAX));
        let loop_call = is_loop_call(p, header_pc as usize)
            && lp
                .back
                .iter()
                .all(|&(u, k)| g.nodes[u as usize].succ[k].kind == EdgeKind::Return);
        let found = if loop_call {
            // bpf_loop: its callback is called at most nr_loops times (each call a back edge),
            // and never more than BPF_MAX_LOOPS (the kernel's cap: a larger nr_loops gives
            // -E2BIG without a call). One that cannot be unrolled, and has no `--loop-bound`,
            // is summarised.
            let b = loop_call_bound(p, &g, &lp);
            match b {
                Some(b) if b <= tries as u64 => Some((b as u32, None)),
                Some(_) | None if limits.loop_bound.is_some() => None,
                None if drop_unreachable(p, &mut g)? => continue,
                _ => {
                    let bound = b.unwrap_or(crate::absint::BPF_MAX_LOOPS);
                    summarise(p, &mut g, &lp, bound, b.is_some())?;
                    prune(&mut g, p)?;
                    continue;
                }
            }
        } else {
            find_bound(p, &g, &lp, tries, max_local)
                .map_err(|m| too_much(n + m))?
                .map(|(b, f)| (b, Some(f)))
        };
        if found.is_none() && drop_unreachable(p, &mut g)? {
            // The loop was code no state reaches: gone, and the graph's loops are looked for
            // again.
            continue;
        }
        let (bound, feasible, evident) = match found {
            Some((b, f)) => (b, f, true),
            None => match limits.loop_bound {
                Some(b) => (b, None, false),
                None => {
                    if let Some(bound) = iter_count(p, &g, &lp) {
                        return Err(CfgError::IterBound {
                            pc: header_pc as usize,
                            line: line_note(p, header_pc as usize),
                            bound,
                        });
                    }
                    return Err(CfgError::Unbounded {
                        pc: header_pc as usize,
                        line: line_note(p, header_pc as usize),
                    });
                }
            },
        };
        if g.nodes.len() + lp.body.len() * bound as usize > limits.max_nodes {
            return Err(CfgError::TooLarge(limits.max_nodes));
        }
        unroll(&mut g, &lp, bound, feasible.as_ref());
        g.loops.push(LoopInfo {
            header_pc,
            bound,
            evident,
            summary: false,
        });
        prune(&mut g, p)?;
    }
    prune(&mut g, p)?;
    // Instructions poisoned by an unresolved CO-RE relocation sit behind checks the
    // relocations made constant (`bpf_core_field_exists` is 0): the verifier, which tracks
    // constants, never walks them, and neither does the analysis. One still reachable would
    // be refused by the verifier.
    if poisoned(p, &g).is_some() {
        drop_unreachable(p, &mut g)?;
        if let Some(pc) = poisoned(p, &g) {
            return Err(CfgError::CoreUnresolved {
                pc,
                line: line_note(p, pc),
                btf: p.core_btf.clone().unwrap_or_default(),
            });
        }
    }
    Ok(g)
}

/// The first instruction of the graph that a CO-RE relocation poisoned (a call of helper
/// [`crate::core_reloc::POISON_IMM`]).
fn poisoned(p: &Program, g: &Graph) -> Option<usize> {
    g.nodes.iter().map(|n| n.pc as usize).find(|&pc| {
        matches!(p.code.get(pc), Some(Some(Insn::Call { helper })) if *helper == crate::core_reloc::POISON_IMM as u32)
            && p.core_btf.is_some()
    })
}

/// Summarise the `bpf_loop` call that heads loop `lp` (docs/xdp.md, "`bpf_loop`"): its
/// callback is kept once, entered by a `CallSummary` edge from the call's first visit, and
/// each of its nodes stands for `bound` executions ([`Node::times`]); the call's visit after
/// that one call returns. The symbolic executor enters the summary from a state in which every
/// call may be the one (the call's index unknown, the memory the callbacks before may have
/// written unknown), and leaves it likewise, so the one path through the callback that the
/// search finds feasible is a path some call may take, and `bound` times the slowest such path
/// bounds the calls' time. A callback that moves the packet (whose pointers the caller's code
/// then may no longer use) is not summarised: an error naming the helper.
fn summarise(
    p: &Program,
    g: &mut Graph,
    lp: &Loop,
    bound: u64,
    from_r1: bool,
) -> Result<(), CfgError> {
    let header_pc = g.nodes[lp.header as usize].pc;
    let why = if from_r1 {
        format!("may be up to {bound}, more calls than can be unrolled")
    } else {
        "has no evident bound".to_string()
    };
    for &v in &lp.body {
        let pc = g.nodes[v as usize].pc as usize;
        if let Some(Some(Insn::Call { helper })) = p.code.get(pc) {
            if crate::helpers::moves_packet(*helper) || *helper == crate::absint::HELPER_TAIL_CALL {
                return Err(CfgError::LoopCallBound {
                    pc: header_pc as usize,
                    line: line_note(p, header_pc as usize),
                    what: format!(
                        "{why}, and its callback calls {} (instruction {pc}), which a summary \
                         of its calls cannot follow",
                        crate::helpers::names::helper_name(*helper)
                    ),
                });
            }
        }
    }
    unroll(g, lp, 1, None);
    // Copy 0 is the original nodes: the call's first visit and the callback's one copy.
    for &v in &lp.body {
        if v != lp.header {
            let n = &mut g.nodes[v as usize];
            n.times = n.times.saturating_mul(bound);
        }
    }
    for e in g.nodes[lp.header as usize].succ.iter_mut() {
        if e.kind == EdgeKind::Call {
            e.kind = EdgeKind::CallSummary;
        }
    }
    g.loops.push(LoopInfo {
        header_pc,
        bound: bound as u32,
        evident: true,
        summary: true,
    });
    Ok(())
}

/// Inline every call: nodes keyed by (call context, pc). Nested calls multiply (a function
/// called at k sites by a function itself called at k sites has k² instances): more than
/// `max_nodes` instances is an error.
fn inline(p: &Program, max_nodes: usize) -> Result<Graph, CfgError> {
    let n = p.code.len();
    // Call contexts: (parent context, call node, depth); context 0 is the program itself.
    let mut ctxs: Vec<(u32, u32, u8)> = vec![(NONE, NONE, 0)];
    let mut ctx_ids: HashMap<(u32, u32), u32> = HashMap::new();
    // Tail calls: the calls made before a context's code runs, per context. A tail-call
    // target's context has no parent (its `exit` ends the run) and starts at depth 0.
    let mut tails: Vec<u32> = vec![0];
    let mut tail_ids: HashMap<(u32, u32, u32), u32> = HashMap::new();
    let slots = p.tail_slots();
    let mut ids: HashMap<(u32, u32), u32> = HashMap::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut work: Vec<u32> = Vec::new();
    let mut keys: Vec<(u32, u32)> = Vec::new();
    // bpf_loop callbacks by call instruction, and the instructions jumps land on (for them).
    let mut callbacks: HashMap<usize, Result<u32, CfgError>> = HashMap::new();
    let mut landing: Option<Vec<bool>> = None;

    fn intern(
        key: (u32, u32),
        depth: u8,
        ids: &mut HashMap<(u32, u32), u32>,
        nodes: &mut Vec<Node>,
        keys: &mut Vec<(u32, u32)>,
        work: &mut Vec<u32>,
    ) -> u32 {
        *ids.entry(key).or_insert_with(|| {
            nodes.push(Node {
                pc: key.1,
                depth,
                succ: Vec::new(),
                times: 1,
            });
            keys.push(key);
            let id = nodes.len() as u32 - 1;
            work.push(id);
            id
        })
    }

    intern((0, 0), 0, &mut ids, &mut nodes, &mut keys, &mut work);
    while let Some(id) = work.pop() {
        let (ctx, pc) = keys[id as usize];
        let pcu = pc as usize;
        let depth = ctxs[ctx as usize].2;
        let Some(Some(insn)) = p.code.get(pcu) else {
            return Err(CfgError::FallsOff { pc: pcu });
        };
        let target = |t: i64| -> Result<u32, CfgError> {
            if t < 0 || t as usize >= n || p.code[t as usize].is_none() {
                Err(CfgError::BadJump { pc: pcu, target: t })
            } else {
                Ok(t as u32)
            }
        };
        let mut succ: Vec<(u32, u32, u8, EdgeKind, u32)> = Vec::new(); // (ctx, pc, depth, kind, call)
        match *insn {
            Insn::Exit => {
                let (parent, call, _) = ctxs[ctx as usize];
                if parent != NONE {
                    let call_pc = nodes[call as usize].pc;
                    // A bpf_loop callback returns to the call itself (the loop's head: it calls
                    // again or returns); a bpf-to-bpf callee to the instruction after its call.
                    let back = is_loop_call(p, call_pc as usize);
                    let to = if back { call_pc } else { call_pc + 1 };
                    succ.push((parent, to, depth - 1, EdgeKind::Return, call));
                }
            }
            Insn::Ja { off } => {
                let t = target(pcu as i64 + 1 + off as i64)?;
                succ.push((ctx, t, depth, EdgeKind::Next, NONE));
            }
            Insn::Jmp { off, .. } => {
                let t = target(pcu as i64 + 1 + off as i64)?;
                succ.push((ctx, pc + 1, depth, EdgeKind::NotTaken, NONE));
                succ.push((ctx, t, depth, EdgeKind::Taken, NONE));
            }
            Insn::CallLocal { off } => {
                let t = target(pcu as i64 + 1 + off as i64)?;
                if depth >= 7 {
                    return Err(CfgError::TooDeep { pc: pcu });
                }
                let next = ctxs.len() as u32;
                let c = *ctx_ids.entry((ctx, id)).or_insert_with(|| {
                    ctxs.push((ctx, id, depth + 1));
                    tails.push(tails[ctx as usize]);
                    next
                });
                succ.push((c, t, depth + 1, EdgeKind::Call, NONE));
            }
            Insn::Call {
                helper: crate::absint::HELPER_LOOP,
            } => {
                // bpf_loop: a loop whose head is the call. `Next` returns (no more calls:
                // nr_loops reached, the callback returned non-zero, or an error); `Call` calls
                // the callback in a fresh frame, whose exit comes back here (a back edge, which
                // `build` unrolls as a loop bounded by nr_loops).
                let t = pcu + 1;
                if t >= n {
                    return Err(CfgError::FallsOff { pc: pcu });
                }
                let cb = match callbacks.get(&pcu) {
                    Some(r) => r.clone()?,
                    None => {
                        let land = landing.get_or_insert_with(|| landing_points(p));
                        let r = callback_of(p, pcu, land);
                        callbacks.insert(pcu, r.clone());
                        r?
                    }
                };
                if depth >= 7 {
                    return Err(CfgError::TooDeep { pc: pcu });
                }
                let next = ctxs.len() as u32;
                let c = *ctx_ids.entry((ctx, id)).or_insert_with(|| {
                    ctxs.push((ctx, id, depth + 1));
                    tails.push(tails[ctx as usize]);
                    next
                });
                succ.push((ctx, t as u32, depth, EdgeKind::Next, NONE));
                succ.push((c, cb, depth + 1, EdgeKind::Call, NONE));
            }
            Insn::Call {
                helper: crate::absint::HELPER_TAIL_CALL,
            } => {
                let t = pcu + 1;
                if t >= n {
                    return Err(CfgError::FallsOff { pc: pcu });
                }
                succ.push((ctx, t as u32, depth, EdgeKind::Next, NONE));
                let made = tails[ctx as usize];
                if made < crate::load::MAX_TAIL_CALLS {
                    for (k, &(map, slot, entry)) in slots.iter().enumerate() {
                        let next = ctxs.len() as u32;
                        let c = *tail_ids.entry((ctx, id, k as u32)).or_insert_with(|| {
                            ctxs.push((NONE, id, 0));
                            tails.push(made + 1);
                            next
                        });
                        succ.push((c, entry, 0, EdgeKind::TailCall { map, slot }, NONE));
                    }
                }
            }
            ref i => {
                let t = pcu + i.width();
                if t >= n {
                    return Err(CfgError::FallsOff { pc: pcu });
                }
                succ.push((ctx, t as u32, depth, EdgeKind::Next, NONE));
            }
        }
        for (c, t, d, kind, call) in succ {
            let to = intern((c, t), d, &mut ids, &mut nodes, &mut keys, &mut work);
            nodes[id as usize].succ.push(Edge { to, kind, call });
        }
        if nodes.len() > max_nodes {
            return Err(CfgError::TooLarge(max_nodes));
        }
    }
    Ok(Graph {
        nodes,
        loops: Vec::new(),
    })
}

/// Instruction `pc` is a `bpf_loop` call.
pub fn is_loop_call(p: &Program, pc: usize) -> bool {
    matches!(
        p.code.get(pc),
        Some(Some(Insn::Call {
            helper: crate::absint::HELPER_LOOP
        }))
    )
}

/// The callback of the `bpf_loop` call at `pc`: the function whose address (`LD_IMM64`,
/// `BPF_PSEUDO_FUNC`) reaches r2, found by going back through the straight-line code before the
/// call (register moves followed). The verifier needs it to be a known function; clang loads it
/// right before the call. Anything else is an error naming the call.
pub fn callback_of(p: &Program, pc: usize, landing: &[bool]) -> Result<u32, CfgError> {
    let fail = |why: &str| CfgError::LoopCallback {
        pc,
        line: line_note(p, pc),
        why: why.to_string(),
    };
    let landing = |t: usize| landing.get(t).copied().unwrap_or(false);
    let mut reg: u8 = 2;
    let mut k = pc;
    while k > 0 {
        if landing(k) {
            break;
        }
        k -= 1;
        let Some(insn) = p.code[k] else { continue };
        let writes = match insn {
            Insn::Alu { dst, .. } | Insn::End { dst, .. } | Insn::Ldx { dst, .. } => dst == reg,
            Insn::LdImm64 { dst, imm } => {
                if dst != reg {
                    false
                } else if let crate::insn::Imm64::Func(f) = imm {
                    let f = f as usize;
                    if p.code.get(f).copied().flatten().is_none() {
                        return Err(fail(&format!(
                            "its callback, instruction {f}, is not an instruction's start"
                        )));
                    }
                    return Ok(f as u32);
                } else {
                    return Err(fail("r2 is not the address of a function"));
                }
            }
            Insn::Atomic {
                fetch: true,
                src,
                op,
                ..
            } => {
                reg == if op == crate::insn::AtomicOp::CmpXchg {
                    0
                } else {
                    src
                }
            }
            Insn::Call { .. } | Insn::Kfunc { .. } | Insn::CallLocal { .. } => reg <= 5,
            Insn::Ja { .. } | Insn::Jmp { .. } | Insn::Exit => break,
            Insn::St { .. } | Insn::Atomic { .. } | Insn::LdAbs => false,
        };
        if writes {
            match insn {
                Insn::Alu {
                    op: crate::insn::AluOp::Mov,
                    is64: true,
                    src: crate::insn::Src::Reg(r),
                    ..
                } => reg = r,
                _ => return Err(fail("r2 is not the address of a function")),
            }
        }
    }
    Err(fail(
        "its callback (r2) is not a function address loaded in the code right before the call",
    ))
}

/// The instructions some jump or bpf-to-bpf call lands on, or a function address names: the
/// code before them is not straight-line (for [`callback_of`]).
pub fn landing_points(p: &Program) -> Vec<bool> {
    let mut at = vec![false; p.code.len()];
    for (k, i) in p.code.iter().enumerate() {
        let t = match i {
            Some(Insn::Ja { off }) => k as i64 + 1 + *off as i64,
            Some(Insn::Jmp { off, .. }) => k as i64 + 1 + *off as i64,
            Some(Insn::CallLocal { off }) => k as i64 + 1 + *off as i64,
            Some(Insn::LdImm64 {
                imm: crate::insn::Imm64::Func(f),
                ..
            }) => *f as i64,
            _ => continue,
        };
        if let Some(x) = usize::try_from(t).ok().and_then(|t| at.get_mut(t)) {
            *x = true;
        }
    }
    at
}

/// A natural loop: its header, the nodes of its body (header included) and its back edges.
struct Loop {
    header: u32,
    /// Sorted node ids.
    body: Vec<u32>,
    in_body: Vec<bool>,
    /// (latch, index of the back edge in the latch's successors).
    back: Vec<(u32, usize)>,
    /// Some node of the body other than the header has a predecessor outside the body.
    entered_elsewhere: bool,
}

/// Predecessor lists.
fn preds(g: &Graph) -> Vec<Vec<u32>> {
    let mut p = vec![Vec::new(); g.nodes.len()];
    for (u, n) in g.nodes.iter().enumerate() {
        for e in &n.succ {
            p[e.to as usize].push(u as u32);
        }
    }
    p
}

/// The back edges found by a depth-first search from the entry, grouped by header; returns
/// the loop with the smallest body (an innermost one), or `None` if the graph is acyclic.
fn innermost_loop(g: &Graph) -> Option<Loop> {
    let n = g.nodes.len();
    // 0 = unseen, 1 = on the stack, 2 = done.
    let mut color = vec![0u8; n];
    let mut back: HashMap<u32, Vec<(u32, usize)>> = HashMap::new();
    let mut stack: Vec<(u32, usize)> = vec![(0, 0)];
    color[0] = 1;
    while let Some(&mut (u, ref mut k)) = stack.last_mut() {
        if let Some(e) = g.nodes[u as usize].succ.get(*k) {
            let idx = *k;
            *k += 1;
            match color[e.to as usize] {
                0 => {
                    color[e.to as usize] = 1;
                    stack.push((e.to, 0));
                }
                1 => back.entry(e.to).or_default().push((u, idx)),
                _ => {}
            }
        } else {
            color[u as usize] = 2;
            stack.pop();
        }
    }
    if back.is_empty() {
        return None;
    }
    let pr = preds(g);
    let mut best: Option<Loop> = None;
    let mut headers: Vec<_> = back.into_iter().collect();
    headers.sort();
    for (h, edges) in headers {
        // Body: the header plus everything that reaches a latch without passing the header.
        let mut in_body = vec![false; n];
        in_body[h as usize] = true;
        let mut work: Vec<u32> = edges.iter().map(|&(l, _)| l).collect();
        while let Some(v) = work.pop() {
            if in_body[v as usize] {
                continue;
            }
            in_body[v as usize] = true;
            work.extend(pr[v as usize].iter().copied());
        }
        let body: Vec<u32> = (0..n as u32).filter(|&v| in_body[v as usize]).collect();
        let entered_elsewhere = body
            .iter()
            .any(|&v| v != h && pr[v as usize].iter().any(|&u| !in_body[u as usize]));
        if best.as_ref().is_none_or(|b| body.len() < b.body.len()) {
            best = Some(Loop {
                header: h,
                body,
                in_body,
                back: edges,
                entered_elsewhere,
            });
        }
    }
    best
}

/// Abstract states at every node of `g`, by a worklist over the (possibly cyclic) graph with
/// widening at nodes seen often.
fn states(g: &Graph, p: &Program) -> Vec<Option<State>> {
    let n = g.nodes.len();
    let mut at: Vec<Option<State>> = vec![None; n];
    let mut visits = vec![0u32; n];
    at[0] = Some(State::entry());
    let mut work = vec![0u32];
    while let Some(u) = work.pop() {
        let Some(s) = at[u as usize].clone() else {
            continue;
        };
        for (_, to, out) in out_states(g, p, u, &s, |c| at.get(c as usize).cloned().flatten()) {
            let merged = match &at[to as usize] {
                None => out,
                Some(old) => {
                    let j = if visits[to as usize] > 3 {
                        old.widen(&out)
                    } else {
                        old.join(&out)
                    };
                    if j == *old {
                        continue;
                    }
                    j
                }
            };
            visits[to as usize] += 1;
            at[to as usize] = Some(merged);
            work.push(to);
        }
    }
    at
}

/// The states leaving node `u` (in state `s`) along each feasible edge; `call(c)` is the state
/// at call node `c` (that a `Return` edge gives the caller's registers and stack back from).
pub(crate) fn out_states(
    g: &Graph,
    p: &Program,
    u: u32,
    s: &State,
    call: impl Fn(u32) -> Option<State>,
) -> Vec<(usize, u32, State)> {
    let node = &g.nodes[u as usize];
    let insn = p.code[node.pc as usize]
        .as_ref()
        .expect("node on an instruction");
    let after = s.step_in(insn, p);
    let (can_take, can_fall) = s.branch(insn);
    let loop_call = is_loop_call(p, node.pc as usize);
    let mut out = Vec::with_capacity(node.succ.len());
    for (idx, e) in node.succ.iter().enumerate() {
        let mut t = after.clone();
        match e.kind {
            EdgeKind::Taken if !can_take => continue,
            EdgeKind::NotTaken if !can_fall => continue,
            EdgeKind::Taken => t.refine(insn, true),
            EdgeKind::NotTaken => t.refine(insn, false),
            EdgeKind::Return => {
                // The caller's r6–r10 come back, and its stack as the callee left it; r1–r5
                // are clobbered, except at a `bpf_loop` call that goes on calling its callback
                // (its next visit of the call), where they are still the call's arguments.
                let c = call(e.call);
                t.return_to(c.as_ref());
                let resumes = c.as_ref().filter(|_| {
                    e.call != NONE
                        && g.nodes[e.call as usize].pc == g.nodes[e.to as usize].pc
                        && is_loop_call(p, g.nodes[e.to as usize].pc as usize)
                });
                match resumes {
                    Some(c) => t.regs[1..6].copy_from_slice(&c.regs[1..6]),
                    None => t.regs[1..6].fill(crate::absint::Val::Top),
                }
            }
            EdgeKind::Call => {
                if loop_call {
                    // bpf_loop calls `callback(index, ctx)`: ctx is its r3.
                    t.regs[1] = crate::absint::Val::Top;
                    t.regs[2] = s.regs[3];
                }
                t.enter_call();
            }
            EdgeKind::CallSummary => {
                // Any call of the callback: its index unknown, its context as the call's r3,
                // and what the calls before may have written through it unknown (the frames
                // it points into and those further out, which pointers stored there reach).
                t.regs[1..6].fill(crate::absint::Val::Top);
                if loop_call {
                    t.regs[2] = s.regs[3];
                    if let crate::absint::Val::Fp(up, _) = s.regs[3] {
                        t.forget_from(up);
                    }
                }
                t.enter_call();
            }
            EdgeKind::TailCall { map, slot } => {
                if !tail_call_possible(s, map, slot) {
                    continue;
                }
                // The target starts as a program does (r1 the context, a fresh stack), on the
                // packet as the caller left it.
                t = State {
                    shift: after.shift,
                    ..State::entry()
                };
            }
            EdgeKind::Next => {}
        }
        out.push((idx, e.to, t));
    }
    out
}

/// A tail call in state `s` (before the call) may jump to slot `slot` of prog array `map`: the
/// map argument may be that map, and the index may be that slot.
pub fn tail_call_possible(s: &State, map: u32, slot: u32) -> bool {
    use crate::absint::Val;
    let map_ok = match s.regs[2] {
        Val::MapPtr(m) => m == map,
        _ => true,
    };
    // The index is a u32: its low 32 bits.
    let index_ok = match s.regs[3] {
        Val::Scalar(iv) if iv.hi <= u32::MAX as u64 => iv.lo <= slot as u64 && slot as u64 <= iv.hi,
        _ => true,
    };
    map_ok && index_ok
}

/// The edges (body node, successor index) of a loop that can be taken, iteration by
/// iteration: a bit per edge of the body per iteration (a hash set of them took about 40 bytes
/// an edge: 160 MB for `loop_nested.o`'s outer loop, tried 400 times over a 10,000-node body).
struct Feasible {
    /// The loop's body (sorted node ids) and the bit of each body node's first edge.
    body: Vec<u32>,
    first_bit: Vec<usize>,
    /// 64-bit words per iteration, and the iterations' bits one after the other.
    words: usize,
    bits: Vec<u64>,
}

impl Feasible {
    fn new(g: &Graph, lp: &Loop) -> Feasible {
        let mut first_bit = Vec::with_capacity(lp.body.len() + 1);
        let mut at = 0;
        for &v in &lp.body {
            first_bit.push(at);
            at += g.nodes[v as usize].succ.len();
        }
        first_bit.push(at);
        Feasible {
            body: lp.body.clone(),
            first_bit,
            words: at.div_ceil(64),
            bits: Vec::new(),
        }
    }

    /// A new iteration, with no edge taken yet.
    fn push_iteration(&mut self) {
        self.bits.resize(self.bits.len() + self.words, 0);
    }

    fn bit(&self, u: u32, idx: usize) -> Option<usize> {
        let i = self.body.binary_search(&u).ok()?;
        Some(self.first_bit[i] + idx).filter(|&b| b < self.first_bit[i + 1])
    }

    /// Edge `idx` of body node `u` can be taken in the last iteration.
    fn insert(&mut self, u: u32, idx: usize) {
        if let Some(b) = self.bit(u, idx) {
            let at = self.bits.len() - self.words + b / 64;
            self.bits[at] |= 1 << (b % 64);
        }
    }

    /// Edge `idx` of body node `u` can be taken in iteration `k`.
    fn contains(&self, k: usize, u: u32, idx: usize) -> bool {
        self.bit(u, idx).is_some_and(|b| {
            self.bits
                .get(k * self.words + b / 64)
                .is_some_and(|w| w >> (b % 64) & 1 == 1)
        })
    }
}

/// The abstract state on entry to loop `lp`: the join over the edges into its header from
/// outside the loop (`at`: the states of [`states`]).
fn entry_state(p: &Program, g: &Graph, lp: &Loop, at: &[Option<State>]) -> Option<State> {
    let pr = preds(g);
    let mut entry: Option<State> = None;
    for &u in &pr[lp.header as usize] {
        if lp.in_body[u as usize] {
            continue;
        }
        let Some(s) = &at[u as usize] else { continue };
        for (_, to, t) in out_states(g, p, u, s, |c| at.get(c as usize).cloned().flatten()) {
            if to == lp.header {
                entry = Some(match entry {
                    Some(e) => e.join(&t),
                    None => t,
                });
            }
        }
    }
    entry
}

/// The most times a `bpf_loop` call (the head of loop `lp`) calls its callback: the largest
/// nr_loops (r1's low 32 bits) the abstract values allow on entry, at most `BPF_MAX_LOOPS` (a
/// larger one makes the helper return -E2BIG without a call). `None`: not evident.
fn loop_call_bound(p: &Program, g: &Graph, lp: &Loop) -> Option<u64> {
    let at = states(g, p);
    let entry = entry_state(p, g, lp, &at)?;
    match entry.regs[1] {
        crate::absint::Val::Scalar(iv) if iv.hi <= u32::MAX as u64 => {
            Some(iv.hi.min(crate::absint::BPF_MAX_LOOPS))
        }
        _ => None,
    }
}

/// The largest count of the `bpf_iter_num` iterator that loop `lp` calls `bpf_iter_num_next`
/// on, as the abstract values give it on entry (`helpers::iter_num::absint_step`), if the body
/// makes such a call.
fn iter_count(p: &Program, g: &Graph, lp: &Loop) -> Option<u64> {
    let at = states(g, p);
    let entry = entry_state(p, g, lp, &at)?;
    lp.body.iter().find_map(|&v| {
        let pc = g.nodes[v as usize].pc as usize;
        let Some(Insn::Kfunc { id }) = p.code.get(pc).copied().flatten() else {
            return None;
        };
        if p.kfunc_name(id) != crate::helpers::iter_num::NEXT {
            return None;
        }
        let s = at
            .get(v as usize)
            .cloned()
            .flatten()
            .unwrap_or_else(|| entry.clone());
        Some(crate::helpers::iter_num::count_at(&s).unwrap_or(crate::absint::BPF_MAX_LOOPS))
    })
}

/// How many times the loop's back edges can be taken, if the abstract values show it, and for
/// every iteration the edges of the body that the abstract values do not rule out. `Err`: an
/// iteration would hold more than `max_local` states of the body's nodes at once (how many).
fn find_bound(
    p: &Program,
    g: &Graph,
    lp: &Loop,
    max_iterations: u32,
    max_local: usize,
) -> Result<Option<(u32, Feasible)>, usize> {
    let at = states(g, p);
    // State on entry: the join over edges into the header from outside the loop.
    let Some(mut cur) = entry_state(p, g, lp, &at) else {
        return Ok(None);
    };
    // Topological order of the body without its back edges (inner loops are unrolled).
    let order = body_order(g, lp);
    let is_back = |u: u32, k: usize| lp.back.contains(&(u, k));
    let mut local: HashMap<u32, State> = HashMap::new();
    // The states of this iteration's bpf-to-bpf call sites, which their callees' returns
    // restore r6-r10 from (the whole graph's state there joins every iteration's: a counter
    // kept in r9 across a call came back unknown, and the loop had "no evident bound").
    let mut callers: HashMap<u32, State> = HashMap::new();
    let mut feasible = Feasible::new(g, lp);
    for k in 0..=max_iterations {
        local.clear();
        callers.clear();
        feasible.push_iteration();
        local.insert(lp.header, cur.clone());
        let mut next: Option<State> = None;
        for &u in &order {
            // Visited in topological order: a node's state is not needed after its visit.
            let Some(s) = local.remove(&u) else {
                continue;
            };
            let caller = |c: u32| {
                callers
                    .get(&c)
                    .cloned()
                    .or_else(|| at.get(c as usize).cloned().flatten())
            };
            let outs = out_states(g, p, u, &s, caller);
            if g.nodes[u as usize]
                .succ
                .iter()
                .any(|e| e.kind == EdgeKind::Call)
            {
                callers.insert(u, s);
            }
            for (idx, to, t) in outs {
                feasible.insert(u, idx);
                if is_back(u, idx) {
                    next = Some(match next {
                        Some(x) => x.join(&t),
                        None => t,
                    });
                } else if lp.in_body[to as usize] {
                    local.entry(to).and_modify(|x| *x = x.join(&t)).or_insert(t);
                }
            }
            // (The tables' capacity: what they hold allocated.)
            if local.capacity() + callers.capacity() > max_local {
                return Err(local.capacity() + callers.capacity());
            }
        }
        match next {
            None => return Ok(Some((k, feasible))),
            Some(n) if n == cur => return Ok(None), // no progress: the loop would never end
            Some(n) => cur = n,
        }
    }
    Ok(None)
}

/// The loop body in topological order (header first), ignoring back edges.
fn body_order(g: &Graph, lp: &Loop) -> Vec<u32> {
    let mut indeg: HashMap<u32, usize> = lp.body.iter().map(|&v| (v, 0)).collect();
    for &u in &lp.body {
        for (k, e) in g.nodes[u as usize].succ.iter().enumerate() {
            if lp.in_body[e.to as usize] && !lp.back.contains(&(u, k)) {
                *indeg.get_mut(&e.to).unwrap() += 1;
            }
        }
    }
    let mut ready = vec![lp.header];
    let mut order = Vec::with_capacity(lp.body.len());
    while let Some(u) = ready.pop() {
        order.push(u);
        for (k, e) in g.nodes[u as usize].succ.iter().enumerate() {
            if lp.in_body[e.to as usize] && !lp.back.contains(&(u, k)) {
                let d = indeg.get_mut(&e.to).unwrap();
                *d -= 1;
                if *d == 0 {
                    ready.push(e.to);
                }
            }
        }
    }
    order
}

/// Replace the loop by `bound + 1` chained copies of its body; copy k keeps only the edges in
/// `feasible[k]` when given.
fn unroll(g: &mut Graph, lp: &Loop, bound: u32, feasible: Option<&Feasible>) {
    let m = lp.body.len();
    // copies[k][i] = node id of body node i in copy k (copy 0 = the original nodes).
    let pos: HashMap<u32, usize> = lp.body.iter().enumerate().map(|(i, &v)| (v, i)).collect();
    let mut copies: Vec<Vec<u32>> = vec![lp.body.clone()];
    for _ in 1..=bound {
        let base = g.nodes.len() as u32;
        for &v in &lp.body {
            let n = g.nodes[v as usize].clone();
            g.nodes.push(n);
        }
        copies.push((0..m as u32).map(|i| base + i).collect());
    }
    let header_pos = pos[&lp.header];
    // The body's edges as they were (copy 0 is rewritten in place).
    let orig_succ: Vec<Vec<Edge>> = lp
        .body
        .iter()
        .map(|&v| g.nodes[v as usize].succ.clone())
        .collect();
    for k in 0..=bound as usize {
        for i in 0..m {
            let id = copies[k][i] as usize;
            let orig = lp.body[i];
            let mut succ = Vec::with_capacity(g.nodes[id].succ.len());
            for (idx, &e) in orig_succ[i].iter().enumerate() {
                let mut e = e;
                if feasible.is_some_and(|f| !f.contains(k, orig, idx)) {
                    continue; // ruled out in this iteration
                }
                if lp.back.contains(&(orig, idx)) {
                    if k == bound as usize {
                        continue; // the loop cannot iterate again
                    }
                    e.to = copies[k + 1][header_pos];
                } else if let Some(&j) = pos.get(&e.to) {
                    e.to = copies[k][j];
                }
                if e.kind == EdgeKind::Return {
                    if let Some(&j) = pos.get(&e.call) {
                        e.call = copies[k][j];
                    }
                }
                succ.push(e);
            }
            g.nodes[id].succ = succ;
        }
    }
}

/// Remove the code no state reaches: the edges the abstract values rule out (into a node they
/// give no state, and out of one), then what `prune` drops. A loop whose bound cannot be found
/// because nothing reaches it — a tail-call target spliced at a call whose index never names
/// its slot (ellanetworks' UPF: `--tail-call upf_calls=2:...` where the entry program's index
/// is 0 or 1), code after a check the values decide — is dead, not unbounded. Returns whether
/// the graph lost nodes (its loops must then be looked for again).
fn drop_unreachable(p: &Program, g: &mut Graph) -> Result<bool, CfgError> {
    let at = states(g, p);
    let before = g.nodes.len();
    for (u, node) in g.nodes.iter_mut().enumerate() {
        if at[u].is_none() {
            node.succ.clear();
        } else if node.succ.iter().any(|e| at[e.to as usize].is_some()) {
            node.succ.retain(|e| at[e.to as usize].is_some());
        }
    }
    prune(g, p)?;
    Ok(g.nodes.len() < before)
}

/// Keep only nodes reachable from the entry that reach a top-level `exit`; renumber. None
/// left (the entry does not reach an exit, as when a loop that cannot end is all that remains
/// once the loops inside it are unrolled) is an error. Only an `exit` instruction ends a path:
/// a node left without successors otherwise (no abstract state reaches it, or its edges were
/// found infeasible) is no end of the program, and a path through it is dropped, not cut short
/// there (which would cost it less than the program runs).
fn prune(g: &mut Graph, p: &Program) -> Result<(), CfgError> {
    let n = g.nodes.len();
    let mut reach = vec![false; n];
    let mut work = vec![0u32];
    reach[0] = true;
    while let Some(u) = work.pop() {
        for e in &g.nodes[u as usize].succ {
            if !reach[e.to as usize] {
                reach[e.to as usize] = true;
                work.push(e.to);
            }
        }
    }
    let pr = preds(g);
    let mut live = vec![false; n];
    let mut work: Vec<u32> = (0..n as u32)
        .filter(|&u| {
            reach[u as usize]
                && g.nodes[u as usize].succ.is_empty()
                && g.nodes[u as usize].depth == 0
                && matches!(
                    p.code.get(g.nodes[u as usize].pc as usize),
                    Some(Some(Insn::Exit))
                )
        })
        .collect();
    for &u in &work {
        live[u as usize] = true;
    }
    while let Some(u) = work.pop() {
        for &v in &pr[u as usize] {
            if reach[v as usize] && !live[v as usize] {
                live[v as usize] = true;
                work.push(v);
            }
        }
    }
    if !live[0] {
        return Err(CfgError::NoExit);
    }
    let mut new_id = vec![NONE; n];
    let mut k = 0u32;
    for u in 0..n {
        if live[u] {
            new_id[u] = k;
            k += 1;
        }
    }
    let old = std::mem::take(&mut g.nodes);
    for (u, mut node) in old.into_iter().enumerate() {
        if !live[u] {
            continue;
        }
        node.succ.retain(|e| live[e.to as usize]);
        for e in node.succ.iter_mut() {
            e.to = new_id[e.to as usize];
            if e.call != NONE {
                e.call = new_id[e.call as usize];
            }
        }
        g.nodes.push(node);
    }
    Ok(())
}

impl Graph {
    /// Number of entry→exit paths (saturating), for tests and reports.
    /// Bytes the graph takes (its nodes and their edge lists).
    pub fn memory_bytes(&self) -> usize {
        let edges: usize = self.nodes.iter().map(|n| n.succ.capacity()).sum();
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + edges * std::mem::size_of::<Edge>()
            + self.loops.capacity() * std::mem::size_of::<LoopInfo>()
    }

    /// Number of entry→exit paths (saturating), for tests and reports.
    pub fn path_count(&self) -> u128 {
        let order = self.topo_order();
        let mut count = vec![0u128; self.nodes.len()];
        for &u in order.iter().rev() {
            let n = &self.nodes[u as usize];
            count[u as usize] = if n.succ.is_empty() {
                1
            } else {
                n.succ
                    .iter()
                    .fold(0u128, |a, e| a.saturating_add(count[e.to as usize]))
            };
        }
        count[0]
    }

    /// Nodes in topological order (entry first).
    pub fn topo_order(&self) -> Vec<u32> {
        let n = self.nodes.len();
        let mut indeg = vec![0usize; n];
        for node in &self.nodes {
            for e in &node.succ {
                indeg[e.to as usize] += 1;
            }
        }
        let mut ready: Vec<u32> = (0..n as u32).filter(|&u| indeg[u as usize] == 0).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(u) = ready.pop() {
            order.push(u);
            for e in &self.nodes[u as usize].succ {
                indeg[e.to as usize] -= 1;
                if indeg[e.to as usize] == 0 {
                    ready.push(e.to);
                }
            }
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testasm::*;

    fn graph(slots: &[Slot], loop_bound: Option<u32>) -> Result<Graph, CfgError> {
        let p = prog(slots, Vec::new());
        build(
            &p,
            Limits {
                loop_bound,
                ..Limits::default()
            },
        )
    }

    #[test]
    fn a_bpf_loop_call_is_a_loop_bounded_by_nr_loops() {
        let g = graph(&loop_slots(5, 0, 100), None).unwrap();
        assert_eq!(
            g.loops,
            [LoopInfo {
                header_pc: 7,
                bound: 5,
                evident: true,
                summary: false
            }]
        );
        // The call node comes back after each call: 0 to 5 calls, each of which may stop the
        // loop (the callback's two exits).
        let calls = g.nodes.iter().filter(|n| n.pc == 7).count();
        assert_eq!(calls, 6);
        assert!(g.path_count() > 6);
        // nr_loops from the packet's length is not evident: the call is summarised with the
        // kernel's cap (its callback once, each of its nodes standing for 2^23 calls, entered
        // by a CallSummary edge), or --loop-bound unrolls it.
        let mut s = loop_slots(5, 0, 100);
        s[1] = ldx(W, 1, 1, 4); // r1 = ctx->data_end: a pointer, no bound
        let g = graph(&s, None).unwrap();
        let cap = crate::absint::BPF_MAX_LOOPS;
        assert_eq!(
            g.loops,
            [LoopInfo {
                header_pc: 7,
                bound: cap as u32,
                evident: true,
                summary: true
            }]
        );
        summary_shape(&g, cap);
        let g = graph(&s, Some(3)).unwrap();
        assert_eq!((g.loops[0].bound, g.loops[0].evident), (3, false));
        assert!(g.nodes.iter().all(|n| n.times == 1));
        // A bound above what can be unrolled is summarised with that bound.
        let mut s = loop_slots(5, 0, 100);
        s[1] = ldx(W, 1, 10, -16); // a u32 from the stack: up to 2^32 - 1, capped at 2^23
        let g = graph(&s, None).unwrap();
        assert!(g.loops[0].summary && g.loops[0].bound == cap as u32);
        summary_shape(&g, cap);
        // One that could be unrolled but not within the graph's limits, too.
        let mut s = loop_slots(5, 0, 100);
        s[1] = mov(1, 5000);
        let p = prog(&s, Vec::new());
        let lim = Limits {
            max_nodes: 2000,
            ..Limits::default()
        };
        let g = build(&p, lim).unwrap();
        assert_eq!((g.loops[0].bound, g.loops[0].summary), (5000, true));
        summary_shape(&g, 5000);
        // A callback that moves the packet is not summarised: an error naming the helper.
        let mut s = loop_slots(5, 0, 100);
        s[1] = ldx(W, 1, 1, 4);
        s[15] = call(44); // bpf_xdp_adjust_head in the callback
        let e = graph(&s, None).unwrap_err();
        assert!(e.to_string().contains("bpf_loop at instruction 7"), "{e}");
        assert!(e.to_string().contains("bpf_xdp_adjust_head"), "{e}");
        assert!(e.to_string().contains("--loop-bound"), "{e}");
    }

    /// A summarised call: its first visit enters the callback (every node of it standing for
    /// `times` calls) by a `CallSummary` edge, and its visit after that one call only returns.
    fn summary_shape(g: &Graph, times: u64) {
        let calls: Vec<&Node> = g.nodes.iter().filter(|n| n.pc == 7).collect();
        assert_eq!(calls.len(), 2);
        let first = calls
            .iter()
            .find(|n| n.succ.len() == 2)
            .expect("the first visit");
        let into = first
            .succ
            .iter()
            .find(|e| e.kind == EdgeKind::CallSummary)
            .expect("a CallSummary edge");
        assert!(calls
            .iter()
            .any(|n| n.succ.len() == 1 && n.succ[0].kind == EdgeKind::Next));
        assert_eq!(g.nodes[into.to as usize].times, times);
        for n in &g.nodes {
            let in_cb = n.pc >= 12;
            assert_eq!(n.times, if in_cb { times } else { 1 }, "{n:?}");
        }
    }

    #[test]
    fn a_bpf_loop_callback_must_be_a_function_loaded_before_the_call() {
        // r2 a number.
        let mut s = loop_slots(5, 0, 100);
        s[2] = mov(2, 12);
        s[3] = mov(3, 0);
        let e = graph(&s, None).unwrap_err();
        assert!(
            e.to_string()
                .contains("r2 is not the address of a function"),
            "{e}"
        );
        // The callback's address into the second slot of an LD_IMM64.
        let mut s = loop_slots(5, 0, 100);
        s.extend(ld64(0, 0));
        s.push(exit());
        let [f0, _] = ld_func(2, 18);
        s[2] = f0; // 2 + 1 + 18 = 21: the second slot of the LD_IMM64 at 20
        let e = graph(&s, None).unwrap_err();
        assert!(
            e.to_string().contains("is not an instruction's start"),
            "{e}"
        );
        // A callback chosen on another path (a jump lands between the load and the call).
        let mut s = loop_slots(5, 0, 100);
        s[1] = ja(2); // to 4, past r2's load
        let e = graph(&s, None).unwrap_err();
        assert!(
            e.to_string()
                .contains("loaded in the code right before the call"),
            "{e}"
        );
        // An address outside the program, or of the LD_IMM64's own second slot: a decode error.
        for off in [100, -10, 0] {
            let mut s = loop_slots(5, 0, 100);
            let [f0, _] = ld_func(2, off);
            s[2] = f0;
            let bytes: Vec<u8> = s.concat();
            let raw = crate::insn::Raw::slots(&bytes).unwrap();
            let e = crate::insn::decode(&raw, &|_| None).unwrap_err();
            assert!(
                e.to_string().contains("instruction 2")
                    && e.to_string()
                        .contains("is not an instruction of the program"),
                "{e}"
            );
        }
    }
}
