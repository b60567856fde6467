//! The search for the slowest satisfiable path (paper §5.4), run against an SMT solver.
//!
//! [`Search`] hands out paths slowest first, each as a query; [`run`] checks them with a
//! [`Solver`] until one is satisfiable (its rate is the guarantee), the time or the memory is up,
//! or no path is left. Unsat cores refute the path's infeasible prefix; in bit-rate mode the
//! satisfiable path's exact minimum packet is sought, and length lemmas (a core of the query
//! with the packet bounded) rule out whole families of paths that cannot be slower than the one
//! found. With `paths` (`--paths K`) the search goes on past the SSP until K satisfiable paths
//! are known. The solver is behind a trait: the Python side adapts Bitwuzla or Z3 in a process
//! of its own (`nicsim.xdp.solver`); the tests use Z3's text interface.

use crate::analysis::{Next, Search};
use crate::summary::{ExampleEntry, PathInfo};
use serde::Serialize;
use std::time::{Duration, Instant};

/// A solver's answer to a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sat {
    /// Satisfiable: some packet and map state take the path.
    Sat,
    /// Unsatisfiable: the path is infeasible.
    Unsat,
    /// Out of time (or the solver gave up): the path may be feasible.
    Unknown,
}

/// A value of a model: a Boolean, or a bit-vector's value as bytes, least significant first
/// (as many as the value needs; missing high bytes are zero).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelValue {
    /// A Boolean's value.
    Bool(bool),
    /// A bit-vector's bytes, least significant first.
    Bits(Vec<u8>),
}

impl ModelValue {
    /// The low 64 bits (a Boolean is 0 or 1).
    pub fn low_u64(&self) -> u64 {
        match self {
            ModelValue::Bool(b) => u64::from(*b),
            ModelValue::Bits(v) => v
                .iter()
                .take(8)
                .enumerate()
                .fold(0, |a, (k, &b)| a | (u64::from(b) << (8 * k))),
        }
    }

    /// The value as `n` bytes, least significant first (truncated or zero-extended).
    pub fn bytes_le(&self, n: usize) -> Vec<u8> {
        let mut out = match self {
            ModelValue::Bool(b) => vec![u8::from(*b)],
            ModelValue::Bits(v) => v.clone(),
        };
        out.resize(n, 0);
        out
    }
}

/// Why a solver call gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SolverError {
    /// The solver stopped: `reason` is `memory` (it ran out of its share of `--memory-mb`),
    /// `timeout` (it overran its time limit) or `error` (it failed on a query: refused its text,
    /// or raised an error of its own). The search ends with the bound so far; `message` says
    /// what happened.
    Stopped {
        /// `memory`, `timeout` or `error`.
        reason: String,
        /// What happened.
        message: String,
    },
    /// The caller's side failed (an interrupt, a broken adapter): the run ends with it.
    Host(String),
}

/// An SMT solver, as the search uses it. A check pushes one level, which [`Solver::done`]
/// pops; `check` starts a fresh query, `check_also` adds assertions to the one checked.
pub trait Solver {
    /// Check the query `smt` afresh, within `timeout_s` seconds if given.
    fn check(&mut self, smt: &str, timeout_s: Option<f64>) -> Result<Sat, SolverError>;
    /// Add the assertions `smt` to the query checked last and check it again.
    fn check_also(&mut self, smt: &str, timeout_s: Option<f64>) -> Result<Sat, SolverError>;
    /// The names (`a<k>`) of the unsat core of the last check, which was unsat.
    fn core(&mut self) -> Result<Vec<String>, SolverError>;
    /// The values of `terms` in the model of the last check, which was sat.
    fn values(&mut self, terms: &[String]) -> Result<Vec<ModelValue>, SolverError>;
    /// End the check: pop the level it pushed.
    fn done(&mut self) -> Result<(), SolverError>;
}

