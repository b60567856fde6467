//! A concrete interpreter for XDP programs: it runs one packet through the decoded instructions
//! the analyzer itself uses ([`Program::code`]), with the kernel's semantics for instructions
//! and helpers, so that `nicsim xdp validate` can check that a summary's example packet follows
//! the reported path.
//!
//! The trace is numbered as `path.insns` is ([`crate::analysis::Analysis::path_insns`]): the
//! index of every instruction executed, in order — an `LD_IMM64` once, by its first slot; a
//! bpf-to-bpf call, then the callee's instructions including its `exit`; every iteration of a
//! loop; the program's final `exit` last. A trace and a reported path can be compared directly.
//!
//! Memory model: an address is a region number in the high 32 bits and an offset (biased by
//! 2^31) in the low 32, so pointer arithmetic and comparisons are plain integer operations and
//! every access can be resolved to its region and checked. Region 0 is "not a pointer" (NULL and
//! small scalars). Regions are the context (`struct xdp_md`), the packet (one region per
//! *generation*: a helper that changes the packet's bounds starts a new one, and pointers into
//! an older one fault, as the verifier makes a program reload `ctx->data` after such a call),
//! one 512-byte stack per call frame, each map (as passed to helpers), and each map value (an
//! array element, a hash entry's value, a global-data section). Offsets are natural: from
//! `data` in the packet, from `r10` on the stack, from the start of a map value. The packet sits
//! in a 4096-byte frame with XDP_PACKET_HEADROOM (256 bytes) in front; the metadata area
//! (`data_meta`) lies just before `data`. Every load and store is bounds-checked; an access out
//! of bounds is a [`Fault`] naming the instruction, region, offset and size, never a panic.
//! (A pointer moved by 2^31 bytes or more would land in another region; the verifier bounds
//! pointer offsets to 2^29, so a program the kernel accepts cannot do that.)
//!
//! Helpers follow Linux 6.1 (`net/core/filter.c`, `kernel/bpf/arraymap.c`, `hashtab.c`,
//! `helpers.c`); the differences from [`crate::symex`]'s assumptions are noted where the
//! helpers are implemented.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::summary::MapSummary;

use crate::helpers::names::helper_name;
use crate::insn::{alu, endian, imm_value, jmp_taken, AtomicOp, Imm64, Insn, Size, Src};
use crate::load::{
    MapDef, Program, MAP_ARRAY, MAP_DEVMAP, MAP_HASH, MAP_LPM_TRIE, MAP_LRU_HASH, MAP_PERCPU_ARRAY,
    MAP_PERCPU_HASH,
};

/// Bytes in front of the packet (XDP_PACKET_HEADROOM).
pub const XDP_PACKET_HEADROOM_BYTES: usize = 256;
/// Bytes of the frame the driver hands the program (`xdp->frame_sz`; PAGE_SIZE for most).
pub const FRAME_BYTES: usize = 4096;
/// Tailroom the kernel keeps free at the frame's end for `struct skb_shared_info`
/// (SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) on x86-64).
pub const SHARED_INFO_BYTES: usize = 320;
/// `sizeof(struct xdp_frame)` on 64-bit: the start of the headroom that `bpf_xdp_adjust_head`
/// and `bpf_xdp_adjust_meta` may not move into.
pub const XDP_FRAME_STRUCT_BYTES: usize = 40;
/// Ethernet header: the least a packet can shrink to (ETH_HLEN).
pub const ETH_HLEN_BYTES: usize = 14;
/// The longest packet a frame holds (4096 − 256 − 320).
pub const MAX_PACKET_BYTES: usize = FRAME_BYTES - XDP_PACKET_HEADROOM_BYTES - SHARED_INFO_BYTES;
/// Stack of each call frame.
pub const STACK_BYTES: usize = 512;
/// Call frames at most (MAX_CALL_FRAMES), the program's own included.
pub const MAX_CALL_FRAMES: usize = 8;
/// Metadata bytes at most (`xdp_metalen_invalid`).
pub const MAX_META_BYTES: usize = 32;
/// `struct xdp_md`: six u32 fields.
const CTX_BYTES: i64 = 24;
/// The scratch buffer `bpf_csum_diff` works in (`struct bpf_scratchpad`).
pub(crate) const CSUM_DIFF_MAX_BYTES: u32 = 512;

/// XDP actions.
pub const XDP_ABORTED: u64 = 0;
/// Drop the packet.
pub const XDP_DROP: u64 = 1;
/// Pass the packet to the kernel's network stack.
pub const XDP_PASS: u64 = 2;
/// Send the packet back out of the interface it came in on.
pub const XDP_TX: u64 = 3;
/// Redirect the packet (to another interface, CPU or socket).
pub const XDP_REDIRECT: u64 = 4;

pub(crate) const ENOENT: i64 = 2;
pub(crate) const E2BIG: i64 = 7;
pub(crate) const EACCES: i64 = 13;
pub(crate) const EEXIST: i64 = 17;
pub(crate) const EINVAL: i64 = 22;
pub(crate) const EAGAIN: i64 = 11;
pub(crate) const EFAULT: i64 = 14;
/// ENODATA: a device's `bpf_xdp_metadata_*` found no such metadata for the packet.
pub(crate) const ENODATA: i64 = 61;
/// EOPNOTSUPP: the kernel's default `bpf_xdp_metadata_*` (net/core/xdp.c), which runs when the
/// program is not bound to a device (as in BPF_PROG_TEST_RUN).
pub(crate) const EOPNOTSUPP: i64 = 95;

/// The kfuncs the analysis models: the XDP metadata kfuncs of net/core/xdp.c, each with the
/// sizes of the outputs its pointer arguments r2, r3 point to. Each returns 0 (the outputs
/// written), -ENODATA or -EOPNOTSUPP (outputs untouched).
pub(crate) const KFUNC_XDP_METADATA: [(&str, &[usize]); 3] = [
    ("bpf_xdp_metadata_rx_timestamp", &[8]),
    ("bpf_xdp_metadata_rx_hash", &[4, 4]),
    ("bpf_xdp_metadata_rx_vlan_tag", &[2, 2]),
];

/// The conntrack kfuncs the analysis models (net/netfilter/nf_conntrack_bpf.c): the lookup,
/// which gives a `struct nf_conn` or NULL (`opts->error` set), and the release of what it gave.
pub(crate) const KFUNC_CT_LOOKUP: &str = "bpf_xdp_ct_lookup";
pub(crate) const KFUNC_CT_RELEASE: &str = "bpf_ct_release";
/// The bytes of a `struct nf_conn` the interpreter gives (zeroed; the kernel's size depends on
/// its configuration, 256 bytes on x86-64 with marks, zones and labels: loads past it fault).
pub(crate) const NF_CONN_BYTES: usize = 256;
/// `struct bpf_ct_opts`: 12 bytes before Linux 6.10, 16 since (ct_zone_id, ct_zone_dir).
pub(crate) const CT_OPTS_OLD_SZ: u64 = 12;
pub(crate) const CT_OPTS_SZ: u64 = 16;
/// `sizeof(bpf_tuple->ipv4)`, `sizeof(bpf_tuple->ipv6)`.
pub(crate) const CT_TUPLE_V4: u64 = 12;
pub(crate) const CT_TUPLE_V6: u64 = 36;
/// EPROTO (l4proto neither TCP nor UDP), ENONET (no namespace with netns_id).
pub(crate) const EPROTO: i64 = 71;
pub(crate) const ENONET: i64 = 64;
/// `NF_CT_DEFAULT_ZONE_DIR` (both directions), written into a 16-byte opts' ct_zone_dir of 0.
pub(crate) const NF_CT_DEFAULT_ZONE_DIR: u8 = 3;

/// Whether the analysis models kfunc `name`.
pub(crate) fn kfunc_modelled(name: &str) -> bool {
    crate::helpers::kfuncs::find(name).is_some_and(|k| k.refused.is_none())
}

/// The outputs of kfunc `name` if it is an XDP metadata kfunc.
pub(crate) fn kfunc_outputs(name: &str) -> Option<&'static [usize]> {
    KFUNC_XDP_METADATA
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, o)| *o)
}

/// The one-line refusal of kfunc `name`, `None` if it is modelled: its row's reason
/// (`helpers::kfuncs::KFUNCS`), or for a kfunc without a row the modelled ones, and whether the
/// running kernel has a function of that name (if not, it may live in another object).
pub fn kfunc_refusal(name: &str) -> Option<String> {
    if kfunc_modelled(name) {
        return None;
    }
    if let Some(why) = crate::helpers::kfuncs::find(name).and_then(|k| k.refused) {
        return Some(format!("kfunc {name} is not supported: {why}"));
    }
    let supported: Vec<&str> = crate::helpers::kfuncs::KFUNCS
        .iter()
        .filter(|k| k.refused.is_none())
        .map(|k| k.name)
        .collect();
    let supported = supported.join(", ");
    let why = if crate::helpers::kfuncs::kernel_knows(name) == Some(false) {
        format!(
            ": supported kfuncs: {supported}; and the running kernel has no function of that \
             name (/sys/kernel/btf/vmlinux; libbpf refuses it too): a macro whose header was not \
             included (clang takes `likely(x)` for a call of an external function), or a \
             function of another object: link the objects first (bpftool gen object OUT.o \
             THIS.o OTHER.o) and analyse OUT.o"
        )
    } else {
        format!(
            ": supported kfuncs: {supported} (the kernel does not give XDP programs this one: \
             `nicsim xdp helpers` lists the kfuncs it does)"
        )
    };
    Some(format!("kfunc {name} is not supported{why}"))
}
/// A FIB lookup's result for an unknown ifindex (symex.rs).
pub(crate) const ENODEV: i64 = 19;
pub(crate) const EAFNOSUPPORT: i64 = 97;

/// The size a map declared with `max_entries 0` runs with when nothing gives one
/// ([`MapState::size_from_json`]).
pub const UNSIZED_RUN_ENTRIES: u32 = 1024;
/// Map update flags.
pub(crate) const BPF_NOEXIST: u64 = 1;
pub(crate) const BPF_EXIST: u64 = 2;
pub(crate) const BPF_F_LOCK: u64 = 4;
/// `bpf_redirect_map` flags.
pub(crate) const BPF_F_BROADCAST: u64 = 1 << 3;
pub(crate) const BPF_F_EXCLUDE_INGRESS: u64 = 1 << 4;
/// Map flag: the program may not write the map (set on `.rodata`).
pub(crate) const BPF_F_RDONLY_PROG: u32 = 1 << 7;

/// Map types beyond those [`crate::load`] names.
pub(crate) const MAP_CPUMAP: u32 = 16;
pub(crate) const MAP_XSKMAP: u32 = 17;
pub(crate) const MAP_DEVMAP_HASH: u32 = 25;
pub(crate) const MAP_PERF_EVENT_ARRAY: u32 = 4;
pub(crate) const MAP_RINGBUF: u32 = 27;

pub(crate) const HELPER_KTIME_GET_NS: u32 = 5;
pub(crate) const HELPER_GET_PRANDOM_U32: u32 = 7;
pub(crate) const HELPER_GET_SMP_PROCESSOR_ID: u32 = 8;
pub(crate) const HELPER_L3_CSUM_REPLACE: u32 = 10;
pub(crate) const HELPER_L4_CSUM_REPLACE: u32 = 11;
pub(crate) const HELPER_REDIRECT: u32 = 23;
pub(crate) const HELPER_CSUM_DIFF: u32 = 28;
pub(crate) const HELPER_REDIRECT_MAP: u32 = 51;
pub(crate) const HELPER_ADJUST_META: u32 = 54;
pub(crate) const HELPER_PERF_EVENT_OUTPUT: u32 = 25;
pub(crate) const HELPER_SPIN_LOCK: u32 = 93;
pub(crate) const HELPER_SPIN_UNLOCK: u32 = 94;
pub(crate) const HELPER_RINGBUF_OUTPUT: u32 = 130;
pub(crate) const HELPER_RINGBUF_RESERVE: u32 = 131;
pub(crate) const HELPER_RINGBUF_SUBMIT: u32 = 132;
pub(crate) const HELPER_RINGBUF_DISCARD: u32 = 133;
pub(crate) const HELPER_KTIME_GET_COARSE_NS: u32 = 160;
pub(crate) const HELPER_FIB_LOOKUP: u32 = 69;
/// `sizeof(struct bpf_fib_lookup)`: a shorter `plen` is -EINVAL.
pub(crate) const FIB_LOOKUP_BYTES: u64 = 64;
/// The largest BPF_FIB_LKUP_RET_* (BPF_FIB_LKUP_RET_NO_SRC_ADDR, Linux 6.7; 6.1's last is 8).
pub(crate) const FIB_LKUP_RET_MAX: u64 = 9;
/// BPF_FIB_LKUP_RET_FWD_DISABLED.
pub(crate) const FIB_LKUP_RET_FWD_DISABLED: u64 = 5;
pub(crate) const HELPER_XDP_LOAD_BYTES: u32 = 189;
pub(crate) const HELPER_XDP_STORE_BYTES: u32 = 190;
/// `bpf_xdp_load_bytes`/`_store_bytes`: larger offsets or lengths give -EFAULT
/// (`bpf_xdp_pointer`).
pub(crate) const XDP_BYTES_MAX: u64 = 0xffff;
/// `bpf_perf_event_output` flags: the CPU index (BPF_F_INDEX_MASK) and the context bytes to
/// append (BPF_F_CTXLEN_MASK).
pub(crate) const BPF_F_INDEX_MASK: u64 = 0xffff_ffff;
pub(crate) const BPF_F_CTXLEN_MASK: u64 = 0xf_ffff << 32;
/// `bpf_ringbuf_output`/`_submit`/`_discard` flags: BPF_RB_NO_WAKEUP, BPF_RB_FORCE_WAKEUP.
pub(crate) const BPF_RB_WAKEUP_FLAGS: u64 = 3;
/// A ring buffer record's header (BPF_RINGBUF_HDR_SZ).
pub(crate) const BPF_RINGBUF_HDR_SZ: u64 = 8;

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Why a run stopped without the program returning.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    /// The input cannot be run (packet too long, maps of another program).
    #[error("{0}")]
    Input(String),
    /// A memory access outside the region its pointer points into.
    #[error("instruction {pc}: {access} of {size_bytes} bytes at offset {offset} of {region} is out of bounds (valid offsets: {bounds})")]
    OutOfBounds {
        /// Instruction index of the access.
        pc: u32,
        /// What kind of access (load, store, helper read, …).
        access: &'static str,
        /// The region (packet, stack, a map's value, …).
        region: String,
        /// Byte offset of the access in the region.
        offset: i64,
        /// Bytes accessed.
        size_bytes: u32,
        /// The offsets the region has, as `lo..hi`.
        bounds: String,
    },
    /// An access or instruction the kernel's verifier would have rejected.
    #[error("instruction {pc}: {what}")]
    Invalid {
        /// Instruction index.
        pc: u32,
        /// What the verifier would have rejected.
        what: String,
    },
    /// A helper call the interpreter cannot carry out.
    #[error("instruction {pc}: helper {name} (id {id}): {what}")]
    Helper {
        /// Instruction index of the call.
        pc: u32,
        /// Helper id.
        id: u32,
        /// Helper name.
        name: String,
        /// What went wrong.
        what: String,
    },
    #[error("instruction {pc}: the limit of {limit} executed instructions is reached")]
    /// The run executed as many instructions as it may ([`RunOptions::max_insns`]).
    InsnLimit {
        /// Instruction index where the limit was reached.
        pc: u32,
        /// The limit.
        limit: u64,
    },
}

impl Fault {
    /// The instruction the fault happened at, if it happened while running.
    pub fn pc(&self) -> Option<u32> {
        match self {
            Fault::Input(_) => None,
            Fault::OutOfBounds { pc, .. }
            | Fault::Invalid { pc, .. }
            | Fault::Helper { pc, .. }
            | Fault::InsnLimit { pc, .. } => Some(*pc),
        }
    }
}

pub(crate) fn invalid(pc: u32, what: impl Into<String>) -> Fault {
    Fault::Invalid {
        pc,
        what: what.into(),
    }
}

