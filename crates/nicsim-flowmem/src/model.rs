//! The SmartNIC memory model of "Packets are Not Pages" (seed 001): what reassembling and
//! processing a flow costs in DRAM traffic, cache hits and core cycles, for the copy-based design
//! and for flow-based addressing, on the same flow and workload.
//!
//! The parts, each from the talk's prototype (an Alveo U250 with OpenNIC and a MicroBlaze):
//! - the **Packet Handler** receives at line rate with metadata extraction: it takes each
//!   packet's flow, offset and length from its headers on the datapath, writes one
//!   translation-table entry on chip, and writes the payload into DRAM (at the arena address
//!   the reassembler gave it);
//! - **DRAM**: a latency, a transfer rate and a burst size; every access moves whole bursts;
//! - an **in-order core** with an **L1** data cache: each load or store goes through the L1; a
//!   miss stalls the core for the line (from DRAM, or from the L2 flow cache);
//! - the **flow cache controller** with its **realignment engine**: it reads a flow's segments
//!   from DRAM through the translation table and writes them, realigned, into the **L2 flow
//!   cache** at their stream offsets; either the whole bytestream before processing starts, or
//!   selectively, one flow-cache line when the core misses on it.
//!
//! Copy-based: the core copies the segments into a contiguous buffer in DRAM (word loads and
//! stores through the L1), then processes the buffer (loads through the L1 from DRAM).
//! Flow-based: the controller assembles the stream into the L2 flow cache (a window of the flow
//! cache's size at a time for a flow larger than it), and the core processes it from there
//! (loads through the L1 from the L2).
//!
//! Each step's [`Traffic`] counts what its mechanism touches: `receive` the Packet Handler's
//! payload writes; `assemble` the copy (segments read, buffer lines written back, whenever
//! evicted) or the controller's reads (each payload byte once); `process` the buffer read back,
//! or the lines selective retrieval fetches, and the regex's table.
//!
//! The model is trace-driven: it replays the exact addresses the two designs touch (for the
//! regex workload, the entries of the DFA's transition table the bytes select) through the
//! caches, and accumulates time in the kernel's integer ticks over the core, DRAM and engine
//! clocks. Every constant is a field of [`MemConfig`], read from a target TOML whose sources are
//! in docs/flowmem.md.

use nicsim_kernel::config::{check_range, check_timebase, ConfigError, Span, MAX_LATENCY_CYCLES};
use nicsim_kernel::time::{Clock, Timebase};
use regex_automata::dfa::{dense, Automaton};
use regex_automata::util::start;
use regex_automata::Anchored;
use serde::{Deserialize, Serialize};

use crate::arena::Arena;
use crate::reassembly::{Direction, Segment};
use crate::view::FlowView;
use crate::FlowError;

/// A set-associative cache's shape.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Line size in bytes (a power of two).
    pub line_bytes: u64,
    /// Associativity (1: direct-mapped).
    pub ways: u32,
}

/// The DRAM and its controller.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DramConfig {
    /// Controller clock.
    pub clock_mhz: u32,
    /// Bytes moved per controller cycle (the interface's bandwidth).
    pub bytes_per_cycle: u64,
    /// Cycles from a request to its first data.
    pub latency_cycles: u64,
    /// The unit every access is rounded out to.
    pub burst_bytes: u64,
}

/// The in-order core and the cycles its loops take per unit of work (cache hits included).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreConfig {
    /// Core clock.
    pub clock_mhz: u32,
    /// Width of the copy loop's loads and stores, and of the scan's loads.
    pub word_bytes: u64,
    /// Core cycles to bring an L1 line from the L2 flow cache (beyond the hit time).
    pub l2_hit_cycles: u64,
    /// Copy loop: cycles per word (load, store, pointer updates, loop branch).
    pub copy_cycles_per_word: u64,
    /// Linear scan: cycles per byte.
    pub scan_cycles_per_byte: u64,
    /// Regex: cycles per byte besides the transition-table load (byte load, class, index, test).
    pub regex_cycles_per_byte: u64,
}

/// The flow cache controller's realignment engine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// Engine clock.
    pub clock_mhz: u32,
    /// Bytes realigned and written into the L2 flow cache per engine cycle.
    pub bytes_per_cycle: u64,
    /// Engine cycles per translation-table lookup (one per segment piece fetched).
    pub lookup_cycles: u64,
}

/// When the controller fills the L2 flow cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Retrieval {
    /// The whole bytestream, before processing starts.
    Whole,
    /// One flow-cache line when the core misses on it.
    Selective,
}

/// A SmartNIC target: every constant of the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemConfig {
    /// Target name.
    pub name: String,
    /// What it stands for.
    #[serde(default)]
    pub description: String,
    /// The core.
    pub core: CoreConfig,
    /// The core's L1 data cache (write-back; a word store that misses allocates without a fill).
    pub l1: CacheConfig,
    /// The L2 flow cache.
    pub flow_cache: CacheConfig,
    /// DRAM.
    pub dram: DramConfig,
    /// The realignment engine.
    pub engine: EngineConfig,
    /// The flow cache's retrieval strategy.
    pub retrieval: Retrieval,
}

