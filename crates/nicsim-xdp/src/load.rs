//! Loading a BPF ELF object: the one XDP program to analyse, its maps, and its source lines.
//!
//! Programs are found as libbpf, iproute2 and older loaders find them (docs/xdp.md, "Load"):
//! every function in an executable section other than `.text`, whatever the section's name
//! (`xdp`, `xdp.frags`, `xdp/…`, iproute2's `prog`, `xdp_fwd`, custom names; a section without
//! function symbols is one program), and, when there is no such section, every global
//! function in `.text` (objects built the way the XDP paper's were). Static functions in
//! `.text` are subprograms. The program's bpf-to-bpf callees are linked after it as libbpf
//! links them, and its relocations applied here: maps, global data, subprogram calls, function
//! addresses (`bpf_loop` callbacks, linked as callees are) and calls of kernel functions
//! (kfuncs, which become [`Insn::Kfunc`](crate::insn::Insn::Kfunc)).
//!
//! Maps: legacy `struct bpf_map_def` entries in a `maps` section of any of the sizes older
//! loaders used (read here), and BTF-defined maps (`.maps`, map-in-map included) and global
//! data (`.data`, `.rodata`, `.bss` and their `.rodata.str1.1`-like kin), parsed by `aya-obj`,
//! the loader library of the Aya project, from a copy of the object in which the code and the
//! legacy `maps` sections are hidden (aya-obj refuses section names it does not know). Every
//! map gets a stable index (maps sorted by name; the index stands where the kernel would put a
//! map fd). The instructions are decoded and the BTF line information (`.BTF.ext`) attached to
//! each one when the object has it.

use std::collections::{BTreeMap, HashMap};

use aya_obj::Object;
use object::{
    Object as _, ObjectSection as _, ObjectSymbol as _, RelocationTarget, SectionFlags,
    SectionKind, SymbolKind, SymbolSection,
};

use crate::insn::{decode, Code, Raw, PSEUDO_CALL, PSEUDO_KFUNC_CALL, PSEUDO_MAP_FD};
use crate::insn::{PSEUDO_FUNC, PSEUDO_MAP_VALUE};

/// Kernel map types the analyzer models (`enum bpf_map_type`).
pub const MAP_HASH: u32 = 1;
/// `BPF_MAP_TYPE_ARRAY`.
pub const MAP_ARRAY: u32 = 2;
/// A program array: `bpf_tail_call` jumps to the program in one of its slots.
pub const MAP_PROG_ARRAY: u32 = 3;
/// `BPF_MAP_TYPE_PERCPU_HASH`.
pub const MAP_PERCPU_HASH: u32 = 5;
/// `BPF_MAP_TYPE_PERCPU_ARRAY`.
pub const MAP_PERCPU_ARRAY: u32 = 6;
/// `BPF_MAP_TYPE_LRU_HASH`.
pub const MAP_LRU_HASH: u32 = 9;
/// `BPF_MAP_TYPE_LRU_PERCPU_HASH`.
pub const MAP_LRU_PERCPU_HASH: u32 = 10;
/// Longest-prefix-match trie: keys are `{u32 prefixlen; u8 data[]}`.
pub const MAP_LPM_TRIE: u32 = 11;
/// `BPF_MAP_TYPE_DEVMAP`: the devices `bpf_redirect_map` sends to.
pub const MAP_DEVMAP: u32 = 14;
/// Maps of maps: a lookup gives an inner map (`MapDef::inner` describes it) or NULL.
pub const MAP_ARRAY_OF_MAPS: u32 = 12;
/// `BPF_MAP_TYPE_HASH_OF_MAPS`.
pub const MAP_HASH_OF_MAPS: u32 = 13;
/// `BPF_MAP_TYPE_QUEUE`: values without keys, first in first out (`bpf_map_push_elem`,
/// `_pop_elem`, `_peek_elem`).
pub const MAP_QUEUE: u32 = 22;
/// `BPF_MAP_TYPE_STACK`: as a queue, last in first out.
pub const MAP_STACK: u32 = 23;
/// `BPF_MAP_TYPE_BLOOM_FILTER`: values pushed and tested (`bpf_map_peek_elem`), never removed.
pub const MAP_BLOOM_FILTER: u32 = 30;

/// The names of `enum bpf_map_type` (Linux 6.9), by value.
const MAP_TYPE_NAMES: [&str; 34] = [
    "unspec",
    "hash",
    "array",
    "prog_array",
    "perf_event_array",
    "percpu_hash",
    "percpu_array",
    "stack_trace",
    "cgroup_array",
    "lru_hash",
    "lru_percpu_hash",
    "lpm_trie",
    "array_of_maps",
    "hash_of_maps",
    "devmap",
    "sockmap",
    "cpumap",
    "xskmap",
    "sockhash",
    "cgroup_storage",
    "reuseport_sockarray",
    "percpu_cgroup_storage",
    "queue",
    "stack",
    "sk_storage",
    "devmap_hash",
    "struct_ops",
    "ringbuf",
    "inode_storage",
    "task_storage",
    "bloom_filter",
    "user_ringbuf",
    "cgrp_storage",
    "arena",
];

/// A map the program uses, as the object defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapDef {
    /// The map's name (its symbol, or the global-data section's name).
    pub name: String,
    /// Kernel map type (`enum bpf_map_type`, e.g. [`MAP_HASH`]).
    pub map_type: u32,
    /// Bytes of a key.
    pub key_size: u32,
    /// Bytes of a value.
    pub value_size: u32,
    /// Most entries the map holds (0: the loader sets it before loading).
    pub max_entries: u32,
    /// `map_flags` (`BPF_F_*`).
    pub flags: u32,
    /// Initial contents of a global-data map (`.data`, `.rodata`, `.bss`).
    pub data: Vec<u8>,
    /// A read-only global-data map (`.rodata`): its bytes are constants.
    pub frozen: bool,
    /// For a map of maps (`array_of_maps`, `hash_of_maps`), the inner maps' definition (BTF
    /// `values`, iproute2's `inner_id`, or the samples' `inner_map_idx`), when the object
    /// gives it.
    pub inner: Option<Box<MapDef>>,
    /// The kernel-managed fields of its values (a `bpf_spin_lock`, a `bpf_timer`, …) by struct
    /// name and byte offset, from the object's BTF ([`crate::btf::Types::special_fields`]):
    /// the kernel creates such a map only with BTF that places them (`kernel.rs`).
    pub special_fields: Vec<(&'static str, u32)>,
}

impl MapDef {
    /// The kernel's name of the map's type (`hash`, `array`, `lpm_trie`, …; `other` past the
    /// types Linux 6.9 knows).
    pub fn type_name(&self) -> &'static str {
        MAP_TYPE_NAMES
            .get(self.map_type as usize)
            .copied()
            .unwrap_or("other")
    }
    /// An array or per-CPU array.
    pub fn is_array(&self) -> bool {
        matches!(self.map_type, MAP_ARRAY | MAP_PERCPU_ARRAY)
    }
    /// A map whose values are maps.
    pub fn is_map_of_maps(&self) -> bool {
        matches!(self.map_type, MAP_ARRAY_OF_MAPS | MAP_HASH_OF_MAPS)
    }
    /// A program array (tail-call targets).
    pub fn is_prog_array(&self) -> bool {
        self.map_type == MAP_PROG_ARRAY
    }
    /// Local storage of a socket, inode, task or cgroup (`BPF_MAP_TYPE_SK_STORAGE` 24,
    /// `INODE_STORAGE` 28, `TASK_STORAGE` 29, `CGRP_STORAGE` 32): no entries of its own (its
    /// `max_entries` is 0, the only size the kernel takes), a value per object, and BTF for its
    /// key and value (kernel/bpf/bpf_local_storage.c, `bpf_local_storage_map_alloc_check`).
    pub fn is_local_storage(&self) -> bool {
        matches!(self.map_type, 24 | 28 | 29 | 32)
    }

    /// A queue, stack or bloom filter: values without keys, pushed, popped and peeked (their
    /// entries are named by position: 4 bytes big-endian, the oldest first).
    pub fn is_keyless(&self) -> bool {
        matches!(self.map_type, MAP_QUEUE | MAP_STACK | MAP_BLOOM_FILTER)
    }
}

/// The kernel's `KMALLOC_MAX_SIZE` (x86-64, 4 KiB pages: `1 << (MAX_PAGE_ORDER + PAGE_SHIFT)`,
/// 4 MiB), which bounds a map's key and value (kernel/bpf/arraymap.c, hashtab.c: larger is
/// `E2BIG`).
pub const KMALLOC_MAX_SIZE: u64 = 4 << 20;
/// `sizeof(struct htab_elem)` (kernel/bpf/hashtab.c) on x86-64.
const HTAB_ELEM_BYTES: u64 = 48;
/// An LPM trie's key: a 4-byte prefix length and at most 256 bytes of data
/// (kernel/bpf/lpm_trie.c, `LPM_KEY_SIZE_MAX`).
const LPM_KEY_SIZE_MAX: u64 = 4 + 256;

/// A map's key and value sizes against the kernel's own limits for its type, checked when the
/// object is loaded, before anything is sized by them: the kernel refuses the map (`E2BIG`) and
/// so does the loader, with an error naming the map and the field.
fn check_map_sizes(m: &MapDef) -> Result<(), LoadError> {
    let (key, value) = (u64::from(m.key_size), u64::from(m.value_size));
    let err = |field: &str, v: u64, limit: String| {
        Err(LoadError::Parse(format!(
            "map '{}' ({}): {field} {v} is more than the kernel accepts ({limit})",
            m.name,
            m.type_name()
        )))
    };
    for (field, v) in [("key_size", key), ("value_size", value)] {
        if v > KMALLOC_MAX_SIZE {
            return err(
                field,
                v,
                format!("at most {KMALLOC_MAX_SIZE} bytes, KMALLOC_MAX_SIZE"),
            );
        }
    }
    match m.map_type {
        MAP_HASH | MAP_PERCPU_HASH | MAP_LRU_HASH | MAP_LRU_PERCPU_HASH | MAP_HASH_OF_MAPS
            if key + value >= KMALLOC_MAX_SIZE - HTAB_ELEM_BYTES =>
        {
            err(
                "key_size + value_size",
                key + value,
                format!(
                    "below {} bytes: KMALLOC_MAX_SIZE less a hash element's header",
                    KMALLOC_MAX_SIZE - HTAB_ELEM_BYTES
                ),
            )
        }
        MAP_LPM_TRIE if key > LPM_KEY_SIZE_MAX => err(
            "key_size",
            key,
            format!("an LPM trie's key is at most {LPM_KEY_SIZE_MAX} bytes"),
        ),
        _ => Ok(()),
    }
}

/// Most tail calls one packet's run may make (the kernel's `MAX_TAIL_CALL_CNT`, Linux 5.17
/// on): the 34th `bpf_tail_call` of a run fails and returns.
pub const MAX_TAIL_CALLS: u32 = 33;

/// A program a prog array's slot holds (a tail-call target), linked into the analysed
/// program's code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailTarget {
    /// ELF section of the target program.
    pub section: String,
    /// Function name of the target program.
    pub name: String,
    /// Its first instruction in [`Program::code`].
    pub entry: u32,
    /// The object it comes from when that is another object than the program's (its path, as
    /// `--tail-call` gave it); empty for the program's own object.
    pub object: String,
    /// For a program of another object: the index in [`Program::maps`] of each of that
    /// object's maps, in its own order (its maps as [`load_full`] numbers them).
    pub maps: Vec<u32>,
}

/// What a program array holds when the program runs (docs/xdp.md, "Tail calls").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgArray {
    /// Exactly these slots (slot → index in [`Program::tail_targets`]); the others are
    /// empty. From the object's declarative initialisation (`.values`), or `--tail-call`.
    Known(BTreeMap<u32, usize>),
    /// Nothing declares its contents: user space may put any program in any slot.
    Unknown,
}

/// A `--tail-call MAP=INDEX:PROGRAM` entry: slot `index` of prog array `map` holds the
/// object's program `program` (a function or section name, as `--program` takes them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailSpec {
    /// Name of the prog array.
    pub map: String,
    /// Slot of the prog array.
    pub index: u32,
    /// The program the slot holds (function or section name); empty: the array holds no
    /// program at all (`--tail-call MAP=none`: the program is the last of its chain), and
    /// `index` is not used.
    pub program: String,
}

/// A source line from BTF line information.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SrcLine {
    /// Source file path.
    pub file: String,
    /// Line number in the file.
    pub line: u32,
    /// The line's text, trimmed.
    pub text: String,
}

