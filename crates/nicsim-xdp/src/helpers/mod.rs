//! The kernel's BPF helpers as an XDP program may call them: one table ([`XDP_HELPERS`]) of
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
pub(crate) mod events;
pub(crate) mod kfuncs;
pub(crate) mod maps;
pub(crate) mod packet;
pub(crate) mod redirect;
pub(crate) mod route;
pub(crate) mod time;

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
    /// The symbolic executor's semantics (`None`: its result is a fresh value).
    pub(crate) symex: Option<SymexFn>,
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
        }
    }
    pub(crate) const fn writes(mut self) -> Helper {
        self.writes_args = true;
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
    CONTROL,
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