/// The built-in targets, by name.
pub const TARGETS: [(&str, &str); 2] = [
    (
        "u250-microblaze",
        include_str!("../targets/u250-microblaze.toml"),
    ),
    ("bluefield3", include_str!("../targets/bluefield3.toml")),
];

impl nicsim_kernel::config::Validate for MemConfig {
    type Checked = ();

    /// Every value that sizes the model's memory or its arithmetic, at its key.
    fn check(&self) -> Result<(), ConfigError> {
        self.check_bounds()
    }
}

/// A built-in target's TOML text, by name ([`TARGETS`]).
pub fn target_toml(name: &str) -> Option<&'static str> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

impl MemConfig {
    /// A built-in target.
    pub fn builtin(name: &str) -> Option<Self> {
        let text = target_toml(name)?;
        Some(Self::from_toml(text).expect("built-in targets parse"))
    }

    /// Parses a target TOML ([`nicsim_kernel::config::from_toml`]); errors name the key.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        nicsim_kernel::config::from_toml::<MemConfig>(text).map_err(|e| {
            if e.path.is_empty() {
                e.msg
            } else {
                e.to_string()
            }
        })
    }

    /// Every value that sizes the model's memory or its arithmetic, at its key.
    fn check_bounds(&self) -> Result<(), ConfigError> {
        for (key, c) in [("l1", &self.l1), ("flow_cache", &self.flow_cache)] {
            if !c.line_bytes.is_power_of_two() || c.ways == 0 {
                return cfg_err(key, "line_bytes must be a power of two and ways at least 1");
            }
            check_range(
                &format!("{key}.line_bytes"),
                c.line_bytes,
                1,
                MAX_LINE_BYTES,
                "bytes",
            )?;
            check_range(&format!("{key}.ways"), c.ways as u64, 1, MAX_WAYS, "ways")?;
            // The cache keeps a record per line, allocated up front.
            let lines = c.size_bytes / c.line_bytes;
            if lines > MAX_CACHE_LINES {
                return cfg_err(
                    format!("{key}.size_bytes"),
                    format!(
                        "{} bytes are {lines} lines of {} bytes, more than the \
                         {MAX_CACHE_LINES} lines a cache may have",
                        c.size_bytes, c.line_bytes
                    ),
                );
            }
            let sets = c.size_bytes / (c.line_bytes * c.ways as u64);
            if sets == 0 || sets * c.line_bytes * c.ways as u64 != c.size_bytes {
                return cfg_err(
                    format!("{key}.size_bytes"),
                    "must be a multiple of line_bytes × ways",
                );
            }
        }
        for (key, v, lo, hi, unit) in [
            (
                "core.word_bytes",
                self.core.word_bytes,
                1,
                MAX_LINE_BYTES,
                "bytes",
            ),
            (
                "core.l2_hit_cycles",
                self.core.l2_hit_cycles,
                0,
                MAX_LATENCY_CYCLES,
                "cycles",
            ),
            (
                "core.copy_cycles_per_word",
                self.core.copy_cycles_per_word,
                0,
                MAX_LATENCY_CYCLES,
                "cycles",
            ),
            (
                "core.scan_cycles_per_byte",
                self.core.scan_cycles_per_byte,
                0,
                MAX_LATENCY_CYCLES,
                "cycles",
            ),
            (
                "core.regex_cycles_per_byte",
                self.core.regex_cycles_per_byte,
                0,
                MAX_LATENCY_CYCLES,
                "cycles",
            ),
            (
                "dram.bytes_per_cycle",
                self.dram.bytes_per_cycle,
                1,
                MAX_TRANSFER_BYTES,
                "bytes",
            ),
            (
                "dram.latency_cycles",
                self.dram.latency_cycles,
                0,
                MAX_LATENCY_CYCLES,
                "cycles",
            ),
            (
                "dram.burst_bytes",
                self.dram.burst_bytes,
                1,
                MAX_TRANSFER_BYTES,
                "bytes",
            ),
            (
                "engine.bytes_per_cycle",
                self.engine.bytes_per_cycle,
                1,
                MAX_TRANSFER_BYTES,
                "bytes",
            ),
            (
                "engine.lookup_cycles",
                self.engine.lookup_cycles,
                0,
                MAX_LATENCY_CYCLES,
                "cycles",
            ),
        ] {
            check_range(key, v, lo, hi, unit)?;
        }
        if !self.core.word_bytes.is_power_of_two() || self.core.word_bytes > self.l1.line_bytes {
            return cfg_err(
                "core.word_bytes",
                "must be a power of two no larger than l1.line_bytes",
            );
        }
        // Stalls and transfers add up in ticks of 1 / lcm(clocks) µs over a whole capture:
        // the kernel's check, with the memory time a target must hold as the span, names the
        // clock whose lcm with those before it leaves 64-bit time too short.
        let clocks = [
            ("core.clock_mhz".to_string(), self.core.clock_mhz),
            ("dram.clock_mhz".to_string(), self.dram.clock_mhz),
            ("engine.clock_mhz".to_string(), self.engine.clock_mhz),
        ];
        for i in 0..clocks.len() {
            check_timebase(
                &clocks[..=i],
                &[Span {
                    key: clocks[i].0.clone(),
                    span_us: MAX_MEMORY_TIME_US,
                    context: format!(
                        "a target must hold {} s of memory time",
                        MAX_MEMORY_TIME_US / 1e6
                    ),
                }],
            )?;
        }
        Ok(())
    }
}

