//! The differential soundness check between the interpreter and the symbolic executor (issue
//! 17, §0): a packet that really takes a path must make that path's query satisfiable.
//!
//! For one (packet, map contents) case, [`Differential::case`] runs the packet through the
//! program concretely ([`crate::interp`]), follows the instructions it executed through the
//! graph the search enumerates (the graph split by constants, [`Analysis::search_dag`]: exactly
//! the paths the search can hand to the solver) and builds that path's query as the search
//! builds it ([`crate::symex::query`]), with the concrete case asserted besides: the received
//! packet's length and bytes, and every modelled map's initial contents and presence bits
//! ([`witness`]). The caller (`tests/test_xdp_differential.py`, which owns the solver) checks
//! it. Unsat is a soundness bug: a real packet takes a path the analysis would refute. A trace
//! that no path of the graph follows ([`CaseOutcome::NoPath`]) is one too, of another kind (the
//! graph left out a feasible edge: the abstract interpretation decided a branch wrongly, or the
//! split by constants did); it is told apart by matching the graph before the split too.
//!
//! The query's packet-length range is the target's widened to take the case's packet (the
//! analysis assumes packets of at least the target's minimum; the check is of the path's
//! modelling, whatever the length). Everything else in the query is what the search asks.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::analysis::Analysis;
use crate::cost::Dag;
use crate::interp::{self, MapError, MapState, RunOptions};
use crate::load::{MapDef, Program};
use crate::summary::ModelledMap;
use crate::symex::{self, Lookup};

/// The instruction that node `u` of `dag` executes (`None` for the sink).
fn node_pc(dag: &Dag, u: u32) -> Option<u32> {
    let r = dag.edges(u);
    (!r.is_empty()).then(|| dag.pc[r.start])
}

/// The paths of `dag` (edge lists, entry to sink) that execute the instructions of `trace` in
/// order, as [`interp::Outcome::trace`] numbers them; at most `limit` (more than one only where
/// a branch's two edges reach the same instruction: a conditional jump by 0, or a branch whose
/// two sides the split by constants keeps apart). `Err(k)`: no path does; the longest prefix of
/// the trace that one follows has `k + 1` instructions (the graph has no way on from
/// `trace[k]` to `trace[k + 1]`, or does not end after it).
pub fn match_trace(dag: &Dag, trace: &[u32], limit: usize) -> Result<Vec<Vec<u32>>, usize> {
    let n = trace.len();
    if n == 0 || dag.n < 2 || node_pc(dag, 0) != Some(trace[0]) {
        return Err(0);
    }
    let sink = dag.sink();
    struct Frame {
        node: u32,
        cursor: usize,
        end: usize,
        found: bool,
    }
    let frame = |u: u32| {
        let r = dag.edges(u);
        Frame {
            node: u,
            cursor: r.start,
            end: r.end,
            found: false,
        }
    };
    let mut out: Vec<Vec<u32>> = Vec::new();
    // (node, trace index) from which no path follows the rest of the trace.
    let mut dead: HashSet<(u32, usize)> = HashSet::new();
    let mut frames = vec![frame(0)];
    let mut path: Vec<u32> = Vec::new();
    let mut best = 0;
    while !frames.is_empty() {
        let i = frames.len() - 1;
        best = best.max(i);
        let top = frames.last_mut().expect("a frame");
        if top.cursor < top.end {
            let e = top.cursor;
            top.cursor += 1;
            let v = dag.to[e];
            if i + 1 == n {
                if v == sink {
                    top.found = true;
                    let mut p = path.clone();
                    p.push(e as u32);
                    out.push(p);
                    if out.len() >= limit {
                        return Ok(out);
                    }
                }
                continue;
            }
            if v == sink || node_pc(dag, v) != Some(trace[i + 1]) || dead.contains(&(v, i + 1)) {
                continue;
            }
            path.push(e as u32);
            frames.push(frame(v));
        } else {
            let done = frames.pop().expect("a frame");
            if !done.found {
                dead.insert((done.node, i));
            }
            path.pop();
            if let Some(parent) = frames.last_mut() {
                parent.found |= done.found;
            }
        }
    }
    if out.is_empty() {
        Err(best)
    } else {
        Ok(out)
    }
}

