//! The search for the slowest satisfiable path (`nicsim_xdp::ssp`, paper §5.4) with a real
//! solver: Z3 through its text interface (`z3 -in`, from the project's `.venv`, $NICSIM_Z3 or
//! the PATH). Its enumeration, unsat cores, length lemmas and stopping rules, on the clang-built
//! suite: each example packet it reports is run through the interpreter, which must take the
//! path reported for it.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use common::{analysis, nfp, obj};
use nicsim_xdp::analysis::Search;
use nicsim_xdp::interp::{run as interp, MapState, RunOptions as InterpOptions};
use nicsim_xdp::ssp::{
    run, run_with_tick, ModelValue, Outcome, RunOptions, Sat, Solver, SolverError,
};
use nicsim_xdp::summary::{ExampleEntry, PathInfo};
use nicsim_xdp::{Analysis, Options};

fn z3_path() -> std::path::PathBuf {
    if let Ok(p) = std::env::var("NICSIM_Z3") {
        return p.into();
    }
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/z3");
    if venv.exists() {
        return venv;
    }
    "z3".into()
}

/// Z3 in interactive mode: a check is `(push 1)`, the query, `(check-sat)`; `done` pops.
struct Z3 {
    _child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    calls: Vec<&'static str>,
}

impl Z3 {
    fn new() -> Z3 {
        let mut child = Command::new(z3_path())
            .arg("-in")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("z3: {e} (run `make develop`, or set NICSIM_Z3)"));
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut z = Z3 {
            _child: child,
            input,
            output,
            calls: Vec::new(),
        };
        z.send("(set-option :print-success false)\n(set-option :produce-unsat-cores true)\n(set-option :produce-models true)\n");
        z
    }

    fn send(&mut self, text: &str) {
        self.input.write_all(text.as_bytes()).unwrap();
        self.input.flush().unwrap();
    }

    /// One answer: a line, or an s-expression over several.
    fn answer(&mut self) -> String {
        let mut out = String::new();
        loop {
            let mut line = String::new();
            assert!(self.output.read_line(&mut line).unwrap() > 0, "z3 ended");
            assert!(!line.contains("(error"), "z3: {line}");
            out.push_str(&line);
            let depth = out.matches('(').count() as i64 - out.matches(')').count() as i64;
            if depth <= 0 {
                return out.trim().to_string();
            }
        }
    }

    fn sat(&mut self, smt: &str, timeout_s: Option<f64>) -> Sat {
        let ms = timeout_s.map_or(0, |t| ((t * 1000.0) as u64).max(1));
        self.send(&format!(
            "(set-option :timeout {ms})\n(push 1)\n{smt}(check-sat)\n"
        ));
        match self.answer().as_str() {
            "sat" => Sat::Sat,
            "unsat" => Sat::Unsat,
            _ => Sat::Unknown,
        }
    }
}

fn value(text: &str) -> ModelValue {
    let t = text.trim();
    let bits_le = |digits: &str, radix: u32| {
        // Most significant digit first, in chunks of one byte.
        let per = if radix == 16 { 2 } else { 8 };
        let mut out: Vec<u8> = digits
            .as_bytes()
            .rchunks(per)
            .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), radix).unwrap())
            .collect();
        if out.is_empty() {
            out.push(0);
        }
        ModelValue::Bits(out)
    };
    match t {
        "true" => ModelValue::Bool(true),
        "false" => ModelValue::Bool(false),
        _ if t.starts_with("#x") => bits_le(&t[2..], 16),
        _ if t.starts_with("#b") => bits_le(&t[2..], 2),
        _ if t.starts_with("(_ bv") => {
            let n: u128 = t[5..].split_whitespace().next().unwrap().parse().unwrap();
            ModelValue::Bits(n.to_le_bytes().to_vec())
        }
        _ => panic!("unexpected value {t}"),
    }
}

impl Solver for Z3 {
    fn check(&mut self, smt: &str, timeout_s: Option<f64>) -> Result<Sat, SolverError> {
        self.calls.push("check");
        Ok(self.sat(smt, timeout_s))
    }

    fn check_also(&mut self, smt: &str, timeout_s: Option<f64>) -> Result<Sat, SolverError> {
        self.calls.push("check_also");
        Ok(self.sat(smt, timeout_s))
    }

