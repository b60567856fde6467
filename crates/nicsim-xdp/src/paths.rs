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