/// The key `bytes_le` as a bit-vector of `bits` bits, as the query reads keys: byte 0 lowest
/// (`(concat b_{n-1} … b_0)`), zero-padded (a key of 0 bytes is read as one).
fn bv(bits: u32, bytes_le: &[u8]) -> String {
    let mut s = String::from("#x");
    for i in (0..bits as usize / 8).rev() {
        let _ = write!(s, "{:02x}", bytes_le.get(i).copied().unwrap_or(0));
    }
    s
}

/// Map types whose presence bits the query reads (every type but the arrays: for those a
/// lookup is null exactly past `max_entries`).
fn uses_presence(d: &MapDef) -> bool {
    !d.is_array()
}

/// The concrete case over the query's inputs ([`witness`]).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Witness {
    /// (name, assertion): `w_len` (the received length) and `w_pkt<i>` (each received byte).
    pub asserts: Vec<(String, String)>,
    /// (symbol, sort, value): each modelled map's initial arrays, `m<i>_0` (its values: the
    /// entries' bytes, zeros elsewhere) and, for maps other than arrays, `p<i>_0` (exactly the
    /// entries' keys present), as constant arrays with stores. They replace the query's
    /// declarations of those symbols ([`Witness::apply`]): Bitwuzla does not decide
    /// equalities with constant arrays, definitions it does.
    pub defines: Vec<(String, String, String)>,
}

