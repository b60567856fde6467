//! nicsim-py: the PyO3 bindings, and the only crate that knows about Python.
//!
//! It converts types and maps errors: a configuration problem becomes `nicsim.ConfigError`
//! (key path and message), any other bad input `nicsim.InputError`. Everything else lives in
//! the pure-Rust crates.

#![warn(missing_docs)]

mod flow;
mod router;

use std::path::PathBuf;

use nicsim_datapath::{Config, Datapath as Model, Validate};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(
    _core,
    ConfigError,
    PyValueError,
    "A configuration value is missing, unknown or wrong."
);
create_exception!(
    _core,
    InputError,
    PyValueError,
    "An input file (capture, rule set, ...) is unusable."
);

fn parse_config(config_json: &str) -> PyResult<Config> {
    Config::from_json(config_json).map_err(|e| ConfigError::new_err((e.path, e.msg)))
}

/// A datapath simulation that can be run in slices and reconfigured between them.
#[pyclass(unsendable)]
struct Datapath {
    model: Model,
}

#[pymethods]
impl Datapath {
    /// Build from a configuration (JSON text). `egress_pcap`: write delivered packets there.
    /// `log_packets`: keep a record of every delivered packet ([`Datapath::take_packets`]).
    #[new]
    #[pyo3(signature = (config_json, egress_pcap=None, log_packets=false))]
    fn new(config_json: &str, egress_pcap: Option<PathBuf>, log_packets: bool) -> PyResult<Self> {
        let mut cfg = parse_config(config_json)?;
        // An egress capture needs frames: without this, a timing run wrote an empty capture.
        cfg.measure.egress_pcap |= egress_pcap.is_some();
        let mut model = Model::new(cfg).map_err(InputError::new_err)?;
        if log_packets {
            model.log_packets();
        }
        if let Some(path) = egress_pcap {
            model.capture_egress(&path).map_err(InputError::new_err)?;
        }
        Ok(Datapath { model })
    }

    /// Run to simulated time `until_us` (to the end when omitted). True when the run is over.
    /// It runs in slices of 50 µs so that Ctrl-C is seen between them. The model is not `Send`
    /// (unsendable): it runs with the GIL held, and sweeps run in processes.
    #[pyo3(signature = (until_us=None))]
    fn run(&mut self, py: Python<'_>, until_us: Option<f64>) -> PyResult<bool> {
        nicsim_kernel::run_in_slices(&mut self.model, until_us, 50.0, || py.check_signals())
    }

    /// Give flow `flow` a new offload chain; packets already parsed keep theirs.
    fn remap(&mut self, flow: &str, chain: Vec<String>) -> PyResult<()> {
        self.model.remap(flow, &chain).map_err(ConfigError::new_err)
    }

    /// The packet records kept since the last call, as columns of little-endian bytes (`id`
    /// u64, `flow` u16, `size_bytes` u32, `t_arrival`/`t_parse`/`t_rx` u64 ticks, `recircs` u8,
    /// `in_window` u8), and `ticks_per_us`.
    fn take_packets<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        use pyo3::types::{PyBytes, PyDict};
        fn le<T: Copy, const N: usize>(xs: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
            xs.iter().flat_map(|&x| f(x)).collect()
        }
        let log = self.model.take_packet_log();
        let d = PyDict::new(py);
        d.set_item("ticks_per_us", self.model.ticks_per_us())?;
        let cols: [(&str, Vec<u8>); 8] = [
            ("id", le(&log.id, u64::to_le_bytes)),
            ("flow", le(&log.flow, u16::to_le_bytes)),
            ("size_bytes", le(&log.size_bytes, u32::to_le_bytes)),
            ("t_arrival", le(&log.t_arrival, |t| t.ticks().to_le_bytes())),
            ("t_parse", le(&log.t_parse, |t| t.ticks().to_le_bytes())),
            ("t_rx", le(&log.t_rx, |t| t.ticks().to_le_bytes())),
            ("recircs", log.recircs.clone()),
            (
                "in_window",
                log.in_window.iter().map(|&b| b as u8).collect(),
            ),
        ];
        for (name, bytes) in cols {
            d.set_item(name, PyBytes::new(py, &bytes))?;
        }
        Ok(d)
    }

    /// Current simulated time in µs.
    #[getter]
    fn now_us(&self) -> f64 {
        self.model.now_us()
    }

    /// The summary so far, as JSON text.
    fn summary(&mut self) -> String {
        self.model.summary().to_string()
    }

    /// Finish the egress capture (flush and close it); later packets are not written.
    fn finish(&mut self) -> PyResult<()> {
        self.model
            .finish_egress_capture()
            .map_err(InputError::new_err)
    }
}

/// Validate a configuration (JSON text) and return Eq. 1's table as JSON.
#[pyfunction]
fn offload_units(config_json: &str) -> PyResult<String> {
    let cfg = parse_config(config_json)?;
    serde_json::to_string(&cfg.eq1_table()).map_err(|e| InputError::new_err(e.to_string()))
}