/// A cache line's bytes at most (4 KiB, a page; real lines are 16 to 128 bytes).
pub const MAX_LINE_BYTES: u64 = 4096;
/// A cache's ways at most: a fully associative cache of 4096 lines (each access looks at
/// every way of its set).
pub const MAX_WAYS: u64 = 4096;
/// A cache's lines at most (4 Mi lines, 24 bytes of model state each, about 100 MB; 256 MiB
/// of 64-byte lines, a thousand times the flow cache the targets give).
pub const MAX_CACHE_LINES: u64 = 1 << 22;
/// Bytes per cycle or per burst at most (1 MiB; DRAM moves tens of bytes a cycle).
pub const MAX_TRANSFER_BYTES: u64 = 1 << 20;
/// Bytes of one translation-table entry: stream offset, physical address and length (8 + 8 +
/// 4, padded to 24). The talk's table "stores physical address, length and offset"; the same
/// size as `nicsim flowmem sizes` gives (Python's `TABLE_ENTRY_BYTES`).
pub const TABLE_ENTRY_BYTES: u64 = 24;

fn cfg_err(path: impl Into<String>, msg: impl Into<String>) -> Result<(), ConfigError> {
    nicsim_kernel::config::err(path, msg)
}

/// What the core does with the stream.
#[derive(Debug, Clone)]
pub enum Workload {
    /// Read every byte once (a memory-bound pass: a histogram, a checksum, a literal search).
    Scan,
    /// Run a DFA over every byte (compute-bound: each byte loads a transition-table entry).
    Regex(Box<dense::DFA<Vec<u32>>>),
}

impl Workload {
    /// The regex workload for `pattern` (an unanchored forward DFA, as a scanner would run),
    /// compiled within the limits of [`crate::view::regex_limits`].
    pub fn regex(pattern: &str) -> Result<Self, FlowError> {
        crate::view::check_pattern_len(pattern)?;
        let (syntax, nfa, dfa) = crate::view::regex_configs(true);
        let dfa = dense::Builder::new()
            .syntax(syntax)
            .thompson(nfa)
            .configure(dfa)
            .build(pattern)
            .map_err(|e| crate::view::regex_build_error(pattern, &e))?;
        Ok(Workload::Regex(Box::new(dfa)))
    }
}

/// Cache counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    /// Accesses that hit.
    pub hits: u64,
    /// Accesses that missed.
    pub misses: u64,
    /// Dirty lines written back on eviction.
    pub writebacks: u64,
}

impl CacheStats {
    /// hits / accesses (0 without accesses).
    pub fn hit_rate(&self) -> f64 {
        let n = self.hits + self.misses;
        if n == 0 {
            0.0
        } else {
            self.hits as f64 / n as f64
        }
    }
}

/// DRAM traffic of one phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Traffic {
    /// Bytes requested by reads (cache lines, segment pieces).
    pub read_bytes: u64,
    /// Bytes requested by writes.
    pub write_bytes: u64,
    /// Bytes the DRAM interface moved for them: each request rounded out to whole bursts.
    pub bus_bytes: u64,
    /// Translation-table bytes written or read on chip (not DRAM): [`TABLE_ENTRY_BYTES`] per
    /// entry the Packet Handler writes, the copy loop reads or the controller looks up.
    pub table_bytes: u64,
}

impl Traffic {
    fn read(&mut self, requested: u64, bus: u64) {
        self.read_bytes += requested;
        self.bus_bytes += bus;
    }
    fn write(&mut self, requested: u64, bus: u64) {
        self.write_bytes += requested;
        self.bus_bytes += bus;
    }
    /// DRAM bytes read plus written (the on-chip table bytes are not DRAM traffic).
    pub fn total_bytes(&self) -> u64 {
        self.read_bytes + self.write_bytes
    }
}