/// What [`run`] is told besides the search and the solver.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The analysis's time limit (seconds), of which `spent_s` had passed when the run began
    /// (building the analysis); with `paths`, the search past the SSP has as long again.
    pub timeout_s: f64,
    /// Seconds of `timeout_s` already spent when the run began.
    pub spent_s: f64,
    /// The naive bound (packets/s, or bits/s in bit-rate mode): where the trace starts.
    pub naive: f64,
    /// `--paths K` (packet rate): go on past the SSP until K satisfiable paths are known.
    pub paths: Option<usize>,
    /// Bit-rate mode: once a satisfiable path is known, check a later one first with the
    /// packet bounded to what would make it slower, and keep that check's unsat cores as length
    /// lemmas. `false` searches every later satisfiable path's exact minimum instead (the same
    /// result, slower: the tests compare the two).
    pub length_bound: bool,
    /// Seconds the enumeration runs at most before [`run_with_tick`]'s tick is called
    /// ([`TICK_S`]; [`run`] has no tick).
    pub tick_s: f64,
}

/// An example from a model: the packet, the return value, and map entries (each
/// `{map, key_hex, value_hex, present}`, or `{map, max_entries}` for the size of a map
/// declared with `max_entries 0`).
#[derive(Debug, Clone, Serialize)]
pub struct Example {
    /// The packet, as hex.
    pub packet_hex: String,
    /// The program's return value (an XDP action).
    pub retval: u32,
    /// Map entries and map sizes the example needs.
    pub entries: Vec<ExampleEntry>,
    /// What the environment gave on the path (the time, random numbers, the CPU), in call
    /// order: the interpreter replays them (`interp::RunOptions::replay`); the kernel gives its
    /// own. Left out of the JSON when the path calls no such helper.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub helper_results: Vec<HelperResult>,
    /// The context's fields the path read whose values the run cannot choose
    /// (`ingress_ifindex`, `rx_queue_index`), as the model gives them: `BPF_PROG_TEST_RUN` and
    /// the interpreter run on the loopback (ifindex 1, queue 0), so an example needing others
    /// is not one `validate` can replay, and says so. Left out when the path reads none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<ContextField>,
}

/// A field of `struct xdp_md` an example's path read, and the model's value of it.
#[derive(Debug, Clone, Serialize)]
pub struct ContextField {
    /// The field's name (`ingress_ifindex`).
    pub field: String,
    /// Its value.
    pub value: u64,
}

/// A result the environment gave on an example's path: the helper and the model's value.
#[derive(Debug, Clone, Serialize)]
pub struct HelperResult {
    /// The helper's name (`bpf_ktime_get_ns`).
    pub helper: String,
    /// Its id.
    pub id: u32,
    /// The value it returned.
    pub value: u64,
}

impl Example {
    /// The environment's results as the interpreter replays them: `(helper id, value)`.
    pub fn replay(&self) -> Vec<(u32, u64)> {
        self.helper_results
            .iter()
            .map(|h| (h.id, h.value))
            .collect()
    }
}

/// A satisfiable path: [`Search::current_path`] (with `retval`, and `key`, its rate as the
/// search ranks it) and its example.
#[derive(Debug, Clone, Serialize)]
pub struct FoundPath {
    /// The path.
    pub path: PathInfo,
    /// A packet and map state that take the path.
    pub example: Example,
}