/// `--tail-call` entries as (map, index, program) tuples from Python.
/// The target (`--target`'s TOML, without the MAC limit unless `mac_limit`) and the options of
/// an analysis, as the analysis and the profile take them.
#[allow(clippy::too_many_arguments)]
fn analysis_inputs(
    target_toml: &str,
    target_file: &str,
    mac_limit: bool,
    section: Option<String>,
    program: Option<String>,
    loop_bound: Option<u32>,
    memory_mb: Option<u64>,
    map_sizes: Vec<(String, u32)>,
    tail_calls: Vec<(String, u32, String)>,
) -> PyResult<(nicsim_xdp::Target, nicsim_xdp::Options)> {
    let mut target = nicsim_xdp::Target::from_toml(target_toml, target_file)
        .map_err(|e| ConfigError::new_err((e.path, e.msg)))?;
    if !mac_limit {
        target = target.without_mac_limit();
    }
    let opts = nicsim_xdp::Options {
        section,
        program,
        loop_bound,
        memory_budget_bytes: nicsim_xdp::Options::memory_budget_mb(memory_mb),
        map_sizes,
        tail_calls: tail_specs(tail_calls),
    };
    Ok((target, opts))
}

fn tail_specs(v: Vec<(String, u32, String)>) -> Vec<nicsim_xdp::TailSpec> {
    v.into_iter()
        .map(|(map, index, program)| nicsim_xdp::TailSpec {
            map,
            index,
            program,
        })
        .collect()
}

/// The XDP analyzer's search (`nicsim_xdp::ssp`): built from the object, it gives the naive
/// bound, then `run` searches with a solver that Python adapts. `memory_mb` bounds the analysis
/// (its graph while it is built, then the graph and the search's state; not the solver):
/// `nicsim_xdp::Options::memory_budget_bytes`.
#[pyclass(unsendable)]
struct XdpSearch {
    s: nicsim_xdp::analysis::Search,
}

/// A Python solver (`nicsim.xdp.solver.SolverProcess`: `check`, `check_also`, `core`,
/// `values`, `done`) as a `nicsim_xdp::ssp::Solver`. Its `SolverStopped` becomes
/// `SolverError::Stopped`; any other exception is kept, and raised when the run returns.
struct PySolver<'py> {
    obj: Bound<'py, PyAny>,
    stopped: Bound<'py, PyAny>,
    err: Option<PyErr>,
}

impl PySolver<'_> {
    fn fail(&mut self, e: PyErr) -> nicsim_xdp::ssp::SolverError {
        let py = self.obj.py();
        if e.is_instance(py, &self.stopped) {
            let v = e.value(py);
            let reason = v
                .getattr("reason")
                .and_then(|r| r.extract::<String>())
                .unwrap_or_else(|_| "error".into());
            return nicsim_xdp::ssp::SolverError::Stopped {
                reason,
                message: v.to_string(),
            };
        }
        let msg = e.to_string();
        self.err = Some(e);
        nicsim_xdp::ssp::SolverError::Host(msg)
    }

    fn answer(
        &mut self,
        r: PyResult<Bound<'_, PyAny>>,
    ) -> Result<nicsim_xdp::ssp::Sat, nicsim_xdp::ssp::SolverError> {
        use nicsim_xdp::ssp::Sat;
        match r.and_then(|v| v.extract::<String>()) {
            Ok(a) if a == "sat" => Ok(Sat::Sat),
            Ok(a) if a == "unsat" => Ok(Sat::Unsat),
            Ok(_) => Ok(Sat::Unknown),
            Err(e) => Err(self.fail(e)),
        }
    }
}

impl nicsim_xdp::ssp::Solver for PySolver<'_> {
    fn check(
        &mut self,
        smt: &str,
        timeout_s: Option<f64>,
    ) -> Result<nicsim_xdp::ssp::Sat, nicsim_xdp::ssp::SolverError> {
        let r = self.obj.call_method1("check", (smt, timeout_s));
        self.answer(r)
    }

    fn check_also(
        &mut self,
        smt: &str,
        timeout_s: Option<f64>,
    ) -> Result<nicsim_xdp::ssp::Sat, nicsim_xdp::ssp::SolverError> {
        let r = self.obj.call_method1("check_also", (smt, timeout_s));
        self.answer(r)
    }

    fn core(&mut self) -> Result<Vec<String>, nicsim_xdp::ssp::SolverError> {
        self.obj
            .call_method0("core")
            .and_then(|v| v.extract::<Vec<String>>())
            .map_err(|e| self.fail(e))
    }

    fn values(
        &mut self,
        terms: &[String],
    ) -> Result<Vec<nicsim_xdp::ssp::ModelValue>, nicsim_xdp::ssp::SolverError> {
        use nicsim_xdp::ssp::ModelValue;
        let r = self
            .obj
            .call_method1("values", (terms.to_vec(),))
            .and_then(|vs| {
                vs.try_iter()?
                    .map(|v| {
                        let v = v?;
                        if v.is_instance_of::<pyo3::types::PyBool>() {
                            return Ok(ModelValue::Bool(v.extract()?));
                        }
                        // An int of any width: its bytes, least significant first.
                        let bits: usize = v.call_method0("bit_length")?.extract()?;
                        let bytes =
                            v.call_method1("to_bytes", (bits.div_ceil(8).max(1), "little"))?;
                        Ok(ModelValue::Bits(bytes.extract()?))
                    })
                    .collect::<PyResult<Vec<_>>>()
            });
        r.map_err(|e| self.fail(e))
    }

    fn done(&mut self) -> Result<(), nicsim_xdp::ssp::SolverError> {
        self.obj
            .call_method0("done")
            .map(|_| ())
            .map_err(|e| self.fail(e))
    }
}

