//! The kernel's BPF helpers as an XDP program may call them: one table (rows of each family, [`all`]) of
//! every helper the kernel gives an XDP program (Linux 6.1's `xdp_func_proto` in
//! net/core/filter.c, which falls back to `bpf_sk_base_func_proto` and `bpf_base_func_proto`
//! in kernel/bpf/helpers.c, for a loader with `CAP_BPF` and `CAP_PERFMON`), and one module per
//! family of helpers holding the family's semantics for the interpreter ([`crate::interp`])
//! and for the symbolic executor ([`crate::symex`]) side by side, so that a helper is added in
//! one place and its two meanings can be read (and are tested by the differential test)
//! together. A row says what the rest of the analyzer needs to know of a helper without running
//! it: whether it may write through its pointer arguments (the abstract values forget the stack
//! it may write: [`writes_args`]) and whether it changes the packet's bounds
//! ([`moves_packet`]). Costs live in the target files (`[helpers]`, by name without `bpf_`).

pub mod names;

pub(crate) mod csum;
pub(crate) mod dynptr;
pub(crate) mod events;
pub(crate) mod iter_num;
pub mod kfuncs;
pub(crate) mod maps;
pub(crate) mod packet;
pub(crate) mod redirect;
pub(crate) mod route;
pub(crate) mod socket;
pub(crate) mod strings;
pub(crate) mod task;
pub(crate) mod time;
pub(crate) mod timers;
pub(crate) mod trace;

pub use names::helper_name;

use crate::interp::{Fault, Machine};
use crate::symex::{Sym, V};

/// The interpreter's semantics of a helper: `(machine, pc, id)` → r0, or the fault that ends
/// the run (r1–r5 are the call's arguments; the caller clobbers them afterwards).
pub(crate) type InterpFn = for<'a, 'b> fn(&'b mut Machine<'a>, u32, u32) -> Result<u64, Fault>;

/// The symbolic executor's semantics of a helper: `(sym, id, [r1, r2, r3, r4])` → r0 (r1 an
/// inner map pointer already taken as its map); the caller clobbers r1–r5 afterwards.
pub(crate) type SymexFn = for<'a, 'b> fn(&'b mut Sym<'a>, u32, [V; 4]) -> V;

/// A helper an XDP program may call.
#[derive(Clone, Copy)]
pub struct Helper {
    /// Its id (`BPF_FUNC_*`).
    pub id: u32,
    /// Its family: the module of this folder that holds it (or `control` for `bpf_tail_call`
    /// and `bpf_loop`, which the graph splices in: cfg.rs).
    pub family: &'static str,
    /// Whether it may write through a pointer argument into the stack (or a map value) it is
    /// given: the abstract values then forget the stack (absint.rs, consts.rs).
    pub writes_args: bool,
    /// Whether it changes the packet's bounds (the verifier then makes the program reload
    /// `data` and `data_end`).
    pub moves_packet: bool,
    /// The interpreter's semantics (`None`: the interpreter refuses it in one line).
    pub(crate) interp: Option<InterpFn>,
    /// The symbolic executor's semantics (`None`: its result is a fresh value, and what its
    /// pointer arguments point to is fresh too when it `writes_args`).
    pub(crate) symex: Option<SymexFn>,
    /// Why the analysis refuses the helper (a cost it cannot bound, memory it cannot follow):
    /// `None` for a helper it analyses.
    pub refused: Option<&'static str>,
    /// Where a helper that `writes_args` writes, when its prototype says: (the register of a
    /// pointer argument, how many bytes from it). Empty: anywhere its pointer arguments reach.
    pub(crate) writes_to: &'static [(u8, WriteLen)],
}

/// How many bytes a helper writes through a pointer argument, by its prototype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteLen {
    /// The value of this register (`ARG_PTR_TO_UNINIT_MEM` then `ARG_CONST_SIZE`: the verifier
    /// checks the memory holds that many bytes).
    Arg(u8),
    /// A fixed size (`ARG_PTR_TO_LONG` 8, `ARG_PTR_TO_INT` 4).
    Bytes(u32),
}

