//! Target models: what each BPF instruction and helper costs on a processor-based NIC (or on the
//! host's JIT), and the program-independent limits. Targets are TOML data files; `nfp` carries
//! the paper's Netronome constants (see docs/xdp.md for the source of each), `x86-jit` is
//! written by `nicsim xdp calibrate` from measurements on the running kernel.
//!
//! The throughput of a path is the minimum over its parts (paper §4): the cores
//! (`count · clock / (overhead + cycles)`), the DRAM engine (`clock / dram_cycles`) and the MAC.

use std::collections::BTreeMap;

use nicsim_kernel::config::{err, ConfigError, Validate};
use serde::Deserialize;

/// A target model: limits, cores, DRAM engine, and instruction, memory and helper costs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// The target's name (`nfp`, `x86-jit`, …).
    pub name: String,
    /// Free-form description.
    #[serde(default)]
    pub description: String,
    /// Program-independent limits.
    pub limits: Limits,
    /// The cores that run the program.
    pub cores: Cores,
    /// The DRAM engine; absent on targets where memory costs core time only.
    #[serde(default)]
    pub dram: Option<Dram>,
    /// Core cycles per instruction class.
    pub insn: InsnCosts,
    /// Costs of memory instructions.
    pub memory: Memory,
    /// Helper costs by helper name without `bpf_`; map helpers may be refined per map type
    /// (`map_lookup_elem.array`), which is looked up first.
    pub helpers: BTreeMap<String, HelperCost>,
    /// Why a helper without an entry in `helpers` is not supported on this target (`nfp`: the
    /// NFP offload's own rule, which helpers its verifier accepts), said with the error.
    #[serde(default)]
    pub helper_rule: Option<String>,
    /// Why a map helper on a map type without an entry is not supported on this target.
    #[serde(default)]
    pub map_rule: Option<String>,
    /// Why a kfunc without an entry in `helpers` is not supported on this target (`nfp`: the
    /// NFP offload runs no kfuncs); `helper_rule` when absent.
    #[serde(default)]
    pub kfunc_rule: Option<String>,
    /// What the kernel's offload for this hardware loads (`nfp`: the NFP offload's verifier
    /// and map allocator), when the target models offload-capable hardware. The costs above
    /// may price more than it loads (estimates for firmware that would run them): an analysis
    /// then says what the offload refuses ([`Offload::refusals`]).
    #[serde(default)]
    pub offload: Option<Offload>,
    /// How the constants were obtained (free-form, kept in the summary).
    #[serde(default)]
    pub calibration: Option<toml::Table>,
}

/// The slowest and fastest clock a target may have (MHz): 1 kHz to 1 THz.
pub const MIN_CLOCK_MHZ: f64 = 1e-3;
/// See [`MIN_CLOCK_MHZ`]; also the largest DRAM-engine rate (Mops/s).
pub const MAX_CLOCK_MHZ: f64 = 1e6;
/// The smallest rate a target may give (the MAC's packets/s, the DRAM engine's Mops/s).
pub const MIN_RATE: f64 = 1e-3;
/// The smallest MTU a target may have (bytes; Linux's `ETH_MIN_MTU`, the IPv4 minimum).
pub const MIN_MTU_BYTES: u32 = 68;
/// The longest target name: it titles tables and figures (a 100,000-character name was printed
/// whole in `xdp analyze`'s table, some 100 KB of output).
pub const MAX_NAME_CHARS: usize = 200;
/// The largest MTU a target may have (bytes; Linux's `ETH_MAX_MTU`).
pub const MAX_MTU_BYTES: u32 = 65_535;

/// What the kernel's offload for the hardware a target models loads ([`Target::offload`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Offload {
    /// The helpers its verifier accepts, by name without `bpf_` (any other call is refused:
    /// kfuncs and tail calls included).
    pub helpers: Vec<String>,
    /// The map types it offloads, by their `BPF_MAP_TYPE_*` names in lower case (`hash`).
    pub maps: Vec<String>,
    /// Where the helper list comes from (the kernel function that applies it).
    pub helper_rule: String,
    /// Where the map list comes from.
    pub map_rule: String,
}