/// How a run ended.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// `ssp` (the slowest satisfiable path is known), `timeout` (time, memory or the solver
    /// ran out: the bound is valid), `exhausted` (every path refuted), `unbounded` (a tail call
    /// into programs nobody declared: no search).
    pub status: String,
    /// What ended the search: as `status`, or `memory` (the search's or the solver's), or the
    /// solver's own reason.
    pub stopped: String,
    /// When the solver stopped: what it said.
    pub solver_ended: Option<String>,
    /// The slowest satisfiable path, if found.
    pub ssp: Option<FoundPath>,
    /// The guarantee when there is no SSP: every path slower than this was refuted (None: no
    /// bound beyond the naive one).
    pub bound: Option<f64>,
    /// (seconds, bound) each time the bound rose, the naive bound first.
    pub trace: Vec<[f64; 2]>,
    /// With `paths`: the satisfiable paths found, slowest first, and why that search stopped
    /// (`paths`, `exhausted`, `timeout`, `memory`).
    pub slowest: Vec<FoundPath>,
    /// Why the search past the SSP stopped (with `paths`).
    pub slowest_stopped: Option<String>,
    /// [`Search::counts`].
    pub enumerated: u64,
    /// Paths whose query went to the solver.
    pub checked: u64,
    /// Paths the solver refuted.
    pub unsat: u64,
    /// Paths skipped without a query (under a refuted prefix, by a known conflict or a length lemma).
    pub pruned: u64,
    /// Candidate prefixes the enumeration refused as dead.
    pub refused: u64,
    /// Bytes the search's state took at the end (estimated).
    pub search_bytes: usize,
    /// Bytes the analysis took (estimated).
    pub analysis_bytes: usize,
}

/// What the search has done so far, as [`run`] tells `progress`: paths whose query went to the
/// solver, of those the infeasible ones, and paths pruned without a query ([`Search::counts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Progress {
    /// Paths whose query went to the solver.
    pub checked: u64,
    /// Of those, the paths the solver refuted.
    pub infeasible: u64,
    /// Paths skipped without a query: under a refuted prefix, by a known conflict or a length
    /// lemma.
    pub pruned: u64,
}

impl Progress {
    /// What `s` has done so far.
    pub fn of(s: &Search) -> Progress {
        let (_, unsat, pruned, _) = s.counts();
        Progress {
            checked: s.queried,
            infeasible: unsat,
            pruned,
        }
    }
}

/// The callback [`run`] tells each new bound: (seconds, bound, what the search has done).
pub type OnBound<'a> = dyn FnMut(f64, f64, Progress) -> Result<(), String> + 'a;

/// The callback [`run_with_tick`] calls at least every [`RunOptions::tick_s`] seconds of a
/// search that goes on without a solver call (paths pruned without one can take minutes): an
/// error ends the run with it (a binding looks for Ctrl-C and SIGTERM there).
pub type OnTick<'a> = dyn FnMut() -> Result<(), String> + 'a;

/// [`RunOptions::tick_s`] for a binding: how long the search goes on at most between two calls
/// of its tick (seconds).
pub const TICK_S: f64 = 0.2;

/// Run the search to its end. `progress` is told each new bound (seconds, bound, the paths
/// checked, infeasible and pruned so far); an error from it, or [`SolverError::Host`], ends the
/// run with that error.
pub fn run(
    s: &mut Search,
    slv: &mut dyn Solver,
    o: &RunOptions,
    progress: &mut OnBound<'_>,
) -> Result<Outcome, String> {
    run_with_tick(s, slv, o, progress, &mut || Ok(()))
}