/// Where helper `id` writes through its pointer arguments, when its prototype bounds it
/// ([`Helper::writes_to`]); `None` when it may write anywhere they reach.
pub(crate) fn writes_to(id: u32) -> Option<&'static [(u8, WriteLen)]> {
    find(id)
        .filter(|h| h.writes_args && !h.writes_to.is_empty())
        .map(|h| h.writes_to)
}

impl Helper {
    /// A row of a family's table: reads its arguments only, leaves the packet, no semantics yet.
    pub(crate) const fn new(id: u32, family: &'static str) -> Helper {
        Helper {
            id,
            family,
            writes_args: false,
            moves_packet: false,
            interp: None,
            symex: None,
            refused: None,
            writes_to: &[],
        }
    }
    pub(crate) const fn refuse(mut self, why: &'static str) -> Helper {
        self.refused = Some(why);
        self
    }
    pub(crate) const fn writes(mut self) -> Helper {
        self.writes_args = true;
        self
    }
    /// [`Helper::writes`], only where its prototype lets it ([`Helper::writes_to`]).
    pub(crate) const fn writes_only(mut self, to: &'static [(u8, WriteLen)]) -> Helper {
        self.writes_args = true;
        self.writes_to = to;
        self
    }
    pub(crate) const fn moves(mut self) -> Helper {
        self.moves_packet = true;
        self
    }
    pub(crate) const fn run(mut self, f: InterpFn) -> Helper {
        self.interp = Some(f);
        self
    }
    pub(crate) const fn sym(mut self, f: SymexFn) -> Helper {
        self.symex = Some(f);
        self
    }
}

/// `bpf_tail_call` and `bpf_loop`: the graph splices in their targets (cfg.rs); the
/// interpreter and the symbolic executor follow the edges (interp.rs `tail_call`/`loop_call`,
/// symex.rs the same).
/// Both may write what their arguments point to (the target or the callback may).
const CONTROL: &[Helper] = &[
    Helper::new(crate::absint::HELPER_TAIL_CALL, "control").writes(),
    Helper::new(crate::absint::HELPER_LOOP, "control").writes(),
];

/// Every family's table.
const FAMILIES: &[&[Helper]] = &[
    maps::HELPERS,
    packet::HELPERS,
    redirect::HELPERS,
    route::HELPERS,
    time::HELPERS,
    events::HELPERS,
    csum::HELPERS,
    trace::HELPERS,
    timers::HELPERS,
    socket::HELPERS,
    strings::HELPERS,
    task::HELPERS,
    DYNPTR,
    CONTROL,
];

/// Dynamic pointers (`bpf_dynptr_*`, the ring buffer's `_dynptr` forms): a dynptr's reads and
/// writes reach the memory it was made from, which the analysis does not follow through it.
const DYNPTR_WHY: &str = "dynamic pointers (bpf_dynptr_*) are not modelled: a dynptr's reads \
                          and writes reach the memory it was made from, which the analysis \
                          does not follow through it";
const DYNPTR: &[Helper] = &[
    Helper::new(197, "dynptr").writes().refuse(DYNPTR_WHY), // dynptr_from_mem
    Helper::new(198, "dynptr").writes().refuse(DYNPTR_WHY), // ringbuf_reserve_dynptr
    Helper::new(199, "dynptr").writes().refuse(DYNPTR_WHY), // ringbuf_submit_dynptr
    Helper::new(200, "dynptr").writes().refuse(DYNPTR_WHY), // ringbuf_discard_dynptr
    Helper::new(201, "dynptr").writes().refuse(DYNPTR_WHY), // dynptr_read
    Helper::new(202, "dynptr").writes().refuse(DYNPTR_WHY), // dynptr_write
    Helper::new(203, "dynptr").writes().refuse(DYNPTR_WHY), // dynptr_data
];