impl Offload {
    /// What of `p` the offload refuses, one phrase each (the helpers and kfuncs its code calls
    /// outside [`Offload::helpers`], each once with its first instruction; the maps its code
    /// refers to whose types are not in [`Offload::maps`]), in the order of the code and of
    /// the maps. Empty: the offload loads what the analysis priced.
    pub fn refusals(&self, p: &crate::load::Program) -> Vec<String> {
        use crate::insn::Insn;
        let mut calls: Vec<(String, usize)> = Vec::new();
        for (pc, insn) in p.code.iter().enumerate() {
            let name = match insn {
                Some(Insn::Call { helper }) => {
                    let short = crate::helpers::names::HELPER_NAMES
                        .get(*helper as usize)
                        .copied()
                        .unwrap_or("unknown");
                    if self.helpers.iter().any(|h| h == short) {
                        continue;
                    }
                    format!("helper bpf_{short}")
                }
                Some(Insn::Kfunc { id }) => format!("kfunc {}", p.kfunc_name(*id)),
                _ => continue,
            };
            if !calls.iter().any(|(n, _)| *n == name) {
                calls.push((name, pc));
            }
        }
        let mut out: Vec<String> = calls
            .into_iter()
            .map(|(n, pc)| format!("{n} (instruction {pc})"))
            .collect();
        if !out.is_empty() {
            out = vec![format!("{} refuses {}", self.helper_rule, out.join(", "))];
        }
        let maps: Vec<String> = p
            .maps
            .iter()
            .filter(|m| !self.maps.iter().any(|t| t == m.type_name()))
            .map(|m| format!("'{}' ({})", m.name, m.type_name()))
            .collect();
        if !maps.is_empty() {
            out.push(format!("{} refuses map {}", self.map_rule, maps.join(", ")));
        }
        out
    }
}

/// Limits that hold whatever the program.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Packets per second the MAC can deliver at most.
    pub mac_pps: f64,
    /// Smallest packet the analysis assumes (bytes, without CRC).
    pub min_packet_bytes: u32,
    /// MTU (bytes): the largest packet is this plus the 14-byte Ethernet header.
    pub mtu_bytes: u32,
}

/// The cores that run the program in parallel, one packet each.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cores {
    /// Core clock (MHz).
    pub clock_mhz: f64,
    /// Number of cores.
    pub count: u32,
    /// Per-packet cycles outside the program (firmware, driver).
    pub overhead_cycles: f64,
}

/// The DRAM engine that serves accesses to writable map values and helpers' DRAM operations.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dram {
    /// The clock the engine's occupancy is counted in.
    pub clock_mhz: f64,
    /// Operations per second the engine sustains, in millions.
    pub read_mops: f64,
    /// Write operations per second the engine sustains, in millions.
    pub write_mops: f64,
    /// Atomic operations per second the engine sustains, in millions.
    pub atomic_mops: f64,
}

impl Dram {
    /// Engine cycles one read, write and atomic occupy.
    pub fn cycles(&self) -> (f64, f64, f64) {
        (
            self.clock_mhz / self.read_mops,
            self.clock_mhz / self.write_mops,
            self.clock_mhz / self.atomic_mops,
        )
    }
}