    fn core(&mut self) -> Result<Vec<String>, SolverError> {
        self.calls.push("core");
        self.send("(get-unsat-core)\n");
        let a = self.answer();
        Ok(a.trim_matches(|c| c == '(' || c == ')')
            .split_whitespace()
            .map(str::to_string)
            .collect())
    }

    fn values(&mut self, terms: &[String]) -> Result<Vec<ModelValue>, SolverError> {
        self.calls.push("values");
        let mut out = Vec::new();
        // One term at a time: each answer is `((term value))`, the value last.
        for t in terms {
            self.send(&format!("(get-value ({t}))\n"));
            let a = self.answer();
            let inner = a.trim().strip_suffix("))").unwrap();
            // The value is the last s-expression of the pair.
            let v = last_sexp(inner);
            out.push(value(v));
        }
        Ok(out)
    }

    fn done(&mut self) -> Result<(), SolverError> {
        self.calls.push("done");
        self.send("(pop 1)\n");
        Ok(())
    }
}

/// The last s-expression of `text` (an atom, or a parenthesised one).
fn last_sexp(text: &str) -> &str {
    let t = text.trim_end();
    if t.ends_with(')') {
        let mut depth = 0;
        for (k, c) in t.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        return &t[k..];
                    }
                }
                _ => {}
            }
        }
        t
    } else {
        t.rsplit(|c: char| c.is_whitespace() || c == '(')
            .next()
            .unwrap()
    }
}

fn options(a: &Analysis, bit: bool, timeout_s: f64, paths: Option<usize>) -> RunOptions {
    let n = nicsim_xdp::paths::naive(&a.dag, &a.target);
    RunOptions {
        timeout_s,
        spent_s: 0.0,
        naive: if bit { n.bps } else { n.pps },
        paths,
        length_bound: true,
        tick_s: 1.0,
    }
}

fn search(name: &str, bit: bool, slv: &mut dyn Solver, paths: Option<usize>) -> Outcome {
    let a = analysis(name, None).unwrap();
    let o = options(&a, bit, 60.0, paths);
    let mut s = Search::new(a, bit);
    run(&mut s, slv, &o, &mut |_, _, _| Ok(())).unwrap()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|k| u8::from_str_radix(&s[k..k + 2], 16).unwrap())
        .collect()
}

/// The example of `path` through the interpreter, with its map entries: it must take the
/// path's instructions and return its action.
fn check_example(name: &str, path: &PathInfo, example: &nicsim_xdp::ssp::Example) {
    let p = nicsim_xdp::load(&obj(name), None).unwrap();
    let mut maps = MapState::new(&p);
    for e in &example.entries {
        if let ExampleEntry::Lookup {
            key_hex,
            map,
            present: true,
            value_hex,
        } = e
        {
            maps.set(map, &hex(key_hex), &hex(value_hex)).unwrap();
        }
    }
    let packet = hex(&example.packet_hex);
    // The time, random numbers and CPU the model chose are replayed.
    let opts = InterpOptions {
        replay: example.replay(),
        ..InterpOptions::default()
    };
    let out = interp(&p, &packet, &mut maps, &opts).unwrap();
    assert_eq!(
        out.trace, path.insns,
        "{name}: the example does not take its path"
    );
    assert_eq!(out.retval as u32, example.retval, "{name}");
    assert_eq!(path.retval, Some(example.retval));
}

#[test]
fn packet_rate_ssp_examples_take_their_paths() {
    for name in ["parser", "tcp_options", "vlan_stack", "ipv6_ext", "env_age"] {
        let mut z = Z3::new();
        let out = search(name, false, &mut z, None);
        assert_eq!(
            (out.status.as_str(), out.stopped.as_str()),
            ("ssp", "ssp"),
            "{name}"
        );
        let ssp = out.ssp.as_ref().unwrap();
        check_example(name, &ssp.path, &ssp.example);
        // The paths refuted before it were slower, and the trace climbs to its rate.
        let pps = ssp.path.pps;
        assert!(out.trace.windows(2).all(|w| w[0][1] < w[1][1]), "{name}");
        let last = out.trace.last().unwrap()[1];
        assert!((last - pps).abs() <= pps * 1e-9, "{name}: {last} vs {pps}");
        assert!(out.bound.is_none());
    }
}

