//! Bounds over the paths of the costed graph.
//!
//! The naive bound (paper §5.1) comes first and at once: for every cost component, the
//! longest entry→sink path by that component (one dynamic-programming pass in reverse
//! topological order); the packet rate is the minimum over the components and the MAC of what
//! each sustains at its longest path. This path may be infeasible, which is what the ordered
//! enumeration with feasibility checks improves on.
//!
//! For the bit rate, a path's packets are at least its minimum packet size (MPS) long. Paths
//! are grouped in MPS classes: the class of size s bounds every path whose edges need at most
//! s bytes, and contributes `pps(s) · 8 · s` to the bit-rate bound.

use crate::cost::{Dag, COMPONENTS, NC, UNITS_PER_CYCLE};
use crate::target::Target;

/// Longest path from every node to the sink by component `c`, over edges with `need <= max_need`
/// (`None`: the sink is unreachable). Also the edge that attains it.
pub fn longest_to_sink(dag: &Dag, c: usize, max_need: u32) -> (Vec<Option<u64>>, Vec<u32>) {
    let mut best: Vec<Option<u64>> = vec![None; dag.n];
    let mut via = vec![u32::MAX; dag.n];
    best[dag.sink() as usize] = Some(0);
    for &u in dag.topo.iter().rev() {
        for e in dag.edges(u) {
            if dag.need[e] > max_need {
                continue;
            }
            if let Some(d) = best[dag.to[e] as usize] {
                let v = d.saturating_add(dag.cost[e][c]);
                if best[u as usize].is_none_or(|b| v > b) {
                    best[u as usize] = Some(v);
                    via[u as usize] = e as u32;
                }
            }
        }
    }
    (best, via)
}

/// A rate and what limits it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Packets per second.
    pub pps: f64,
    /// What limits it: `mac`, `cores` or `dram`.
    pub bottleneck: &'static str,
}

/// The packet rate of a path with component costs `cost` (milli-cycles).
pub fn rate_of(t: &Target, cost: &[u64; NC]) -> Rate {
    rate_at(
        t,
        cost[0] as f64 / UNITS_PER_CYCLE,
        cost[1] as f64 / UNITS_PER_CYCLE,
    )
}

/// The packet rate at `core_cycles` program cycles and `dram_cycles` DRAM-engine cycles per
/// packet: the least of the cores', the DRAM engine's and the MAC's. [`rate_of`] is this at a
/// path's cost; a profile's sustained rate is this at its packets' mean cost.
pub fn rate_at(t: &Target, core_cycles: f64, dram_cycles: f64) -> Rate {
    let cores = t.cores_pps(core_cycles);
    let dram = t.dram_pps(dram_cycles);
    let mut r = Rate {
        pps: t.limits.mac_pps,
        bottleneck: "mac",
    };
    for (pps, name) in [(cores, COMPONENTS[0]), (dram, COMPONENTS[1])] {
        if pps < r.pps {
            r = Rate {
                pps,
                bottleneck: name,
            };
        }
    }
    r
}

/// The naive bound and the slowest path behind it.
#[derive(Debug, Clone)]
pub struct Naive {
    /// The bound in packets per second.
    pub pps: f64,
    /// The bound in bits per second.
    pub bps: f64,
    /// What limits the packet rate: `mac`, `cores` or `dram`.
    pub bottleneck: &'static str,
    /// MPS class (bytes) that gives the bit-rate bound.
    pub bps_packet_bytes: u32,
    /// Edges of the slowest path by packet rate.
    pub path: Vec<u32>,
}

/// The edges of the longest path from the entry given `via`.
fn walk(dag: &Dag, via: &[u32]) -> Vec<u32> {
    let mut path = Vec::new();
    let mut u = 0u32;
    while u != dag.sink() {
        let e = via[u as usize];
        path.push(e);
        u = dag.to[e as usize];
    }
    path
}

/// Sum of the edges' costs.
pub fn path_cost(dag: &Dag, path: &[u32]) -> [u64; NC] {
    let mut c = [0u64; NC];
    for &e in path {
        for (k, x) in c.iter_mut().enumerate() {
            *x += dag.cost[e as usize][k];
        }
    }
    c
}

/// Edge visits the naive bit-rate bound may take before it groups MPS classes (a few seconds;
/// see [`naive`]).
pub const NAIVE_WORK: usize = 2_000_000_000;
/// The fewest groups of MPS classes the naive bit-rate bound takes.
pub const MIN_NAIVE_GROUPS: usize = 64;

/// How many groups of MPS classes the naive bit-rate bound takes for `classes` classes: one
/// per class while that is within [`NAIVE_WORK`].
pub fn naive_groups(dag: &Dag, classes: usize) -> usize {
    let per_pass = (dag.n_edges() * NC).max(1);
    classes.min((NAIVE_WORK / per_pass).max(MIN_NAIVE_GROUPS))
}

/// MPS classes: the distinct edge needs, floored at the target's minimum packet.
pub fn mps_classes(dag: &Dag, t: &Target) -> Vec<u32> {
    let min = t.limits.min_packet_bytes;
    let mut v: Vec<u32> = dag.need.iter().map(|&n| n.max(min)).collect();
    v.push(min);
    v.sort_unstable();
    v.dedup();
    v
}

/// The naive bounds: the slowest path by packet rate, and by bit rate over the MPS classes
/// (grouped when there are too many for one graph pass each: [`naive_groups`]).
pub fn naive(dag: &Dag, t: &Target) -> Naive {
    naive_grouped(dag, t, naive_groups(dag, mps_classes(dag, t).len()))
}

/// [`naive`] with the MPS classes taken in `groups` groups (one per class: exact).
pub fn naive_grouped(dag: &Dag, t: &Target, groups: usize) -> Naive {
    // Packet rate: each component's longest path over all edges.
    let mut worst = Rate {
        pps: f64::INFINITY,
        bottleneck: "mac",
    };
    let mut path = Vec::new();
    for c in 0..NC {
        let (best, via) = longest_to_sink(dag, c, u32::MAX);
        let Some(len) = best[0] else { continue };
        let mut cost = [0u64; NC];
        cost[c] = len;
        let r = rate_of(t, &cost);
        if r.pps < worst.pps || path.is_empty() {
            if r.pps < worst.pps {
                worst = r;
            }
            path = walk(dag, &via);
        }
    }
    // The slowest path's exact rate over all components is no faster than `worst`; report the
    // bottleneck of the component bound.
    let worst = if worst.pps.is_finite() {
        worst
    } else {
        rate_of(t, &[0; NC])
    };
    // Bit rate: per MPS class. A path whose MPS is class `s` runs at no less than the rate
    // of the longest path over the edges that need at most `s`. One graph pass per class is
    // quadratic when there are many (a loop unrolled N times checks N packet offsets), so past
    // NAIVE_WORK edge visits consecutive classes are taken in groups (at least
    // MIN_NAIVE_GROUPS): a group's paths run at no less than the rate over the edges its
    // largest class allows and are no shorter than its smallest class, a bound below each of
    // its classes' (with one class per group, the classes' own: the bound is exact then).
    let classes = mps_classes(dag, t);
    let per_group = classes.len().div_ceil(groups.max(1));
    let mut bps = f64::INFINITY;
    let mut bps_bytes = t.limits.min_packet_bytes;
    for group in classes.chunks(per_group) {
        let (smallest, largest) = (group[0], group[group.len() - 1]);
        let mut pps = t.limits.mac_pps;
        let mut any = false;
        for c in 0..NC {
            let (best, _) = longest_to_sink(dag, c, largest);
            if let Some(len) = best[0] {
                any = true;
                let mut cost = [0u64; NC];
                cost[c] = len;
                pps = pps.min(rate_of(t, &cost).pps);
            }
        }
        if any && pps * 8.0 * smallest as f64 <= bps {
            bps = pps * 8.0 * smallest as f64;
            bps_bytes = smallest;
        }
    }
    Naive {
        pps: worst.pps,
        bps,
        bottleneck: worst.bottleneck,
        bps_packet_bytes: bps_bytes,
        path,
    }
}