/// Core cycles per instruction class.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InsnCosts {
    /// A 32-bit ALU instruction.
    pub alu: f64,
    /// A 64-bit ALU instruction (other than multiply and divide); `alu` if not given. A 32-bit
    /// machine does one per half.
    #[serde(default)]
    pub alu64: Option<f64>,
    /// A multiply.
    pub mul: f64,
    /// A divide or modulo.
    pub div: f64,
    /// A byte swap.
    pub endian: f64,
    /// A 64-bit immediate load (`LD_IMM64`).
    pub ld_imm64: f64,
    /// The compare of a 32-bit conditional jump (`JMP32`).
    pub jmp_compare: f64,
    /// The compare of a 64-bit conditional jump; `jmp_compare` if not given.
    #[serde(default)]
    pub jmp64_compare: Option<f64>,
    /// A conditional branch taken right after the compare (which set the condition codes).
    pub jmp_taken: f64,
    /// A conditional branch not taken.
    pub jmp_not_taken: f64,
    /// An unconditional jump.
    pub ja: f64,
    /// An `exit`.
    pub exit: f64,
    /// A bpf-to-bpf call and its return.
    pub call_local: f64,
    /// Loads and stores on the stack or the context.
    pub stack: f64,
    /// The largest constant an ALU or compare operand encodes in the instruction itself; a
    /// wider constant is first loaded into a register with `immed` instructions (the NFP: 8
    /// bits, JIT `ur_load_imm_any`). Not given: every constant fits.
    #[serde(default)]
    pub operand_imm_max: Option<u32>,
    /// Cycles of one `immed` instruction loading such a constant (see
    /// [`crate::cost::immed_loads`] for how many a constant takes).
    #[serde(default)]
    pub immed: f64,
    /// 64-bit `==`/`!=` jumps cost what the NFP JIT emits for them, half by half
    /// (`crate::cost`'s `eq64_by_halves`), instead of `jmp64_compare` and one branch.
    #[serde(default)]
    pub eq64_by_halves: bool,
    /// 64-bit `and`/`or`/`xor` with a constant cost what the NFP JIT emits for each 32-bit
    /// half (`crate::cost`'s `logic64_imm_halves`): nothing for a half that leaves the register
    /// as it is, one `immed` or `not` for a half that sets it, else an ALU instruction; instead
    /// of `alu64`.
    #[serde(default)]
    pub logic64_by_halves: bool,
}

/// Memory instructions: issuing one and, if the program waits for the result, the latency
/// left after the work done since the previous memory instruction (paper §4.2).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    /// A memory instruction whose result the program waits for costs at least this.
    pub issue_wait_cycles: f64,
    /// A memory instruction nobody waits for (atomic add, store).
    pub issue_nowait_cycles: f64,
    /// Latency of a load from the packet or a read-only map, in the cores' local memory (cycles).
    pub packet_latency_cycles: f64,
    /// Latency of a load from a writable map value, in DRAM (cycles).
    pub map_latency_cycles: f64,
    /// An atomic add not waited for (default: `issue_nowait_cycles`, as a store).
    #[serde(default)]
    pub atomic_cycles: Option<f64>,
    /// Latency of a load from a value of a large array (more than
    /// [`crate::cost::SMALL_ARRAY_BYTES`] of values: a cache miss), if it differs
    /// (default: `map_latency_cycles`).
    #[serde(default)]
    pub map_latency_large_cycles: Option<f64>,
    /// An atomic add on a value of a large array (default: `atomic_cycles`).
    #[serde(default)]
    pub atomic_large_cycles: Option<f64>,
    /// Stores to the packet and to map values wait for their completion (as loads do, with
    /// the packet's or the map's latency) instead of costing `issue_nowait_cycles`: the NFP
    /// JIT issues every such write with a context swap.
    #[serde(default)]
    pub stores_wait: bool,
    /// Cycles after a load from the packet or a map value that move its result out of the
    /// transfer registers (the NFP JIT's `data_ld_host_order`: an `ld_field` or a `mov` per word,
    /// and an `immed` clearing the upper half) (default 0).
    #[serde(default)]
    pub load_moves_cycles: f64,
    /// Cycles per 32-bit word a store to the packet first moves into the transfer registers
    /// (`data_stx_host_order`: a `mov` per word; a store of a constant loads it with `immed`
    /// instead, at the target's `insn.immed` per `immed`) (default 0).
    #[serde(default)]
    pub store_move_cycles: f64,
    /// The largest offset a load or store from the packet or a map value encodes in its
    /// command (`re_load_imm_any`: `RE_REG_IMM_MAX`); a larger one is loaded with `immed`
    /// first (None: any).
    #[serde(default)]
    pub offset_imm_max: Option<u32>,
    /// Cycles a load from a map value at a non-zero offset spends adding it to the 40-bit
    /// address (`addr40_offset`: `alu` and `alu` with carry) (default 0).
    #[serde(default)]
    pub map_offset_cycles: f64,
    /// Runs of load/store pairs that copy from a map value into the packet are one bulk read
    /// and one bulk write, as the NFP JIT gathers them ([`crate::gather`]).
    #[serde(default)]
    pub gather_copies: bool,
}