#[test]
fn the_conntrack_lookups_outcome_is_free_and_its_argument_checks_are_modelled() {
    // ld_kfunc_ct: the slowest path finds a connection and releases it (XDP_PASS); the
    // interpreter's default finds a zeroed entry, so the example takes that path.
    let out = search("ld_kfunc_ct", false, &mut Z3::new(), None);
    assert_eq!(out.status, "ssp");
    let ssp = out.ssp.as_ref().unwrap();
    assert_eq!(ssp.example.retval, 2);
    check_example("ld_kfunc_ct", &ssp.path, &ssp.example);
    // kf_ct_badargs: a bad tuple_len, then a bad opts_len: both lookups give NULL with the
    // errno the kernel sets, so only XDP_DROP is feasible (the paths through a found entry or
    // XDP_ABORTED are refuted).
    let out = search("kf_ct_badargs", false, &mut Z3::new(), None);
    assert_eq!(out.status, "ssp");
    assert!(out.unsat >= 1, "{}", out.unsat);
    let ssp = out.ssp.as_ref().unwrap();
    assert_eq!(ssp.example.retval, 1);
    check_example("kf_ct_badargs", &ssp.path, &ssp.example);
    // kf_ct_stateful: fields of the entry read as unknown values.
    let out = search("kf_ct_stateful", false, &mut Z3::new(), None);
    assert_eq!(out.status, "ssp");
}

#[test]
fn unsat_cores_refute_paths_and_prune_others() {
    // The switch parser's slowest path is infeasible, and its core's prefix holds thousands of
    // paths, which never reach the solver.
    let out = search("parser", false, &mut Z3::new(), None);
    assert!(
        out.unsat >= 1 && out.pruned >= 1000,
        "{} {}",
        out.unsat,
        out.pruned
    );
    // `calls`: many infeasible paths, each refuted by the solver.
    let mut z = Z3::new();
    let out = search("calls", false, &mut z, None);
    assert!(out.unsat >= 10, "{}", out.unsat);
    let ssp = out.ssp.as_ref().unwrap();
    check_example("calls", &ssp.path, &ssp.example);
    let checks = z.calls.iter().filter(|c| **c == "check").count() as u64;
    assert_eq!(
        checks,
        out.unsat + 1,
        "one check per refuted path and one for the SSP"
    );
    // Every check is popped.
    let pushes = z.calls.iter().filter(|c| c.starts_with("check")).count();
    let pops = z.calls.iter().filter(|c| **c == "done").count();
    assert_eq!(pushes, pops);
}

#[test]
fn bit_rate_finds_the_exact_minimum_packet_and_uses_length_lemmas() {
    for name in ["tcp_options", "ipv6_ext", "vlan_stack", "parser"] {
        let mut z = Z3::new();
        let out = search(name, true, &mut z, None);
        assert_eq!(out.status, "ssp", "{name}");
        let ssp = out.ssp.as_ref().unwrap();
        check_example(name, &ssp.path, &ssp.example);
        // The example is the shortest packet the path takes (the minimum is proven: the check
        // one byte shorter was unsat), and the guarantee is the path's rate at that length.
        let mps = ssp.path.min_packet_bytes;
        assert_eq!(ssp.example.packet_hex.len() as u64 / 2, mps, "{name}");
        let key = ssp.path.key.unwrap();
        let pps = ssp.path.pps;
        assert!(
            (key - pps * 8.0 * mps as f64).abs() <= key * 1e-12,
            "{name}"
        );
        let pushes = z.calls.iter().filter(|c| c.starts_with("check")).count();
        let pops = z.calls.iter().filter(|c| **c == "done").count();
        assert_eq!(pushes, pops, "{name}");
    }
}

#[test]
fn bit_rate_search_over_a_packet_walking_loop_finishes_in_few_paths() {
    // Eight TCP options of lengths from the packet, not unrolled by clang: without length
    // lemmas the search checked 82,000 paths in 60 s without an SSP.
    let mut z = Z3::new();
    let out = search("tcp_options", true, &mut z, None);
    assert_eq!(out.status, "ssp");
    assert!(out.enumerated <= 20, "{} paths", out.enumerated);
}