impl SrcLine {
    /// `file:line` with the file's base name.
    pub fn short(&self) -> String {
        let base = self.file.rsplit('/').next().unwrap_or(&self.file);
        format!("{base}:{}", self.line)
    }
}

/// An XDP program loaded from an object: its instructions, maps and source lines.
#[derive(Debug, Clone)]
pub struct Program {
    /// ELF section of the program (e.g. `xdp`).
    pub section: String,
    /// Function name of the program (the section's name for a section without functions).
    pub name: String,
    /// The instruction slots as in the object, relocated.
    pub raw: Vec<Raw>,
    /// The decoded instructions, one per slot.
    pub code: Code,
    /// The maps the code refers to, by map index.
    pub maps: Vec<MapDef>,
    /// For every instruction slot, the index in `lines` of the source line it comes from.
    pub line_of: Vec<Option<u32>>,
    /// Source lines from BTF line information, indexed by `line_of`.
    pub lines: Vec<SrcLine>,
    /// The object's `license` section (the kernel allows GPL-only helpers to GPL programs).
    pub license: String,
    /// The kernel functions the program calls, by the index an
    /// [`Insn::Kfunc`](crate::insn::Insn::Kfunc) holds.
    pub kfuncs: Vec<String>,
    /// The program's own instructions, with its bpf-to-bpf callees: `raw[..main_len]` (what the
    /// kernel loads). The tail-call targets' code, and their callees, follow.
    pub main_len: usize,
    /// Tail-call targets, linked after the program.
    pub tail_targets: Vec<TailTarget>,
    /// The contents of every prog array, by map index.
    pub prog_arrays: BTreeMap<u32, ProgArray>,
    /// The functions linked into [`Program::raw`]: name and first instruction.
    pub functions: Vec<(String, u32)>,
    /// Maps pinned by name (libbpf's `LIBBPF_PIN_BY_NAME`): pin name and map index. A program
    /// of another object shares such a map instead of getting its own (see `crate::link`).
    pub pins: Vec<(String, u32)>,
    /// The BTF file the object's CO-RE relocations were resolved against (`crate::core_reloc`);
    /// `None` for an object without CO-RE relocations.
    pub core_btf: Option<String>,
    /// The `KERNEL_VERSION` code of the kernel the program is analysed for: the running
    /// kernel's (`uname -r`), whose verifier checks it and on which x86-jit is calibrated;
    /// `None` when its release does not parse (taken for a recent kernel). It decides the
    /// helpers whose results changed between kernels (`bpf_csum_diff`: `crate::helpers::csum`).
    pub kernel_version: Option<u32>,
}

/// The name of the synthetic inner map of map of maps `outer` (see [`add_inner_maps`]).
pub fn inner_map_name(outer: &str) -> String {
    format!("{outer}.inner")
}

/// For every map of maps whose inner definition the object gives (and whose inner maps are not
/// prog arrays), one more map at the end of `maps`: the inner map a lookup in it finds, named
/// `<outer>.inner`, of the inner definition, its contents unknown like any map's. Every slot
/// of the outer map is modelled as holding this one map (the object's `.values` initialiser
/// names maps whose contents are as unknown to the analysis; the kernel's user space may store
/// any map of the inner definition).
pub fn add_inner_maps(maps: &mut Vec<MapDef>) {
    let extra: Vec<MapDef> = maps
        .iter()
        .filter(|m| m.is_map_of_maps())
        .filter_map(|m| {
            let inner = m.inner.as_deref()?;
            if inner.is_prog_array() || inner.is_map_of_maps() {
                return None;
            }
            let mut d = inner.clone();
            d.name = inner_map_name(&m.name);
            d.data = Vec::new();
            d.frozen = false;
            d.inner = None;
            Some(d)
        })
        .filter(|d| !maps.iter().any(|m| m.name == d.name))
        .collect();
    maps.extend(extra);
}

impl Program {
    /// The index of the inner map a lookup in map of maps `m` finds (the synthetic
    /// `<outer>.inner` map), if the analysis models it.
    pub fn inner_map(&self, m: u32) -> Option<u32> {
        let outer = self.maps.get(m as usize)?;
        if !outer.is_map_of_maps() {
            return None;
        }
        let want = inner_map_name(&outer.name);
        self.maps
            .iter()
            .rposition(|d| d.name == want)
            .map(|i| i as u32)
    }

    /// The map of maps whose synthetic inner map (see [`add_inner_maps`]) map `m` is.
    pub fn outer_of(&self, m: u32) -> Option<u32> {
        let name = self.maps.get(m as usize)?.name.strip_suffix(".inner")?;
        let o = self.maps.iter().position(|d| d.name == name)? as u32;
        (self.inner_map(o) == Some(m)).then_some(o)
    }

    /// Maps declared with `max_entries 0`: their loader sets the size before loading, so the
    /// object does not say it (the analysis takes every size from 1 on).
    pub fn unsized_maps(&self) -> Vec<String> {
        self.maps
            .iter()
            .filter(|m| m.max_entries == 0 && !m.is_local_storage())
            .map(|m| m.name.clone())
            .collect()
    }

    /// Give maps the sizes a loader gives them (`name`, entries), in place of the declared
    /// ones. A name that is no map of the program, or a size of 0, is an error naming it.
    pub fn resize(&mut self, sizes: &[(String, u32)]) -> Result<(), String> {
        for (name, n) in sizes {
            if *n == 0 {
                return Err(format!("map '{name}': a size must be at least 1"));
            }
            let Some(m) = self.maps.iter_mut().find(|m| &m.name == name) else {
                let names: Vec<&str> = self.maps.iter().map(|m| m.name.as_str()).collect();
                return Err(format!(
                    "the program has no map '{name}' (its maps: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ));
            };
            m.max_entries = *n;
        }
        Ok(())
    }

    /// The tail calls the analysis follows: (map, slot, entry instruction) of every slot of a
    /// known prog array that holds a program, in order.
    pub fn tail_slots(&self) -> Vec<(u32, u32, u32)> {
        let mut out = Vec::new();
        for (&m, a) in &self.prog_arrays {
            if let ProgArray::Known(slots) = a {
                for (&k, &t) in slots {
                    out.push((m, k, self.tail_targets[t].entry));
                }
            }
        }
        out
    }

    /// The code calls `bpf_tail_call`.
    pub fn has_tail_call(&self) -> bool {
        self.code.iter().any(|i| {
            matches!(
                i,
                Some(crate::insn::Insn::Call {
                    helper: crate::absint::HELPER_TAIL_CALL
                })
            )
        })
    }

    /// Prog arrays whose contents nothing declares, when the code makes tail calls: a
    /// tail call through one may run any program, so no rate can be guaranteed.
    pub fn unbounded_prog_arrays(&self) -> Vec<String> {
        if !self.has_tail_call() {
            return Vec::new();
        }
        let used: std::collections::BTreeSet<u32> = self
            .code
            .iter()
            .filter_map(|i| match i {
                Some(crate::insn::Insn::LdImm64 {
                    imm: crate::insn::Imm64::Map(m),
                    ..
                }) => Some(*m),
                _ => None,
            })
            .collect();
        self.prog_arrays
            .iter()
            .filter(|(m, a)| **a == ProgArray::Unknown && used.contains(m))
            .map(|(&m, _)| self.maps[m as usize].name.clone())
            .collect()
    }

    /// The source line of instruction `pc`, if known.
    pub fn line(&self, pc: usize) -> Option<&SrcLine> {
        self.line_of
            .get(pc)
            .copied()
            .flatten()
            .map(|i| &self.lines[i as usize])
    }
    /// The name of kfunc `id` (`#id` if the program does not name it).
    pub fn kfunc_name(&self, id: u32) -> String {
        self.kfuncs
            .get(id as usize)
            .cloned()
            .unwrap_or_else(|| format!("#{id}"))
    }
}

/// Why an object could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file is not ELF.
    #[error("not an ELF file: {0}")]
    NotElf(String),
    /// The ELF file is not for the BPF machine.
    #[error("not a BPF object (ELF machine is {0}, expected BPF)")]
    NotBpf(String),
    /// The object is malformed or uses something the loader does not handle.
    #[error("bad BPF object: {0}")]
    Parse(String),
    /// `--section`/`--program` match nothing.
    #[error("no program {want} (programs: {available})")]
    NoSection {
        /// The program asked for.
        want: String,
        /// The programs the object has.
        available: String,
    },
    /// No candidate libbpf or iproute2 would load as XDP; `.0` says what there is.
    #[error("the object has no XDP program ({0})")]
    NoXdp(String),
    /// Several candidates and no choice (or a choice that matches several).
    #[error("{what}: {list}; choose one with --program NAME (or --section NAME)")]
    Ambiguous {
        /// What is ambiguous.
        what: String,
        /// The candidates.
        list: String,
    },
    /// A `--tail-call` that names no prog array, slot or program of the object.
    #[error("--tail-call {spec}: {why}")]
    TailCall {
        /// The entry, as `MAP=INDEX:PROGRAM`.
        spec: String,
        /// What it names that the object lacks.
        why: String,
    },
    /// A `--tail-call` or `--dispatch` entry that names another object, and what is wrong with
    /// it (`crate::link`): the whole line.
    #[error("{0}")]
    Link(String),
    /// An input beside the object that the loader reads (the kernel configuration that
    /// `NICSIM_KCONFIG` or `--kconfig` names) is bad: the line names it, not the object.
    #[error("{0}")]
    Input(String),
    /// An instruction the decoder rejects.
    #[error("{err} ({at})")]
    Decode {
        /// The decoder's error.
        err: crate::insn::DecodeError,
        /// Where the instruction is in the object.
        at: String,
    },
}

/// How libbpf reads a program section's name (`SEC("…")`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionType {
    /// `xdp`, `xdp.frags`, `xdp/…`, and the `xdp…` names older libbpf took by prefix
    /// (`xdp_prog`, `xdp_drop_vlan_4011`).
    Xdp,
    /// A name libbpf types as another program type (`tc`, `classifier`, `socket`,
    /// `kprobe/…`, …).
    Other,
    /// A name libbpf does not type (iproute2's `prog`, custom names, `.text`): loaders that
    /// are told the type (`ip link set … xdp obj O sec S`) load it as XDP.
    Untyped,
}

/// The first component of section names libbpf gives a program type other than XDP
/// (tools/lib/bpf/libbpf.c, `section_defs`), before any `/` or `.`.
const OTHER_PROGRAM_SECTIONS: &[&str] = &[
    "socket",
    "sk_reuseport",
    "kprobe",
    "uprobe",
    "kretprobe",
    "uretprobe",
    "ksyscall",
    "kretsyscall",
    "usdt",
    "tc",
    "tcx",
    "netkit",
    "classifier",
    "action",
    "tracepoint",
    "tp",
    "raw_tracepoint",
    "raw_tp",
    "tp_btf",
    "fentry",
    "fmod_ret",
    "fexit",
    "freplace",
    "lsm",
    "lsm_cgroup",
    "iter",
    "syscall",
    "lwt_in",
    "lwt_out",
    "lwt_xmit",
    "lwt_seg6local",
    "sockops",
    "sk_skb",
    "sk_msg",
    "lirc_mode2",
    "flow_dissector",
    "cgroup_skb",
    "cgroup",
    "struct_ops",
    "sk_lookup",
    "perf_event",
    "netfilter",
];

impl SectionType {
    /// How libbpf types a program in section `section`.
    pub fn of(section: &str) -> SectionType {
        if section.starts_with("xdp") {
            return SectionType::Xdp;
        }
        let first = section.split(['/', '.']).next().unwrap_or("");
        if OTHER_PROGRAM_SECTIONS.contains(&first) {
            SectionType::Other
        } else {
            SectionType::Untyped
        }
    }
}

/// A function the object offers as a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// ELF section of the function.
    pub section: String,
    /// The function's name.
    pub name: String,
    /// How libbpf types its section.
    pub kind: SectionType,
    sec: usize,
    start: u64,
}

/// The error and its causes, joined by ": ".
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

use crate::btf::{cstr, strings as btf_strings, u32_le};

/// A BTF-defined map's variable in `.maps`: its name, its place in the section and the byte
/// offset of its `values` member (the declarative initialisation of a prog array or a map of
/// maps: one 8-byte pointer per slot), if it has one.
#[derive(Debug, Clone)]
struct MapVar {
    name: String,
    off: u64,
    size: u64,
    values: Option<u64>,
    /// Where in the `.BTF` section the `values` member's name offset is, when its elements
    /// are functions (a prog array's programs), which aya-obj cannot parse (it takes `values`
    /// for a map of maps' inner maps).
    values_fn_name_at: Option<usize>,
}