/// What one helper or kfunc call costs.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HelperCost {
    /// Core cycles per call.
    pub cycles: f64,
    /// DRAM-engine reads per call.
    #[serde(default)]
    pub dram_reads: f64,
    /// DRAM-engine writes per call.
    #[serde(default)]
    pub dram_writes: f64,
    /// DRAM-engine atomic operations per call.
    #[serde(default)]
    pub dram_atomics: f64,
    /// Where the figure comes from (`paper`, `estimate`, `measured`).
    #[serde(default)]
    pub source: String,
    /// For a helper whose work grows with a size argument (`csum_diff`, `xdp_load_bytes`,
    /// `xdp_store_bytes`: `crate::cost::sized_bytes`): the bytes `cycles` covers (default
    /// [`SIZED_HELPER_BYTES`], what `nicsim xdp calibrate` measures them with).
    #[serde(default)]
    pub bytes: Option<u32>,
    /// ... and the core cycles each byte beyond those costs (default `cycles / bytes`: the
    /// call's whole cost spread over its bytes, more than a byte costs, never less).
    #[serde(default)]
    pub cycles_per_byte: Option<f64>,
}

/// The bytes a size-dependent helper's `cycles` covers when its entry does not say
/// ([`HelperCost::bytes`]): the size `nicsim xdp calibrate` times `csum_diff`, `xdp_load_bytes`
/// and `xdp_store_bytes` with.
pub const SIZED_HELPER_BYTES: u32 = 64;

impl HelperCost {
    /// The core cycles of a call that works on `bytes` bytes: `cycles` up to [`HelperCost::bytes`],
    /// then [`HelperCost::cycles_per_byte`] for each byte more.
    pub fn cycles_for_bytes(&self, bytes: u64) -> f64 {
        let covered = self.bytes.unwrap_or(SIZED_HELPER_BYTES).max(1);
        let per_byte = self
            .cycles_per_byte
            .unwrap_or(self.cycles / f64::from(covered));
        self.cycles + per_byte * bytes.saturating_sub(u64::from(covered)) as f64
    }
}

/// A target file that cannot be read or does not describe a target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {path}{sep}{msg}", sep = if path.is_empty() { "" } else { ": " })]
pub struct TargetError {
    /// The file.
    pub file: String,
    /// The key path of the problem (empty: the whole file).
    pub path: String,
    /// What is wrong.
    pub msg: String,
}

/// The targets shipped with nicsim, by name, with their TOML text: `nfp`, the Netronome Agilio
/// CX of the paper (docs/xdp.md, "The nfp target"). `x86-jit` is made on each machine by
/// `nicsim xdp calibrate`.
pub const BUILTIN: &[(&str, &str)] = &[("nfp", include_str!("../targets/nfp.toml"))];