/// [`run`], calling `tick` at least every `o.tick_s` seconds while paths are enumerated and
/// pruned without the solver; an error from it ends the run with that error.
pub fn run_with_tick(
    s: &mut Search,
    slv: &mut dyn Solver,
    o: &RunOptions,
    progress: &mut OnBound<'_>,
    tick: &mut OnTick<'_>,
) -> Result<Outcome, String> {
    let unbounded = !s.a.program.unbounded_prog_arrays().is_empty();
    let mut r = Run {
        start: Instant::now(),
        o,
        best: o.naive,
        trace: Vec::new(),
        found: None,
        ssp: None,
        slowest: Vec::new(),
    };
    let mut solver_ended = None;
    let mut slowest_stopped = None;
    let (status, stopped) = if unbounded {
        ("unbounded".to_string(), "unbounded".to_string())
    } else {
        r.trace.push([r.elapsed(), o.naive]);
        let (status, stopped) = match r.search(s, slv, progress, tick) {
            Ok((st, why)) => (st.to_string(), why.to_string()),
            Err(SolverError::Stopped { reason, message }) => {
                solver_ended = Some(ended(s, &reason, message));
                ("timeout".to_string(), reason)
            }
            Err(SolverError::Host(e)) => return Err(e),
        };
        if let Some(k) = o.paths.filter(|_| status == "ssp") {
            slowest_stopped = Some(match r.more_paths(s, slv, k, tick) {
                Ok(why) => why.to_string(),
                Err(SolverError::Stopped { reason, message }) => {
                    solver_ended = Some(ended(s, &reason, message));
                    reason
                }
                Err(SolverError::Host(e)) => return Err(e),
            });
        }
        (status, stopped)
    };
    if slowest_stopped.is_none() {
        // No search past the SSP: it stopped where the search did (or had its paths).
        slowest_stopped = o.paths.map(|k| {
            if r.slowest.len() >= k {
                "paths".to_string()
            } else {
                stopped.clone()
            }
        });
    }
    let found = r.found;
    let bound = (status != "ssp" && !unbounded)
        .then(|| s.floor().min(found.unwrap_or(f64::INFINITY)))
        .filter(|b| b.is_finite());
    let (enumerated, unsat, pruned, refused) = s.counts();
    Ok(Outcome {
        stopped,
        ssp: if status == "ssp" { r.ssp.take() } else { None },
        status,
        solver_ended,
        bound,
        trace: r.trace,
        slowest_stopped,
        slowest: r.slowest,
        enumerated,
        checked: s.queried,
        unsat,
        pruned,
        refused,
        search_bytes: s.memory_bytes(),
        analysis_bytes: s.a.memory_bytes(),
    })
}

/// What the solver said when it stopped; when it failed (`reason` "error": it refused or could
/// not read a query), with the path it failed on, by its rank in the search (1: the first path
/// handed out, the slowest), so that a user can report it.
fn ended(s: &Search, reason: &str, message: String) -> String {
    if reason == "error" {
        let what = message.strip_prefix("error: ").unwrap_or(&message);
        format!("path {}: {what}", s.counts().0)
    } else {
        message
    }
}

struct Run<'o> {
    start: Instant,
    o: &'o RunOptions,
    /// The highest bound so far (for the trace).
    best: f64,
    trace: Vec<[f64; 2]>,
    /// The slowest satisfiable path's exact rate so far, and that path.
    found: Option<f64>,
    ssp: Option<FoundPath>,
    slowest: Vec<FoundPath>,
}

/// The deadline `seconds` from now.
fn deadline(seconds: f64) -> Option<Instant> {
    Instant::now().checked_add(Duration::from_secs_f64(seconds.clamp(0.0, 1e9)))
}

/// The longest packet (bytes) at which a path of `pps` packets/s is slower than `found`
/// bits/s, as the search compares them (`pps * 8 * length < found`); -1 if none is.
/// (At most `u32::MAX`: no packet is longer.)
pub fn longest_slower(pps: f64, found: f64) -> i64 {
    let most = i64::from(u32::MAX);
    let slower = |n: i64| pps * 8.0 * (n as f64) < found;
    let mut n = ((found / (pps * 8.0)).max(0.0)).min(most as f64) as i64;
    while n >= 0 && !slower(n) {
        n -= 1;
    }
    while n < most && slower(n + 1) {
        n += 1;
    }
    n
}

const SSP: (&str, &str) = ("ssp", "ssp");
/// The name of the assertion that bounds the packet's length in a bounded check: a core
/// that names it says the path needs a longer packet, one without it that the path is
/// infeasible.
pub const LEN_BOUND: &str = "len_bound";
const TIMEOUT: (&str, &str) = ("timeout", "timeout");

fn len_at_most(len: &str, n: i64) -> String {
    format!("(assert (bvule {len} (_ bv{n} 64)))\n")
}

/// The largest size sought for a map declared with `max_entries 0` in an example (see
/// `model`): one the kernel can create for `nicsim xdp validate`.
pub const EXAMPLE_MAP_ENTRIES: u32 = 1024;