// ---------------------------------------------------------------------------------------------
// Incremental ordered enumeration (Kundu 1994, "An incremental algorithm for identification of
// longest (shortest) paths"), in the recursive form of Jiménez and Marzal (1999).
//
// For one cost component and one MPS class, every kept node w (below) keeps `list[w]`: the
// paths from the entry to w found so far, in descending cost, and `cand[w]`: candidates for the
// next one. A path to w is its last edge e into w plus the j-th path to e's anchor, so an entry
// is (e, j). The (k+1)-th path to w is found by taking the best candidate after pushing the
// successor of the k-th, (e, j+1), which needs the (j+1)-th path to the anchor: one recursive
// step per kept node on the path, each O(log in-degree), so the next path never costs more than
// the path is long, however many came before. Entries also carry the path's full cost vector
// and its prefix hash, so that the merger can tell a path's bottleneck (its class is its
// stream's), and refutations can be matched, without walking it.
//
// Kept nodes: the entry, the sink and every node with other than one in-edge. A node with a
// single in-edge has exactly the paths of its predecessor, each extended by that edge, so its
// paths are those of the nearest kept node above it (its anchor) extended by the chain of single
// in-edges in between; an edge into a kept node stands for its whole chain, whose cost, largest
// need and hash are computed once ([`Skeleton`]). Lists and candidate heaps exist only at kept
// nodes: on the suite's split graphs that is 0.3 to 17 % of the nodes (most nodes have one
// in-edge), which divides the prefixes built per path, and the memory, by as much.
//
// Refuted prefixes (edge sequences from the entry) are registered once, for all streams
// ([`Refuted`]), with the edges into kept nodes whose chains contain their last edge. An entry
// is dead when a refuted prefix is a prefix of its path. Liveness is checked lazily: every
// entry records how many refutations it has been checked against (its epoch); checking it
// again first brings its anchor entry up to date, then tests only the refutations registered
// since, and only those on its own chain (a hash comparison, confirmed edge by edge). A
// candidate whose prefix is dead is replaced by its successor, so no entry found after a
// refutation extends it, and a path at the sink is checked before it is handed out: a refuted
// path is never handed out, nor walked.
//
// Invariants: `list[w][k]` is the (k+1)-th costliest entry→w path over the class's edges among
// those that were live when found (ties broken by edge and index, so the order is
// deterministic); an entry marked dead stays dead.
// ---------------------------------------------------------------------------------------------

use std::cmp::Reverse;
use std::collections::BinaryHeap;

const NONE: u32 = u32::MAX;
/// An entry's `state` once it is known to extend a refuted prefix.
const DEAD: u32 = u32::MAX;
/// Multiplier of the prefix hash: h(p·e) = h(p)·M + mix(e) (mod 2^32), so a chain's share is
/// computed once. 32 bits keep entries small; a match is confirmed edge by edge anyway.
const HASH_MUL: u32 = 0x9e37_79b1;

fn mix(e: u32) -> u32 {
    // splitmix64's finaliser, high half.
    let mut z = (e as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 32) as u32
}

/// The hash of a prefix (edges from the entry) as entries compute it.
pub fn prefix_hash(edges: &[u32]) -> u32 {
    edges
        .iter()
        .fold(0u32, |h, &e| h.wrapping_mul(HASH_MUL).wrapping_add(mix(e)))
}

/// The graph as the streams see it: kept nodes and, per edge, its chain from its anchor.
#[derive(Debug, Clone)]
pub struct Skeleton {
    sink: u32,
    first: Vec<u32>,
    to: Vec<u32>,
    src: Vec<u32>,
    /// Index of each kept node among the kept nodes (`NONE` for the others); the entry is 0.
    kidx: Vec<u32>,
    /// The single in-edge of each node not kept.
    up: Vec<u32>,
    /// Per edge, about the chain from the nearest kept node above it through the edge: that
    /// node's index (`NONE`: no kept node above, the edge is unreachable), the chain's cost,
    /// largest need, and its share of the prefix hash (`M^len` and the sum).
    anchor: Vec<u32>,
    ccost: Vec<[u64; NC]>,
    cneed: Vec<u32>,
    cpow: Vec<u32>,
    cacc: Vec<u32>,
    /// In-edges of each kept node (by index), whose chains come from a kept node.
    ins: Vec<Vec<u32>>,
}

impl Skeleton {
    /// The skeleton of `dag`.
    pub fn new(dag: &Dag) -> Skeleton {
        let (n, ne) = (dag.n, dag.n_edges());
        let sink = dag.sink();
        let mut src = vec![0u32; ne];
        let mut indeg = vec![0u32; n];
        let mut up = vec![NONE; n];
        for u in 0..n as u32 {
            for e in dag.edges(u) {
                src[e] = u;
                let v = dag.to[e] as usize;
                indeg[v] += 1;
                up[v] = e as u32;
            }
        }
        let mut kidx = vec![NONE; n];
        let mut kept = 0u32;
        for v in 0..n {
            if v == 0 || v as u32 == sink || indeg[v] != 1 {
                kidx[v] = kept;
                kept += 1;
                up[v] = NONE;
            }
        }
        let mut anchor = vec![NONE; ne];
        let mut ccost = vec![[0u64; NC]; ne];
        let mut cneed = vec![0u32; ne];
        let mut cpow = vec![1u32; ne];
        let mut cacc = vec![0u32; ne];
        for &u in &dag.topo {
            let ui = u as usize;
            let base = if kidx[ui] != NONE {
                (kidx[ui], [0u64; NC], 0u32, 1u32, 0u32)
            } else {
                let f = up[ui] as usize;
                (anchor[f], ccost[f], cneed[f], cpow[f], cacc[f])
            };
            for e in dag.edges(u) {
                anchor[e] = base.0;
                let mut c = base.1;
                for (x, y) in c.iter_mut().zip(dag.cost[e]) {
                    *x += y;
                }
                ccost[e] = c;
                cneed[e] = base.2.max(dag.need[e]);
                cpow[e] = base.3.wrapping_mul(HASH_MUL);
                cacc[e] = base.4.wrapping_mul(HASH_MUL).wrapping_add(mix(e as u32));
            }
        }
        let mut ins = vec![Vec::new(); kept as usize];
        for (e, (&v, &a)) in dag.to.iter().zip(&anchor).enumerate() {
            if v != 0 && kidx[v as usize] != NONE && a != NONE {
                ins[kidx[v as usize] as usize].push(e as u32);
            }
        }
        Skeleton {
            sink,
            first: dag.first.clone(),
            to: dag.to.clone(),
            src,
            kidx,
            up,
            anchor,
            ccost,
            cneed,
            cpow,
            cacc,
            ins,
        }
    }

    /// Nodes that keep lists of prefixes.
    pub fn kept(&self) -> usize {
        self.ins.len()
    }