/// The outcome of one design on one flow set and workload.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DesignReport {
    /// Stream bytes processed.
    pub payload_bytes: u64,
    /// The Packet Handler (both designs): each new payload written into DRAM once, its
    /// metadata (flow, offset, address, length) extracted from the headers on the datapath and
    /// written as one translation-table entry (`table_bytes`).
    pub receive: Traffic,
    /// Translation-table entries the Packet Handler wrote (one per stored segment).
    pub table_entries: u64,
    /// Seconds the Packet Handler is busy with the capture's payloads at its datapath and DRAM
    /// write rates (it overlaps reception, so it is not part of [`DesignReport::seconds`]).
    pub receive_seconds: f64,
    /// DRAM traffic of the copy (copy-based: the segments read, the buffer written, write-backs
    /// of buffer lines included whenever they happen) or of the controller's fill of the flow
    /// cache (flow-based, whole retrieval: each payload byte read once).
    pub assemble: Traffic,
    /// DRAM traffic while processing (copy-based: the buffer read back; flow-based: lines
    /// fetched on demand by selective retrieval; the regex's table loads).
    pub process: Traffic,
    /// Core cycles spent copying (copy-based) or waiting for the whole-bytestream fill.
    pub assemble_cycles: u64,
    /// Core cycles spent processing (stalls included).
    pub process_cycles: u64,
    /// Seconds: assemble.
    pub assemble_seconds: f64,
    /// Seconds: process.
    pub process_seconds: f64,
    /// The core's L1.
    pub l1: CacheStats,
    /// The L2 flow cache (flow-based only).
    pub flow_cache: CacheStats,
    /// Bytes the core copied (copy-based only).
    pub bytes_copied: u64,
}

impl DesignReport {
    /// All DRAM traffic, the Packet Handler's write included.
    pub fn dram_bytes(&self) -> u64 {
        self.receive.total_bytes() + self.dram_bytes_after_receive()
    }
    /// DRAM traffic beyond the Packet Handler's write (assembly and processing): the talk's
    /// "payload size transfers".
    pub fn dram_bytes_after_receive(&self) -> u64 {
        self.assemble.total_bytes() + self.process.total_bytes()
    }
    /// Core cycles in all.
    pub fn cycles(&self) -> u64 {
        self.assemble_cycles + self.process_cycles
    }
    /// Seconds in all.
    pub fn seconds(&self) -> f64 {
        self.assemble_seconds + self.process_seconds
    }

    /// The report with its totals, as `flowmem bench` and `reproduce flowmem` show it.
    pub fn summary(&self) -> DesignSummary<'_> {
        DesignSummary {
            report: self,
            dram_bytes: self.dram_bytes(),
            dram_bytes_after_receive: self.dram_bytes_after_receive(),
            cycles: self.cycles(),
            model_seconds: self.seconds(),
            cache_hit_rate: self.l1.hit_rate(),
            flow_cache_hit_rate: self.flow_cache.hit_rate(),
        }
    }
}

/// A [`DesignReport`] with its totals (the summary's `copy` and `flow` objects).
#[derive(Debug, Serialize)]
pub struct DesignSummary<'a> {
    /// The report's own fields.
    #[serde(flatten)]
    pub report: &'a DesignReport,
    /// [`DesignReport::dram_bytes`].
    pub dram_bytes: u64,
    /// [`DesignReport::dram_bytes_after_receive`].
    pub dram_bytes_after_receive: u64,
    /// [`DesignReport::cycles`].
    pub cycles: u64,
    /// [`DesignReport::seconds`] (modelled, not measured).
    pub model_seconds: f64,
    /// The L1's hit rate.
    pub cache_hit_rate: f64,
    /// The flow cache's hit rate.
    pub flow_cache_hit_rate: f64,
}

/// Both designs on one target (the JSON `flowmem bench`'s model part is).
#[derive(Debug, Serialize)]
pub struct ComparisonSummary<'a> {
    /// The target's name.
    pub target: &'a str,
    /// How the flow cache is filled.
    pub retrieval: Retrieval,
    /// Copy-based.
    pub copy: DesignSummary<'a>,
    /// Flow-based.
    pub flow: DesignSummary<'a>,
}

impl Comparison {
    /// Both designs with their totals, on `config`'s target.
    pub fn summary<'a>(&'a self, config: &'a MemConfig) -> ComparisonSummary<'a> {
        ComparisonSummary {
            target: &config.name,
            retrieval: config.retrieval,
            copy: self.copy.summary(),
            flow: self.flow.summary(),
        }
    }
}

/// One way of a set: the line's tag, whether it is dirty, when it was last used.
#[derive(Debug, Clone, Copy)]
struct Way {
    tag: u64,
    valid: bool,
    dirty: bool,
    used: u64,
}

/// A set-associative, LRU, write-back cache of line addresses.
struct Cache {
    line_shift: u32,
    sets: u64,
    ways: usize,
    lines: Vec<Way>,
    clock: u64,
    stats: CacheStats,
}

/// The result of one cache access.
enum Access {
    Hit,
    /// A miss; `Some(line address)` when a dirty line was evicted for it.
    Miss(Option<u64>),
}

impl Cache {
    fn new(c: &CacheConfig) -> Self {
        let sets = c.size_bytes / (c.line_bytes * c.ways as u64);
        Cache {
            line_shift: c.line_bytes.trailing_zeros(),
            sets,
            ways: c.ways as usize,
            lines: vec![
                Way {
                    tag: 0,
                    valid: false,
                    dirty: false,
                    used: 0
                };
                (sets as usize) * c.ways as usize
            ],
            clock: 0,
            stats: CacheStats::default(),
        }
    }