/// The variables of the `.maps` DATASEC of the `.BTF` section `data` (what libbpf reads to
/// place `.values` relocations). A malformed section gives what could be read.
fn btf_map_vars(data: &[u8]) -> Vec<MapVar> {
    btf_datasec_vars(data, ".maps")
}

/// A member of a struct variable of a DATASEC (see [`btf_datasec_structs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BtfMember {
    /// The member's name.
    pub name: String,
    /// Its byte offset in the struct.
    pub off: u64,
    /// Its size in bytes (an array's whole size), when BTF gives it.
    pub size: Option<u64>,
    /// The value of a libbpf `__uint(name, value)` member (a pointer to an array of `value`
    /// elements): `value`.
    pub uint: Option<u32>,
}

/// A struct variable of a DATASEC: its name, its place in the section, its struct's name and
/// its members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BtfStructVar {
    pub name: String,
    pub off: u64,
    pub type_name: String,
    pub members: Vec<BtfMember>,
}

/// The struct variables of the DATASEC `sec` of the `.BTF` section `data` (libxdp's
/// `.xdp_run_config`, the dispatcher's `.rodata` config, `xdp_metadata`). A malformed section
/// gives what could be read.
pub(crate) fn btf_datasec_structs(data: &[u8], sec: &str) -> Vec<BtfStructVar> {
    let mut out = Vec::new();
    let _ = (|| -> Option<()> {
        let t = crate::btf::Types::parse(data)?;
        let strs = t.strs;
        use crate::btf::{KIND_ARRAY, KIND_DATASEC, KIND_PTR, KIND_STRUCT, KIND_VAR};
        for ds in &t.types {
            if ds.kind != KIND_DATASEC || cstr(strs, ds.name) != sec {
                continue;
            }
            for v in ds.body.chunks_exact(12) {
                let (ty, off) = (u32_le(v, 0)?, u32_le(v, 4)?);
                let Some(var) = t.types.get(ty as usize).filter(|x| x.kind == KIND_VAR) else {
                    continue;
                };
                let Some(st) = t
                    .kind_of(var.size_or_type)
                    .filter(|x| x.kind == KIND_STRUCT)
                else {
                    continue;
                };
                let mut ms = Vec::new();
                for m in st.body.chunks_exact(12) {
                    let bits = u32_le(m, 8)?;
                    let bits = if st.kflag { bits & 0xff_ffff } else { bits };
                    let mty = u32_le(m, 4)?;
                    // `__uint(name, value)`: `int (*name)[value]`.
                    let uint = t
                        .kind_of(mty)
                        .filter(|x| x.kind == KIND_PTR)
                        .and_then(|p| t.kind_of(p.size_or_type))
                        .filter(|x| x.kind == KIND_ARRAY)
                        .and_then(|arr| u32_le(arr.body, 8));
                    ms.push(BtfMember {
                        name: cstr(strs, u32_le(m, 0)?),
                        off: bits as u64 / 8,
                        size: t.size(mty),
                        uint,
                    });
                }
                out.push(BtfStructVar {
                    name: cstr(strs, var.name),
                    off: off as u64,
                    type_name: cstr(strs, st.name),
                    members: ms,
                });
            }
        }
        Some(())
    })();
    out
}

/// The variables of the DATASEC `sec` of the `.BTF` section `data` (`.maps`, `.kconfig`).
fn btf_datasec_vars(data: &[u8], sec: &str) -> Vec<MapVar> {
    let mut out = Vec::new();
    let _ = (|| -> Option<()> {
        let t = crate::btf::Types::parse(data)?;
        let strs = t.strs;
        use crate::btf::{
            KIND_ARRAY, KIND_DATASEC, KIND_FUNC_PROTO, KIND_PTR, KIND_STRUCT, KIND_VAR,
        };
        for ds in &t.types {
            if ds.kind != KIND_DATASEC || cstr(strs, ds.name) != sec {
                continue;
            }
            for v in ds.body.chunks_exact(12) {
                let (ty, off, size) = (u32_le(v, 0)?, u32_le(v, 4)?, u32_le(v, 8)?);
                let Some(var) = t.types.get(ty as usize).filter(|x| x.kind == KIND_VAR) else {
                    continue;
                };
                let (mut values, mut values_fn_name_at) = (None, None);
                if let Some(st) = t
                    .kind_of(var.size_or_type)
                    .filter(|x| x.kind == KIND_STRUCT)
                {
                    for (j, m) in st.body.chunks_exact(12).enumerate() {
                        if cstr(strs, u32_le(m, 0)?) != "values" {
                            continue;
                        }
                        let bits = u32_le(m, 8)?;
                        let bits = if st.kflag { bits & 0xff_ffff } else { bits };
                        values = Some(bits as u64 / 8);
                        // values: an array of pointers to functions?
                        let elem = match t.kind_of(u32_le(m, 4)?) {
                            Some(a) if a.kind == KIND_ARRAY => u32_le(a.body, 0),
                            _ => None,
                        };
                        let target = match elem.and_then(|e| t.kind_of(e)) {
                            Some(p) if p.kind == KIND_PTR => {
                                t.kind_of(p.size_or_type).map(|x| x.kind)
                            }
                            _ => None,
                        };
                        if target == Some(KIND_FUNC_PROTO) {
                            values_fn_name_at = Some(st.at + 12 * j);
                        }
                    }
                }
                out.push(MapVar {
                    name: cstr(strs, var.name),
                    off: off as u64,
                    size: size as u64,
                    values,
                    values_fn_name_at,
                });
            }
        }
        Some(())
    })();
    out
}

/// A line-information record of `.BTF.ext`: byte offset of the instruction in its section,
/// and the file, line text and line/column (line << 10 | column) as `.BTF` strings.
#[derive(Debug, Clone, Copy)]
struct LineRec {
    insn_off: u32,
    file: u32,
    text: u32,
    line_col: u32,
}

/// The line records of `.BTF.ext` by section name (its region at header offset 16), each
/// section's in instruction order. A malformed block gives what could be read.
fn btf_ext_lines(ext: &[u8], strings: &[u8]) -> HashMap<String, Vec<LineRec>> {
    let mut out: HashMap<String, Vec<LineRec>> = HashMap::new();
    for (name, recs) in crate::btf::ext_records(ext, 16) {
        out.entry(cstr(strings, name))
            .or_default()
            .extend(recs.iter().map_while(|r| {
                Some(LineRec {
                    insn_off: u32_le(r, 0)?,
                    file: u32_le(r, 4)?,
                    text: u32_le(r, 8)?,
                    line_col: u32_le(r, 12)?,
                })
            }));
    }
    for v in out.values_mut() {
        v.sort_by_key(|r| r.insn_off);
    }
    out
}

/// Every section record of `.BTF.ext`'s function and line information names its section by
/// an offset into `.BTF`'s strings, which aya-obj unwraps (a bit-flipped object made it panic
/// with "called `Option::unwrap()` on a `None` value"): checked first, the error naming the
/// record's file offset. A block that cannot be walked is left to aya-obj's own checks.
fn check_btf_ext_names(elf: &Elf<'_>) -> Result<(), LoadError> {
    let (Some(btf), Some(ext)) = (
        elf.file.section_by_name(".BTF"),
        elf.file.section_by_name(".BTF.ext"),
    ) else {
        return Ok(());
    };
    let (Ok(btf), Ok(data), Some((ext_start, _))) = (btf.data(), ext.data(), ext.file_range())
    else {
        return Ok(());
    };
    let strings = (|| {
        let hdr = u32_le(btf, 4)? as usize;
        let (off, len) = (u32_le(btf, 16)? as usize, u32_le(btf, 20)? as usize);
        let start = hdr.checked_add(off)?;
        btf.get(start..start.checked_add(len)?)
    })()
    .unwrap_or_default();
    let Some(hdr) = u32_le(data, 4) else {
        return Ok(());
    };
    // func_info (offset and length at 8 and 12 of the header), line_info (16 and 20).
    for (what, at) in [("function", 8), ("line", 16)] {
        let block = (|| {
            let (off, len) = (u32_le(data, at)? as usize, u32_le(data, at + 4)? as usize);
            let start = (hdr as usize).checked_add(off)?;
            Some((start, data.get(start..start.checked_add(len)?)?))
        })();
        let Some((start, block)) = block else {
            continue;
        };
        let Some(rec) = u32_le(block, 0) else {
            continue;
        };
        let mut at = 4usize;
        while at + 8 <= block.len() {
            let name = u32_le(block, at).unwrap_or(0);
            let named = strings
                .get(name as usize..)
                .is_some_and(|tail| tail.contains(&0));
            if !named {
                return Err(LoadError::Parse(format!(
                    ".BTF.ext at offset {}: the {what} information names its section by string \
                     {name}, which is not in .BTF's {} bytes of strings",
                    ext_start as usize + start + at,
                    strings.len()
                )));
            }
            let n = u32_le(block, at + 4).unwrap_or(0) as usize;
            match n
                .checked_mul(rec as usize)
                .and_then(|b| b.checked_add(at + 8))
            {
                Some(next) => at = next,
                None => break,
            }
        }
    }
    Ok(())
}

/// The largest section without file bytes (`.bss`) loaded. The kernel refuses a map value
/// larger than KMALLOC_MAX_SIZE (4 MiB with 4 kB pages on x86-64; 32 MiB at most on other
/// configurations), and a `.bss` is one map value.
pub const MAX_NOBITS_BYTES: u64 = 64 << 20;

/// Load program `section` (an ELF section name or a function name; optional if the object
/// holds exactly one XDP program) from the object `bytes`.
pub fn load(bytes: &[u8], section: Option<&str>) -> Result<Program, LoadError> {
    load_with(bytes, section, None)
}

/// Load the program chosen by `section` (an ELF section, or as [`load`] takes it) and
/// `program` (a function name, or `section/function`) from the object `bytes`; both are
/// optional when the choice is clear (docs/xdp.md, "Load").
///
/// A malformed object is an error, never a panic: the parsing library's own panics on
/// hostile input are caught (and kept off stderr) and reported as a bad object.
pub fn load_with(
    bytes: &[u8],
    section: Option<&str>,
    program: Option<&str>,
) -> Result<Program, LoadError> {
    load_full(bytes, section, program, &[])
}

/// [`load_with`], with the prog arrays' contents `tail` gives (`--tail-call`) in place of the
/// declared ones: the entries for a map are all it holds. Entries may name programs of other
/// objects, and `--dispatch` components (`crate::link`).
pub fn load_full(
    bytes: &[u8],
    section: Option<&str>,
    program: Option<&str>,
    tail: &[TailSpec],
) -> Result<Program, LoadError> {
    guarded(|| crate::link::load_chain(bytes, section, program, tail))
}

/// One object's program with its own prog arrays' entries `tail` (programs of that object
/// only); [`load_full`] links other objects' programs in.
pub(crate) fn load_object(
    bytes: &[u8],
    section: Option<&str>,
    program: Option<&str>,
    tail: &[TailSpec],
) -> Result<Program, LoadError> {
    load_inner(bytes, section, program, tail)
}

/// The `.BTF` section of the object `bytes`, if it has one.
pub(crate) fn btf_section(bytes: &[u8]) -> Option<Vec<u8>> {
    let f = object::File::parse(bytes).ok()?;
    Some(f.section_by_name(".BTF")?.data().ok()?.to_vec())
}

/// Every function of the object that can be chosen as its program, in file order.
pub fn candidates(bytes: &[u8]) -> Result<Vec<Candidate>, LoadError> {
    guarded(|| Ok(Elf::parse(bytes)?.candidates()))
}

pub(crate) fn guarded<T>(f: impl FnOnce() -> Result<T, LoadError>) -> Result<T, LoadError> {
    static HOOK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(prev);
    r.unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(LoadError::Parse(format!("malformed object ({what})")))
    })
}