    /// Bytes the skeleton takes.
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        let words = self.first.capacity()
            + self.to.capacity()
            + self.src.capacity()
            + self.kidx.capacity()
            + self.up.capacity()
            + self.anchor.capacity()
            + self.cneed.capacity()
            + self.cpow.capacity()
            + self.cacc.capacity()
            + self.ins.iter().map(|v| v.capacity()).sum::<usize>();
        words * size_of::<u32>()
            + self.ccost.capacity() * size_of::<[u64; NC]>()
            + self.ins.capacity() * size_of::<Vec<u32>>()
    }

    fn is_kept(&self, v: u32) -> bool {
        self.kidx[v as usize] != NONE
    }
}

/// Refuted prefixes, shared by the streams of one graph.
#[derive(Debug, Clone, Default)]
pub struct Refuted {
    hash: Vec<u32>,
    last: Vec<u32>,
    /// Prefix `i` is `arena[end[i - 1]..end[i]]` (from 0 for the first).
    end: Vec<u32>,
    arena: Vec<u32>,
    /// Per edge into a kept node: the refuted prefixes whose last edge is on its chain, oldest
    /// first.
    by_edge: Vec<Vec<u32>>,
    /// The largest MPS class (a stream's `max_need`) each prefix is refuted in: `u32::MAX` for
    /// an infeasible prefix; less for a length lemma's, which only rules out the paths of
    /// classes so small that the packet the lemma needs makes them no slower than a satisfiable
    /// path already found ([`Merger::refute_up_to`]).
    max_class: Vec<u32>,
}

impl Refuted {
    /// Refutations registered so far (the current epoch).
    pub fn len(&self) -> usize {
        self.hash.len()
    }

    /// No refutation registered.
    pub fn is_empty(&self) -> bool {
        self.hash.is_empty()
    }

    fn epoch(&self) -> u32 {
        self.hash.len() as u32
    }

    /// Refuted prefix `i`.
    pub fn prefix(&self, i: usize) -> &[u32] {
        let s = if i == 0 { 0 } else { self.end[i - 1] };
        &self.arena[s as usize..self.end[i] as usize]
    }

    fn on_edge(&self, e: u32) -> &[u32] {
        self.by_edge.get(e as usize).map_or(&[], |v| v.as_slice())
    }

    /// Register a refuted prefix (edges from the entry, a path of `sk`'s graph). An empty one
    /// is ignored.
    pub fn add(&mut self, sk: &Skeleton, prefix: &[u32]) {
        self.add_up_to(sk, prefix, u32::MAX);
    }

    /// Register a prefix refuted in the streams of classes up to `max_class` bytes only.
    pub fn add_up_to(&mut self, sk: &Skeleton, prefix: &[u32], max_class: u32) {
        let Some(&last) = prefix.last() else { return };
        let id = self.epoch();
        self.max_class.push(max_class);
        self.hash.push(prefix_hash(prefix));
        self.last.push(last);
        self.arena.extend_from_slice(prefix);
        self.end.push(self.arena.len() as u32);
        if self.by_edge.len() < sk.to.len() {
            self.by_edge.resize(sk.to.len(), Vec::new());
        }
        let v = sk.to[last as usize];
        if sk.is_kept(v) {
            self.by_edge[last as usize].push(id);
            return;
        }
        // Every edge into a kept node whose chain runs through v.
        let mut stack = vec![v];
        while let Some(u) = stack.pop() {
            for f in sk.first[u as usize]..sk.first[u as usize + 1] {
                let w = sk.to[f as usize];
                if sk.is_kept(w) {
                    self.by_edge[f as usize].push(id);
                } else {
                    stack.push(w);
                }
            }
        }
    }

    /// Whether a registered prefix is a prefix of `path` (by brute force), in every class.
    pub fn covers(&self, path: &[u32]) -> bool {
        self.covers_in(path, u32::MAX)
    }

    /// Whether a prefix registered for MPS class `class` (or larger ones) is a prefix of `path`.
    pub fn covers_in(&self, path: &[u32], class: u32) -> bool {
        (0..self.len()).any(|i| self.max_class[i] >= class && path.starts_with(self.prefix(i)))
    }

    /// Entries this takes (for the memory estimate): prefix edges and per-edge references.
    pub fn size(&self) -> usize {
        self.arena.len() + 5 * self.hash.len() + self.by_edge.iter().map(|v| v.len()).sum::<usize>()
    }
}

/// One prefix at a kept node: the path made of edge `edge`'s chain after entry `pidx` of the
/// chain's anchor.
///
/// 32 bytes: the path's largest need is not kept (a class stream's paths all have the class's;
/// in packet-rate mode it is read off the path when handed out).
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Cost of the path, per component.
    pub cost: [u64; NC],
    /// [`prefix_hash`] of the path.
    pub hash: u32,
    /// The edge into the kept node (`u32::MAX` for the empty path at the entry).
    pub edge: u32,
    /// Which entry of the chain's anchor the path extends.
    pub pidx: u32,
    /// Refutations it has been checked against (`DEAD`: it extends one).
    state: u32,
}

/// A candidate for a kept node's next-longest path: (cost, the other components' cost, last
/// layered edge, which path to that edge's anchor); the best is the costliest, then the one
/// that costs the other components least, then the smallest edge and index. (Among paths of
/// equal cost, the cheaper ones by the other components come first: in bit-rate mode those
/// tend to need the shorter packets — fewer iterations of a loop over packet bytes —, so the
/// search meets the slowest satisfiable path among equally slow ones sooner. Addition keeps
/// this order, as the enumeration needs.)
type Cand = (u64, Reverse<u64>, Reverse<u32>, Reverse<u32>);

/// A kept node's candidates: at most one per layered in-edge, so a plain vector searched in
/// full while the node has few in-edges (most have two), a binary heap when it has many.
#[derive(Debug, Clone)]
enum Candidates {
    Few(Vec<Cand>),
    Many(BinaryHeap<Cand>),
}

impl Candidates {
    fn new(in_edges: usize) -> Candidates {
        if in_edges <= 8 {
            Candidates::Few(Vec::with_capacity(in_edges))
        } else {
            Candidates::Many(BinaryHeap::with_capacity(in_edges))
        }
    }

    #[inline]
    fn push(&mut self, c: Cand) {
        match self {
            Candidates::Few(v) => v.push(c),
            Candidates::Many(h) => h.push(c),
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<Cand> {
        match self {
            Candidates::Few(v) => {
                let mut best = 0;
                for i in 1..v.len() {
                    if v[i] > v[best] {
                        best = i;
                    }
                }
                (!v.is_empty()).then(|| v.swap_remove(best))
            }
            Candidates::Many(h) => h.pop(),
        }
    }
}

/// The edges of a path backwards, from an entry (or from edge `f` of a chain above an entry).
struct Back<'a> {
    sk: &'a Skeleton,
    list: &'a [Vec<Entry>],
    /// Kept nodes per layer.
    kept: u32,
    w: u32,
    k: u32,
    f: u32,
}

impl Iterator for Back<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if self.f == NONE {
            if self.w == 0 {
                return None;
            }
            let x = &self.list[self.w as usize][self.k as usize];
            self.f = x.edge >> 1;
            self.w = self.sk.anchor[self.f as usize] + (x.edge & 1) * self.kept;
            self.k = x.pidx;
        }
        let f = self.f;
        let u = self.sk.src[f as usize];
        self.f = if self.sk.is_kept(u) {
            NONE
        } else {
            self.sk.up[u as usize]
        };
        Some(f)
    }
}