/// A map name, key or value that does not fit the program's maps.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("no map '{name}' in the program (maps: {available})")]
    /// No map of that name.
    Unknown {
        /// The name given.
        name: String,
        /// The program's map names.
        available: String,
    },
    /// A key or value of the wrong size.
    #[error("map '{map}': the {what} is {got_bytes} bytes, the map's {what} size is {want_bytes}")]
    Size {
        /// The map's name.
        map: String,
        /// `key` or `value`.
        what: &'static str,
        /// Bytes given.
        got_bytes: usize,
        /// Bytes the map takes.
        want_bytes: u32,
    },
    /// An array index not below the map's `max_entries`.
    #[error("map '{map}': index {index} is not below max_entries {max_entries}")]
    Index {
        /// The map's name.
        map: String,
        /// The index given.
        index: u32,
        /// The map's `max_entries`.
        max_entries: u32,
    },
    #[error("map '{map}' is full ({max_entries} entries)")]
    /// A hash map that holds `max_entries` entries already.
    Full {
        /// The map's name.
        map: String,
        /// The map's `max_entries`.
        max_entries: u32,
    },
    #[error("map '{map}': {why}")]
    /// A map whose entries cannot be given (of a type the interpreter does not model, or that holds no entries).
    Unsupported {
        /// The map's name.
        map: String,
        /// Why.
        why: String,
    },
    /// An LPM trie key whose prefix length exceeds its data bits.
    #[error("map '{map}': prefix length {prefixlen} is more than the key's {bits} data bits")]
    Prefix {
        /// The map's name.
        map: String,
        /// The key's prefix length.
        prefixlen: u32,
        /// Data bits of the map's key.
        bits: u32,
    },
    /// Maps JSON that cannot be read.
    #[error("maps JSON: {0}")]
    Json(String),
}

// ---------------------------------------------------------------------------------------------
// Map contents
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// array, percpu_array (one CPU), global data: 4-byte index keys below max_entries;
    /// elements never written read as zeros (global data: as its section holds).
    Array,
    /// hash, percpu_hash, lru_hash. `in_place`: an update of an existing key writes the
    /// element in place (per-CPU hash) instead of replacing it by a new one (hash, LRU hash).
    Hash { lru: bool, in_place: bool },
    /// devmap, cpumap, xskmap (`indexed`: keys are indices below max_entries) and devmap_hash:
    /// entries come from user space; a program can look them up and redirect to them only.
    Redirect { indexed: bool },
    /// array_of_maps (`indexed`) and hash_of_maps: entries (slots holding an inner map) come
    /// from user space; a lookup of a key with an entry gives the inner map (the program's
    /// `<outer>.inner` map), any other NULL. Programs only look them up.
    Outer { indexed: bool },
    /// lpm_trie: keys `{u32 prefixlen; u8 data[]}`, kept with the data past the prefix zeroed
    /// (two keys that differ only there are one entry); a lookup finds the entry with the
    /// longest prefix that matches. Programs only look it up here (user space fills it).
    Lpm,
    /// perf event array, ring buffer: events for user space; the program only outputs to them
    /// (`bpf_perf_event_output`, `bpf_ringbuf_*`), nothing it reads. They hold no entries.
    Events,
    /// queue (`lifo` false) and stack: values without keys (kernel/bpf/queue_stack_maps.c).
    /// Entries are kept under 8-byte big-endian sequence numbers, oldest first; user space
    /// and the maps' JSON name them by position (4 bytes big-endian, 0 the oldest).
    Queue { lifo: bool },
    /// bloom_filter (kernel/bpf/bloom_filter.c): the values pushed, as an exact set, under the
    /// value itself (the kernel's bit array may also answer "maybe present" for a value never
    /// pushed, at the filter's false-positive rate; its hash seed is random, so which values
    /// those are cannot be known here). Named by position as a queue is.
    Bloom,
    /// Not modelled, or larger than the kernel allows (`MapStore::unsupported` says which).
    Unsupported,
}

/// Largest key or value the kernel allocates for a map (KMALLOC_MAX_SIZE on x86-64).
const KMALLOC_MAX_BYTES: u32 = 4 << 20;

#[derive(Debug, Clone)]
pub(crate) struct MapStore {
    pub(crate) def: MapDef,
    pub(crate) kind: Kind,
    /// The program may not write the map (`.rodata`, BPF_F_RDONLY_PROG, redirect maps).
    pub(crate) read_only: bool,
    /// Why the map is `Kind::Unsupported`.
    pub(crate) unsupported: String,
    /// Element values. `index` says which are the map's entries now; an element that an update
    /// replaced or a delete removed stays until the next run, so that a pointer the program got
    /// earlier still reads the old element, as in the kernel (RCU: the memory outlives the
    /// program's run).
    pub(crate) arena: Vec<Vec<u8>>,
    /// Key bytes (arrays: the 4-byte little-endian index) → element.
    pub(crate) index: BTreeMap<Vec<u8>, u32>,
    /// LRU hash maps: per element, when it was last looked up or updated.
    pub(crate) used: Vec<u64>,
    pub(crate) tick: u64,
}

impl MapStore {
    fn new(def: &MapDef) -> MapStore {
        let kind = match def.map_type {
            MAP_ARRAY | MAP_PERCPU_ARRAY => Kind::Array,
            MAP_HASH => Kind::Hash {
                lru: false,
                in_place: false,
            },
            MAP_PERCPU_HASH => Kind::Hash {
                lru: false,
                in_place: true,
            },
            MAP_LRU_HASH => Kind::Hash {
                lru: true,
                in_place: false,
            },
            // One CPU's copy of an LRU hash: updated in place when present
            // (htab_lru_percpu_map_update_elem), a new key may evict.
            crate::load::MAP_LRU_PERCPU_HASH => Kind::Hash {
                lru: true,
                in_place: true,
            },
            MAP_DEVMAP | MAP_CPUMAP | MAP_XSKMAP => Kind::Redirect { indexed: true },
            MAP_DEVMAP_HASH => Kind::Redirect { indexed: false },
            crate::load::MAP_ARRAY_OF_MAPS => Kind::Outer { indexed: true },
            crate::load::MAP_HASH_OF_MAPS => Kind::Outer { indexed: false },
            MAP_PERF_EVENT_ARRAY | MAP_RINGBUF => Kind::Events,
            MAP_LPM_TRIE if def.key_size > 4 => Kind::Lpm,
            crate::load::MAP_QUEUE => Kind::Queue { lifo: false },
            crate::load::MAP_STACK => Kind::Queue { lifo: true },
            crate::load::MAP_BLOOM_FILTER => Kind::Bloom,
            _ => Kind::Unsupported,
        };
        let (kind, unsupported) = if kind == Kind::Unsupported {
            (
                kind,
                format!(
                    "maps of type {} ({}) are not modelled by the interpreter",
                    def.map_type,
                    def.type_name()
                ),
            )
        } else if def.key_size > KMALLOC_MAX_BYTES || def.value_size > KMALLOC_MAX_BYTES {
            (
                Kind::Unsupported,
                format!(
                    "its key or value ({} / {} bytes) exceeds the kernel's limit of \
                     {KMALLOC_MAX_BYTES} bytes",
                    def.key_size, def.value_size
                ),
            )
        } else {
            (kind, String::new())
        };
        let read_only = def.frozen
            || def.flags & BPF_F_RDONLY_PROG != 0
            || matches!(
                kind,
                Kind::Redirect { .. } | Kind::Outer { .. } | Kind::Events
            );
        let mut s = MapStore {
            def: def.clone(),
            kind,
            read_only,
            unsupported,
            arena: Vec::new(),
            index: BTreeMap::new(),
            used: Vec::new(),
            tick: 0,
        };
        if kind == Kind::Array && !def.data.is_empty() && def.max_entries > 0 {
            // Global data: one element holding the section's bytes.
            let mut v = def.data.clone();
            v.resize(def.value_size as usize, 0);
            s.push(0u32.to_le_bytes().to_vec(), v);
        }
        s
    }

    pub(crate) fn push(&mut self, key: Vec<u8>, value: Vec<u8>) -> u32 {
        let e = self.arena.len() as u32;
        self.arena.push(value);
        self.used.push(0);
        self.index.insert(key, e);
        self.touch(e);
        e
    }

    pub(crate) fn touch(&mut self, e: u32) {
        self.tick = self.tick.wrapping_add(1);
        if let Some(u) = self.used.get_mut(e as usize) {
            *u = self.tick;
        }
    }

    /// Queues and stacks: `value` after the newest entry.
    pub(crate) fn queue_push(&mut self, value: Vec<u8>) {
        let next = self.index.keys().next_back().map_or(0, |k| {
            u64::from_be_bytes(k.as_slice().try_into().expect("8-byte sequence numbers")) + 1
        });
        self.push(next.to_be_bytes().to_vec(), value);
    }

    /// Bloom filters: `value` is a member (kept under itself).
    pub(crate) fn bloom_add(&mut self, value: &[u8]) {
        if !self.index.contains_key(value) {
            self.push(value.to_vec(), value.to_vec());
        }
    }

    /// The element of array index `idx` (below max_entries), created as zeros on first use.
    pub(crate) fn array_elem(&mut self, idx: u32) -> u32 {
        let key = idx.to_le_bytes().to_vec();
        match self.index.get(&key) {
            Some(&e) => e,
            None => {
                let zeros = vec![0; self.def.value_size as usize];
                self.push(key, zeros)
            }
        }
    }

    /// Drop the elements no entry refers to (between runs, when no pointer can refer to them).
    fn compact(&mut self) {
        if self.arena.len() == self.index.len() {
            return;
        }
        let mut arena = Vec::with_capacity(self.index.len());
        let mut used = Vec::with_capacity(self.index.len());
        for e in self.index.values_mut() {
            arena.push(std::mem::take(&mut self.arena[*e as usize]));
            used.push(self.used[*e as usize]);
            *e = arena.len() as u32 - 1;
        }
        self.arena = arena;
        self.used = used;
    }

    /// The key of element `e`, if it is an entry of the map.
    fn key_of(&self, e: u32) -> Option<&[u8]> {
        self.index
            .iter()
            .find(|(_, &x)| x == e)
            .map(|(k, _)| k.as_slice())
    }
}

/// An lpm_trie key (`{u32 prefixlen; u8 data[]}`, prefixlen little-endian) with the data past
/// the prefix zeroed; `None` when the prefix is longer than the data.
pub(crate) fn lpm_normalize(key: &[u8]) -> Option<Vec<u8>> {
    let plen = u32::from_le_bytes(key.get(..4)?.try_into().ok()?) as usize;
    let data = &key[4..];
    if plen > 8 * data.len() {
        return None;
    }
    let mut out = key.to_vec();
    for (i, b) in out[4..].iter_mut().enumerate() {
        let keep = plen.saturating_sub(8 * i).min(8);
        *b &= (0xff00u16 >> keep) as u8;
    }
    Some(out)
}

/// The entry of an lpm_trie (keys normalised) that `key` finds: the longest prefix, at most
/// `key`'s prefix length, that `key`'s data starts with (`trie_lookup_elem`).
pub(crate) fn lpm_find(index: &BTreeMap<Vec<u8>, u32>, key: &[u8]) -> Option<u32> {
    let plen = u32::from_le_bytes(key.get(..4)?.try_into().ok()?);
    let max = plen.min(8 * (key.len() as u32 - 4));
    (0..=max).rev().find_map(|l| {
        let mut k = key.to_vec();
        k[..4].copy_from_slice(&l.to_le_bytes());
        index.get(&lpm_normalize(&k)?).copied()
    })
}

/// Map entries as (key bytes, value bytes), ordered by key bytes.
pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Concrete contents of every map of a program, in the program's map order.
#[derive(Debug, Clone)]
pub struct MapState {
    pub(crate) maps: Vec<MapStore>,
}

impl MapState {
    /// The entries map `m` (by index) holds room for, as it runs.
    pub fn max_entries(&self, m: usize) -> Option<u32> {
        self.maps.get(m).map(|s| s.def.max_entries)
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) {
        return Err(format!("'{s}' is not hex bytes (odd number of digits)"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| format!("'{s}' is not hex bytes"))
        })
        .collect()
}

impl MapState {
    /// Every map of `program` as the kernel creates it: arrays zeroed, hash maps empty, global
    /// data initialised from its section.
    pub fn new(program: &Program) -> MapState {
        MapState {
            maps: program.maps.iter().map(MapStore::new).collect(),
        }
    }