/// The object's structure, checked before anything reads it (aya-obj's parser says only "error
/// parsing section with index 19", or panics on a slice, where a section or a BTF record runs
/// past its end): every section's bytes within the file, every symbol's name within the string
/// table, and the `.BTF` and `.BTF.ext` headers' regions, and `.BTF.ext`'s records, within their
/// sections. The error names the section and the offset.
fn check_layout(file: &object::File<'_>, file_len: u64) -> Result<(), LoadError> {
    for s in file.sections() {
        let name = s.name().unwrap_or("?");
        if let Some((off, size)) = s.file_range() {
            if off.checked_add(size).is_none_or(|end| end > file_len) {
                return Err(LoadError::Parse(format!(
                    "section '{name}' (index {}): its {size} bytes at file offset {off:#x} run \
                     past the end of the file ({file_len} bytes)",
                    s.index().0
                )));
            }
        }
    }
    for sym in file.symbols() {
        if let Err(e) = sym.name_bytes() {
            return Err(LoadError::Parse(format!(
                "symbol {} of '.symtab': its name is not in the string table ({e})",
                sym.index().0
            )));
        }
    }
    let btf: fn(&[u8]) -> Result<(), String> = check_btf_header;
    for (name, check) in [(".BTF", btf), (".BTF.ext", check_btf_ext)] {
        if let Some(s) = file.section_by_name(name) {
            s.data()
                .map_err(|e| e.to_string())
                .and_then(check)
                .map_err(|what| LoadError::Parse(format!("section '{name}': {what}")))?;
        }
    }
    Ok(())
}

/// A `struct btf_header`'s regions (types, strings; offsets after the header) within `data`.
fn check_btf_header(data: &[u8]) -> Result<(), String> {
    let hdr_len = btf_hdr_len(data)?;
    let body = (data.len() - hdr_len) as u64;
    for (what, at) in [("types", 8), ("strings", 16)] {
        let (off, len) = (u64::from(u32_at(data, at)), u64::from(u32_at(data, at + 4)));
        if off + len > body {
            return Err(format!(
                "its header puts the {what} at bytes {off}..{} after the header, past the \
                 {body} bytes there",
                off + len
            ));
        }
    }
    Ok(())
}

/// A `struct btf_ext_header`'s regions (function, line and CO-RE records; offsets after the
/// header) within `data`, and each region's records (a record size, then per section its name
/// offset, its record count and the records) within the region.
fn check_btf_ext(data: &[u8]) -> Result<(), String> {
    let hdr_len = btf_hdr_len(data)?;
    let body = &data[hdr_len..];
    let mut regions = vec![("function info", 8), ("line info", 16)];
    if hdr_len >= 32 {
        regions.push(("CO-RE relocation", 24));
    }
    for (what, at) in regions {
        let (off, len) = (u32_at(data, at) as usize, u32_at(data, at + 4) as usize);
        if off as u64 + len as u64 > body.len() as u64 {
            return Err(format!(
                "its header puts the {what} records at bytes {off}..{} after the header, past \
                 the {} bytes there",
                off as u64 + len as u64,
                body.len()
            ));
        }
        if len == 0 {
            continue;
        }
        let region = &body[off..off + len];
        if region.len() < 4 {
            return Err(format!(
                "the {what} records have no record size ({len} bytes)"
            ));
        }
        let rec = u32_at(region, 0) as u64;
        if rec < 4 {
            return Err(format!("the {what} records are {rec} bytes each"));
        }
        let mut at = 4usize;
        while at < region.len() {
            if region.len() - at < 8 {
                return Err(format!(
                    "the {what} records of a section are cut short at byte {} after the header",
                    off + at
                ));
            }
            let n = u64::from(u32_at(region, at + 4));
            let need = n * rec;
            if need > (region.len() - at - 8) as u64 {
                return Err(format!(
                    "{n} {what} records of {rec} bytes at byte {} after the header run past the \
                     region's end ({} bytes)",
                    off + at + 8,
                    off + len
                ));
            }
            at += 8 + need as usize;
        }
    }
    Ok(())
}

/// The header length of a BTF or BTF.ext section (magic 0xeb9f, little-endian), checked.
fn btf_hdr_len(data: &[u8]) -> Result<usize, String> {
    if data.len() < 8 {
        return Err(format!("{} bytes, shorter than its header", data.len()));
    }
    if data[..2] != [0x9f, 0xeb] {
        return Err(format!(
            "its magic number is {:#06x}, not 0xeb9f (little-endian BTF)",
            u16::from_le_bytes([data[0], data[1]])
        ));
    }
    let hdr_len = u32_at(data, 4) as usize;
    if hdr_len < 24 || hdr_len > data.len() {
        return Err(format!(
            "its header says it is {hdr_len} bytes long, in {} bytes (at least 24)",
            data.len()
        ));
    }
    Ok(hdr_len)
}

/// [`u32_le`] at a place the checks above showed to be within `data`.
fn u32_at(data: &[u8], at: usize) -> u32 {
    u32_le(data, at).expect("within the bytes checked")
}

/// A function in an executable section: bytes `start..end` of it.
#[derive(Debug, Clone)]
struct Func {
    name: String,
    start: u64,
    end: u64,
    global: bool,
}

/// A symbol as the relocations need it.
#[derive(Debug, Clone)]
struct Sym {
    name: String,
    section: SymbolSection,
    value: u64,
    kind: SymbolKind,
}

/// The parsed object: its sections, code, functions and code relocations.
struct Elf<'a> {
    file: object::File<'a>,
    /// Section names by index.
    names: BTreeMap<usize, String>,
    /// The bytes of every executable section with instructions.
    code: BTreeMap<usize, &'a [u8]>,
    /// Functions of every executable section, by start.
    funcs: BTreeMap<usize, Vec<Func>>,
    /// Relocations of code: (section, byte offset) → symbol index.
    relocs: HashMap<(usize, u64), usize>,
}

const SHF_EXECINSTR: u64 = 0x4;

/// The first relocation (section, offset) whose target is not a symbol (aya-obj's
/// "unsupported relocation target", which names neither).
fn not_symbol_relocation(elf: &Elf) -> Option<(String, u64)> {
    elf.file.sections().find_map(|sec| {
        let (offset, _) = sec
            .relocations()
            .find(|(_, r)| !matches!(r.target(), object::RelocationTarget::Symbol(_)))?;
        Some((sec.name().unwrap_or("?").to_string(), offset))
    })
}

/// The ELF parser's message `msg` about `bytes`, with where in the file it is when the ELF64
/// header says: the section header table's offset and size against the file's, or the header of
/// the section-name table and its type.
fn elf_error_at(bytes: &[u8], msg: &str) -> String {
    if bytes.len() < 64 || bytes[..4] != *b"\x7fELF" || bytes[4] != 2 {
        return msg.to_string();
    }
    let le = bytes[5] != 2;
    let num = |at: usize, n: usize| -> Option<u64> {
        let b = bytes.get(at..at.checked_add(n)?)?;
        Some(b.iter().enumerate().fold(0u64, |v, (i, &x)| {
            let shift = if le { 8 * i } else { 8 * (n - 1 - i) };
            v | (u64::from(x) << shift)
        }))
    };
    let (Some(shoff), Some(entsize), Some(count), Some(names)) =
        (num(0x28, 8), num(0x3a, 2), num(0x3c, 2), num(0x3e, 2))
    else {
        return msg.to_string();
    };
    if msg.contains("section header offset") {
        return format!(
            "{msg}: the section headers at byte {shoff} ({count} of {entsize} bytes) and the \
             file of {} bytes (cut short?)",
            bytes.len()
        );
    }
    if msg.contains("string section type") {
        let at = shoff.saturating_add(names.saturating_mul(entsize));
        let kind = usize::try_from(at)
            .ok()
            .and_then(|at| num(at.checked_add(4)?, 4));
        return match kind {
            Some(t) => format!(
                "{msg}: section {names} (the section names; its header at byte {at}) has type {t}, \
                 not 3 (SHT_STRTAB)"
            ),
            None => format!("{msg}: section {names} (the section names; its header at byte {at})"),
        };
    }
    msg.to_string()
}