impl Witness {
    /// `smt` (a query) with the witness: the map symbols' declarations replaced by their
    /// definitions, the named assertions appended.
    pub fn apply(&self, smt: &str) -> String {
        let mut out = String::with_capacity(smt.len() + 64 * self.asserts.len());
        let decls: std::collections::HashMap<String, &(String, String, String)> = self
            .defines
            .iter()
            .map(|d| (format!("(declare-const {} {})", d.0, d.1), d))
            .collect();
        for line in smt.lines() {
            match decls.get(line) {
                Some((sym, sort, value)) => {
                    let _ = writeln!(out, "(define-fun {sym} () {sort} {value})");
                }
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        for (name, a) in &self.asserts {
            let _ = writeln!(out, "(assert (! {a} :named {name}))");
        }
        out
    }
}

/// The concrete case (`packet`, the maps' contents before the run) over the query's inputs.
/// The bytes past the packet, the headroom, registers at entry, helper results the query
/// leaves free (time, random numbers) and the context's other fields stay unconstrained, as
/// they are in the query; so do maps the interpreter does not model.
pub fn witness(p: &Program, maps: &MapState, packet: &[u8]) -> Witness {
    let mut w = Witness::default();
    w.asserts.push((
        "w_len".to_string(),
        format!("(= len #x{:016x})", packet.len()),
    ));
    for (i, b) in packet.iter().enumerate() {
        w.asserts.push((
            format!("w_pkt{i}"),
            format!("(= (select pkt0 #x{i:016x}) #x{b:02x})"),
        ));
    }
    for (m, def) in p.maps.iter().enumerate() {
        // Queues, stacks and bloom filters: the symbolic executor's pops and peeks are fresh
        // (any contents), so their entries constrain nothing.
        if !maps.is_modelled(&def.name) || def.is_keyless() {
            continue;
        }
        let Ok(entries) = maps.entries(&def.name) else {
            continue;
        };
        let ks = def.key_size.max(1) * 8;
        if def.max_entries == 0 && crate::symex::sized_by_index(def) {
            // The size the case runs with, for the query's unknown size.
            if let Some(n) = maps.max_entries(m) {
                w.asserts
                    .push((format!("w_msz{m}"), format!("(= msz{m} (_ bv{n} {ks}))")));
            }
        }
        let vsort = format!("(Array (_ BitVec {}) (_ BitVec 8))", ks + 32);
        let psort = format!("(Array (_ BitVec {ks}) Bool)");
        // The stores nest (each around the ones before): their openings first, then the base,
        // then each store's index and byte (built in one pass: wrapping the text store by store
        // copied it once per non-zero byte, quadratic in a 1 MB value's bytes).
        let mut stores = String::new();
        let mut n_stores = 0usize;
        let mut present = format!("((as const {psort}) false)");
        for (key, value) in &entries {
            let k = bv(ks, key);
            for (i, b) in value.iter().enumerate() {
                if *b != 0 {
                    n_stores += 1;
                    stores.push_str(&format!(" (concat {k} (_ bv{i} 32)) #x{b:02x})"));
                }
            }
            present = format!("(store {present} {k} true)");
        }
        let values = format!(
            "{}((as const {vsort}) #x00){stores}",
            "(store ".repeat(n_stores)
        );
        w.defines.push((format!("m{m}_0"), vsort, values));
        if uses_presence(def) {
            w.defines.push((format!("p{m}_0"), psort, present));
        }
    }
    w
}

/// One path the trace takes, as a query with the case asserted.
#[derive(Debug, Clone, Serialize)]
pub struct WitnessQuery {
    /// The path's query (as the search builds it) with the witness ([`Witness::apply`]).
    pub smt: String,
    /// (name, condition, instruction, source line) of every branch assertion of the path
    /// (`a<k>`: the k-th edge).
    pub asserts: Vec<(String, String, u32, Option<String>)>,
    /// The witness (see [`witness`]).
    pub witness: Witness,
    /// The program's return value at the path's end (a term).
    pub ret: String,
    /// The map entries the path looks up (key and initial value as terms).
    pub lookups: Vec<Lookup>,
    /// The path's edges in the search's graph.
    pub edges: usize,
    /// The received packet length the path's bounds checks guarantee, as the graph has it (the
    /// largest `need` of its edges): the search takes it for a lower bound of the path's
    /// packets (its bit rate, and where the solver's search for the shortest packet starts),
    /// so the case's packet must be at least this long. (instruction, source line) of the edge
    /// that needs it.
    pub min_len: u32,
    /// (instruction, source line) of the edge that needs `min_len`.
    pub min_len_at: Option<(u32, Option<String>)>,
}

/// What one case gives.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CaseOutcome {
    /// The interpreter stopped without the program returning (a fault, the instruction limit):
    /// nothing to compare.
    Fault {
        /// Why the interpreter stopped.
        message: String,
    },
    /// No path of the search's graph follows the trace. `graph`: `split` when the graph
    /// before the split by constants has one (the split left it out), `graph` when that has
    /// none either. `matched`: instructions of the trace that a path follows; `at_pc` the last
    /// of them, `next_pc` the one the graph has no way to (None: the trace ends there but the
    /// graph does not). `beyond_loop_bound`: a loop whose bound is the user's `--loop-bound`
    /// ran more often than that (a promise broken, not a bug).
    NoPath {
        /// `split` or `graph`: which graph has no path for the trace.
        graph: &'static str,
        /// Instructions of the trace that a path follows.
        matched: usize,
        /// The last instruction a path follows.
        at_pc: u32,
        /// The instruction the graph has no way to (None: the trace ends there, the graph does not).
        next_pc: Option<u32>,
        /// Source line of `at_pc`.
        line: Option<String>,
        /// A loop bounded by `--loop-bound` ran more often than that.
        beyond_loop_bound: bool,
    },
    /// The paths that follow the trace (usually one), each with its query.
    Paths {
        /// The paths, each with its query and the case asserted.
        paths: Vec<WitnessQuery>,
    },
}

/// A case's result: the interpreter's run and what it maps to.
#[derive(Debug, Clone, Serialize)]
pub struct Case {
    /// r0 at exit (None after a fault).
    pub retval: Option<u64>,
    /// Instructions executed.
    pub trace_len: usize,
    /// What the case gave.
    #[serde(flatten)]
    pub outcome: CaseOutcome,
}

/// An analysis to check cases against.
pub struct Differential {
    /// The analysis whose graphs and queries cases are checked against.
    pub a: Analysis,
}

impl Differential {
    /// Check cases against `a`.
    pub fn new(a: Analysis) -> Differential {
        Differential { a }
    }