/// Kundu enumeration for one (component, class) instance.
///
/// In an exact class (bit-rate mode, every class above the smallest), the paths are those whose
/// largest need is the class: the kept nodes come in two layers, before and after the first
/// edge that needs exactly the class (edges that need more are left out), and the sink is taken
/// in the second. A prefix's edge into a kept node is then a layered edge, `2 e + l` for the
/// edge e from layer l of its anchor; without layers, l is 0.
pub struct Stream {
    /// The cost component it orders paths by.
    pub component: usize,
    /// Edges needing more than this many bytes are left out (u32::MAX: all).
    pub max_need: u32,
    /// Whether only the paths whose largest need is `max_need` are enumerated (two layers).
    pub exact: bool,
    /// Kept nodes (per layer).
    kept: u32,
    /// Per kept node and layer (index `w + layer · kept`).
    list: Vec<Vec<Entry>>,
    cand: Vec<Candidates>,
    init: Vec<bool>,
    /// Paths taken from the sink's list.
    pub emitted: u32,
    /// Candidate prefixes refused because they extend a refuted prefix.
    pub dead_skipped: u64,
    /// Paths found before a refutation that covers them, skipped when their turn came.
    pub dead_paths: u64,
    /// Prefixes stored and candidates waiting, over all nodes.
    prefixes: usize,
    candidates: usize,
    scratch: Vec<(u32, u32)>,
    /// [`Stream::ensure`]'s work stack, kept for the next call.
    tasks: Vec<Task>,
}

/// Where an [`Task::Ensure`] is: about to start, pushing its in-edges' first candidates (from
/// slot `Init(s)`, see [`Stream::next_in_edge`]), about to add an entry (its last entry's
/// successor pushed first), or taking the best candidate.
#[derive(Debug, Clone, Copy)]
enum At {
    Start,
    Init(u32),
    Loop,
    Pop,
}

/// A frame of the enumeration's recursion, on [`Stream::ensure`]'s explicit stack: make entry
/// `k` exist at `w`; or push `w`'s candidate through layered edge `le` for the first live
/// prefix from `j` of its anchor (`asked`: the anchor's entry `j` was asked for, and the answer
/// is the last `Ensure`'s).
#[derive(Debug, Clone, Copy)]
enum Task {
    Ensure {
        w: u32,
        k: u32,
        at: At,
    },
    PushLive {
        w: u32,
        le: u32,
        j: u32,
        asked: bool,
    },
}

impl Stream {
    /// The paths over the edges that need at most `max_need` bytes.
    pub fn new(sk: &Skeleton, component: usize, max_need: u32) -> Stream {
        Stream::make(sk, component, max_need, false)
    }

    /// The paths whose largest need is exactly `class` bytes.
    pub fn exact(sk: &Skeleton, component: usize, class: u32) -> Stream {
        Stream::make(sk, component, class, true)
    }

    fn make(sk: &Skeleton, component: usize, max_need: u32, exact: bool) -> Stream {
        let kept = sk.kept();
        let n = if exact { 2 * kept } else { kept };
        let mut list = vec![Vec::new(); n];
        list[0].push(Entry {
            cost: [0; NC],
            hash: 0,
            edge: NONE,
            pidx: 0,
            state: 0,
        });
        let mut init = vec![false; n];
        init[0] = true;
        Stream {
            component,
            max_need,
            exact,
            kept: kept as u32,
            list,
            cand: (0..n)
                .map(|w| Candidates::new(sk.ins[w % kept].len() * if exact { 2 } else { 1 }))
                .collect(),
            init,
            emitted: 0,
            dead_skipped: 0,
            dead_paths: 0,
            prefixes: 1,
            candidates: 0,
            scratch: Vec::new(),
            tasks: Vec::new(),
        }
    }

    /// Bytes a stream's tables over `sk` take before it builds any prefix: per kept node (and
    /// layer) a list of prefixes, a set of candidates with room for one per in-edge, and a flag.
    /// A stream per MPS class, each with tables for every kept node, is what grows with the
    /// square of a loop's bound in bit-rate mode (each iteration adds a class and a kept node).
    pub fn table_bytes(sk: &Skeleton, exact: bool) -> usize {
        /// What the allocator adds to each block (glibc: a header, and 16-byte alignment).
        const BLOCK: usize = 16;
        let layers = if exact { 2 } else { 1 };
        let per_node = std::mem::size_of::<Vec<Entry>>()
            + std::mem::size_of::<Candidates>()
            + std::mem::size_of::<bool>();
        let room: usize = sk
            .ins
            .iter()
            .map(|v| v.len() * layers)
            .filter(|&k| k > 0)
            .map(|k| k * std::mem::size_of::<Cand>() + BLOCK)
            .sum();
        layers * (sk.kept() * per_node + room)
    }

    /// The sink's index.
    fn sink(&self, sk: &Skeleton) -> u32 {
        sk.kidx[sk.sink as usize] + if self.exact { self.kept } else { 0 }
    }

    /// The (kept node, layer) index of layered edge `le`'s anchor.
    fn anchor(&self, sk: &Skeleton, le: u32) -> u32 {
        sk.anchor[(le >> 1) as usize] + (le & 1) * self.kept
    }