    pub(crate) fn find(&self, name: &str) -> Result<usize, MapError> {
        self.maps
            .iter()
            .position(|m| m.def.name == name)
            .ok_or_else(|| MapError::Unknown {
                name: name.to_string(),
                available: self
                    .maps
                    .iter()
                    .map(|m| m.def.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// The map definitions, in the program's order.
    pub fn defs(&self) -> impl Iterator<Item = &MapDef> {
        self.maps.iter().map(|m| &m.def)
    }

    /// Whether the interpreter models map `map` (holds its entries): false for map types it
    /// does not model and for an unknown name.
    pub fn is_modelled(&self, map: &str) -> bool {
        self.find(map)
            .is_ok_and(|i| !matches!(self.maps[i].kind, Kind::Unsupported | Kind::Events))
    }

    /// Set entry `key` of map `map` to `value` (as user space's `bpf_map_update_elem` with
    /// BPF_ANY does). Arrays take 4-byte little-endian indices below max_entries; a new key in
    /// a full hash map is an error.
    pub fn set(&mut self, map: &str, key: &[u8], value: &[u8]) -> Result<(), MapError> {
        let i = self.find(map)?;
        let m = &mut self.maps[i];
        let def = &m.def;
        let size_err = |what, got: usize, want| MapError::Size {
            map: def.name.clone(),
            what,
            got_bytes: got,
            want_bytes: want,
        };
        if m.kind == Kind::Unsupported {
            return Err(MapError::Unsupported {
                map: def.name.clone(),
                why: m.unsupported.clone(),
            });
        }
        if m.kind == Kind::Events {
            return Err(MapError::Unsupported {
                map: def.name.clone(),
                why: format!(
                    "a {} holds events for user space, no entries",
                    def.type_name()
                ),
            });
        }
        if m.def.is_keyless() {
            // User space's push (`bpf_map_update_elem` without a key): `key` is empty or the
            // entry's position, which orders the entries of the maps' JSON.
            if !(key.is_empty() || key.len() == 4) {
                return Err(size_err("key", key.len(), def.key_size));
            }
            if value.len() != def.value_size as usize {
                return Err(size_err("value", value.len(), def.value_size));
            }
            if m.kind == Kind::Bloom {
                m.bloom_add(value);
            } else if m.index.len() >= def.max_entries as usize {
                return Err(MapError::Full {
                    map: def.name.clone(),
                    max_entries: def.max_entries,
                });
            } else {
                m.queue_push(value.to_vec());
            }
            return Ok(());
        }
        if key.len() != def.key_size as usize {
            return Err(size_err("key", key.len(), def.key_size));
        }
        if value.len() != def.value_size as usize {
            return Err(size_err("value", value.len(), def.value_size));
        }
        let normal;
        let key = if m.kind == Kind::Lpm {
            normal = lpm_normalize(key).ok_or_else(|| MapError::Prefix {
                map: def.name.clone(),
                prefixlen: u32::from_le_bytes(key[..4].try_into().expect("4 bytes")),
                bits: 8 * (def.key_size - 4),
            })?;
            normal.as_slice()
        } else {
            key
        };
        let indexed = matches!(
            m.kind,
            Kind::Array | Kind::Redirect { indexed: true } | Kind::Outer { indexed: true }
        );
        if indexed {
            let idx = match <[u8; 4]>::try_from(key) {
                Ok(b) => u32::from_le_bytes(b),
                Err(_) => return Err(size_err("key", key.len(), 4)),
            };
            if idx >= def.max_entries {
                return Err(MapError::Index {
                    map: def.name.clone(),
                    index: idx,
                    max_entries: def.max_entries,
                });
            }
        }
        match m.index.get(key) {
            Some(&e) => m.arena[e as usize] = value.to_vec(),
            None => {
                if !matches!(m.kind, Kind::Array) && m.index.len() >= def.max_entries as usize {
                    return Err(MapError::Full {
                        map: def.name.clone(),
                        max_entries: def.max_entries,
                    });
                }
                m.push(key.to_vec(), value.to_vec());
            }
        }
        Ok(())
    }

    /// The value of entry `key` of map `map` (arrays: zeros for an index never written; `None`
    /// for an index out of range or a key not present).
    /// Queues, stacks and bloom filters: the entry at position `key` (4 bytes big-endian).
    pub fn get(&self, map: &str, key: &[u8]) -> Result<Option<Vec<u8>>, MapError> {
        let m = &self.maps[self.find(map)?];
        if m.def.is_keyless() {
            let pos = <[u8; 4]>::try_from(key).ok().map(u32::from_be_bytes);
            let e = pos.and_then(|p| m.index.values().nth(p as usize));
            return Ok(e.map(|&e| m.arena[e as usize].clone()));
        }
        if let Some(&e) = m.index.get(key) {
            return Ok(Some(m.arena[e as usize].clone()));
        }
        let in_range =
            <[u8; 4]>::try_from(key).is_ok_and(|b| u32::from_le_bytes(b) < m.def.max_entries);
        Ok((m.kind == Kind::Array && in_range).then(|| vec![0; m.def.value_size as usize]))
    }

    /// The entries of map `map`, ordered by key bytes: for arrays the elements that are not all
    /// zeros, for the other maps every entry.
    pub fn entries(&self, map: &str) -> Result<Entries, MapError> {
        Ok(Self::entries_of(&self.maps[self.find(map)?]))
    }

    fn entries_of(m: &MapStore) -> Entries {
        if m.def.is_keyless() {
            // By position (4 bytes big-endian): a queue's or stack's oldest first.
            return m
                .index
                .values()
                .enumerate()
                .map(|(i, &e)| {
                    (
                        (i as u32).to_be_bytes().to_vec(),
                        m.arena[e as usize].clone(),
                    )
                })
                .collect();
        }
        m.index
            .iter()
            .map(|(k, &e)| (k.clone(), m.arena[e as usize].clone()))
            .filter(|(_, v)| m.kind != Kind::Array || !Self::initial_value(m, v))
            .collect()
    }

    /// Whether `v` is an array entry nobody needs told: zeros, what an array holds before
    /// anything writes it. A global-data map's entry is always told (its contents are the
    /// section's, not zeros: an entry of zeros in `.data` is a write to keep, or the kernel runs
    /// with the object's initial value; and the differential test defines the map from them).
    fn initial_value(m: &MapStore, v: &[u8]) -> bool {
        m.def.data.is_empty() && v.iter().all(|&b| b == 0)
    }

    /// All maps in the format of the analyzer's `summary.json` "maps" key, by name.
    pub fn summary(&self) -> BTreeMap<String, MapSummary> {
        self.maps
            .iter()
            .map(|m| {
                let d = &m.def;
                let entries = Self::entries_of(m)
                    .into_iter()
                    .map(|(k, v)| (hex(&k), hex(&v)))
                    .collect();
                (
                    d.name.clone(),
                    MapSummary {
                        entries,
                        key_size: d.key_size,
                        max_entries: d.max_entries,
                        map_type: d.type_name(),
                        value_size: d.value_size,
                    },
                )
            })
            .collect()
    }

    /// [`MapState::summary`] as JSON: `{name: {"type", "key_size", "value_size",
    /// "max_entries", "entries": {key_hex: value_hex}}}`.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.summary()).expect("maps are plain data")
    }

    /// Set the entries that `maps` (the format of [`MapState::to_json`]) lists. A map may give
    /// only "entries"; "type", "key_size", "value_size" and "max_entries", where given, must be
    /// the program's.
    pub fn set_json(&mut self, maps: &Value) -> Result<(), MapError> {
        let Some(obj) = maps.as_object() else {
            return Err(MapError::Json("the maps are not a JSON object".into()));
        };
        for (name, m) in obj {
            let i = self.find(name)?;
            let Some(fields) = m.as_object() else {
                return Err(MapError::Json(format!("map '{name}' is not a JSON object")));
            };
            let def = self.maps[i].def.clone();
            for (field, v) in fields {
                let want = match field.as_str() {
                    "type" => Value::from(def.type_name()),
                    "key_size" => Value::from(def.key_size),
                    "value_size" => Value::from(def.value_size),
                    // 0: the object's declaration of a map its loader sizes (sized for the run
                    // by `size_from_json`).
                    "max_entries" if v.as_u64() == Some(0) => continue,
                    "max_entries" => Value::from(def.max_entries),
                    "entries" => continue,
                    other => {
                        return Err(MapError::Json(format!(
                            "map '{name}': unknown field '{other}' (expected type, key_size, \
                             value_size, max_entries, entries)"
                        )))
                    }
                };
                if *v != want {
                    return Err(MapError::Json(format!(
                        "map '{name}': {field} is {v} in the JSON but {want} in the program"
                    )));
                }
            }
            let Some(entries) = fields.get("entries") else {
                continue;
            };
            let Some(entries) = entries.as_object() else {
                return Err(MapError::Json(format!(
                    "map '{name}': entries are not a JSON object of key_hex: value_hex"
                )));
            };
            for (k, v) in entries {
                let key = unhex(k).map_err(|e| MapError::Json(format!("map '{name}': key {e}")))?;
                let Some(v) = v.as_str() else {
                    return Err(MapError::Json(format!(
                        "map '{name}': the value of key {k} is not a hex string"
                    )));
                };
                let value =
                    unhex(v).map_err(|e| MapError::Json(format!("map '{name}': value {e}")))?;
                self.set(name, &key, &value)?;
            }
        }
        Ok(())
    }

    /// [`MapState::new`], then [`MapState::set_json`] with the JSON text `maps_json` (empty: no
    /// entries).
    /// Give the maps of `program` the sizes they run with: the "max_entries" that `maps_json`
    /// (the format of [`MapState::to_json`]) gives a map — an analysis's summary gives the
    /// size `--map-size` gave it, or, for a map declared with `max_entries 0` (its loader sets
    /// the size), the model's — else, for a map declared with 0, [`UNSIZED_RUN_ENTRIES`] (also
    /// when the JSON gives 0, as the object does). Call it before [`MapState::from_json`] and
    /// before loading the program into the kernel (which refuses a map of no entries).
    pub fn size_from_json(program: &mut Program, maps_json: &str) -> Result<(), MapError> {
        let v: Value = if maps_json.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(maps_json).map_err(|e| MapError::Json(format!("not JSON: {e}")))?
        };
        for m in program.maps.iter_mut() {
            if m.is_local_storage() {
                continue; // 0 entries: the only size the kernel takes
            }
            let given = &v[m.name.as_str()]["max_entries"];
            m.max_entries = match given {
                Value::Null => m.max_entries,
                v if v.as_u64() == Some(0) => m.max_entries,
                v => match v.as_u64() {
                    Some(n) if n <= u32::MAX as u64 => n as u32,
                    _ => {
                        return Err(MapError::Json(format!(
                            "map '{}': max_entries {v} is not a size from 1 to {}",
                            m.name,
                            u32::MAX
                        )))
                    }
                },
            };
            if m.max_entries == 0 {
                m.max_entries = UNSIZED_RUN_ENTRIES;
            }
        }
        Ok(())
    }

    /// The maps of `program` with the entries JSON text `maps_json` gives (empty: no entries).
    pub fn from_json(program: &Program, maps_json: &str) -> Result<MapState, MapError> {
        let mut s = MapState::new(program);
        if !maps_json.trim().is_empty() {
            let v: Value = serde_json::from_str(maps_json)
                .map_err(|e| MapError::Json(format!("not JSON: {e}")))?;
            s.set_json(&v)?;
        }
        Ok(s)
    }
}

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

/// What a run may use besides the packet and the maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// Instructions executed at most before the run faults.
    pub max_insns: u64,
    /// `ctx->ingress_ifindex`.
    pub ingress_ifindex: u32,
    /// `ctx->rx_queue_index`.
    pub rx_queue_index: u32,
    /// What `bpf_ktime_get_ns` returns (nanoseconds; fixed for the run).
    pub ktime_ns: u64,
    /// Seed of `bpf_get_prandom_u32`'s generator (the kernel's lfsr113, `prandom_u32_state`).
    pub prandom_seed: u64,
    /// Whether `bpf_xdp_ct_lookup` finds a connection (a zeroed `struct nf_conn`) for a tuple
    /// that passes its checks; else it gives NULL with -ENOENT.
    pub ct_found: bool,
    /// Results the environment gives, in call order, as `(helper id, value)`: an example's
    /// time, random numbers and CPU (`ssp::Example::env`). Each call of a `time`-family helper
    /// takes the next one when it is that helper's (its own value otherwise, and from then on).
    pub replay: Vec<(u32, u64)>,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            max_insns: 1_000_000,
            ingress_ifindex: 1,
            rx_queue_index: 0,
            ktime_ns: 1_000_000_000,
            prandom_seed: 0,
            ct_found: true,
            replay: Vec::new(),
        }
    }
}

/// A finished run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// r0 at the program's exit (the XDP action).
    pub retval: u64,
    /// Instruction indices executed, in the numbering and convention of `path.insns`.
    pub trace: Vec<u32>,
    /// The packet after the program (with `bpf_xdp_adjust_head` / `_tail` applied).
    pub packet: Vec<u8>,
    /// Instructions executed.
    pub insns: u64,
}

/// The regions addresses point into (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Region {
    Null,
    Ctx,
    Packet {
        generation: u32,
    },
    Stack {
        frame: u32,
    },
    Map {
        map: u32,
    },
    Value {
        map: u32,
        elem: u32,
    },
    /// A ring buffer record `bpf_ringbuf_reserve` gave (index into `Machine::records`).
    Record {
        n: u32,
    },
    /// A conntrack entry `bpf_xdp_ct_lookup` gave (index into `Machine::conns`).
    Conn {
        n: u32,
    },
    /// The address of the function at instruction `pc` (a `bpf_loop` callback).
    Func {
        pc: u32,
    },
}

const OFFSET_BIAS: i64 = 1 << 31;

fn address(slot: u32, off: i64) -> u64 {
    ((slot as u64) << 32).wrapping_add(OFFSET_BIAS.wrapping_add(off) as u64)
}

fn split(addr: u64) -> (u32, i64) {
    (
        (addr >> 32) as u32,
        (addr & 0xffff_ffff) as i64 - OFFSET_BIAS,
    )
}

pub(crate) struct CallFrame {
    pub(crate) id: u32,
    pub(crate) stack: Vec<u8>,
    /// Where the caller continues, and its r6–r10.
    pub(crate) ret_pc: usize,
    pub(crate) saved: [u64; 5],
    /// A `bpf_loop` callback's frame: its exit returns to the call (`ret_pc`), resumed.
    pub(crate) callback: bool,
}

/// A `bpf_loop` call in progress: nr_loops, the callback (instruction) and its context
/// argument, and the calls made so far.
pub(crate) struct LoopRun {
    nr: u64,
    callback: usize,
    ctx: u64,
    calls: u64,
}

/// Where an access lands.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Place {
    /// Byte offset in the frame.
    Packet(usize),
    /// Call depth, byte offset in its stack.
    Stack(usize, usize),
    /// Map, element, byte offset.
    Value(usize, usize, usize),
    /// Ring buffer record, byte offset.
    Record(usize, usize),
    /// A conntrack entry (read only), byte offset.
    Conn(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Load,
    Store,
    Atomic,
    HelperRead,
}

impl Access {
    fn name(self) -> &'static str {
        match self {
            Access::Load => "load",
            Access::Store => "store",
            Access::Atomic => "atomic operation",
            Access::HelperRead => "helper read",
        }
    }
    fn writes(self) -> bool {
        matches!(self, Access::Store | Access::Atomic)
    }
}

pub(crate) struct Machine<'a> {
    pub(crate) p: &'a Program,
    pub(crate) maps: &'a mut MapState,
    pub(crate) opts: &'a RunOptions,
    pub(crate) regs: [u64; 11],
    pub(crate) regions: Vec<Region>,
    pub(crate) slots: HashMap<Region, u32>,
    /// The frame: headroom, packet, tailroom.
    pub(crate) frame: Vec<u8>,
    pub(crate) data: usize,
    pub(crate) data_end: usize,
    pub(crate) data_meta: usize,
    pub(crate) generation: u32,
    /// What ended each earlier packet generation: (instruction, helper).
    pub(crate) changed_by: Vec<(u32, u32)>,
    pub(crate) calls: Vec<CallFrame>,
    pub(crate) next_frame: u32,
    pub(crate) rnd: [u32; 4],
    /// Ring buffer records reserved in this run: the bytes, or `None` once submitted or
    /// discarded (the verifier then forbids the pointer).
    pub(crate) records: Vec<Option<Vec<u8>>>,
    /// Conntrack entries looked up in this run: whether each is still held (not released).
    pub(crate) conns: Vec<bool>,
    /// Tail calls made in this run.
    pub(crate) tails: u32,
    /// The `bpf_loop` calls in progress, innermost last.
    pub(crate) loops: Vec<LoopRun>,
    /// What the `bpf_loop` callback that just returned returned (its call runs again next).
    pub(crate) resumed: Option<u64>,
    /// The next of `opts.replay` to give; `usize::MAX` once a call did not match.
    pub(crate) replay_next: usize,
}

/// Run `packet` through `program` with `maps` (updated in place) until the program exits.
pub fn run(
    program: &Program,
    packet: &[u8],
    maps: &mut MapState,
    opts: &RunOptions,
) -> Result<Outcome, Fault> {
    if maps.maps.len() != program.maps.len()
        || maps
            .maps
            .iter()
            .zip(&program.maps)
            .any(|(s, d)| s.def != *d)
    {
        return Err(Fault::Input(
            "the map state was made for another program's maps".into(),
        ));
    }
    if packet.len() > MAX_PACKET_BYTES {
        return Err(Fault::Input(format!(
            "the packet is {} bytes; a {FRAME_BYTES}-byte frame holds at most {MAX_PACKET_BYTES} \
             ({XDP_PACKET_HEADROOM_BYTES} bytes of headroom in front, {SHARED_INFO_BYTES} reserved \
             behind)",
            packet.len()
        )));
    }
    for m in &mut maps.maps {
        m.compact();
    }
    let mut frame = vec![0u8; FRAME_BYTES];
    let data = XDP_PACKET_HEADROOM_BYTES;
    frame[data..data + packet.len()].copy_from_slice(packet);
    let mut m = Machine {
        p: program,
        maps,
        opts,
        regs: [0; 11],
        regions: vec![Region::Null],
        slots: HashMap::new(),
        frame,
        data,
        data_end: data + packet.len(),
        data_meta: data,
        generation: 0,
        changed_by: Vec::new(),
        calls: Vec::new(),
        next_frame: 1,
        rnd: prandom_seed_state(opts.prandom_seed),
        records: Vec::new(),
        conns: Vec::new(),
        tails: 0,
        loops: Vec::new(),
        resumed: None,
        replay_next: 0,
    };
    m.calls.push(CallFrame {
        id: 0,
        stack: vec![0; STACK_BYTES],
        ret_pc: 0,
        saved: [0; 5],
        callback: false,
    });
    m.regs[1] = m.ptr(Region::Ctx, 0);
    m.regs[10] = m.ptr(Region::Stack { frame: 0 }, 0);
    m.exec()
}

impl<'a> Machine<'a> {
    /// The environment's result for helper `id`, when the next of
    /// `opts.replay` is that helper's (see [`RunOptions::replay`]); `None` otherwise, and for
    /// every later call once one did not match (the run left the example's path).
    pub(crate) fn replayed(&mut self, id: u32) -> Option<u64> {
        match self.opts.replay.get(self.replay_next) {
            Some(&(h, v)) if h == id => {
                self.replay_next += 1;
                Some(v)
            }
            Some(_) => {
                self.replay_next = usize::MAX;
                None
            }
            None => None,
        }
    }

    pub(crate) fn ptr(&mut self, r: Region, off: i64) -> u64 {
        let slot = match self.slots.get(&r) {
            Some(&s) => s,
            None => {
                let s = self.regions.len() as u32;
                self.regions.push(r);
                self.slots.insert(r, s);
                s
            }
        };
        address(slot, off)
    }

    /// The packet's length now (`data_end - data`: a linear packet).
    pub(crate) fn packet_len(&self) -> usize {
        self.data_end - self.data
    }

    /// The address `off` bytes past the packet's start, as the program's pointers into the
    /// packet are now.
    pub(crate) fn packet_ptr(&mut self, off: i64) -> u64 {
        self.ptr(
            Region::Packet {
                generation: self.generation,
            },
            off,
        )
    }

