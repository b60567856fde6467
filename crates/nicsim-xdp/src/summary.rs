//! The XDP analyzer's results as types: the summary `nicsim xdp analyze` starts from (its
//! `summary.json`, which Python completes with the search's results), the paths and examples
//! the search finds, map contents, an interpreter run and the x86-jit calibration (docs/xdp.md,
//! "`summary.json`", and docs/summary-schema.md describe every field; Python's
//! `nicsim.xdp.summary` has the matching `TypedDict`s).
//!
//! [`Summary`] is serialized through `serde_json::Value` ([`Summary::to_value`]), so that its
//! keys come out sorted, as they did when it was a `json!` literal. The types that are
//! serialized straight to text inside another ([`PathInfo`], [`ExampleEntry`], [`RunReport`],
//! [`Calibration`], [`MapSummary`], [`ModelledMap`]) declare their fields in sorted order for the
//! same reason (a test checks that each comes out as through `Value`).

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};

use crate::calibrate::Measured;

/// The analysis summary with the naive bound as the guarantee ([`crate::Analysis::summary`]):
/// what `nicsim xdp analyze` writes before its search adds to it.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The program analysed.
    pub object: ObjectInfo,
    /// The target's name.
    pub target: String,
    /// The control-flow graph.
    pub graph: GraphSummary,
    /// The naive bound (rates null when [`Summary::unbounded`] is not empty).
    pub naive: Naive,
    /// The guarantee: here the naive bound (`naive-only`) or `unbounded`.
    pub guarantee: Guarantee,
    /// The naive bound's slowest path (the search replaces it with the SSP).
    pub path: PathSummary,
    /// The SSP's example packet as hex (null until the search finds one).
    pub example_packet_hex: Option<String>,
    /// The program's maps, by name.
    pub maps: BTreeMap<String, MapSummary>,
    /// Maps declared with `max_entries 0` and not given a size.
    pub unsized_maps: Vec<String>,
    /// What each prog array holds, by map name.
    pub prog_arrays: BTreeMap<String, ProgArraySlots>,
    /// The prog arrays whose contents nobody declared: the answer is unbounded.
    pub unbounded: Vec<String>,
    /// On a target with an offload ([`crate::target::Target::offload`]): whether the kernel's
    /// offload would load the program; absent on other targets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offload: Option<OffloadCheck>,
    /// Warnings, one line each.
    pub warnings: Vec<String>,
    /// Paths handed out by the enumeration (0 before the search).
    pub paths_enumerated: u64,
    /// Paths the solver refuted (0 before the search).
    pub paths_unsat: u64,
}

/// What the kernel's offload for a target's hardware says of a program ([`Summary::offload`]).
#[derive(Debug, Clone, Serialize)]
pub struct OffloadCheck {
    /// Whether it loads every helper, kfunc and map the program uses.
    pub loads: bool,
    /// What it refuses, one line per rule, naming the rule and what it refuses.
    pub refused: Vec<String>,
}

impl Summary {
    /// The summary as JSON with sorted keys.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a summary is plain data")
    }
}

/// The program analysed.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectInfo {
    /// Its ELF section.
    pub section: String,
    /// Its function name.
    pub program: String,
    /// Its instructions (an `LD_IMM64` counts once).
    pub insns: usize,
    /// The BTF file its CO-RE relocations were resolved against (`crate::core_reloc`); null
    /// for an object without CO-RE relocations.
    pub btf: Option<String>,
}

/// The control-flow graph, inlined and unrolled.
#[derive(Debug, Clone, Serialize)]
pub struct GraphSummary {
    /// Nodes of the loop-free graph.
    pub nodes: usize,
    /// Its edges.
    pub edges: usize,
    /// Nodes of the graph split by constants (the one searched).
    pub split_nodes: usize,
    /// Entry-to-exit paths, as a decimal string (it may exceed any JSON number).
    pub paths: String,
    /// The program's loops.
    pub loops: Vec<LoopSummary>,
}