impl<'a> Elf<'a> {
    fn parse(bytes: &'a [u8]) -> Result<Elf<'a>, LoadError> {
        let file = object::File::parse(bytes)
            .map_err(|e| LoadError::NotElf(elf_error_at(bytes, &e.to_string())))?;
        // e_machine 0 (EM_NONE) is what old LLVM wrote for BPF: libbpf accepts it too
        // (`bpf_object__check_endianness` and its ELF check take `e_machine && e_machine !=
        // EM_BPF` as foreign).
        let em_none = bytes.get(18..20) == Some(&[0, 0]);
        if file.architecture() != object::Architecture::Bpf && !em_none {
            return Err(LoadError::NotBpf(format!("{:?}", file.architecture())));
        }
        if !file.is_64() {
            return Err(LoadError::Parse(
                "a 32-bit ELF file (BPF objects are 64-bit)".into(),
            ));
        }
        if !file.is_little_endian() {
            return Err(LoadError::Parse(
                "a big-endian BPF object (bpfeb): only little-endian objects are analysed".into(),
            ));
        }
        check_layout(&file, bytes.len() as u64)?;
        // A section without bytes in the file (`.bss`) declares its size: the parser allocates it
        // (a global-data map's value), so a size the kernel could never load is refused first.
        for s in file.sections() {
            let nobits = matches!(
                s.kind(),
                SectionKind::UninitializedData | SectionKind::UninitializedTls
            );
            if nobits && s.size() > MAX_NOBITS_BYTES {
                return Err(LoadError::Parse(format!(
                    "section '{}' declares {} bytes, more than the {} MiB a global-data map can hold",
                    s.name().unwrap_or("?"),
                    s.size(),
                    MAX_NOBITS_BYTES >> 20
                )));
            }
        }
        let names: BTreeMap<usize, String> = file
            .sections()
            .map(|s| (s.index().0, s.name().unwrap_or("").to_string()))
            .collect();
        let mut code = BTreeMap::new();
        for s in file.sections() {
            let exec = matches!(s.flags(), SectionFlags::Elf { sh_flags } if sh_flags & SHF_EXECINSTR != 0);
            if !exec || s.size() == 0 {
                continue;
            }
            let name = &names[&s.index().0];
            let data = s
                .data()
                .map_err(|e| LoadError::Parse(format!("section '{name}': {e}")))?;
            if data.len() as u64 != s.size() {
                return Err(LoadError::Parse(format!(
                    "section '{name}' is executable but its {} bytes are not in the file",
                    s.size()
                )));
            }
            if data.len() % 8 != 0 {
                return Err(LoadError::Parse(format!(
                    "section '{name}' holds {} bytes of code, not a whole number of 8-byte \
                     instructions",
                    data.len()
                )));
            }
            code.insert(s.index().0, data);
        }
        // Functions: the function symbols of each executable section; a section without any
        // is one function.
        let mut funcs: BTreeMap<usize, Vec<Func>> = BTreeMap::new();
        let mut sized: BTreeMap<usize, Vec<(Func, u64)>> = BTreeMap::new();
        for sym in file.symbols() {
            let SymbolSection::Section(i) = sym.section() else {
                continue;
            };
            let Some(data) = code.get(&i.0) else {
                continue;
            };
            if sym.kind() != SymbolKind::Text {
                continue;
            }
            let name = sym
                .name()
                .map_err(|e| LoadError::Parse(format!("a function symbol's name: {e}")))?;
            let sec = &names[&i.0];
            let (start, len) = (sym.address(), data.len() as u64);
            if start % 8 != 0 || start >= len {
                return Err(LoadError::Parse(format!(
                    "function '{name}' starts at offset {start:#x} of section '{sec}', not at \
                     one of its instructions"
                )));
            }
            if sym.size() > len - start || sym.size() % 8 != 0 {
                return Err(LoadError::Parse(format!(
                    "function '{name}' ({} bytes at offset {start:#x}) does not fit section \
                     '{sec}' ({len} bytes) in whole instructions",
                    sym.size()
                )));
            }
            sized.entry(i.0).or_default().push((
                Func {
                    name: name.to_string(),
                    start,
                    end: start + sym.size(),
                    global: sym.is_global() || sym.is_weak(),
                },
                sym.size(),
            ));
        }
        for (&sec, data) in &code {
            let mut v = sized.remove(&sec).unwrap_or_default();
            // By start, global names first among aliases; one function per start.
            v.sort_by_key(|(f, _)| (f.start, !f.global));
            v.dedup_by_key(|(f, _)| f.start);
            let starts: Vec<u64> = v.iter().map(|(f, _)| f.start).collect();
            let mut list: Vec<Func> = Vec::with_capacity(v.len());
            for (k, (mut f, size)) in v.into_iter().enumerate() {
                if size == 0 {
                    f.end = starts.get(k + 1).copied().unwrap_or(data.len() as u64);
                }
                list.push(f);
            }
            if list.is_empty() {
                list.push(Func {
                    name: names[&sec].clone(),
                    start: 0,
                    end: data.len() as u64,
                    global: true,
                });
            }
            funcs.insert(sec, list);
        }
        // Relocations of the code.
        let mut relocs = HashMap::new();
        for s in file.sections() {
            let Some(data) = code.get(&s.index().0) else {
                continue;
            };
            let name = &names[&s.index().0];
            for (off, r) in s.relocations() {
                let RelocationTarget::Symbol(si) = r.target() else {
                    return Err(LoadError::Parse(format!(
                        "section '{name}': the relocation at offset {off:#x} has no symbol"
                    )));
                };
                if off % 8 != 0 || off >= data.len() as u64 {
                    return Err(LoadError::Parse(format!(
                        "section '{name}': a relocation at offset {off:#x} is not at one of its \
                         {} instructions",
                        data.len() / 8
                    )));
                }
                relocs.insert((s.index().0, off), si.0);
            }
        }
        Ok(Elf {
            file,
            names,
            code,
            funcs,
            relocs,
        })
    }

    /// The name of section `sec` (`?` for an index no section has).
    fn name(&self, sec: usize) -> &str {
        self.names.get(&sec).map_or("?", String::as_str)
    }

    fn is_text(&self, sec: usize) -> bool {
        self.name(sec).starts_with(".text")
    }

    /// Programs as libbpf and iproute2 find them: every function of every executable section
    /// other than `.text`; without such a section, the global functions of `.text`.
    fn candidates(&self) -> Vec<Candidate> {
        let make = |sec: usize, f: &Func| Candidate {
            section: self.names[&sec].clone(),
            name: f.name.clone(),
            kind: if self.is_text(sec) {
                SectionType::Untyped
            } else {
                SectionType::of(&self.names[&sec])
            },
            sec,
            start: f.start,
        };
        let progs: Vec<Candidate> = self
            .funcs
            .iter()
            .filter(|(&s, _)| !self.is_text(s))
            .flat_map(|(&s, fs)| fs.iter().map(move |f| make(s, f)))
            .collect();
        if !progs.is_empty() {
            return progs;
        }
        self.funcs
            .iter()
            .flat_map(|(&s, fs)| fs.iter().filter(|f| f.global).map(move |f| make(s, f)))
            .collect()
    }

    fn symbol(&self, index: usize) -> Result<Sym, String> {
        let s = self
            .file
            .symbol_by_index(object::SymbolIndex(index))
            .map_err(|e| format!("symbol {index}: {e}"))?;
        Ok(Sym {
            name: s
                .name()
                .map_err(|e| format!("symbol {index}: {e}"))?
                .to_string(),
            section: s.section(),
            value: s.address(),
            kind: s.kind(),
        })
    }

    /// The function of section `sec` that holds byte `off`.
    fn func_at(&self, sec: usize, off: u64) -> Option<&Func> {
        let fs = self.funcs.get(&sec)?;
        fs.iter()
            .rev()
            .find(|f| f.start <= off && off < f.end)
            .or_else(|| fs.iter().find(|f| f.start == off))
    }

    fn at(&self, sec: usize, off: u64) -> String {
        format!("section '{}' at offset {off:#x}", self.name(sec))
    }
}

/// The choice `--section`/`--program` make among `cands`, or the one candidate that is clear
/// without one (docs/xdp.md, "Load").
fn choose<'c>(
    cands: &'c [Candidate],
    section: Option<&str>,
    program: Option<&str>,
) -> Result<&'c Candidate, LoadError> {
    // A function name that is not unique, or is also a section's name, is listed (and may be
    // chosen) as `section/function`: each name listed chooses its program, with --section too.
    let handle = |c: &Candidate| {
        if cands
            .iter()
            .any(|d| d != c && (d.name == c.name || d.section == c.name))
        {
            format!("{}/{}", c.section, c.name)
        } else {
            c.name.clone()
        }
    };
    let list = |cs: &[&Candidate]| {
        cs.iter()
            .map(|c| format!("{} (section {})", handle(c), c.section))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let all: Vec<&Candidate> = cands.iter().collect();
    let is =
        |c: &Candidate, want: &str| c.name == want || format!("{}/{}", c.section, c.name) == want;
    if section.is_some() || program.is_some() {
        let mut pick: Vec<&Candidate> = all.clone();
        if let Some(p) = program {
            pick.retain(|c| is(c, p));
        }
        if let Some(s) = section {
            if pick.iter().any(|c| c.section == s) {
                pick.retain(|c| c.section == s);
            } else {
                pick.retain(|c| is(c, s));
            }
        }
        return match pick.as_slice() {
            [one] => Ok(one),
            [] => Err(LoadError::NoSection {
                want: match (section, program) {
                    (Some(s), None) => format!("in section or function '{s}'"),
                    (None, Some(p)) => format!("named '{p}'"),
                    (s, p) => format!(
                        "named '{}' in section '{}'",
                        p.unwrap_or_default(),
                        s.unwrap_or_default()
                    ),
                },
                available: if all.is_empty() {
                    "none".into()
                } else {
                    list(&all)
                },
            }),
            many => Err(LoadError::Ambiguous {
                what: match section {
                    Some(s) => format!("section '{s}' holds several programs"),
                    None => "several programs match".into(),
                },
                list: list(many),
            }),
        };
    }
    let of = |k: SectionType| {
        all.iter()
            .copied()
            .filter(|c| c.kind == k)
            .collect::<Vec<_>>()
    };
    let (xdp, untyped, other) = (
        of(SectionType::Xdp),
        of(SectionType::Untyped),
        of(SectionType::Other),
    );
    let pool = if xdp.is_empty() { &untyped } else { &xdp };
    match pool.as_slice() {
        [one] => Ok(one),
        [] if other.is_empty() => Err(LoadError::NoXdp(
            "no executable section holds instructions, and .text has no global function".into(),
        )),
        [] => Err(LoadError::NoXdp(format!(
            "only programs of other types: {}; --program NAME analyses one as XDP anyway",
            list(&other)
        ))),
        // The candidates of the pool; programs of other types (tc, socket filters…) are named
        // apart, since they are not XDP programs (--program still analyses one as XDP).
        _ => {
            let xdp_like: Vec<&Candidate> = all
                .iter()
                .copied()
                .filter(|c| c.kind != SectionType::Other)
                .collect();
            Err(LoadError::Ambiguous {
                what: "the object has several XDP programs".into(),
                list: if other.is_empty() {
                    list(&xdp_like)
                } else {
                    format!(
                        "{}; programs of other types: {}",
                        list(&xdp_like),
                        list(&other)
                    )
                },
            })
        }
    }
}

/// Where a map is defined, to resolve the relocations that refer to it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum MapAt {
    /// A legacy definition at (section, offset).
    Legacy(usize, u64),
    /// A BTF-defined map, by symbol name.
    Btf(String),
    /// Global data: the map is the whole section.
    Data(usize),
    /// The `__kconfig` externs' values (`crate::kconfig`).
    Kconfig,
}

/// The address of kernel symbol `name` in `/proc/kallsyms` (a typeless `__ksym`, which libbpf
/// resolves to it: the `LD_IMM64` becomes that constant). An error when the file has no such
/// symbol, or shows addresses as 0 (`kptr_restrict`, or a reader without `CAP_SYSLOG`).
fn kallsyms_address(name: &str) -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/kallsyms")
        .map_err(|e| format!("extern '{name}' (__ksym): /proc/kallsyms: {e}"))?;
    let addr = text.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (a, _kind, n) = (f.next()?, f.next()?, f.next()?);
        (n == name)
            .then(|| u64::from_str_radix(a, 16).ok())
            .flatten()
    });
    match addr {
        None => Err(format!(
            "extern '{name}' (__ksym) is not a symbol of the running kernel (/proc/kallsyms): if \
             another object defines it, link the objects first (bpftool gen object OUT.o THIS.o \
             OTHER.o) and analyse OUT.o"
        )),
        Some(0) => Err(format!(
            "extern '{name}' (__ksym): /proc/kallsyms shows its address as 0 (kptr_restrict, or \
             no CAP_SYSLOG): run as root to resolve it as libbpf does"
        )),
        Some(a) => Ok(a),
    }
}

/// The `.kconfig` map and each `__kconfig` extern's byte offset in its value.
type KconfigMap = (MapDef, HashMap<String, u64>);

/// The `.kconfig` map libbpf makes for the object's `__kconfig` externs (BTF DATASEC
/// `.kconfig`), filled from the running kernel's configuration, and each extern's offset in
/// it; `None` when the object has none.
fn kconfig_map(elf: &Elf) -> Result<Option<KconfigMap>, LoadError> {
    let Some(btf) = elf.file.section_by_name(".BTF").and_then(|s| s.data().ok()) else {
        return Ok(None);
    };
    let vars = btf_datasec_vars(btf, ".kconfig");
    if vars.is_empty() {
        return Ok(None);
    }
    let weak = |name: &str| {
        elf.file
            .symbols()
            .any(|x| x.name() == Ok(name) && x.is_weak())
    };
    let v: Vec<(String, u64, bool)> = vars
        .iter()
        .map(|m| (m.name.clone(), m.size, weak(&m.name)))
        .collect();
    let k = crate::kconfig::resolve(&v).map_err(|e| {
        if e.starts_with(crate::kconfig::KCONFIG_ENV) {
            LoadError::Input(e)
        } else {
            LoadError::Parse(e)
        }
    })?;
    let def = MapDef {
        name: ".kconfig".into(),
        map_type: MAP_ARRAY,
        key_size: 4,
        value_size: k.data.len() as u32,
        max_entries: 1,
        flags: 0,
        data: k.data,
        frozen: true,
        inner: None,
        special_fields: Vec::new(),
    };
    Ok(Some((
        def,
        k.vars.into_iter().map(|v| (v.name, v.off)).collect(),
    )))
}

/// How a legacy map of maps names its inner map.
enum InnerRef {
    /// iproute2's `struct bpf_elf_map`: `inner_id` is the `id` of the inner map.
    Id(u32),
    /// The kernel samples' `struct bpf_map_def`: `inner_map_idx` is the inner map's place in
    /// the section.
    Index(u32),
}

/// The legacy map definitions of section `sec` (`maps`): one per symbol, each as long as its
/// symbol or, when symbols have no size, the section's size over their number (as libbpf
/// reads them). The first five words are libbpf's `struct bpf_map_def` (type, key size, value
/// size, max entries, flags); what follows is the kernel samples' `inner_map_idx` and
/// `numa_node` (24 and 28 bytes), or iproute2's `struct bpf_elf_map` (`id`, `pinning`,
/// `inner_id`, `inner_idx`: 36 bytes; 28 in its first version).
fn legacy_maps(elf: &Elf, sec: usize) -> Result<Vec<(MapDef, MapAt)>, LoadError> {
    let name = &elf.names[&sec];
    let section = elf
        .file
        .section_by_index(object::SectionIndex(sec))
        .map_err(|e| LoadError::Parse(format!("section '{name}': {e}")))?;
    let mut syms: Vec<(String, u64, u64)> = Vec::new();
    for s in elf.file.symbols() {
        if s.section() != SymbolSection::Section(object::SectionIndex(sec))
            || matches!(s.kind(), SymbolKind::Section | SymbolKind::File)
        {
            continue;
        }
        let n = s
            .name()
            .map_err(|e| LoadError::Parse(format!("a map symbol's name in '{name}': {e}")))?;
        if !n.is_empty() {
            syms.push((n.to_string(), s.address(), s.size()));
        }
    }
    if syms.is_empty() {
        return Ok(Vec::new());
    }
    syms.sort_by_key(|s| s.1);
    let data = section
        .data()
        .map_err(|e| LoadError::Parse(format!("section '{name}': {e}")))?;
    let each = if syms.iter().all(|s| s.2 > 0) {
        None
    } else if !data.is_empty() && data.len() % syms.len() == 0 {
        Some((data.len() / syms.len()) as u64)
    } else {
        return Err(LoadError::Parse(format!(
            "section '{name}': cannot tell the size of its {} map definitions ({} bytes, and \
             the map symbols have no size)",
            syms.len(),
            data.len()
        )));
    };
    let mut out: Vec<(MapDef, MapAt, Option<InnerRef>, Option<u32>)> = Vec::new();
    for (map, off, size) in &syms {
        let size = each.unwrap_or(*size);
        let def = off
            .checked_add(size)
            .and_then(|end| data.get(*off as usize..end as usize))
            .ok_or_else(|| {
                LoadError::Parse(format!(
                    "map '{map}': its definition ({size} bytes at offset {off:#x}) is not within \
                     section '{name}' ({} bytes)",
                    data.len()
                ))
            })?;
        if def.len() < 16 {
            return Err(LoadError::Parse(format!(
                "map '{map}' in section '{name}': a definition of {} bytes (at least type, key \
                 size, value size and max entries: 16)",
                def.len()
            )));
        }
        let w = |i: usize| u32_le(def, 4 * i).unwrap_or(0);
        let d = MapDef {
            name: map.clone(),
            map_type: w(0),
            key_size: w(1),
            value_size: w(2),
            max_entries: w(3),
            flags: w(4),
            data: Vec::new(),
            frozen: false,
            inner: None,
            special_fields: Vec::new(),
        };
        if d.map_type == 0 {
            // Zeros where the type belongs: most often a BTF map definition (`__uint(type,
            // ...)` members are pointers, their bytes zero) put in the legacy section, which
            // every loader reads as `struct bpf_map_def` (libbpf >= 1.0 refuses the section).
            return Err(LoadError::Parse(format!(
                "map '{map}' in section '{name}' has type 0 (BPF_MAP_TYPE_UNSPEC), which the \
                 kernel does not create: the section holds legacy struct bpf_map_def \
                 definitions; a BTF definition (__uint(type, ...)) belongs in SEC(\".maps\")"
            )));
        }
        let (inner, id) = if def.len() >= 36 {
            (Some(InnerRef::Id(w(7))), Some(w(5)))
        } else if def.len() >= 24 {
            (Some(InnerRef::Index(w(5))), None)
        } else {
            (None, None)
        };
        out.push((d, MapAt::Legacy(sec, *off), inner, id));
    }
    let plain: Vec<MapDef> = out.iter().map(|m| m.0.clone()).collect();
    let ids: Vec<Option<u32>> = out.iter().map(|m| m.3).collect();
    Ok(out
        .into_iter()
        .map(|(mut d, at, inner, _)| {
            if d.is_map_of_maps() {
                let found = match inner {
                    Some(InnerRef::Id(id)) if id != 0 => {
                        ids.iter().position(|&x| x == Some(id)).map(|k| &plain[k])
                    }
                    Some(InnerRef::Index(k)) => plain.get(k as usize),
                    _ => None,
                };
                d.inner = found.filter(|m| m.name != d.name).cloned().map(Box::new);
            }
            (d, at)
        })
        .collect())
}