    pub(crate) fn region_of(&self, addr: u64) -> (Region, i64) {
        let (slot, off) = split(addr);
        match self.regions.get(slot as usize) {
            Some(&r) => (r, off),
            None => (Region::Null, off),
        }
    }

    fn depth_of(&self, frame: u32) -> Option<usize> {
        self.calls.iter().rposition(|c| c.id == frame)
    }

    fn map_name(&self, map: u32) -> String {
        self.maps
            .maps
            .get(map as usize)
            .map_or_else(|| format!("#{map}"), |m| m.def.name.clone())
    }

    /// Resolve an access of `size` bytes at `addr`, checking it.
    pub(crate) fn place(
        &self,
        pc: u32,
        addr: u64,
        size: usize,
        access: Access,
    ) -> Result<Place, Fault> {
        let (r, off) = self.region_of(addr);
        let oob = |region: String, lo: i64, hi: i64| Fault::OutOfBounds {
            pc,
            access: access.name(),
            region,
            offset: off,
            size_bytes: size as u32,
            bounds: format!("{lo}..{hi}"),
        };
        let within = |lo: i64, hi: i64| off >= lo && off.saturating_add(size as i64) <= hi;
        match r {
            Region::Null => Err(invalid(
                pc,
                format!(
                    "{} of {size} bytes at {addr:#x}, which is not a pointer (NULL or a scalar)",
                    access.name()
                ),
            )),
            Region::Ctx => Err(invalid(
                pc,
                format!(
                    "{} of {size} bytes at offset {off} of the context: XDP programs may only \
                     load its u32 fields",
                    access.name()
                ),
            )),
            Region::Map { map } => Err(invalid(
                pc,
                format!(
                    "{} through the address of map '{}' (it is only an argument for helpers)",
                    access.name(),
                    self.map_name(map)
                ),
            )),
            Region::Packet { generation } => {
                if generation != self.generation {
                    let (at, h) = self
                        .changed_by
                        .get(generation as usize)
                        .copied()
                        .unwrap_or((0, 0));
                    return Err(invalid(
                        pc,
                        format!(
                            "{} through a packet pointer made before {} at instruction {at} \
                             changed the packet; the verifier requires reloading ctx->data",
                            access.name(),
                            helper_name(h)
                        ),
                    ));
                }
                let lo = -((self.data - self.data_meta) as i64);
                let hi = (self.data_end - self.data) as i64;
                if !within(lo, hi) {
                    return Err(oob(
                        "the packet (from data; metadata before 0)".into(),
                        lo,
                        hi,
                    ));
                }
                Ok(Place::Packet((self.data as i64 + off) as usize))
            }
            Region::Stack { frame } => {
                let Some(d) = self.depth_of(frame) else {
                    return Err(invalid(
                        pc,
                        format!(
                            "{} through a pointer into the stack of a call that has returned",
                            access.name()
                        ),
                    ));
                };
                let lo = -(STACK_BYTES as i64);
                if !within(lo, 0) {
                    return Err(oob(
                        format!("the stack of call frame {d} (from r10)"),
                        lo,
                        0,
                    ));
                }
                Ok(Place::Stack(d, (off - lo) as usize))
            }
            Region::Value { map, elem } => {
                let m = &self.maps.maps[map as usize];
                let hi = m.def.value_size as i64;
                if !within(0, hi) {
                    let key = m.key_of(elem).map_or_else(
                        || "a replaced or deleted entry".into(),
                        |k| format!("key {}", hex(k)),
                    );
                    return Err(oob(
                        format!("a value of map '{}' ({key})", m.def.name),
                        0,
                        hi,
                    ));
                }
                if access.writes() && m.read_only {
                    return Err(invalid(
                        pc,
                        format!(
                            "{} into read-only map '{}' (the verifier rejects writes to it)",
                            access.name(),
                            m.def.name
                        ),
                    ));
                }
                Ok(Place::Value(map as usize, elem as usize, off as usize))
            }
            Region::Func { pc: f } => Err(invalid(
                pc,
                format!(
                    "{} through the address of the function at instruction {f} (it is only a \
                     callback for bpf_loop)",
                    access.name()
                ),
            )),
            Region::Record { n } => {
                let Some(Some(r)) = self.records.get(n as usize) else {
                    return Err(invalid(
                        pc,
                        format!(
                            "{} through a ring buffer record already submitted or discarded",
                            access.name()
                        ),
                    ));
                };
                if !within(0, r.len() as i64) {
                    return Err(oob("a ring buffer record".into(), 0, r.len() as i64));
                }
                Ok(Place::Record(n as usize, off as usize))
            }
            Region::Conn { n } => {
                if !self.conns[n as usize] {
                    return Err(invalid(
                        pc,
                        format!(
                            "{} through a conntrack entry already released",
                            access.name()
                        ),
                    ));
                }
                if access.writes() {
                    return Err(invalid(
                        pc,
                        format!(
                            "{} into a conntrack entry (struct nf_conn): writes to it are not \
                             modelled",
                            access.name()
                        ),
                    ));
                }
                if !within(0, NF_CONN_BYTES as i64) {
                    return Err(oob(
                        "a conntrack entry (struct nf_conn)".into(),
                        0,
                        NF_CONN_BYTES as i64,
                    ));
                }
                Ok(Place::Conn(off as usize))
            }
        }
    }

    pub(crate) fn bytes(&self, p: Place, n: usize) -> &[u8] {
        match p {
            Place::Packet(o) => &self.frame[o..o + n],
            Place::Stack(d, o) => &self.calls[d].stack[o..o + n],
            Place::Value(m, e, o) => &self.maps.maps[m].arena[e][o..o + n],
            Place::Record(r, o) => &self.records[r].as_ref().expect("checked")[o..o + n],
            Place::Conn(o) => &[0u8; NF_CONN_BYTES][o..o + n],
        }
    }

    pub(crate) fn bytes_mut(&mut self, p: Place, n: usize) -> &mut [u8] {
        match p {
            Place::Packet(o) => &mut self.frame[o..o + n],
            Place::Stack(d, o) => &mut self.calls[d].stack[o..o + n],
            Place::Value(m, e, o) => &mut self.maps.maps[m].arena[e][o..o + n],
            Place::Record(r, o) => &mut self.records[r].as_mut().expect("checked")[o..o + n],
            Place::Conn(_) => unreachable!("writes into a conntrack entry are refused"),
        }
    }

    pub(crate) fn load(
        &self,
        pc: u32,
        addr: u64,
        size: Size,
        access: Access,
    ) -> Result<u64, Fault> {
        let n = size.bytes() as usize;
        let p = self.place(pc, addr, n, access)?;
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(self.bytes(p, n));
        Ok(u64::from_le_bytes(b))
    }

    pub(crate) fn store(
        &mut self,
        pc: u32,
        addr: u64,
        size: Size,
        v: u64,
        access: Access,
    ) -> Result<(), Fault> {
        let n = size.bytes() as usize;
        let p = self.place(pc, addr, n, access)?;
        self.bytes_mut(p, n).copy_from_slice(&v.to_le_bytes()[..n]);
        Ok(())
    }

    /// `n` bytes at `addr` for a helper.
    pub(crate) fn read(&self, pc: u32, addr: u64, n: usize) -> Result<Vec<u8>, Fault> {
        let p = self.place(pc, addr, n, Access::HelperRead)?;
        Ok(self.bytes(p, n).to_vec())
    }

    fn ctx_load(&self, pc: u32, off: i64, size: Size, signed: bool) -> Result<u64, Fault> {
        if size != Size::W || signed || !(0..CTX_BYTES).contains(&off) || off % 4 != 0 {
            return Err(invalid(
                pc,
                format!(
                    "{}{}-byte load at offset {off} of the context: the verifier allows only \
                     4-byte loads of struct xdp_md's fields (offsets 0, 4, …, 20)",
                    if signed { "sign-extending " } else { "" },
                    size.bytes()
                ),
            ));
        }
        let pkt = Region::Packet {
            generation: self.generation,
        };
        let slot = self.slots.get(&pkt).copied();
        let pkt_ptr = |o: i64| slot.map(|s| address(s, o));
        Ok(match off {
            0 => pkt_ptr(0),
            4 => pkt_ptr((self.data_end - self.data) as i64),
            8 => pkt_ptr(-((self.data - self.data_meta) as i64)),
            12 => Some(self.opts.ingress_ifindex as u64),
            16 => Some(self.opts.rx_queue_index as u64),
            _ => Some(0), // egress_ifindex: only devmap programs see one
        }
        .unwrap_or(0))
    }

    fn set_reg(&mut self, pc: u32, r: u8, v: u64) -> Result<(), Fault> {
        if r >= 10 {
            return Err(invalid(pc, format!("writes r{r} (r10 is read-only)")));
        }
        self.regs[r as usize] = v;
        Ok(())
    }

    fn src(&self, s: Src) -> u64 {
        match s {
            Src::Reg(r) => self.regs[r as usize],
            Src::Imm(i) => imm_value(i),
        }
    }

    fn target(&self, pc: u32, off: i64) -> Result<usize, Fault> {
        let t = pc as i64 + 1 + off;
        if t < 0 || t as usize >= self.p.code.len() {
            return Err(invalid(pc, format!("jump to {t}, outside the program")));
        }
        Ok(t as usize)
    }

    fn exec(&mut self) -> Result<Outcome, Fault> {
        // The packet region of generation 0 exists from the start.
        self.ptr(Region::Packet { generation: 0 }, 0);
        let mut trace = Vec::new();
        let mut pc: usize = 0;
        let mut insns: u64 = 0;
        let mut prev: u32 = 0;
        loop {
            let insn = match self.p.code.get(pc) {
                Some(Some(i)) => *i,
                Some(None) => {
                    return Err(invalid(
                        prev,
                        format!("control reaches {pc}, the second slot of an LD_IMM64"),
                    ))
                }
                None => {
                    return Err(invalid(
                        prev,
                        format!("control leaves the program (no instruction {pc})"),
                    ))
                }
            };
            let at = pc as u32;
            if insns >= self.opts.max_insns {
                return Err(Fault::InsnLimit {
                    pc: at,
                    limit: self.opts.max_insns,
                });
            }
            insns += 1;
            trace.push(at);
            prev = at;
            let mut next = pc + insn.width();
            match insn {
                Insn::Alu { op, is64, dst, src } => {
                    let v = alu(op, is64, self.regs[dst as usize], self.src(src));
                    self.set_reg(at, dst, v)?;
                }
                Insn::End { dst, bits, to_be } => {
                    let v = endian(self.regs[dst as usize], bits, to_be);
                    self.set_reg(at, dst, v)?;
                }
                Insn::Ldx {
                    size,
                    dst,
                    src,
                    off,
                    signed,
                } => {
                    let a = self.regs[src as usize].wrapping_add(off as i64 as u64);
                    let v = match self.region_of(a) {
                        (Region::Ctx, o) => self.ctx_load(at, o, size, signed)?,
                        _ => {
                            let v = self.load(at, a, size, Access::Load)?;
                            if signed && size != Size::DW {
                                let sh = 64 - 8 * size.bytes();
                                (((v << sh) as i64) >> sh) as u64
                            } else {
                                v
                            }
                        }
                    };
                    self.set_reg(at, dst, v)?;
                }
                Insn::St {
                    size,
                    dst,
                    src,
                    off,
                } => {
                    let a = self.regs[dst as usize].wrapping_add(off as i64 as u64);
                    let v = self.src(src);
                    self.store(at, a, size, v, Access::Store)?;
                }
                Insn::Atomic {
                    op,
                    size,
                    dst,
                    src,
                    off,
                    fetch,
                } => {
                    let a = self.regs[dst as usize].wrapping_add(off as i64 as u64);
                    if let (Region::Packet { .. }, _) = self.region_of(a) {
                        return Err(invalid(
                            at,
                            "atomic operation on packet memory (the verifier rejects it)",
                        ));
                    }
                    let old = self.load(at, a, size, Access::Atomic)?;
                    let x = self.regs[src as usize];
                    let mask = if size == Size::DW {
                        u64::MAX
                    } else {
                        u32::MAX as u64
                    };
                    let new = match op {
                        AtomicOp::Add => old.wrapping_add(x),
                        AtomicOp::Or => old | x,
                        AtomicOp::And => old & x,
                        AtomicOp::Xor => old ^ x,
                        AtomicOp::Xchg => x,
                        AtomicOp::CmpXchg => {
                            if old == self.regs[0] & mask {
                                x
                            } else {
                                old
                            }
                        }
                    };
                    self.store(at, a, size, new & mask, Access::Atomic)?;
                    if fetch {
                        let r = if op == AtomicOp::CmpXchg { 0 } else { src };
                        self.set_reg(at, r, old)?;
                    }
                }
                Insn::LdImm64 { dst, imm } => {
                    let v = match imm {
                        Imm64::Const(c) => c,
                        Imm64::Map(m) => self.ptr(Region::Map { map: m }, 0),
                        Imm64::Func(f) => self.ptr(Region::Func { pc: f }, 0),
                        Imm64::MapValue { map, off } => {
                            let Some(s) = self.maps.maps.get_mut(map as usize) else {
                                return Err(invalid(at, format!("reference to unknown map {map}")));
                            };
                            if s.kind != Kind::Array || s.def.max_entries == 0 {
                                return Err(invalid(
                                    at,
                                    format!(
                                        "direct value address of map '{}', which is not an array",
                                        s.def.name
                                    ),
                                ));
                            }
                            let e = s.array_elem(0);
                            self.ptr(Region::Value { map, elem: e }, off as i64)
                        }
                    };
                    self.set_reg(at, dst, v)?;
                }
                Insn::LdAbs => {
                    return Err(invalid(
                        at,
                        "legacy packet access (LD_ABS/LD_IND) is not available to XDP programs",
                    ))
                }
                Insn::Ja { off } => next = self.target(at, off as i64)?,
                Insn::Jmp {
                    op,
                    is64,
                    dst,
                    src,
                    off,
                } => {
                    if jmp_taken(op, is64, self.regs[dst as usize], self.src(src)) {
                        next = self.target(at, off as i64)?;
                    }
                }
                Insn::Call {
                    helper: crate::absint::HELPER_TAIL_CALL,
                } => match self.tail_call(at)? {
                    Some(entry) => next = entry,
                    None => self.regs[0] = (-ENOENT) as u64,
                },
                Insn::Call {
                    helper: crate::absint::HELPER_LOOP,
                } => {
                    if let Some(cb) = self.loop_call(at)? {
                        next = cb;
                    }
                }
                Insn::Call { helper } => {
                    let r0 = self.call(at, helper)?;
                    self.regs[0] = r0;
                }
                Insn::Kfunc { id } => {
                    let name = self.p.kfunc_name(id);
                    if name == KFUNC_CT_LOOKUP || name == KFUNC_CT_RELEASE {
                        self.regs[0] = self.conntrack(at, &name)?;
                        pc = next;
                        continue;
                    }
                    if crate::helpers::iter_num::is_iter_num(&name) {
                        self.regs[0] = self.iter_num(at, &name)?;
                        pc = next;
                        continue;
                    }
                    if crate::helpers::dynptr::is_dynptr(&name) {
                        self.regs[0] = self.dynptr(at, &name)?;
                        pc = next;
                        continue;
                    }
                    if crate::helpers::kfuncs::NO_VALUE.contains(&name.as_str()) {
                        self.regs[0] = 0;
                        pc = next;
                        continue;
                    }
                    let Some(outs) = kfunc_outputs(&name) else {
                        return Err(invalid(at, kfunc_refusal(&name).unwrap_or_default()));
                    };
                    // The XDP metadata kfuncs: r1 the context, r2 (r3) memory of the output's
                    // size (the verifier checks it readable and writable). Not bound to a
                    // device (BPF_PROG_TEST_RUN), the kernel's default returns -EOPNOTSUPP and
                    // writes nothing. symex.rs: 0 with fresh outputs, -ENODATA or -EOPNOTSUPP.
                    if !matches!(self.region_of(self.regs[1]), (Region::Ctx, 0)) {
                        return Err(invalid(at, format!("kfunc {name}: r1 is not the context")));
                    }
                    for (i, n) in outs.iter().enumerate() {
                        self.place(at, self.regs[2 + i], *n, Access::Store)?;
                    }
                    self.regs[0] = (-EOPNOTSUPP) as u64;
                }
                Insn::CallLocal { off } => {
                    let t = self.target(at, off as i64)?;
                    if self.calls.len() >= MAX_CALL_FRAMES {
                        return Err(invalid(
                            at,
                            format!("bpf-to-bpf calls nest deeper than {MAX_CALL_FRAMES} frames"),
                        ));
                    }
                    let id = self.next_frame;
                    self.next_frame = self.next_frame.wrapping_add(1);
                    let mut saved = [0u64; 5];
                    saved.copy_from_slice(&self.regs[6..11]);
                    self.calls.push(CallFrame {
                        id,
                        stack: vec![0; STACK_BYTES],
                        ret_pc: next,
                        saved,
                        callback: false,
                    });
                    self.regs[10] = self.ptr(Region::Stack { frame: id }, 0);
                    next = t;
                }
                Insn::Exit => {
                    if self.calls.len() == 1 {
                        let packet = self.frame[self.data..self.data_end].to_vec();
                        return Ok(Outcome {
                            retval: self.regs[0],
                            trace,
                            packet,
                            insns,
                        });
                    }
                    if let Some(f) = self.calls.pop() {
                        self.regs[6..11].copy_from_slice(&f.saved);
                        next = f.ret_pc;
                        if f.callback {
                            self.resumed = Some(self.regs[0]);
                        }
                    }
                }
            }
            pc = next;
        }
    }

