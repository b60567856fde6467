//! Symbolic execution of one path into an SMT-LIB2 query over bit-vectors and arrays (paper §5.5).
//!
//! The packet is an array from 64-bit offsets (relative to where the packet started when it was
//! received) to bytes, with a symbolic length `len`; every map is an array from (key, byte
//! offset) to bytes, its initial contents symbolic, plus, for hash maps, an array saying which
//! keys are present. The stack is tracked byte by byte per call frame while every access has a
//! constant offset, with pointer spills kept as pointers; once a frame sees a load or store at a
//! computed offset (`buf[i]`), its stack also becomes an array term (see `Frame`), so such
//! loads read exactly what was stored. Helper results the kernel defines exactly (map lookups,
//! updates and deletes, `adjust_head`/`_tail`/`_meta`, `redirect`, `xdp_load_bytes`/
//! `_store_bytes`, `csum_diff`, a ring buffer reservation's null check) are modelled; the
//! others (`ktime_get_ns` and `_coarse_ns`, random numbers, `perf_event_output`,
//! `ringbuf_output`) are fresh values.
//!
//! Principle: never under-approximate feasibility. Whatever is not modelled exactly becomes a
//! fresh, unconstrained value, so a path reported infeasible really is; a spurious "feasible"
//! only makes the guarantee lower, never wrong.
//!
//! Each branch condition is asserted with the name `a<k>` (k = the edge's position on the path),
//! so an unsat core says how long a prefix is already infeasible. Nothing else is asserted but
//! what holds on every path (the length range, read-only data): a core's conditions, as texts,
//! then refute every path that asserts them all.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;

use crate::cfg::EdgeKind;
use crate::insn::{AluOp, AtomicOp, Imm64, Insn, JmpOp, Size, Src};
use crate::interp::{
    ETH_HLEN_BYTES, MAX_PACKET_BYTES, XDP_FRAME_STRUCT_BYTES, XDP_PACKET_HEADROOM_BYTES,
};
use crate::load::{Program, MAP_DEVMAP};

/// How far `data` (and `data_meta`) may move in front of the received packet: the headroom less
/// `struct xdp_frame`, which the kernel keeps at the headroom's start (216 bytes).
pub(crate) const FRONT: i64 = (XDP_PACKET_HEADROOM_BYTES - XDP_FRAME_STRUCT_BYTES) as i64;
/// Ethernet header: the least a packet can shrink to (ETH_HLEN).
pub(crate) const ETH_HLEN: u64 = ETH_HLEN_BYTES as u64;
/// Where the frame ends for the packet (its hard end less the shared info), as an offset from
/// the start of the received packet: `bpf_xdp_adjust_tail` may not move `data_end` past it.
pub(crate) const HARD_END: u64 = MAX_PACKET_BYTES as u64;
/// Map update flags.
pub(crate) const BPF_NOEXIST: u64 = 1;
pub(crate) const BPF_EXIST: u64 = 2;
pub(crate) const BPF_F_LOCK: u64 = 4;
/// `bpf_redirect_map` flags.
pub(crate) const BPF_F_BROADCAST: u64 = 1 << 3;
pub(crate) const BPF_F_EXCLUDE_INGRESS: u64 = 1 << 4;
/// Map types `bpf_redirect_map` takes, beyond those [`crate::load`] names.
pub(crate) const MAP_CPUMAP: u32 = 16;
pub(crate) const MAP_XSKMAP: u32 = 17;
pub(crate) const MAP_DEVMAP_HASH: u32 = 25;
/// The sort of the packet and of a stack as arrays.
pub(crate) const BYTES: &str = "(Array (_ BitVec 64) (_ BitVec 8))";
/// An inner map template's flag (`BPF_F_INNER_MAP`, uapi bpf.h): slots may hold arrays of any
/// size.
pub(crate) const BPF_F_INNER_MAP: u32 = 1 << 12;
/// The bytes of an inner map's value ([`Region::Inner`]), by offset.
pub(crate) const INNER_VALS: &str = "(Array (_ BitVec 32) (_ BitVec 8))";

pub(crate) fn bv64(v: u64) -> String {
    format!("#x{v:016x}")
}

/// The value of a constant term as this module writes constants (`#x` and 2 or 16 hex
/// digits: a byte or a 64-bit value), else None. Terms whose operands are all constants are
/// folded to one as they are built (the interpreter's arithmetic, `crate::insn`), so a
/// parser's header offsets reach the solver as numbers: its packet reads are then at constant
/// indices, which Bitwuzla checks several times faster than the same reads behind sums.
pub(crate) fn konst(t: &str) -> Option<u64> {
    let h = t.strip_prefix("#x")?;
    if h.len() != 2 && h.len() != 16 {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}

/// Byte `i` (0: the lowest) of the 64-bit term `v`, folded when `v` is a constant.
fn byte_of(v: &str, i: i64) -> String {
    match konst(v) {
        Some(c) => format!("#x{:02x}", (c >> (8 * i)) & 0xff),
        None => format!("((_ extract {} {}) {v})", 8 * i + 7, 8 * i),
    }
}

/// A packet or stack index `off + i` (`k`: `off`'s value when constant).
fn index_at(off: &str, k: Option<i64>, i: i64) -> String {
    match k {
        Some(k) => bv64(k.wrapping_add(i) as u64),
        None => format!("(bvadd {off} {})", bv64(i as u64)),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Region {
    Pkt,
    Stack(u32),
    /// A value of map `m` under key term `key`; `null` is true when the lookup found nothing.
    Map {
        m: u32,
        key: String,
        null: String,
    },
    /// A value of hash map `m` looked up before an update of the map, which may have replaced
    /// its element ([`Sym::replace_values`]): loads read fresh bytes, a store may land in any
    /// key's value. `null` as for `Map`.
    Replaced {
        m: u32,
        null: String,
    },
    /// A ring buffer record `bpf_ringbuf_reserve` gave: its bytes are unknown (loads read fresh
    /// values, stores go nowhere the program reads back); `null` is true when the reservation
    /// failed.
    Record {
        null: String,
    },
    /// A value in the map a slot of a map of maps holds (`m` is the outer map's synthetic
    /// inner map, `<outer>.inner`). Which map that is the program does not say: another slot's,
    /// or a map it also uses directly (user space stores any map of the inner definition). So
    /// its bytes are `vals` (an array of the value's bytes by offset), fresh at the lookup and
    /// fresh again after any write to a map of that definition ([`Sym::refresh_inner`]); a
    /// store may change any map of that definition ([`Sym::havoc_aliases`]). `null` is true
    /// when the lookup found nothing.
    Inner {
        m: u32,
        null: String,
        vals: String,
    },
    /// A dynptr slice of the packet (`bpf_dynptr_slice`, helpers/dynptr.rs): the packet's
    /// bytes at its offset (which counts from the packet's start as `Pkt`'s does), or NULL
    /// when `null` holds.
    Slice {
        null: String,
    },
    /// A pointer into frame `frame`'s stack, or NULL when `null` holds (`bpf_iter_num_next`'s
    /// `&cur`, helpers/iter_num.rs): loads and stores go to the stack as `Stack`'s do.
    StackOrNull {
        frame: u32,
        null: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum V {
    /// A 64-bit scalar term.
    S(String),
    /// A pointer: region plus 64-bit offset term (and the offset if constant).
    P(Region, String, Option<i64>),
    MapPtr(u32),
    /// A map of maps' lookup result: inner map `m`, or NULL when `null` holds.
    Inner(u32, String),
    Ctx,
}

/// A call frame. Its stack is `stack` (byte terms by constant offset from `r10`) and `spills`
/// (pointers stored whole) while every access has a constant offset. The first load or store at
/// a computed offset turns it into an array term as well, `arr`: from then on the byte at
/// offset `o` is `stack[o]` when known, else `(select arr o)`; `dirty` are the known bytes not
/// yet stored into `arr`. Constant offsets keep going through `stack` (so the terms stay what
/// they were, and the solver sees few array reads); a computed-offset access first stores the
/// dirty bytes into `arr` and then goes through `arr` (a store also forgets `stack`, whose
/// bytes it may have overwritten). Programs that never compute a stack offset get the same
/// query as without arrays.
///
/// A pointer spill survives stores at computed offsets: the verifier rejects a variable-offset
/// stack write whose range may reach a spilled pointer (for unprivileged programs) or turns
/// every slot in the range into plain data (privileged), so a value reloaded from a spill slot
/// and used as a pointer was not overwritten. Its bytes, read as data, are fresh values.
pub(crate) struct Frame {
    pub(crate) id: u32,
    pub(crate) regs: [V; 11],
    pub(crate) stack: HashMap<i64, String>,
    pub(crate) spills: HashMap<i64, V>,
    pub(crate) arr: Option<String>,
    pub(crate) dirty: BTreeSet<i64>,
    /// The call frame's caller registers r6–r9, restored on return.
    pub(crate) saved: Option<[V; 4]>,
    /// A `bpf_loop` callback's frame: its exit returns to the call.
    pub(crate) callback: bool,
}

/// A `bpf_loop` call in progress: nr_loops (a 64-bit term, zero-extended from 32 bits), the
/// callback's context argument, and the calls made so far.
pub(crate) struct LoopCall {
    pub(crate) nr: String,
    pub(crate) ctx: V,
    pub(crate) calls: u64,
    /// A summarised call (`EdgeKind::CallSummary`): its one callback call stands for all, and
    /// this is its index (a fresh term below nr_loops).
    pub(crate) summary: Option<String>,
}

impl Frame {
    /// A frame with nothing on its stack yet.
    fn new(id: u32, regs: [V; 11], saved: Option<[V; 4]>) -> Frame {
        Frame {
            id,
            regs,
            stack: HashMap::new(),
            spills: HashMap::new(),
            arr: None,
            dirty: BTreeSet::new(),
            saved,
            callback: false,
        }
    }
}

/// A map entry the path looked up: the model gives its key and initial value.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Lookup {
    /// The map's name.
    pub map: String,
    /// The key (a term).
    pub key: String,
    /// Bytes of the key.
    pub key_size: u32,
    /// The array (a term) that holds the initial value's bytes.
    pub values: String,
    /// Whether `values` is indexed by the key and the byte's position (a map's values,
    /// `(concat key i)`) or by the position alone (an inner map's fresh values).
    pub keyed: bool,
    /// Bytes of the value.
    pub value_size: u32,
    /// Whether the key was present (term), for hash maps.
    pub present: Option<String>,
    /// For a value of more than [`MAX_EXAMPLE_VALUE_BYTES`]: the positions (32-bit terms) of
    /// the bytes the path reads of it, at most [`MAX_EXAMPLE_VALUE_READS`]; the model gives
    /// those bytes only (the others are zeros in the example).
    pub reads: Vec<String>,
}

/// The largest map value whose every byte an example gives; of a larger one (a 4 MB sketch's
/// array value), the bytes its path reads ([`Lookup::reads`]): asking a model for 4 million
/// bytes took the solver past its memory budget, and the analysis's process to 1.5 GB.
pub const MAX_EXAMPLE_VALUE_BYTES: u32 = 4096;
/// The most byte positions of a large value recorded for one path ([`Lookup::reads`]).
pub const MAX_EXAMPLE_VALUE_READS: usize = 4096;

impl Lookup {
    /// Whether the model gives only the bytes the path reads ([`Lookup::reads`]).
    pub fn sparse(&self) -> bool {
        self.value_size > MAX_EXAMPLE_VALUE_BYTES
    }

    /// The initial value's byte at position `pos` (a 32-bit term).
    fn byte_at(&self, pos: &str) -> String {
        if self.keyed {
            format!("(select {} (concat {} {pos}))", self.values, self.key)
        } else {
            format!("(select {} {pos})", self.values)
        }
    }

    /// The terms a model gives of the initial value: every byte, byte 0 first; or, for a
    /// [`Lookup::sparse`] one, each read position followed by its byte. Built when a model is
    /// read, not for every path's query (a path through a UPF program made hundreds of lookups
    /// of values of hundreds of bytes each, and 65 % of its query-building time went into their
    /// text).
    pub fn value_terms(&self) -> Vec<String> {
        if self.sparse() {
            return self
                .reads
                .iter()
                .flat_map(|pos| [pos.clone(), self.byte_at(pos)])
                .collect();
        }
        (0..self.value_size)
            .map(|i| self.byte_at(&format!("(_ bv{i} 32)")))
            .collect()
    }
}

/// An array map declared with `max_entries 0`: the term of its size, which the model gives.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MapSize {
    /// The map's name.
    pub map: String,
    /// The term of its size.
    pub size: String,
    /// The size term's width (the key's bits).
    pub bits: u32,
}

/// A result the environment gives the program (the time, a random number, the CPU: the
/// `time` family's helpers): the term of the value the path's call returned, which the model
/// gives so that an example can be replayed in the interpreter (`RunOptions::replay`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct EnvResult {
    /// The helper's id.
    pub helper: u32,
    /// The term of its result (64 bits).
    pub term: String,
}

/// The largest writable global-data section (`.data`, `.bss`: one map value) whose bytes an
/// example gives (a path that reads it takes its contents to be what user space set; a larger one
/// is left out of the example, which then may take another path in `validate`).
pub const MAX_GLOBAL_EXAMPLE_BYTES: u32 = 4096;

/// The query for one path, and the terms to read from a model.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Query {
    /// The query as SMT-LIB text.
    pub smt: String,
    /// The received packet: `len` bytes of the array `packet`.
    pub len: String,
    /// Name of the packet's byte array.
    pub packet: String,
    /// The program's return value (the XDP action) at the end of the path.
    pub ret: String,
    /// The map entries the path looks up.
    pub lookups: Vec<Lookup>,
    /// The sizes of array maps declared with `max_entries 0`.
    pub sizes: Vec<MapSize>,
    /// The environment's results on the path (time, randomness, CPU), in call order.
    pub env: Vec<EnvResult>,
    /// The context's fields the path read (`ingress_ifindex` at 12, `rx_queue_index` at 16,
    /// `egress_ifindex` at 20): offset and term, one per field.
    pub ctx: Vec<(i16, String)>,
    /// Results the query leaves free that an example is sought with first (term, value), where
    /// what the model chooses decides the example's maps: a hash map insert's 0 (the map had
    /// room: no example's maps can make it full, so a failed insert is best shown by a present
    /// key).
    pub prefer: Vec<(String, String)>,
    /// (position on the path, condition text) of every branch assertion; the texts mean the
    /// same on every path (terms are named by their definitions).
    #[serde(skip)]
    pub asserts: Vec<(usize, String)>,
}

pub(crate) struct Sym<'a> {
    pub(crate) p: &'a Program,
    pub(crate) out: String,
    pub(crate) n: usize,
    pub(crate) frames: Vec<Frame>,
    pub(crate) next_frame: u32,
    pub(crate) pkt: String,
    pub(crate) data_off: String,
    pub(crate) end_off: String,
    /// `data_meta` (equal to `data_off`, the same text, while no metadata was added).
    pub(crate) meta_off: String,
    /// Current array of each map's values, and of its presence bits.
    pub(crate) mem: Vec<String>,
    pub(crate) present: Vec<String>,
    pub(crate) lookups: Vec<Lookup>,
    /// Bytes read of large values ([`Lookup::reads`]): (the initial array and key they come
    /// from, their position term).
    pub(crate) value_reads: Vec<((String, String), String)>,
    pub(crate) ctx: Vec<(i16, String)>,
    pub(crate) sizes: Vec<MapSize>,
    /// The environment's results so far (crate::helpers::time).
    pub(crate) env: Vec<EnvResult>,
    /// Free results and the values an example is sought with first ([`Query::prefer`]).
    pub(crate) prefer: Vec<(String, String)>,
    pub(crate) ret: Option<String>,
    pub(crate) defined: std::collections::HashSet<u64>,
    /// (position on the path, condition) of every branch assertion.
    pub(crate) asserts: Vec<(usize, String)>,
    /// Tail calls made so far on the path.
    pub(crate) tails: u32,
    /// The `bpf_loop` calls in progress, innermost last.
    pub(crate) loops: Vec<LoopCall>,
    /// What the `bpf_loop` callback that just returned returned: the next step is its call,
    /// resumed.
    pub(crate) resumed: Option<V>,
    /// The maps of maps' synthetic inner maps (`<outer>.inner`, [`Program::outer_of`]), found
    /// once: most programs have none, and a store into a map value asks.
    pub(crate) inner: Vec<u32>,
}