#[pymethods]
impl XdpSearch {
    #[new]
    #[pyo3(signature = (obj, target_toml, target_file, section=None, loop_bound=None, bit_rate=false, memory_mb=None, mac_limit=true, program=None, map_sizes=Vec::new(), tail_calls=Vec::new()))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        obj: Vec<u8>,
        target_toml: &str,
        target_file: &str,
        section: Option<String>,
        loop_bound: Option<u32>,
        bit_rate: bool,
        memory_mb: Option<u64>,
        mac_limit: bool,
        program: Option<String>,
        map_sizes: Vec<(String, u32)>,
        tail_calls: Vec<(String, u32, String)>,
    ) -> PyResult<Self> {
        let (target, opts) = analysis_inputs(
            target_toml,
            target_file,
            mac_limit,
            section,
            program,
            loop_bound,
            memory_mb,
            map_sizes,
            tail_calls,
        )?;
        let a = py
            .detach(|| nicsim_xdp::Analysis::new(&obj, target, &opts))
            .map_err(|e| InputError::new_err(e.to_string()))?;
        let s = nicsim_xdp::analysis::Search::with_total_budget(a, bit_rate);
        Ok(XdpSearch { s })
    }

    /// The summary with the naive bound as the guarantee (JSON).
    fn naive(&self) -> String {
        self.s.a.naive_summary().to_string()
    }

    /// The search (`nicsim_xdp::ssp::run`) with `solver`; `progress(seconds, bound, checked,
    /// infeasible, pruned)` is called with each new bound and the paths checked by the solver,
    /// refuted by it, and pruned without it so far. Returns the outcome (JSON: `nicsim_xdp::ssp::Outcome`). An
    /// exception from the solver (other than its `SolverStopped`) or from `progress` is raised.
    #[pyo3(signature = (solver, timeout_s, spent_s, naive, paths=None, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        py: Python<'_>,
        solver: Bound<'_, PyAny>,
        timeout_s: f64,
        spent_s: f64,
        naive: f64,
        paths: Option<usize>,
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let stopped = py.import("nicsim.xdp.solver")?.getattr("SolverStopped")?;
        let mut slv = PySolver {
            obj: solver,
            stopped,
            err: None,
        };
        let mut progress_err = None;
        let mut tell = |at: f64, bound: f64, c: nicsim_xdp::ssp::Progress| -> Result<(), String> {
            match &progress {
                Some(f) => f
                    .call1((at, bound, c.checked, c.infeasible, c.pruned))
                    .map(|_| ())
                    .map_err(|e| {
                        let m = e.to_string();
                        progress_err = Some(e);
                        m
                    }),
                None => Ok(()),
            }
        };
        let o = nicsim_xdp::ssp::RunOptions {
            timeout_s,
            spent_s,
            naive,
            paths,
            length_bound: true,
            tick_s: nicsim_xdp::ssp::TICK_S,
        };
        // Ctrl-C and SIGTERM between ticks of a search that prunes without the solver (the
        // paper's path explosion went on for its whole timeout after a SIGTERM).
        let mut signal_err = None;
        let mut tick = || {
            py.check_signals().map_err(|e| {
                let m = e.to_string();
                signal_err = Some(e);
                m
            })
        };
        let r = nicsim_xdp::ssp::run_with_tick(&mut self.s, &mut slv, &o, &mut tell, &mut tick);
        match r {
            Ok(out) => Ok(serde_json::to_string(&out).expect("an outcome serialises")),
            Err(m) => Err(slv
                .err
                .take()
                .or(signal_err)
                .or(progress_err)
                .unwrap_or_else(|| pyo3::exceptions::PyRuntimeError::new_err(m))),
        }
    }

    /// Enumerate up to `limit` paths slowest first without a solver (benchmarks): returns how
    /// many, stopping early when none is left or after `timeout_s` seconds. With `edges`, each
    /// path's edge list is built too (as for a path sent to the solver).
    #[pyo3(signature = (limit, timeout_s, edges=false))]
    fn enumerate(&mut self, py: Python<'_>, limit: u64, timeout_s: f64, edges: bool) -> u64 {
        let deadline = std::time::Instant::now().checked_add(std::time::Duration::from_secs_f64(
            timeout_s.clamp(0.0, 1e9),
        ));
        let s = &mut self.s;
        py.detach(|| s.enumerate(limit, deadline, edges))
    }
}

/// The differential soundness check (`nicsim_xdp::differential`): an analysis on a target,
/// and for each case (packet, map entries) the paths its run takes, each as its query with the
/// case asserted. Python runs the solver (tests/test_xdp_differential.py).
#[pyclass(unsendable)]
struct XdpDifferential {
    d: nicsim_xdp::differential::Differential,
}

#[pymethods]
impl XdpDifferential {
    #[new]
    #[pyo3(signature = (obj, target_toml, target_file, section=None, loop_bound=None))]
    fn new(
        py: Python<'_>,
        obj: Vec<u8>,
        target_toml: &str,
        target_file: &str,
        section: Option<String>,
        loop_bound: Option<u32>,
    ) -> PyResult<Self> {
        let target = nicsim_xdp::Target::from_toml(target_toml, target_file)
            .map_err(|e| ConfigError::new_err((e.path, e.msg)))?;
        let opts = nicsim_xdp::Options {
            section,
            loop_bound,
            memory_budget_bytes: None,
            ..Default::default()
        };
        let a = py
            .detach(|| nicsim_xdp::Analysis::new(&obj, target, &opts))
            .map_err(|e| InputError::new_err(e.to_string()))?;
        Ok(XdpDifferential {
            d: nicsim_xdp::differential::Differential::new(a),
        })
    }