    /// Make sure entry `k` exists at index `w`, if such a path exists.
    ///
    /// Jiménez and Marzal's recursive enumeration (REA), run on an explicit stack of
    /// [`Task`]s: an entry at a kept node needs the next entry at its candidates' anchors, which
    /// need the next at theirs, as far up as the chain of kept nodes above it goes. Recursion
    /// went that deep on the thread's stack: 43,000 frames on XDP-Firewall's program overflowed
    /// it (issue 32). The stack's tasks are the frames the recursion had, in the same order, so
    /// the paths come out as they did; it is kept between calls (`tasks`) and counted in
    /// [`Stream::work_bytes`].
    fn ensure(&mut self, sk: &Skeleton, r: &Refuted, w: u32, k: usize) -> bool {
        if self.list[w as usize].len() > k {
            return true;
        }
        let mut stack = std::mem::take(&mut self.tasks);
        stack.clear();
        stack.push(Task::Ensure {
            w,
            k: k as u32,
            at: At::Start,
        });
        // The answer of the last `Ensure` that finished (what the recursive call returned).
        let mut ret = false;
        while let Some(t) = stack.pop() {
            match t {
                Task::Ensure { w, k, at } => {
                    let wi = w as usize;
                    match at {
                        At::Start => {
                            if self.list[wi].len() > k as usize {
                                ret = true;
                                continue;
                            }
                            let v = if w >= self.kept { w - self.kept } else { w };
                            if v == 0 {
                                ret = false;
                                continue;
                            }
                            let at = if self.init[wi] {
                                At::Loop
                            } else {
                                self.init[wi] = true;
                                At::Init(0)
                            };
                            stack.push(Task::Ensure { w, k, at });
                        }
                        At::Init(from) => match self.next_in_edge(sk, w, from) {
                            Some((slot, le)) => {
                                stack.push(Task::Ensure {
                                    w,
                                    k,
                                    at: At::Init(slot + 1),
                                });
                                stack.push(Task::PushLive {
                                    w,
                                    le,
                                    j: 0,
                                    asked: false,
                                });
                            }
                            None => stack.push(Task::Ensure { w, k, at: At::Loop }),
                        },
                        At::Loop => {
                            if self.list[wi].len() > k as usize {
                                ret = true;
                                continue;
                            }
                            stack.push(Task::Ensure { w, k, at: At::Pop });
                            // The successor of the last path found, from the same in-edge.
                            if let Some(&last) = self.list[wi].last() {
                                stack.push(Task::PushLive {
                                    w,
                                    le: last.edge,
                                    j: last.pidx + 1,
                                    asked: false,
                                });
                            }
                        }
                        At::Pop => {
                            // The best candidate whose prefix is still alive (it may have been
                            // refuted since the candidate was pushed; then its successor takes
                            // its place).
                            let Some((_, _, Reverse(le), Reverse(j))) = self.cand[wi].pop() else {
                                ret = false;
                                continue;
                            };
                            self.candidates -= 1;
                            let a = self.anchor(sk, le);
                            let e = le >> 1;
                            if !self.live(sk, r, a, j) || self.chain_hit(sk, r, e, a, j, 0) {
                                self.dead_skipped += 1;
                                stack.push(Task::Ensure { w, k, at: At::Pop });
                                stack.push(Task::PushLive {
                                    w,
                                    le,
                                    j: j + 1,
                                    asked: false,
                                });
                                continue;
                            }
                            let p = self.list[a as usize][j as usize];
                            let ei = e as usize;
                            let mut cost = p.cost;
                            for (x, y) in cost.iter_mut().zip(sk.ccost[ei]) {
                                *x += y;
                            }
                            self.prefixes += 1;
                            self.list[wi].push(Entry {
                                cost,
                                hash: p.hash.wrapping_mul(sk.cpow[ei]).wrapping_add(sk.cacc[ei]),
                                edge: le,
                                pidx: j,
                                state: r.epoch(),
                            });
                            stack.push(Task::Ensure { w, k, at: At::Loop });
                        }
                    }
                }
                Task::PushLive { w, le, j, asked } => {
                    // The candidate (le, j') at `w` for the first live prefix j' ≥ j of the
                    // layered edge's anchor.
                    let a = self.anchor(sk, le);
                    if !asked {
                        if self.list[a as usize].len() <= j as usize {
                            stack.push(Task::PushLive {
                                w,
                                le,
                                j,
                                asked: true,
                            });
                            stack.push(Task::Ensure {
                                w: a,
                                k: j,
                                at: At::Start,
                            });
                            continue;
                        }
                        ret = true;
                    }
                    if !ret {
                        continue; // the anchor has no such prefix
                    }
                    let e = le >> 1;
                    if self.live(sk, r, a, j) && !self.chain_hit(sk, r, e, a, j, 0) {
                        let c = self.component;
                        let p = &self.list[a as usize][j as usize];
                        let key = p.cost[c] + sk.ccost[e as usize][c];
                        let others: u64 = (0..NC)
                            .filter(|&x| x != c)
                            .map(|x| p.cost[x] + sk.ccost[e as usize][x])
                            .sum();
                        self.cand[w as usize].push((key, Reverse(others), Reverse(le), Reverse(j)));
                        self.candidates += 1;
                        continue;
                    }
                    self.dead_skipped += 1;
                    stack.push(Task::PushLive {
                        w,
                        le,
                        j: j + 1,
                        asked: false,
                    });
                }
            }
        }
        self.tasks = stack;
        ret
    }

    /// The first in-edge of `w` from slot `from` on whose prefixes `w`'s list takes, as (slot,
    /// layered edge): slot `2 i + l` is the kept node's in-edge `i` from layer `l` of its
    /// anchor. Without layers every edge that needs at most the class is taken from layer 0; in
    /// an exact class, layer 0 takes the edges that need less than the class, and layer 1 those
    /// that need exactly the class from layer 0 and every one from layer 1.
    fn next_in_edge(&self, sk: &Skeleton, w: u32, from: u32) -> Option<(u32, u32)> {
        let (v, layer) = if w >= self.kept {
            ((w - self.kept) as usize, 1)
        } else {
            (w as usize, 0)
        };
        let ins = &sk.ins[v];
        for slot in from..2 * ins.len() as u32 {
            let (e, l) = (ins[(slot / 2) as usize], slot % 2);
            let need = sk.cneed[e as usize];
            if need > self.max_need {
                continue;
            }
            let take = match (self.exact, layer, l) {
                (false, _, l) => l == 0,
                (true, 0, l) => l == 0 && need < self.max_need,
                (true, _, 0) => need == self.max_need,
                (true, _, _) => true,
            };
            if take {
                return Some((slot, 2 * e + l));
            }
        }
        None
    }

    /// Bytes the work stack of `Stream::ensure` holds (as deep as the longest chain of kept
    /// nodes it has walked).
    pub fn work_bytes(&self) -> usize {
        self.tasks.capacity() * std::mem::size_of::<Task>()
    }

    /// Whether entry `k` at `w` is live: no refuted prefix is a prefix of its path.
    #[inline]
    fn live(&mut self, sk: &Skeleton, r: &Refuted, w: u32, k: u32) -> bool {
        if r.is_empty() || w == 0 {
            return true;
        }
        match self.list[w as usize][k as usize].state {
            s if s == r.epoch() => true,
            DEAD => false,
            _ => self.bring_up_to_date(sk, r, w, k),
        }
    }

    #[inline(never)]
    fn bring_up_to_date(&mut self, sk: &Skeleton, r: &Refuted, w: u32, k: u32) -> bool {
        let epoch = r.epoch();
        // Bring the entries up the path up to date, the one nearest the entry first.
        let mut stack = std::mem::take(&mut self.scratch);
        stack.clear();
        let (mut v, mut i) = (w, k);
        let mut dead = false;
        while v != 0 {
            let x = &self.list[v as usize][i as usize];
            if x.state == epoch {
                break;
            }
            if x.state == DEAD {
                dead = true;
                break;
            }
            stack.push((v, i));
            (v, i) = (self.anchor(sk, x.edge), x.pidx);
        }
        while let Some((v, i)) = stack.pop() {
            let x = self.list[v as usize][i as usize];
            if !dead {
                let a = self.anchor(sk, x.edge);
                dead = self.chain_hit(sk, r, x.edge >> 1, a, x.pidx, x.state);
            }
            self.list[v as usize][i as usize].state = if dead { DEAD } else { epoch };
        }
        self.scratch = stack;
        !dead
    }

    /// Whether a refuted prefix numbered `from` or later ends on edge `e`'s chain after entry
    /// `j` at `a` (its anchor, in the layer the prefix comes from).
    #[inline]
    fn chain_hit(&self, sk: &Skeleton, r: &Refuted, e: u32, a: u32, j: u32, from: u32) -> bool {
        if r.is_empty() {
            return false;
        }
        let ids = r.on_edge(e);
        if ids.is_empty() {
            return false;
        }
        self.chain_hit_slow(sk, r, ids, a, j, from)
    }

    #[inline(never)]
    fn chain_hit_slow(
        &self,
        sk: &Skeleton,
        r: &Refuted,
        ids: &[u32],
        a: u32,
        j: u32,
        from: u32,
    ) -> bool {
        let h = self.list[a as usize][j as usize].hash;
        for &id in ids.iter().rev() {
            if id < from {
                break;
            }
            if r.max_class[id as usize] < self.max_need {
                continue; // a length lemma's, for smaller classes than this stream's
            }
            let l = r.last[id as usize] as usize;
            if h.wrapping_mul(sk.cpow[l]).wrapping_add(sk.cacc[l]) == r.hash[id as usize] {
                // Confirm edge by edge (a hash can collide).
                let pre = r.prefix(id as usize);
                let mut back = Back {
                    sk,
                    list: &self.list,
                    kept: self.kept,
                    w: a,
                    k: j,
                    f: l as u32,
                };
                if pre.iter().rev().all(|&x| back.next() == Some(x)) && back.next().is_none() {
                    return true;
                }
            }
        }
        false
    }