    // -----------------------------------------------------------------------------------------
    // Helpers
    // -----------------------------------------------------------------------------------------

    pub(crate) fn helper_fault(&self, pc: u32, id: u32, what: impl Into<String>) -> Fault {
        Fault::Helper {
            pc,
            id,
            name: helper_name(id),
            what: what.into(),
        }
    }

    /// `bpf_loop(nr_loops, callback, ctx, flags)` (kernel/bpf/bpf_iter.c): flags other than 0
    /// give -EINVAL and nr_loops (u32) above `BPF_MAX_LOOPS` -E2BIG, without a call; otherwise
    /// `callback(i, ctx)` is called for i = 0, 1, … until it returns non-zero or nr_loops calls
    /// are made, and the helper returns the calls made. A call of the callback is a fresh frame
    /// whose exit comes back to this instruction (`resumed`): `Some(target)` when the callback
    /// is called next, `None` when the helper returns (r0 set).
    fn loop_call(&mut self, pc: u32) -> Result<Option<usize>, Fault> {
        let id = crate::absint::HELPER_LOOP;
        if let Some(ret) = self.resumed.take() {
            let Some(l) = self.loops.last() else {
                return Err(self.helper_fault(pc, id, "a callback returned to no loop"));
            };
            if ret != 0 || l.calls >= l.nr {
                self.regs[0] = l.calls;
                self.loops.pop();
                return Ok(None);
            }
        } else {
            // With flags 0 the verifier inlines the call (verifier.c inline_bpf_loop): the
            // loop compares all 64 bits of r1 with BPF_MAX_LOOPS and counts to it, and -E2BIG
            // is a 32-bit move (0xfffffff9). Other flags reach the helper: -EINVAL.
            let nr = self.regs[1];
            let flags = self.regs[4];
            let callback = match self.region_of(self.regs[2]) {
                (Region::Func { pc: f }, 0) => f as usize,
                _ => {
                    return Err(self.helper_fault(
                        pc,
                        id,
                        "the callback (r2) is not the address of a function",
                    ))
                }
            };
            if flags != 0 {
                self.regs[0] = (-EINVAL) as u64;
                return Ok(None);
            }
            if nr > crate::absint::BPF_MAX_LOOPS {
                self.regs[0] = (-E2BIG) as u32 as u64;
                return Ok(None);
            }
            if nr == 0 {
                self.regs[0] = 0;
                return Ok(None);
            }
            self.loops.push(LoopRun {
                nr,
                callback,
                ctx: self.regs[3],
                calls: 0,
            });
        }
        if self.calls.len() >= MAX_CALL_FRAMES {
            return Err(invalid(
                pc,
                format!("bpf-to-bpf calls nest deeper than {MAX_CALL_FRAMES} frames"),
            ));
        }
        let l = self.loops.last_mut().expect("a loop in progress");
        let (i, ctx, target) = (l.calls, l.ctx, l.callback);
        l.calls += 1;
        let fid = self.next_frame;
        self.next_frame = self.next_frame.wrapping_add(1);
        let mut saved = [0u64; 5];
        saved.copy_from_slice(&self.regs[6..11]);
        self.calls.push(CallFrame {
            id: fid,
            stack: vec![0; STACK_BYTES],
            ret_pc: pc as usize,
            saved,
            callback: true,
        });
        self.regs[0] = 0;
        self.regs[1] = i;
        self.regs[2] = ctx;
        self.regs[3..=5].fill(0);
        self.regs[10] = self.ptr(Region::Stack { frame: fid }, 0);
        Ok(Some(target))
    }

    /// The map that argument register `r` points to.
    pub(crate) fn map_arg(&self, pc: u32, id: u32, r: usize) -> Result<usize, Fault> {
        match self.region_of(self.regs[r]) {
            (Region::Map { map }, 0) => Ok(map as usize),
            _ => Err(self.helper_fault(pc, id, format!("r{r} is not a map"))),
        }
    }

    pub(crate) fn ctx_arg(&self, pc: u32, id: u32) -> Result<(), Fault> {
        match self.region_of(self.regs[1]) {
            (Region::Ctx, 0) => Ok(()),
            _ => Err(self.helper_fault(pc, id, "r1 is not the context")),
        }
    }

    pub(crate) fn unmodelled_map(&self, pc: u32, id: u32, m: usize) -> Fault {
        let s = &self.maps.maps[m];
        let why = if s.kind == Kind::Unsupported {
            s.unsupported.clone()
        } else {
            format!(
                "the helper does not apply to maps of type {}",
                s.def.type_name()
            )
        };
        self.helper_fault(pc, id, format!("map '{}': {why}", s.def.name))
    }

    /// `bpf_tail_call(ctx, map, index)`: the target's entry when the call jumps (the slot of a
    /// known prog array holds a program, fewer than MAX_TAIL_CALLS calls were made), which
    /// then runs as a program (r1 the context, a fresh stack, no caller to return to); `None`
    /// when it returns. A prog array whose contents are not known is empty here.
    fn tail_call(&mut self, pc: u32) -> Result<Option<usize>, Fault> {
        let id = crate::absint::HELPER_TAIL_CALL;
        self.ctx_arg(pc, id)?;
        let m = self.map_arg(pc, id, 2)?;
        if !self.p.maps[m].is_prog_array() {
            return Err(self.unmodelled_map(pc, id, m));
        }
        let index = self.regs[3] as u32;
        if self.tails >= crate::load::MAX_TAIL_CALLS {
            return Ok(None);
        }
        let Some(crate::load::ProgArray::Known(slots)) = self.p.prog_arrays.get(&(m as u32)) else {
            return Ok(None);
        };
        let Some(&t) = slots.get(&index) else {
            return Ok(None);
        };
        let entry = self.p.tail_targets[t].entry as usize;
        self.tails += 1;
        let frame = self.next_frame;
        self.next_frame = self.next_frame.wrapping_add(1);
        self.calls = vec![CallFrame {
            id: frame,
            stack: vec![0; STACK_BYTES],
            ret_pc: 0,
            saved: [0; 5],
            callback: false,
        }];
        self.loops.clear();
        self.regs[10] = self.ptr(Region::Stack { frame }, 0);
        Ok(Some(entry))
    }

    /// Helper `id` at instruction `pc`, by its family's semantics (crate::helpers).
    fn call(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
        let row = crate::helpers::find(id);
        if let Some(f) = row.and_then(|h| h.interp) {
            return f(self, pc, id);
        }
        if let Some(why) = row.and_then(|h| h.refused) {
            return Err(self.helper_fault(pc, id, format!("is not supported: {why}")));
        }
        if let Some(h) = row {
            return Err(self.helper_fault(
                pc,
                id,
                format!(
                    "is not modelled by the interpreter (the analysis takes its result as \
                     unknown; family {})",
                    h.family
                ),
            ));
        }
        match id {
            HELPER_L3_CSUM_REPLACE | HELPER_L4_CSUM_REPLACE => Err(self.helper_fault(
                pc,
                id,
                "is not available to XDP programs (the kernel offers it only to programs with \
                 an sk_buff: tc, lwt)",
            )),
            _ => Err(self.helper_fault(pc, id, "is not supported by the interpreter")),
        }
    }

