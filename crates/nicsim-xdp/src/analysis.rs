//! One analysis, from object bytes to the summary that `nicsim xdp analyze` writes.
//!
//! Its memory is bounded by a budget ([`Options::memory_budget_bytes`], what `--memory-mb` leaves
//! the analyzer: docs/xdp.md, "Memory"): the graph is built within it (or the analysis stops
//! with [`XdpError::Memory`], naming what would not fit, before there is a bound), the split
//! by constants only where it fits, and the search's state and each query get what the graph
//! leaves ([`Search::with_total_budget`]); a search that reaches it stops with the bound so
//! far.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::cfg::{self, Limits};
use crate::cost::{self, Dag, NC};
use crate::load::{self, Program};
use crate::paths;
use crate::summary::{
    ClassCost, Cost, GraphSummary, Guarantee, LineCost, LoopSummary, MapSummary, Naive, ObjectInfo,
    OffloadCheck, PathInfo, PathSummary, ProgArraySlots, Summary,
};
use crate::target::Target;

/// Why an analysis failed.
#[derive(Debug, thiserror::Error)]
pub enum XdpError {
    /// The object could not be loaded.
    #[error(transparent)]
    Load(#[from] load::LoadError),
    /// The control-flow graph could not be built.
    #[error(transparent)]
    Cfg(#[from] cfg::CfgError),
    /// The graph could not be costed.
    #[error(transparent)]
    Cost(#[from] cost::CostError),
    /// The graph needed for the naive bound does not fit the memory budget.
    #[error(
        "{what} would need about {need_mb} MB, more than the {budget_mb} MB that --memory-mb \
         leaves the analysis (a larger --memory-mb may let it fit)"
    )]
    Memory {
        /// What would not fit.
        what: String,
        /// MiB it would need.
        need_mb: usize,
        /// MiB the budget leaves the analysis.
        budget_mb: usize,
    },
    /// A `--map-size` that names no map of the program, or a size of 0.
    #[error("--map-size: {0}")]
    MapSize(String),
}

/// What `nicsim xdp analyze` is told: program choice, loop bound, memory, map sizes, tail calls.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--section`: an ELF section (or, as before `--program`, a function name).
    pub section: Option<String>,
    /// `--program`: a function name (or `section/function`).
    pub program: Option<String>,
    /// `--loop-bound`: the bound of loops whose bound is not evident.
    pub loop_bound: Option<u32>,
    /// Bytes the analysis may take: the graph while it is built and costed, then the graph,
    /// its split and the search's state together (`None`: no bound). The object itself and
    /// the solver are not counted.
    pub memory_budget_bytes: Option<usize>,
    /// Map sizes the user gives (`--map-size NAME=N`), in place of the declared `max_entries`
    /// (a loader may set a size before loading: xdp-tools' samples declare 0).
    pub map_sizes: Vec<(String, u32)>,
    /// What prog arrays hold (`--tail-call MAP=INDEX:PROGRAM`), in place of what the object
    /// declares for them.
    pub tail_calls: Vec<load::TailSpec>,
}

impl Options {
    /// `memory_budget_bytes` from `--memory-mb`'s share for the analysis (MiB; saturating).
    pub fn memory_budget_mb(mb: Option<u64>) -> Option<usize> {
        mb.map(|mb| {
            usize::try_from(mb)
                .unwrap_or(usize::MAX)
                .saturating_mul(1 << 20)
        })
    }
}

/// Bytes per node of the graph at the peak of building and costing it (inlining's tables,
/// unrolling, then the costs and the facts for the constant split, beside the graph itself):
/// the graph may have `budget / NODE_BYTES` nodes. Measured with a counting allocator on the
/// suite's largest graphs (tests/memory.rs: at most 250).
pub const NODE_BYTES: usize = 384;
/// Bytes per node the split by constants takes while it is built (each holds its constants,
/// 264 bytes, in a hash map and a list, and its edges): measured 1.2–1.3 kB (tests/memory.rs).
pub const SPLIT_NODE_BYTES: usize = 1536;
/// A query's text is held about this many times at once (the core's text, its JSON, Python's
/// string, the copy sent to the solver process; building it takes about twice its text).
pub const QUERY_COPIES: usize = 6;
/// A query's text is at least this long per step of its path (35 to 450 on the suite): a path
/// whose query could not fit even so is not turned into one.
pub const QUERY_MIN_BYTES_PER_STEP: usize = 32;

/// Bytes one byte of a map's key or value takes in a query being built (its term's text, about
/// 40 bytes, and the string holding it).
pub const MAP_BYTE_TERM_BYTES: usize = 96;

/// Bytes the terms of one lookup of map `m` take ([`MAP_BYTE_TERM_BYTES`] per key and value byte).
fn map_term_bytes(m: &load::MapDef) -> usize {
    // A value larger than an example gives whole is asked of a model by the bytes a path reads
    // (symex.rs `Lookup::reads`, at most MAX_EXAMPLE_VALUE_READS of them, a position and a byte each).
    let value_terms = if m.value_size > crate::symex::MAX_EXAMPLE_VALUE_BYTES {
        2 * crate::symex::MAX_EXAMPLE_VALUE_READS
    } else {
        m.value_size as usize
    };
    (m.key_size as usize + value_terms).saturating_mul(MAP_BYTE_TERM_BYTES)
}

/// A loaded, unrolled and costed program.
pub struct Analysis {
    /// The loaded program.
    pub program: Program,
    /// Its inlined, unrolled control-flow graph.
    pub graph: cfg::Graph,
    /// The graph in compressed form, with a cost vector per edge.
    pub dag: Dag,
    /// The target the costs are for.
    pub target: Target,
    /// The graph the search enumerates: `dag` split by path constants ([`crate::consts`]),
    /// or `dag` itself when the split would be too large.
    pub search_dag: Dag,
    /// The budget it was built within ([`Options::memory_budget_bytes`]; `usize::MAX`: none).
    pub memory_budget_bytes: usize,
}