    /// The next entry→sink path, as (index in the sink's list, its entry), skipping dead ones.
    pub fn next(&mut self, sk: &Skeleton, r: &Refuted) -> Option<(u32, Entry)> {
        let s = self.sink(sk);
        loop {
            let k = self.emitted;
            if !self.ensure(sk, r, s, k as usize) {
                return None;
            }
            self.emitted += 1;
            if self.live(sk, r, s, k) {
                return Some((k, self.list[s as usize][k as usize]));
            }
            self.dead_paths += 1;
        }
    }

    /// Whether sink path `k` is still live (no refuted prefix registered since covers it).
    pub fn is_live(&mut self, sk: &Skeleton, r: &Refuted, k: u32) -> bool {
        let s = self.sink(sk);
        self.live(sk, r, s, k)
    }

    /// The largest packet need on sink path `k`.
    pub fn need(&self, sk: &Skeleton, k: u32) -> u32 {
        let (mut w, mut k, mut need) = (self.sink(sk), k, 0);
        while w != 0 {
            let x = &self.list[w as usize][k as usize];
            need = need.max(sk.cneed[(x.edge >> 1) as usize]);
            (w, k) = (self.anchor(sk, x.edge), x.pidx);
        }
        need
    }

    /// The edges of sink path `k`, entry first.
    pub fn edges(&self, sk: &Skeleton, k: u32) -> Vec<u32> {
        let mut out: Vec<u32> = Back {
            sk,
            list: &self.list,
            kept: self.kept,
            w: self.sink(sk),
            k,
            f: NONE,
        }
        .collect();
        out.reverse();
        out
    }

    /// Prefixes stored, and candidates waiting (the enumeration's memory, in entries).
    pub fn size(&self) -> (usize, usize) {
        (self.prefixes, self.candidates)
    }
}

/// A path the merger hands out: which stream, which path at the sink, its cost and rate.
#[derive(Debug, Clone, Copy)]
pub struct Found {
    /// Index of the stream that hands it out.
    pub stream: usize,
    /// Index of the path in that stream's list at the sink.
    pub k: u32,
    /// Cost of the path, per component.
    pub cost: [u64; NC],
    /// Minimum packet size (bytes, floored at the target's minimum).
    pub mps: u32,
    /// The packet rate and its bottleneck.
    pub rate: Rate,
    /// The merger's key: packets/s, or bits/s in bit-rate mode.
    pub key: f64,
}