#[test]
fn more_paths_come_slowest_first_and_each_example_takes_its_path() {
    let mut z = Z3::new();
    let out = search("parser", false, &mut z, Some(6));
    assert_eq!(out.status, "ssp");
    assert_eq!(out.slowest.len(), 6);
    assert_eq!(out.slowest_stopped.as_deref(), Some("paths"));
    let ssp = out.ssp.as_ref().unwrap();
    assert_eq!(out.slowest[0].path.insns, ssp.path.insns);
    let rates: Vec<f64> = out.slowest.iter().map(|p| p.path.pps).collect();
    assert!(rates.windows(2).all(|w| w[0] <= w[1]), "{rates:?}");
    for p in &out.slowest {
        check_example("parser", &p.path, &p.example);
    }
    // A program with fewer satisfiable paths than asked: the search runs out of them.
    let mut z = Z3::new();
    let out = search("vlan_stack", false, &mut z, Some(1000));
    assert_eq!(out.slowest_stopped.as_deref(), Some("exhausted"));
    assert!(!out.slowest.is_empty() && out.slowest.len() < 1000);
}

/// Maps of maps (`tests/xdp/map_in_map_acl.c`, `ld_map_in_map.c`): every satisfiable path is
/// found (none the kernel can take is refuted: the outer lookup finds the inner map or NULL,
/// the inner lookups their own entries), and each example, with its outer and inner map
/// entries, takes its path through the interpreter. map_in_map_acl: 2 paths pass before the
/// lookups (the three too-short-packet drops are refuted: frames have 60 bytes), then the
/// per-port counter map absent or present (its slot-0 lookup in an array never fails) times
/// 5 (VLAN past 15, tenant map absent, source absent, verdict XDP_TX or not); ld_map_in_map:
/// the outer slot empty, or filled (its inner array's slot-0 lookup never fails); mim_fallback:
/// the flow seen or not (the LRU from the CPU's slot or the fallback: its lookup costs as the
/// worst of the program's maps, the pointer being one of two after the join).
#[test]
fn map_of_maps_paths_are_all_found_and_their_examples_take_them() {
    for (name, want) in [
        ("map_in_map_acl", 12),
        ("ld_map_in_map", 2),
        ("mim_fallback", 4),
    ] {
        let mut z = Z3::new();
        let out = search(name, false, &mut z, Some(1000));
        assert_eq!(out.status, "ssp", "{name}");
        assert_eq!(out.slowest_stopped.as_deref(), Some("exhausted"), "{name}");
        assert_eq!(out.slowest.len(), want, "{name}");
        for p in &out.slowest {
            check_example(name, &p.path, &p.example);
        }
    }
}

/// Maps of maps whose slots alias (`tests/xdp/mim_alias.c`): one map in two slots, or a map the
/// program also uses directly. For each of its three operations (packet byte 0 = 1, 2, 3) the
/// kernel can give XDP_TX (the maps are one) and XDP_DROP (they are two), so the search must
/// find both as satisfiable paths. A model that let a write through one handle show (or not
/// show) through another would refute one of them.
#[test]
fn aliased_inner_maps_refute_no_outcome_the_kernel_gives() {
    let mut z = Z3::new();
    let out = search("mim_alias", false, &mut z, Some(1000));
    assert_eq!(out.status, "ssp");
    assert_eq!(out.slowest_stopped.as_deref(), Some("exhausted"));
    let mut seen = std::collections::BTreeSet::new();
    for p in &out.slowest {
        let op = hex(&p.example.packet_hex)[0];
        seen.insert((op, p.example.retval));
    }
    for op in 1..=3u8 {
        for action in [1u32, 3] {
            assert!(
                seen.contains(&(op, action)),
                "op {op}: XDP action {action} refuted: {seen:?}"
            );
        }
    }
}

/// A solver that answers as Z3 does until its `fail_at`-th call, which fails as `error` says.
struct Failing {
    z: Z3,
    n: usize,
    fail_at: usize,
    error: SolverError,
    unknown: bool,
}

