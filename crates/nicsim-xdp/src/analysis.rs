//! One analysis, from object bytes to the summary that `nicsim xdp analyze` writes.

use serde_json::{json, Value};

use crate::cfg::{self, Limits};
use crate::cost::{self, Dag, COMPONENTS, UNITS_PER_CYCLE};
use crate::load::{self, Program};
use crate::paths;
use crate::target::Target;

#[derive(Debug, thiserror::Error)]
pub enum XdpError {
    #[error(transparent)]
    Load(#[from] load::LoadError),
    #[error(transparent)]
    Cfg(#[from] cfg::CfgError),
    #[error(transparent)]
    Cost(#[from] cost::CostError),
}

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub section: Option<String>,
    pub loop_bound: Option<u32>,
}

/// A loaded, unrolled and costed program.
pub struct Analysis {
    pub program: Program,
    pub graph: cfg::Graph,
    pub dag: Dag,
    pub target: Target,
}

impl Analysis {
    pub fn new(bytes: &[u8], target: Target, opts: &Options) -> Result<Analysis, XdpError> {
        let program = load::load(bytes, opts.section.as_deref())?;
        let graph = cfg::build(
            &program,
            Limits {
                loop_bound: opts.loop_bound,
                ..Limits::default()
            },
        )?;
        let dag = cost::costed(&program, &graph, &target)?;
        Ok(Analysis {
            program,
            graph,
            dag,
            target,
        })
    }

    /// Instructions (program indices) along a path of edges.
    pub fn path_insns(&self, path: &[u32]) -> Vec<u32> {
        path.iter().map(|&e| self.dag.pc[e as usize]).collect()
    }

    /// Distinct source lines along a path, in order of first appearance.
    pub fn path_lines(&self, path: &[u32]) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for pc in self.path_insns(path) {
            if let Some(l) = self.program.line(pc as usize) {
                let s = l.short();
                if seen.insert(s.clone()) {
                    out.push(s);
                }
            }
        }
        out
    }

    /// The summary with the naive bound as the guarantee (`status = "naive-only"`).
    pub fn naive_summary(&self) -> Value {
        let t = &self.target;
        let n = paths::naive(&self.dag, t);
        let cost = paths::path_cost(&self.dag, &n.path);
        let mps = n
            .path
            .iter()
            .map(|&e| self.dag.need[e as usize])
            .max()
            .unwrap_or(0)
            .max(t.limits.min_packet_bytes);
        let maps: serde_json::Map<String, Value> = self
            .program
            .maps
            .iter()
            .map(|m| {
                (
                    m.name.clone(),
                    json!({"type": m.type_name(), "key_size": m.key_size, "value_size": m.value_size,
                           "max_entries": m.max_entries, "entries": {}}),
                )
            })
            .collect();
        let loops: Vec<Value> = self
            .graph
            .loops
            .iter()
            .map(|l| {
                json!({"insn": l.header_pc, "line": self.program.line(l.header_pc as usize).map(|s| s.short()),
                       "bound": l.bound, "evident": l.evident})
            })
            .collect();
        json!({
            "object": {"section": self.program.section, "program": self.program.name,
                       "insns": self.program.code.iter().filter(|i| i.is_some()).count()},
            "target": t.name,
            "graph": {"nodes": self.dag.n, "edges": self.dag.n_edges(),
                      "paths": self.graph.path_count().to_string(), "loops": loops},
            "naive": {"pps": n.pps, "bps": n.bps, "bottleneck": n.bottleneck,
                      "min_packet_bytes": n.bps_packet_bytes},
            "guarantee": {"pps": n.pps, "bps": n.bps, "bottleneck": n.bottleneck,
                          "min_packet_bytes": n.bps_packet_bytes, "status": "naive-only"},
            "path": {"insns": self.path_insns(&n.path), "source_lines": self.path_lines(&n.path),
                     "cost": {COMPONENTS[0]: cost[0] as f64 / UNITS_PER_CYCLE, COMPONENTS[1]: cost[1] as f64 / UNITS_PER_CYCLE},
                     "min_packet_bytes": mps, "feasible": Value::Null,
                     "xdp_action": Value::Null, "retval": Value::Null},
            "example_packet_hex": Value::Null,
            "maps": maps,
            "paths_enumerated": 0,
            "paths_unsat": 0,
        })
    }
}