    /// Looks up the line holding `addr`; on a miss, allocates it (evicting the LRU way).
    fn access(&mut self, addr: u64, write: bool) -> Access {
        self.clock += 1;
        let line = addr >> self.line_shift;
        let set = (line % self.sets) as usize;
        let ways = &mut self.lines[set * self.ways..(set + 1) * self.ways];
        if let Some(w) = ways.iter_mut().find(|w| w.valid && w.tag == line) {
            w.used = self.clock;
            w.dirty |= write;
            self.stats.hits += 1;
            return Access::Hit;
        }
        self.stats.misses += 1;
        let victim = ways
            .iter_mut()
            .min_by_key(|w| (w.valid, w.used))
            .expect("at least one way");
        let evicted = (victim.valid && victim.dirty).then_some(victim.tag << self.line_shift);
        if evicted.is_some() {
            self.stats.writebacks += 1;
        }
        *victim = Way {
            tag: line,
            valid: true,
            dirty: write,
            used: self.clock,
        };
        Access::Miss(evicted)
    }

    /// Dirty lines still held (written back when the run ends).
    fn dirty_lines(&self) -> impl Iterator<Item = u64> + '_ {
        self.lines
            .iter()
            .filter(|w| w.valid && w.dirty)
            .map(move |w| w.tag << self.line_shift)
    }
}

/// The memory time a target's clocks must let 64-bit time hold (100 s: 1 TB at 10 GB/s; see
/// [`Timebase::for_span`]). Not a limit the model enforces: a capture that took longer could
/// wrap time, which is why clocks with few common factors are refused.
pub const MAX_MEMORY_TIME_US: f64 = 1e8;

/// The clocks of one run, in one timebase.
struct Clocks {
    tb: Timebase,
    core: Clock,
    dram: Clock,
    engine: Clock,
}

impl Clocks {
    fn new(c: &MemConfig) -> Self {
        let tb =
            Timebase::for_clocks_mhz(&[c.core.clock_mhz, c.dram.clock_mhz, c.engine.clock_mhz]);
        Clocks {
            core: tb.clock(c.core.clock_mhz),
            dram: tb.clock(c.dram.clock_mhz),
            engine: tb.clock(c.engine.clock_mhz),
            tb,
        }
    }
    /// Core cycles covering `t` ticks (rounded up: a stall ends on a core edge).
    fn core_cycles(&self, t: u64) -> u64 {
        t.div_ceil(self.core.period)
    }
    fn seconds(&self, core_cycles: u64) -> f64 {
        self.tb.ticks_to_us(self.core.cycles(core_cycles)) * 1e-6
    }
}

/// DRAM: whole bursts, one request at a time.
struct Dram {
    c: DramConfig,
    clock: Clock,
}

impl Dram {
    /// Bytes on the interface for `len` bytes at `addr` (rounded out to bursts).
    fn span_bytes(&self, addr: u64, len: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        let b = self.c.burst_bytes;
        ((addr + len).div_ceil(b) - addr / b) * b
    }
    /// Ticks of one request moving `bus_bytes` (already burst-rounded).
    fn request_ticks(&self, bus_bytes: u64) -> u64 {
        self.clock
            .cycles(self.c.latency_cycles + bus_bytes.div_ceil(self.c.bytes_per_cycle))
    }
    /// One read request of `len` bytes at `addr`, counted in `t`; its ticks.
    fn read(&self, t: &mut Traffic, addr: u64, len: u64) -> u64 {
        let bus = self.span_bytes(addr, len);
        t.read(len, bus);
        self.request_ticks(bus)
    }
    /// One write request of `len` bytes at `addr`, counted in `t`; its ticks.
    fn write(&self, t: &mut Traffic, addr: u64, len: u64) -> u64 {
        let bus = self.span_bytes(addr, len);
        t.write(len, bus);
        self.request_ticks(bus)
    }
}

/// Where the contiguous buffers (copy-based) and the DFA table live in DRAM: far above the arena.
const BUFFER_BASE: u64 = 1 << 40;
const TABLE_BASE: u64 = 1 << 44;

/// The memory model for one target.
pub struct MemModel {
    config: MemConfig,
}

/// Both designs on the same flows and workload.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Copy-based.
    pub copy: DesignReport,
    /// Flow-based.
    pub flow: DesignReport,
}

impl MemModel {
    /// A model of `config`.
    pub fn new(config: MemConfig) -> Self {
        MemModel { config }
    }

    /// The target.
    pub fn config(&self) -> &MemConfig {
        &self.config
    }