    /// The program's maps (JSON: `Differential::maps`).
    fn maps(&self) -> String {
        serde_json::to_string(&self.d.maps()).expect("maps serialise")
    }

    /// One case (JSON: `Differential::case`); map entries that do not fit raise
    /// `nicsim.InputError`.
    fn case(
        &self,
        py: Python<'_>,
        packet: &[u8],
        maps_json: &str,
        max_insns: u64,
        max_paths: usize,
    ) -> PyResult<String> {
        let d = &self.d;
        py.detach(|| d.case(packet, maps_json, max_insns, max_paths))
            .map(|c| serde_json::to_string(&c).expect("a case serialises"))
            .map_err(|e| InputError::new_err(e.to_string()))
    }
}

/// Run `packet` through the XDP program of `obj` (`section`, `program` as for the analyzer) with the map
/// entries of `maps_json` (the analyzer's summary.json "maps" format; a map may give only
/// "entries"; empty: none), executing at most `max_insns` instructions; the environment's
/// helpers (time, random numbers, CPU) give the values of `replay` first (an example's
/// `helper_results` as `(id, value)`, in call order). Returns JSON
/// `{"retval", "trace", "packet_hex", "insns", "maps", "maps_before"}`: `trace` numbers
/// instructions as `path.insns` does, `maps` is every map's contents afterwards in the input's
/// format, `maps_before` before the run (the input with the program's global data). A bad
/// object, map entry or packet, and a fault while running, raise `nicsim.InputError`.
#[pyfunction]
#[pyo3(signature = (obj, section, packet, maps_json, max_insns, program=None, tail_calls=Vec::new(), replay=Vec::new()))]
#[allow(clippy::too_many_arguments)]
fn xdp_run(
    py: Python<'_>,
    obj: &[u8],
    section: Option<&str>,
    packet: &[u8],
    maps_json: &str,
    max_insns: u64,
    program: Option<&str>,
    tail_calls: Vec<(String, u32, String)>,
    replay: Vec<(u32, u64)>,
) -> PyResult<String> {
    use nicsim_xdp::interp::{run, MapState, RunOptions};
    let tail = tail_specs(tail_calls);
    py.detach(|| -> Result<String, String> {
        let mut program =
            nicsim_xdp::load_full(obj, section, program, &tail).map_err(|e| e.to_string())?;
        MapState::size_from_json(&mut program, maps_json).map_err(|e| e.to_string())?;
        let mut maps = MapState::from_json(&program, maps_json).map_err(|e| e.to_string())?;
        let opts = RunOptions {
            max_insns,
            replay,
            ..RunOptions::default()
        };
        let before = maps.summary();
        let o = run(&program, packet, &mut maps, &opts).map_err(|e| e.to_string())?;
        let report = nicsim_xdp::summary::RunReport::new(o, before, maps.summary());
        Ok(serde_json::to_string(&report).expect("a run report serialises"))
    })
    .map_err(InputError::new_err)
}