/// The split graph may have this many times the nodes of the graph, at most.
const SPLIT_GROWTH: usize = 64;
/// And this many nodes at most: the split takes about 1.1 kB per node it builds (each holds
/// its constants, 264 bytes, in a hash map and a list), so a split that fails only at 64 times
/// a large graph (a loop unrolled 30,000 times: 17 million split nodes) took 19 GB to find that
/// out; this caps it near 600 MB. The suite's largest split graph has 70,264 nodes.
pub const SPLIT_MAX_NODES: usize = 1 << 19;

impl Analysis {
    /// Load `bytes` (an ELF object), build and cost its graph for `target`, within the memory budget.
    pub fn new(bytes: &[u8], target: Target, opts: &Options) -> Result<Analysis, XdpError> {
        let mut program = load::load_full(
            bytes,
            opts.section.as_deref(),
            opts.program.as_deref(),
            &opts.tail_calls,
        )?;
        program.resize(&opts.map_sizes).map_err(XdpError::MapSize)?;
        Analysis::of_program(program, target, opts)
    }

    /// Build and cost the graph of a loaded program (`opts`' loop bound and memory budget; its
    /// section, program, map sizes and tail calls are the loader's, already applied).
    pub fn of_program(
        program: Program,
        target: Target,
        opts: &Options,
    ) -> Result<Analysis, XdpError> {
        let budget = opts.memory_budget_bytes.unwrap_or(usize::MAX);
        let memory_error = |what: String, need_bytes: usize| XdpError::Memory {
            what,
            need_mb: need_bytes.div_ceil(1 << 20),
            budget_mb: budget >> 20,
        };
        // A lookup's key and value are a term per byte when a model is read (of a large value,
        // per byte read): a map whose terms cannot be held once within the budget is refused
        // before they are.
        if let Some(m) = program.maps.iter().max_by_key(|m| map_term_bytes(m)) {
            let need = map_term_bytes(m);
            if need > budget {
                return Err(memory_error(
                    format!(
                        "map '{}': its key_size {} and value_size {} (a term per byte, about \
                         {MAP_BYTE_TERM_BYTES} bytes each, when a model of a path that looks it \
                         up is read)",
                        m.name, m.key_size, m.value_size
                    ),
                    need,
                ));
            }
        }
        // The graph's size follows from the budget, unless the fixed limit is lower.
        let limits = Limits {
            loop_bound: opts.loop_bound,
            max_bytes: budget,
            ..Limits::default()
        };
        let max_nodes = limits.max_nodes.min(budget / NODE_BYTES);
        let graph = cfg::build(
            &program,
            Limits {
                max_nodes,
                ..limits
            },
        )
        .map_err(|e| match e {
            cfg::CfgError::TooLarge(n) if n < limits.max_nodes => memory_error(
                format!(
                    "the inlined and unrolled graph (more than {n} instruction instances, \
                     {NODE_BYTES} bytes each while it is built and costed)"
                ),
                (n + 1) * NODE_BYTES,
            ),
            cfg::CfgError::Memory { what, need_bytes } => memory_error(what, need_bytes),
            e => e.into(),
        })?;
        let (dag, facts) = cost::costed_with_facts(&program, &graph, &target)?;
        // Every sum of path costs is at most the costliest path's: refused when that comes near
        // what a u64 of millionths of a cycle holds (a target of absurd costs, which would wrap).
        let max_units = u64::MAX / 4;
        for (c, component) in cost::COMPONENTS.iter().enumerate() {
            let (best, _) = crate::paths::longest_to_sink(&dag, c, u32::MAX);
            let worst = best.iter().flatten().copied().max().unwrap_or(0);
            if worst >= max_units {
                return Err(cost::CostError::TooCostly {
                    target: target.name.clone(),
                    component,
                    cycles: (worst as f64 / cost::UNITS_PER_CYCLE) as u64,
                    max: (max_units as f64 / cost::UNITS_PER_CYCLE) as u64,
                }
                .into());
            }
        }
        let model = crate::consts::ConstModel::from_facts(&program, &dag, &facts);
        drop(facts);
        // The split only where it fits beside what is kept (it is an optimisation: without it
        // the search enumerates the graph itself).
        let kept = graph.memory_bytes() + 2 * dag.memory_bytes();
        let max_split = (dag.n * SPLIT_GROWTH + 1024)
            .min(SPLIT_MAX_NODES)
            .min(budget.saturating_sub(kept) / SPLIT_NODE_BYTES);
        let search_dag =
            crate::consts::split(&dag, &model, max_split).unwrap_or_else(|| dag.clone());
        Ok(Analysis {
            program,
            graph,
            dag,
            target,
            search_dag,
            memory_budget_bytes: budget,
        })
    }

    /// Bytes the analysis keeps: the graph, its costed form and the graph the search
    /// enumerates (the program, as small as its object, is left out).
    pub fn memory_bytes(&self) -> usize {
        self.graph.memory_bytes() + self.dag.memory_bytes() + self.search_dag.memory_bytes()
    }

    /// Instructions (program indices) along a path of edges of `dag`.
    pub fn path_insns(&self, dag: &Dag, path: &[u32]) -> Vec<u32> {
        path.iter().map(|&e| dag.pc[e as usize]).collect()
    }

    /// The source line of instruction `pc`, unless it has none or line 0 (code the compiler
    /// generated, which belongs to no line).
    fn source_line(&self, pc: usize) -> Option<&load::SrcLine> {
        self.program.line(pc).filter(|l| l.line != 0)
    }