impl Failing {
    fn step(&mut self) -> Result<(), SolverError> {
        self.n += 1;
        if self.n == self.fail_at {
            return Err(self.error.clone());
        }
        Ok(())
    }
}

impl Solver for Failing {
    fn check(&mut self, smt: &str, t: Option<f64>) -> Result<Sat, SolverError> {
        self.step()?;
        let r = self.z.check(smt, t)?;
        Ok(if self.unknown { Sat::Unknown } else { r })
    }
    fn check_also(&mut self, smt: &str, t: Option<f64>) -> Result<Sat, SolverError> {
        self.step()?;
        self.z.check_also(smt, t)
    }
    fn core(&mut self) -> Result<Vec<String>, SolverError> {
        self.step()?;
        self.z.core()
    }
    fn values(&mut self, terms: &[String]) -> Result<Vec<ModelValue>, SolverError> {
        self.step()?;
        self.z.values(terms)
    }
    fn done(&mut self) -> Result<(), SolverError> {
        self.z.done()
    }
}

#[test]
fn a_stopped_solver_ends_the_search_with_a_valid_bound() {
    let stopped = SolverError::Stopped {
        reason: "memory".into(),
        message: "memory: the solver process ended".into(),
    };
    let a = analysis("calls", None).unwrap();
    let o = options(&a, false, 60.0, None);
    let naive = o.naive;
    let mut s = Search::new(a, false);
    let mut slv = Failing {
        z: Z3::new(),
        n: 0,
        fail_at: 11,
        error: stopped,
        unknown: false,
    };
    let out = run(&mut s, &mut slv, &o, &mut |_, _, _| Ok(())).unwrap();
    assert_eq!(
        (out.status.as_str(), out.stopped.as_str()),
        ("timeout", "memory")
    );
    assert_eq!(
        out.solver_ended.as_deref(),
        Some("memory: the solver process ended")
    );
    assert!(out.ssp.is_none());
    // The bound counts the path being checked: at most the SSP's rate, at least the naive one.
    let bound = out.bound.unwrap();
    assert!(out.unsat >= 5, "{}", out.unsat);
    let full = search("calls", false, &mut Z3::new(), None);
    let ssp = full.ssp.unwrap().path.pps;
    assert!(
        bound >= naive && bound <= ssp * (1.0 + 1e-12),
        "{naive} {bound} {ssp}"
    );

    // `unknown` (the solver's time ran out on a path) stops it the same way.
    let a = analysis("calls", None).unwrap();
    let mut s = Search::new(a, false);
    let mut slv = Failing {
        z: Z3::new(),
        n: 0,
        fail_at: 0,
        error: SolverError::Host(String::new()),
        unknown: true,
    };
    let out = run(&mut s, &mut slv, &o, &mut |_, _, _| Ok(())).unwrap();
    assert_eq!(
        (out.status.as_str(), out.stopped.as_str()),
        ("timeout", "timeout")
    );
    assert_eq!(out.bound, Some(naive));
    assert_eq!(out.trace.len(), 1);

    // The host's failure ends the run with it.
    let a = analysis("calls", None).unwrap();
    let mut s = Search::new(a, false);
    let mut slv = Failing {
        z: Z3::new(),
        n: 0,
        fail_at: 3,
        error: SolverError::Host("interrupted".into()),
        unknown: false,
    };
    assert_eq!(
        run(&mut s, &mut slv, &o, &mut |_, _, _| Ok(())).unwrap_err(),
        "interrupted"
    );
    // And so does the progress callback's.
    let a = analysis("parser", None).unwrap();
    let o = options(&a, false, 60.0, None);
    let mut s = Search::new(a, false);
    let err = run(
        &mut s,
        &mut Z3::new(),
        &o,
        &mut |_, _, _| Err("stop".into()),
    )
    .unwrap_err();
    assert_eq!(err, "stop");
}