impl<'a> Sym<'a> {
    /// `bpf_tail_call(ctx, map, index)` leaving as `kind` says (docs/xdp.md, "Tail calls"): a
    /// `TailCall` edge jumps into the program of its slot (the index is that slot; the target
    /// starts with r1 the context and a stack of its own, and never returns); the call's
    /// other edge returns (the slot is empty or past the array, or
    /// [`MAX_TAIL_CALLS`](crate::load::MAX_TAIL_CALLS) calls were made) with r0 unknown.
    fn tail_call(&mut self, kind: EdgeKind, k: usize) {
        let r2 = self.reg(2);
        let idx = self.scalar(&self.reg(3));
        let idx = format!("((_ extract 31 0) {idx})");
        let cond = match kind {
            EdgeKind::TailCall { map, slot } => Some(match r2 {
                V::MapPtr(m) if m != map => "false".to_string(),
                _ => format!("(= {idx} (_ bv{slot} 32))"),
            }),
            _ if self.tails < crate::load::MAX_TAIL_CALLS => match r2 {
                V::MapPtr(m) => match self.p.prog_arrays.get(&m) {
                    Some(crate::load::ProgArray::Known(slots)) if !slots.is_empty() => {
                        let mut ne: Vec<String> = slots
                            .keys()
                            .map(|s| format!("(not (= {idx} (_ bv{s} 32)))"))
                            .collect();
                        // (SMT-LIB's `and` takes two or more: Bitwuzla refuses one.)
                        Some(if ne.len() == 1 {
                            ne.swap_remove(0)
                        } else {
                            format!("(and {})", ne.join(" "))
                        })
                    }
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        };
        if let Some(c) = cond {
            let c = self.def("Bool", &c);
            let _ = writeln!(self.out, "(assert (! {c} :named a{k}))");
            self.asserts.push((k, c));
        }
        if let EdgeKind::TailCall { .. } = kind {
            self.tails += 1;
            self.next_frame += 1;
            let f = self.next_frame;
            // Registers other than r1 and r10 are not read before they are written (the
            // verifier's rule for a program's entry).
            let mut regs: [V; 11] = std::array::from_fn(|_| V::S(bv64(0)));
            regs[1] = V::Ctx;
            regs[10] = V::P(Region::Stack(f), bv64(0), Some(0));
            self.frames = vec![Frame::new(f, regs, None)];
            self.loops.clear();
        } else {
            self.call(u32::MAX);
        }
    }

    /// Name a term. Names are hashes of the definition, so the same term gets the same name
    /// on every path: assertions can then be compared across paths by their text.
    pub(crate) fn def(&mut self, sort: &str, expr: &str) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in sort.bytes().chain([0u8]).chain(expr.bytes()) {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
        let name = format!("t{h:016x}");
        if self.defined.insert(h) {
            let _ = writeln!(self.out, "(define-fun {name} () {sort} {expr})");
        }
        name
    }
    pub(crate) fn fresh(&mut self, sort: &str, hint: &str) -> String {
        self.n += 1;
        let name = format!("{hint}_{}", self.n);
        let _ = writeln!(self.out, "(declare-const {name} {sort})");
        name
    }
    pub(crate) fn fresh64(&mut self, hint: &str) -> V {
        V::S(self.fresh("(_ BitVec 64)", hint))
    }
    pub(crate) fn frame(&mut self) -> &mut Frame {
        self.frames.last_mut().unwrap()
    }
    pub(crate) fn reg(&self, r: u8) -> V {
        self.frames.last().unwrap().regs[r as usize].clone()
    }
    pub(crate) fn set(&mut self, r: u8, v: V) {
        self.frame().regs[r as usize] = v;
    }
    fn src(&self, s: Src) -> V {
        match s {
            Src::Reg(r) => self.reg(r),
            Src::Imm(i) => V::S(bv64(i as i64 as u64)),
        }
    }
    /// The value as a 64-bit scalar term (pointers other than scalars become fresh values).
    pub(crate) fn scalar(&mut self, v: &V) -> String {
        match v {
            V::S(t) => t.clone(),
            _ => self.fresh("(_ BitVec 64)", "ptr"),
        }
    }

    pub(crate) fn map_sort(&self, m: u32) -> (u32, String) {
        let ks = self.p.maps[m as usize].key_size.max(1) * 8;
        (ks, format!("(Array (_ BitVec {}) (_ BitVec 8))", ks + 32))
    }

    /// An array map's number of entries as a term of its key's width: the declared one, or,
    /// for a map declared with `max_entries 0` (its loader sets the size), the unknown
    /// `msz<m>` (at least 1: the query's preamble asserts it), which the model gives.
    /// Only maps that [`sized_by_index`] names are asked (the preamble declares `msz<m>` for
    /// exactly those).
    pub(crate) fn array_size(&self, m: u32) -> String {
        let def = &self.p.maps[m as usize];
        debug_assert!(sized_by_index(def), "map {} has no size term", def.name);
        let ks = def.key_size.max(1) * 8;
        if def.max_entries == 0 {
            format!("msz{m}")
        } else {
            format!("(_ bv{} {ks})", def.max_entries)
        }
    }

    pub(crate) fn map_index(&self, key: &str, off: &str, i: i64) -> String {
        format!(
            "(concat {key} ((_ extract 31 0) (bvadd {off} {})))",
            bv64(i as u64)
        )
    }

    /// The index of call frame `f`, if it is live.
    pub(crate) fn frame_index(&self, f: u32) -> Option<usize> {
        self.frames.iter().rposition(|x| x.id == f)
    }

    /// Frame `fi`'s stack as an array term that holds every byte known so far (the frame turns
    /// to arrays on its first computed-offset access; its unknown bytes are a fresh array's).
    pub(crate) fn stack_array(&mut self, fi: usize) -> String {
        let base = match self.frames[fi].arr.clone() {
            Some(a) => a,
            None => {
                let a = self.fresh(BYTES, "stka");
                let fr = &mut self.frames[fi];
                fr.dirty = fr.stack.keys().copied().collect();
                fr.arr = Some(a.clone());
                a
            }
        };
        let fr = &mut self.frames[fi];
        if fr.dirty.is_empty() {
            return base;
        }
        let mut t = base;
        for o in std::mem::take(&mut fr.dirty) {
            t = format!("(store {t} {} {})", bv64(o as u64), fr.stack[&o]);
        }
        let a = self.def(BYTES, &t);
        self.frames[fi].arr = Some(a.clone());
        a
    }

    /// Load `size` bytes at `ptr` (little-endian), zero-extended to 64 bits.
    pub(crate) fn load(&mut self, ptr: &V, size: Size) -> V {
        if let V::P(Region::StackOrNull { frame, .. }, off, k) = ptr {
            return self.load(&V::P(Region::Stack(*frame), off.clone(), *k), size);
        }
        let n = size.bytes() as i64;
        let bytes: Option<Vec<String>> = match ptr {
            V::P(Region::Pkt | Region::Slice { .. }, off, k) => Some(
                (0..n)
                    .map(|i| format!("(select {} {})", self.pkt, index_at(off, *k, i)))
                    .collect(),
            ),
            V::P(Region::Stack(f), off, k) => match (self.frame_index(*f), k) {
                (Some(fi), Some(k)) => {
                    if n == 8 {
                        if let Some(v) = self.frames[fi].spills.get(k).cloned() {
                            return v;
                        }
                    }
                    let mut out = Vec::new();
                    for o in *k..k + n {
                        let b = match self.frames[fi].stack.get(&o).cloned() {
                            Some(b) => b,
                            None => {
                                let b = match self.frames[fi].arr.clone() {
                                    Some(a) => format!("(select {a} {})", bv64(o as u64)),
                                    None => self.fresh("(_ BitVec 8)", "stk"),
                                };
                                // Known now (and already in `arr`, if there is one).
                                self.frames[fi].stack.insert(o, b.clone());
                                b
                            }
                        };
                        out.push(b);
                    }
                    Some(out)
                }
                (Some(fi), None) => {
                    let a = self.stack_array(fi);
                    Some(
                        (0..n)
                            .map(|i| format!("(select {a} (bvadd {off} {}))", bv64(i as u64)))
                            .collect(),
                    )
                }
                (None, _) => None,
            },
            V::P(Region::Inner { m, vals, .. }, off, _) => {
                if self.p.maps[*m as usize].value_size > MAX_EXAMPLE_VALUE_BYTES {
                    self.record_value_reads((vals.clone(), String::new()), off, n);
                }
                Some(
                    (0..n)
                        .map(|i| {
                            format!(
                                "(select {vals} ((_ extract 31 0) (bvadd {off} {})))",
                                bv64(i as u64)
                            )
                        })
                        .collect(),
                )
            }
            V::P(Region::Map { m, key, .. }, off, _) => {
                if self.p.maps[*m as usize].value_size > MAX_EXAMPLE_VALUE_BYTES {
                    self.record_value_reads((format!("m{m}_0"), key.clone()), off, n);
                }
                let mem = self.mem[*m as usize].clone();
                Some(
                    (0..n)
                        .map(|i| format!("(select {mem} {})", self.map_index(key, off, i)))
                        .collect(),
                )
            }
            _ => None,
        };
        let Some(bytes) = bytes else {
            return self.fresh64("ld");
        };
        if let Some(v) = bytes.iter().rev().try_fold(0u64, |a, b| {
            konst(b).filter(|_| b.len() == 4).map(|x| a << 8 | x)
        }) {
            return V::S(bv64(v)); // every byte a constant (a constant spilled and reloaded)
        }
        let mut t = String::from("(concat");
        for b in bytes.iter().rev() {
            t.push(' ');
            t.push_str(b);
        }
        t.push(')');
        if n == 1 {
            t = bytes[0].clone();
        }
        let ext = 64 - 8 * n;
        let e = if ext > 0 {
            format!("((_ zero_extend {ext}) {t})")
        } else {
            t
        };
        V::S(self.def("(_ BitVec 64)", &e))
    }

    /// Record that the path reads `n` bytes at offset `off` of a large value (`from`: its
    /// initial array and key), for the example ([`Lookup::reads`]).
    fn record_value_reads(&mut self, from: (String, String), off: &str, n: i64) {
        for i in 0..n {
            if self.value_reads.len() >= MAX_EXAMPLE_VALUE_READS {
                return;
            }
            let pos = format!("((_ extract 31 0) (bvadd {off} {}))", bv64(i as u64));
            self.value_reads.push((from.clone(), pos));
        }
    }

    /// Store the low `size` bytes of `val` at `ptr`.
    pub(crate) fn store(&mut self, ptr: &V, size: Size, val: &V) {
        if let V::P(Region::StackOrNull { frame, .. }, off, k) = ptr {
            return self.store(&V::P(Region::Stack(*frame), off.clone(), *k), size, val);
        }
        let n = size.bytes() as i64;
        match ptr {
            V::P(Region::Stack(f), _, Some(k)) => {
                let k = *k;
                let Some(fi) = self.frame_index(*f) else {
                    return;
                };
                self.frames[fi]
                    .spills
                    .retain(|&o, _| o + 8 <= k || k + n <= o);
                let arr = self.frames[fi].arr.is_some();
                if n == 8 && !matches!(val, V::S(_)) {
                    // A pointer spill: keep it as a pointer; its bytes are unknown.
                    for o in k..k + n {
                        if arr {
                            // Over what `arr` holds there.
                            let b = self.fresh("(_ BitVec 8)", "stk");
                            self.frames[fi].stack.insert(o, b);
                            self.frames[fi].dirty.insert(o);
                        } else {
                            self.frames[fi].stack.remove(&o);
                        }
                    }
                    self.frames[fi].spills.insert(k, val.clone());
                    return;
                }
                let v = self.scalar(val);
                let fr = &mut self.frames[fi];
                for i in 0..n {
                    let b = byte_of(&v, i);
                    fr.stack.insert(k + i, b);
                    if arr {
                        fr.dirty.insert(k + i);
                    }
                }
            }
            V::P(Region::Stack(f), off, None) => {
                let Some(fi) = self.frame_index(*f) else {
                    return;
                };
                let mut arr = self.stack_array(fi);
                let v = self.scalar(val);
                for i in 0..n {
                    arr = format!(
                        "(store {arr} (bvadd {off} {}) ((_ extract {} {}) {v}))",
                        bv64(i as u64),
                        8 * i + 7,
                        8 * i
                    );
                }
                let arr = self.def(BYTES, &arr);
                // Any byte known by its constant offset may have been overwritten.
                let fr = &mut self.frames[fi];
                fr.arr = Some(arr);
                fr.stack.clear();
            }
            V::P(Region::Pkt | Region::Slice { .. }, off, k) => {
                let v = self.scalar(val);
                let mut arr = self.pkt.clone();
                for i in 0..n {
                    arr = format!("(store {arr} {} {})", index_at(off, *k, i), byte_of(&v, i));
                }
                self.pkt = self.def(BYTES, &arr);
            }
            V::P(Region::Replaced { m, .. }, _, _) => {
                // The element may be another key's by now: any value of the map may change.
                let sort = self.map_sort(*m).1;
                self.mem[*m as usize] = self.fresh(&sort, "mrep");
                self.refresh_inner(*m);
            }
            V::P(Region::Inner { m, .. }, _, _) => self.havoc_aliases(*m),
            V::P(Region::Map { m, key, .. }, off, _) => {
                self.refresh_inner(*m);
                let v = self.scalar(val);
                let m = *m as usize;
                let mut arr = self.mem[m].clone();
                for i in 0..n {
                    arr = format!(
                        "(store {arr} {} ((_ extract {} {}) {v}))",
                        self.map_index(key, off, i),
                        8 * i + 7,
                        8 * i
                    );
                }
                let sort = self.map_sort(m as u32).1;
                self.mem[m] = self.def(&sort, &arr);
            }
            _ => {}
        }
    }

    /// An update of hash or LRU hash map `m` does not write a present key's value in place:
    /// the kernel links a new element and unlinks the old one (`htab_map_update_elem`,
    /// `htab_lru_map_update_elem`), whose memory stays (RCU) and goes back to the map's free
    /// elements, which a later update may take for any key. So every value pointer into `m`
    /// looked up before the update becomes [`Region::Replaced`], wherever it is held.
    pub(crate) fn replace_values(&mut self, m: u32) {
        let swap = |v: &mut V| {
            if let V::P(Region::Map { m: vm, null, .. }, _, _) = v {
                if *vm == m {
                    let null = null.clone();
                    if let V::P(r, _, _) = v {
                        *r = Region::Replaced { m, null };
                    }
                }
            }
        };
        for f in &mut self.frames {
            f.regs.iter_mut().for_each(swap);
            f.spills.values_mut().for_each(swap);
            if let Some(saved) = &mut f.saved {
                saved.iter_mut().for_each(swap);
            }
        }
    }

    /// `ptr` moved by `i` bytes (the offset term too, also for a constant offset).
    pub(crate) fn byte_at(&mut self, ptr: &V, i: i64) -> V {
        match ptr {
            V::P(..) => self.offset(ptr, i),
            other => other.clone(),
        }
    }

    /// The `n` bytes at `ptr` as one term (a map key), read as loads read them.
    pub(crate) fn stack_bytes(&mut self, ptr: &V, n: u32) -> String {
        let mut bytes = Vec::new();
        for i in 0..n as i64 {
            let p = self.byte_at(ptr, i);
            match self.load(&p, Size::B) {
                V::S(t) => bytes.push(format!("((_ extract 7 0) {t})")),
                _ => unreachable!(),
            }
        }
        let mut t = String::from("(concat");
        for b in bytes.iter().rev() {
            t.push(' ');
            t.push_str(b);
        }
        t.push(')');
        if n == 1 {
            t = bytes[0].clone();
        }
        self.def(&format!("(_ BitVec {})", n * 8), &t)
    }

    fn alu(&mut self, op: AluOp, is64: bool, d: V, s: V) -> V {
        // Pointer arithmetic keeps the region.
        if is64 {
            match (op, &d, &s) {
                (AluOp::Mov, _, _) => return s,
                (AluOp::Add | AluOp::Sub, V::P(r, off, k), V::S(x)) => {
                    let o = if op == AluOp::Add { "bvadd" } else { "bvsub" };
                    let kk = match (k, x.strip_prefix("#x")) {
                        (Some(k), Some(h)) => u64::from_str_radix(h, 16).ok().map(|c| {
                            if op == AluOp::Add {
                                k.wrapping_add(c as i64)
                            } else {
                                k.wrapping_sub(c as i64)
                            }
                        }),
                        _ => None,
                    };
                    let t = match kk {
                        Some(c) => bv64(c as u64),
                        None => self.def("(_ BitVec 64)", &format!("({o} {off} {x})")),
                    };
                    return V::P(r.clone(), t, kk);
                }
                (AluOp::Add, V::S(_), V::P(..)) => return self.alu(op, is64, s, d),
                // The distance between two pointers into one object (into two: unknown).
                (AluOp::Sub, V::P(r1, a, _), V::P(r2, b, _)) if r1 == r2 => {
                    return V::S(self.def("(_ BitVec 64)", &format!("(bvsub {a} {b})")));
                }
                _ => {}
            }
        } else if op == AluOp::Mov {
            let x = self.scalar(&s);
            if let Some(c) = konst(&x) {
                return V::S(bv64(c & 0xffff_ffff));
            }
            return V::S(self.def(
                "(_ BitVec 64)",
                &format!("((_ zero_extend 32) ((_ extract 31 0) {x}))"),
            ));
        }
        let a = self.scalar(&d);
        let b = self.scalar(&s);
        if let (Some(x), Some(y)) = (konst(&a), konst(&b)) {
            return V::S(bv64(crate::insn::alu(op, is64, x, y)));
        }
        let (w, a, b) = if is64 {
            (64, a, b)
        } else {
            (
                32,
                format!("((_ extract 31 0) {a})"),
                format!("((_ extract 31 0) {b})"),
            )
        };
        let zero = format!("(_ bv0 {w})");
        let mask = format!("(_ bv{} {w})", w - 1);
        let e = match op {
            AluOp::Add => format!("(bvadd {a} {b})"),
            AluOp::Sub => format!("(bvsub {a} {b})"),
            AluOp::Mul => format!("(bvmul {a} {b})"),
            AluOp::Div => format!("(ite (= {b} {zero}) {zero} (bvudiv {a} {b}))"),
            AluOp::Mod => format!("(ite (= {b} {zero}) {a} (bvurem {a} {b}))"),
            AluOp::Or => format!("(bvor {a} {b})"),
            AluOp::And => format!("(bvand {a} {b})"),
            AluOp::Xor => format!("(bvxor {a} {b})"),
            AluOp::Lsh => format!("(bvshl {a} (bvand {b} {mask}))"),
            AluOp::Rsh => format!("(bvlshr {a} (bvand {b} {mask}))"),
            AluOp::Arsh => format!("(bvashr {a} (bvand {b} {mask}))"),
            AluOp::Neg => format!("(bvneg {a})"),
            AluOp::Mov => b,
        };
        let e = if is64 {
            e
        } else {
            format!("((_ zero_extend 32) {e})")
        };
        V::S(self.def("(_ BitVec 64)", &e))
    }

    fn cond(&mut self, op: JmpOp, is64: bool, a: V, b: V) -> String {
        let (x, y) = match (&a, &b) {
            (V::S(x), V::S(y)) => (x.clone(), y.clone()),
            // Two pointers into the same object: the kernel compares their addresses, and
            // addresses in one object are ordered as their offsets are, as signed numbers.
            // Offsets are signed: the packet's start may move in front of where it was
            // received (`bpf_xdp_adjust_head` with a negative delta: offsets down to -216),
            // and stack offsets are negative. (Comparing them as unsigned numbers made every
            // bounds check after a negative adjust_head look out of range, refuting real
            // paths.) A 32-bit comparison sees the addresses' low halves, which no offset
            // tells: unknown.
            (V::P(r1, x, _), V::P(r2, y, _)) if r1 == r2 => {
                if !is64 {
                    return self.fresh("Bool", "c");
                }
                let (x, y) = (x.clone(), y.clone());
                return match op {
                    JmpOp::Eq => format!("(= {x} {y})"),
                    JmpOp::Ne => format!("(not (= {x} {y}))"),
                    JmpOp::Gt | JmpOp::Sgt => format!("(bvsgt {x} {y})"),
                    JmpOp::Ge | JmpOp::Sge => format!("(bvsge {x} {y})"),
                    JmpOp::Lt | JmpOp::Slt => format!("(bvslt {x} {y})"),
                    JmpOp::Le | JmpOp::Sle => format!("(bvsle {x} {y})"),
                    JmpOp::Set => self.fresh("Bool", "c"),
                };
            }
            // A looked-up map value against 0: the null check.
            (V::P(Region::Map { null, .. }, _, _), V::S(z))
            | (V::S(z), V::P(Region::Map { null, .. }, _, _))
                if z == &bv64(0) =>
            {
                return match op {
                    JmpOp::Eq => null.clone(),
                    JmpOp::Ne => format!("(not {null})"),
                    _ => self.fresh("Bool", "c"),
                };
            }
            // A value of a map updated since the lookup: the lookup's null check still. A ring
            // buffer record: whether the reservation failed.
            (
                V::P(
                    Region::Replaced { null, .. }
                    | Region::Record { null }
                    | Region::Slice { null }
                    | Region::StackOrNull { null, .. }
                    | Region::Inner { null, .. },
                    _,
                    _,
                ),
                V::S(z),
            )
            | (
                V::S(z),
                V::P(
                    Region::Replaced { null, .. }
                    | Region::Record { null }
                    | Region::Slice { null }
                    | Region::StackOrNull { null, .. }
                    | Region::Inner { null, .. },
                    _,
                    _,
                ),
            ) if z == &bv64(0) => {
                return match op {
                    JmpOp::Eq => null.clone(),
                    JmpOp::Ne => format!("(not {null})"),
                    _ => self.fresh("Bool", "c"),
                };
            }
            (V::Inner(_, null), V::S(z)) | (V::S(z), V::Inner(_, null)) if z == &bv64(0) => {
                return match op {
                    JmpOp::Eq => null.clone(),
                    JmpOp::Ne => format!("(not {null})"),
                    _ => self.fresh("Bool", "c"),
                };
            }
            // Other pointers are never null.
            (V::P(..) | V::Ctx | V::MapPtr(_), V::S(z)) if z == &bv64(0) => {
                return match op {
                    JmpOp::Eq => "false".into(),
                    JmpOp::Ne => "true".into(),
                    _ => self.fresh("Bool", "c"),
                };
            }
            // A pointer (null or an address) against another constant below 2^32: a kernel
            // address lies in the upper half of the address space (x86-64 from
            // 0xffff8000_00000000, arm64 from 0xffff0000_00000000), and the interpreter's start
            // at 2^32, so the two are never equal. (A parser's `if (ptr == 1)` was taken either
            // way, and examples of the equal branch did not replay: an uplink GTP program's two
            // slowest paths.)
            (V::P(..) | V::Ctx | V::MapPtr(_) | V::Inner(..), V::S(c))
            | (V::S(c), V::P(..) | V::Ctx | V::MapPtr(_) | V::Inner(..))
                if is64 && konst(c).is_some_and(|c| c > 0 && c < 1 << 32) =>
            {
                return match op {
                    JmpOp::Eq => "false".into(),
                    JmpOp::Ne => "true".into(),
                    _ => self.fresh("Bool", "c"),
                };
            }
            _ => return self.fresh("Bool", "c"),
        };
        if let (Some(p), Some(q)) = (konst(&x), konst(&y)) {
            let holds = crate::insn::jmp_taken(op, is64, p, q);
            return if holds { "true" } else { "false" }.into();
        }
        let (x, y) = if is64 {
            (x, y)
        } else {
            (
                format!("((_ extract 31 0) {x})"),
                format!("((_ extract 31 0) {y})"),
            )
        };
        match op {
            JmpOp::Eq => format!("(= {x} {y})"),
            JmpOp::Ne => format!("(not (= {x} {y}))"),
            JmpOp::Gt => format!("(bvugt {x} {y})"),
            JmpOp::Ge => format!("(bvuge {x} {y})"),
            JmpOp::Lt => format!("(bvult {x} {y})"),
            JmpOp::Le => format!("(bvule {x} {y})"),
            JmpOp::Sgt => format!("(bvsgt {x} {y})"),
            JmpOp::Sge => format!("(bvsge {x} {y})"),
            JmpOp::Slt => format!("(bvslt {x} {y})"),
            JmpOp::Sle => format!("(bvsle {x} {y})"),
            JmpOp::Set => {
                let w = if is64 { 64 } else { 32 };
                format!("(not (= (bvand {x} {y}) (_ bv0 {w})))")
            }
        }
    }

    /// Whatever `ptr`'s object holds becomes unknown (a helper wrote an unknown range of it).
    pub(crate) fn havoc(&mut self, ptr: &V) {
        if let V::P(Region::StackOrNull { frame, .. }, off, k) = ptr {
            return self.havoc(&V::P(Region::Stack(*frame), off.clone(), *k));
        }
        match ptr {
            V::P(Region::Pkt | Region::Slice { .. }, _, _) => self.pkt = self.fresh(BYTES, "pkth"),
            V::P(Region::Stack(f), _, _) => {
                if let Some(fi) = self.frame_index(*f) {
                    // Pointer spills stay (see `Frame`); every data byte is fresh.
                    let a = self.fresh(BYTES, "stka");
                    let fr = &mut self.frames[fi];
                    fr.stack.clear();
                    fr.dirty.clear();
                    fr.arr = Some(a);
                }
            }
            V::P(Region::Map { m, .. } | Region::Replaced { m, .. }, _, _) => {
                let sort = self.map_sort(*m).1;
                self.mem[*m as usize] = self.fresh(&sort, "mrep");
                self.refresh_inner(*m);
            }
            V::P(Region::Inner { m, .. }, _, _) => self.havoc_aliases(*m),
            _ => {}
        }
    }

    /// Everything a summarised `bpf_loop`'s calls may have written becomes unknown: every
    /// frame's stack (the callback reaches the caller's through its context, and whatever
    /// pointers are spilled there), the packet's bytes, and every map that is not read-only
    /// (contents, presence, and the values looked up before, as after an update).
    pub(crate) fn havoc_all(&mut self) {
        let ids: Vec<u32> = self.frames.iter().map(|f| f.id).collect();
        for f in ids {
            self.havoc(&V::P(Region::Stack(f), bv64(0), Some(0)));
        }
        self.pkt = self.fresh(BYTES, "pkth");
        for m in 0..self.p.maps.len() as u32 {
            if self.p.maps[m as usize].frozen {
                continue;
            }
            let (ks, sort) = self.map_sort(m);
            self.mem[m as usize] = self.fresh(&sort, "mrep");
            self.present[m as usize] = self.fresh(&format!("(Array (_ BitVec {ks}) Bool)"), "prep");
            if !self.p.maps[m as usize].is_array() {
                self.replace_values(m);
            }
            self.refresh_inner(m);
        }
    }

    /// Whether a slot of a map of maps whose synthetic inner map is `inner` may hold map `m`
    /// (or an inner map of another map of maps, the same map as `m`'s): the same type, key
    /// size and value size (the kernel's `bpf_map_meta_equal` asks that and more).
    pub(crate) fn may_alias(&self, inner: u32, m: u32) -> bool {
        let (a, b) = (&self.p.maps[inner as usize], &self.p.maps[m as usize]);
        a.map_type == b.map_type && a.key_size == b.key_size && a.value_size == b.value_size
    }

    /// A write to map `m` may have changed the value any inner map pointer of a definition
    /// `m` fits points to: their bytes become fresh.
    pub(crate) fn refresh_inner(&mut self, m: u32) {
        let hit: Vec<u32> = self
            .inner
            .iter()
            .copied()
            .filter(|&i| self.may_alias(i, m))
            .collect();
        if hit.is_empty() {
            return;
        }
        let mut frames = std::mem::take(&mut self.frames);
        for f in &mut frames {
            let saved = f.saved.iter_mut().flat_map(|s| s.iter_mut());
            for v in f.regs.iter_mut().chain(f.spills.values_mut()).chain(saved) {
                if let V::P(Region::Inner { m, vals, .. }, _, _) = v {
                    if hit.contains(m) {
                        *vals = self.fresh(INNER_VALS, "inval");
                    }
                }
            }
        }
        self.frames = frames;
    }

    /// A write through inner map `m` (a map of maps' `<outer>.inner`) may have changed any map
    /// a slot can hold: every map the program uses directly with the inner definition's type,
    /// key size and value size (the kernel's `bpf_map_meta_equal` asks that and more) gets
    /// fresh contents and entries, and its value pointers become [`Region::Replaced`] (the
    /// write may have deleted or replaced their element). Reads through inner maps are fresh
    /// anyway.
    pub(crate) fn havoc_aliases(&mut self, m: u32) {
        for j in 0..self.p.maps.len() as u32 {
            if self.inner.contains(&j) || !self.may_alias(m, j) {
                continue;
            }
            let (ks, sort) = self.map_sort(j);
            self.mem[j as usize] = self.fresh(&sort, "mrep");
            self.present[j as usize] = self.fresh(&format!("(Array (_ BitVec {ks}) Bool)"), "prep");
            if !self.p.maps[j as usize].is_array() {
                self.replace_values(j);
            }
        }
        self.refresh_inner(m);
    }

    /// Helper `helper` by its family's semantics (crate::helpers); a helper without them gives
    /// a fresh value. r1–r5 are clobbered.
    pub(crate) fn call(&mut self, helper: u32) {
        // An inner map pointer (past its NULL check: the verifier refuses a call with one that
        // may be NULL) is the inner map.
        let r1 = match self.reg(1) {
            V::Inner(m, _) => V::MapPtr(m),
            v => v,
        };
        let args = [r1, self.reg(2), self.reg(3), self.reg(4)];
        let row = crate::helpers::find(helper);
        let r0 = match row.and_then(|h| h.symex) {
            Some(f) => f(self, helper, args),
            None => {
                // A helper that writes through its pointer arguments without semantics of its
                // own: whatever they point to becomes unknown.
                if row.is_some_and(|h| h.writes_args) {
                    for r in 1..=5 {
                        let v = self.reg(r);
                        self.havoc(&v);
                    }
                }
                self.fresh64("h")
            }
        };
        for r in 1..=5 {
            let v = self.fresh64("clob");
            self.set(r, v);
        }
        self.set(0, r0);
    }

    fn step(&mut self, insn: &Insn, kind: EdgeKind, k: usize) {
        match *insn {
            Insn::Alu { op, is64, dst, src } => {
                let v = self.alu(op, is64, self.reg(dst), self.src(src));
                self.set(dst, v);
            }
            Insn::End { dst, bits, to_be } => {
                let x = self.scalar(&self.reg(dst));
                if let Some(c) = konst(&x) {
                    self.set(dst, V::S(bv64(crate::insn::endian(c, bits, to_be))));
                    return;
                }
                let e = if to_be {
                    let n = bits / 8;
                    let parts: Vec<String> = (0..n)
                        .map(|i| format!("((_ extract {} {}) {x})", 8 * i + 7, 8 * i))
                        .collect();
                    let cat = if n == 1 {
                        parts[0].clone()
                    } else {
                        format!("(concat {})", parts.join(" "))
                    };
                    if bits < 64 {
                        format!("((_ zero_extend {}) {cat})", 64 - bits)
                    } else {
                        cat
                    }
                } else if bits < 64 {
                    format!(
                        "((_ zero_extend {}) ((_ extract {} 0) {x}))",
                        64 - bits,
                        bits - 1
                    )
                } else {
                    x
                };
                let v = V::S(self.def("(_ BitVec 64)", &e));
                self.set(dst, v);
            }
            Insn::Ldx {
                size,
                dst,
                src,
                off,
                signed,
            } => {
                let base = self.reg(src);
                let v = match &base {
                    V::Ctx => match off {
                        0 => {
                            let k = (self.data_off == bv64(0)).then_some(0);
                            V::P(Region::Pkt, self.data_off.clone(), k)
                        }
                        8 => {
                            let k = (self.meta_off == bv64(0)).then_some(0);
                            V::P(Region::Pkt, self.meta_off.clone(), k)
                        }
                        4 => V::P(Region::Pkt, self.end_off.clone(), None),
                        // The receive queue's device and index, and the egress device: one
                        // value each for the whole run (every load of a field reads it).
                        12 | 16 | 20 if size == Size::W => {
                            let t = match self.ctx.iter().find(|c| c.0 == off) {
                                Some(c) => c.1.clone(),
                                None => {
                                    let t = self.fresh("(_ BitVec 32)", "ctx");
                                    self.ctx.push((off, t.clone()));
                                    t
                                }
                            };
                            V::S(self.def("(_ BitVec 64)", &format!("((_ zero_extend 32) {t})")))
                        }
                        _ => {
                            let t = self.fresh("(_ BitVec 32)", "ctx");
                            V::S(self.def("(_ BitVec 64)", &format!("((_ zero_extend 32) {t})")))
                        }
                    },
                    _ => {
                        let p = self.offset(&base, off as i64);
                        self.load(&p, size)
                    }
                };
                let v = if signed && size != Size::DW {
                    let x = self.scalar(&v);
                    let b = size.bytes() * 8;
                    V::S(self.def(
                        "(_ BitVec 64)",
                        &format!("((_ sign_extend {}) ((_ extract {} 0) {x}))", 64 - b, b - 1),
                    ))
                } else {
                    v
                };
                self.set(dst, v);
            }
            Insn::St {
                size,
                dst,
                src,
                off,
            } => {
                let p = self.offset(&self.reg(dst), off as i64);
                let v = self.src(src);
                self.store(&p, size, &v);
            }
            Insn::Atomic {
                op,
                size,
                dst,
                src,
                off,
                fetch,
            } => {
                let p = self.offset(&self.reg(dst), off as i64);
                let old = self.load(&p, size);
                let s = self.reg(src);
                let w = size.bytes() * 8;
                let o = self.scalar(&old);
                let x = self.scalar(&s);
                let new = match op {
                    AtomicOp::Add => format!("(bvadd {o} {x})"),
                    AtomicOp::Or => format!("(bvor {o} {x})"),
                    AtomicOp::And => format!("(bvand {o} {x})"),
                    AtomicOp::Xor => format!("(bvxor {o} {x})"),
                    AtomicOp::Xchg => x.clone(),
                    AtomicOp::CmpXchg => {
                        let r0 = self.scalar(&self.reg(0));
                        format!(
                            "(ite (= ((_ extract {} 0) {o}) ((_ extract {} 0) {r0})) {x} {o})",
                            w - 1,
                            w - 1
                        )
                    }
                };
                let nv = V::S(self.def("(_ BitVec 64)", &new));
                self.store(&p, size, &nv);
                if fetch {
                    let r = if op == AtomicOp::CmpXchg { 0 } else { src };
                    self.set(r, old);
                }
            }
            Insn::LdImm64 { dst, imm } => {
                let v = match imm {
                    Imm64::Const(c) => V::S(bv64(c)),
                    Imm64::Map(m) => V::MapPtr(m),
                    Imm64::Func(f) => V::S(bv64(f as u64)),
                    Imm64::MapValue { map, off } => {
                        let key = format!("(_ bv0 {})", self.map_sort(map).0);
                        // Writable global data (`.data`, `.bss`) is what user space set before
                        // the load: free, so the example must say what the path took it to be.
                        let def = &self.p.maps[map as usize];
                        if !def.frozen
                            && def.value_size <= MAX_GLOBAL_EXAMPLE_BYTES
                            && !self
                                .lookups
                                .iter()
                                .any(|l| l.map == def.name && l.key == key)
                        {
                            self.record_lookup(map, &key, None);
                        }
                        V::P(
                            Region::Map {
                                m: map,
                                key,
                                null: "false".into(),
                            },
                            bv64(off as u64),
                            Some(off as i64),
                        )
                    }
                };
                self.set(dst, v);
            }
            Insn::Jmp {
                op, is64, dst, src, ..
            } => {
                let c = self.cond(op, is64, self.reg(dst), self.src(src));
                let c = match kind {
                    EdgeKind::Taken => c,
                    EdgeKind::NotTaken => format!("(not {c})"),
                    // A branch the static analysis decided: its condition holds anyway.
                    _ => return,
                };
                let _ = writeln!(self.out, "(assert (! {c} :named a{k}))");
                self.asserts.push((k, c));
            }
            Insn::Call {
                helper: crate::absint::HELPER_TAIL_CALL,
            } => self.tail_call(kind, k),
            Insn::Call {
                helper: crate::absint::HELPER_LOOP,
            } => self.loop_call(kind, k),
            Insn::Call { helper } => self.call(helper),
            Insn::Kfunc { id } => self.kfunc(id),
            Insn::CallLocal { .. } => {
                self.next_frame += 1;
                let f = self.next_frame;
                let caller = self.frames.last().unwrap();
                let mut regs = caller.regs.clone();
                let saved = [
                    regs[6].clone(),
                    regs[7].clone(),
                    regs[8].clone(),
                    regs[9].clone(),
                ];
                regs[10] = V::P(Region::Stack(f), bv64(0), Some(0));
                self.frames.push(Frame::new(f, regs, Some(saved)));
            }
            Insn::Exit => {
                if self.frames.len() > 1 {
                    let done = self.frames.pop().unwrap();
                    if done.callback {
                        // Back to the bpf_loop call, which calls again or returns.
                        self.resumed = Some(done.regs[0].clone());
                    }
                    let r0 = done.regs[0].clone();
                    let saved = done.saved.unwrap();
                    let fr = self.frame();
                    fr.regs[0] = r0;
                    for (i, v) in saved.into_iter().enumerate() {
                        fr.regs[6 + i] = v;
                    }
                    for r in 1..=5 {
                        let v = self.fresh64("clob");
                        self.set(r, v);
                    }
                } else {
                    let r0 = self.scalar(&self.reg(0));
                    self.ret = Some(r0);
                }
            }
            Insn::Ja { .. } | Insn::LdAbs => {}
        }
    }

    /// `bpf_loop(nr_loops, callback, ctx, flags)` leaving as `kind` says (kernel/bpf/
    /// bpf_iter.c): flags other than 0 give -EINVAL and nr_loops above `BPF_MAX_LOOPS` -E2BIG,
    /// without a call; otherwise the callback is called with (i, ctx) for i = 0, 1, … while it
    /// returns 0 and i < nr_loops, and the helper returns the calls made. `Call` calls the
    /// callback once more (a fresh frame: r1 = i, r2 = ctx); `Next` returns. At its first visit
    /// the call reads its arguments; each visit after a callback returned (`resumed`) decides
    /// on that callback's result.
    fn loop_call(&mut self, kind: EdgeKind, k: usize) {
        let max = bv64(crate::absint::BPF_MAX_LOOPS);
        if self.resumed.is_some() && self.loops.last().is_some_and(|l| l.summary.is_some()) {
            // Back from a summarised call's callback: after the calls, whatever they may have
            // written is unknown, and so is how many they were.
            self.resumed = None;
            self.loops.pop();
            self.havoc_all();
            for r in 1..=5 {
                let v = self.fresh64("clob");
                self.set(r, v);
            }
            let r0 = self.fresh64("loopn");
            self.set(0, r0);
            return;
        }
        let (cond, r0) = if let Some(ret) = self.resumed.take() {
            let ret = self.scalar(&ret);
            let Some(l) = self.loops.last_mut() else {
                return self.call(u32::MAX);
            };
            let done = bv64(l.calls);
            let nr = l.nr.clone();
            if kind == EdgeKind::Call {
                (
                    format!("(and (= {ret} {}) (bvult {done} {nr}))", bv64(0)),
                    None,
                )
            } else {
                self.loops.pop();
                (
                    format!("(or (not (= {ret} {})) (bvuge {done} {nr}))", bv64(0)),
                    Some(V::S(done)),
                )
            }
        } else {
            // The verifier inlines the call when flags is the constant 0 (verifier.c
            // inline_bpf_loop), and the inlined loop compares all 64 bits of r1 with
            // BPF_MAX_LOOPS and counts to it, and gives -E2BIG as a 32-bit move (0xfffffff9);
            // the helper takes nr_loops as a u32 and returns -E2BIG as a long. Which one runs
            // is the verifier's choice: a fresh condition, so that either may.
            let r1 = self.reg(1);
            let r1 = self.scalar(&r1);
            let inl = self.fresh("Bool", "loop_inlined");
            let nr = self.def(
                "(_ BitVec 64)",
                &format!("(ite {inl} {r1} ((_ zero_extend 32) ((_ extract 31 0) {r1})))"),
            );
            let r4 = self.reg(4);
            let flags = self.scalar(&r4);
            let ok = format!("(and (= {flags} {}) (bvule {nr} {max}))", bv64(0));
            if matches!(kind, EdgeKind::Call | EdgeKind::CallSummary) {
                let ctx = self.reg(3);
                let summary =
                    (kind == EdgeKind::CallSummary).then(|| self.fresh("(_ BitVec 64)", "loopi"));
                let cond = match &summary {
                    Some(i) => format!("(and {ok} (bvugt {nr} {}) (bvult {i} {nr}))", bv64(0)),
                    None => format!("(and {ok} (bvugt {nr} {}))", bv64(0)),
                };
                self.loops.push(LoopCall {
                    nr: nr.clone(),
                    ctx,
                    calls: 0,
                    summary,
                });
                (cond, None)
            } else {
                let r0 = format!(
                    "(ite (not (= {flags} {})) {} (ite (bvugt {nr} {max}) (ite {inl} {} {}) {}))",
                    bv64(0),
                    bv64(-22i64 as u64),
                    bv64(0xffff_fff9),
                    bv64(-7i64 as u64),
                    bv64(0)
                );
                let r0 = self.def("(_ BitVec 64)", &r0);
                (
                    format!("(or (not {ok}) (= {nr} {}))", bv64(0)),
                    Some(V::S(r0)),
                )
            }
        };
        let c = self.def("Bool", &cond);
        let _ = writeln!(self.out, "(assert (! {c} :named a{k}))");
        self.asserts.push((k, c));
        match r0 {
            Some(r0) => {
                for r in 1..=5 {
                    let v = self.fresh64("clob");
                    self.set(r, v);
                }
                self.set(0, r0);
            }
            None => {
                // The callback's frame: r1 = i, r2 = ctx, the caller's r6–r9 saved. A summary's
                // one call is any of the calls: i is any index below nr_loops, and what the
                // calls before it may have written is unknown.
                let (i, ctx, summary) = {
                    let l = self.loops.last_mut().expect("a bpf_loop in progress");
                    let i = l.calls;
                    l.calls += 1;
                    (i, l.ctx.clone(), l.summary.clone())
                };
                let i = match summary {
                    Some(i) => {
                        self.havoc_all();
                        V::S(i)
                    }
                    None => V::S(bv64(i)),
                };
                self.next_frame += 1;
                let f = self.next_frame;
                let caller = self.frames.last().unwrap();
                let mut regs = caller.regs.clone();
                let saved = [
                    regs[6].clone(),
                    regs[7].clone(),
                    regs[8].clone(),
                    regs[9].clone(),
                ];
                regs[1] = i;
                regs[2] = ctx;
                for r in [0, 3, 4, 5] {
                    regs[r] = V::S(bv64(0));
                }
                regs[10] = V::P(Region::Stack(f), bv64(0), Some(0));
                let mut fr = Frame::new(f, regs, Some(saved));
                fr.callback = true;
                self.frames.push(fr);
            }
        }
    }

    pub(crate) fn offset(&mut self, base: &V, off: i64) -> V {
        if off == 0 {
            return base.clone();
        }
        self.alu(AluOp::Add, true, base.clone(), V::S(bv64(off as u64)))
    }
}

/// Whether a map's keys are positions below its size, so that a query may compare a key with
/// its size (`Sym::array_size`): arrays, arrays of maps, and the redirect maps indexed by
/// position (`devmap`, `cpumap`, `xskmap`; not `devmap_hash`). A map declared with
/// `max_entries 0` among these gets the size term `msz<m>` in every query, whichever of its
/// uses the path takes (xdp-bench's `cpumap` programs redirect through an unsized `cpu_map`).
pub fn sized_by_index(def: &crate::load::MapDef) -> bool {
    def.is_array()
        || matches!(
            def.map_type,
            crate::load::MAP_ARRAY_OF_MAPS | MAP_DEVMAP | MAP_CPUMAP | MAP_XSKMAP
        )
}

/// The SMT-LIB2 query for the path that executes `steps` (instruction index, how it leaves),
/// in order; `min_len`..=`max_len` bounds the received packet.
pub fn query(p: &Program, steps: &[(u32, EdgeKind)], min_len: u64, max_len: u64) -> Query {
    match query_until(p, steps, min_len, max_len, |_, _| false) {
        Ok(q) => q,
        Err(_) => unreachable!("a query that is never stopped"),
    }
}

/// [`query`], told every branch assertion as it is made (its position on the path and its
/// text): when `stop` says so, the symbolic execution ends there and the position is returned
/// (the search stops at a known conflict's last condition, without building the rest of a long
/// path's query: on a UPF program of 8,000 instructions, 95 % of a search went into the text
/// of paths that a conflict near their start refuted).
pub fn query_until(
    p: &Program,
    steps: &[(u32, EdgeKind)],
    min_len: u64,
    max_len: u64,
    mut stop: impl FnMut(usize, &str) -> bool,
) -> Result<Query, usize> {
    let mut s = Sym {
        p,
        out: String::new(),
        n: 0,
        frames: Vec::new(),
        next_frame: 0,
        pkt: "pkt0".into(),
        data_off: bv64(0),
        end_off: "len".into(),
        meta_off: bv64(0),
        mem: (0..p.maps.len()).map(|m| format!("m{m}_0")).collect(),
        present: (0..p.maps.len()).map(|m| format!("p{m}_0")).collect(),
        lookups: Vec::new(),
        value_reads: Vec::new(),
        ctx: Vec::new(),
        sizes: Vec::new(),
        env: Vec::new(),
        prefer: Vec::new(),
        ret: None,
        defined: Default::default(),
        asserts: Vec::new(),
        tails: 0,
        loops: Vec::new(),
        resumed: None,
        inner: (0..p.maps.len() as u32)
            .filter(|&m| p.outer_of(m).is_some())
            .collect(),
    };
    let _ = writeln!(
        s.out,
        "(declare-const pkt0 (Array (_ BitVec 64) (_ BitVec 8)))"
    );
    let _ = writeln!(s.out, "(declare-const len (_ BitVec 64))");
    let _ = writeln!(
        s.out,
        "(assert (! (and (bvuge len {}) (bvule len {})) :named len_range))",
        bv64(min_len),
        bv64(max_len)
    );
    for (m, def) in p.maps.iter().enumerate() {
        let (ks, sort) = s.map_sort(m as u32);
        let _ = writeln!(s.out, "(declare-const m{m}_0 {sort})");
        let _ = writeln!(s.out, "(declare-const p{m}_0 (Array (_ BitVec {ks}) Bool))");
        if def.max_entries == 0 && sized_by_index(def) {
            let _ = writeln!(s.out, "(declare-const msz{m} (_ BitVec {ks}))");
            let _ = writeln!(s.out, "(assert (bvuge msz{m} (_ bv1 {ks})))");
            s.sizes.push(MapSize {
                map: def.name.clone(),
                size: format!("msz{m}"),
                bits: ks,
            });
        }
        if def.frozen && !def.data.is_empty() {
            // Read-only data: its bytes are constants.
            for (i, b) in def.data.iter().enumerate() {
                let _ = writeln!(
                    s.out,
                    "(assert (= (select m{m}_0 (concat (_ bv0 {ks}) (_ bv{i} 32))) #x{b:02x}))"
                );
            }
        }
    }
    let mut regs: [V; 11] = std::array::from_fn(|_| V::S(bv64(0)));
    for (r, slot) in regs.iter_mut().enumerate() {
        *slot = V::S(format!("r{r}_in"));
        let _ = writeln!(s.out, "(declare-const r{r}_in (_ BitVec 64))");
    }
    regs[1] = V::Ctx;
    regs[10] = V::P(Region::Stack(0), bv64(0), Some(0));
    s.frames.push(Frame::new(0, regs, None));
    let mut told = 0;
    for (k, &(pc, kind)) in steps.iter().enumerate() {
        let insn = p.code[pc as usize].expect("instruction");
        s.step(&insn, kind, k);
        for (at, text) in &s.asserts[told..] {
            if stop(*at, text) {
                return Err(*at);
            }
        }
        told = s.asserts.len();
    }
    let ret = s.ret.clone().unwrap_or_else(|| bv64(0));
    let ret = s.def("(_ BitVec 64)", &ret);
    for lk in s.lookups.iter_mut().filter(|lk| lk.sparse()) {
        let at = (
            lk.values.clone(),
            if lk.keyed {
                lk.key.clone()
            } else {
                String::new()
            },
        );
        lk.reads = s
            .value_reads
            .iter()
            .filter(|(from, _)| *from == at)
            .map(|(_, pos)| pos.clone())
            .collect();
    }
    Ok(Query {
        smt: s.out,
        len: "len".into(),
        packet: "pkt0".into(),
        ret,
        lookups: s.lookups,
        sizes: s.sizes,
        env: s.env,
        prefer: s.prefer,
        ctx: s.ctx,
        asserts: s.asserts,
    })
}

#[cfg(test)]
mod tests {
    //! Each test builds a small program, takes one path through it and asks Z3 (`z3` from the
    //! project's `.venv`, `make develop`; or $NICSIM_Z3, or `z3` on the PATH) whether the path
    //! is feasible. The kernel's answers are the interpreter's ([`crate::interp`]).
    use super::*;
    use crate::load::MAP_HASH;
    use crate::load::{MapDef, MAP_ARRAY};
    use crate::testasm::*;

    /// The path from instruction 0 that takes each conditional jump as `taken` says, in turn.
    fn walk(p: &Program, taken: &[bool]) -> Vec<(u32, EdgeKind)> {
        let (mut pc, mut k, mut out) = (0usize, 0usize, Vec::new());
        loop {
            let insn = p.code[pc].expect("instruction");
            match insn {
                Insn::Jmp { off, .. } => {
                    let t = taken[k];
                    k += 1;
                    let kind = if t {
                        EdgeKind::Taken
                    } else {
                        EdgeKind::NotTaken
                    };
                    out.push((pc as u32, kind));
                    pc = if t { pc + 1 + off as usize } else { pc + 1 };
                }
                Insn::Ja { off } => {
                    out.push((pc as u32, EdgeKind::Next));
                    pc = (pc as i64 + 1 + off as i64) as usize;
                }
                Insn::Exit => {
                    out.push((pc as u32, EdgeKind::Next));
                    assert_eq!(k, taken.len(), "choices left over");
                    return out;
                }
                Insn::LdImm64 { .. } => {
                    out.push((pc as u32, EdgeKind::Next));
                    pc += 2;
                }
                _ => {
                    out.push((pc as u32, EdgeKind::Next));
                    pc += 1;
                }
            }
        }
    }

    fn q(p: &Program, taken: &[bool]) -> Query {
        query(p, &walk(p, taken), 60, 1514)
    }

    fn feasible(p: &Program, taken: &[bool]) -> bool {
        match z3(&q(p, taken).smt).as_str() {
            "sat" => true,
            "unsat" => false,
            other => panic!("z3: {other}"),
        }
    }

    fn jne(dst: u8, imm: i32, off: i16) -> Slot {
        i(0x55, dst, 0, off, imm)
    }
    fn jne_r(dst: u8, src: u8, off: i16) -> Slot {
        i(0x5d, dst, src, off, 0)
    }
    fn jge(dst: u8, imm: i32, off: i16) -> Slot {
        i(0x35, dst, 0, off, imm)
    }
    fn and(dst: u8, imm: i32) -> Slot {
        i(0x57, dst, 0, 0, imm)
    }
    const XDP_MD_DATA: i16 = 0;
    const XDP_MD_DATA_END: i16 = 4;
    const XDP_MD_DATA_META: i16 = 8;

    /// r2 = data; r6 = pkt[0] & 15 (an index), r7 = pkt[1] (a value); r8 = r10 - 16 + r6
    /// (`&buf[r6]` with `buf` at r10 - 16): a stack pointer with a computed offset. One branch
    /// (the packet's length).
    fn prologue() -> Vec<Slot> {
        vec![
            ldx(W, 2, 1, XDP_MD_DATA),
            ldx(W, 3, 1, XDP_MD_DATA_END),
            movr(4, 2),
            add(4, 2),
            jgt_r(4, 3, 100),
            ldx(B, 6, 2, 0),
            and(6, 15),
            ldx(B, 7, 2, 1),
            movr(8, 10),
            add(8, -16),
            addr(8, 6),
        ]
    }

    /// `prologue`, `body`, then `if r0 != r9 goto +2; r0 = 2; exit; r0 = 1; exit` (with the
    /// out-of-range target of the prologue's branch never taken).
    fn program(body: &[Slot], maps: Vec<MapDef>) -> Program {
        let mut s = prologue();
        s.extend_from_slice(body);
        s.extend([jne_r(0, 9, 2), mov(0, 2), exit(), mov(0, 1), exit()]);
        let n = s.len();
        // The prologue's length check jumps to the last `exit`.
        s[4] = jgt_r(4, 3, (n - 5 - 1) as i16);
        prog(&s, maps)
    }

    #[test]
    fn a_load_at_a_computed_offset_reads_what_a_store_there_wrote() {
        // buf[i] = v; r0 = buf[i]; r9 = v.
        let p = program(&[stx(B, 8, 7, 0), ldx(B, 0, 8, 0), movr(9, 7)], Vec::new());
        // r0 == r9 must hold: the path where they differ is infeasible.
        assert!(feasible(&p, &[false, false]));
        assert!(!feasible(&p, &[false, true]));
        // Programs without computed stack offsets get no stack arrays.
        let plain = program(
            &[stx(B, 10, 7, -16), ldx(B, 0, 10, -16), movr(9, 7)],
            Vec::new(),
        );
        assert!(!q(&plain, &[false, false]).smt.contains("stka"));
        assert!(!feasible(&plain, &[false, true]));
        assert!(q(&p, &[false, false]).smt.contains("stka"));
        // A pointer spilled before or after such a store is still a pointer when reloaded:
        // r0 = ((u8 *)data)[1] through it is v.
        for body in [
            [stx(DW, 10, 2, -32), stx(B, 8, 7, 0), ldx(DW, 5, 10, -32)],
            [stx(B, 8, 7, 0), stx(DW, 10, 2, -32), ldx(DW, 5, 10, -32)],
        ] {
            let mut body = body.to_vec();
            body.extend([ldx(B, 0, 5, 1), movr(9, 7)]);
            let p = program(&body, Vec::new());
            assert!(feasible(&p, &[false, false]) && !feasible(&p, &[false, true]));
        }
    }

    #[test]
    fn constant_and_computed_offsets_see_each_others_stores() {
        // buf[0..8] = 0x11 per byte (constant offset), then buf[i] = v (computed), then
        // r0 = buf[3] (constant): v when i == 3, else 0x11.
        let body = [
            ld64(5, 0x1111_1111_1111_1111)[0],
            ld64(5, 0x1111_1111_1111_1111)[1],
            stx(DW, 10, 5, -16),
            stx(B, 8, 7, 0),
            ldx(B, 0, 10, -13),
            mov(9, 0x11),
            jne(6, 3, 1),
            movr(9, 7),
        ];
        let p = program(&body, Vec::new());
        // [length, i != 3, r0 != r9]
        assert!(feasible(&p, &[false, true, false]));
        assert!(!feasible(&p, &[false, true, true]));
        assert!(feasible(&p, &[false, false, false]));
        assert!(!feasible(&p, &[false, false, true]));
        // A constant-offset store after the computed one wins: buf[3] = 0x22, then r0 =
        // buf[i] is 0x22 when i == 3, else v (for i < 8; buf[8..16] was never written).
        let body = [
            stx(B, 8, 7, 0),
            st(B, 10, -13, 0x22),
            ldx(B, 0, 8, 0),
            movr(9, 7),
            jne(6, 3, 1),
            mov(9, 0x22),
        ];
        let p = program(&body, Vec::new());
        assert!(!feasible(&p, &[false, true, true]));
        assert!(!feasible(&p, &[false, false, true]));
        assert!(feasible(&p, &[false, false, false]));
        // Overwritten by a computed-offset store, a constant-offset byte is no longer known:
        // buf[3] = 0x22; buf[i] = v; r0 = buf[3] differs from 0x22 exactly when i == 3 and
        // v != 0x22.
        let body = [
            st(B, 10, -13, 0x22),
            stx(B, 8, 7, 0),
            ldx(B, 0, 10, -13),
            mov(9, 0x22),
        ];
        let p = program(&body, Vec::new());
        assert!(feasible(&p, &[false, true]));
    }

    #[test]
    fn map_keys_read_stack_bytes_written_at_computed_offsets() {
        // key (r10-16, 4 bytes) = 0; buf[i] = v with i == 0 on the path; r0 = lookup(array
        // of 4, &key): null exactly when v >= 4.
        let mut body = vec![
            st(W, 10, -16, 0),
            jne(6, 0, 100),
            stx(B, 8, 7, 0),
            mov(9, 0),
            jge(7, 4, 1),
            mov(9, 1),
        ];
        body.extend(ld_map(1, 0));
        body.extend([movr(2, 10), add(2, -16), call(1), jeq(0, 0, 1), mov(0, 1)]);
        let maps = vec![map("a", MAP_ARRAY, 4, 8, 4)];
        let p = program(&body, maps.clone());
        // Branches: length, i != 0, v >= 4, r0 == null, r0 != r9.
        // v >= 4 and found: infeasible; v < 4 and null: infeasible.
        assert!(!feasible(&p, &[false, false, true, false, false]));
        assert!(!feasible(&p, &[false, false, false, true, true]));
        assert!(feasible(&p, &[false, false, true, true, false]));
        assert!(feasible(&p, &[false, false, false, false, false]));
        // Found, r0 = 1 = r9.
        assert!(!feasible(&p, &[false, false, false, false, true]));
    }

    #[test]
    fn a_ring_buffer_record_is_checked_for_null_as_a_lookup_is() {
        // r0 = ringbuf_reserve(rb, 16, 0); if r0 == 0 goto +k; *(u64 *)r0 = v; r0 = *r0;
        // submit; r9 = 1, r0 = 1 (found) or r9 = 0, r0 = 0 (NULL).
        let mut body = ld_map(1, 0).to_vec();
        body.extend([mov(2, 16), mov(3, 0), call(131), mov(9, 0), jeq(0, 0, 6)]);
        body.extend([
            stx(DW, 0, 7, 0),
            ldx(DW, 5, 0, 0),
            movr(1, 0),
            mov(2, 0),
            call(132),
            mov(9, 1),
        ]);
        body.extend([jne(9, 1, 1), mov(0, 1)]);
        let maps = vec![map("rb", crate::interp::MAP_RINGBUF, 0, 0, 4096)];
        let p = program(&body, maps);
        // Branches: length, r0 == NULL, r9 != 1, r0 != r9. Both outcomes of the reservation
        // are possible; on each, r0 ends equal to r9 (submit's r0 is 0, then r0 = 1).
        assert!(feasible(&p, &[false, true, true, false]));
        assert!(feasible(&p, &[false, false, false, false]));
        assert!(!feasible(&p, &[false, false, false, true]));
        // After a NULL record r9 stays 0: r9 != 1 is taken.
        assert!(!feasible(&p, &[false, true, false, false]));
    }

    #[test]
    fn xdp_load_and_store_bytes_copy_exactly_or_fail_as_the_kernel_says() {
        // load_bytes(ctx, off, r10-32, 1), then r0 = the byte at r10-32 (0x55 before).
        let load = |off: i32, want: Slot| {
            let body = [
                st(B, 10, -32, 0x55),
                mov(2, off),
                movr(3, 10),
                add(3, -32),
                mov(4, 1),
                call(189),
                ldx(B, 0, 10, -32),
                want,
            ];
            program(&body, Vec::new())
        };
        // Offset 1 is in every packet: the byte is pkt[1] (r7).
        let p = load(1, movr(9, 7));
        assert!(feasible(&p, &[false, false]) && !feasible(&p, &[false, true]));
        // Offset 60 is past a 60-byte packet (the byte stays 0x55), in a longer one.
        let p = load(60, mov(9, 0x55));
        assert!(feasible(&p, &[false, false]) && feasible(&p, &[false, true]));
        // The result: -EFAULT above 0xffff.
        let body = [
            mov(2, 0x10000),
            movr(3, 10),
            add(3, -32),
            mov(4, 1),
            call(189),
            mov(9, -14),
        ];
        let p = program(&body, Vec::new());
        assert!(feasible(&p, &[false, false]) && !feasible(&p, &[false, true]));
        // store_bytes(ctx, 0, r10-32, 1) of 0x66, then r0 = data[0] (ctx spilled across).
        let body = [
            stx(DW, 10, 1, -48),
            st(B, 10, -32, 0x66),
            mov(2, 0),
            movr(3, 10),
            add(3, -32),
            mov(4, 1),
            call(190),
            ldx(DW, 1, 10, -48),
            ldx(W, 2, 1, 0),
            ldx(B, 0, 2, 0),
            mov(9, 0x66),
        ];
        let p = program(&body, Vec::new());
        assert!(feasible(&p, &[false, false]) && !feasible(&p, &[false, true]));
        // A length that is not a constant: the buffer's byte is unknown (both ways feasible).
        let body = [
            st(B, 10, -32, 0x55),
            mov(2, 0),
            movr(3, 10),
            add(3, -32),
            movr(4, 6),
            add(4, 1),
            call(189),
            ldx(B, 0, 10, -32),
            mov(9, 0x55),
        ];
        let p = program(&body, Vec::new());
        assert!(feasible(&p, &[false, false]) && feasible(&p, &[false, true]));
    }

    #[test]
    fn fib_lookup_gives_the_kernels_results_and_fresh_fields() {
        // r0 = fib_lookup(ctx, r10-64, plen, 0) over a buffer whose byte 8 is 0x55.
        let fib = |plen: i32, tail: &[Slot]| {
            let mut body = vec![
                st(B, 10, -56, 0x55),
                movr(2, 10),
                add(2, -64),
                mov(3, plen),
                mov(4, 0),
                call(69),
            ];
            body.extend_from_slice(tail);
            program(&body, Vec::new())
        };
        let r0_can_be = |plen, v| feasible(&fib(plen, &[mov(9, v)]), &[false, false]);
        for v in [0, 4, 9, -22, -19, -97] {
            assert!(r0_can_be(64, v), "{v}");
        }
        for v in [10, 11, -1, -14] {
            assert!(!r0_can_be(64, v), "{v}");
        }
        assert!(r0_can_be(8, -22) && !r0_can_be(8, 0));
        // The fields: any value after a lookup, unchanged after a short plen.
        let byte = |plen| fib(plen, &[ldx(B, 0, 10, -56), mov(9, 0x55)]);
        assert!(feasible(&byte(64), &[false, true]) && feasible(&byte(64), &[false, false]));
        assert!(!feasible(&byte(8), &[false, true]));
    }

    #[test]
    fn event_and_time_helpers_give_fresh_values_and_locks_zero() {
        // r0 = helper(); if r0 != r9 ...: with r9 = 7 both ways are feasible for fresh
        // results (coarse time, perf and ring buffer output), only "equal 0" for the locks.
        for (h, fresh) in [
            (160, true),
            (25, true),
            (130, true),
            (93, false),
            (94, false),
        ] {
            let mut body = vec![mov(9, 7), movr(1, 10), add(1, -8)];
            if h == 25 || h == 130 {
                body.extend(ld_map(2, 0));
            }
            body.push(call(h));
            let maps = vec![map("ev", 4, 4, 4, 1)];
            let p = program(&body, maps);
            assert_eq!(feasible(&p, &[false, false]), fresh, "helper {h}");
            assert!(feasible(&p, &[false, true]), "helper {h}");
        }
    }

    /// r0 = helper(ctx, delta) after `pre` (ctx in r6); then `if r0 != 0 goto fail` (see
    /// [`ends`]).
    fn adjust(pre: &[Slot], helper: i32, delta: i32) -> Program {
        let mut s = vec![movr(6, 1)];
        s.extend_from_slice(pre);
        s.extend([movr(1, 6), mov(2, delta), call(helper), jne(0, 0, 100)]);
        prog(&ends(s), Vec::new())
    }

    #[test]
    fn adjust_head_grows_by_the_headroom_less_struct_xdp_frame() {
        let ok = |pre: &[Slot], delta| feasible(&adjust(pre, 44, delta), &[false]);
        let fails = |pre: &[Slot], delta| feasible(&adjust(pre, 44, delta), &[true]);
        assert!(ok(&[], -216) && !fails(&[], -216));
        assert!(!ok(&[], -217) && fails(&[], -217));
        // Shrinking leaves at least ETH_HLEN bytes of a packet of at least 60.
        assert!(ok(&[], 46) && !fails(&[], 46));
        assert!(ok(&[], 47) && fails(&[], 47));
        // Metadata in front of data takes from the room (adjust_meta -8 succeeds).
        let meta = [movr(1, 6), mov(2, -8), call(54)];
        assert!(ok(&meta, -208) && !fails(&meta, -208));
        assert!(!ok(&meta, -209) && fails(&meta, -209));
        // adjust_meta: multiples of 4 up to 32 bytes (interp.rs: adjust_head_limits_...).
        let m = |delta| {
            (
                feasible(&adjust(&[], 54, delta), &[false]),
                feasible(&adjust(&[], 54, delta), &[true]),
            )
        };
        assert_eq!(
            (m(-32), m(-36), m(-6), m(1)),
            ((true, false), (false, true), (false, true), (false, true))
        );
    }

    #[test]
    fn data_meta_is_data_until_metadata_is_added() {
        // r0 = data - data_meta: 0, then 8 after adjust_meta(-8).
        let diff = |pre: &[Slot], want: i32| {
            let mut s = vec![movr(6, 1)];
            s.extend_from_slice(pre);
            s.extend([
                ldx(W, 2, 6, XDP_MD_DATA),
                ldx(W, 3, 6, XDP_MD_DATA_META),
                movr(0, 2),
                i(0x1f, 0, 3, 0, 0), // r0 -= r3
                jne(0, want, 2),
                mov(0, 2),
                exit(),
                mov(0, 1),
                exit(),
            ]);
            let p = prog(&s, Vec::new());
            (feasible(&p, &[false]), feasible(&p, &[true]))
        };
        assert_eq!(diff(&[], 0), (true, false));
        let meta = [movr(1, 6), mov(2, -8), call(54)];
        // Only its success is on the path's branches: the difference is 8 or 0.
        assert_eq!(diff(&meta, 8), (true, false));
    }

    #[test]
    fn adjust_tail_ends_where_the_frame_ends() {
        // At least 60 bytes received, at most 3520 after growing: +3460 may succeed, +3461 not.
        let ok = |delta| feasible(&adjust(&[], 65, delta), &[false]);
        assert!(ok(3460) && !ok(3461));
        // Moving data to the front by 100 bytes leaves the frame's end where it was.
        let head = [movr(1, 6), mov(2, -100), call(44), jne(0, 0, 100)];
        assert!(feasible(&adjust(&head, 65, 3460), &[false, false]));
        assert!(!feasible(&adjust(&head, 65, 3461), &[false, false]));
    }

    /// key (4 bytes at r10-4) = `key`, value (8 bytes at r10-16) = 7;
    /// r0 = update(map 0, &key, &value, flags).
    fn update(key: i32, flags: i32) -> Vec<Slot> {
        let mut s = vec![st(W, 10, -4, key), st(DW, 10, -16, 7)];
        s.extend(ld_map(1, 0));
        s.extend([
            movr(2, 10),
            add(2, -4),
            movr(3, 10),
            add(3, -16),
            mov(4, flags),
            call(2),
        ]);
        s
    }
    /// r0 = lookup(map 0, &key at r10-4).
    fn lookup() -> Vec<Slot> {
        let mut s = ld_map(1, 0).to_vec();
        s.extend([movr(2, 10), add(2, -4), call(1)]);
        s
    }
    /// `s`, then `r0 = 2; exit; fail: r0 = 1; exit`; conditional jumps by 100 in `s` go to
    /// `fail`.
    fn ends(mut s: Vec<Slot>) -> Vec<Slot> {
        s.extend([mov(0, 2), exit(), mov(0, 1), exit()]);
        let fail = s.len() - 2;
        for (j, x) in s.iter_mut().enumerate() {
            let off = i16::from_le_bytes([x[2], x[3]]);
            if x[0] & 7 == 5 && x[0] != 0x85 && off == 100 {
                [x[2], x[3]] = ((fail - j - 1) as i16).to_le_bytes();
            }
        }
        s
    }

    #[test]
    fn array_updates_fail_only_as_the_kernel_says() {
        let maps = vec![map("a", MAP_ARRAY, 4, 8, 4)];
        // `if r0 != want goto fail`
        let res = |key, flags, want: i32| {
            let mut s = update(key, flags);
            s.push(jne(0, want, 2));
            let p = prog(&ends(s), maps.clone());
            (feasible(&p, &[false]), feasible(&p, &[true]))
        };
        assert_eq!(res(3, 0, 0), (true, false)); // BPF_ANY, in range: always 0
        assert_eq!(res(3, 2, 0), (true, false)); // BPF_EXIST
        assert_eq!(res(4, 0, -7), (true, false)); // past the end: -E2BIG
        assert_eq!(res(3, 1, -17), (true, false)); // BPF_NOEXIST: -EEXIST
        assert_eq!(res(3, 3, -22), (true, false)); // unknown flags: -EINVAL
        assert_eq!(res(3, 4, -22), (true, false)); // BPF_F_LOCK without a lock: -EINVAL
                                                   // A failed update leaves the value: after update(key 4, ...) the lookup of key 3
                                                   // still reads its old contents; after a good one, 7.
        let mut s = update(3, 0);
        s.extend(lookup());
        s.extend([ldx(DW, 1, 0, 0), jne(1, 7, 2)]);
        let p = prog(&ends(s), maps.clone());
        assert!(!feasible(&p, &[true]));
        let mut s = update(3, 1);
        s.extend(lookup());
        s.extend([ldx(DW, 1, 0, 0), jne(1, 7, 2)]);
        let p = prog(&ends(s), maps);
        assert!(feasible(&p, &[true]));
    }

    #[test]
    fn hash_updates_may_fail_and_then_change_nothing() {
        let maps = vec![map("h", MAP_HASH, 4, 8, 2)];
        // lookup(k) == null; r0 = update(k, BPF_ANY); if r0 != 0 (failed) ...; lookup(k) null?
        let path = |failed: bool, found_after: bool| {
            let mut s = vec![st(W, 10, -4, 1)];
            s.extend(lookup());
            s.push(jne(0, 0, 100));
            s.extend(update(1, 0));
            s.push(jne(0, 0, 0));
            s.extend(lookup());
            s.push(jeq(0, 0, 0));
            let p = prog(&ends(s), maps.clone());
            feasible(&p, &[false, failed, !found_after])
        };
        // A new key may not fit (the map may be full); then it is still absent.
        assert!(path(false, true) && !path(false, false));
        assert!(path(true, false) && !path(true, true));
        // BPF_NOEXIST on a present key: -EEXIST, never 0; BPF_EXIST on an absent one: -ENOENT.
        let flags = |present: bool, flags: i32, want: i32| {
            let mut s = vec![st(W, 10, -4, 1)];
            s.extend(lookup());
            s.push(jeq(0, 0, 0));
            s.extend(update(1, flags));
            s.push(jne(0, want, 100));
            let p = prog(&ends(s), maps.clone());
            feasible(&p, &[!present, false])
        };
        assert!(flags(true, 1, -17) && !flags(true, 1, 0));
        assert!(flags(false, 2, -2) && !flags(false, 2, 0));
        // BPF_ANY on a present key: 0; on an absent one, 0 if there is room.
        assert!(flags(true, 0, 0) && !flags(true, 0, -7));
        assert!(flags(false, 0, 0) && flags(false, 0, -7));
        // Deleting: 0 when present, else -ENOENT; absent afterwards.
        let delete = |present: bool, want: i32, found_after: bool| {
            let mut s = vec![st(W, 10, -4, 1)];
            s.extend(lookup());
            s.push(jeq(0, 0, 0));
            s.extend(ld_map(1, 0));
            s.extend([movr(2, 10), add(2, -4), call(3), jne(0, want, 100)]);
            s.extend(lookup());
            s.push(jeq(0, 0, 0));
            let p = prog(&ends(s), maps.clone());
            feasible(&p, &[!present, false, !found_after])
        };
        assert!(delete(true, 0, false) && !delete(true, -2, false) && !delete(true, 0, true));
        assert!(delete(false, -2, false) && !delete(false, 0, false));
    }

    /// A program that tail-calls through prog array 0 with `index` (its slots: `slots`, slot →
    /// entry), then returns XDP_PASS; `index` is the instruction at 5 (the packet's first byte
    /// by default). Targets follow at 13: `r0 = 1; exit`.
    fn tail_prog(index: Slot, slots: &[(u32, u32)]) -> Program {
        let mut code: Vec<Slot> = vec![
            ldx(W, 2, 1, 0),
            ldx(W, 3, 1, 4),
            movr(4, 2),
            add(4, 1),
            jgt_r(4, 3, 6),
            index,
        ];
        code.extend(ld_map(2, 0));
        code.extend([
            call(12),
            mov(0, 2),
            exit(),
            mov(0, 0),
            exit(),
            mov(0, 1),
            exit(),
        ]);
        let mut p = prog(&code, vec![map("jt", crate::load::MAP_PROG_ARRAY, 4, 4, 4)]);
        tail_targets(&mut p, slots);
        p
    }

    /// Prog array 0 holds `slots` (slot → entry instruction), each entry a target of its own.
    fn tail_targets(p: &mut Program, slots: &[(u32, u32)]) {
        p.tail_targets = slots
            .iter()
            .map(|&(_, e)| crate::load::TailTarget {
                section: "xdp".into(),
                name: format!("t{e}"),
                entry: e,
                object: String::new(),
                maps: Vec::new(),
            })
            .collect();
        p.prog_arrays.insert(
            0,
            crate::load::ProgArray::Known(
                slots
                    .iter()
                    .enumerate()
                    .map(|(t, &(k, _))| (k, t))
                    .collect(),
            ),
        );
        p.main_len = 13.min(p.raw.len());
    }

    fn sat(p: &Program, steps: &[(u32, EdgeKind)]) -> bool {
        match z3(&query(p, steps, 60, 1514).smt).as_str() {
            "sat" => true,
            "unsat" => false,
            other => panic!("z3: {other}"),
        }
    }

    #[test]
    fn a_summarised_bpf_loop_call_is_any_of_its_calls() {
        // The summary's one call of the callback, which stops (returns 1) when i == stop.
        let path = |p: &Program| {
            let t = [
                0u32, 1, 2, 4, 5, 6, 7, 12, 13, 14, 15, 16, 18, 19, 7, 8, 9, 10, 11,
            ];
            let mut s = steps_of(p, &t);
            assert_eq!(s[6], (7, EdgeKind::Call));
            s[6].1 = EdgeKind::CallSummary;
            s
        };
        // i = 3 is one of the 5 calls' (the first call's i is 0), i = 7 none of them.
        let p = prog(&loop_slots(5, 0, 3), Vec::new());
        assert!(sat(&p, &path(&p)));
        let p = prog(&loop_slots(5, 0, 7), Vec::new());
        assert!(!sat(&p, &path(&p)));
        // What the calls wrote through the context (the caller's stack, read back after the
        // loop into r0's low bits) and how many calls were made are unknown afterwards.
        let p = prog(&loop_slots(5, 0, 3), Vec::new());
        let q = query(&p, &path(&p), 60, 1514);
        for v in [3u64, 0x1234] {
            let smt = format!("{}(assert (= {} {}))\n", q.smt, q.ret, bv64(v));
            assert_eq!(z3(&smt), "sat", "{v:#x}");
        }
    }

    #[test]
    fn bpf_loop_paths_are_feasible_exactly_as_the_interpreter_takes_them() {
        use crate::interp::{run, MapState, RunOptions};
        let trace = |p: &Program| {
            let o = run(p, &[0; 64], &mut MapState::new(p), &RunOptions::default()).unwrap();
            (steps_of(p, &o.trace), o.retval)
        };
        let ret_is = |p: &Program, steps: &[(u32, EdgeKind)], v: u64| {
            let q = query(p, steps, 60, 1514);
            let smt = format!("{}(assert (not (= {} {})))\n", q.smt, q.ret, bv64(v));
            z3(&smt) == "unsat"
        };
        for (nr, flags, stop) in [(5, 0, 100), (5, 0, 2), (0, 0, 100), (3, 1, 100)] {
            let p = prog(&loop_slots(nr, flags, stop), Vec::new());
            let (steps, r0) = trace(&p);
            assert!(sat(&p, &steps), "{nr} {flags} {stop}");
            assert!(ret_is(&p, &steps, r0), "{nr} {flags} {stop}: r0 {r0:#x}");
        }
        // 5 calls where the callback stops at i = 2: the path of 5 calls is infeasible, and
        // so is the path of 3 calls when it never stops (nr_loops 5).
        let (five, _) = trace(&prog(&loop_slots(5, 0, 100), Vec::new()));
        let (three, _) = trace(&prog(&loop_slots(5, 0, 2), Vec::new()));
        assert!(!sat(&prog(&loop_slots(5, 0, 2), Vec::new()), &five));
        assert!(!sat(&prog(&loop_slots(5, 0, 100), Vec::new()), &three));
        // The callback returns 1 at i = 2 and the loop calls it again: infeasible.
        let go_on: Vec<u32> = [12, 13, 14, 15, 16, 17, 7].to_vec();
        let stop: Vec<u32> = [12, 13, 14, 15, 16, 18, 19, 7].to_vec();
        let mut t = vec![0, 1, 2, 4, 5, 6, 7];
        for seg in [&go_on, &go_on, &stop, &go_on, &go_on] {
            t.extend(seg);
        }
        t.extend([8, 9, 10, 11]);
        let p = prog(&loop_slots(5, 0, 2), Vec::new());
        assert!(!sat(&p, &steps_of(&p, &t)));
        // Above BPF_MAX_LOOPS: no call, -E2BIG either as the helper (a long) or as the
        // verifier's inlined loop (a 32-bit move) gives it.
        let p = prog(&loop_slots((1 << 23) + 1, 0, 100), Vec::new());
        let (steps, r0) = trace(&p);
        assert_eq!(r0, 0xffff_fff9u64 << 16);
        assert!(sat(&p, &steps));
        let q = query(&p, &steps, 60, 1514);
        for v in [0xffff_fff9u64 << 16, (-7i64 as u64) << 16] {
            let smt = format!("{}(assert (= {} {}))\n", q.smt, q.ret, bv64(v));
            assert_eq!(z3(&smt), "sat", "{v:#x}");
        }
    }

    #[test]
    fn a_tail_call_jumps_for_the_slots_it_holds_and_returns_otherwise() {
        use crate::interp::{run, MapState, RunOptions};
        let p = tail_prog(ldx(B, 3, 2, 0), &[(1, 13)]);
        // The interpreter: slot 1 runs the target (XDP_DROP); slot 0 is empty, 7 past the array.
        for (b, want) in [(1u8, 1u64), (0, 2), (7, 2)] {
            let mut m = MapState::new(&p);
            let mut pkt = vec![0u8; 60];
            pkt[0] = b;
            let o = run(&p, &pkt, &mut m, &RunOptions::default()).unwrap();
            assert_eq!(o.retval, want, "index {b}");
        }
        // The graph: the call's edges are the return and the jump into slot 1 at depth 0.
        let g = crate::cfg::build(&p, crate::cfg::Limits::default()).unwrap();
        let call = g.nodes.iter().find(|n| n.pc == 8).unwrap();
        let kinds: Vec<(EdgeKind, u32)> = call
            .succ
            .iter()
            .map(|e| (e.kind, g.nodes[e.to as usize].pc))
            .collect();
        assert_eq!(
            kinds,
            [
                (EdgeKind::Next, 9),
                (EdgeKind::TailCall { map: 0, slot: 1 }, 13)
            ]
        );
        assert!(g.nodes.iter().filter(|n| n.pc >= 13).all(|n| n.depth == 0));
        // Symbolically: both edges are feasible with a packet index; with the index 1, only the
        // jump is.
        let head: Vec<(u32, EdgeKind)> = vec![
            (0, EdgeKind::Next),
            (1, EdgeKind::Next),
            (2, EdgeKind::Next),
            (3, EdgeKind::Next),
            (4, EdgeKind::NotTaken),
            (5, EdgeKind::Next),
            (6, EdgeKind::Next),
        ];
        let jump = [
            (8, EdgeKind::TailCall { map: 0, slot: 1 }),
            (13, EdgeKind::Next),
            (14, EdgeKind::Next),
        ];
        let ret = [
            (8, EdgeKind::Next),
            (9, EdgeKind::Next),
            (10, EdgeKind::Next),
        ];
        let path = |tail: &[(u32, EdgeKind)]| [head.as_slice(), tail].concat();
        assert!(sat(&p, &path(&jump)) && sat(&p, &path(&ret)));
        let one = tail_prog(mov(3, 1), &[(1, 13)]);
        assert!(sat(&one, &path(&jump)) && !sat(&one, &path(&ret)));
        let two = tail_prog(mov(3, 2), &[(1, 13)]);
        assert!(!sat(&two, &path(&jump)) && sat(&two, &path(&ret)));
        // A prog array whose contents are not known is empty for the interpreter, has no jump
        // in the graph, and makes the program unbounded.
        let mut unknown = tail_prog(ldx(B, 3, 2, 0), &[]);
        unknown
            .prog_arrays
            .insert(0, crate::load::ProgArray::Unknown);
        assert_eq!(unknown.unbounded_prog_arrays(), ["jt"]);
        assert!(p.unbounded_prog_arrays().is_empty());
    }

    #[test]
    fn a_program_that_tail_calls_itself_stops_after_33_calls() {
        use crate::interp::{run, MapState, RunOptions};
        // r2 = prog array; r3 = 0; tail_call; r0 = XDP_PASS; exit — slot 0 holds the program.
        let mut code: Vec<Slot> = ld_map(2, 0).to_vec();
        code.extend([mov(3, 0), call(12), mov(0, 2), exit()]);
        let mut p = prog(&code, vec![map("jt", crate::load::MAP_PROG_ARRAY, 4, 4, 1)]);
        tail_targets(&mut p, &[(0, 0)]);
        p.main_len = p.raw.len();
        let mut m = MapState::new(&p);
        let o = run(&p, &[0; 60], &mut m, &RunOptions::default()).unwrap();
        // 34 runs of `ld_imm64; mov; call` (33 calls jumped), then the return.
        assert_eq!(o.retval, 2);
        assert_eq!(o.trace.len(), 34 * 3 + 2);
        let g = crate::cfg::build(&p, crate::cfg::Limits::default()).unwrap();
        let jumps = g
            .nodes
            .iter()
            .flat_map(|n| &n.succ)
            .filter(|e| matches!(e.kind, EdgeKind::TailCall { .. }))
            .count();
        assert_eq!(jumps, 33);
        let round = [(0, EdgeKind::Next), (2, EdgeKind::Next)];
        let path = |calls: usize| {
            let mut v = Vec::new();
            for _ in 0..calls {
                v.extend(round);
                v.push((3, EdgeKind::TailCall { map: 0, slot: 0 }));
            }
            v.extend(round);
            v.extend([
                (3, EdgeKind::Next),
                (4, EdgeKind::Next),
                (5, EdgeKind::Next),
            ]);
            v
        };
        assert!(sat(&p, &path(33)));
        assert!(!sat(&p, &path(0)) && !sat(&p, &path(32)));
    }

    #[test]
    fn an_lpm_trie_lookup_finds_the_longest_matching_prefix() {
        use crate::interp::{run, MapState, RunOptions};
        // key = {32, the packet's first 4 bytes}; r0 = *lookup(acl, &key), or 2 without one.
        let mut code: Vec<Slot> = vec![
            ldx(W, 2, 1, 0),
            ldx(W, 3, 1, 4),
            movr(4, 2),
            add(4, 4),
            jgt_r(4, 3, 11),
            ldx(W, 5, 2, 0),
            st(W, 10, -8, 32),
            stx(W, 10, 5, -4),
        ];
        code.extend(ld_map(1, 0));
        code.extend([
            movr(2, 10),
            add(2, -8),
            call(1),
            jeq(0, 0, 2),
            ldx(W, 0, 0, 0),
            exit(),
            mov(0, 2),
            exit(),
        ]);
        let p = prog(&code, vec![map("acl", crate::load::MAP_LPM_TRIE, 8, 4, 16)]);
        let mut maps = MapState::new(&p);
        // 10.0.0.0/8 → 5, 10.1.2.0/24 → 7 (given with host bits set: they do not count).
        maps.set("acl", &[8, 0, 0, 0, 10, 0, 0, 0], &5u32.to_le_bytes())
            .unwrap();
        maps.set("acl", &[24, 0, 0, 0, 10, 1, 2, 99], &7u32.to_le_bytes())
            .unwrap();
        assert!(maps
            .set("acl", &[33, 0, 0, 0, 10, 1, 2, 3], &[0; 4])
            .is_err());
        let keys: Vec<Vec<u8>> = maps
            .entries("acl")
            .unwrap()
            .into_iter()
            .map(|e| e.0)
            .collect();
        assert_eq!(
            keys,
            [
                vec![8, 0, 0, 0, 10, 0, 0, 0],
                vec![24, 0, 0, 0, 10, 1, 2, 0]
            ]
        );
        let found = walk(&p, &[false, false]);
        let missed = walk(&p, &[false, true]);
        for (addr, want) in [
            ([10, 1, 2, 3], 7u64),
            ([10, 9, 9, 9], 5),
            ([11, 1, 2, 3], 2),
        ] {
            let mut pkt = vec![0u8; 60];
            pkt[..4].copy_from_slice(&addr);
            let mut m = maps.clone();
            let o = run(&p, &pkt, &mut m, &RunOptions::default()).unwrap();
            assert_eq!(o.retval, want, "{addr:?}");
            // The query with this case: the path the interpreter took returns what it did, and
            // no other value.
            let w = crate::differential::witness(&p, &maps, &pkt);
            let path = if want == 2 { &missed } else { &found };
            let q = query(&p, path, 60, 1514);
            let check = |ret: u64| {
                let smt = format!("{}(assert (= {} {}))\n", w.apply(&q.smt), q.ret, bv64(ret));
                z3(&smt)
            };
            assert_eq!(check(want), "sat", "{addr:?}");
            for other in [2u64, 5, 7] {
                if other != want {
                    assert_eq!(check(other), "unsat", "{addr:?} returning {other}");
                }
            }
            let other_path = if want == 2 { &found } else { &missed };
            let smt = w.apply(&query(&p, other_path, 60, 1514).smt);
            assert_eq!(z3(&smt), "unsat", "{addr:?} on the other path");
        }
    }
}