/// A copy of the object in which aya-obj sees neither code nor legacy maps: their section
/// headers get the empty name (offset 0 of the section-name table) and lose SHF_EXECINSTR.
fn hidden_copy(bytes: &[u8], hide: &[usize]) -> Option<Vec<u8>> {
    let mut b = bytes.to_vec();
    let shoff = u64::from_le_bytes(b.get(0x28..0x30)?.try_into().ok()?) as usize;
    let shentsize = u16::from_le_bytes(b.get(0x3a..0x3c)?.try_into().ok()?) as usize;
    if shentsize < 64 {
        return None;
    }
    for &i in hide {
        let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
        b.get_mut(h..h.checked_add(16)?)?;
        b[h..h + 4].copy_from_slice(&0u32.to_le_bytes());
        let flags = u64::from_le_bytes(b[h + 8..h + 16].try_into().ok()?) & !SHF_EXECINSTR;
        b[h + 8..h + 16].copy_from_slice(&flags.to_le_bytes());
    }
    Some(b)
}

/// The contents of every prog array (by map index) and the programs they hold, in order
/// (docs/xdp.md, "Tail calls"): what `tail` (`--tail-call`) gives for a map, else the slots
/// the object declares (libbpf's `.values = { [K] = &prog }`: relocations in `.maps` against
/// program symbols), else unknown.
fn prog_arrays(
    elf: &Elf,
    cands: &[Candidate],
    maps: &[(MapDef, MapAt)],
    tail: &[TailSpec],
) -> Result<(BTreeMap<u32, ProgArray>, Vec<Candidate>), LoadError> {
    let mut declared: HashMap<String, BTreeMap<u32, Candidate>> = HashMap::new();
    let btf = elf.file.section_by_name(".BTF").and_then(|s| s.data().ok());
    if let (Some(msec), Some(btf)) = (elf.file.section_by_name(".maps"), btf) {
        let vars = btf_map_vars(btf);
        for (off, r) in msec.relocations() {
            let RelocationTarget::Symbol(si) = r.target() else {
                continue;
            };
            let Some(v) = vars
                .iter()
                .find(|v| v.off <= off && off < v.off.saturating_add(v.size))
            else {
                continue;
            };
            let Some(def) = maps.iter().map(|m| &m.0).find(|d| d.name == v.name) else {
                continue;
            };
            if !def.is_prog_array() {
                continue;
            }
            let bad = |why: String| LoadError::Parse(format!("prog array '{}': {why}", v.name));
            let rel = off - v.off;
            let Some(vo) = v.values.filter(|&vo| rel >= vo && (rel - vo) % 8 == 0) else {
                return Err(bad(format!(
                    "a relocation at offset {rel:#x} of its definition, not one of its `values`"
                )));
            };
            let slot = (rel - vo) / 8;
            let sym = elf.symbol(si.0).map_err(bad)?;
            let f = match sym.section {
                SymbolSection::Section(t) => elf
                    .func_at(t.0, sym.value)
                    .filter(|f| f.start == sym.value)
                    .map(|f| Candidate {
                        section: elf.name(t.0).to_string(),
                        name: f.name.clone(),
                        kind: SectionType::of(elf.name(t.0)),
                        sec: t.0,
                        start: f.start,
                    }),
                _ => None,
            };
            let Some(c) = f else {
                return Err(bad(format!(
                    "slot {slot} holds '{}', which is not a program of the object",
                    sym.name
                )));
            };
            if def.max_entries != 0 && slot >= def.max_entries as u64 {
                return Err(bad(format!(
                    "slot {slot} is past its {} entries",
                    def.max_entries
                )));
            }
            declared
                .entry(v.name.clone())
                .or_default()
                .insert(slot as u32, c);
        }
    }
    let mut given: HashMap<String, BTreeMap<u32, Candidate>> = HashMap::new();
    for t in tail {
        let err = |why: String| LoadError::TailCall {
            spec: if t.program.is_empty() {
                format!("{}=none", t.map) // what `MAP=none` gives: no program
            } else {
                format!("{}={}:{}", t.map, t.index, t.program)
            },
            why,
        };
        let arrays: Vec<&str> = maps
            .iter()
            .filter(|m| m.0.is_prog_array())
            .map(|m| m.0.name.as_str())
            .collect();
        let Some(def) = maps.iter().map(|m| &m.0).find(|d| d.name == t.map) else {
            return Err(err(format!(
                "the object has no map '{}' (its prog arrays: {})",
                t.map,
                if arrays.is_empty() {
                    "none".to_string()
                } else {
                    arrays.join(", ")
                }
            )));
        };
        if !def.is_prog_array() {
            return Err(err(format!(
                "map '{}' is of type {}, not prog_array",
                t.map,
                def.type_name()
            )));
        }
        if t.program.is_empty() {
            // The array holds nothing: every tail call through it returns.
            given.entry(t.map.clone()).or_default();
            continue;
        }
        if def.max_entries != 0 && t.index >= def.max_entries {
            return Err(err(format!(
                "slot {} is past the array's {} entries",
                t.index, def.max_entries
            )));
        }
        let c = choose(cands, None, Some(&t.program))
            .or_else(|_| choose(cands, Some(&t.program), None))
            .map_err(|e| err(e.to_string()))?;
        given
            .entry(t.map.clone())
            .or_default()
            .insert(t.index, c.clone());
    }
    let mut targets: Vec<Candidate> = Vec::new();
    let mut out = BTreeMap::new();
    for (m, (def, _)) in maps.iter().enumerate() {
        if !def.is_prog_array() {
            continue;
        }
        let a = match given.get(&def.name).or_else(|| declared.get(&def.name)) {
            Some(slots) => ProgArray::Known(
                slots
                    .iter()
                    .map(|(&k, c)| {
                        let t = match targets.iter().position(|x| x == c) {
                            Some(t) => t,
                            None => {
                                targets.push(c.clone());
                                targets.len() - 1
                            }
                        };
                        (k, t)
                    })
                    .collect(),
            ),
            None => ProgArray::Unknown,
        };
        out.insert(m as u32, a);
    }
    Ok((out, targets))
}

/// An instruction slot of the linked program: the section and byte offset it comes from, and
/// the start of its function there.
#[derive(Debug, Clone, Copy)]
struct Origin {
    sec: usize,
    off: u64,
    func: u64,
}