/// The TOML text of built-in target `name`.
pub fn builtin(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

impl Target {
    /// Built-in target `name` ([`BUILTIN`]), parsed; its errors name `<name>.toml`.
    pub fn builtin(name: &str) -> Option<Result<Target, TargetError>> {
        builtin(name).map(|text| Target::from_toml(text, &format!("{name}.toml")))
    }

    /// The target with no MAC limit: the rates of the cores and DRAM alone, the paper's
    /// evaluation setting (§6; `--no-mac-limit`).
    pub fn without_mac_limit(mut self) -> Target {
        self.limits.mac_pps = f64::INFINITY;
        self
    }

    /// Parse a target file's text (the one config loader, `nicsim_kernel::config::from_toml`,
    /// then [`Validate::validate`]); `file` names it in errors.
    pub fn from_toml(text: &str, file: &str) -> Result<Target, TargetError> {
        nicsim_kernel::config::from_toml(text).map_err(|e: ConfigError| TargetError {
            file: file.to_string(),
            path: e.path,
            msg: e.msg,
        })
    }

    /// The cost of helper `name` on a map of type `map_type` (`array`, `hash`, …), if the
    /// target models it.
    pub fn helper(&self, name: &str, map_type: Option<&str>) -> Option<&HelperCost> {
        map_type
            .and_then(|m| self.helpers.get(&format!("{name}.{m}")))
            .or_else(|| self.helpers.get(name))
    }

    /// Packets per second the cores sustain at `cycles` program cycles per packet.
    pub fn cores_pps(&self, cycles: f64) -> f64 {
        self.cores.count as f64 * self.cores.clock_mhz * 1e6 / (self.cores.overhead_cycles + cycles)
    }

    /// Packets per second the DRAM engine sustains at `dram_cycles` per packet.
    pub fn dram_pps(&self, dram_cycles: f64) -> f64 {
        match &self.dram {
            Some(d) if dram_cycles > 0.0 => d.clock_mhz * 1e6 / dram_cycles,
            _ => f64::INFINITY,
        }
    }
}
impl Validate for Target {
    type Checked = ();

    /// Every rate positive (the MAC's may be infinite), every other rate and cost a finite
    /// number, costs not negative; each problem at its key.
    fn check(&self) -> Result<(), ConfigError> {
        let t = self;
        if t.name.chars().count() > MAX_NAME_CHARS {
            return err(
                "name",
                format!(
                    "must be at most {MAX_NAME_CHARS} characters (it titles tables and figures)"
                ),
            );
        }
        // Not `x <= 0.0`, which NaN passes: NaN is not positive either.
        let positive = |x: f64| x > 0.0;
        // Each problem names its key.
        let mut positives = vec![
            ("cores.clock_mhz", t.cores.clock_mhz),
            ("cores.count", t.cores.count as f64),
            ("limits.mac_pps", t.limits.mac_pps),
            ("limits.min_packet_bytes", t.limits.min_packet_bytes as f64),
        ];
        if let Some(d) = &t.dram {
            positives.extend([
                ("dram.clock_mhz", d.clock_mhz),
                ("dram.read_mops", d.read_mops),
                ("dram.write_mops", d.write_mops),
                ("dram.atomic_mops", d.atomic_mops),
            ]);
        }
        if let Some((key, _)) = positives.iter().find(|(_, x)| !positive(*x)) {
            return err(*key, "must be a positive number");
        }
        // Clocks and rates within what hardware has, so that the times and rates derived from
        // them are finite numbers: a clock of 5e-324 MHz passed as positive and its nanoseconds
        // overflowed to infinity, which the summary cannot hold.
        let mut ranged = vec![
            (
                "cores.clock_mhz",
                t.cores.clock_mhz,
                MIN_CLOCK_MHZ,
                MAX_CLOCK_MHZ,
            ),
            ("limits.mac_pps", t.limits.mac_pps, MIN_RATE, f64::INFINITY),
        ];
        if let Some(d) = &t.dram {
            ranged.extend([
                ("dram.clock_mhz", d.clock_mhz, MIN_CLOCK_MHZ, MAX_CLOCK_MHZ),
                ("dram.read_mops", d.read_mops, MIN_RATE, MAX_CLOCK_MHZ),
                ("dram.write_mops", d.write_mops, MIN_RATE, MAX_CLOCK_MHZ),
                ("dram.atomic_mops", d.atomic_mops, MIN_RATE, MAX_CLOCK_MHZ),
            ]);
        }
        if let Some((key, _, lo, hi)) = ranged.iter().find(|(_, x, lo, hi)| !(lo..=hi).contains(&x))
        {
            return err(*key, format!("must be from {lo} to {hi}"));
        }
        // Linux's range for an Ethernet device's MTU (ETH_MIN_MTU, ETH_MAX_MTU): the IPv4
        // minimum of 68 bytes (RFC 791) up to what a 16-bit IP length can carry.
        if !(MIN_MTU_BYTES..=MAX_MTU_BYTES).contains(&t.limits.mtu_bytes) {
            return err(
                "limits.mtu_bytes",
                format!(
                    "must be {MIN_MTU_BYTES}..={MAX_MTU_BYTES} bytes (an Ethernet device's MTU)"
                ),
            );
        }
        if t.limits.min_packet_bytes as u64 > t.limits.mtu_bytes as u64 + 14 {
            return err(
                "limits.min_packet_bytes",
                "must be at most limits.mtu_bytes + 14 (the largest packet)",
            );
        }
        // The MAC's packet rate may be infinite (`inf`: no MAC, as the calibrated x86-jit target
        // has it; checked positive above). Every other rate and cost a finite number (costs not
        // negative), so that the rates the analysis divides out of them are positive numbers.
        let i = &t.insn;
        let m = &t.memory;
        let mut numbers: Vec<(String, f64)> = vec![
            ("cores.clock_mhz".into(), t.cores.clock_mhz),
            ("cores.overhead_cycles".into(), t.cores.overhead_cycles),
            ("insn.alu".into(), i.alu),
            ("insn.alu64".into(), i.alu64.unwrap_or(0.0)),
            ("insn.mul".into(), i.mul),
            ("insn.div".into(), i.div),
            ("insn.endian".into(), i.endian),
            ("insn.ld_imm64".into(), i.ld_imm64),
            ("insn.jmp_compare".into(), i.jmp_compare),
            ("insn.jmp64_compare".into(), i.jmp64_compare.unwrap_or(0.0)),
            ("insn.jmp_taken".into(), i.jmp_taken),
            ("insn.jmp_not_taken".into(), i.jmp_not_taken),
            ("insn.ja".into(), i.ja),
            ("insn.exit".into(), i.exit),
            ("insn.call_local".into(), i.call_local),
            ("insn.stack".into(), i.stack),
            ("insn.immed".into(), i.immed),
            ("memory.issue_wait_cycles".into(), m.issue_wait_cycles),
            ("memory.issue_nowait_cycles".into(), m.issue_nowait_cycles),
            (
                "memory.packet_latency_cycles".into(),
                m.packet_latency_cycles,
            ),
            ("memory.map_latency_cycles".into(), m.map_latency_cycles),
            (
                "memory.atomic_cycles".into(),
                m.atomic_cycles.unwrap_or(0.0),
            ),
            (
                "memory.map_latency_large_cycles".into(),
                m.map_latency_large_cycles.unwrap_or(0.0),
            ),
            (
                "memory.atomic_large_cycles".into(),
                m.atomic_large_cycles.unwrap_or(0.0),
            ),
        ];
        if let Some(d) = &t.dram {
            numbers.extend([
                ("dram.clock_mhz".into(), d.clock_mhz),
                ("dram.read_mops".into(), d.read_mops),
                ("dram.write_mops".into(), d.write_mops),
                ("dram.atomic_mops".into(), d.atomic_mops),
            ]);
        }
        for (name, h) in &t.helpers {
            numbers.extend([
                (format!("helpers.{name}.cycles"), h.cycles),
                (format!("helpers.{name}.dram_reads"), h.dram_reads),
                (format!("helpers.{name}.dram_writes"), h.dram_writes),
                (format!("helpers.{name}.dram_atomics"), h.dram_atomics),
                (
                    format!("helpers.{name}.cycles_per_byte"),
                    h.cycles_per_byte.unwrap_or(0.0),
                ),
            ]);
            if h.bytes == Some(0) {
                return err(format!("helpers.{name}.bytes"), "must be at least 1");
            }
        }
        if let Some((key, _)) = numbers.iter().find(|(_, x)| !(x.is_finite() && *x >= 0.0)) {
            return err(key.as_str(), "must be a finite number, not negative");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::HelperCost;

    #[test]
    fn a_sized_helper_costs_its_bytes_beyond_those_measured() {
        let h = |bytes, cycles_per_byte| HelperCost {
            cycles: 20.0,
            bytes,
            cycles_per_byte,
            ..HelperCost::default()
        };
        // Up to the bytes measured, the call's cost; beyond, the measured cost per byte.
        let measured = h(None, Some(0.01));
        assert_eq!(measured.cycles_for_bytes(4), 20.0);
        assert_eq!(measured.cycles_for_bytes(64), 20.0);
        assert!((measured.cycles_for_bytes(1024) - 29.6).abs() < 1e-9);
        // A target that does not say: each byte as the call's bytes cost, 1,024 bytes as 16 calls.
        assert!((h(None, None).cycles_for_bytes(1024) - 320.0).abs() < 1e-9);
        assert!((h(Some(128), Some(1.0)).cycles_for_bytes(256) - 148.0).abs() < 1e-9);
    }
}
