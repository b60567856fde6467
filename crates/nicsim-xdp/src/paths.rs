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
                let v = d + dag.cost[e][c];
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
    pub pps: f64,
    pub bottleneck: &'static str,
}

/// The packet rate of a path with component costs `cost` (milli-cycles).
pub fn rate_of(t: &Target, cost: &[u64; NC]) -> Rate {
    let cores = t.cores_pps(cost[0] as f64 / UNITS_PER_CYCLE);
    let dram = t.dram_pps(cost[1] as f64 / UNITS_PER_CYCLE);
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
    pub pps: f64,
    pub bps: f64,
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

/// MPS classes: the distinct edge needs, floored at the target's minimum packet.
pub fn mps_classes(dag: &Dag, t: &Target) -> Vec<u32> {
    let min = t.limits.min_packet_bytes;
    let mut v: Vec<u32> = dag.need.iter().map(|&n| n.max(min)).collect();
    v.push(min);
    v.sort_unstable();
    v.dedup();
    v
}

pub fn naive(dag: &Dag, t: &Target) -> Naive {
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
    // Bit rate: per MPS class.
    let mut bps = f64::INFINITY;
    let mut bps_bytes = t.limits.min_packet_bytes;
    for s in mps_classes(dag, t) {
        let mut pps = t.limits.mac_pps;
        let mut any = false;
        for c in 0..NC {
            let (best, _) = longest_to_sink(dag, c, s);
            if let Some(len) = best[0] {
                any = true;
                let mut cost = [0u64; NC];
                cost[c] = len;
                pps = pps.min(rate_of(t, &cost).pps);
            }
        }
        if any && pps * 8.0 * s as f64 <= bps {
            bps = pps * 8.0 * s as f64;
            bps_bytes = s;
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
// For one cost component and one MPS class, every node v keeps `list[v]`: the paths from the
// entry to v found so far, in descending cost, and `cand[v]`: candidates for the next one. A
// path to v is its last edge e = (u, v) plus the j-th path to u, so an entry is (e, j). The
// (k+1)-th path to v is found by taking the best candidate after pushing the successor of the
// k-th, (e, j+1), which needs the (j+1)-th path to u: one recursive step per node on the path,
// each O(log in-degree), so the next path never costs more than the path is long, however
// many came before. Entries also carry the path's full cost vector and its largest need, so
// that the merger can tell a path's bottleneck and class without walking it.
//
// Invariants: `list[v][k]` is the (k+1)-th costliest entry→v path over the class's edges
// (ties broken by edge index, so the order is deterministic); an entry marked dead (a refuted
// prefix) is never extended by entries created afterwards.
// ---------------------------------------------------------------------------------------------

/// One prefix: the entry→v path made of edge `edge` after entry `pidx` of the edge's source.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The instance's component cost (the sort key).
    pub key: u64,
    pub cost: [u64; NC],
    /// Largest packet need on the prefix.
    pub need: u32,
    pub edge: u32,
    pub pidx: u32,
    pub dead: bool,
}

/// A node's candidates for its next-longest path: (cost, last edge, which path to that edge's
/// tail), the costliest first.
type Candidates =
    std::collections::BinaryHeap<(u64, std::cmp::Reverse<u32>, std::cmp::Reverse<u32>)>;

/// Kundu enumeration for one (component, class) instance.
pub struct Stream {
    pub component: usize,
    /// Edges needing more than this many bytes are left out (u32::MAX: all).
    pub max_need: u32,
    pub list: Vec<Vec<Entry>>,
    cand: Vec<Candidates>,
    init: Vec<bool>,
    /// In-edges of each node.
    ins: std::sync::Arc<Vec<Vec<u32>>>,
    /// Paths handed out at the sink.
    pub emitted: u32,
    pub dead_skipped: u64,
    /// Prefixes stored and candidates waiting, over all nodes.
    prefixes: usize,
    candidates: usize,
}

/// Source node of every edge and in-edge lists, shared by the streams of one graph.
pub fn in_edges(dag: &Dag) -> (Vec<u32>, Vec<Vec<u32>>) {
    let mut src = vec![0u32; dag.n_edges()];
    let mut ins = vec![Vec::new(); dag.n];
    for u in 0..dag.n as u32 {
        for e in dag.edges(u) {
            src[e] = u;
            ins[dag.to[e] as usize].push(e as u32);
        }
    }
    (src, ins)
}

impl Stream {
    pub fn new(
        dag: &Dag,
        ins: std::sync::Arc<Vec<Vec<u32>>>,
        component: usize,
        max_need: u32,
    ) -> Stream {
        let mut list = vec![Vec::new(); dag.n];
        list[0].push(Entry {
            key: 0,
            cost: [0; NC],
            need: 0,
            edge: u32::MAX,
            pidx: 0,
            dead: false,
        });
        let mut init = vec![false; dag.n];
        init[0] = true;
        Stream {
            component,
            max_need,
            list,
            cand: vec![Default::default(); dag.n],
            init,
            ins,
            emitted: 0,
            dead_skipped: 0,
            prefixes: 1,
            candidates: 0,
        }
    }

    /// Make sure `list[v]` has an entry `k`, if such a path exists.
    fn ensure(&mut self, dag: &Dag, src: &[u32], v: u32, k: usize) -> bool {
        let vi = v as usize;
        if self.list[vi].len() > k {
            return true;
        }
        if vi == 0 {
            return false;
        }
        if !self.init[vi] {
            self.init[vi] = true;
            let ins = self.ins.clone();
            for &e in &ins[vi] {
                if dag.need[e as usize] <= self.max_need {
                    self.push_live(dag, src, e, 0);
                }
            }
        }
        while self.list[vi].len() <= k {
            // The successor of the last path found, from the same in-edge.
            if let Some(&last) = self.list[vi].last() {
                self.push_live(dag, src, last.edge, last.pidx + 1);
            }
            // The best candidate whose prefix is still alive (it may have been refuted since
            // the candidate was pushed; then its successor takes its place).
            loop {
                let Some((_, std::cmp::Reverse(e), std::cmp::Reverse(j))) = self.cand[vi].pop()
                else {
                    return false;
                };
                self.candidates -= 1;
                let u = src[e as usize] as usize;
                let p = self.list[u][j as usize];
                if p.dead {
                    self.dead_skipped += 1;
                    self.push_live(dag, src, e, j + 1);
                    continue;
                }
                let mut cost = p.cost;
                for (x, y) in cost.iter_mut().zip(dag.cost[e as usize]) {
                    *x += y;
                }
                self.prefixes += 1;
                self.list[vi].push(Entry {
                    key: cost[self.component],
                    cost,
                    need: p.need.max(dag.need[e as usize]),
                    edge: e,
                    pidx: j,
                    dead: false,
                });
                break;
            }
        }
        true
    }

    /// Push the candidate (e, j') for the first live prefix j' ≥ j of the edge's source.
    fn push_live(&mut self, dag: &Dag, src: &[u32], e: u32, mut j: u32) {
        let u = src[e as usize];
        loop {
            if !self.ensure(dag, src, u, j as usize) {
                return;
            }
            let p = self.list[u as usize][j as usize];
            if !p.dead {
                let key = p.key + dag.cost[e as usize][self.component];
                let v = dag.to[e as usize] as usize;
                self.cand[v].push((key, std::cmp::Reverse(e), std::cmp::Reverse(j)));
                self.candidates += 1;
                return;
            }
            self.dead_skipped += 1;
            j += 1;
        }
    }

    /// The next entry→sink path, as (index in the sink's list, its entry), skipping dead ones.
    pub fn next(&mut self, dag: &Dag, src: &[u32]) -> Option<(u32, Entry)> {
        let sink = dag.sink();
        loop {
            let k = self.emitted as usize;
            if !self.ensure(dag, src, sink, k) {
                return None;
            }
            self.emitted += 1;
            let e = self.list[sink as usize][k];
            if !e.dead {
                return Some((k as u32, e));
            }
        }
    }

    /// The edges of path `k` to node `v`, entry first, with the (node, index) of each prefix.
    pub fn walk(&self, dag: &Dag, src: &[u32], v: u32, k: u32) -> Vec<(u32, u32, u32)> {
        let mut out = Vec::new();
        let (mut v, mut k) = (v, k);
        while v != 0 {
            let e = self.list[v as usize][k as usize];
            out.push((e.edge, v, k));
            v = src[e.edge as usize];
            k = e.pidx;
        }
        let _ = dag;
        out.reverse();
        out
    }

    /// Whether a prefix on the way to (v, k) was refuted.
    pub fn is_dead(&self, src: &[u32], v: u32, k: u32) -> bool {
        let (mut v, mut k) = (v, k);
        while v != 0 {
            let e = self.list[v as usize][k as usize];
            if e.dead {
                return true;
            }
            v = src[e.edge as usize];
            k = e.pidx;
        }
        false
    }

    /// Prefixes stored, and candidates waiting (the enumeration's memory, in entries).
    pub fn size(&self) -> (usize, usize) {
        (self.prefixes, self.candidates)
    }

    /// Mark prefix (v, k) refuted.
    pub fn kill(&mut self, v: u32, k: u32) {
        self.list[v as usize][k as usize].dead = true;
    }
}

/// A path the merger hands out: which stream, which path at the sink, its cost and rate.
#[derive(Debug, Clone, Copy)]
pub struct Found {
    pub stream: usize,
    pub k: u32,
    pub cost: [u64; NC],
    /// Minimum packet size (bytes, floored at the target's minimum).
    pub mps: u32,
    pub rate: Rate,
    /// The merger's key: packets/s, or bits/s in bit-rate mode.
    pub key: f64,
}

/// One Kundu stream per (cost component, MPS class), merged in one order of increasing rate;
/// each path is handed out once, by the stream of its own bottleneck component and class.
pub struct Merger {
    pub streams: Vec<Stream>,
    /// MPS class of each stream (bytes; 0 in packet-rate mode).
    pub class: Vec<u32>,
    heads: Vec<Option<(u32, Entry)>>,
    pub bit_rate: bool,
    pub src: Vec<u32>,
    /// Paths taken from the streams, and those dropped as another stream's.
    pub pulled: u64,
    pub dropped: u64,
}

impl Merger {
    pub fn new(dag: &Dag, t: &Target, bit_rate: bool) -> Merger {
        let (src, ins) = in_edges(dag);
        let ins = std::sync::Arc::new(ins);
        let classes = if bit_rate {
            mps_classes(dag, t)
        } else {
            vec![0]
        };
        let mut streams = Vec::new();
        let mut class = Vec::new();
        for &s in &classes {
            for c in 0..NC {
                if c == 1 && t.dram.is_none() {
                    continue;
                }
                let max_need = if bit_rate { s } else { u32::MAX };
                streams.push(Stream::new(dag, ins.clone(), c, max_need));
                class.push(s);
            }
        }
        let n = streams.len();
        let mut m = Merger {
            streams,
            class,
            heads: vec![None; n],
            bit_rate,
            src,
            pulled: 0,
            dropped: 0,
        };
        for i in 0..n {
            m.heads[i] = m.streams[i].next(dag, &m.src);
        }
        m
    }

    fn key(&self, t: &Target, i: usize, e: &Entry) -> f64 {
        let mut cost = [0u64; NC];
        cost[self.streams[i].component] = e.key;
        let pps = rate_of(t, &cost).pps;
        if self.bit_rate {
            pps * 8.0 * self.class[i] as f64
        } else {
            pps
        }
    }

    /// The smallest key among the streams' next paths: every path not handed out yet is at
    /// least this fast (`INFINITY` when all are exhausted).
    pub fn floor(&self, t: &Target) -> f64 {
        (0..self.streams.len())
            .filter_map(|i| self.heads[i].map(|(_, e)| self.key(t, i, &e)))
            .fold(f64::INFINITY, f64::min)
    }

    /// The next path in order of increasing rate (its own stream's copy only).
    pub fn next(&mut self, dag: &Dag, t: &Target) -> Option<Found> {
        loop {
            let i = (0..self.streams.len())
                .filter_map(|i| self.heads[i].map(|(_, e)| (self.key(t, i, &e), i)))
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))?
                .1;
            let (k, e) = self.heads[i].take().unwrap();
            self.heads[i] = self.streams[i].next(dag, &self.src);
            self.pulled += 1;
            let rate = rate_of(t, &e.cost);
            let mps = e.need.max(t.limits.min_packet_bytes);
            // Owner: the component with the lowest rate (ties: the lower index), and its class.
            let rates: Vec<f64> = (0..NC)
                .map(|c| {
                    let mut cost = [0u64; NC];
                    cost[c] = e.cost[c];
                    rate_of(t, &cost).pps
                })
                .collect();
            let owner = (0..NC)
                .filter(|&c| c == 0 || t.dram.is_some())
                .min_by(|&a, &b| rates[a].total_cmp(&rates[b]).then(a.cmp(&b)))
                .unwrap();
            let class_ok = !self.bit_rate || mps == self.class[i];
            if owner != self.streams[i].component || !class_ok {
                self.dropped += 1;
                continue;
            }
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
    pub fn edges(&self, dag: &Dag, f: &Found) -> Vec<(u32, u32, u32)> {
        self.streams[f.stream].walk(dag, &self.src, dag.sink(), f.k)
    }
}