impl Run<'_> {
    fn elapsed(&self) -> f64 {
        self.o.spent_s + self.start.elapsed().as_secs_f64()
    }

    fn remaining(&self) -> f64 {
        self.o.timeout_s - self.elapsed()
    }

    /// The solver's time for one check: what is left (at least a millisecond).
    fn limit(&self) -> Option<f64> {
        Some(self.remaining().max(0.001))
    }

    /// The bound may have risen (to the floor of `s`): trace it and tell `progress`.
    fn note(&mut self, s: &Search, progress: &mut OnBound<'_>) -> Result<(), SolverError> {
        let bound = self.floor(s);
        if bound > self.best * (1.0 + 1e-12) {
            self.best = bound;
            let at = self.elapsed();
            self.trace.push([at, bound]);
            progress(at, bound, Progress::of(s)).map_err(SolverError::Host)?;
        }
        Ok(())
    }

    fn floor(&self, s: &Search) -> f64 {
        s.floor().min(self.found.unwrap_or(f64::INFINITY))
    }

    /// The search up to the SSP (or the end): its status.
    fn search(
        &mut self,
        s: &mut Search,
        slv: &mut dyn Solver,
        progress: &mut OnBound<'_>,
        tick: &mut OnTick<'_>,
    ) -> Result<(&'static str, &'static str), SolverError> {
        let bit = s.bit_rate;
        loop {
            if self.remaining() <= 0.0 {
                return Ok(TIMEOUT);
            }
            // In ticks: the enumeration resumes where a tick's deadline stopped it.
            let (key, q) = match s.next_query(deadline(self.remaining().min(self.o.tick_s))) {
                Next::Query(key, q) => (key, q),
                Next::Timeout if self.remaining() > 0.0 => {
                    tick().map_err(SolverError::Host)?;
                    continue;
                }
                Next::Timeout => return Ok(TIMEOUT),
                Next::OutOfMemory => return Ok(("timeout", "memory")),
                Next::Exhausted => return Ok(("exhausted", "exhausted")),
            };
            let pps = s.current_pps().unwrap_or(f64::INFINITY);
            let min_len = s.current_min_len();
            if self.found.is_some_and(|f| key >= f) {
                return Ok(SSP); // every path left is at least as fast
            }
            if let (true, Some(f)) = (bit, self.found) {
                if pps * 8.0 * f64::from(min_len) >= f {
                    // A length lemma says every packet this path accepts is long enough to make
                    // it no slower than the slowest satisfiable path found.
                    s.pass_longer();
                    self.note(s, progress)?;
                    continue;
                }
            }
            // Once a satisfiable path is known (bit rate), a later one matters only if some
            // packet short enough to make it slower than that one takes it: its query is checked
            // with the packet so bounded, a named assertion. Unsat with the bound in the core:
            // no such packet (the core, less the bound, is a length lemma); unsat without it:
            // the path is infeasible. (A path whose whole query is satisfiable but not within
            // the bound costs one check, not two: DNS cache's later paths each took a second
            // to find a model they did not need.)
            let bound = match (bit, self.o.length_bound, self.found) {
                (true, true, Some(f)) => Some(longest_slower(pps, f)),
                _ => None,
            };
            let smt = match bound {
                Some(n) => std::borrow::Cow::Owned(format!(
                    "{}(assert (! (bvule {} (_ bv{} 64)) :named {LEN_BOUND}))\n",
                    q.smt,
                    q.len,
                    n.max(0)
                )),
                None => std::borrow::Cow::Borrowed(q.smt.as_str()),
            };
            match slv.check(&smt, self.limit())? {
                Sat::Unsat => {
                    let core = slv.core()?;
                    slv.done()?;
                    match bound {
                        Some(n) if core.iter().any(|c| c == LEN_BOUND) => {
                            // The core's conditions need a longer packet on any path that
                            // asserts them all: a length lemma; this path is no slower than
                            // the slowest satisfiable one found.
                            s.longer(&core, (n + 1) as u32);
                            s.pass();
                        }
                        _ => s.refute(&core),
                    }
                    self.note(s, progress)?;
                    continue;
                }
                Sat::Unknown => {
                    // Out of time on this path: it may be feasible, so the bound stays at or
                    // below its rate (the floor counts the path being checked).
                    slv.done()?;
                    return Ok(TIMEOUT);
                }
                Sat::Sat => {}
            }
            let mut path = s.current_path().expect("a path is being checked");
            let path_mps = path.min_packet_bytes;
            let rank_key = if bit {
                let lo = path_mps.max(u64::from(min_len));
                let mps = self.min_length(slv, &q, lo)?;
                path.min_packet_bytes = mps;
                pps * 8.0 * mps as f64
            } else {
                key
            };
            let example = model(slv, &q)?;
            if bit {
                slv.done()?;
            }
            slv.done()?;
            path.retval = Some(example.retval);
            path.key = Some(rank_key);
            let fp = FoundPath { path, example };
            if self.o.paths.is_some() {
                self.slowest.push(fp.clone());
            }
            if self.found.is_none_or(|f| rank_key < f) {
                self.found = Some(rank_key);
                self.ssp = Some(fp);
                if bit {
                    s.found(rank_key); // the size lemmas rule out paths against it
                }
            }
            s.pass();
            self.note(s, progress)?;
            if !bit || rank_key <= key * (1.0 + 1e-12) {
                return Ok(SSP);
            }
        }
    }

    /// The path's minimum packet length, from the solver (its query asserted and satisfiable):
    /// a binary search between `lo` (the static bound, never above the minimum) and the model's
    /// length. Returns a length proven not to exceed the minimum (it is the minimum unless the
    /// solver ran out of time). Leaves one more level pushed, whose model is the shortest
    /// satisfiable packet found; the caller pops it.
    fn min_length(
        &self,
        slv: &mut dyn Solver,
        q: &crate::symex::Query,
        lo: u64,
    ) -> Result<u64, SolverError> {
        let hi = slv.values(std::slice::from_ref(&q.len))?[0].low_u64();
        let (mut proven, mut best) = (lo, hi);
        // The static bound is often the minimum: one check settles it.
        if proven < best {
            let res = slv.check_also(&len_at_most(&q.len, proven as i64), self.limit())?;
            slv.done()?;
            match res {
                Sat::Sat => best = proven,
                Sat::Unsat => proven += 1,
                Sat::Unknown => {}
            }
        }
        while proven < best {
            let mid = proven + (best - proven) / 2;
            let res = slv.check_also(&len_at_most(&q.len, mid as i64), self.limit())?;
            slv.done()?;
            match res {
                Sat::Sat => best = mid,
                Sat::Unsat => proven = mid + 1,
                Sat::Unknown => break,
            }
        }
        slv.check_also(&len_at_most(&q.len, best as i64), None)?;
        Ok(proven.min(best))
    }

    /// Past the SSP (packet rate): on until `k` satisfiable paths are known, for at most
    /// `timeout_s` more; unsat cores prune as before. Returns why it stopped. The guarantee is
    /// not touched: these paths are no slower than the SSP.
    fn more_paths(
        &mut self,
        s: &mut Search,
        slv: &mut dyn Solver,
        k: usize,
        tick: &mut OnTick<'_>,
    ) -> Result<&'static str, SolverError> {
        let t1 = Instant::now();
        let left = || self.o.timeout_s - t1.elapsed().as_secs_f64();
        while self.slowest.len() < k {
            if left() <= 0.0 {
                return Ok("timeout");
            }
            let q = match s.next_query(deadline(left().min(self.o.tick_s))) {
                Next::Query(_, q) => q,
                Next::Exhausted => return Ok("exhausted"),
                Next::Timeout if left() > 0.0 => {
                    tick().map_err(SolverError::Host)?;
                    continue;
                }
                Next::Timeout => return Ok("timeout"),
                Next::OutOfMemory => return Ok("memory"),
            };
            match slv.check(&q.smt, Some(left().max(0.001)))? {
                Sat::Unsat => {
                    let core = slv.core()?;
                    slv.done()?;
                    s.refute(&core);
                    continue;
                }
                Sat::Unknown => {
                    slv.done()?;
                    return Ok("timeout");
                }
                Sat::Sat => {}
            }
            let mut path = s.current_path().expect("a path is being checked");
            let example = model(slv, &q)?;
            slv.done()?;
            s.pass();
            path.retval = Some(example.retval);
            path.key = Some(path.pps);
            self.slowest.push(FoundPath { path, example });
        }
        Ok("paths")
    }
}