    /// The case `packet` with the map entries of `maps_json` (as `nicsim xdp validate` takes
    /// them: [`MapState::from_json`]), at most `max_insns` instructions, at most `max_paths`
    /// paths matched. A map entry that does not fit the program's maps is an error.
    pub fn case(
        &self,
        packet: &[u8],
        maps_json: &str,
        max_insns: u64,
        max_paths: usize,
    ) -> Result<Case, MapError> {
        // Maps declared with max_entries 0 run with the size the JSON gives (the query takes
        // every size; the witness asserts this one).
        let mut sized = self.a.program.clone();
        MapState::size_from_json(&mut sized, maps_json)?;
        let p = &sized;
        let before = MapState::from_json(p, maps_json)?;
        let mut maps = before.clone();
        // The conntrack table is not the program's: the lookup finds a connection for packets
        // of even length and none for the others, so that the cases check both outcomes.
        let opts = RunOptions {
            max_insns,
            ct_found: packet.len().is_multiple_of(2),
            ..RunOptions::default()
        };
        let run = match interp::run(p, packet, &mut maps, &opts) {
            Ok(o) => o,
            Err(f) => {
                return Ok(Case {
                    retval: None,
                    trace_len: 0,
                    outcome: CaseOutcome::Fault {
                        message: f.to_string(),
                    },
                })
            }
        };
        let trace = &run.trace;
        let outcome = match match_trace(&self.a.search_dag, trace, max_paths.max(1)) {
            Ok(paths) => CaseOutcome::Paths {
                paths: paths
                    .iter()
                    .map(|edges| self.witness_query(edges, packet, &before))
                    .collect(),
            },
            Err(k) => {
                let in_graph = match_trace(&self.a.dag, trace, 1).is_ok();
                let at_pc = trace.get(k).copied().unwrap_or(0);
                CaseOutcome::NoPath {
                    graph: if in_graph { "split" } else { "graph" },
                    matched: (k + 1).min(trace.len()),
                    at_pc,
                    next_pc: trace.get(k + 1).copied(),
                    line: self.source_line(at_pc),
                    beyond_loop_bound: self.beyond_loop_bound(trace),
                }
            }
        };
        Ok(Case {
            retval: Some(run.retval),
            trace_len: trace.len(),
            outcome,
        })
    }

    /// Whether a loop bounded by the user's `--loop-bound` (not evident) runs more often in
    /// `trace` than that: its header executed more than bound + 1 times. (For such a loop
    /// inside another loop the count is over every entry: it may say so spuriously, which
    /// only makes a case count as not checked.)
    pub fn beyond_loop_bound(&self, trace: &[u32]) -> bool {
        self.a.graph.loops.iter().filter(|l| !l.evident).any(|l| {
            trace.iter().filter(|&&pc| pc == l.header_pc).count() as u64 > l.bound as u64 + 1
        }) || self.beyond_summary(trace)
    }

    /// Whether a summarised `bpf_loop` call calls its callback more than once in `trace`: the
    /// graph holds one call for all of them, so such a trace has no path of its own there.
    pub fn beyond_summary(&self, trace: &[u32]) -> bool {
        self.a
            .graph
            .loops
            .iter()
            .filter(|l| l.summary)
            .any(|l| trace.iter().filter(|&&pc| pc == l.header_pc).count() > 2)
    }