/// Profile an XDP program on a capture (`nicsim_xdp::profile`): every packet of `capture` in
/// order through the interpreter, map state carried from `maps_json` (the analyzer's
/// summary.json "maps" format; empty: empty maps), each packet's path costed on the analysis's
/// graph for the target. Returns the profile as JSON (paths, counts, the costliest packets,
/// the sustained rate) and the per-packet columns as little-endian bytes: `ts_ns` (u64),
/// `bytes`, `action`, `path` (u32), `core`, `dram` (u64, millionths of a cycle). A bad object,
/// target, map entry or capture raises one line.
#[pyfunction]
#[pyo3(signature = (obj, target_toml, target_file, capture, maps_json="", section=None, program=None, loop_bound=None, mac_limit=true, map_sizes=Vec::new(), tail_calls=Vec::new(), memory_mb=None, maps_about="the maps", kernel=false))]
#[allow(clippy::too_many_arguments)]
fn xdp_profile<'py>(
    py: Python<'py>,
    obj: Vec<u8>,
    target_toml: &str,
    target_file: &str,
    capture: PathBuf,
    maps_json: &str,
    section: Option<String>,
    program: Option<String>,
    loop_bound: Option<u32>,
    mac_limit: bool,
    map_sizes: Vec<(String, u32)>,
    tail_calls: Vec<(String, u32, String)>,
    memory_mb: Option<u64>,
    maps_about: &str,
    kernel: bool,
) -> PyResult<(String, Bound<'py, pyo3::types::PyDict>)> {
    use nicsim_xdp::interp::MapState;
    use nicsim_xdp::profile::Profile;
    use pyo3::types::{PyBytes, PyDict};
    let (target, opts) = analysis_inputs(
        target_toml,
        target_file,
        mac_limit,
        section,
        program,
        loop_bound,
        memory_mb,
        map_sizes,
        tail_calls,
    )?;
    let (json, cols) = py
        .detach(|| -> Result<(String, [Vec<u8>; 8]), String> {
            let a = nicsim_xdp::Analysis::new(&obj, target.clone(), &opts)
                .map_err(|e| e.to_string())?;
            let mut program = a.program.clone();
            let bad_maps = |e: nicsim_xdp::interp::MapError| format!("{maps_about}: {e}");
            MapState::size_from_json(&mut program, maps_json).map_err(bad_maps)?;
            let maps = MapState::from_json(&program, maps_json).map_err(bad_maps)?;
            // --kernel: the program loaded once, with the same maps; each packet the
            // interpreter ran to its exit runs once more in the kernel, in order.
            let k = if kernel {
                let targets = nicsim_xdp::link::kernel_targets(&obj, &program, &opts.tail_calls)
                    .map_err(|e| e.to_string())?;
                let k = nicsim_xdp::kernel::Kernel::load_with_tails(&program, &targets)
                    .map_err(|e| format!("--kernel: {e}"))?;
                k.set_maps(&maps).map_err(|e| format!("--kernel: {e}"))?;
                Some(k)
            } else {
                None
            };
            let mut kernel_ns: Vec<u8> = Vec::new();
            let mut kernel_action: Vec<u8> = Vec::new();
            let mut kernel_error: Option<String> = None;
            let mut each = |index: u64, packet: &[u8], _action: u32| {
                let Some(k) = &k else { return };
                if kernel_error.is_some() {
                    return;
                }
                // Rows of packets the interpreter did not run stay NaN.
                while (kernel_ns.len() / 8) < index as usize {
                    kernel_ns.extend_from_slice(&f64::NAN.to_le_bytes());
                    kernel_action.extend_from_slice(&u32::MAX.to_le_bytes());
                }
                match k.run(packet, 1) {
                    Ok(r) => {
                        kernel_ns.extend_from_slice(&(r.duration_ns as f64).to_le_bytes());
                        kernel_action.extend_from_slice(&r.retval.to_le_bytes());
                    }
                    Err(e) => kernel_error = Some(format!("packet {index}: {e}")),
                }
            };
            let t0 = std::time::Instant::now();
            let mut p = Profile::new(&a, &program, &target, maps);
            p.capture_with(&capture, &mut each).map_err(|e| e.to_string())?;
            let seconds = t0.elapsed().as_secs_f64();
            if let Some(e) = kernel_error {
                return Err(format!("--kernel: {e}"));
            }
            if k.is_some() {
                while kernel_ns.len() / 8 < p.rows.len() {
                    kernel_ns.extend_from_slice(&f64::NAN.to_le_bytes());
                    kernel_action.extend_from_slice(&u32::MAX.to_le_bytes());
                }
            }
            let (rate, costed, mean_bytes) = p.sustained();
            let naive = nicsim_xdp::paths::naive(&a.dag, &target);
            let json = serde_json::json!({
                "program": program.name,
                "section": program.section,
                "packets": p.rows.len(),
                "costed": costed,
                "faults": p.faults,
                "fault_notes": p.fault_notes,
                "unmatched": p.unmatched,
                "unmatched_notes": p.unmatched_notes,
                "skipped_long": p.skipped_long,
                "padded": p.padded,
                "cut": p.cut,
                "relinked": p.relinked,
                "not_ethernet": p.not_ethernet,
                "capture_warnings": p.capture_warnings,
                "paths": p.paths,
                "top": p.top,
                "sustained": {"pps": rate.pps, "bottleneck": rate.bottleneck,
                               "bps": rate.pps * 8.0 * mean_bytes, "mean_packet_bytes": mean_bytes},
                "naive": {"pps": naive.pps, "bottleneck": naive.bottleneck,
                          "ns": 1e9 / nicsim_xdp::paths::naive(&a.dag, &target.clone().without_mac_limit()).pps},
                "mac_pps": target.limits.mac_pps,
                "min_packet_bytes": target.limits.min_packet_bytes,
                "max_packet_bytes": target.limits.mtu_bytes + 14,
                "seconds": seconds,
                "maps_after": p.maps().to_json(),
            })
            .to_string();
            let n = p.rows.len();
            let mut cols: [Vec<u8>; 8] = [
                Vec::with_capacity(8 * n),
                Vec::with_capacity(4 * n),
                Vec::with_capacity(4 * n),
                Vec::with_capacity(4 * n),
                Vec::with_capacity(8 * n),
                Vec::with_capacity(8 * n),
                kernel_ns,
                kernel_action,
            ];
            for r in &p.rows {
                cols[0].extend_from_slice(&r.ts_ns.to_le_bytes());
                cols[1].extend_from_slice(&r.bytes.to_le_bytes());
                cols[2].extend_from_slice(&r.action.to_le_bytes());
                cols[3].extend_from_slice(&r.path.to_le_bytes());
                cols[4].extend_from_slice(&r.cost[0].to_le_bytes());
                cols[5].extend_from_slice(&r.cost[1].to_le_bytes());
            }
            Ok((json, cols))
        })
        .map_err(InputError::new_err)?;
    let d = PyDict::new(py);
    for (name, c) in [
        "ts_ns",
        "bytes",
        "action",
        "path",
        "core",
        "dram",
        "kernel_ns",
        "kernel_action",
    ]
    .iter()
    .zip(cols)
    {
        d.set_item(name, PyBytes::new(py, &c))?;
    }
    Ok((json, d))
}