/// One loop of the program.
#[derive(Debug, Clone, Serialize)]
pub struct LoopSummary {
    /// Instruction index of its header.
    pub insn: u32,
    /// The header's source line (`file:line`), when the object has line information.
    pub line: Option<String>,
    /// Times its back edges can be taken.
    pub bound: u32,
    /// The bound was found from the code (else it is `--loop-bound`).
    pub evident: bool,
    /// A `bpf_loop` call summarised: its callback analysed once (any of its calls) and that
    /// path counted `bound` times (`bound` is nr_loops's largest value, or the kernel's cap
    /// `BPF_MAX_LOOPS`, 8,388,608).
    pub summary: bool,
}

/// The naive bound: the slowest path, feasible or not.
#[derive(Debug, Clone, Serialize)]
pub struct Naive {
    /// Packets per second (null: unbounded).
    pub pps: Option<f64>,
    /// Bits per second (null: unbounded).
    pub bps: Option<f64>,
    /// What limits the packet rate: `mac`, `cores` or `dram` (null: unbounded).
    pub bottleneck: Option<&'static str>,
    /// The MPS class of the bit-rate bound, bytes (null: unbounded).
    pub min_packet_bytes: Option<u32>,
    /// MPS classes of the graph.
    pub mps_classes: usize,
    /// Groups they were bounded in (fewer than the classes only for very large graphs).
    pub mps_groups: usize,
}

/// The guarantee.
#[derive(Debug, Clone, Serialize)]
pub struct Guarantee {
    /// Packets per second (null: unbounded).
    pub pps: Option<f64>,
    /// Bits per second (null: unbounded).
    pub bps: Option<f64>,
    /// What limits the packet rate: `mac`, `cores` or `dram` (null: unbounded).
    pub bottleneck: Option<&'static str>,
    /// The packet size of the bit rate, bytes (null: unbounded).
    pub min_packet_bytes: Option<u32>,
    /// `naive-only` or `unbounded` here; the search makes it `ssp`, `timeout` or `exhausted`.
    pub status: &'static str,
}

/// A path's cost per component, cycles ([`crate::cost::COMPONENTS`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Cost {
    /// Cycles on the cores.
    pub cores: f64,
    /// Cycles on the DRAM engine.
    pub dram: f64,
}

impl Cost {
    /// From a cost vector in milli-cycles ([`crate::cost::UNITS_PER_CYCLE`]).
    pub fn of(cost: &[u64; crate::cost::NC]) -> Cost {
        let u = crate::cost::UNITS_PER_CYCLE;
        Cost {
            cores: cost[0] as f64 / u,
            dram: cost[1] as f64 / u,
        }
    }
}

/// A path's cost in one instruction class.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ClassCost {
    /// Cycles on the cores.
    pub cores: f64,
    /// Cycles on the DRAM engine.
    pub dram: f64,
    /// Instructions of the class on the path.
    pub insns: u64,
}

/// A path's cost on one source line, or, for instructions without a source line (an object
/// built without `-g`, or code the compiler gives line 0), on one run of consecutive
/// instructions: the path annotated as `perf annotate` annotates a function
/// ([`crate::analysis::Analysis::cost_by_line`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineCost {
    /// Its instructions' cycles on the cores (each at its own cost on the path).
    pub cores: f64,
    /// The same in nanoseconds on one core (cycles at the target's `cores.clock_mhz`).
    pub cores_ns: f64,
    /// Their cycles on the DRAM engine.
    pub dram: f64,
    /// The same in nanoseconds of the engine's time (cycles at its `dram.clock_mhz`; 0 on a
    /// target without a DRAM engine).
    pub dram_ns: f64,
    /// The helper calls on it: class name (`call bpf_map_lookup_elem (hash)`) → calls on the
    /// path.
    pub helpers: BTreeMap<String, u64>,
    /// The path's instructions on it (an instruction the path runs twice counts twice).
    pub insns: u64,
    /// `file:line` (the file's base name), or `insns A-B` for a run without a source line.
    pub line: String,
    /// Whether `line` is a source line (false: an instruction range).
    pub source: bool,
    /// The line's source text, trimmed (empty for an instruction range).
    pub text: String,
}

impl LineCost {
    /// A line (or run) with nothing on it yet.
    pub fn new(line: String, source: bool, text: String) -> LineCost {
        LineCost {
            cores: 0.0,
            cores_ns: 0.0,
            dram: 0.0,
            dram_ns: 0.0,
            helpers: BTreeMap::new(),
            insns: 0,
            line,
            source,
            text,
        }
    }
}