    /// `file:line: text` of instruction `pc`, if the object has line information.
    fn source_line(&self, pc: u32) -> Option<String> {
        self.a
            .program
            .line(pc as usize)
            .filter(|l| l.line > 0)
            .map(|l| format!("{}: {}", l.short(), l.text.trim()))
    }

    /// The query of the path `edges` of the search's graph, with the case asserted.
    fn witness_query(&self, edges: &[u32], packet: &[u8], maps: &MapState) -> WitnessQuery {
        let d = &self.a.search_dag;
        let steps: Vec<(u32, crate::cfg::EdgeKind)> = edges
            .iter()
            .map(|&e| (d.pc[e as usize], d.kind[e as usize]))
            .collect();
        let t = &self.a.target.limits;
        let len = packet.len() as u64;
        let q = symex::query(
            &self.a.program,
            &steps,
            (t.min_packet_bytes as u64).min(len),
            (t.mtu_bytes as u64 + 14).max(len),
        );
        let w = witness(&self.a.program, maps, packet);
        let need = edges
            .iter()
            .map(|&e| (d.need[e as usize], d.pc[e as usize]))
            .max_by_key(|x| x.0);
        WitnessQuery {
            min_len: need.map_or(0, |x| x.0),
            min_len_at: need
                .filter(|x| x.0 > 0)
                .map(|(_, pc)| (pc, self.source_line(pc))),
            smt: w.apply(&q.smt),
            asserts: q
                .asserts
                .iter()
                .map(|(k, c)| {
                    let pc = steps[*k].0;
                    (format!("a{k}"), c.clone(), pc, self.source_line(pc))
                })
                .collect(),
            witness: w,
            ret: q.ret,
            lookups: q.lookups,
            edges: edges.len(),
        }
    }