/// One example for [`xdp_well_formed`]: packet, maps JSON, path, action, environment replay.
type WellFormedCase = (Vec<u8>, String, Vec<u32>, u64, Vec<(u32, u64)>);

/// Example packets made well-formed (`nicsim_xdp::wellformed::polish`): for each case
/// `(packet, maps_json, trace, retval)` of the program of `obj` (`section`, `program`,
/// `tail_calls` as for `xdp_run`), the packet with the header fields its path does not decide
/// set as in a real packet, each kept only where the interpreter still executes `trace` and
/// returns `retval` from the map entries of `maps_json`, with the environment's results of
/// `replay` (the example's `helper_results` as `(id, value)`). A bad object or map entry raises
/// `nicsim.InputError`.
#[pyfunction]
#[pyo3(signature = (obj, section, program, tail_calls, cases))]
fn xdp_well_formed(
    py: Python<'_>,
    obj: &[u8],
    section: Option<&str>,
    program: Option<&str>,
    tail_calls: Vec<(String, u32, String)>,
    cases: Vec<WellFormedCase>,
) -> PyResult<Vec<Vec<u8>>> {
    use nicsim_xdp::interp::{MapState, RunOptions};
    let tail = tail_specs(tail_calls);
    py.detach(|| -> Result<Vec<Vec<u8>>, String> {
        let base =
            nicsim_xdp::load_full(obj, section, program, &tail).map_err(|e| e.to_string())?;
        cases
            .iter()
            .map(|(packet, maps_json, trace, retval, replay)| {
                let opts = RunOptions {
                    replay: replay.clone(),
                    ..RunOptions::default()
                };
                let mut program = base.clone();
                MapState::size_from_json(&mut program, maps_json).map_err(|e| e.to_string())?;
                let maps = MapState::from_json(&program, maps_json).map_err(|e| e.to_string())?;
                Ok(nicsim_xdp::wellformed::polish(
                    &program, &maps, packet, trace, *retval, &opts,
                ))
            })
            .collect()
    })
    .map_err(InputError::new_err)
}

/// An XDP program loaded into the running kernel (the verifier checks it), with the map entries
/// of `maps_json` (the analyzer's summary.json "maps" format; empty: none) written into its
/// maps. The kernel's refusal (the verifier's reason, missing privileges) raises
/// `nicsim.InputError` with one line.
#[pyclass(unsendable)]
struct XdpKernel {
    k: nicsim_xdp::kernel::Kernel,
}

#[pymethods]
impl XdpKernel {
    #[new]
    #[pyo3(signature = (obj, section=None, maps_json="", program=None, tail_calls=Vec::new()))]
    fn new(
        obj: &[u8],
        section: Option<&str>,
        maps_json: &str,
        program: Option<&str>,
        tail_calls: Vec<(String, u32, String)>,
    ) -> PyResult<Self> {
        let err = |e: String| InputError::new_err(e);
        let tail = tail_specs(tail_calls);
        let mut program =
            nicsim_xdp::load_full(obj, section, program, &tail).map_err(|e| err(e.to_string()))?;
        nicsim_xdp::interp::MapState::size_from_json(&mut program, maps_json)
            .map_err(|e| err(e.to_string()))?;
        let maps = nicsim_xdp::interp::MapState::from_json(&program, maps_json)
            .map_err(|e| err(e.to_string()))?;
        // Each tail-call target on its own, with the same maps.
        let targets = nicsim_xdp::link::kernel_targets(obj, &program, &tail)
            .map_err(|e| err(e.to_string()))?;
        let k = nicsim_xdp::kernel::Kernel::load_with_tails(&program, &targets)
            .map_err(|e| err(e.to_string()))?;
        k.set_maps(&maps)
            .map_err(|e| InputError::new_err(e.to_string()))?;
        Ok(XdpKernel { k })
    }

    /// One `BPF_PROG_TEST_RUN` of `packet`, `repeat` times: (XDP action, mean ns per run,
    /// the packet afterwards).
    #[pyo3(signature = (packet, repeat=1))]
    fn run(&self, packet: &[u8], repeat: u32) -> PyResult<(u32, u32, Vec<u8>)> {
        let r = self
            .k
            .run(packet, repeat)
            .map_err(|e| InputError::new_err(e.to_string()))?;
        Ok((r.retval, r.duration_ns, r.packet))
    }

    /// Set entry `key` of map `map` to `value` (per-CPU maps: every CPU's).
    fn set_entry(&self, map: &str, key: &[u8], value: &[u8]) -> PyResult<()> {
        self.k
            .set(map, key, value)
            .map_err(|e| InputError::new_err(e.to_string()))
    }

    /// Delete entry `key` of hash map `map` (absent: nothing happens).
    fn delete_entry(&self, map: &str, key: &[u8]) -> PyResult<()> {
        self.k
            .delete(map, key)
            .map_err(|e| InputError::new_err(e.to_string()))
    }

    /// The value of `key` in map `map` (per-CPU maps: CPU 0's), or None when absent.
    fn get_entry(&self, map: &str, key: &[u8]) -> PyResult<Option<Vec<u8>>> {
        self.k
            .get(map, key)
            .map_err(|e| InputError::new_err(e.to_string()))
    }

    /// `value` of map `map` as the kernel shows a value to user space: its kernel-managed
    /// fields (a lock, a timer) zeroed (`Kernel::hide_special`).
    fn hide_special(&self, map: &str, value: Vec<u8>) -> PyResult<Vec<u8>> {
        let mut value = value;
        self.k
            .hide_special(map, &mut value)
            .map_err(|e| InputError::new_err(e.to_string()))?;
        Ok(value)
    }