    /// A helper that changes the packet's bounds was called (whether it succeeded or not, the
    /// verifier forgets every packet pointer): a new packet generation begins.
    pub(crate) fn packet_changed(&mut self, pc: u32, id: u32) {
        self.changed_by.push((pc, id));
        self.generation = self.generation.wrapping_add(1);
        self.ptr(
            Region::Packet {
                generation: self.generation,
            },
            0,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Arithmetic the helpers share with the kernel
// ---------------------------------------------------------------------------------------------

/// `csum_from32to16` (include/net/checksum.h): the two 16-bit halves added with end-around
/// carry.
pub fn csum_from32to16(x: u32) -> u16 {
    (x.wrapping_add(x.rotate_right(16)) >> 16) as u16
}

/// `csum_add` (include/net/checksum.h): 32-bit addition with end-around carry.
pub fn csum_add(a: u32, b: u32) -> u32 {
    let (s, carry) = a.overflowing_add(b);
    s + u32::from(carry)
}

/// `csum_partial(buf, len, seed)` as Linux computes it on x86-64 (`csum-partial_64.c`): the
/// bytes as little-endian 64-bit words (a shorter tail zero-padded) added with end-around
/// carry to the seed, folded to 32 bits. Other architectures' implementations return a value
/// congruent modulo 0xffff (the same checksum once folded to 16 bits), not always the same 32
/// bits.
pub fn csum_partial(buf: &[u8], seed: u32) -> u32 {
    fn add(sum: u64, x: u64) -> u64 {
        let (s, carry) = sum.overflowing_add(x);
        s + carry as u64
    }
    let mut sum = u64::from(seed);
    let mut words = buf.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        sum = add(sum, u64::from_le_bytes(b));
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let mut b = [0u8; 8];
        b[..tail.len()].copy_from_slice(tail);
        sum = add(sum, u64::from_le_bytes(b));
    }
    let (s, carry) = (sum as u32).overflowing_add((sum >> 32) as u32);
    s + carry as u32
}

/// `prandom_seed_state`: the lfsr113 state from a 64-bit seed, warmed up.
pub(crate) fn prandom_seed_state(seed: u64) -> [u32; 4] {
    let i = ((seed >> 32) ^ (seed << 10) ^ seed) as u32;
    let s = |m: u32| if i < m { i + m } else { i };
    let mut st = [s(2), s(8), s(16), s(128)];
    for _ in 0..10 {
        prandom_u32_state(&mut st);
    }
    st
}

/// `prandom_u32_state`: L'Ecuyer's maximally equidistributed combined Tausworthe generator.
pub(crate) fn prandom_u32_state(s: &mut [u32; 4]) -> u32 {
    fn taus(s: u32, a: u32, b: u32, c: u32, d: u32) -> u32 {
        ((s & c) << d) ^ (((s << a) ^ s) >> b)
    }
    s[0] = taus(s[0], 6, 13, 4_294_967_294, 18);
    s[1] = taus(s[1], 2, 27, 4_294_967_288, 2);
    s[2] = taus(s[2], 13, 21, 4_294_967_280, 7);
    s[3] = taus(s[3], 3, 12, 4_294_967_168, 13);
    s[0] ^ s[1] ^ s[2] ^ s[3]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testasm::*;
    use serde_json::json;

    fn run_with(p: &Program, pkt: &[u8], maps: &mut MapState) -> Result<Outcome, Fault> {
        run(p, pkt, maps, &RunOptions::default())
    }

    /// r0 of a map-less program on a 64-byte packet.
    fn r0(slots: &[Slot]) -> u64 {
        let p = prog(slots, Vec::new());
        let mut m = MapState::new(&p);
        run_with(&p, &[0; 64], &mut m).unwrap().retval
    }

    #[test]
    fn ring_buffer_records_are_real_buffers_until_submitted() {
        let rb = || vec![map("rb", MAP_RINGBUF, 0, 0, 4096)];
        let run1 = |slots: &[Slot]| {
            let p = prog(slots, rb());
            let mut m = MapState::new(&p);
            run_with(&p, &[0; 64], &mut m)
        };
        // r0 = reserve(rb, 16, 0); *(u64 *)(r0 + 8) = 5; r6 = *(r0 + 8); submit(r0); r0 = r6.
        let mut s = ld_map(1, 0).to_vec();
        s.extend([mov(2, 16), mov(3, 0), call(131), jeq(0, 0, 8), mov(1, 5)]);
        s.extend([
            stx(DW, 0, 1, 8),
            ldx(DW, 6, 0, 8),
            movr(7, 0),
            movr(1, 0),
            mov(2, 0),
        ]);
        s.extend([call(132), movr(0, 6), exit(), exit()]);
        assert_eq!(run1(&s).unwrap().retval, 5);
        // Past the record's 16 bytes: out of bounds; after submit: refused.
        let mut oob = s.clone();
        oob[7] = stx(DW, 0, 1, 16);
        assert!(matches!(run1(&oob), Err(Fault::OutOfBounds { .. })));
        let mut late = s.clone();
        late[13] = ldx(DW, 0, 7, 0);
        assert!(run1(&late)
            .unwrap_err()
            .to_string()
            .contains("submitted or discarded"));
        // Flags, or a record larger than the buffer: NULL.
        for (size, flags) in [(16, 1), (4096, 0)] {
            let mut s = ld_map(1, 0).to_vec();
            s.extend([mov(2, size), mov(3, flags), call(131), exit()]);
            assert_eq!(run1(&s).unwrap().retval, 0);
        }
        // ringbuf_output: 0, or -EINVAL for unknown flags.
        for (flags, want) in [(0, 0), (4, -EINVAL)] {
            let mut s = ld_map(1, 0).to_vec();
            s.extend([movr(2, 10), add(2, -8), st(DW, 10, -8, 0)]);
            s.extend([mov(3, 8), mov(4, flags), call(130), exit()]);
            assert_eq!(run1(&s).unwrap().retval, want as u64);
        }
        // The coarse clock is the clock.
        assert_eq!(r0(&[call(160), exit()]), RunOptions::default().ktime_ns);
    }

    #[test]
    fn xdp_load_and_store_bytes_copy_within_the_packet() {
        // r0 = load_bytes(ctx, off, r10-8, 4) (r6 = ctx); with `tail`, r0 = the buffer.
        let run1 = |off: i32, len: i32, helper: i32, tail: &[Slot]| {
            let mut s = vec![movr(6, 1), st(DW, 10, -8, 0x11)];
            s.extend([
                movr(1, 6),
                mov(2, off),
                movr(3, 10),
                add(3, -8),
                mov(4, len),
            ]);
            s.push(call(helper));
            s.extend_from_slice(tail);
            s.push(exit());
            let p = prog(&s, Vec::new());
            let mut m = MapState::new(&p);
            let pkt: Vec<u8> = (0..64).collect();
            let o = run_with(&p, &pkt, &mut m).unwrap();
            (o.retval, o.packet)
        };
        assert_eq!(run1(4, 4, 189, &[]).0, 0);
        assert_eq!(run1(4, 4, 189, &[ldx(W, 0, 10, -8)]).0, 0x0706_0504);
        assert_eq!(run1(60, 4, 189, &[]).0, 0);
        assert_eq!(run1(61, 4, 189, &[]).0, (-EINVAL) as u64);
        assert_eq!(run1(61, 4, 189, &[ldx(W, 0, 10, -8)]).0, 0x11);
        assert_eq!(run1(0x10000, 4, 189, &[]).0, (-EFAULT) as u64);
        let (r, pkt) = run1(2, 4, 190, &[]);
        assert_eq!((r, &pkt[..7]), (0, &[0, 1, 0x11, 0, 0, 0, 6][..]));
    }

    #[test]
    fn fib_lookup_without_a_fib_finds_forwarding_disabled() {
        // r0 = fib_lookup(ctx, r10-64, plen, flags) with params.family = family.
        let run1 = |family: i32, plen: i32, flags: i32| {
            let mut s = Vec::new();
            for o in (-64..0).step_by(8) {
                s.push(st(DW, 10, o, 0));
            }
            s.extend([
                st(B, 10, -64, family),
                movr(2, 10),
                add(2, -64),
                mov(3, plen),
            ]);
            s.extend([mov(4, flags), call(69), exit()]);
            r0(&s)
        };
        assert_eq!(run1(2, 64, 0), FIB_LKUP_RET_FWD_DISABLED);
        assert_eq!(run1(10, 64, 3), FIB_LKUP_RET_FWD_DISABLED);
        assert_eq!(run1(2, 60, 0), (-EINVAL) as u64);
        assert_eq!(run1(2, 64, 4), (-EINVAL) as u64);
        assert_eq!(run1(7, 64, 0), (-EAFNOSUPPORT) as u64);
    }

    #[test]
    fn alu_corner_cases() {
        // 32-bit results zero-extend: 0xffffffff + 1 = 0, mov32 -1 = 0xffffffff.
        assert_eq!(r0(&[mov32(0, -1), i(0x04, 0, 0, 0, 1), exit()]), 0);
        assert_eq!(r0(&[mov32(0, -1), exit()]), 0xffff_ffff);
        // A 32-bit operation drops the upper half of its 64-bit operand.
        let [a, b] = ld64(0, 0x1234_5678_0000_0005);
        assert_eq!(r0(&[a, b, i(0x04, 0, 0, 0, 0), exit()]), 5);
        // mov64 sign-extends its immediate.
        assert_eq!(r0(&[mov(0, -2), exit()]), (-2i64) as u64);
        // Division by zero is 0, modulo by zero leaves the dividend (32-bit: its low half).
        assert_eq!(r0(&[mov(0, 7), mov(1, 0), i(0x3f, 0, 1, 0, 0), exit()]), 0);
        assert_eq!(r0(&[mov(0, 7), mov(1, 0), i(0x9f, 0, 1, 0, 0), exit()]), 7);
        let [a, b] = ld64(0, 0xffff_ffff_0000_0009);
        assert_eq!(r0(&[a, b, mov(1, 0), i(0x9c, 0, 1, 0, 0), exit()]), 9);
        assert_eq!(r0(&[a, b, mov(1, 0), i(0x3c, 0, 1, 0, 0), exit()]), 0);
        // Shifts take the count modulo the width; arsh keeps the sign.
        assert_eq!(r0(&[mov(0, 1), mov(1, 65), i(0x6f, 0, 1, 0, 0), exit()]), 2);
        assert_eq!(
            r0(&[mov(0, -8), i(0xc7, 0, 0, 0, 1), exit()]),
            (-4i64) as u64
        );
        assert_eq!(
            r0(&[mov32(0, -8), i(0xc4, 0, 0, 0, 1), exit()]),
            0xffff_fffc
        );
        // neg, 32 and 64 bits.
        assert_eq!(r0(&[mov(0, 1), i(0x87, 0, 0, 0, 0), exit()]), u64::MAX);
        assert_eq!(r0(&[mov(0, 1), i(0x84, 0, 0, 0, 0), exit()]), 0xffff_ffff);
        // Byte swaps: to_be 16/32/64, to_le truncates, bswap (ALU64) swaps.
        assert_eq!(r0(&[mov(0, 0x1234), i(0xdc, 0, 0, 0, 16), exit()]), 0x3412);
        assert_eq!(
            r0(&[mov(0, 0x1234_5678), i(0xdc, 0, 0, 0, 32), exit()]),
            0x7856_3412
        );
        let [a, b] = ld64(0, 0x0102_0304_0506_0708);
        assert_eq!(
            r0(&[a, b, i(0xdc, 0, 0, 0, 64), exit()]),
            0x0807_0605_0403_0201
        );
        assert_eq!(r0(&[a, b, i(0xd4, 0, 0, 0, 16), exit()]), 0x0708);
        assert_eq!(r0(&[a, b, i(0xd7, 0, 0, 0, 16), exit()]), 0x0807);
        // JMP32 compares the low halves, signed or not.
        let [a, b] = ld64(1, 0x0000_0001_ffff_ffff);
        assert_eq!(
            r0(&[a, b, mov(0, 1), i(0xc6, 1, 0, 1, 0), mov(0, 0), exit()]),
            1,
            "jslt32 -1 < 0"
        );
        assert_eq!(
            r0(&[
                a,
                b,
                mov(0, 1),
                i(0xa5, 1, 0, 1, 0x7fff_ffff),
                mov(0, 0),
                exit()
            ]),
            0,
            "jlt64: 0x1ffffffff is not below 0x7fffffff"
        );
    }

    #[test]
    fn loads_and_stores_all_sizes_with_sign_extension() {
        // *(u64 *)(r10 - 8) = 0x8081828384858687, then read it back in every size.
        let [a, b] = ld64(1, 0x8081_8283_8485_8687);
        let base = [a, b, stx(DW, 10, 1, -8)];
        let run1 = |tail: &[Slot]| {
            let mut s = base.to_vec();
            s.extend_from_slice(tail);
            s.push(exit());
            r0(&s)
        };
        assert_eq!(run1(&[ldx(B, 0, 10, -8)]), 0x87);
        assert_eq!(run1(&[ldx(H, 0, 10, -8)]), 0x8687);
        assert_eq!(run1(&[ldx(W, 0, 10, -8)]), 0x8485_8687);
        assert_eq!(run1(&[ldx(DW, 0, 10, -8)]), 0x8081_8283_8485_8687);
        // Sign-extending loads (MEMSX: mode 0x80).
        assert_eq!(run1(&[i(0x91, 0, 10, -8, 0)]), (-0x79i64) as u64);
        assert_eq!(run1(&[i(0x89, 0, 10, -8, 0)]), 0xffff_ffff_ffff_8687);
        assert_eq!(run1(&[i(0x81, 0, 10, -8, 0)]), 0xffff_ffff_8485_8687);
        // ST with an immediate stores its low bytes (sign-extended for DW).
        assert_eq!(
            r0(&[st(H, 10, -2, -1), ldx(W, 0, 10, -4), exit()]),
            0xffff_0000
        );
        assert_eq!(
            r0(&[st(DW, 10, -8, -1), ldx(DW, 0, 10, -8), exit()]),
            u64::MAX
        );
    }

    #[test]
    fn atomics() {
        let prelude = |v: i32| [st(DW, 10, -8, 0), st(W, 10, -8, v), movr(2, 10), add(2, -8)];
        let go = |v: i32, ops: &[Slot]| {
            let mut s = prelude(v).to_vec();
            s.extend_from_slice(ops);
            s.push(exit());
            r0(&s)
        };
        // add without fetch, then read: 5 + 3.
        assert_eq!(
            go(5, &[mov(1, 3), i(0xdb, 2, 1, 0, 0x00), ldx(DW, 0, 10, -8)]),
            8
        );
        // fetch_add returns the old value in src.
        assert_eq!(go(5, &[mov(1, 3), i(0xdb, 2, 1, 0, 0x01), movr(0, 1)]), 5);
        // or / and / xor (fetch returns old), 32-bit.
        assert_eq!(
            go(
                0b1100,
                &[mov(1, 0b1010), i(0xc3, 2, 1, 0, 0x40), ldx(W, 0, 10, -8)]
            ),
            0b1110
        );
        assert_eq!(
            go(
                0b1100,
                &[mov(1, 0b1010), i(0xc3, 2, 1, 0, 0x51), ldx(W, 0, 10, -8)]
            ),
            0b1000
        );
        assert_eq!(
            go(
                0b1100,
                &[mov(1, 0b1010), i(0xc3, 2, 1, 0, 0xa1), movr(0, 1)]
            ),
            0b1100
        );
        assert_eq!(
            go(
                0b1100,
                &[mov(1, 0b1010), i(0xc3, 2, 1, 0, 0xa0), ldx(W, 0, 10, -8)]
            ),
            0b0110
        );
        // A 32-bit add wraps within 32 bits and leaves the upper word alone.
        assert_eq!(
            go(
                -1,
                &[
                    st(W, 10, -4, 7),
                    mov(1, 1),
                    i(0xc3, 2, 1, 0, 0x00),
                    ldx(DW, 0, 10, -8)
                ]
            ),
            7 << 32
        );
        // xchg.
        assert_eq!(
            go(
                5,
                &[
                    mov(1, 9),
                    i(0xdb, 2, 1, 0, 0xe1),
                    ldx(DW, 0, 10, -8),
                    addr(0, 1)
                ]
            ),
            14
        );
        // cmpxchg: r0 == old stores src; r0 gets the old value either way.
        assert_eq!(
            go(
                5,
                &[
                    mov(0, 5),
                    mov(1, 9),
                    i(0xdb, 2, 1, 0, 0xf1),
                    ldx(DW, 3, 10, -8),
                    i(0x27, 3, 0, 0, 100),
                    addr(0, 3)
                ]
            ),
            5 + 900
        );
        assert_eq!(
            go(
                5,
                &[
                    mov(0, 4),
                    mov(1, 9),
                    i(0xdb, 2, 1, 0, 0xf1),
                    ldx(DW, 3, 10, -8),
                    i(0x27, 3, 0, 0, 100),
                    addr(0, 3)
                ]
            ),
            5 + 500
        );
        // 32-bit cmpxchg compares the low half of r0 only.
        let [a, b] = ld64(0, 0xdead_0000_0000_0005);
        assert_eq!(
            go(
                5,
                &[a, b, mov(1, 9), i(0xc3, 2, 1, 0, 0xf1), ldx(W, 0, 10, -8)]
            ),
            9
        );
    }

    #[test]
    fn bpf_loop_calls_its_callback_until_it_stops_or_nr_loops() {
        let go = |nr: i32, flags: i32, stop: i32| {
            let p = prog(&loop_slots(nr, flags, stop), Vec::new());
            let o = run_with(&p, &[0; 64], &mut MapState::new(&p)).unwrap();
            (o.retval >> 16, o.retval & 0xffff, o.trace)
        };
        // 5 calls (i = 0..4, sum 10), bpf_loop returns 5.
        assert_eq!(go(5, 0, 100).0, 5);
        assert_eq!(go(5, 0, 100).1, 10);
        // The callback returns 1 at i = 2: 3 calls (sum 0 + 1 + 2), bpf_loop returns 3.
        assert_eq!(go(5, 0, 2).0, 3);
        assert_eq!(go(5, 0, 2).1, 3);
        // No call: nr_loops 0 returns 0; flags -EINVAL; above BPF_MAX_LOOPS -E2BIG, as the
        // verifier's inlined loop gives it (a 32-bit move).
        assert_eq!(go(0, 0, 100).0, 0);
        let (r, sum, _) = go(0, 1, 100);
        assert_eq!((r, sum), (((-22i64 as u64) << 16) >> 16, 0));
        let (r, sum, _) = go((1 << 23) + 1, 0, 100);
        assert_eq!((r, sum), (0xffff_fff9, 0));
        // The trace comes back to the call after each call of the callback.
        let cb = [12, 13, 14, 15, 16, 17];
        let mut want = vec![0, 1, 2, 4, 5, 6, 7];
        want.extend(cb);
        want.push(7);
        want.extend(cb);
        want.extend([7, 8, 9, 10, 11]);
        assert_eq!(go(2, 0, 100).2, want);
        // r2 must be a function's address.
        let mut s = loop_slots(2, 0, 100);
        s[2] = mov(2, 12);
        s[3] = mov(2, 12);
        let p = prog(&s, Vec::new());
        let e = run_with(&p, &[0; 64], &mut MapState::new(&p)).unwrap_err();
        assert!(
            e.to_string().contains("not the address of a function"),
            "{e}"
        );
    }

    #[test]
    fn bpf_to_bpf_calls_keep_callee_saved_registers_and_frames() {
        // main: r6 = 100; *(r10-8) = 1; r1 = r10 - 8; call f; r0 += r6; r0 += *(r10-8); exit
        // f:    r6 = 7; *(r10-8) = 50 (its own frame); *(r1) = 20 (the caller's); r0 = r6; exit
        let slots = [
            mov(6, 100),        // 0
            st(DW, 10, -8, 1),  // 1
            movr(1, 10),        // 2
            add(1, -8),         // 3
            call_local(4),      // 4 → 9
            addr(0, 6),         // 5
            ldx(DW, 2, 10, -8), // 6
            addr(0, 2),         // 7
            exit(),             // 8
            mov(6, 7),          // 9
            st(DW, 10, -8, 50), // 10
            st(DW, 1, 0, 20),   // 11
            movr(0, 6),         // 12
            exit(),             // 13
        ];
        let p = prog(&slots, Vec::new());
        let mut m = MapState::new(&p);
        let o = run_with(&p, &[0; 64], &mut m).unwrap();
        assert_eq!(o.retval, 7 + 100 + 20);
        assert_eq!(o.trace, [0, 1, 2, 3, 4, 9, 10, 11, 12, 13, 5, 6, 7, 8]);
        assert_eq!(o.insns, 14);
        // Unbounded recursion stops at the frame limit.
        let p = prog(&[call_local(-1), exit()], Vec::new());
        let e = run_with(&p, &[0; 64], &mut MapState::new(&p)).unwrap_err();
        assert!(e.to_string().contains("deeper than 8"), "{e}");
    }

    #[test]
    fn trace_counts_ld_imm64_once_and_follows_jumps() {
        let [a, b] = ld64(0, 3);
        let p = prog(&[a, b, jeq(0, 3, 1), mov(0, 9), ja(0), exit()], Vec::new());
        let o = run_with(&p, &[0; 64], &mut MapState::new(&p)).unwrap();
        assert_eq!(o.trace, [0, 2, 4, 5]);
        assert_eq!(o.retval, 3);
        // An endless loop meets the instruction limit.
        let p = prog(&[ja(-1), exit()], Vec::new());
        let opts = RunOptions {
            max_insns: 1000,
            ..RunOptions::default()
        };
        let e = run(&p, &[0; 64], &mut MapState::new(&p), &opts).unwrap_err();
        assert_eq!(e, Fault::InsnLimit { pc: 0, limit: 1000 });
    }

    #[test]
    fn context_fields_and_packet_bounds() {
        // r2 = data, r3 = data_end; r0 = data_end - data; plus ifindex*1000 and queue*1000000.
        let p = prog(
            &[
                ldx(W, 2, 1, 0),
                ldx(W, 3, 1, 4),
                movr(0, 3),
                i(0x1f, 0, 2, 0, 0),
                ldx(W, 4, 1, 12),
                i(0x27, 4, 0, 0, 1000),
                addr(0, 4),
                ldx(W, 4, 1, 16),
                i(0x27, 4, 0, 0, 1_000_000),
                addr(0, 4),
                exit(),
            ],
            Vec::new(),
        );
        let opts = RunOptions {
            ingress_ifindex: 3,
            rx_queue_index: 5,
            ..RunOptions::default()
        };
        let o = run(&p, &[0; 77], &mut MapState::new(&p), &opts).unwrap();
        assert_eq!(o.retval, 77 + 3000 + 5_000_000);

        // Reading byte `off` of the packet: inside works, past data_end faults with the
        // instruction, region, offset and size.
        let read_at = |off: i16| prog(&[ldx(W, 2, 1, 0), ldx(B, 0, 2, off), exit()], Vec::new());
        let p = read_at(59);
        assert_eq!(
            run_with(&p, &[7; 60], &mut MapState::new(&p))
                .unwrap()
                .retval,
            7
        );
        let p = read_at(60);
        match run_with(&p, &[7; 60], &mut MapState::new(&p)).unwrap_err() {
            Fault::OutOfBounds {
                pc,
                region,
                offset,
                size_bytes,
                access,
                ..
            } => {
                assert_eq!((pc, offset, size_bytes, access), (1, 60, 1, "load"));
                assert!(region.contains("packet"), "{region}");
            }
            e => panic!("{e}"),
        }
        // Headroom is not the packet either.
        let p = read_at(-1);
        let e = run_with(&p, &[7; 60], &mut MapState::new(&p)).unwrap_err();
        assert!(matches!(e, Fault::OutOfBounds { offset: -1, .. }), "{e}");
        // The stack is 512 bytes below r10.
        let p = prog(&[ldx(DW, 0, 10, -520), exit()], Vec::new());
        let e = run_with(&p, &[0; 60], &mut MapState::new(&p)).unwrap_err();
        assert!(
            matches!(&e, Fault::OutOfBounds { pc: 0, offset: -520, size_bytes: 8, region, .. } if region.contains("stack")),
            "{e}"
        );
        let p = prog(&[ldx(DW, 0, 10, -4), exit()], Vec::new());
        assert!(run_with(&p, &[0; 60], &mut MapState::new(&p)).is_err());
        // A scalar is not a pointer; the context is read-only and has u32 fields only.
        let p = prog(&[mov(2, 64), ldx(B, 0, 2, 0), exit()], Vec::new());
        let e = run_with(&p, &[0; 60], &mut MapState::new(&p)).unwrap_err();
        assert!(e.to_string().contains("not a pointer"), "{e}");
        let p = prog(&[st(W, 1, 12, 0), exit()], Vec::new());
        assert!(run_with(&p, &[0; 60], &mut MapState::new(&p)).is_err());
        let p = prog(&[ldx(DW, 0, 1, 0), exit()], Vec::new());
        assert!(run_with(&p, &[0; 60], &mut MapState::new(&p)).is_err());
        // A packet longer than the frame holds is refused before running.
        let p = prog(&[mov(0, 2), exit()], Vec::new());
        let e = run_with(&p, &[0; MAX_PACKET_BYTES + 1], &mut MapState::new(&p)).unwrap_err();
        assert!(matches!(e, Fault::Input(_)), "{e}");
        assert!(run_with(&p, &[0; MAX_PACKET_BYTES], &mut MapState::new(&p)).is_ok());
    }

    /// bpf_xdp_adjust_tail(ctx, delta) → r0 = return value, then the new length in r6.
    fn adjust(helper: i32, delta: i32) -> Program {
        prog(
            &[
                movr(6, 1),
                mov(2, delta),
                call(helper),
                ldx(W, 2, 6, 0),
                ldx(W, 3, 6, 4),
                movr(6, 3),
                i(0x1f, 6, 2, 0, 0),
                exit(),
            ],
            Vec::new(),
        )
    }

    #[test]
    fn adjust_tail_limits() {
        let pkt: Vec<u8> = (0..100).collect();
        let go = |delta: i32| {
            let p = adjust(65, delta);
            let o = run_with(&p, &pkt, &mut MapState::new(&p)).unwrap();
            (o.retval as i64, o.packet)
        };
        // Shrink to the Ethernet header, not below.
        let (r, out) = go(-86);
        assert_eq!((r, out.as_slice()), (0, &pkt[..14]));
        let (r, out) = go(-87);
        assert_eq!((r, out), (-22, pkt.clone()));
        // Grow up to the frame's end less the shared info; the new bytes are zeros.
        let room = (MAX_PACKET_BYTES - 100) as i32;
        let (r, out) = go(room);
        assert_eq!((r, out.len()), (0, MAX_PACKET_BYTES));
        assert_eq!(&out[..100], &pkt[..]);
        assert!(out[100..].iter().all(|&b| b == 0));
        let (r, out) = go(room + 1);
        assert_eq!((r, out), (-22, pkt.clone()));
    }

    #[test]
    fn adjust_head_limits_and_stale_pointers() {
        let pkt: Vec<u8> = (0..100).collect();
        let go = |delta: i32| {
            let p = adjust(44, delta);
            let o = run_with(&p, &pkt, &mut MapState::new(&p)).unwrap();
            (o.retval as i64, o.packet)
        };
        // In front: the headroom less struct xdp_frame.
        let front = (XDP_PACKET_HEADROOM_BYTES - XDP_FRAME_STRUCT_BYTES) as i32;
        let (r, out) = go(-front);
        assert_eq!((r, out.len()), (0, 100 + front as usize));
        assert_eq!(&out[front as usize..], &pkt[..]);
        assert_eq!(go(-front - 1), (-22, pkt.clone()));
        // Behind: at least ETH_HLEN bytes stay.
        assert_eq!(go(86), (0, pkt[86..].to_vec()));
        assert_eq!(go(87), (-22, pkt.clone()));
        // A packet pointer from before the call faults even when the call failed.
        let p = prog(
            &[
                movr(6, 1),
                ldx(W, 7, 1, 0),
                mov(2, 1000),
                call(44),
                ldx(B, 0, 7, 0),
                exit(),
            ],
            Vec::new(),
        );
        let e = run_with(&p, &pkt, &mut MapState::new(&p)).unwrap_err();
        assert!(
            e.pc() == Some(4)
                && e.to_string()
                    .contains("bpf_xdp_adjust_head at instruction 3"),
            "{e}"
        );
        // adjust_meta: 4-byte multiples up to 32 bytes before data.
        let meta = |delta: i32| {
            let p = adjust(54, delta);
            run_with(&p, &pkt, &mut MapState::new(&p)).unwrap().retval as i64
        };
        assert_eq!(
            (meta(-32), meta(-36), meta(-6), meta(1)),
            (0, -13, -13, -22)
        );
    }

    fn hash_prog(flags: i32, value: i32) -> Program {
        // key (r10-4) = 1; value (r10-16) = value; r0 = update(map, &key, &value, flags)
        prog(
            &[
                st(W, 10, -4, 1),
                st(DW, 10, -16, value),
                ld_map(1, 0)[0],
                ld_map(1, 0)[1],
                movr(2, 10),
                add(2, -4),
                movr(3, 10),
                add(3, -16),
                mov(4, flags),
                call(2),
                exit(),
            ],
            vec![map("h", MAP_HASH, 4, 8, 2)],
        )
    }

    #[test]
    fn hash_update_flags_and_capacity() {
        let p = hash_prog(1, 5); // NOEXIST
        let mut m = MapState::new(&p);
        let key = 1u32.to_le_bytes();
        assert_eq!(run_with(&p, &[0; 60], &mut m).unwrap().retval, 0);
        assert_eq!(m.get("h", &key).unwrap(), Some(5u64.to_le_bytes().to_vec()));
        // NOEXIST on an existing key: -EEXIST, the value stays.
        let p2 = hash_prog(1, 6);
        assert_eq!(run_with(&p2, &[0; 60], &mut m).unwrap().retval as i64, -17);
        assert_eq!(m.get("h", &key).unwrap(), Some(5u64.to_le_bytes().to_vec()));
        // EXIST on an existing key replaces; on an absent one, -ENOENT.
        assert_eq!(
            run_with(&hash_prog(2, 7), &[0; 60], &mut m).unwrap().retval,
            0
        );
        assert_eq!(m.get("h", &key).unwrap(), Some(7u64.to_le_bytes().to_vec()));
        let mut empty = MapState::new(&p);
        assert_eq!(
            run_with(&hash_prog(2, 7), &[0; 60], &mut empty)
                .unwrap()
                .retval as i64,
            -2
        );
        assert_eq!(empty.get("h", &key).unwrap(), None);
        // Unknown flags and BPF_F_LOCK (no spin lock): -EINVAL.
        assert_eq!(
            run_with(&hash_prog(3, 7), &[0; 60], &mut empty)
                .unwrap()
                .retval as i64,
            -22
        );
        assert_eq!(
            run_with(&hash_prog(4, 7), &[0; 60], &mut empty)
                .unwrap()
                .retval as i64,
            -22
        );
        // A full map takes no new key (-E2BIG) but still updates existing ones.
        let mut full = MapState::new(&p);
        full.set("h", &[9, 0, 0, 0], &[0; 8]).unwrap();
        full.set("h", &[8, 0, 0, 0], &[0; 8]).unwrap();
        assert_eq!(
            run_with(&hash_prog(0, 7), &[0; 60], &mut full)
                .unwrap()
                .retval as i64,
            -7
        );
        assert_eq!(full.get("h", &key).unwrap(), None);
        let e = full.set("h", &key, &[0; 8]).unwrap_err();
        assert!(matches!(e, MapError::Full { .. }), "{e}");
        full.set("h", &[9, 0, 0, 0], &[1; 8]).unwrap();
        // An LRU hash map evicts its least recently used entry instead.
        let mut defs = p.maps.clone();
        defs[0].map_type = MAP_LRU_HASH;
        let lru = Program {
            maps: defs,
            ..hash_prog(0, 7)
        };
        let mut ml = MapState::new(&lru);
        ml.set("h", &[9, 0, 0, 0], &[0; 8]).unwrap();
        ml.set("h", &[8, 0, 0, 0], &[0; 8]).unwrap();
        assert_eq!(run_with(&lru, &[0; 60], &mut ml).unwrap().retval, 0);
        let keys: Vec<Vec<u8>> = ml.entries("h").unwrap().into_iter().map(|e| e.0).collect();
        assert_eq!(keys, [vec![1, 0, 0, 0], vec![8, 0, 0, 0]]);
    }

    #[test]
    fn lookup_delete_and_stale_values() {
        // r6 = lookup(&key 1); update(key 1, value 9); r0 = *r6 (the old element); delete twice.
        let [m0, m1] = ld_map(1, 0);
        let p = prog(
            &[
                st(W, 10, -4, 1),
                st(DW, 10, -16, 9),
                m0,
                m1,
                movr(2, 10),
                add(2, -4),
                call(1),
                movr(6, 0),
                m0,
                m1,
                movr(2, 10),
                add(2, -4),
                movr(3, 10),
                add(3, -16),
                mov(4, 0),
                call(2),
                m0,
                m1,
                movr(2, 10),
                add(2, -4),
                call(3),
                movr(7, 0),
                m0,
                m1,
                movr(2, 10),
                add(2, -4),
                call(3),
                i(0x67, 0, 0, 0, 8), // r0 <<= 8
                addr(0, 7),
                i(0x67, 0, 0, 0, 8),
                ldx(DW, 1, 6, 0),
                addr(0, 1),
                exit(),
            ],
            vec![map("h", MAP_HASH, 4, 8, 4)],
        );
        let mut m = MapState::new(&p);
        m.set("h", &1u32.to_le_bytes(), &3u64.to_le_bytes())
            .unwrap();
        let r = run_with(&p, &[0; 60], &mut m).unwrap().retval;
        // delete → 0, second delete → -ENOENT, old element still reads 3.
        assert_eq!(r, ((-2i64 as u64) << 16).wrapping_add(3));
        assert_eq!(m.entries("h").unwrap(), []);

        // Arrays: lookup past max_entries is NULL, delete is -EINVAL, NOEXIST is -EEXIST,
        // an index past max_entries is -E2BIG.
        let arr = |idx: i32, helper: i32, flags: i32| {
            let mut s = vec![
                st(W, 10, -4, idx),
                st(DW, 10, -16, 5),
                m0,
                m1,
                movr(2, 10),
                add(2, -4),
            ];
            if helper == 2 {
                s.extend([movr(3, 10), add(3, -16), mov(4, flags)]);
            }
            s.extend([call(helper), exit()]);
            prog(&s, vec![map("a", MAP_ARRAY, 4, 8, 4)])
        };
        let mut m = MapState::new(&arr(0, 1, 0));
        assert_eq!(run_with(&arr(4, 1, 0), &[0; 60], &mut m).unwrap().retval, 0);
        assert_ne!(run_with(&arr(3, 1, 0), &[0; 60], &mut m).unwrap().retval, 0);
        assert_eq!(
            run_with(&arr(3, 3, 0), &[0; 60], &mut m).unwrap().retval as i64,
            -22
        );
        assert_eq!(
            run_with(&arr(3, 2, 1), &[0; 60], &mut m).unwrap().retval as i64,
            -17
        );
        assert_eq!(
            run_with(&arr(4, 2, 0), &[0; 60], &mut m).unwrap().retval as i64,
            -7
        );
        assert_eq!(
            run_with(&arr(4, 2, 1), &[0; 60], &mut m).unwrap().retval as i64,
            -7
        );
        assert_eq!(
            run_with(&arr(3, 2, 4), &[0; 60], &mut m).unwrap().retval as i64,
            -22
        );
        assert_eq!(m.entries("a").unwrap(), []);
        assert_eq!(run_with(&arr(3, 2, 2), &[0; 60], &mut m).unwrap().retval, 0);
        assert_eq!(
            m.entries("a").unwrap(),
            [(3u32.to_le_bytes().to_vec(), 5u64.to_le_bytes().to_vec())]
        );
        // A map value is value_size bytes.
        let p = prog(
            &[
                st(W, 10, -4, 0),
                m0,
                m1,
                movr(2, 10),
                add(2, -4),
                call(1),
                jeq(0, 0, 1),
                ldx(DW, 0, 0, 4),
                exit(),
            ],
            vec![map("a", MAP_ARRAY, 4, 8, 4)],
        );
        let e = run_with(&p, &[0; 60], &mut MapState::new(&p)).unwrap_err();
        assert!(
            matches!(&e, Fault::OutOfBounds { pc: 7, offset: 4, size_bytes: 8, region, .. } if region.contains("map 'a'")),
            "{e}"
        );
    }

    #[test]
    fn global_data_and_read_only_maps() {
        let mut ro = map(".rodata", MAP_ARRAY, 4, 8, 1);
        ro.data = vec![1, 2, 3, 4, 5, 6, 7, 8];
        ro.frozen = true;
        let mut bss = map(".bss", MAP_ARRAY, 4, 4, 1);
        bss.data = vec![0; 4];
        let [a, b] = ld_map_value(2, 0, 2);
        let [c, d] = ld_map_value(3, 1, 0);
        let p = prog(
            &[a, b, ldx(H, 0, 2, 0), c, d, st(W, 3, 0, 77), exit()],
            vec![ro.clone(), bss.clone()],
        );
        let mut m = MapState::new(&p);
        assert_eq!(run_with(&p, &[0; 60], &mut m).unwrap().retval, 0x0403);
        assert_eq!(m.get(".bss", &[0; 4]).unwrap(), Some(vec![77, 0, 0, 0]));
        let p = prog(&[a, b, st(B, 2, 0, 0), exit()], vec![ro, bss]);
        let e = run_with(&p, &[0; 60], &mut MapState::new(&p)).unwrap_err();
        assert!(e.to_string().contains("read-only map '.rodata'"), "{e}");
    }

    #[test]
    fn other_helpers() {
        // csum_diff(NULL, 0, hdr, 20, 0) over an IPv4 header whose checksum is 0xb861.
        let hdr: [u8; 20] = [
            0x45, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0, 0, 0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0,
            0xc7,
        ];
        let p = prog(
            &[
                ldx(W, 3, 1, 0),
                mov(1, 0),
                mov(2, 0),
                mov(4, 20),
                mov(5, 0),
                call(28),
                exit(),
            ],
            Vec::new(),
        );
        let mut pkt = hdr.to_vec();
        pkt.resize(60, 0);
        let s = run_with(&p, &pkt, &mut MapState::new(&p)).unwrap().retval;
        let fold = |mut s: u64| {
            while s >> 16 != 0 {
                s = (s & 0xffff) + (s >> 16);
            }
            !(s as u16)
        };
        assert_eq!(fold(s).to_le_bytes(), [0xb8, 0x61]);
        // The diff of a field: from ^ to folded into a checksum update, as RFC 1624 does.
        assert_eq!(csum_partial(&[0xff; 4], 0), 0xffff_ffff);
        assert_eq!(csum_partial(&[1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0], 5), 8);
        // Before Linux 6.12 the sizes must be multiples of 4 and fit the 512-byte scratch
        // buffer, and the result is csum_partial's 32 bits; since, any size is summed and the
        // result folded to 16 bits.
        let mut p = prog(
            &[
                ldx(W, 3, 1, 0),
                mov(1, 0),
                mov(2, 0),
                mov(4, 18),
                mov(5, 0),
                call(28),
                exit(),
            ],
            Vec::new(),
        );
        let folded = u64::from(csum_from32to16(csum_partial(&hdr[..18], 0)));
        assert_eq!(
            run_with(&p, &pkt, &mut MapState::new(&p)).unwrap().retval,
            folded
        );
        p.kernel_version = crate::kconfig::kernel_version_code("6.1.0");
        assert_eq!(
            run_with(&p, &pkt, &mut MapState::new(&p)).unwrap().retval as i64,
            -22
        );

        // redirect: flags abort; redirect_map: a missing entry falls back to the flags' action.
        let p = prog(&[mov(1, 3), mov(2, 0), call(23), exit()], Vec::new());
        assert_eq!(r0(&[mov(1, 3), mov(2, 0), call(23), exit()]), XDP_REDIRECT);
        assert_eq!(r0(&[mov(1, 3), mov(2, 1), call(23), exit()]), XDP_ABORTED);
        let _ = p;
        let [m0, m1] = ld_map(1, 0);
        let rm = |key: i32, flags: i32| {
            prog(
                &[m0, m1, mov(2, key), mov(3, flags), call(51), exit()],
                vec![map("tx", MAP_DEVMAP, 4, 4, 8)],
            )
        };
        let mut m = MapState::new(&rm(0, 0));
        m.set("tx", &[2, 0, 0, 0], &[5, 0, 0, 0]).unwrap();
        let go =
            |key, flags, m: &mut MapState| run_with(&rm(key, flags), &[0; 60], m).unwrap().retval;
        assert_eq!(go(2, 0, &mut m), XDP_REDIRECT);
        assert_eq!(go(1, XDP_PASS as i32, &mut m), XDP_PASS);
        assert_eq!(go(1, 0, &mut m), XDP_ABORTED);
        assert_eq!(go(1, 1 << 3, &mut m), XDP_REDIRECT, "broadcast");
        assert_eq!(go(2, 1 << 5, &mut m), XDP_ABORTED, "unknown flag");
        assert!(m.set("tx", &[8, 0, 0, 0], &[0; 4]).is_err());

        // ktime is fixed, prandom deterministic by seed, the CPU is 0.
        let p = prog(
            &[
                call(5),
                movr(6, 0),
                call(7),
                movr(7, 0),
                call(7),
                i(0xaf, 0, 7, 0, 0),
                call(8),
                exit(),
            ],
            Vec::new(),
        );
        let o = |seed| {
            let opts = RunOptions {
                ktime_ns: 42,
                prandom_seed: seed,
                ..RunOptions::default()
            };
            run(&p, &[0; 60], &mut MapState::new(&p), &opts)
                .unwrap()
                .retval
        };
        assert_eq!(o(1), 0);
        let p = prog(&[call(5), exit()], Vec::new());
        let opts = RunOptions {
            ktime_ns: 42,
            ..RunOptions::default()
        };
        assert_eq!(
            run(&p, &[0; 60], &mut MapState::new(&p), &opts)
                .unwrap()
                .retval,
            42
        );
        let rnd = |seed| {
            let p = prog(
                &[
                    call(7),
                    movr(6, 0),
                    call(7),
                    i(0x67, 6, 0, 0, 32),
                    addr(0, 6),
                    exit(),
                ],
                Vec::new(),
            );
            let opts = RunOptions {
                prandom_seed: seed,
                ..RunOptions::default()
            };
            run(&p, &[0; 60], &mut MapState::new(&p), &opts)
                .unwrap()
                .retval
        };
        assert_eq!(rnd(7), rnd(7));
        assert_ne!(rnd(7), rnd(8));
        assert_ne!(rnd(7) >> 32, rnd(7) & 0xffff_ffff);

        // Helpers the interpreter does not run are named, and say why.
        let p = prog(&[call(113), exit()], Vec::new());
        let e = run_with(&p, &[0; 60], &mut MapState::new(&p)).unwrap_err();
        assert!(
            e.to_string().contains("bpf_probe_read_kernel")
                && e.to_string().contains("not modelled by the interpreter"),
            "{e}"
        );
        let p = prog(&[call(164), exit()], Vec::new());
        let e = run_with(&p, &[0; 60], &mut MapState::new(&p)).unwrap_err();
        assert!(e.to_string().contains("callback once per element"), "{e}");
        // bpf_trace_printk("%d!\n", 4, -42): the formatted length, 5; a format with more
        // conversions than its three arguments: -EINVAL.
        let printk = |fmt: &[u8; 8]| {
            let word = u64::from_le_bytes(*fmt);
            prog(
                &[
                    ld64(1, word)[0],
                    ld64(1, word)[1],
                    stx(0x18, 10, 1, -8),
                    movr(1, 10),
                    add(1, -8),
                    mov(2, 8),
                    mov(3, -42),
                    call(6),
                    exit(),
                ],
                Vec::new(),
            )
        };
        let p = printk(b"%d!\n\0\0\0\0");
        assert_eq!(
            run_with(&p, &[0; 60], &mut MapState::new(&p))
                .unwrap()
                .retval,
            5
        );
        let p = printk(b"%d%d%d%d");
        let r = run_with(&p, &[0; 60], &mut MapState::new(&p))
            .unwrap()
            .retval;
        assert_eq!(r, (-EINVAL) as u64, "not NUL-terminated within its size");
        let p = prog(&[call(10), exit()], Vec::new());
        let e = run_with(&p, &[0; 60], &mut MapState::new(&p)).unwrap_err();
        assert!(
            e.to_string().contains("bpf_l3_csum_replace")
                && e.to_string().contains("not available to XDP"),
            "{e}"
        );
    }

    #[test]
    fn map_state_checks_and_json() {
        let p = prog(
            &[mov(0, 2), exit()],
            vec![map("a", MAP_ARRAY, 4, 2, 4), map("h", MAP_HASH, 2, 1, 8)],
        );
        let mut m = MapState::new(&p);
        let e = m.set("nope", &[0; 4], &[0; 2]).unwrap_err();
        assert_eq!(e.to_string(), "no map 'nope' in the program (maps: a, h)");
        let e = m.set("a", &[0; 3], &[0; 2]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "map 'a': the key is 3 bytes, the map's key size is 4"
        );
        let e = m.set("a", &[0; 4], &[0; 3]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "map 'a': the value is 3 bytes, the map's value size is 2"
        );
        let e = m.set("a", &[4, 0, 0, 0], &[0; 2]).unwrap_err();
        assert!(matches!(e, MapError::Index { index: 4, .. }), "{e}");
        let j: Value = serde_json::from_str(
            r#"{"a": {"entries": {"01000000": "beef"}}, "h": {"type": "hash", "key_size": 2, "entries": {"0a0B": "07"}}}"#,
        )
        .unwrap();
        m.set_json(&j).unwrap();
        assert_eq!(m.get("a", &[1, 0, 0, 0]).unwrap(), Some(vec![0xbe, 0xef]));
        assert_eq!(m.get("a", &[2, 0, 0, 0]).unwrap(), Some(vec![0, 0]));
        assert_eq!(m.get("h", &[0x0a, 0x0b]).unwrap(), Some(vec![7]));
        let out = m.to_json();
        assert_eq!(out["a"]["entries"], json!({"01000000": "beef"}));
        assert_eq!(out["h"]["entries"], json!({"0a0b": "07"}));
        assert_eq!(out["h"]["type"], "hash");
        assert_eq!(out["a"]["max_entries"], 4);
        // The output reads back in.
        let mut again = MapState::new(&p);
        again.set_json(&out).unwrap();
        assert_eq!(again.to_json(), out);
        for bad in [
            r#"{"a": {"key_size": 8}}"#,
            r#"{"a": {"entries": {"0100": "beef"}}}"#,
            r#"{"a": {"entries": {"01000000": "bee"}}}"#,
            r#"{"a": {"entries": {"01000000": 5}}}"#,
            r#"{"a": {"entrys": {}}}"#,
            r#"{"x": {}}"#,
            r#"[1]"#,
            r#"{"#,
        ] {
            assert!(MapState::from_json(&p, bad).is_err(), "{bad}");
        }
        assert!(MapState::from_json(&p, "").is_ok());
        // Map types not modelled, and maps larger than the kernel allows, refuse entries.
        let p2 = prog(
            &[mov(0, 2), exit()],
            vec![
                map("rb", 27, 0, 0, 4096),
                map("big", MAP_ARRAY, 4, 5 << 20, 1),
                map("urb", 31, 0, 0, 4096),
                map("lpm", 11, 8, 4, 4),
                map("queue", 22, 0, 4, 2),
                map("bloom", 30, 0, 4, 8),
            ],
        );
        let mut m2 = MapState::new(&p2);
        let e = m2.set("urb", &[], &[]).unwrap_err();
        assert!(
            e.to_string()
                .contains("type 31 (user_ringbuf) are not modelled"),
            "{e}"
        );
        // A queue takes values without keys (or under their positions), oldest first, up to
        // its size; a bloom filter holds each value once, and never fills.
        m2.set("queue", &[], &[1; 4]).unwrap();
        m2.set("queue", &1u32.to_be_bytes(), &[2; 4]).unwrap();
        assert!(matches!(
            m2.set("queue", &[], &[3; 4]),
            Err(MapError::Full { max_entries: 2, .. })
        ));
        let e = m2.entries("queue").unwrap();
        assert_eq!(
            e,
            vec![
                (0u32.to_be_bytes().to_vec(), vec![1; 4]),
                (1u32.to_be_bytes().to_vec(), vec![2; 4])
            ]
        );
        assert_eq!(
            m2.get("queue", &1u32.to_be_bytes()).unwrap(),
            Some(vec![2; 4])
        );
        assert_eq!(m2.get("queue", &2u32.to_be_bytes()).unwrap(), None);
        for v in [5u8, 5, 6, 7, 8, 9, 10, 11, 12, 13] {
            m2.set("bloom", &[], &[v; 4]).unwrap();
        }
        assert_eq!(m2.entries("bloom").unwrap().len(), 9);
        // An lpm_trie's prefix is at most its data's bits.
        m2.set("lpm", &[32, 0, 0, 0, 1, 2, 3, 4], &[0; 4]).unwrap();
        let e = m2
            .set("lpm", &[33, 0, 0, 0, 1, 2, 3, 4], &[0; 4])
            .unwrap_err();
        assert!(e.to_string().contains("prefix length 33"), "{e}");
        // Ring buffers are modelled but hold events, no entries.
        let e = m2.set("rb", &[], &[]).unwrap_err();
        assert!(e.to_string().contains("no entries"), "{e}");
        assert!(!m2.is_modelled("rb"));
        let e = m2.set("big", &[0; 4], &[]).unwrap_err();
        assert!(e.to_string().contains("exceeds the kernel's limit"), "{e}");
        // A state for other maps is refused.
        let other = prog(&[mov(0, 2), exit()], Vec::new());
        let e = run(&other, &[0; 60], &mut m, &RunOptions::default()).unwrap_err();
        assert!(matches!(e, Fault::Input(_)), "{e}");
    }

    #[test]
    fn addresses_round_trip() {
        for (slot, off) in [
            (1u32, 0i64),
            (7, -512),
            (3, 3520),
            (u32::MAX, -(1 << 31)),
            (2, (1 << 31) - 1),
        ] {
            assert_eq!(split(address(slot, off)), (slot, off));
        }
        // A small scalar is in region 0.
        assert_eq!(split(64).0, 0);
        // Packet pointers compare like offsets.
        assert!(address(2, 14) > address(2, 13));
        let _ = jgt_r(0, 0, 0);
    }

    /// A conntrack lookup: tuple at fp-48 (zeroed, 40 bytes), opts at fp-64 (netns_id, error 0,
    /// l4proto, the rest 0, then `pre` stores), `tlen` and `olen`; NULL returns opts->error,
    /// else `found` runs with the entry in r7.
    fn ct_run(
        netns: i32,
        l4: i32,
        tlen: i32,
        olen: i32,
        pre: &[Slot],
        found: &[Slot],
        ct_found: bool,
    ) -> Result<u64, Fault> {
        let mut s = vec![movr(6, 1)];
        for o in [-48, -40, -32, -24, -16] {
            s.push(st(DW, 10, o, 0));
        }
        s.push(st(W, 10, -64, netns));
        s.push(st(W, 10, -60, 0));
        s.push(st(DW, 10, -56, l4));
        s.extend_from_slice(pre);
        s.extend([
            movr(1, 6),
            movr(2, 10),
            add(2, -48),
            mov(3, tlen),
            movr(4, 10),
            add(4, -64),
            mov(5, olen),
            i(0x85, 0, 2, 0, 0),
            movr(7, 0),
            jeq(7, 0, found.len() as i16),
        ]);
        s.extend_from_slice(found);
        s.extend([ldx(W, 0, 10, -60), exit()]);
        let mut p = prog(&s, Vec::new());
        p.kfuncs = vec![KFUNC_CT_LOOKUP.into(), KFUNC_CT_RELEASE.into()];
        let o = RunOptions {
            ct_found,
            ..RunOptions::default()
        };
        run(&p, &[0; 64], &mut MapState::new(&p), &o).map(|o| o.retval)
    }

    #[test]
    fn the_conntrack_lookup_checks_its_arguments_as_the_kernel() {
        let err = |e: i64| e as u32 as u64;
        let release = [
            ldx(W, 0, 7, 8),
            movr(8, 0),
            movr(1, 7),
            i(0x85, 0, 2, 0, 1),
            movr(0, 8),
            exit(),
        ];
        // Found: the entry reads as zeroes, and is released.
        assert_eq!(ct_run(-1, 6, 12, 12, &[], &release, true), Ok(0));
        assert_eq!(ct_run(-1, 17, 36, 16, &[], &release, true), Ok(0));
        assert_eq!(
            ct_run(-1, 6, 12, 12, &[], &release, false),
            Ok(err(-ENOENT))
        );
        // Each check's errno, in the kernel's order.
        assert_eq!(ct_run(-1, 1, 12, 12, &[], &release, true), Ok(err(-EPROTO)));
        assert_eq!(ct_run(-2, 6, 12, 12, &[], &release, true), Ok(err(-EINVAL)));
        assert_eq!(ct_run(0, 6, 12, 12, &[], &release, true), Ok(err(-ENONET)));
        assert_eq!(
            ct_run(-1, 6, 13, 12, &[], &release, true),
            Ok(err(-EAFNOSUPPORT))
        );
        assert_eq!(ct_run(-1, 6, 12, 8, &[], &release, true), Ok(err(-EINVAL)));
        assert_eq!(ct_run(-1, 1, 13, 8, &[], &release, true), Ok(err(-EINVAL)));
        // Reserved bytes: 10-11 for the 12-byte opts (ct_zone_id), 13-15 for the 16-byte one.
        let b10 = [st(B, 10, -54, 1)];
        let b13 = [st(B, 10, -51, 1)];
        assert_eq!(
            ct_run(-1, 6, 12, 12, &b10, &release, true),
            Ok(err(-EINVAL))
        );
        assert_eq!(
            ct_run(-1, 6, 12, 16, &b13, &release, true),
            Ok(err(-EINVAL))
        );
        assert_eq!(ct_run(-1, 6, 12, 12, &b13, &release, true), Ok(0));
        // A 16-byte opts' ct_zone_dir of 0 becomes NF_CT_DEFAULT_ZONE_DIR; opts->dir 0.
        let zone = [
            ldx(B, 8, 10, -52),
            movr(1, 7),
            i(0x85, 0, 2, 0, 1),
            movr(0, 8),
            exit(),
        ];
        assert_eq!(ct_run(-1, 6, 12, 16, &[], &zone, true), Ok(3));
        assert_eq!(ct_run(-1, 6, 12, 12, &[], &zone, true), Ok(0));
        // Writes into the entry, loads past it and through it once released are one error.
        let write = [st(W, 7, 8, 1), exit()];
        let e = ct_run(-1, 6, 12, 12, &[], &write, true).unwrap_err();
        assert!(
            e.to_string().contains(
                "store into a conntrack entry (struct nf_conn): writes to it are not modelled"
            ),
            "{e}"
        );
        let past = [ldx(W, 0, 7, NF_CONN_BYTES as i16), exit()];
        let e = ct_run(-1, 6, 12, 12, &[], &past, true).unwrap_err();
        assert!(
            e.to_string().contains("a conntrack entry (struct nf_conn)"),
            "{e}"
        );
        let after = [movr(1, 7), i(0x85, 0, 2, 0, 1), ldx(W, 0, 7, 0), exit()];
        let e = ct_run(-1, 6, 12, 12, &[], &after, true).unwrap_err();
        assert!(
            e.to_string()
                .contains("through a conntrack entry already released"),
            "{e}"
        );
        let twice = [
            movr(1, 7),
            i(0x85, 0, 2, 0, 1),
            movr(1, 7),
            i(0x85, 0, 2, 0, 1),
            exit(),
        ];
        let e = ct_run(-1, 6, 12, 12, &[], &twice, true).unwrap_err();
        assert!(
            e.to_string()
                .contains("r1 is not a conntrack entry the program holds"),
            "{e}"
        );
        // The other conntrack kfuncs stay one error.
        let why = kfunc_refusal("bpf_xdp_ct_alloc").unwrap();
        assert!(
            why.starts_with(
                "kfunc bpf_xdp_ct_alloc is not supported: only the conntrack lookup is modelled"
            ),
            "{why}"
        );
        assert_eq!(kfunc_refusal(KFUNC_CT_LOOKUP), None);
    }
}