    /// The program's maps, by name: `{type, map_type, key_size, value_size, max_entries,
    /// modelled, read_only}` (`modelled`: the interpreter holds entries for it).
    pub fn maps(&self) -> BTreeMap<String, ModelledMap> {
        let st = MapState::new(&self.a.program);
        self.a
            .program
            .maps
            .iter()
            .map(|d| {
                (
                    d.name.clone(),
                    ModelledMap {
                        key_size: d.key_size,
                        map_type: d.map_type,
                        max_entries: d.max_entries,
                        modelled: st.is_modelled(&d.name),
                        read_only: d.frozen,
                        type_name: d.type_name(),
                        value_size: d.value_size,
                    },
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::MAP_HASH;
    use crate::testasm::*;

    fn jne(dst: u8, imm: i32, off: i16) -> Slot {
        i(0x55, dst, 0, off, imm)
    }

    /// r2 = data, r3 = data_end; if data + 2 > data_end: return 1; r0 = pkt[0]; if r0 == 7:
    /// return 3; return 2.
    fn branchy() -> Program {
        prog(
            &[
                ldx(W, 2, 1, 0),
                ldx(W, 3, 1, 4),
                movr(4, 2),
                add(4, 2),
                jgt_r(4, 3, 5),
                ldx(B, 0, 2, 0),
                jeq(0, 7, 1),
                ja(1),
                mov(0, 3),
                exit(),
                mov(0, 1),
                exit(),
            ],
            Vec::new(),
        )
    }

    #[test]
    fn a_trace_maps_onto_the_one_path_that_executes_it() {
        let a = nfp_analysis(branchy());
        let d = &a.search_dag;
        let pcs = |p: &[u32]| a.path_insns(d, p);
        let t = [0, 1, 2, 3, 4, 5, 6, 8, 9];
        let paths = match_trace(d, &t, 4).unwrap();
        assert_eq!(paths.len(), 1);
        assert_eq!(pcs(&paths[0]), t);
        let t = [0, 1, 2, 3, 4, 5, 6, 7, 9];
        assert_eq!(pcs(&match_trace(d, &t, 4).unwrap()[0]), t);
        // Not a path: 6 → 9 skips the jump; a trace that stops early; one that goes on.
        assert_eq!(match_trace(d, &[0, 1, 2, 3, 4, 5, 6, 9], 4), Err(6));
        assert_eq!(match_trace(d, &[0, 1, 2], 4), Err(2));
        assert_eq!(match_trace(d, &[1, 2], 4), Err(0));
        assert_eq!(match_trace(d, &[0, 1, 2, 3, 4, 10, 11, 0], 4), Err(6));
    }

    #[test]
    fn a_jump_by_zero_gives_both_of_its_edges() {
        // if r1 == 0 goto +0 (either way to 1); r0 = 2; exit.
        let p = prog(&[jeq(1, 0, 0), mov(0, 2), exit()], Vec::new());
        let a = nfp_analysis(p);
        let paths = match_trace(&a.search_dag, &[0, 1, 2], 4).unwrap();
        assert_eq!(paths.len(), 2);
        assert_eq!(match_trace(&a.search_dag, &[0, 1, 2], 1).unwrap().len(), 1);
    }

    #[test]
    fn the_witness_pins_the_packet_and_the_maps() {
        let maps = vec![map("h", MAP_HASH, 4, 2, 8)];
        let p = prog(&[mov(0, 2), exit()], maps);
        let mut st = MapState::new(&p);
        st.set("h", &[1, 2, 3, 4], &[0, 9]).unwrap();
        let w = witness(&p, &st, &[0xab, 0]);
        let text: Vec<String> = w.asserts.iter().map(|(n, a)| format!("{n} {a}")).collect();
        assert_eq!(
            text,
            [
                "w_len (= len #x0000000000000002)",
                "w_pkt0 (= (select pkt0 #x0000000000000000) #xab)",
                "w_pkt1 (= (select pkt0 #x0000000000000001) #x00)"
            ]
        );
        // Key bytes 01 02 03 04 are the term #x04030201 (byte 0 lowest); value byte 1 is 9,
        // byte 0 the constant array's zero.
        let (sym, sort, v) = &w.defines[0];
        assert_eq!(
            (sym.as_str(), sort.as_str()),
            ("m0_0", "(Array (_ BitVec 64) (_ BitVec 8))")
        );
        assert_eq!(
            v,
            "(store ((as const (Array (_ BitVec 64) (_ BitVec 8))) #x00) (concat #x04030201 (_ bv1 32)) #x09)"
        );
        assert_eq!(
            w.defines[1].2,
            "(store ((as const (Array (_ BitVec 32) Bool)) false) #x04030201 true)"
        );
        // Applied: the declarations become the definitions, the assertions are appended.
        let smt = "(declare-const m0_0 (Array (_ BitVec 64) (_ BitVec 8)))\n(declare-const len (_ BitVec 64))\n";
        let out = w.apply(smt);
        assert!(
            out.starts_with("(define-fun m0_0 () (Array (_ BitVec 64) (_ BitVec 8)) (store "),
            "{out}"
        );
        assert!(out.contains("(declare-const len (_ BitVec 64))\n(assert (! (= len #x0000000000000002) :named w_len))"));
    }

    /// key (u32) = pkt[0]; v = lookup(hash map "h", &key); if !v: return 1; if v[0] == 5:
    /// return 3; return 2 (after a 1-byte bounds check).
    fn lookup_program() -> Program {
        let mut s = vec![
            ldx(W, 2, 1, 0),
            ldx(W, 3, 1, 4),
            movr(4, 2),
            add(4, 1),
            jgt_r(4, 3, 100),
            ldx(B, 5, 2, 0),
            stx(W, 10, 5, -4),
        ];
        s.extend(ld_map(1, 0));
        s.extend([
            movr(2, 10),
            add(2, -4),
            call(1),
            jeq(0, 0, 100),
            ldx(B, 1, 0, 0),
            mov(0, 2),
            jne(1, 5, 1),
            mov(0, 3),
            exit(),
            mov(0, 1),
            exit(),
        ]);
        let fail = s.len() - 2;
        patch_jumps(&mut s, 100, fail);
        prog(&s, vec![map("h", MAP_HASH, 4, 1, 8)])
    }

    fn only_path(c: Case) -> WitnessQuery {
        match c.outcome {
            CaseOutcome::Paths { mut paths } if paths.len() == 1 => paths.remove(0),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_solver_finds_each_taken_path_satisfiable_with_its_witness() {
        let d = Differential::new(nfp_analysis(lookup_program()));
        let pkt = [9u8; 60];
        let entry = |v: u8| format!(r#"{{"h": {{"entries": {{"09000000": "{v:02x}"}}}}}}"#);
        for (maps, ret) in [(String::new(), 1), (entry(5), 3), (entry(6), 2)] {
            let c = d.case(&pkt, &maps, 1000, 4).unwrap();
            assert_eq!(c.retval, Some(ret), "{maps}");
            let q = only_path(c);
            assert_eq!(z3(&q.smt), "sat", "{maps}");
            // The return value can be the interpreter's.
            let also = format!("(assert (= {} #x{ret:016x}))\n", q.ret);
            assert_eq!(z3(&(q.smt.clone() + &also)), "sat");
        }
    }

    /// The query (without a witness) of the path `pkt` takes with the entries of `maps_json`.
    fn raw_query(d: &Differential, pkt: &[u8], maps_json: &str) -> String {
        let p = &d.a.program;
        let mut st = MapState::from_json(p, maps_json).unwrap();
        let o = interp::run(p, pkt, &mut st, &RunOptions::default()).unwrap();
        let dag = &d.a.search_dag;
        let edges = &match_trace(dag, &o.trace, 1).unwrap()[0];
        let steps: Vec<_> = edges
            .iter()
            .map(|&e| (dag.pc[e as usize], dag.kind[e as usize]))
            .collect();
        symex::query(p, &steps, 1, 1514).smt
    }

    #[test]
    fn the_witness_refutes_a_path_the_case_does_not_take() {
        // Each path's query with another case's witness: the key's presence and its value
        // decide the path, so the witness must rule it out.
        let p = lookup_program();
        let d = Differential::new(nfp_analysis(p.clone()));
        let pkt = [9u8; 60];
        let cases = [
            "",
            r#"{"h": {"entries": {"09000000": "05"}}}"#,
            r#"{"h": {"entries": {"09000000": "06"}}}"#,
        ];
        let queries: Vec<String> = cases.iter().map(|m| raw_query(&d, &pkt, m)).collect();
        for (i, q) in queries.iter().enumerate() {
            for (j, m) in cases.iter().enumerate() {
                let st = MapState::from_json(&p, m).unwrap();
                let smt = witness(&p, &st, &pkt).apply(q);
                let want = if i == j { "sat" } else { "unsat" };
                assert_eq!(z3(&smt), want, "path of case {i}, witness of case {j}");
            }
        }
        // And the packet: a key of 8 (pkt[0]) is not the entry's 9.
        let st = MapState::from_json(&p, cases[1]).unwrap();
        assert_eq!(
            z3(&witness(&p, &st, &[8u8; 60]).apply(&queries[1])),
            "unsat"
        );
    }

    /// v = lookup(map 0, &key 1); if !v: return 1; update(map 0, &key 1, &7, BPF_ANY);
    /// return *v == 7 ? 2 : 3.
    fn stale_value(map_type: u32) -> Program {
        let mut s = vec![st(W, 10, -4, 1)];
        s.extend(ld_map(1, 0));
        s.extend([movr(2, 10), add(2, -4), call(1), jeq(0, 0, 100), movr(6, 0)]);
        s.extend([st(DW, 10, -16, 7)]);
        s.extend(ld_map(1, 0));
        s.extend([
            movr(2, 10),
            add(2, -4),
            movr(3, 10),
            add(3, -16),
            mov(4, 0),
            call(2),
            ldx(DW, 1, 6, 0),
            mov(0, 2),
            jeq(1, 7, 1),
            mov(0, 3),
            exit(),
            mov(0, 1),
            exit(),
        ]);
        let fail = s.len() - 2;
        patch_jumps(&mut s, 100, fail);
        prog(&s, vec![map("m", map_type, 4, 8, 4)])
    }

    #[test]
    fn a_value_looked_up_before_an_update_of_a_hash_map_is_the_old_element() {
        // The kernel replaces a hash map's element on update: the pointer from before reads
        // the old value (5), which the query once took for the new one (7) and refuted.
        use crate::load::{MAP_ARRAY, MAP_LRU_HASH};
        let entry = r#"{"m": {"entries": {"01000000": "0500000000000000"}}}"#;
        for t in [MAP_HASH, MAP_LRU_HASH] {
            let d = Differential::new(nfp_analysis(stale_value(t)));
            let c = d.case(&[0u8; 60], entry, 1000, 4).unwrap();
            assert_eq!(c.retval, Some(3), "map type {t}");
            assert_eq!(z3(&only_path(c).smt), "sat", "map type {t}");
        }
        // An array's value is written in place: the pointer reads 7, and the path that reads
        // anything else stays refuted.
        let d = Differential::new(nfp_analysis(stale_value(MAP_ARRAY)));
        let c = d.case(&[0u8; 60], entry, 1000, 4).unwrap();
        assert_eq!(c.retval, Some(2));
        let p = &d.a.program;
        let dag = &d.a.search_dag;
        let mut st = MapState::from_json(p, entry).unwrap();
        let o = interp::run(p, &[0u8; 60], &mut st, &RunOptions::default()).unwrap();
        let mut steps: Vec<_> = match_trace(dag, &o.trace, 1).unwrap()[0]
            .iter()
            .map(|&e| (dag.pc[e as usize], dag.kind[e as usize]))
            .collect();
        // The same path with `*v == 7` not taken instead.
        let k = steps
            .iter()
            .rposition(|s| s.1 == crate::cfg::EdgeKind::Taken)
            .unwrap();
        steps[k].1 = crate::cfg::EdgeKind::NotTaken;
        steps.truncate(k + 1);
        steps.extend([
            (steps[k].0 + 1, crate::cfg::EdgeKind::Next),
            (steps[k].0 + 2, crate::cfg::EdgeKind::Next),
        ]);
        assert_eq!(z3(&symex::query(p, &steps, 60, 1514).smt), "unsat");
    }

    #[test]
    fn a_case_gives_the_path_query_with_the_witness() {
        let d = Differential::new(nfp_analysis(branchy()));
        let mut pkt = vec![0u8; 60];
        pkt[0] = 7;
        let c = d.case(&pkt, "", 1000, 4).unwrap();
        assert_eq!(c.retval, Some(3));
        let CaseOutcome::Paths { paths } = c.outcome else {
            panic!("{c:?}")
        };
        assert_eq!(paths.len(), 1);
        let q = &paths[0];
        assert_eq!(q.edges, 9);
        assert!(q
            .smt
            .contains("(assert (! (= len #x000000000000003c) :named w_len))"));
        assert!(q.smt.contains(":named w_pkt59)"));
        // The length check (instruction 4) needs 2 bytes.
        assert_eq!(
            (q.min_len, q.min_len_at.as_ref().map(|x| x.0)),
            (2, Some(4))
        );
        // The branches: the length check not taken, pkt[0] == 7 taken.
        assert_eq!(q.asserts.len(), 2);
        assert!(q.asserts[1].1.starts_with("(= "), "{:?}", q.asserts);
        // A packet too short for the check's 2 bytes faults in no way: it returns 1.
        let c = d.case(&[7], "", 1000, 4).unwrap();
        assert_eq!(c.retval, Some(1));
        // A fault is a case without a path.
        let c = d.case(&pkt, "", 3, 4).unwrap();
        assert!(matches!(c.outcome, CaseOutcome::Fault { .. }), "{c:?}");
    }
}