/// The example packet, the return value and the looked-up map entries from a model.
///
/// An array declared with `max_entries 0` has the size the model gives; a model with every
/// such size at most [`EXAMPLE_MAP_ENTRIES`] is sought first, so that the example's maps are
/// ones the kernel can create (`nicsim xdp validate`); and one whose context is the one
/// `BPF_PROG_TEST_RUN` gives (and the interpreter by default): the loopback's ifindex 1, queue 0
/// (calico's counters are keyed by `ingress_ifindex`: its free value made `validate`'s runs take
/// another path); and one where every hash map insert the path makes had room
/// ([`crate::symex::Query::prefer`]). The path stays feasible for every value the program may
/// see; this only chooses the example.
fn model(slv: &mut dyn Solver, q: &crate::symex::Query) -> Result<Example, SolverError> {
    let ctx_pref = q.ctx.iter().filter_map(|(off, t)| match off {
        12 => Some(format!("(assert (= {t} #x00000001))\n")),
        16 => Some(format!("(assert (= {t} #x00000000))\n")),
        _ => None,
    });
    let small: String = q
        .sizes
        .iter()
        .map(|s| {
            format!(
                "(assert (bvule {} (_ bv{EXAMPLE_MAP_ENTRIES} {})))\n",
                s.size, s.bits
            )
        })
        .chain(ctx_pref)
        .collect();
    // The preferred results first (`Query::prefer`): an example's maps cannot make a map full
    // (validate's runs would take another path), so a path that fails an insert is best shown
    // by a present key (-EEXIST) where the program allows it.
    let preferred: String = q
        .prefer
        .iter()
        .map(|(t, v)| format!("(assert (= {t} {v}))\n"))
        .collect();
    let mut tries = vec![format!("{small}{preferred}")];
    if !preferred.is_empty() && !small.is_empty() {
        tries.push(small);
    }
    tries.retain(|t| !t.is_empty());
    for t in &tries {
        if slv.check_also(t, Some(5.0))? == Sat::Sat {
            let out = model_values(slv, q);
            slv.done()?;
            return out;
        }
        slv.done()?;
    }
    if tries.is_empty() {
        return model_values(slv, q);
    }
    slv.check_also("", None)?; // the model without the preferences, at a level of its own
    let out = model_values(slv, q);
    slv.done()?;
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn model_values(slv: &mut dyn Solver, q: &crate::symex::Query) -> Result<Example, SolverError> {
    let v = slv.values(&[q.len.clone(), q.ret.clone()])?;
    let len = v[0].low_u64();
    let retval = v[1].low_u64() as u32;
    let terms: Vec<String> = (0..len)
        .map(|i| format!("(select {} #x{i:016x})", q.packet))
        .collect();
    let packet: Vec<u8> = slv
        .values(&terms)?
        .iter()
        .map(|b| b.low_u64() as u8)
        .collect();
    let mut entries = Vec::new();
    for sz in &q.sizes {
        let n = slv.values(std::slice::from_ref(&sz.size))?[0].low_u64();
        entries.push(ExampleEntry::Size {
            map: sz.map.clone(),
            max_entries: n,
        });
    }
    for lk in &q.lookups {
        let mut terms = vec![lk.key.clone()];
        terms.extend(lk.value_terms());
        terms.extend(lk.present.iter().cloned());
        let vals = slv.values(&terms)?;
        // The key's term is the concatenation of its bytes, byte 0 lowest.
        let key = vals[0].bytes_le((lk.key_size as usize).max(1));
        let n_value = terms.len() - 1 - lk.present.iter().count();
        let value: Vec<u8> = if lk.sparse() {
            // The bytes the path reads, at the model's positions; the others zeros.
            let mut v = vec![0u8; lk.value_size as usize];
            for pair in vals[1..1 + n_value].chunks_exact(2) {
                if let Some(b) = v.get_mut(pair[0].low_u64() as usize) {
                    *b = pair[1].low_u64() as u8;
                }
            }
            v
        } else {
            vals[1..1 + n_value]
                .iter()
                .map(|b| b.low_u64() as u8)
                .collect()
        };
        let present = lk.present.is_none() || vals.last().is_some_and(|p| p.low_u64() != 0);
        entries.push(ExampleEntry::Lookup {
            key_hex: hex(&key),
            map: lk.map.clone(),
            present,
            value_hex: hex(&value),
        });
    }
    let terms: Vec<String> = q.env.iter().map(|e| e.term.clone()).collect();
    let helper_results = if terms.is_empty() {
        Vec::new()
    } else {
        slv.values(&terms)?
            .iter()
            .zip(&q.env)
            .map(|(v, e)| HelperResult {
                helper: crate::helpers::names::helper_name(e.helper),
                id: e.helper,
                value: v.low_u64(),
            })
            .collect()
    };
    let fields: Vec<(&str, &String)> = q
        .ctx
        .iter()
        .filter_map(|(off, t)| match off {
            12 => Some(("ingress_ifindex", t)),
            16 => Some(("rx_queue_index", t)),
            _ => None,
        })
        .collect();
    let context = if fields.is_empty() {
        Vec::new()
    } else {
        let terms: Vec<String> = fields.iter().map(|(_, t)| (*t).clone()).collect();
        slv.values(&terms)?
            .iter()
            .zip(&fields)
            .map(|(v, (field, _))| ContextField {
                field: field.to_string(),
                value: v.low_u64(),
            })
            .collect()
    };
    Ok(Example {
        packet_hex: hex(&packet),
        retval,
        entries,
        helper_results,
        context,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_slower_is_the_boundary_the_search_compares() {
        // A small generator (xorshift), for rates and lengths of every kind.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        for k in 0..20_000 {
            let pps = 1e5 + next() * (1e8 - 1e5);
            let len = if k % 2 == 0 {
                60.0 + next() * 1540.0
            } else {
                (60.0 + next() * 1540.0).floor()
            };
            let found = pps * 8.0 * len;
            let n = longest_slower(pps, found);
            assert!(pps * 8.0 * (n as f64) < found && found <= pps * 8.0 * ((n + 1) as f64));
        }
        assert_eq!(longest_slower(1e6, 8e6 * 60.0), 59); // exactly 60 B is not slower
        assert_eq!(longest_slower(1e6, 0.0), -1);
        assert_eq!(longest_slower(1e-30, 1e30), i64::from(u32::MAX)); // no packet is longer
    }

    #[test]
    fn model_values_read_bytes_least_significant_first() {
        let v = ModelValue::Bits(vec![0x01, 0x02, 0x03]);
        assert_eq!(v.low_u64(), 0x030201);
        assert_eq!(v.bytes_le(5), [1, 2, 3, 0, 0]);
        assert_eq!(v.bytes_le(2), [1, 2]);
        assert_eq!(ModelValue::Bool(true).low_u64(), 1);
        let wide = ModelValue::Bits((1..=12).collect());
        assert_eq!(wide.low_u64(), u64::from_le_bytes([1, 2, 3, 4, 5, 6, 7, 8]));
    }
}