/// The reported path (`path` of the summary).
#[derive(Debug, Clone, Serialize)]
pub struct PathSummary {
    /// Instruction indices along it.
    pub insns: Vec<u32>,
    /// Its distinct source lines, in order of first appearance.
    pub source_lines: Vec<String>,
    /// Its cost.
    pub cost: Cost,
    /// Its cost by instruction class, by class name.
    pub cost_by_class: BTreeMap<String, ClassCost>,
    /// Its cost by source line (or instruction range), in the order the path first reaches
    /// each; they add up to `cost`.
    pub lines: Vec<LineCost>,
    /// Its minimum packet size, bytes.
    pub min_packet_bytes: u32,
    /// Whether a packet takes it (null: not checked, as for the naive path).
    pub feasible: Option<bool>,
    /// The example's XDP action (null without an example).
    pub xdp_action: Option<String>,
    /// The example's return value (null without an example).
    pub retval: Option<u32>,
}

/// A map as the summary lists it: `{type, key_size, value_size, max_entries, entries}`, the
/// format `nicsim xdp validate` and the interpreter read back ([`crate::interp::MapState`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MapSummary {
    /// Entries, key hex → value hex.
    pub entries: BTreeMap<String, String>,
    /// Key bytes.
    pub key_size: u32,
    /// Its size (the declared one, or the one given).
    pub max_entries: u32,
    /// The map type's name (`hash`, `array`, …).
    #[serde(rename = "type")]
    pub map_type: &'static str,
    /// Value bytes.
    pub value_size: u32,
}

/// What a prog array holds: slot → `section/program`, or `"unknown"` when nothing declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgArraySlots {
    /// The slots the object (or `--tail-call`) fills.
    Known(BTreeMap<String, String>),
    /// Nobody declared them: any program may run.
    Unknown,
}

impl Serialize for ProgArraySlots {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ProgArraySlots::Known(slots) => slots.serialize(s),
            ProgArraySlots::Unknown => s.serialize_str("unknown"),
        }
    }
}

/// The path the search is checking ([`crate::analysis::Search::current_path`]), and, once
/// satisfiable, with its example's return value and its rank key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathInfo {
    /// What limits the packet rate: `mac`, `cores` or `dram`.
    pub bottleneck: &'static str,
    /// Bits per second at its minimum packet size (as the merger first gave it).
    pub bps: f64,
    /// Its cost.
    pub cost: Cost,
    /// Its cost by instruction class.
    pub cost_by_class: BTreeMap<String, ClassCost>,
    /// Instruction indices along it.
    pub insns: Vec<u32>,
    /// Its rate as the search ranks it (packets/s, or bits/s at its exact minimum packet size
    /// in bit-rate mode); set once it is found satisfiable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<f64>,
    /// Its cost by source line or instruction range ([`LineCost`]).
    pub lines: Vec<LineCost>,
    /// The target's MAC packet rate.
    pub mac_pps: f64,
    /// Its minimum packet size, bytes (in bit-rate mode, once satisfiable, the exact one).
    pub min_packet_bytes: u64,
    /// Packets per second.
    pub pps: f64,
    /// Its example's return value; set once it is found satisfiable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retval: Option<u32>,
    /// Its distinct source lines, in order of first appearance.
    pub source_lines: Vec<String>,
}

/// A map entry or a map size that an example needs ([`crate::ssp::Example`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ExampleEntry {
    /// The size the model gives a map declared with `max_entries 0`.
    Size {
        /// The map.
        map: String,
        /// Its size.
        max_entries: u64,
    },
    /// An entry looked up on the path.
    Lookup {
        /// Its key, hex.
        key_hex: String,
        /// The map.
        map: String,
        /// Whether the entry is there.
        present: bool,
        /// Its value, hex.
        value_hex: String,
    },
}

/// A map as the differential tester lists it ([`crate::differential::Differential::maps`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelledMap {
    /// Key bytes.
    pub key_size: u32,
    /// The map type's number.
    pub map_type: u32,
    /// Its size.
    pub max_entries: u32,
    /// The interpreter holds entries for it.
    pub modelled: bool,
    /// The program cannot write it (frozen).
    pub read_only: bool,
    /// The map type's name.
    #[serde(rename = "type")]
    pub type_name: &'static str,
    /// Value bytes.
    pub value_size: u32,
}