    /// `runs` single runs of `packet`, each from a fresh state: before each, the map entries of
    /// `restore` are written back (`(map, key, value)`; no value: delete the key). Runs are back
    /// to back, with nothing but those writes between them. Returns the kernel's time of each run
    /// (ns) and the first run (0-based) whose action or packet afterwards differs from `retval`
    /// and `expect` (its time is not kept; the runs stop there), or None.
    #[allow(clippy::type_complexity)]
    fn fresh_times(
        &self,
        py: Python<'_>,
        packet: Vec<u8>,
        runs: u32,
        restore: Vec<(String, Vec<u8>, Option<Vec<u8>>)>,
        retval: u32,
        expect: Vec<u8>,
    ) -> PyResult<(Vec<u32>, Option<u32>)> {
        let k = &self.k;
        py.detach(|| {
            let mut times = Vec::with_capacity(runs as usize);
            for i in 0..runs {
                for (map, key, value) in &restore {
                    match value {
                        Some(v) => k.set(map, key, v)?,
                        None => k.delete(map, key)?,
                    }
                }
                let r = k.run(&packet, 1)?;
                if r.retval != retval || r.packet != expect {
                    return Ok((times, Some(i)));
                }
                times.push(r.duration_ns);
            }
            Ok((times, None))
        })
        .map_err(|e: nicsim_xdp::kernel::KernelError| InputError::new_err(e.to_string()))
    }

    /// One single run of each of `packets` (`(packet, action, packet afterwards)`), in order,
    /// back to back on the map state the runs before leave, with nothing between them (the
    /// stream of docs/xdp.md, "What a program sustains"). Returns each run's time (ns) and the
    /// first run (0-based) whose action or packet afterwards differs from what it should give
    /// (the runs stop there), or None.
    #[allow(clippy::type_complexity)]
    fn stream_times(
        &self,
        py: Python<'_>,
        packets: Vec<(Vec<u8>, u32, Vec<u8>)>,
    ) -> PyResult<(Vec<u32>, Option<u32>)> {
        let k = &self.k;
        py.detach(|| {
            let mut times = Vec::with_capacity(packets.len());
            for (i, (packet, retval, expect)) in packets.iter().enumerate() {
                let r = k.run(packet, 1)?;
                if r.retval != *retval || &r.packet != expect {
                    return Ok((times, Some(i as u32)));
                }
                times.push(r.duration_ns);
            }
            Ok((times, None))
        })
        .map_err(|e: nicsim_xdp::kernel::KernelError| InputError::new_err(e.to_string()))
    }

