//! Host measurements of the two designs on this machine (`nicsim flow bench`): the copy-based
//! baseline assembles each stream into a contiguous buffer and runs the workload there; the
//! flow-based design runs it on the [`FlowView`]s in place. Same flows, same workload, same
//! answer (checked); bytes copied and read are counted, time is the best of `repeat` runs.

use std::time::Instant;

use serde::Serialize;

use crate::baseline::Contiguous;
use crate::view::{FlowView, StreamRegex};
use crate::Reassembly;

/// What the core does with each stream.
#[derive(Debug)]
pub enum HostWorkload {
    /// A linear scan: the byte histogram of the stream (every byte read once).
    Scan,
    /// Every match of a regular expression (leftmost-first, non-overlapping).
    Regex(Box<StreamRegex>),
}

/// One design, measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HostSide {
    /// Stream bytes copied into contiguous buffers.
    pub bytes_copied: u64,
    /// Bytes read (the copy's reads and the workload's).
    pub bytes_read: u64,
    /// Best wall time of the workload over all streams, the copy included.
    pub seconds: f64,
    /// Stream bytes per second, in Gbit/s.
    pub gbps: f64,
}

/// Both designs on one capture.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HostBench {
    /// Stream bytes (holes excluded).
    pub payload_bytes: u64,
    /// Flow directions with data.
    pub streams: u64,
    /// Copy-based.
    pub copy: HostSide,
    /// Flow-based.
    pub flow: HostSide,
    /// The workload's answer (histogram total or matches), the same for both.
    pub result: u64,
}

/// Every flow direction with data.
pub fn views(r: &Reassembly) -> Vec<FlowView<'_>> {
    (0..r.flows.len())
        .flat_map(|f| (0..2).map(move |d| (f, d)))
        .filter_map(|(f, d)| r.view(f, d))
        .filter(|v| !v.segments().is_empty())
        .collect()
}

fn flow_pass(views: &[FlowView<'_>], w: &HostWorkload) -> Result<u64, crate::FlowError> {
    let mut result = 0;
    for v in views {
        result += match w {
            HostWorkload::Scan => v.byte_histogram().iter().sum::<u64>(),
            HostWorkload::Regex(re) => v.regex_matches(re)?.len() as u64,
        };
    }
    Ok(result)
}

fn copy_pass(views: &[FlowView<'_>], w: &HostWorkload) -> (u64, u64, u64) {
    let (mut result, mut copied, mut read) = (0, 0, 0);
    for v in views {
        let mut c = Contiguous::assemble(v);
        result += match w {
            HostWorkload::Scan => c.byte_histogram().iter().sum::<u64>(),
            HostWorkload::Regex(re) => c.regex_matches(re).len() as u64,
        };
        copied += c.copied_bytes;
        read += c.read_bytes;
    }
    (result, copied, read)
}

/// Measures both designs on `r`'s streams, best of `repeat` (at least 1).
pub fn host_bench(
    r: &Reassembly,
    w: &HostWorkload,
    repeat: u32,
) -> Result<HostBench, crate::FlowError> {
    let views = views(r);
    let payload: u64 = views
        .iter()
        .map(|v| v.segments().iter().map(|s| s.len_bytes).sum::<u64>())
        .sum();
    let mut out = HostBench {
        payload_bytes: payload,
        streams: views.len() as u64,
        ..HostBench::default()
    };
    let (mut best_copy, mut best_flow) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        let (result, copied, read) = copy_pass(&views, w);
        best_copy = best_copy.min(t.elapsed().as_secs_f64());
        out.copy.bytes_copied = copied;
        out.copy.bytes_read = read;
        out.result = result;
        let before: u64 = views.iter().map(|v| v.read_bytes()).sum();
        let t = Instant::now();
        let flow_result = flow_pass(&views, w)?;
        best_flow = best_flow.min(t.elapsed().as_secs_f64());
        out.flow.bytes_read = views.iter().map(|v| v.read_bytes()).sum::<u64>() - before;
        assert_eq!(flow_result, result, "the two designs disagree");
    }
    let gbps = |s: f64| {
        if s > 0.0 {
            payload as f64 * 8.0 / s / 1e9
        } else {
            0.0
        }
    };
    out.copy.seconds = best_copy;
    out.copy.gbps = gbps(best_copy);
    out.flow.seconds = best_flow;
    out.flow.gbps = gbps(best_flow);
    Ok(out)
}