/// An f64 as a u64 in the same (total) order.
fn ord_bits(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

/// One Kundu stream per (cost component, MPS class), merged in one order of increasing rate;
/// each path is handed out once, by the stream of its own bottleneck component and class.
pub struct Merger {
    /// The graph as the streams see it.
    pub skel: Skeleton,
    /// Refuted prefixes: no path they cover is handed out after they are registered.
    pub refuted: Refuted,
    /// One stream per (cost component, MPS class).
    pub streams: Vec<Stream>,
    /// MPS class of each stream (bytes; 0 in packet-rate mode).
    pub class: Vec<u32>,
    /// Each stream's next path and its key, and the streams by that key (then index).
    heads: Vec<Option<(u32, Entry, f64)>>,
    order: BinaryHeap<Reverse<(u64, usize)>>,
    /// Order paths by bit rate (else by packet rate).
    pub bit_rate: bool,
    /// Paths taken from the streams, and those dropped as another stream's.
    pub pulled: u64,
    /// Paths dropped because another stream hands them out.
    pub dropped: u64,
    /// Bytes the streams' tables take ([`Stream::table_bytes`]), or would have taken when they
    /// were not built.
    pub tables: usize,
    /// False when the tables would have taken more than the budget given to
    /// [`Merger::with_budget`]: there are no streams then, and no path is handed out.
    pub built: bool,
}

impl Merger {
    /// A merger with no memory budget.
    pub fn new(dag: &Dag, t: &Target, bit_rate: bool) -> Merger {
        Merger::with_budget(dag, t, bit_rate, usize::MAX)
    }

    /// As [`Merger::new`], unless the streams' tables (with the skeleton they share) would take
    /// more than `budget` bytes: then they are not built (`built` is false, `tables` says how
    /// much they would have taken).
    pub fn with_budget(dag: &Dag, t: &Target, bit_rate: bool, budget: usize) -> Merger {
        let skel = Skeleton::new(dag);
        let classes = if bit_rate {
            mps_classes(dag, t)
        } else {
            vec![0]
        };
        // A component no edge costs never owns a path (its rate is the largest; ties go to the
        // cores): it needs no stream.
        let costed: Vec<bool> = (0..NC)
            .map(|c| c == 0 || dag.cost.iter().any(|x| x[c] > 0))
            .collect();
        // (component, class, whether the stream has the class's paths only) of each stream.
        let mut specs: Vec<(usize, u32, bool)> = Vec::new();
        for (i, &s) in classes.iter().enumerate() {
            for (c, &costed) in costed.iter().enumerate() {
                if c == 1 && t.dram.is_none() || !costed {
                    continue;
                }
                // In bit-rate mode the smallest class (the target's minimum packet) has every
                // path whose edges need no more.
                specs.push((c, s, bit_rate && i > 0));
            }
        }
        let tables: usize = specs
            .iter()
            .map(|&(_, _, exact)| Stream::table_bytes(&skel, exact))
            .sum();
        let built = skel.memory_bytes() + tables <= budget;
        if !built {
            specs.clear();
        }
        let mut streams = Vec::new();
        let mut class = Vec::new();
        for (c, s, exact) in specs {
            streams.push(if !bit_rate {
                Stream::new(&skel, c, u32::MAX)
            } else if exact {
                Stream::exact(&skel, c, s)
            } else {
                Stream::new(&skel, c, s)
            });
            class.push(s);
        }
        let n = streams.len();
        let mut m = Merger {
            skel,
            refuted: Refuted::default(),
            streams,
            class,
            heads: vec![None; n],
            order: BinaryHeap::with_capacity(n),
            bit_rate,
            pulled: 0,
            dropped: 0,
            tables,
            built,
        };
        for i in 0..n {
            m.advance(t, i);
        }
        m
    }

    fn key(&self, t: &Target, i: usize, e: &Entry) -> f64 {
        let mut cost = [0u64; NC];
        let c = self.streams[i].component;
        cost[c] = e.cost[c];
        let pps = rate_of(t, &cost).pps;
        if self.bit_rate {
            pps * 8.0 * self.class[i] as f64
        } else {
            pps
        }
    }

    /// Take stream `i`'s next path as its head.
    fn advance(&mut self, t: &Target, i: usize) {
        let next = self.streams[i].next(&self.skel, &self.refuted);
        self.heads[i] = next.map(|(k, e)| (k, e, self.key(t, i, &e)));
        if let Some((_, _, key)) = self.heads[i] {
            self.order.push(Reverse((ord_bits(key), i)));
        }
    }

    /// The smallest key among the streams' next paths: every path not handed out yet is at
    /// least this fast (`INFINITY` when all are exhausted).
    pub fn floor(&self, _t: &Target) -> f64 {
        self.heads
            .iter()
            .filter_map(|h| h.map(|(_, _, key)| key))
            .fold(f64::INFINITY, f64::min)
    }

    /// The next path in order of increasing rate (its own stream's copy only).
    pub fn next(&mut self, t: &Target) -> Option<Found> {
        loop {
            let Reverse((_, i)) = self.order.pop()?;
            let (k, e, _) = self.heads[i]
                .take()
                .expect("every stream in the order has a head");
            let live = self.streams[i].is_live(&self.skel, &self.refuted, k);
            self.advance(t, i);
            if !live {
                self.streams[i].dead_paths += 1;
                continue;
            }
            self.pulled += 1;
            let rate = rate_of(t, &e.cost);
            // Owner: the component with the lowest rate (ties: the lower index), and its class.
            let mut owner = 0;
            let mut owner_pps = f64::INFINITY;
            for c in 0..NC {
                if c != 0 && t.dram.is_none() {
                    continue;
                }
                let mut cost = [0u64; NC];
                cost[c] = e.cost[c];
                let pps = rate_of(t, &cost).pps;
                if c == 0 || pps.total_cmp(&owner_pps).is_lt() {
                    owner = c;
                    owner_pps = pps;
                }
            }
            if owner != self.streams[i].component {
                self.dropped += 1;
                continue;
            }
            // A class's streams have only paths of that class (the smallest: every edge needs
            // at most the minimum packet).
            let mps = if self.bit_rate {
                self.class[i]
            } else {
                self.streams[i]
                    .need(&self.skel, k)
                    .max(t.limits.min_packet_bytes)
            };
            let key = if self.bit_rate {
                rate.pps * 8.0 * mps as f64
            } else {
                rate.pps
            };
            return Some(Found {
                stream: i,
                k,
                cost: e.cost,
                mps,
                rate,
                key,
            });
        }
    }

    /// The edges of a path handed out, entry first.
    pub fn edges(&self, f: &Found) -> Vec<u32> {
        self.streams[f.stream].edges(&self.skel, f.k)
    }

    /// Refute a prefix (edges from the entry) in every stream: no path it covers is handed out
    /// from now on, and the streams' next paths (and so the floor) skip them at once.
    pub fn refute(&mut self, t: &Target, prefix: &[u32]) {
        self.refute_up_to(t, prefix, u32::MAX);
    }

    /// Refute a prefix in the streams of MPS classes up to `max_class` bytes only (bit-rate
    /// mode: what a length lemma rules out; see `Refuted::max_class`).
    pub fn refute_up_to(&mut self, t: &Target, prefix: &[u32], max_class: u32) {
        self.refuted.add_up_to(&self.skel, prefix, max_class);
        for i in 0..self.streams.len() {
            while let Some((k, _, _)) = self.heads[i] {
                if self.streams[i].is_live(&self.skel, &self.refuted, k) {
                    break;
                }
                self.streams[i].dead_paths += 1;
                let next = self.streams[i].next(&self.skel, &self.refuted);
                self.heads[i] = next.map(|(k, e)| (k, e, self.key(t, i, &e)));
            }
        }
        self.order = self
            .heads
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.map(|(_, _, key)| Reverse((ord_bits(key), i))))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cfg::EdgeKind;

    /// xorshift64*: small, deterministic.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) % n
        }
    }

    /// A random DAG over nodes 0..n in topological order, with parallel edges, dead ends,
    /// unreachable nodes, ties in cost and a few packet needs.
    fn random_dag(seed: u64, n: usize) -> Dag {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let (mut first, mut to, mut cost, mut need) = (vec![0u32], vec![], vec![], vec![]);
        for u in 0..n - 1 {
            let k = match rng.below(12) {
                0 if u > 0 => 0,
                0..=5 => 1,
                6..=9 => 2,
                _ => 3,
            };
            for _ in 0..k {
                let v = u + 1 + rng.below((n - 1 - u).min(4) as u64) as usize;
                to.push(v as u32);
                let dram = if rng.below(3) == 0 {
                    rng.below(3) * 700_000
                } else {
                    0
                };
                cost.push([rng.below(4) * 1_000_000, dram]);
                need.push([0, 0, 0, 30, 60, 64, 72, 100][rng.below(8) as usize]);
            }
            first.push(to.len() as u32);
        }
        first.push(to.len() as u32);
        let m = to.len();
        Dag {
            n,
            first,
            to,
            cost,
            need,
            pc: vec![0; m],
            kind: vec![EdgeKind::Next; m],
            topo: (0..n as u32).collect(),
        }
    }

    /// Every entry→sink path as its edges (None: too many).
    fn brute(dag: &Dag) -> Option<Vec<Vec<u32>>> {
        let mut out = Vec::new();
        let mut stack = vec![(0u32, Vec::new())];
        while let Some((u, p)) = stack.pop() {
            if u == dag.sink() {
                out.push(p);
                if out.len() > 20_000 {
                    return None;
                }
                continue;
            }
            for e in dag.edges(u) {
                let mut q = p.clone();
                q.push(e as u32);
                stack.push((dag.to[e], q));
            }
        }
        Some(out)
    }

    fn need_of(dag: &Dag, p: &[u32]) -> u32 {
        p.iter().map(|&e| dag.need[e as usize]).max().unwrap_or(0)
    }

    fn target(mac: bool) -> Target {
        let t = Target::builtin("nfp").unwrap().unwrap();
        if mac {
            t
        } else {
            t.without_mac_limit()
        }
    }

    fn key_of(dag: &Dag, t: &Target, p: &[u32], bit: bool) -> f64 {
        let pps = rate_of(t, &path_cost(dag, p)).pps;
        if bit {
            pps * 8.0 * need_of(dag, p).max(t.limits.min_packet_bytes) as f64
        } else {
            pps
        }
    }

    /// A stream's paths: (key, edges), checking each edge list against its entry.
    fn drain(dag: &Dag, sk: &Skeleton, s: &mut Stream) -> Vec<(u64, Vec<u32>)> {
        let r = Refuted::default();
        let mut out = Vec::new();
        while let Some((k, e)) = s.next(sk, &r) {
            let p = s.edges(sk, k);
            let mut u = 0;
            for &x in &p {
                assert!(
                    dag.edges(u).contains(&(x as usize)),
                    "edge {x} leaves node {u}"
                );
                u = dag.to[x as usize];
            }
            assert_eq!(u, dag.sink(), "the path ends at the sink");
            assert_eq!(path_cost(dag, &p), e.cost);
            assert_eq!(need_of(dag, &p), s.need(sk, k));
            assert_eq!(prefix_hash(&p), e.hash);
            out.push((e.cost[s.component], p));
        }
        out
    }

    #[test]
    fn streams_hand_out_every_path_once_in_order_on_random_graphs() {
        let mut checked = 0;
        for seed in 0..400u64 {
            let dag = random_dag(seed, 6 + (seed % 15) as usize);
            let Some(all) = brute(&dag) else { continue };
            let sk = Skeleton::new(&dag);
            assert!(sk.kept() <= dag.n);
            for c in 0..NC {
                // Each stream and which paths (by largest need) it must hand out.
                type Keep = Box<dyn Fn(u32) -> bool>;
                let mut cases: Vec<(Stream, Keep)> = vec![
                    (Stream::new(&sk, c, u32::MAX), Box::new(|_| true)),
                    (Stream::new(&sk, c, 60), Box::new(|n| n <= 60)),
                ];
                for s in [64u32, 72, 100] {
                    cases.push((Stream::exact(&sk, c, s), Box::new(move |n| n == s)));
                }
                for (mut s, keep) in cases {
                    let got = drain(&dag, &sk, &mut s);
                    assert!(
                        got.windows(2).all(|w| w[0].0 >= w[1].0),
                        "seed {seed}: descending"
                    );
                    let mut got: Vec<Vec<u32>> = got.into_iter().map(|x| x.1).collect();
                    let mut want: Vec<Vec<u32>> = all
                        .iter()
                        .filter(|p| keep(need_of(&dag, p)))
                        .cloned()
                        .collect();
                    got.sort();
                    want.sort();
                    assert_eq!(got, want, "seed {seed} component {c}");
                    checked += want.len();
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }

    #[test]
    fn refuted_prefixes_are_never_handed_out_and_the_rest_all_are() {
        let mut handed = 0;
        let mut refutations = 0;
        for seed in 0..800u64 {
            let mut dag = random_dag(seed, 8 + (seed % 13) as usize);
            // Without DRAM costs every path is in exactly one stream, and the floor is exact.
            let one_copy = seed % 5 == 0;
            if one_copy {
                for c in dag.cost.iter_mut() {
                    c[1] = 0;
                }
            }
            let Some(all) = brute(&dag) else { continue };
            let bit = seed % 2 == 0;
            let t = target(seed % 3 != 0);
            let mut rng = Rng(seed | 1);
            let mut m = Merger::new(&dag, &t, bit);
            let mut seen = std::collections::HashSet::new();
            let mut last = f64::NEG_INFINITY;
            // A path's MPS class: a prefix refuted up to a class covers the paths of classes up
            // to it only.
            let class = |p: &[u32]| {
                if bit {
                    need_of(&dag, p).max(t.limits.min_packet_bytes)
                } else {
                    u32::MAX
                }
            };
            let covered = |m: &Merger, p: &[u32]| m.refuted.covers_in(p, class(p));
            loop {
                // The floor is no faster than any path left that no refutation covers.
                let left = all
                    .iter()
                    .filter(|p| !seen.contains(*p) && !covered(&m, p))
                    .map(|p| key_of(&dag, &t, p, bit))
                    .fold(f64::INFINITY, f64::min);
                let floor = m.floor(&t);
                assert!(
                    floor <= left * (1.0 + 1e-12),
                    "seed {seed}: {floor} > {left}"
                );
                if one_copy {
                    assert!(
                        floor == left || (floor / left - 1.0).abs() < 1e-12,
                        "seed {seed}"
                    );
                }
                let Some(f) = m.next(&t) else { break };
                let p = m.edges(&f);
                assert!(!covered(&m, &p), "seed {seed}: {p:?} was refuted");
                assert!(seen.insert(p.clone()), "seed {seed}: {p:?} twice");
                let want = key_of(&dag, &t, &p, bit);
                assert!((f.key / want - 1.0).abs() < 1e-12, "seed {seed}");
                assert_eq!(f.mps, need_of(&dag, &p).max(t.limits.min_packet_bytes));
                assert_eq!(f.cost, path_cost(&dag, &p));
                assert!(f.key >= last, "seed {seed}: in order");
                last = f.key;
                handed += 1;
                // Refute a prefix of this path, or of any path (one handed out, one to come,
                // or one already covered), now and then.
                if rng.below(3) == 0 {
                    let n = 1 + rng.below(p.len() as u64) as usize;
                    m.refute(&t, &p[..n]);
                    refutations += 1;
                }
                if rng.below(4) == 0 {
                    let q = &all[rng.below(all.len() as u64) as usize];
                    let n = 1 + rng.below(q.len() as u64) as usize;
                    m.refute(&t, &q[..n]);
                    refutations += 1;
                }
                // In bit-rate mode, a size lemma's refutation: in the classes up to one only.
                if bit && rng.below(4) == 0 {
                    let q = &all[rng.below(all.len() as u64) as usize];
                    let n = 1 + rng.below(q.len() as u64) as usize;
                    let upto = m.class[rng.below(m.class.len() as u64) as usize];
                    m.refute_up_to(&t, &q[..n], upto);
                    refutations += 1;
                }
            }
            for p in &all {
                assert!(
                    seen.contains(p) || covered(&m, p),
                    "seed {seed}: {p:?} never handed out"
                );
            }
        }
        assert!(
            handed > 2_000 && refutations > 500,
            "{handed} {refutations}"
        );
    }

    #[test]
    fn exact_classes_leave_nothing_to_drop() {
        // In bit-rate mode each path comes out of its own class's streams only; only copies in
        // the other component's stream are dropped.
        for seed in 0..100u64 {
            let mut dag = random_dag(seed, 12);
            for c in dag.cost.iter_mut() {
                c[1] = 0;
            }
            let Some(all) = brute(&dag) else { continue };
            let t = target(false);
            let mut m = Merger::new(&dag, &t, true);
            let mut n = 0;
            while m.next(&t).is_some() {
                n += 1;
            }
            assert_eq!(n, all.len());
            assert_eq!((m.pulled, m.dropped), (all.len() as u64, 0), "seed {seed}");
        }
    }

    /// A chain of `n` diamonds (u → v, u → w, v → w; then w is the next u): every join is a
    /// kept node, so the kept nodes above the sink form a chain `n` long. The way through v
    /// costs two cycles, the direct edge one and a half; every tenth u → v edge needs 64 bytes
    /// (two MPS classes in bit-rate mode).
    fn diamonds(n: usize) -> Dag {
        let (mut first, mut to, mut cost, mut need) = (vec![0u32], vec![], vec![], vec![]);
        for i in 0..n {
            let (u, w) = (2 * i as u32, 2 * i as u32 + 2);
            let direct = [1_500_000, 0];
            to.extend([u + 1, w]);
            cost.extend([[1_000_000, 0], direct]);
            need.extend([if i % 10 == 0 { 64 } else { 0 }, 0]);
            first.push(to.len() as u32);
            to.push(w);
            cost.push([1_000_000, 0]);
            need.push(0);
            first.push(to.len() as u32);
        }
        first.push(to.len() as u32); // the sink
        let m = to.len();
        Dag {
            n: 2 * n + 1,
            first,
            to,
            cost,
            need,
            pc: vec![0; m],
            kind: vec![EdgeKind::Next; m],
            topo: (0..2 * n as u32 + 1).collect(),
        }
    }

    /// Issue 32 §3: the enumeration's recursion (REA's next path at a kept node asks for the
    /// next at its anchors, up the chain of kept nodes) overflowed the stack on a real program,
    /// 43,000 frames deep. On a graph of 1,050,000 edges whose kept nodes form a chain 350,000
    /// long (and whose slowest path has 700,000 edges), the naive bound, the first paths in
    /// order, a refutation deep down the chain and the paths after it all come out, on the 2 MB
    /// stack of a test thread. (With the recursion this test dies of a stack overflow.)
    #[test]
    fn a_chain_of_350000_kept_nodes_enumerates_on_a_small_stack() {
        let n = 350_000;
        let dag = diamonds(n);
        assert!(dag.n_edges() >= 1_000_000);
        let t = target(false);
        let naive = naive(&dag, &t);
        for bit in [false, true] {
            let mut m = Merger::new(&dag, &t, bit);
            let first = m.next(&t).expect("a path");
            let edges = m.edges(&first);
            assert_eq!(first.cost, path_cost(&dag, &edges));
            if !bit {
                assert_eq!(edges.len(), 2 * n, "the slowest path goes through every v");
                assert_eq!(
                    first.rate.pps, naive.pps,
                    "the first path is the naive bound's"
                );
            }
            assert!(edges.len() >= 100_000);
            // The second slowest differs from it in one diamond; refute the first path down to
            // the middle of the chain: no path through that prefix comes out again.
            let second = m.next(&t).expect("a second path");
            assert!(second.key >= first.key);
            let cut = &edges[..edges.len() / 2];
            m.refute(&t, cut);
            for _ in 0..3 {
                let f = m.next(&t).expect("more paths");
                let p = m.edges(&f);
                assert!(!p.starts_with(cut), "a refuted prefix came out again");
                assert_eq!(f.cost, path_cost(&dag, &p));
            }
        }
    }
}