/// The helpers Linux 6.1 gives an XDP program loaded with CAP_BPF and CAP_PERFMON (by id,
/// include/uapi/linux/bpf.h): `xdp_func_proto` (net/core/filter.c: the XDP helpers, the socket
/// lookups and the SYN cookie helpers), then `bpf_sk_base_func_proto` (the `skc_to_*` casts,
/// `ktime_get_coarse_ns`), then `bpf_base_func_proto` (kernel/bpf/helpers.c: maps, time,
/// randomness, ring buffers, strings, `tail_call`, `for_each_map_elem`, `loop`; with CAP_BPF
/// locks, jiffies, per-CPU pointers, timers, kptrs and dynptrs; with CAP_PERFMON the trace
/// helpers and kernel-memory reads). The running kernel's list is asked of it
/// ([`crate::kernel::xdp_helper_allowed`]); tests/helper_coverage.rs checks both have rows.
pub const LINUX_6_1_XDP: &[u32] = &[
    // xdp_func_proto
    25, 8, 28, 44, 54, 23, 51, 65, 188, 189, 190, 69, 163, 85, 84, 86, 99, 100, 110, 204, 205, 206,
    207, // bpf_sk_base_func_proto
    136, 137, 138, 139, 140, 178, 196, 160, // bpf_base_func_proto
    1, 2, 3, 87, 88, 89, 195, 7, 42, 12, 5, 125, 208, 130, 131, 132, 133, 134, 182, 105, 106, 209,
    164, 181, // CAP_BPF
    93, 94, 118, 153, 154, 169, 170, 171, 172, 194, 197, 198, 199, 200, 201, 202, 203,
    // CAP_PERFMON
    6, 35, 158, 112, 113, 114, 115, 149, 165, 175, 177,
];

/// Every helper the analyzer has a row for, by family.
pub fn all() -> impl Iterator<Item = &'static Helper> {
    FAMILIES.iter().flat_map(|f| f.iter())
}

/// The row of helper `id`, if it has one.
pub fn find(id: u32) -> Option<&'static Helper> {
    static BY_ID: std::sync::OnceLock<Vec<Option<&'static Helper>>> = std::sync::OnceLock::new();
    let by_id = BY_ID.get_or_init(|| {
        let mut v = vec![None; names::HELPER_NAMES.len()];
        for h in all() {
            v[h.id as usize] = Some(h);
        }
        v
    });
    by_id.get(id as usize).copied().flatten()
}

/// Whether helper `id` may write through its pointer arguments (a helper without a row may).
pub fn writes_args(id: u32) -> bool {
    find(id).is_none_or(|h| h.writes_args)
}

/// Whether helper `id` changes the packet's bounds.
pub fn moves_packet(id: u32) -> bool {
    find(id).is_some_and(|h| h.moves_packet)
}

/// Every row as JSON for `nicsim xdp helpers`: `[{id, helper, family, linux_6_1, interpreter,
/// symbolic, writes_args, moves_packet, refused}]`, by id. `symbolic` is `modelled` (semantics
/// of its own), `fresh` (its result a fresh value) or `fresh, and what its pointer arguments
/// point to`; `interpreter` whether the interpreter runs it.
pub fn listing() -> serde_json::Value {
    let mut rows: Vec<&Helper> = all().collect();
    rows.sort_by_key(|h| h.id);
    serde_json::Value::Array(
        rows.into_iter()
            .map(|h| {
                let symbolic = match (h.symex.is_some(), h.writes_args) {
                    (true, _) => "modelled",
                    (false, false) => "fresh",
                    (false, true) => "fresh, and what its pointer arguments point to",
                };
                serde_json::json!({
                    "id": h.id,
                    "helper": helper_name(h.id),
                    "family": h.family,
                    "linux_6_1": LINUX_6_1_XDP.contains(&h.id),
                    "interpreter": h.interp.is_some() || h.family == "control",
                    "symbolic": if h.family == "control" { "modelled" } else { symbolic },
                    "writes_args": h.writes_args,
                    "moves_packet": h.moves_packet,
                    "refused": h.refused,
                })
            })
            .collect(),
    )
}