#[test]
fn no_time_left_gives_the_naive_bound() {
    let a = analysis("parser", None).unwrap();
    let mut o = options(&a, false, 1.0, None);
    o.spent_s = 1.0;
    let naive = o.naive;
    let mut s = Search::new(a, false);
    let mut z = Z3::new();
    let out = run(&mut s, &mut z, &o, &mut |_, _, _| Ok(())).unwrap();
    assert_eq!(
        (out.status.as_str(), out.stopped.as_str()),
        ("timeout", "timeout")
    );
    assert!(z.calls.is_empty());
    assert_eq!(out.enumerated, 0);
    assert!(out.bound.is_none_or(|b| b >= naive));
}

#[test]
fn the_progress_callback_sees_every_rise_of_the_bound() {
    let a = analysis("parser", None).unwrap();
    let o = options(&a, false, 60.0, None);
    let mut s = Search::new(a, false);
    let mut seen = Vec::new();
    let mut counts = Vec::new();
    let out = run(&mut s, &mut Z3::new(), &o, &mut |t, b, c| {
        seen.push([t, b]);
        counts.push(c);
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, out.trace[1..]);
    // What the search had done each time, never less than before, up to what it reports.
    assert!(counts.windows(2).all(|w| w[0].checked <= w[1].checked
        && w[0].infeasible <= w[1].infeasible
        && w[0].pruned <= w[1].pruned));
    let last = counts.last().expect("the bound rose");
    assert!(
        last.checked <= out.checked && last.infeasible <= out.unsat && last.pruned <= out.pruned
    );
    assert!(out.unsat <= out.checked && out.checked <= out.enumerated);
}

/// A solver that must not be asked.
struct Unused;

impl Solver for Unused {
    fn check(&mut self, _: &str, _: Option<f64>) -> Result<Sat, SolverError> {
        panic!("asked")
    }
    fn check_also(&mut self, _: &str, _: Option<f64>) -> Result<Sat, SolverError> {
        panic!("asked")
    }
    fn core(&mut self) -> Result<Vec<String>, SolverError> {
        panic!("asked")
    }
    fn values(&mut self, _: &[String]) -> Result<Vec<ModelValue>, SolverError> {
        panic!("asked")
    }
    fn done(&mut self) -> Result<(), SolverError> {
        panic!("asked")
    }
}

#[test]
fn a_tail_call_into_undeclared_programs_is_unbounded_without_a_search() {
    let opts = Options {
        section: Some("xdp".into()),
        ..Options::default()
    };
    let a = Analysis::new(&obj("tail_unknown"), nfp(), &opts).unwrap();
    let mut s = Search::new(a, false);
    let o = RunOptions {
        timeout_s: 60.0,
        spent_s: 0.0,
        naive: 0.0,
        paths: Some(3),
        length_bound: true,
        tick_s: 1.0,
    };
    let out = run(&mut s, &mut Unused, &o, &mut |_, _, _| Ok(())).unwrap();
    assert_eq!(
        (out.status.as_str(), out.stopped.as_str()),
        ("unbounded", "unbounded")
    );
    assert!(out.bound.is_none() && out.ssp.is_none() && out.trace.is_empty());
    assert_eq!(out.slowest_stopped.as_deref(), Some("unbounded"));
}

/// A solver that answers `unsat` to every check with the packet's length bounded (its core:
/// the bound), and as Z3 otherwise: it says no later path can be slower than the one found.
struct NeverShorter(Z3);

impl Solver for NeverShorter {
    fn check(&mut self, smt: &str, t: Option<f64>) -> Result<Sat, SolverError> {
        let r = self.0.check(smt, t)?;
        Ok(if smt.contains(nicsim_xdp::ssp::LEN_BOUND) {
            Sat::Unsat
        } else {
            r
        })
    }
    fn check_also(&mut self, smt: &str, t: Option<f64>) -> Result<Sat, SolverError> {
        let r = self.0.check_also(smt, t)?;
        Ok(if smt.contains("bvule") { Sat::Unsat } else { r })
    }
    fn core(&mut self) -> Result<Vec<String>, SolverError> {
        Ok(vec![nicsim_xdp::ssp::LEN_BOUND.to_string()])
    }
    fn values(&mut self, terms: &[String]) -> Result<Vec<ModelValue>, SolverError> {
        self.0.values(terms)
    }
    fn done(&mut self) -> Result<(), SolverError> {
        self.0.done()
    }
}

#[test]
fn the_bounded_length_check_and_length_lemmas_change_no_result() {
    // In bit-rate mode, once a satisfiable path is known, a later one is first checked with
    // the packet no longer than would make it slower, and the unsat core of that check becomes
    // a length lemma that passes later paths without the solver. Without it (every later
    // path's exact minimum searched, no lemma) the result is the same. The RTP transcoder's
    // first satisfiable path needs a longer packet than its static size, so the search goes on
    // past it, and a later path is slower (a bound that passed every later path would miss it).
    let run_with = |slv: &mut dyn Solver, length_bound: bool| {
        let t = nfp().without_mac_limit(); // the paper's setting (§6)
        let opts = Options {
            memory_budget_bytes: None,
            ..Options::default()
        };
        let a = Analysis::new(&obj("rtp_alaw_opt"), t, &opts).unwrap();
        let mut o = options(&a, true, 120.0, None);
        o.length_bound = length_bound;
        let mut s = Search::new(a, true);
        run(&mut s, slv, &o, &mut |_, _, _| Ok(())).unwrap()
    };
    let bounded = run_with(&mut Z3::new(), true);
    let unbounded = run_with(&mut Z3::new(), false);
    let ssp = |o: &Outcome| {
        let p = o.ssp.as_ref().unwrap();
        (
            p.path.insns.clone(),
            p.path.min_packet_bytes,
            p.example.packet_hex.clone(),
        )
    };
    assert_eq!(bounded.status, "ssp");
    assert_eq!(bounded.ssp.as_ref().unwrap().path.min_packet_bytes, 213);
    assert_eq!(ssp(&bounded), ssp(&unbounded));
    // A lemma on a prefix of the graph also keeps paths through it from being handed out.
    assert!(bounded.enumerated <= unbounded.enumerated);
    // Paths passed by a lemma (rtp_alaw_opt refutes none, so none is pruned otherwise).
    assert!(bounded.pruned > 0 && unbounded.pruned == 0 && bounded.unsat == 0);
    // The check matters: a solver that says no shorter packet takes any later path gives
    // another (wrong) answer.
    let lied = run_with(&mut NeverShorter(Z3::new()), true);
    assert_ne!(ssp(&lied), ssp(&bounded));
}

/// A search that prunes for a long time without the solver calls its tick between stretches of
/// `tick_s`, and ends with the tick's error: the binding's tick looks for SIGTERM and Ctrl-C,
/// which the paper's path explosion (bit rate) ignored for the rest of its 60-s timeout.
#[test]
fn the_tick_is_called_while_paths_are_pruned_and_its_error_ends_the_run() {
    let a = analysis("path_explosion", None).unwrap();
    let mut o = options(&a, true, 60.0, None);
    o.tick_s = 0.0;
    let mut s = Search::new(a, true);
    let mut z = Z3::new();
    let t0 = std::time::Instant::now();
    let mut ticks = 0;
    let err = run_with_tick(&mut s, &mut z, &o, &mut |_, _, _| Ok(()), &mut || {
        ticks += 1;
        Err("interrupted".into())
    })
    .unwrap_err();
    assert_eq!((err.as_str(), ticks), ("interrupted", 1));
    assert!(t0.elapsed().as_secs_f64() < 30.0, "{:?}", t0.elapsed());
}

#[test]
fn examples_carry_the_environment_the_model_chose() {
    // env_age's slowest path needs a fresh entry (now - seen <= 30 s) and the sample
    // (prandom & 0xff == 7): the example lists the time and the random number, in call order,
    // the random number within a u32, and the interpreter replaying them takes the path
    // (packet_rate_ssp_examples_take_their_paths checks that).
    let mut z = Z3::new();
    let out = search("env_age", false, &mut z, None);
    let ex = &out.ssp.as_ref().expect("an SSP").example;
    let names: Vec<&str> = ex
        .helper_results
        .iter()
        .map(|h| h.helper.as_str())
        .collect();
    assert_eq!(names, ["bpf_ktime_get_ns", "bpf_get_prandom_u32"]);
    let random = ex.helper_results[1].value;
    assert!(
        random <= u32::MAX as u64 && random & 0xff == 7,
        "{random:#x}"
    );
    assert_eq!(ex.retval, 1, "the sample drops");
}