/// One interpreter run of a packet (`nicsim_xdp::interp::run` as `_core.xdp_run` returns it).
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// Instructions executed.
    pub insns: u64,
    /// Every map's contents afterwards.
    pub maps: BTreeMap<String, MapSummary>,
    /// Every map's contents before the run (the input with the program's global data).
    pub maps_before: BTreeMap<String, MapSummary>,
    /// The packet afterwards, hex.
    pub packet_hex: String,
    /// The program's return value.
    pub retval: u64,
    /// The instructions executed, numbered as `path.insns` numbers them.
    pub trace: Vec<u32>,
}

impl RunReport {
    /// The report of run `o`, with the maps before and after it.
    pub fn new(
        o: crate::interp::Outcome,
        maps_before: BTreeMap<String, MapSummary>,
        maps: BTreeMap<String, MapSummary>,
    ) -> RunReport {
        RunReport {
            insns: o.insns,
            maps,
            maps_before,
            packet_hex: o.packet.iter().map(|b| format!("{b:02x}")).collect(),
            retval: o.retval,
            trace: o.trace,
        }
    }
}

/// The x86-jit micro-benchmarks' results (`nicsim xdp calibrate`, before Python writes the
/// target file from them).
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    /// The measured classes.
    pub classes: Vec<Measured>,
    /// The per-packet overhead, ns.
    pub overhead_ns: f64,
    /// The helpers this kernel's verifier does not give XDP programs, so not timed.
    pub refused: Vec<crate::calibrate::Refused>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Straight to text and through `Value` (sorted keys) must give the same bytes.
    fn same<T: Serialize>(x: &T) {
        let direct = serde_json::to_string(x).unwrap();
        let sorted = serde_json::to_value(x).unwrap().to_string();
        assert_eq!(direct, sorted);
    }

    #[test]
    fn direct_types_have_sorted_fields() {
        assert_eq!(crate::cost::COMPONENTS, ["cores", "dram"]);
        let map = MapSummary {
            entries: BTreeMap::from([("00".into(), "01".into())]),
            key_size: 4,
            max_entries: 1,
            map_type: "array",
            value_size: 8,
        };
        let maps = BTreeMap::from([("m".to_string(), map)]);
        same(&RunReport {
            insns: 3,
            maps: maps.clone(),
            maps_before: maps,
            packet_hex: "00".into(),
            retval: 2,
            trace: vec![0, 1, 2],
        });
        let class = ClassCost {
            cores: 1.0,
            dram: 0.5,
            insns: 2,
        };
        same(&PathInfo {
            bottleneck: "cores",
            bps: 1.0,
            cost: Cost {
                cores: 1.0,
                dram: 0.5,
            },
            cost_by_class: BTreeMap::from([("alu".into(), class)]),
            insns: vec![0, 1],
            key: Some(2.0),
            lines: vec![LineCost {
                cores: 1.0,
                cores_ns: 1.25,
                dram: 0.5,
                dram_ns: 0.625,
                helpers: BTreeMap::from([("call bpf_ktime_get_ns".into(), 1)]),
                insns: 2,
                line: "a.c:1".into(),
                source: true,
                text: "x = 1;".into(),
            }],
            mac_pps: 3.0,
            min_packet_bytes: 60,
            pps: 4.0,
            retval: Some(2),
            source_lines: vec!["a.c:1".into()],
        });
        same(&ExampleEntry::Size {
            map: "m".into(),
            max_entries: 4,
        });
        same(&ExampleEntry::Lookup {
            key_hex: "00".into(),
            map: "m".into(),
            present: true,
            value_hex: "01".into(),
        });
        same(&ModelledMap {
            key_size: 4,
            map_type: 2,
            max_entries: 1,
            modelled: true,
            read_only: false,
            type_name: "array",
            value_size: 4,
        });
        same(&Calibration {
            classes: vec![Measured {
                name: "div".into(),
                ns: 1.5,
                what: "x".into(),
            }],
            overhead_ns: 10.0,
            refused: vec![crate::calibrate::Refused {
                name: "xdp_adjust_meta".into(),
                why: "program of this type cannot use helper bpf_xdp_adjust_meta#54".into(),
            }],
        });
        assert_eq!(
            serde_json::to_string(&ProgArraySlots::Unknown).unwrap(),
            "\"unknown\""
        );
    }
}