    /// Runs both designs over `flows` (each processed whole, one after another).
    pub fn compare(&self, flows: &[FlowView<'_>], workload: &Workload) -> Comparison {
        Comparison {
            copy: self.copy_based(flows, workload),
            flow: self.flow_based(flows, workload),
        }
    }

    /// Runs both designs over every flow direction of a reassembled capture that holds data
    /// ([`crate::bench::views`]).
    pub fn compare_reassembly(&self, r: &crate::Reassembly, workload: &Workload) -> Comparison {
        self.compare(&crate::bench::views(r), workload)
    }

    /// Runs both designs on the talk's micro-benchmark: `packets` payloads of `payload_bytes`,
    /// each in its own `buffer_bytes` packet buffer ([`packet_buffers`]).
    pub fn compare_micro(
        &self,
        packets: u32,
        payload_bytes: u32,
        buffer_bytes: u32,
        workload: &Workload,
    ) -> Comparison {
        let (arena, dir) = packet_buffers(packets, payload_bytes, buffer_bytes);
        let view = FlowView::new(&arena, &dir);
        self.compare(std::slice::from_ref(&view), workload)
    }

    /// The Packet Handler at line rate: each frame streams through its datapath, which
    /// extracts the metadata from the headers (flow, sequence number, payload length: one beat
    /// of the datapath) and writes one translation-table entry on chip, while the payload is
    /// written into DRAM (posted writes, streamed at the interface's rate). Payload bytes the
    /// flow already holds (retransmissions) are not written. Both designs receive alike.
    fn receive(&self, clocks: &Clocks, dram: &Dram, flows: &[FlowView<'_>], r: &mut DesignReport) {
        let c = &self.config;
        let mut engine_cycles = 0u64;
        for v in flows {
            for s in v.segments() {
                r.receive
                    .write(s.len_bytes, dram.span_bytes(s.addr, s.len_bytes));
                r.receive.table_bytes += TABLE_ENTRY_BYTES;
                r.table_entries += 1;
                engine_cycles += 1 // the header beat the metadata is extracted from
                    + c.engine.lookup_cycles // the table entry written
                    + s.len_bytes.div_ceil(c.engine.bytes_per_cycle);
            }
        }
        let dram_t = if r.receive.bus_bytes == 0 {
            0
        } else {
            dram.clock.cycles(
                c.dram.latency_cycles + r.receive.bus_bytes.div_ceil(c.dram.bytes_per_cycle),
            )
        };
        let t = dram_t.max(clocks.engine.cycles(engine_cycles));
        r.receive_seconds = clocks.tb.ticks_to_us(t) * 1e-6;
    }

    /// The copy-based design: copy each stream into a contiguous DRAM buffer, then process it.
    pub fn copy_based(&self, flows: &[FlowView<'_>], workload: &Workload) -> DesignReport {
        let c = &self.config;
        let clocks = Clocks::new(c);
        let dram = Dram {
            c: c.dram,
            clock: clocks.dram,
        };
        let mut l1 = Cache::new(&c.l1);
        let mut r = DesignReport::default();
        self.receive(&clocks, &dram, flows, &mut r);
        let line = c.l1.line_bytes;
        let word = c.core.word_bytes;
        // An L1 miss: the dirty victim written back, then (for a load) the line read.
        let miss = |r_traffic: &mut Traffic, evicted: Option<u64>, fill: Option<u64>| -> u64 {
            let mut t = 0;
            if let Some(a) = evicted {
                t += dram.write(r_traffic, a, line);
            }
            if let Some(a) = fill {
                t += dram.read(r_traffic, a, line);
            }
            t
        };
        // The buffer starts half an L1 away from the arena's alignment, so that a direct-mapped
        // L1 does not map the line being copied and its destination to the same set.
        let mut buffer_at = BUFFER_BASE + c.l1.size_bytes / 2;
        let mut bases = Vec::with_capacity(flows.len());
        // Copy: word loads from each segment, word stores to the buffer at the stream offset.
        let mut stall: u64 = 0;
        let mut words = 0u64;
        for v in flows {
            bases.push(buffer_at);
            for s in v.segments() {
                // The segment's place, from its translation-table entry.
                r.assemble.table_bytes += TABLE_ENTRY_BYTES;
                let mut done = 0;
                while done < s.len_bytes {
                    let src = s.addr + done;
                    let dst = buffer_at + s.offset + done;
                    // A word at most, not crossing a word boundary of the source.
                    let n = (word - src % word).min(s.len_bytes - done);
                    if let Access::Miss(ev) = l1.access(src, false) {
                        stall += miss(&mut r.assemble, ev, Some(src & !(line - 1)));
                    }
                    // A store miss allocates without a fill (MicroBlaze, write-back, word store).
                    if let Access::Miss(ev) = l1.access(dst, true) {
                        stall += miss(&mut r.assemble, ev, None);
                    }
                    if dst % word + n > word {
                        // The store straddles two words of the buffer.
                        if let Access::Miss(ev) = l1.access(dst + n - 1, true) {
                            stall += miss(&mut r.assemble, ev, None);
                        }
                    }
                    words += 1;
                    done += n;
                    r.bytes_copied += n;
                }
            }
            buffer_at += v.len().div_ceil(line) * line + line;
        }
        r.assemble_cycles = words * c.core.copy_cycles_per_word + clocks.core_cycles(stall);
        // Process the buffers, each from DRAM through the L1.
        let mut stall: u64 = 0;
        let mut compute = 0u64;
        for (v, &base) in flows.iter().zip(&bases) {
            compute += self.process(v, workload, &mut |what| {
                let addr = match what {
                    Ref::Stream(off) => base + off,
                    Ref::Table(a) => a,
                };
                if let Access::Miss(ev) = l1.access(addr, false) {
                    // A dirty victim is a buffer line the copy wrote: its write-back is the
                    // copy's DRAM traffic whenever the eviction happens (the stall is
                    // processing's). The line is then read back: processing's traffic.
                    if let Some(a) = ev {
                        stall += dram.write(&mut r.assemble, a, line);
                    }
                    stall += dram.read(&mut r.process, addr & !(line - 1), line);
                }
            });
            r.payload_bytes += v.segments().iter().map(|s| s.len_bytes).sum::<u64>();
        }
        // Dirty buffer lines reach DRAM in the end.
        let dirty: Vec<u64> = l1.dirty_lines().collect();
        for a in dirty {
            r.assemble.write(line, dram.span_bytes(a, line));
        }
        r.process_cycles = compute + clocks.core_cycles(stall);
        r.l1 = l1.stats;
        r.assemble_seconds = clocks.seconds(r.assemble_cycles);
        r.process_seconds = clocks.seconds(r.process_cycles);
        r
    }

    /// The flow-based design: the controller fills the L2 flow cache through the translation
    /// table; the core processes the stream from there.
    pub fn flow_based(&self, flows: &[FlowView<'_>], workload: &Workload) -> DesignReport {
        let c = &self.config;
        let clocks = Clocks::new(c);
        let dram = Dram {
            c: c.dram,
            clock: clocks.dram,
        };
        let mut l1 = Cache::new(&c.l1);
        let mut l2 = Cache::new(&c.flow_cache);
        let mut r = DesignReport::default();
        self.receive(&clocks, &dram, flows, &mut r);
        let l1_line = c.l1.line_bytes;
        let l2_line = c.flow_cache.line_bytes;
        // Flow address space: each flow at its own base, line-aligned.
        let mut bases = Vec::with_capacity(flows.len());
        let mut at = 0u64;
        for v in flows {
            bases.push(at);
            at += v.len().div_ceil(l2_line) * l2_line + l2_line;
        }
        // The controller fetches stream bytes [from, to) of a flow into the L2: one
        // translation-table lookup (on chip) and one DRAM read per segment piece (whole bursts),
        // and the engine's realignment, pipelined; returns ticks.
        let fetch = |segs: &[Segment], from: u64, to: u64, t: &mut Traffic| -> u64 {
            let first = segs.partition_point(|s| s.offset + s.len_bytes <= from);
            let (mut dram_t, mut engine_cycles) = (0, 0);
            for s in segs[first..].iter().take_while(|s| s.offset < to) {
                let lo = from.max(s.offset);
                let hi = to.min(s.offset + s.len_bytes);
                t.table_bytes += TABLE_ENTRY_BYTES;
                dram_t += dram.read(t, s.addr + (lo - s.offset), hi - lo);
                engine_cycles +=
                    c.engine.lookup_cycles + (hi - lo).div_ceil(c.engine.bytes_per_cycle);
            }
            dram_t.max(clocks.engine.cycles(engine_cycles))
        };
        // Whole retrieval assembles the bytestream into the flow cache: as much of it as the
        // flow cache holds at once. A flow larger than the flow cache is assembled a window of
        // the flow cache's size at a time, the next one when processing reaches it, so each
        // payload byte is read from DRAM once (fetching all of it up front would evict its
        // first lines before processing reached them, and read them again).
        let window = c.flow_cache.size_bytes;
        let mut assemble_ticks: u64 = 0;
        let mut stall: u64 = 0;
        let mut compute = 0u64;
        for (v, &base) in flows.iter().zip(&bases) {
            let segs = v.segments();
            let len = v.len();
            // Stream bytes [0, assembled) are in the flow cache or were processed already.
            let mut assembled = 0u64;
            compute += self.process(v, workload, &mut |what| match what {
                // A stream load: the L1, then the L2 flow cache, then the controller.
                Ref::Stream(off) => {
                    if c.retrieval == Retrieval::Whole && off >= assembled {
                        // The window holding `off` (windows a hole skips are not fetched);
                        // the engine writes its lines in stream order, and the core waits.
                        let from = off - off % window;
                        let to = (from + window).min(len);
                        let core_stats = l2.stats;
                        let mut line = from;
                        while line < to {
                            let _ = l2.access(base + line, false);
                            line += l2_line;
                        }
                        l2.stats = core_stats; // the fill is not the core's hits or misses
                        assemble_ticks += fetch(segs, from, to, &mut r.assemble);
                        assembled = to;
                    }
                    if let Access::Miss(_) = l1.access(base + off, false) {
                        // Stream lines are never dirty in the L1: nothing to write back.
                        stall += clocks.core.cycles(c.core.l2_hit_cycles);
                        if let Access::Miss(_) = l2.access(base + off, false) {
                            let from = off & !(l2_line - 1);
                            stall += fetch(segs, from, (from + l2_line).min(len), &mut r.process);
                        }
                    }
                }
                // The DFA's table sits in DRAM, cached by the L1 only.
                Ref::Table(a) => {
                    if let Access::Miss(_) = l1.access(a, false) {
                        stall += dram.read(&mut r.process, a & !(l1_line - 1), l1_line);
                    }
                }
            });
            r.payload_bytes += segs.iter().map(|s| s.len_bytes).sum::<u64>();
        }
        r.assemble_cycles = clocks.core_cycles(assemble_ticks);
        r.process_cycles = compute + clocks.core_cycles(stall);
        r.l1 = l1.stats;
        r.flow_cache = l2.stats;
        r.assemble_seconds = clocks.seconds(r.assemble_cycles);
        r.process_seconds = clocks.seconds(r.process_cycles);
        r
    }

    /// The workload over one stream: `touch(Ref::Stream(offset))` for each word the core loads,
    /// `touch(Ref::Table(address))` for each DFA transition-table entry; returns the compute
    /// cycles.
    fn process(&self, v: &FlowView<'_>, workload: &Workload, touch: &mut dyn FnMut(Ref)) -> u64 {
        let c = &self.config.core;
        let word = c.word_bytes;
        let mut bytes = 0u64;
        match workload {
            Workload::Scan => {
                for ch in v.chunks() {
                    // One load per word the chunk touches.
                    let (lo, hi) = (ch.offset, ch.offset + ch.bytes.len() as u64);
                    let mut w = lo & !(word - 1);
                    while w < hi {
                        touch(Ref::Stream(w.max(lo)));
                        w += word;
                    }
                    bytes += hi - lo;
                }
                bytes * c.scan_cycles_per_byte
            }
            Workload::Regex(dfa) => {
                let classes = dfa.byte_classes();
                let cfg = start::Config::new().anchored(Anchored::No);
                for ch in v.chunks() {
                    // Each run starts the DFA afresh (a hole ends a match, as in FlowView).
                    let Ok(mut state) = dfa.start_state(&cfg) else {
                        continue;
                    };
                    let mut last_word = u64::MAX;
                    for (i, &b) in ch.bytes.iter().enumerate() {
                        let off = ch.offset + i as u64;
                        if off / word != last_word {
                            touch(Ref::Stream(off));
                            last_word = off / word;
                        }
                        // The entry the byte selects (state ids are premultiplied by the stride).
                        let entry = state.as_usize() as u64 + classes.get(b) as u64;
                        touch(Ref::Table(TABLE_BASE + entry * 4));
                        state = dfa.next_state(state, b);
                        if dfa.is_dead_state(state) {
                            state = dfa.start_state(&cfg).unwrap_or(state);
                        }
                    }
                    bytes += ch.bytes.len() as u64;
                }
                bytes * c.regex_cycles_per_byte
            }
        }
    }
}

/// A load of the workload: a stream byte (by stream offset) or a DFA table entry (by address).
#[derive(Debug, Clone, Copy)]
enum Ref {
    Stream(u64),
    Table(u64),
}

/// The talk's micro-benchmark flow: `packets` in-order payloads of `payload_bytes`, each written
/// by the Packet Handler into its own `buffer_bytes` packet buffer (headers and slack in the
/// rest), so the translation table has one entry per packet. The payload is text-like bytes.
pub fn packet_buffers(packets: u32, payload_bytes: u32, buffer_bytes: u32) -> (Arena, Direction) {
    let slack = buffer_bytes.saturating_sub(payload_bytes) as usize;
    let total = packets as u64 * payload_bytes.max(buffer_bytes) as u64;
    let mut arena = Arena::new(total);
    let mut segments = Vec::with_capacity(packets as usize);
    let words = b"the packet flow memory cache stream segment offset address dram line ";
    let mut offset = 0u64;
    for i in 0..packets as usize {
        if slack > 0 {
            arena.append(&vec![0; slack]).expect("room for the headers");
        }
        let payload: Vec<u8> = (0..payload_bytes as usize)
            .map(|j| words[(i * payload_bytes as usize + j) % words.len()])
            .collect();
        let addr = arena.append(&payload).expect("room for the payload");
        segments.push(Segment {
            offset,
            addr,
            len_bytes: payload_bytes as u64,
        });
        offset += payload_bytes as u64;
    }
    let dir = Direction {
        src: std::net::Ipv4Addr::new(10, 0, 0, 1).into(),
        dst: std::net::Ipv4Addr::new(10, 0, 0, 2).into(),
        sport: 9,
        dport: 9,
        start_seq: Some(1),
        syn: false,
        fin: false,
        rst: false,
        len_bytes: offset,
        segments,
        holes: Vec::new(),
        packets: packets as u64,
        bytes: Default::default(),
        cut: false,
    };
    (arena, dir)
}