    /// The kernel's time for `runs` single runs of each packet (ns, a list per packet).
    fn times(&self, py: Python<'_>, packets: Vec<Vec<u8>>, runs: u32) -> PyResult<Vec<Vec<u32>>> {
        let k = &self.k;
        py.detach(|| {
            packets
                .iter()
                .map(|p| {
                    (0..runs)
                        .map(|_| k.run(p, 1).map(|r| r.duration_ns))
                        .collect::<Result<Vec<_>, _>>()
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| InputError::new_err(e.to_string()))
    }
}

/// Run the `x86-jit` micro-benchmarks on the running kernel (`nicsim xdp calibrate`): JSON
/// `{"overhead_ns", "classes": [{"name", "ns", "what"}]}`. `progress` is called with each
/// class's name.
#[pyfunction]
fn xdp_calibrate(py: Python<'_>, progress: Py<PyAny>, budget_s: f64) -> PyResult<String> {
    let (classes, overhead_ns, refused) = nicsim_xdp::calibrate::calibrate(
        |name| {
            let _ = progress.call1(py, (name,));
        },
        std::time::Duration::from_secs_f64(budget_s.max(0.0)),
    )
    .map_err(|e| InputError::new_err(e.to_string()))?;
    let c = nicsim_xdp::summary::Calibration {
        classes,
        overhead_ns,
        refused,
    };
    Ok(serde_json::to_string(&c).expect("a calibration serialises"))
}

/// The kernel's time (ns) of `runs` single runs, back to back, of the empty program whose runs
/// give the x86-jit target's per-packet overhead (`nicsim_xdp::calibrate::empty_program`), with a
/// 64-byte packet: the accuracy study measures it as it measures paths.
#[pyfunction]
fn xdp_empty_times(py: Python<'_>, runs: u32) -> PyResult<Vec<u32>> {
    py.detach(|| {
        let k = nicsim_xdp::calibrate::empty_program()?;
        let packet = [0u8; 64];
        (0..runs)
            .map(|_| k.run(&packet, 1).map(|r| r.duration_ns))
            .collect::<Result<Vec<_>, _>>()
    })
    .map_err(|e: nicsim_xdp::kernel::KernelError| InputError::new_err(e.to_string()))
}

/// Ask the running kernel's verifier whether it loads the program (with the map sizes of
/// `maps_json`, the summary's "maps", and the tail-call targets): None when it does, else JSON
/// `{"reason", "insn", "line", "text"}` (`nicsim_xdp::kernel::Rejection`). A kernel that cannot
/// be asked (no privileges, a kfunc the loader does not load) raises `nicsim.InputError`.
#[pyfunction]
#[pyo3(signature = (obj, section=None, maps_json="", program=None, tail_calls=Vec::new()))]
fn xdp_verify(
    py: Python<'_>,
    obj: &[u8],
    section: Option<&str>,
    maps_json: &str,
    program: Option<&str>,
    tail_calls: Vec<(String, u32, String)>,
) -> PyResult<Option<String>> {
    let err = |e: String| InputError::new_err(e);
    let tail = tail_specs(tail_calls);
    let mut prog =
        nicsim_xdp::load_full(obj, section, program, &tail).map_err(|e| err(e.to_string()))?;
    nicsim_xdp::interp::MapState::size_from_json(&mut prog, maps_json)
        .map_err(|e| err(e.to_string()))?;
    let targets =
        nicsim_xdp::link::kernel_targets(obj, &prog, &tail).map_err(|e| err(e.to_string()))?;
    let r = py
        .detach(|| nicsim_xdp::kernel::verify(&prog, &targets))
        .map_err(|e| err(e.to_string()))?;
    Ok(r.map(|r| serde_json::to_string(&r).expect("a rejection serialises")))
}

/// Write `packets` (bytes each, timestamps 1 µs apart) to a pcap file.
/// The TOML text of a target built into nicsim (`nicsim_xdp::target::BUILTIN`).
#[pyfunction]
fn xdp_builtin_target(name: &str) -> PyResult<&'static str> {
    nicsim_xdp::target::builtin(name)
        .ok_or_else(|| InputError::new_err(format!("no built-in target '{name}'")))
}

/// Check a target (`nicsim_xdp::Target::from_toml`, the one check every use of a target
/// goes through): a ConfigError naming the key, or nothing.
#[pyfunction]
fn xdp_check_target(target_toml: &str, target_file: &str) -> PyResult<()> {
    nicsim_xdp::Target::from_toml(target_toml, target_file)
        .map(|_| ())
        .map_err(|e| ConfigError::new_err((e.path, e.msg)))
}

/// Every helper an XDP program may call and what the analyzer does with it, as JSON
/// (`nicsim_xdp::helpers::listing`).
#[pyfunction]
fn xdp_helper_rows() -> String {
    nicsim_xdp::helpers::listing().to_string()
}

/// Every kfunc an XDP program may call and what the analyzer does with it, as JSON
/// (`nicsim_xdp::helpers::kfuncs::listing`).
#[pyfunction]
fn xdp_kfunc_rows() -> String {
    nicsim_xdp::helpers::kfuncs::listing().to_string()
}

/// Write frames to a pcap file (`nicsim_packet::capture::write_pcap_file`).
#[pyfunction]
fn write_pcap(path: PathBuf, packets: Vec<Vec<u8>>) -> PyResult<()> {
    nicsim_packet::capture::write_pcap_file(&path, &packets)
        .map_err(|e| InputError::new_err(e.to_string()))
}

/// One layer of a dissected frame: name, offset, header bytes, (field, value) pairs.
type DissectedLayer = (String, usize, usize, Vec<(String, String)>);

/// A frame's headers layer by layer, as `tshark -V` names them
/// (`nicsim_packet::dissect::dissect`): the layers, and why it stopped early (None: it did not).
#[pyfunction]
fn packet_dissect(frame: &[u8]) -> (Vec<DissectedLayer>, Option<String>) {
    let d = nicsim_packet::dissect::dissect(frame);
    let layers = d
        .layers
        .into_iter()
        .map(|l| {
            let fields = l
                .fields
                .into_iter()
                .map(|f| (f.name.to_string(), f.value))
                .collect();
            (l.name.to_string(), l.offset, l.len, fields)
        })
        .collect();
    (layers, d.error.map(|e| e.to_string()))
}

/// Toeplitz RSS hash (for tests against the published vectors).
#[pyfunction]
fn toeplitz_hash(key: &[u8], data: &[u8]) -> u32 {
    nicsim_offloads::toeplitz_hash(key, data)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Datapath>()?;
    flow::register(m)?;
    router::register(m)?;
    m.add_class::<XdpSearch>()?;
    m.add_class::<XdpKernel>()?;
    m.add_class::<XdpDifferential>()?;
    m.add_function(wrap_pyfunction!(xdp_calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(xdp_empty_times, m)?)?;
    m.add_function(wrap_pyfunction!(xdp_verify, m)?)?;
    m.add_function(wrap_pyfunction!(offload_units, m)?)?;
    m.add_function(wrap_pyfunction!(toeplitz_hash, m)?)?;
    m.add_function(wrap_pyfunction!(write_pcap, m)?)?;
    m.add_function(wrap_pyfunction!(packet_dissect, m)?)?;
    m.add_function(wrap_pyfunction!(xdp_run, m)?)?;
    m.add_function(wrap_pyfunction!(xdp_profile, m)?)?;
    m.add_function(wrap_pyfunction!(xdp_well_formed, m)?)?;
    m.add_function(wrap_pyfunction!(xdp_builtin_target, m)?)?;
    m.add_function(wrap_pyfunction!(xdp_check_target, m)?)?;
    m.add_function(wrap_pyfunction!(xdp_helper_rows, m)?)?;
    m.add_function(wrap_pyfunction!(xdp_kfunc_rows, m)?)?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("InputError", m.py().get_type::<InputError>())?;
    Ok(())
}