    /// Distinct source lines along a path of edges of `dag`, in order of first appearance.
    pub fn path_lines(&self, dag: &Dag, path: &[u32]) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for pc in self.path_insns(dag, path) {
            if let Some(l) = self.source_line(pc as usize) {
                let s = l.short();
                if seen.insert(s.clone()) {
                    out.push(s);
                }
            }
        }
        out
    }

    /// A path's cost by instruction class (`alu`, `jump`, `load`, `store`, `call bpf_…`, …), by
    /// class name: instructions and costs in cycles. The classes' costs add up to the path's.
    pub fn cost_by_class(&self, dag: &Dag, path: &[u32]) -> BTreeMap<String, ClassCost> {
        let mut classes: BTreeMap<String, (u64, [u64; NC])> = BTreeMap::new();
        for &e in path {
            let pc = dag.pc[e as usize] as usize;
            let class = match self.program.code.get(pc).and_then(|i| i.as_ref()) {
                Some(i) => crate::cost::insn_class(i),
                None => "exit".to_string(), // the edge to the virtual sink
            };
            let c = classes.entry(class).or_insert((0, [0; NC]));
            c.0 += 1;
            for (k, x) in c.1.iter_mut().enumerate() {
                *x += dag.cost[e as usize][k];
            }
        }
        classes
            .into_iter()
            .map(|(c, (insns, cost))| {
                let Cost { cores, dram } = Cost::of(&cost);
                (c, ClassCost { cores, dram, insns })
            })
            .collect()
    }

    /// A path's cost by source line, in the order the path first reaches each line, every
    /// instruction at its own cost on the path (its edge's), so that the lines add up to the
    /// path's cost. Instructions without a source line (an object built without `-g`, or code
    /// the compiler gives line 0) are grouped in runs of consecutive instructions, `insns A-B`
    /// (a run ends where the path jumps); a run the path takes again is the same entry.
    pub fn cost_by_line(&self, dag: &Dag, path: &[u32]) -> Vec<LineCost> {
        let mut rows: Vec<(LineCost, [u64; NC])> = Vec::new();
        let mut by_line: std::collections::HashMap<String, usize> =
            std::collections::HashMap::new();
        // The run without a source line the previous instruction extended: (row, first pc, last pc).
        let mut run: Option<(usize, u32, u32)> = None;
        for &e in path {
            let pc = dag.pc[e as usize];
            let insn = self.program.code.get(pc as usize).and_then(|i| i.as_ref());
            let row = match self.source_line(pc as usize) {
                Some(l) => {
                    run = None;
                    let key = l.short();
                    *by_line.entry(key.clone()).or_insert_with(|| {
                        rows.push((LineCost::new(key, true, l.text.clone()), [0; NC]));
                        rows.len() - 1
                    })
                }
                None => match run {
                    // The next instruction (a 16-byte ld_imm64 takes two slots): the same run.
                    Some((r, first, last)) if pc > last && pc <= last + 2 => {
                        run = Some((r, first, pc));
                        rows[r].0.line = format!("insns {first}-{pc}");
                        r
                    }
                    _ => {
                        rows.push((
                            LineCost::new(format!("insns {pc}-{pc}"), false, String::new()),
                            [0; NC],
                        ));
                        run = Some((rows.len() - 1, pc, pc));
                        rows.len() - 1
                    }
                },
            };
            let (line, cost) = &mut rows[row];
            line.insns += 1;
            for (k, x) in cost.iter_mut().enumerate() {
                *x += dag.cost[e as usize][k];
            }
            if let Some(i @ (crate::insn::Insn::Call { .. } | crate::insn::Insn::Kfunc { .. })) =
                insn
            {
                *line.helpers.entry(crate::cost::insn_class(i)).or_insert(0) += 1;
            }
        }
        // A run the path takes again (an unrolled loop's) is one entry, where it first came.
        let mut out: Vec<(LineCost, [u64; NC])> = Vec::with_capacity(rows.len());
        let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for (line, cost) in rows {
            match at.get(&line.line) {
                Some(&k) => {
                    let (l, c) = &mut out[k];
                    l.insns += line.insns;
                    for (x, y) in c.iter_mut().zip(cost) {
                        *x += y;
                    }
                    for (h, n) in line.helpers {
                        *l.helpers.entry(h).or_insert(0) += n;
                    }
                }
                None => {
                    at.insert(line.line.clone(), out.len());
                    out.push((line, cost));
                }
            }
        }
        // Nanoseconds: cycles at the clock each resource's cycles are counted in.
        let core_ns_per_cycle = 1e3 / self.target.cores.clock_mhz;
        let dram_ns_per_cycle = self.target.dram.as_ref().map_or(0.0, |d| 1e3 / d.clock_mhz);
        out.into_iter()
            .map(|(mut line, cost)| {
                let Cost { cores, dram } = Cost::of(&cost);
                (line.cores, line.dram) = (cores, dram);
                (line.cores_ns, line.dram_ns) =
                    (cores * core_ns_per_cycle, dram * dram_ns_per_cycle);
                line
            })
            .collect()
    }

    /// The summary with the naive bound as the guarantee (`status = "naive-only"`), as JSON
    /// with sorted keys ([`Analysis::summary`]).
    pub fn naive_summary(&self) -> Value {
        self.summary().to_value()
    }

    /// The summary with the naive bound as the guarantee (`status = "naive-only"`, or
    /// `unbounded` with null rates when a tail call may run programs nobody declared).
    pub fn summary(&self) -> Summary {
        let t = &self.target;
        let n = paths::naive(&self.dag, t);
        let classes = paths::mps_classes(&self.dag, t).len();
        let mps = n
            .path
            .iter()
            .map(|&e| self.dag.need[e as usize])
            .max()
            .unwrap_or(0)
            .max(t.limits.min_packet_bytes);
        let maps = self
            .program
            .maps
            .iter()
            .map(|m| {
                (
                    m.name.clone(),
                    MapSummary {
                        entries: BTreeMap::new(),
                        key_size: m.key_size,
                        max_entries: m.max_entries,
                        map_type: m.type_name(),
                        value_size: m.value_size,
                    },
                )
            })
            .collect();
        let unsized_maps = self.program.unsized_maps();
        let loops = self
            .graph
            .loops
            .iter()
            .map(|l| LoopSummary {
                insn: l.header_pc,
                line: self.program.line(l.header_pc as usize).map(|s| s.short()),
                bound: l.bound,
                evident: l.evident,
                summary: l.summary,
            })
            .collect();
        let mut warnings: Vec<String> = unsized_maps
            .iter()
            .map(|m| {
                format!(
            "map '{m}' declares max_entries 0 (its loader sets the size before loading): analysed \
             for every size from 1 on; give --map-size {m}=N for the size it will have")
            })
            .collect();
        // Tail calls (docs/xdp.md, "Tail calls"): what every prog array holds; through one
        // whose contents nothing declares, any program may run: no rate is guaranteed.
        let unbounded = self.program.unbounded_prog_arrays();
        let prog_arrays = self
            .program
            .prog_arrays
            .iter()
            .map(|(&m, a)| {
                let v = match a {
                    load::ProgArray::Known(slots) => ProgArraySlots::Known(
                        slots
                            .iter()
                            .map(|(k, &t)| {
                                let t = &self.program.tail_targets[t];
                                // A program of another object: `OBJ.o:section/name`.
                                let obj = t.object.rsplit('/').next().unwrap_or_default();
                                let at = if obj.is_empty() {
                                    String::new()
                                } else {
                                    format!("{obj}:")
                                };
                                (k.to_string(), format!("{at}{}/{}", t.section, t.name))
                            })
                            .collect(),
                    ),
                    load::ProgArray::Unknown => ProgArraySlots::Unknown,
                };
                (self.program.maps[m as usize].name.clone(), v)
            })
            .collect();
        if !unbounded.is_empty() {
            warnings.push(format!(
                "unbounded: the program tail-calls through {} whose contents the object does not \
                 declare (user space may put any program there); declare them (.values) or give \
                 what the array holds when it runs: --tail-call MAP=INDEX:PROGRAM[,INDEX:PROGRAM...] \
                 (PROGRAM: a program of this object, or OBJ.o[:PROGRAM] of another), or \
                 --tail-call MAP=none (the array is empty: the program is the last of its chain)",
                unbounded
                    .iter()
                    .map(|m| format!("prog array '{m}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        // What the hardware's own offload would refuse of what the analysis priced (`nfp`: the
        // kernel's NFP offload; docs/xdp.md, "What the NFP offload loads").
        let offload = t.offload.as_ref().map(|o| {
            let refused = o.refusals(&self.program);
            if !refused.is_empty() {
                warnings.push(format!(
                    "the kernel's offload for {} would not load this program: {}; the guarantee \
                     prices what it refuses with this target's estimates, for firmware that would run it",
                    t.name,
                    refused.join("; ")
                ));
            }
            OffloadCheck {
                loads: refused.is_empty(),
                refused,
            }
        });
        // No number when unbounded: the rate depends on programs the analysis cannot see.
        let bounded = unbounded.is_empty();
        let rate = |x: f64| bounded.then_some(x);
        Summary {
            object: ObjectInfo {
                section: self.program.section.clone(),
                program: self.program.name.clone(),
                insns: self.program.code.iter().filter(|i| i.is_some()).count(),
                btf: self.program.core_btf.clone(),
            },
            target: t.name.clone(),
            graph: GraphSummary {
                nodes: self.dag.n,
                edges: self.dag.n_edges(),
                split_nodes: self.search_dag.n,
                paths: self.graph.path_count().to_string(),
                loops,
            },
            naive: Naive {
                pps: rate(n.pps),
                bps: rate(n.bps),
                bottleneck: bounded.then_some(n.bottleneck),
                min_packet_bytes: bounded.then_some(n.bps_packet_bytes),
                mps_classes: classes,
                mps_groups: paths::naive_groups(&self.dag, classes),
            },
            guarantee: Guarantee {
                pps: rate(n.pps),
                bps: rate(n.bps),
                bottleneck: bounded.then_some(n.bottleneck),
                min_packet_bytes: bounded.then_some(n.bps_packet_bytes),
                status: if bounded { "naive-only" } else { "unbounded" },
            },
            path: PathSummary {
                insns: self.path_insns(&self.dag, &n.path),
                source_lines: self.path_lines(&self.dag, &n.path),
                cost: Cost::of(&paths::path_cost(&self.dag, &n.path)),
                cost_by_class: self.cost_by_class(&self.dag, &n.path),
                lines: self.cost_by_line(&self.dag, &n.path),
                min_packet_bytes: mps,
                feasible: None,
                xdp_action: None,
                retval: None,
            },
            example_packet_hex: None,
            maps,
            unsized_maps,
            prog_arrays,
            unbounded,
            offload,
            warnings,
            paths_enumerated: 0,
            paths_unsat: 0,
        }
    }
}

/// What the search has next.
pub enum Next {
    /// A path to check: its rate key and its query.
    Query(f64, Box<crate::symex::Query>),
    /// Every path has been handed out.
    Exhausted,
    /// The deadline passed before the next query was ready.
    Timeout,
    /// The enumeration's state reached its memory budget.
    OutOfMemory,
}

/// A length lemma as a prefix: every path through `prefix` needs `len` bytes; refuted so far
/// in the MPS classes up to `applied` bytes (`u32::MAX`: in every class).
#[derive(Debug, Clone)]
struct SizeLemma {
    prefix: Vec<u32>,
    len: u32,
    applied: u32,
}

/// The ordered search for the slowest satisfiable path (paper §5): paths come from the merger
/// slowest first, each is turned into an SMT query, and [`crate::ssp::run`] (which runs the solver)
/// answers. An unsat core refutes the path's shortest infeasible prefix, in every stream.
pub struct Search {
    /// The analysis it searches.
    pub a: Analysis,
    /// Hands out paths slowest first, one stream per cost component and MPS class.
    pub merger: crate::paths::Merger,
    /// Rank paths by bit rate (with each path's minimum packet size) rather than packet rate.
    pub bit_rate: bool,
    /// The path being checked: what the merger said of it and its edges.
    current: Option<(crate::paths::Found, Vec<u32>)>,
    /// Branch assertions of the current path: (position, condition text).
    current_asserts: Vec<(usize, String)>,
    /// Refuted sets of conditions (unsat cores, as texts): a path that asserts all of one
    /// is infeasible without asking the solver. `conflict_size[i]` and, per text, the sets
    /// that contain it.
    conflict_size: Vec<usize>,
    conflict_index: std::collections::HashMap<String, Vec<u32>>,
    /// Paths refuted by a known conflict, without a solver call.
    pub conflict_skipped: u64,
    /// Packet-length lemmas, from unsat cores of a length bound: a path that asserts every
    /// condition of lemma i needs a packet of at least `lemma_len[i]` bytes. `lemma_size[i]`,
    /// and per text the lemmas that contain it (as for conflicts).
    lemma_size: Vec<usize>,
    lemma_len: Vec<u32>,
    lemma_index: std::collections::HashMap<String, Vec<u32>>,
    /// What the lemmas say of the current path (0: nothing), and where on it the lemma's
    /// conditions are complete.
    current_min_len: u32,
    current_min_len_at: Option<usize>,
    /// The same lemmas as prefixes of the graph (bit-rate mode): every path through
    /// `prefix` needs a packet of at least `len` bytes. Each is refuted in the streams of
    /// the MPS classes it rules out ([`Search::apply_size_lemmas`]); `applied` is the largest
    /// class so far (0: none).
    size_lemmas: Vec<SizeLemma>,
    /// The slowest satisfiable path's rate found so far (bits/s; bit-rate mode), which the
    /// caller tells ([`Search::found`]).
    found: Option<f64>,
    /// The merger's floor below which no size lemma rules out a further class.
    next_lemma_floor: f64,
    /// The merger's MPS classes, sorted, each once.
    classes: Vec<u32>,
    /// Per node of the search graph and cost component, the costliest way to the sink (None:
    /// no way), for the bound on what a size lemma's paths cost (computed when the first
    /// lemma comes).
    suffix: Option<[Vec<Option<u64>>; NC]>,
    /// Paths passed without a solver call because no packet they accept could make them
    /// slower than the slowest satisfiable path already found.
    pub length_skipped: u64,
    /// The search stops when its state (and the query it builds) would take more than this
    /// (bytes, estimated).
    pub memory_budget: usize,
    /// Paths taken from the merger.
    pub enumerated: u64,
    /// Paths whose query was handed out for the solver.
    pub queried: u64,
    /// Paths the solver found infeasible.
    pub unsat: u64,
}

impl Search {
    /// A search with no memory budget.
    pub fn new(a: Analysis, bit_rate: bool) -> Search {
        Search::with_budget(a, bit_rate, usize::MAX)
    }

    /// A search within what the analysis's budget ([`Options::memory_budget_bytes`]) leaves
    /// once the analysis is built: the budget less [`Analysis::memory_bytes`].
    pub fn with_total_budget(a: Analysis, bit_rate: bool) -> Search {
        let budget = a.memory_budget_bytes.saturating_sub(a.memory_bytes());
        Search::with_budget(a, bit_rate, budget)
    }

    /// A search whose state may take `budget` bytes ([`Search::memory_budget`]). The
    /// enumeration's tables are sized before they are built: when they alone would take more
    /// (a stream per MPS class, each with tables for every kept node: in bit-rate mode a long
    /// unrolled loop makes both grow with its bound), they are not built, and the search stops
    /// at its first query as it does when its state reaches the budget later.
    pub fn with_budget(a: Analysis, bit_rate: bool, budget: usize) -> Search {
        let merger = crate::paths::Merger::with_budget(&a.search_dag, &a.target, bit_rate, budget);
        let mut classes = merger.class.clone();
        classes.sort_unstable();
        classes.dedup();
        Search {
            a,
            merger,
            bit_rate,
            current: None,
            current_asserts: Vec::new(),
            conflict_size: Vec::new(),
            conflict_index: Default::default(),
            conflict_skipped: 0,
            lemma_size: Vec::new(),
            lemma_len: Vec::new(),
            lemma_index: Default::default(),
            current_min_len: 0,
            current_min_len_at: None,
            size_lemmas: Vec::new(),
            found: None,
            next_lemma_floor: f64::INFINITY,
            classes,
            suffix: None,
            length_skipped: 0,
            memory_budget: budget,
            enumerated: 0,
            queried: 0,
            unsat: 0,
        }
    }

    /// The next path to check and its query, unless no path is left or `deadline` passes
    /// first (paths skipped without a query, by a refuted prefix or a known conflict, can be
    /// many: the deadline is checked between them).
    pub fn next_query(&mut self, deadline: Option<std::time::Instant>) -> Next {
        if !self.merger.built {
            return Next::OutOfMemory;
        }
        let mut tries = 0u32;
        loop {
            tries += 1;
            if tries.is_multiple_of(16) {
                if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                    return Next::Timeout;
                }
                if self.memory_bytes() > self.memory_budget {
                    return Next::OutOfMemory;
                }
            }
            if self.merger.floor(&self.a.target) >= self.next_lemma_floor {
                self.apply_size_lemmas(0);
            }
            let Some(f) = self.merger.next(&self.a.target) else {
                return Next::Exhausted;
            };
            self.enumerated += 1;
            // Paths under refuted prefixes never come out of the merger.
            let edges = self.merger.edges(&f);
            let steps: Vec<(u32, crate::cfg::EdgeKind)> = edges
                .iter()
                .map(|&e| {
                    let d = &self.a.search_dag;
                    (d.pc[e as usize], d.kind[e as usize])
                })
                .collect();
            // The query is built and held while the solver checks it: it must fit too (a path
            // through a long unrolled loop gives one of megabytes). When it does not, the path
            // stays current, so the floor still counts it.
            let held = self.memory_bytes();
            if held + QUERY_COPIES * QUERY_MIN_BYTES_PER_STEP * steps.len() > self.memory_budget {
                self.current = Some((f, edges));
                return Next::OutOfMemory;
            }
            let t = &self.a.target.limits;
            // A known conflict, told the assertions as the path's query is built: refuted
            // without the solver, and without building the rest of the query.
            let mut conflict = ConflictScan::default();
            let q = match crate::symex::query_until(
                &self.a.program,
                &steps,
                t.min_packet_bytes as u64,
                t.mtu_bytes as u64 + 14,
                |at, text| conflict.complete(self, at, text),
            ) {
                Ok(q) => q,
                Err(pos) => {
                    self.merger.refute(&self.a.target, &edges[..=pos]);
                    self.conflict_skipped += 1;
                    continue;
                }
            };
            if held + QUERY_COPIES * q.smt.len() > self.memory_budget {
                self.current = Some((f, edges));
                return Next::OutOfMemory;
            }
            let key = f.key;
            self.current = Some((f, edges));
            (self.current_min_len, self.current_min_len_at) = self.lemma_min_len(&q.asserts);
            self.current_asserts = q.asserts.clone();
            self.queried += 1;
            return Next::Query(key, Box::new(q));
        }
    }

    /// Enumerate up to `limit` paths slowest first, without symbolic execution or a solver (for
    /// benchmarks of the enumeration alone); stops early when no path is left or `deadline`
    /// passes. Returns the number of paths. A path is handed out as the merger's handle (its
    /// stream, place, cost and rate), as `next_query` gets it before deciding whether to build
    /// its edge list; `edges` also builds every path's list, as a path sent to the solver needs.
    pub fn enumerate(
        &mut self,
        limit: u64,
        deadline: Option<std::time::Instant>,
        edges: bool,
    ) -> u64 {
        let mut n = 0u64;
        while n < limit {
            if n.is_multiple_of(4096) && deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                break;
            }
            let Some(f) = self.merger.next(&self.a.target) else {
                break;
            };
            if edges {
                std::hint::black_box(self.merger.edges(&f));
            } else {
                std::hint::black_box(&f);
            }
            n += 1;
        }
        self.enumerated += n;
        n
    }

    /// (paths handed out, refuted by the solver, skipped without a query — under a refuted
    /// prefix, by a known conflict, or by a length lemma —, candidate prefixes the enumeration
    /// refused as dead).
    pub fn counts(&self) -> (u64, u64, u64, u64) {
        let streams = &self.merger.streams;
        let dead_paths: u64 = streams.iter().map(|x| x.dead_paths).sum();
        (
            self.enumerated,
            self.unsat,
            dead_paths + self.conflict_skipped + self.length_skipped,
            streams.iter().map(|x| x.dead_skipped).sum(),
        )
    }

    /// What the search's state takes, estimated from its entries: the enumeration's tables
    /// (what they would take, if they did not fit the budget), prefixes and candidates,
    /// refuted prefixes and known conflicts.
    pub fn memory_bytes(&self) -> usize {
        let (prefixes, candidates) = self.merger.streams.iter().fold((0, 0), |(a, b), x| {
            let (l, c) = x.size();
            (a + l, b + c)
        });
        self.merger.skel.memory_bytes()
            + self.merger.tables
            + prefixes * std::mem::size_of::<crate::paths::Entry>()
            + candidates * 16
            + self
                .merger
                .streams
                .iter()
                .map(|x| x.work_bytes())
                .sum::<usize>()
            + self.merger.refuted.size() * 4
            + (self.conflict_size.len() + self.lemma_size.len()) * 64
            + self
                .size_lemmas
                .iter()
                .map(|l| l.prefix.len() * 4 + 48)
                .sum::<usize>()
            + self.suffix.as_ref().map_or(0, |s| {
                s.iter()
                    .map(|v| v.capacity() * std::mem::size_of::<Option<u64>>())
                    .sum()
            })
    }

    /// The largest packet length the lemmas require of a path with these assertions (0: none),
    /// and the position on the path where the conditions of the lemma that requires it are
    /// complete (None: a lemma without conditions, or none).
    fn lemma_min_len(&self, asserts: &[(usize, String)]) -> (u32, Option<usize>) {
        if self.lemma_size.is_empty() {
            return (0, None);
        }
        let mut count: std::collections::HashMap<u32, usize> = Default::default();
        let mut seen: std::collections::HashSet<&str> = Default::default();
        let (mut len, mut at) = (0, None);
        for (id, &n) in self.lemma_size.iter().enumerate() {
            if n == 0 {
                len = len.max(self.lemma_len[id]);
            }
        }
        for (k, text) in asserts {
            if !seen.insert(text.as_str()) {
                continue;
            }
            for &id in self.lemma_index.get(text).into_iter().flatten() {
                let c = count.entry(id).or_insert(0);
                *c += 1;
                if *c == self.lemma_size[id as usize] && self.lemma_len[id as usize] > len {
                    len = self.lemma_len[id as usize];
                    at = Some(*k);
                }
            }
        }
        (len, at)
    }

    /// The packet length (bytes) the length lemmas require of the current path (0: none); it
    /// never exceeds the path's minimum.
    pub fn current_min_len(&self) -> u32 {
        self.current.as_ref().map_or(0, |_| self.current_min_len)
    }

    /// The current path's packet rate.
    pub fn current_pps(&self) -> Option<f64> {
        self.current.as_ref().map(|c| c.0.rate.pps)
    }

    /// The current path is feasible and done with: the search goes on past it.
    pub fn pass(&mut self) {
        self.current = None;
    }

    /// The current path is passed without a solver call: no packet it accepts can make it slower
    /// than the slowest satisfiable path already found (the caller knows that one).
    pub fn pass_longer(&mut self) {
        let Some((_, walk)) = self.current.take() else {
            return;
        };
        self.length_skipped += 1;
        self.queried -= 1; // (its query went to no solver)
                           // The lemma's conditions hold on every path through the same prefix: a size lemma
                           // on the graph, which can rule out the whole family at once.
        if let Some(at) = self.current_min_len_at.take() {
            self.add_size_lemma(
                walk[..=at.min(walk.len() - 1)].to_vec(),
                self.current_min_len,
            );
        }
    }

    /// Every path through `prefix` needs `len` bytes: a size lemma, refuted at once in the
    /// classes it already rules out.
    fn add_size_lemma(&mut self, prefix: Vec<u32>, len: u32) {
        self.size_lemmas.push(SizeLemma {
            prefix,
            len,
            applied: 0,
        });
        self.apply_size_lemmas(self.size_lemmas.len() - 1);
    }

    /// The current path's query with the packet no longer than `min_len - 1` bytes is unsat and
    /// `core` names the assertions that needed: any path that asserts the same conditions needs
    /// at least `min_len` bytes. Kept as a lemma (the path stays current).
    pub fn longer(&mut self, core: &[String], min_len: u32) {
        if self.current.is_none() {
            return;
        }
        let positions: std::collections::HashSet<usize> = core
            .iter()
            .filter_map(|n| n.strip_prefix('a').and_then(|k| k.parse::<usize>().ok()))
            .collect();
        let mut texts: Vec<String> = self
            .current_asserts
            .iter()
            .filter(|(k, _)| positions.contains(k))
            .map(|(_, t)| t.clone())
            .collect();
        texts.sort();
        texts.dedup();
        let id = self.lemma_size.len() as u32;
        self.lemma_size.push(texts.len());
        self.lemma_len.push(min_len);
        for t in texts {
            self.lemma_index.entry(t).or_default().push(id);
        }
        self.current_min_len = self.current_min_len.max(min_len);
        // The conditions up to the last one the core names are those of every path through
        // the same prefix (symbolic execution of the same edges): all of them need as much.
        if let (Some(last), Some((_, walk))) = (positions.iter().max(), self.current.as_ref()) {
            let prefix = walk[..=(*last).min(walk.len() - 1)].to_vec();
            self.add_size_lemma(prefix, min_len);
        }
    }

    /// The slowest satisfiable path found so far has this rate (bits/s): size lemmas rule out
    /// paths against it from now on.
    pub fn found(&mut self, bps: f64) {
        if self.found.is_none_or(|f| bps < f) {
            self.found = Some(bps);
            self.apply_size_lemmas(0);
        }
    }

    /// Refute each size lemma's prefix in the streams of every MPS class it now rules out.
    ///
    /// A path not handed out yet, of class `c` (its static minimum packet), is behind its own
    /// stream's head, so its rate at `c` bytes is at least the merger's floor: its packet rate
    /// is at least `floor / (8 c)`. Through a lemma's prefix its packets are at least `len`
    /// bytes long, so its bit rate is at least `floor · len / c`; when that is at least the
    /// slowest satisfiable rate found, it cannot be slower than that path, and the classes
    /// `c ≤ floor · len / found` can drop the prefix's paths. The floor only grows and the
    /// rate found only falls, so a class once ruled out stays so.
    ///
    /// `from`: only the lemmas from this index on are new; the others are looked at again only
    /// when the rate found or the floor has moved (`from` 0). A lemma that rules out its
    /// prefix in every class is done with and dropped.
    fn apply_size_lemmas(&mut self, from: usize) {
        if from == 0 {
            self.next_lemma_floor = f64::INFINITY;
        }
        let Some(found) = self.found.filter(|f| *f > 0.0) else {
            return;
        };
        if !self.bit_rate || !self.merger.built {
            return;
        }
        let t = &self.a.target;
        let dag = &self.a.search_dag;
        let suffix = self.suffix.get_or_insert_with(|| {
            std::array::from_fn(|c| crate::paths::longest_to_sink(dag, c, u32::MAX).0)
        });
        let floor = self.merger.floor(t);
        let classes = &self.classes;
        let from = from.min(self.size_lemmas.len());
        for l in &mut self.size_lemmas[from..] {
            let len = f64::from(l.len);
            // Every path through the prefix costs at most the prefix and the costliest way on
            // to the sink: at that packet rate and `len` bytes it is no slower than the path
            // found, in whatever class it is.
            let end = dag.to[*l.prefix.last().expect("a lemma's prefix has an edge") as usize];
            let mut most = crate::paths::path_cost(dag, &l.prefix);
            let reach = (0..NC).all(|c| match suffix[c][end as usize] {
                Some(x) => {
                    most[c] += x;
                    true
                }
                None => false,
            });
            if reach && crate::paths::rate_of(t, &most).pps * 8.0 * len * (1.0 + 1e-12) >= found {
                self.merger.refute(t, &l.prefix);
                l.applied = u32::MAX;
                continue;
            }
            // (A class equal to the quotient is ruled out: its paths are at least as fast as
            // the one found; the tolerance absorbs the rounding of the rates' products.)
            let upto = if floor.is_finite() {
                (floor * len / found * (1.0 + 1e-12))
                    .min(f64::from(u32::MAX - 1))
                    .floor() as u32
            } else {
                u32::MAX - 1
            };
            // The largest class it rules out now, and the next one it may rule out later.
            let covered = classes
                .iter()
                .rev()
                .find(|&&c| c <= upto)
                .copied()
                .unwrap_or(0);
            if covered > l.applied {
                self.merger.refute_up_to(t, &l.prefix, covered);
                l.applied = covered;
            }
            if let Some(&next) = classes.iter().find(|&&c| c > l.applied) {
                self.next_lemma_floor = self.next_lemma_floor.min(f64::from(next) * found / len);
            }
        }
        self.size_lemmas.retain(|l| l.applied != u32::MAX);
    }

    /// The solver found the current path infeasible; `core` names the assertions it needed.
    pub fn refute(&mut self, core: &[String]) {
        let Some((_, walk)) = self.current.take() else {
            return;
        };
        self.unsat += 1;
        let last = core
            .iter()
            .filter_map(|n| n.strip_prefix('a').and_then(|k| k.parse::<usize>().ok()))
            .max()
            .unwrap_or(walk.len() - 1)
            .min(walk.len() - 1);
        self.merger.refute(&self.a.target, &walk[..=last]);
        // Keep the core as a conflict set of condition texts.
        let positions: std::collections::HashSet<usize> = core
            .iter()
            .filter_map(|n| n.strip_prefix('a').and_then(|k| k.parse::<usize>().ok()))
            .collect();
        let mut texts: Vec<String> = self
            .current_asserts
            .iter()
            .filter(|(k, _)| positions.contains(k))
            .map(|(_, t)| t.clone())
            .collect();
        texts.sort();
        texts.dedup();
        if !texts.is_empty() {
            let id = self.conflict_size.len() as u32;
            self.conflict_size.push(texts.len());
            for t in texts {
                self.conflict_index.entry(t).or_default().push(id);
            }
        }
    }

    /// Every path not yet refuted is at least this fast (packets/s, or bits/s).
    pub fn floor(&self) -> f64 {
        if !self.merger.built {
            return 0.0; // no path was enumerated: nothing is known beyond the naive bound
        }
        let pending = self.current.as_ref().map_or(f64::INFINITY, |c| c.0.key);
        pending.min(self.merger.floor(&self.a.target))
    }

    /// The current path, for the summary.
    pub fn current_path(&self) -> Option<PathInfo> {
        let (f, edges) = self.current.as_ref()?;
        let t = &self.a.target;
        let bps = f.rate.pps * 8.0 * f.mps as f64;
        Some(PathInfo {
            bottleneck: f.rate.bottleneck,
            bps,
            cost: Cost::of(&f.cost),
            cost_by_class: self.a.cost_by_class(&self.a.search_dag, edges),
            insns: self.a.path_insns(&self.a.search_dag, edges),
            key: None,
            lines: self.a.cost_by_line(&self.a.search_dag, edges),
            mac_pps: t.limits.mac_pps,
            min_packet_bytes: u64::from(f.mps),
            pps: f.rate.pps,
            retval: None,
            source_lines: self.a.path_lines(&self.a.search_dag, edges),
        })
    }
}

/// A path's assertions, told one by one, against the search's known conflicts (the sets of
/// condition texts unsat cores gave): [`ConflictScan::complete`] says when one is complete.
#[derive(Default)]
struct ConflictScan {
    /// Per conflict, its texts seen so far.
    count: std::collections::HashMap<u32, usize>,
    /// The texts seen so far (a text repeated on the path counts once).
    seen: std::collections::HashSet<String>,
}

impl ConflictScan {
    /// Whether assertion `text` (at position `_at`) completes a known conflict of `search`.
    fn complete(&mut self, search: &Search, _at: usize, text: &str) -> bool {
        let Some(ids) = search.conflict_index.get(text) else {
            return false;
        };
        if !self.seen.insert(text.to_owned()) {
            return false;
        }
        ids.iter().any(|&id| {
            let c = self.count.entry(id).or_insert(0);
            *c += 1;
            *c == search.conflict_size[id as usize]
        })
    }
}

#[cfg(test)]
mod tests {
    //! Programs as long as an input can make them (issue 32 §3): a slowest path of 100,000
    //! instructions and a graph of 1,000,000 edges go through every stage — the graph, the
    //! abstract values, the costs, the split by constants, the naive bound, the enumeration and
    //! the query — on a test thread's 2 MB stack: nothing recurses as deep as they are long.
    use super::*;
    use crate::testasm::*;

    /// After a 14-byte bounds check, `n` diamonds `if pkt[0] > 7 goto +2; r0 += 1; r0 += 1`,
    /// then XDP_PASS. Every join is a kept node of the enumeration, a chain `n` long; on `nfp`
    /// the slowest path (the byte at most 7) runs every add (a taken jump costs 6 cycles, not
    /// taken and two adds 7): 3 n + 9 instructions.
    fn diamonds(n: usize) -> Program {
        let mut s = vec![
            ldx(W, 2, 1, 0), // data
            ldx(W, 3, 1, 4), // data_end
            movr(4, 2),
            add(4, 14),
            i(0xbd, 4, 3, 2, 0), // if data + 14 <= data_end goto +2
            mov(0, 1),
            exit(),
            ldx(B, 5, 2, 0),
            mov(0, 0),
        ];
        for _ in 0..n {
            s.extend([i(0x25, 5, 0, 2, 7), add(0, 1), add(0, 1)]); // if r5 > 7 goto +2
        }
        s.extend([mov(0, 2), exit()]);
        prog(&s, Vec::new())
    }

    fn nfp() -> Target {
        Target::builtin("nfp").unwrap().unwrap()
    }

    #[test]
    fn a_path_without_line_information_is_costed_by_instruction_runs() {
        // No BTF: every instruction is in a run; the path jumps (the bounds check's taken
        // branch, 4 -> 7), so there are two runs, and they add up to the path's cost.
        let a = Analysis::of_program(diamonds(3), nfp(), &Options::default()).unwrap();
        let s = a.summary();
        let lines = &s.path.lines;
        let names: Vec<&str> = lines.iter().map(|l| l.line.as_str()).collect();
        assert_eq!(names, ["insns 0-4", "insns 7-19"], "{:?}", s.path.insns);
        assert!(lines
            .iter()
            .all(|l| !l.source && l.text.is_empty() && l.helpers.is_empty()));
        assert_eq!(
            lines.iter().map(|l| l.insns).sum::<u64>(),
            s.path.insns.len() as u64
        );
        let cores: f64 = lines.iter().map(|l| l.cores).sum();
        assert!(
            (cores - s.path.cost.cores).abs() < 1e-6,
            "{cores} vs {}",
            s.path.cost.cores
        );
        // Nanoseconds at the NFP's 800 MHz: 1.25 ns a cycle.
        for l in lines {
            assert!((l.cores_ns - l.cores * 1.25).abs() < 1e-9, "{l:?}");
            assert!((l.dram_ns - l.dram * 1.25).abs() < 1e-9, "{l:?}");
        }
        assert!(s.path.source_lines.is_empty());
    }

    #[test]
    fn a_slowest_path_of_100000_instructions_is_analysed_on_a_small_stack() {
        let a = Analysis::of_program(diamonds(34_000), nfp(), &Options::default()).unwrap();
        let program = a.program.clone();
        let mut s = Search::new(a, false);
        let Next::Query(_, q) = s.next_query(None) else {
            panic!("no query");
        };
        let path = s.current_path().unwrap();
        assert_eq!(path.insns.len(), 3 * 34_000 + 9);
        // The query is satisfiable (a first byte of at most 7 takes it), and the interpreter
        // runs such a packet along the path.
        assert_eq!(z3(&q.smt), "sat");
        let mut pkt = vec![0u8; 60];
        pkt[0] = 3;
        let mut maps = crate::interp::MapState::new(&program);
        let out = crate::interp::run(&program, &pkt, &mut maps, &Default::default()).unwrap();
        assert_eq!(out.trace, path.insns);
    }

    #[test]
    fn a_graph_of_1000000_edges_is_analysed_on_a_small_stack() {
        // Within 512 MB, which leaves no room for the split by constants (it would find
        // nothing to split, after building 2^19 nodes). The enumeration's first path, not its
        // query (the test above builds one 100,000 instructions long).
        let opts = Options {
            memory_budget_bytes: Some(512 << 20),
            ..Options::default()
        };
        let a = Analysis::of_program(diamonds(250_000), nfp(), &opts).unwrap();
        assert!(a.dag.n_edges() >= 1_000_000, "{}", a.dag.n_edges());
        let naive = a.summary().naive.pps.unwrap();
        let mut m = paths::Merger::new(&a.search_dag, &a.target, false);
        let f = m.next(&a.target).unwrap();
        assert_eq!(f.rate.pps, naive, "the first path is the naive bound's");
        assert!(m.edges(&f).len() >= 750_000);
    }
}