fn load_inner(
    bytes: &[u8],
    section: Option<&str>,
    program: Option<&str>,
    tail: &[TailSpec],
) -> Result<Program, LoadError> {
    let elf = Elf::parse(bytes)?;
    let cands = elf.candidates();
    // Without --section/--program, several XDP programs are ambiguous unless all but one are
    // tail-call targets of the object's prog arrays (decided once they are read, below).
    let early = match choose(&cands, section, program) {
        Ok(c) => Ok(c.clone()),
        Err(e @ LoadError::Ambiguous { .. }) if section.is_none() && program.is_none() => Err(e),
        Err(e) => return Err(e),
    };

    // Maps: legacy ones here; BTF-defined ones and global data by aya-obj, from a copy of the
    // object that hides the code and the legacy maps from it.
    let legacy: Vec<usize> = elf
        .names
        .iter()
        .filter(|(i, n)| n.starts_with("maps") && !elf.code.contains_key(i))
        .map(|(&i, _)| i)
        .collect();
    // Hidden from aya-obj besides the code: the legacy maps, and `.maps.NAME` sections
    // (iproute2's and old libbpf's BPF_ANNOTATE_KV_PAIR: a struct naming a legacy map's key
    // and value types), which define no map: libbpf reads only `.maps` as BTF maps and skips
    // them, while aya-obj would read any `.maps*` as such.
    let mut not_aya = legacy.clone();
    not_aya.extend(
        elf.names
            .iter()
            .filter(|(_, n)| n.starts_with(".maps."))
            .map(|(&i, _)| i),
    );
    let mut hide: Vec<usize> = elf.code.keys().copied().collect();
    hide.extend(&not_aya);
    let strings = elf
        .file
        .section_by_name(".BTF")
        .and_then(|s| s.data().ok())
        .and_then(btf_strings)
        .map(|s| s.to_vec());
    if elf.file.section_by_name(".maps").is_some() && elf.file.section_by_name(".BTF").is_none() {
        // libbpf cannot load it either: a BTF map's definition is its BTF type.
        return Err(LoadError::Parse(
            "section '.maps' holds BTF-defined maps, but the object has no BTF (it was built \
             without -g)"
                .into(),
        ));
    }
    // The object as aya-obj reads it, with the sections `hide` hidden. A prog array's
    // `values` (pointers to functions) is renamed `alues` (the same string, one byte on) in the
    // copy: aya-obj would take it for a map of maps' inner map and refuse it. Its programs are
    // read here (`prog_arrays`).
    let aya_copy = |hide: &[usize]| -> Result<Vec<u8>, LoadError> {
        let mut copy = hidden_copy(bytes, hide).ok_or_else(|| {
            LoadError::Parse("the section header table is not in the file".into())
        })?;
        if let Some(btf) = elf.file.section_by_name(".BTF") {
            if let (Ok(data), Some((start, _))) = (btf.data(), btf.file_range()) {
                for v in btf_map_vars(data) {
                    let Some(at) = v.values_fn_name_at else {
                        continue;
                    };
                    let name = u32_le(data, at).unwrap_or(0);
                    if let Some(b) = copy.get_mut(start as usize + at..start as usize + at + 4) {
                        b.copy_from_slice(&name.wrapping_add(1).to_le_bytes());
                    }
                }
            }
        }
        Ok(copy)
    };
    let copy = aya_copy(&hide)?;
    check_btf_ext_names(&elf)?;
    let obj = Object::parse(&copy).map_err(|e| {
        // aya-obj's BTF errors ("BTF error: invalid BTF type info segment") name no section.
        // Its relocation, line and function records are `.BTF.ext`'s.
        let what = chain(&e);
        LoadError::Parse(match what.strip_prefix("BTF error: ") {
            Some(rest) => {
                let low = rest.to_ascii_lowercase();
                let ext = ["ext", "relocation", "line info", "btf info"]
                    .iter()
                    .any(|w| low.contains(w));
                format!(
                    "section '{}': {rest}",
                    if ext { ".BTF.ext" } else { ".BTF" }
                )
            }
            None if what == "unsupported relocation target" => {
                not_symbol_relocation(&elf).map_or(what, |(section, offset)| {
                    format!(
                        "section '{section}': the relocation at offset {offset:#x} is not to a \
                         symbol (unsupported relocation target)"
                    )
                })
            }
            None => what,
        })
    })?;

    // CO-RE relocations (`crate::core_reloc`): the code of the sections that have them, as
    // libbpf hands it to the kernel; aya-obj reads those sections' code for it.
    let core_records = match (&strings, elf.file.section_by_name(".BTF.ext")) {
        (Some(tab), Some(ext)) => ext
            .data()
            .map(|d| crate::core_reloc::records(d, tab))
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let mut core_code: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
    let mut core_btf: Option<String> = None;
    if !core_records.is_empty() {
        let with: Vec<(usize, String, &[u8])> = elf
            .code
            .iter()
            .filter_map(|(&i, &c)| {
                let n = elf.names.get(&i)?;
                core_records
                    .iter()
                    .any(|(s, _)| s == n)
                    .then(|| (i, n.clone(), c))
            })
            .collect();
        let mut hide2: Vec<usize> = elf
            .code
            .keys()
            .copied()
            .filter(|i| !with.iter().any(|w| w.0 == *i))
            .collect();
        hide2.extend(&not_aya);
        // Each record names an instruction of a section with code (aya-obj says "function not
        // found" of one that does not).
        for (sec, offs) in &core_records {
            let Some(&(_, _, code)) = with.iter().find(|w| &w.1 == sec) else {
                return Err(LoadError::Parse(format!(
                    "section '.BTF.ext': CO-RE relocation records name section '{sec}', which \
                     holds no code"
                )));
            };
            if let Some(o) = offs
                .iter()
                .find(|&&o| o % 8 != 0 || o as usize >= code.len())
            {
                return Err(LoadError::Parse(format!(
                    "section '.BTF.ext': a CO-RE relocation record of section '{sec}' names its \
                     byte {o}, which is not one of its {} instructions",
                    code.len() / 8
                )));
            }
        }
        let n: usize = core_records.iter().map(|c| c.1.len()).sum();
        let (code, path) = crate::core_reloc::relocate(&aya_copy(&hide2)?, &with)
            .map_err(|e| LoadError::Parse(format!("the object's {n} CO-RE relocations{e}")))?;
        core_code = code;
        core_btf = Some(path);
    }

    let mut maps: Vec<(MapDef, MapAt)> = Vec::new();
    // BTF maps pinned by name (`__uint(pinning, LIBBPF_PIN_BY_NAME)`).
    let pinned: Vec<String> = obj
        .maps
        .iter()
        .filter(|(_, m)| matches!(m.pinning(), aya_obj::maps::PinningType::ByName))
        .map(|(n, _)| n.clone())
        .collect();
    for &sec in &legacy {
        maps.extend(legacy_maps(&elf, sec)?);
    }
    let btf_data = elf.file.section_by_name(".BTF").and_then(|s| s.data().ok());
    let btf_types = btf_data.and_then(crate::btf::Types::parse);
    for (name, m) in &obj.maps {
        let data_section = matches!(
            m.section_kind(),
            aya_obj::EbpfSectionKind::Data
                | aya_obj::EbpfSectionKind::Rodata
                | aya_obj::EbpfSectionKind::Bss
        );
        if data_section && m.value_size() == 0 {
            // An empty `.data` or `.bss` (GCC's BPF backend writes them always): libbpf makes
            // no map of it, and the kernel refuses a map value of 0 bytes.
            continue;
        }
        let def = |name: &str, m: &aya_obj::Map| MapDef {
            name: name.to_string(),
            map_type: m.map_type(),
            key_size: m.key_size(),
            value_size: m.value_size(),
            max_entries: m.max_entries(),
            flags: m.map_flags(),
            data: m.data().to_vec(),
            frozen: name.starts_with(".rodata"),
            inner: None,
            // A lock or a timer in its values, where the object's BTF gives the value's type.
            special_fields: match (m, &btf_types) {
                (aya_obj::Map::Btf(b), Some(t)) if b.def.btf_value_type_id != 0 => {
                    t.special_fields(b.def.btf_value_type_id)
                }
                _ => Vec::new(),
            },
        };
        let mut d = def(name, m);
        if d.is_prog_array() {
            // `__array(values, ...)` declares no sizes: libbpf gives 4-byte keys and values.
            if d.key_size == 0 {
                d.key_size = 4;
            }
            if d.value_size == 0 {
                d.value_size = 4;
            }
        }
        if let Some(inner) = m.inner() {
            d.inner = Some(Box::new(def(&format!("{name}.inner"), &inner)));
        }
        let at = if data_section {
            MapAt::Data(m.section_index())
        } else {
            MapAt::Btf(name.clone())
        };
        maps.push((d, at));
    }
    let ksyms: Vec<(String, bool)> = btf_types
        .as_ref()
        .map(|t| t.ksym_vars())
        .unwrap_or_default();
    let kconfig_offs = match kconfig_map(&elf)? {
        Some((def, offs)) => {
            maps.push((def, MapAt::Kconfig));
            offs
        }
        None => HashMap::new(),
    };
    maps.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    if let Some(w) = maps.windows(2).find(|w| w[0].0.name == w[1].0.name) {
        return Err(LoadError::Parse(format!(
            "two maps are named '{}'",
            w[0].0.name
        )));
    }
    for (m, _) in &maps {
        check_map_sizes(m)?;
        if let Some(inner) = &m.inner {
            check_map_sizes(inner)?;
        }
    }
    let map_index = |at: &MapAt| maps.iter().position(|m| &m.1 == at);
    let (prog_arrays, targets) = prog_arrays(&elf, &cands, &maps, tail)?;
    let chosen = match early {
        Ok(c) => c,
        Err(e) => {
            let is_target =
                |c: &Candidate| targets.iter().any(|t| (t.sec, t.start) == (c.sec, c.start));
            let entries: Vec<Candidate> = cands.iter().filter(|c| !is_target(c)).cloned().collect();
            match choose(&entries, None, None) {
                Ok(c) if !entries.is_empty() => c.clone(),
                _ => return Err(e),
            }
        }
    };

    // Link: the program, then each function it calls or refers to, as libbpf appends them.
    let mut raw: Vec<Raw> = Vec::new();
    let mut origin: Vec<Origin> = Vec::new();
    let mut placed: HashMap<(usize, u64), usize> = HashMap::new();
    let mut kfuncs: Vec<String> = Vec::new();
    let place = |raw: &mut Vec<Raw>,
                 origin: &mut Vec<Origin>,
                 placed: &mut HashMap<(usize, u64), usize>,
                 sec: usize,
                 f: &Func|
     -> Result<usize, LoadError> {
        if let Some(&at) = placed.get(&(sec, f.start)) {
            return Ok(at);
        }
        let at = raw.len();
        let code = match core_code.get(&sec) {
            Some(c) => &c[f.start as usize..f.end as usize],
            None => &elf.code[&sec][f.start as usize..f.end as usize],
        };
        raw.extend(Raw::slots(code).map_err(|e| LoadError::Parse(e.to_string()))?);
        origin.extend((0..code.len() as u64 / 8).map(|k| Origin {
            sec,
            off: f.start + 8 * k,
            func: f.start,
        }));
        placed.insert((sec, f.start), at);
        Ok(at)
    };
    let main = elf
        .func_at(chosen.sec, chosen.start)
        .ok_or_else(|| LoadError::Parse(format!("program {} has no code", chosen.name)))?
        .clone();
    place(&mut raw, &mut origin, &mut placed, chosen.sec, &main)?;
    // The program and its callees, then each tail-call target and its callees.
    let mut i = 0;
    let mut main_len = None;
    let mut tail_targets: Vec<TailTarget> = Vec::new();
    loop {
        while i < raw.len() {
            let o = origin[i];
            let r = raw[i];
            let rel = elf.relocs.get(&(o.sec, o.off)).copied();
            let bad = |what: String| LoadError::Parse(format!("{}: {what}", elf.at(o.sec, o.off)));
            let sym = match rel {
                Some(si) => Some(elf.symbol(si).map_err(&bad)?),
                None => None,
            };
            // The slot `target` (section, byte offset) will have once its function is placed.
            let mut link = |raw: &mut Vec<Raw>,
                            origin: &mut Vec<Origin>,
                            tsec: usize,
                            toff: i64|
             -> Result<i32, LoadError> {
                let len = elf.code.get(&tsec).map_or(0, |c| c.len()) as i64;
                if toff < 0 || toff >= len || toff % 8 != 0 {
                    return Err(bad(format!(
                        "refers to offset {toff:#x} of section '{}', not one of its instructions",
                        elf.name(tsec)
                    )));
                }
                let f = elf.func_at(tsec, toff as u64).ok_or_else(|| {
                    bad(format!(
                        "refers to offset {toff:#x} of section '{}', where no function is",
                        elf.name(tsec)
                    ))
                })?;
                let at = place(raw, origin, &mut placed, tsec, f)?;
                let to = at as i64 + (toff - f.start as i64) / 8;
                i32::try_from(to - i as i64 - 1).map_err(|_| bad("a call out of range".into()))
            };
            match r.code {
                // call
                0x85 => {
                    let target = match &sym {
                        Some(s) if matches!(s.section, SymbolSection::Undefined) => {
                            // A kernel function (kfunc): named by its extern symbol.
                            let id = match kfuncs.iter().position(|k| *k == s.name) {
                                Some(k) => k,
                                None => {
                                    kfuncs.push(s.name.clone());
                                    kfuncs.len() - 1
                                }
                            };
                            raw[i].src = PSEUDO_KFUNC_CALL;
                            raw[i].imm = id as i32;
                            None
                        }
                        Some(s) => match s.section {
                            SymbolSection::Section(t) if elf.code.contains_key(&t.0) => {
                                Some((t.0, s.value as i64 + (r.imm as i64 + 1) * 8))
                            }
                            _ => {
                                return Err(bad(format!(
                                    "a call relocated against '{}', which is not a function",
                                    s.name
                                )))
                            }
                        },
                        None if r.src == PSEUDO_CALL => {
                            Some((o.sec, o.off as i64 + (r.imm as i64 + 1) * 8))
                        }
                        None => None,
                    };
                    if let Some((tsec, toff)) = target {
                        let imm = link(&mut raw, &mut origin, tsec, toff)?;
                        raw[i].src = PSEUDO_CALL;
                        raw[i].imm = imm;
                    }
                    i += 1;
                }
                // LD_IMM64
                0x18 => {
                    let kconfig_off = sym
                        .as_ref()
                        .filter(|s| s.section == SymbolSection::Undefined)
                        .and_then(|s| kconfig_offs.get(&s.name));
                    if let (Some(&off), Some(k)) = (kconfig_off, map_index(&MapAt::Kconfig)) {
                        // A __kconfig extern: a pointer to its value in `.kconfig`.
                        raw[i].src = PSEUDO_MAP_VALUE;
                        raw[i].imm = k as i32;
                        if let Some(hi) = raw.get_mut(i + 1) {
                            hi.imm = (r.imm as i64 + off as i64) as i32;
                        }
                    } else if let Some(s) = &sym {
                        let tsec = match s.section {
                            SymbolSection::Section(t) => t.0,
                            SymbolSection::Undefined => {
                                let kconfig =
                                    s.name.starts_with("CONFIG_") || s.name.starts_with("LINUX_");
                                if let Some(&(_, typeless)) =
                                    ksyms.iter().find(|(n, _)| *n == s.name)
                                {
                                    // A __ksym variable, as libbpf resolves it (docs/xdp.md,
                                    // "Externs").
                                    if !typeless {
                                        return Err(bad(format!(
                                            "extern variable '{}' (__ksym) is a typed kernel \
                                             symbol (a per-CPU variable, read through \
                                             bpf_this_cpu_ptr/bpf_per_cpu_ptr): kernel memory \
                                             is not modelled",
                                            s.name
                                        )));
                                    }
                                    let addr = kallsyms_address(&s.name).map_err(bad)?;
                                    raw[i].src = 0;
                                    raw[i].imm = addr as u32 as i32;
                                    if let Some(hi) = raw.get_mut(i + 1) {
                                        hi.imm = (addr >> 32) as u32 as i32;
                                    }
                                    i += 2;
                                    continue;
                                }
                                return Err(bad(
                                    if !kconfig
                                        && crate::helpers::kfuncs::kernel_knows(&s.name)
                                            == Some(false)
                                    {
                                        format!(
                                            "extern variable '{}' is defined neither here nor in \
                                             the running kernel: if another object defines it, \
                                             link the objects first (bpftool gen object OUT.o \
                                             THIS.o OTHER.o) and analyse OUT.o",
                                            s.name
                                        )
                                    } else {
                                        format!(
                                            "extern variable '{}' ({}) is not supported",
                                            s.name,
                                            if kconfig { "__kconfig" } else { "__ksym" }
                                        )
                                    },
                                ));
                            }
                            _ => {
                                return Err(bad(format!(
                                    "LD_IMM64 relocated against '{}', which is not in a section",
                                    s.name
                                )))
                            }
                        };
                        let tname = elf.name(tsec);
                        let sym_off = if s.kind == SymbolKind::Section {
                            r.imm as i64 as u64
                        } else {
                            0
                        };
                        if elf.code.contains_key(&tsec) {
                            // The address of a function (a callback): its first instruction.
                            let toff = s.value as i64 + r.imm as i64;
                            if let Some(f) = u64::try_from(toff)
                                .ok()
                                .and_then(|o| elf.func_at(tsec, o))
                                .filter(|f| f.start as i64 != toff)
                            {
                                return Err(bad(format!(
                                    "the address of offset {toff:#x} of section '{}', inside \
                                     function '{}' (a callback must be a function's start)",
                                    elf.name(tsec),
                                    f.name
                                )));
                            }
                            let imm = link(&mut raw, &mut origin, tsec, toff)?;
                            raw[i].src = PSEUDO_FUNC;
                            raw[i].imm = imm;
                        } else if let Some(k) = map_index(&MapAt::Data(tsec)) {
                            raw[i].src = PSEUDO_MAP_VALUE;
                            raw[i].imm = k as i32;
                            if let Some(hi) = raw.get_mut(i + 1) {
                                hi.imm = (r.imm as i64 + s.value as i64) as i32;
                            }
                        } else {
                            let at = if legacy.contains(&tsec) {
                                MapAt::Legacy(tsec, s.value.wrapping_add(sym_off))
                            } else if s.kind == SymbolKind::Section {
                                // A BTF map through its section's symbol: the map symbol there.
                                let want = s.value.wrapping_add(sym_off);
                                let name = elf
                                    .file
                                    .symbols()
                                    .find(|x| {
                                        x.section()
                                            == SymbolSection::Section(object::SectionIndex(tsec))
                                            && x.address() == want
                                            && x.kind() != SymbolKind::Section
                                    })
                                    .and_then(|x| x.name().ok().map(str::to_string))
                                    .unwrap_or_default();
                                MapAt::Btf(name)
                            } else {
                                MapAt::Btf(s.name.clone())
                            };
                            let k = map_index(&at).ok_or_else(|| {
                                bad(format!(
                                "LD_IMM64 relocated against '{}' in section '{tname}', which is \
                                 neither a map, global data nor a function",
                                s.name
                            ))
                            })?;
                            raw[i].src = PSEUDO_MAP_FD;
                            raw[i].imm = k as i32;
                        }
                    }
                    i += 2;
                }
                _ => {
                    if let Some(s) = &sym {
                        return Err(bad(format!(
                        "a relocation against '{}' on an instruction that is neither a call nor \
                         LD_IMM64 (opcode {:#04x})",
                        s.name, r.code
                    )));
                    }
                    i += 1;
                }
            }
        }
        main_len.get_or_insert(raw.len());
        let Some(t) = targets.get(tail_targets.len()) else {
            break;
        };
        let f = elf
            .func_at(t.sec, t.start)
            .ok_or_else(|| LoadError::Parse(format!("program {} has no code", t.name)))?
            .clone();
        let entry = place(&mut raw, &mut origin, &mut placed, t.sec, &f)?;
        tail_targets.push(TailTarget {
            section: t.section.clone(),
            name: t.name.clone(),
            entry: entry as u32,
            object: String::new(),
            maps: Vec::new(),
        });
    }
    let main_len = main_len.unwrap_or(raw.len());

    let n_maps = maps.len() as i32;
    let code =
        decode(&raw, &|fd| (0..n_maps).contains(&fd).then_some(fd as u32)).map_err(|err| {
            let at = origin
                .get(err.pc)
                .map(|o| elf.at(o.sec, o.off))
                .unwrap_or_default();
            LoadError::Decode { err, at }
        })?;

    // Line information: per section, records sorted by offset; each covers its function up to
    // the next record.
    let mut lines: Vec<SrcLine> = Vec::new();
    let mut line_of = vec![None; raw.len()];
    if let (Some(tab), Some(ext)) = (
        &strings,
        elf.file
            .section_by_name(".BTF.ext")
            .and_then(|s| s.data().ok()),
    ) {
        let recs = btf_ext_lines(ext, tab);
        let mut index: BTreeMap<(u32, u32), u32> = BTreeMap::new();
        for (slot, o) in origin.iter().enumerate() {
            let Some(rs) = recs.get(elf.name(o.sec)) else {
                continue;
            };
            let k = rs.partition_point(|r| r.insn_off as u64 <= o.off);
            let Some(r) = k.checked_sub(1).map(|k| rs[k]) else {
                continue;
            };
            if (r.insn_off as u64) < o.func {
                continue;
            }
            let key = (r.file, r.line_col >> 10);
            let id = *index.entry(key).or_insert_with(|| {
                lines.push(SrcLine {
                    file: cstr(tab, r.file),
                    line: r.line_col >> 10,
                    text: cstr(tab, r.text).trim().to_string(),
                });
                lines.len() as u32 - 1
            });
            line_of[slot] = Some(id);
        }
    }

    let mut functions: Vec<(String, u32)> = placed
        .iter()
        .filter_map(|(&(sec, start), &at)| Some((elf.func_at(sec, start)?.name.clone(), at as u32)))
        .collect();
    functions.sort_by_key(|f| f.1);
    let pins: Vec<(String, u32)> = maps
        .iter()
        .enumerate()
        .filter(|(_, (_, at))| matches!(at, MapAt::Btf(n) if pinned.contains(n)))
        .map(|(k, (d, _))| (d.name.clone(), k as u32))
        .collect();
    let mut maps: Vec<MapDef> = maps.into_iter().map(|m| m.0).collect();
    add_inner_maps(&mut maps);
    Ok(Program {
        section: chosen.section,
        name: chosen.name,
        raw,
        code,
        maps,
        line_of,
        lines,
        license: obj.license.to_string_lossy().into_owned(),
        kfuncs,
        main_len,
        tail_targets,
        prog_arrays,
        functions,
        pins,
        core_btf,
        kernel_version: crate::kconfig::running_version_code(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str, map_type: u32, inner: Option<MapDef>) -> MapDef {
        MapDef {
            name: name.into(),
            map_type,
            key_size: 4,
            value_size: 4,
            max_entries: 2,
            flags: 0,
            data: Vec::new(),
            frozen: false,
            inner: inner.map(Box::new),
            special_fields: Vec::new(),
        }
    }

    #[test]
    fn maps_of_maps_get_one_synthetic_inner_map_unless_prog_arrays() {
        let mut maps = vec![
            def("a", MAP_ARRAY_OF_MAPS, Some(def("x", MAP_HASH, None))),
            def("b", MAP_HASH_OF_MAPS, Some(def("y", MAP_PROG_ARRAY, None))),
            def("c", MAP_HASH_OF_MAPS, None),
            def("d", MAP_ARRAY, None),
        ];
        add_inner_maps(&mut maps);
        let names: Vec<_> = maps.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "d", "a.inner"]);
        assert_eq!(maps[4].map_type, MAP_HASH);
        assert!(maps[4].inner.is_none());
    }

    #[test]
    fn section_names_are_typed_as_libbpf_types_them() {
        for (name, t) in [
            ("xdp", SectionType::Xdp),
            ("xdp.frags", SectionType::Xdp),
            ("xdp/cpumap", SectionType::Xdp),
            ("xdp_drop_vlan_4011", SectionType::Xdp),
            ("xdp_prog", SectionType::Xdp),
            ("prog", SectionType::Untyped),
            ("my_filter", SectionType::Untyped),
            ("tc", SectionType::Other),
            ("tcx/ingress", SectionType::Other),
            ("classifier", SectionType::Other),
            ("socket", SectionType::Other),
            ("kprobe/sys_open", SectionType::Other),
            ("uprobe.s/lib:f", SectionType::Other),
            ("tp_btf/xdp_redirect", SectionType::Other),
            ("lsm", SectionType::Other),
        ] {
            assert_eq!(SectionType::of(name), t, "{name}");
        }
    }

    fn cand(section: &str, name: &str) -> Candidate {
        Candidate {
            section: section.into(),
            name: name.into(),
            kind: SectionType::of(section),
            sec: 0,
            start: 0,
        }
    }

    /// The handles an Ambiguous or NoSection error lists (`HANDLE (section S)`, ", "-separated).
    fn listed(e: &LoadError) -> Vec<(String, String)> {
        let list = match e {
            LoadError::Ambiguous { list, .. } => list.clone(),
            LoadError::NoSection { available, .. } => available.clone(),
            e => panic!("{e}"),
        };
        // (Programs of other types are listed after the XDP ones.)
        list.replace("; programs of other types: ", ", ")
            .split(", ")
            .map(|i| {
                let (h, s) = i.split_once(" (section ").unwrap();
                (h.to_string(), s.trim_end_matches(')').to_string())
            })
            .collect()
    }

    #[test]
    fn every_listed_name_chooses_its_program() {
        let sets: Vec<Vec<Candidate>> = vec![
            vec![cand("xdp", "a"), cand("xdp", "b")],
            vec![
                cand("xdp_fwd", "fwd"),
                cand("tc", "t"),
                cand("xdp_icmp", "i"),
                cand("prog", "p"),
            ],
            // One function name in two sections: listed as section/name.
            vec![cand("xdp_a", "f"), cand("xdp_b", "f"), cand("xdp_b", "g")],
            // A section named like another's function.
            vec![cand("xdp", "prog"), cand("prog", "main"), cand("xdp", "x")],
        ];
        for cands in &sets {
            let e = choose(cands, None, None).unwrap_err();
            assert!(e.to_string().contains("several XDP programs"), "{e}");
            let l = listed(&e);
            assert_eq!(l.len(), cands.len(), "{e}");
            for (handle, section) in &l {
                for (s, p) in [(Some(handle.as_str()), None), (None, Some(handle.as_str()))] {
                    let c = choose(cands, s, p).unwrap_or_else(|e| panic!("{handle}: {e}"));
                    assert_eq!(&c.section, section, "{handle}");
                    assert!(handle.ends_with(&c.name), "{handle} chose {c:?}");
                }
                // A section holding that one program is accepted too.
                if cands.iter().filter(|c| &c.section == section).count() == 1 {
                    assert_eq!(
                        &choose(cands, Some(section), None).unwrap().section,
                        section
                    );
                }
            }
        }
        // A section name wins over a function of that name; with --program, it narrows.
        let c = &sets[3];
        let e = choose(c, Some("prog"), None).unwrap();
        assert_eq!((e.section.as_str(), e.name.as_str()), ("prog", "main"));
        let e = choose(c, Some("xdp"), Some("prog")).unwrap();
        assert_eq!((e.section.as_str(), e.name.as_str()), ("xdp", "prog"));
        let e = choose(c, Some("xdp"), None).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "section 'xdp' holds several programs: xdp/prog (section xdp), x (section xdp)"
            ),
            "{e}"
        );
    }

    #[test]
    fn the_choice_without_options_prefers_xdp_then_untyped_sections() {
        let one = |cs: &[Candidate]| choose(cs, None, None).map(|c| c.name.clone());
        assert_eq!(
            one(&[cand("tc", "t"), cand("xdp", "x"), cand("prog", "p")]).unwrap(),
            "x"
        );
        assert_eq!(
            one(&[cand("tc", "t"), cand("prog", "p"), cand("socket", "s")]).unwrap(),
            "p"
        );
        let e = one(&[cand("tc", "t"), cand("socket", "s")])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "the object has no XDP program (only programs of other types: t (section tc), s \
             (section socket); --program NAME analyses one as XDP anyway)"
        );
        let e = one(&[cand("prog", "a"), cand("custom", "b")])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("the object has several XDP programs: a (section prog), b"),
            "{e}"
        );
        assert!(one(&[]).unwrap_err().to_string().contains("no XDP program"));
    }
}
