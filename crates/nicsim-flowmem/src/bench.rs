//! Host measurements of the two designs on this machine (`nicsim flowmem bench`): the copy-based
//! baseline assembles each stream into a contiguous buffer and runs the workload there; the
//! flow-based design runs it on the [`FlowView`]s in place. Same flows, same workload, same
//! answer (checked); bytes copied and read are counted, time is the best of `repeat` runs.
//! [`speed_bench`] times the whole zero-copy path on a capture held in memory (reassembly, then
//! a linear scan) beside the copy-based baseline, for `make bench`.

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::baseline::Contiguous;
use crate::view::{FlowView, StreamRegex};
use crate::Reassembly;

/// What the core does with each stream.
#[derive(Debug)]
pub enum HostWorkload {
    /// The talk's memory-bound linear scan: every byte read once, counting [`SCAN_BYTE`]s.
    Scan,
    /// The byte histogram of the stream: every byte read once with a table update each, so
    /// bound by the core rather than by memory on a host.
    Histogram,
    /// Every match of a regular expression (leftmost-first, non-overlapping).
    Regex(Box<StreamRegex>),
}

/// The byte [`HostWorkload::Scan`] counts: newlines (as `wc -l` does).
pub const SCAN_BYTE: u8 = b'\n';

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
            HostWorkload::Scan => v.count_byte(SCAN_BYTE),
            HostWorkload::Histogram => v.byte_histogram().iter().sum::<u64>(),
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
            HostWorkload::Scan => c.count_byte(SCAN_BYTE),
            HostWorkload::Histogram => c.byte_histogram().iter().sum::<u64>(),
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

/// The speed benchmark of a capture held in memory (`make bench`, issue 4): zero-copy
/// reassembly (the capture buffer is the arena) plus the memory-bound linear scan
/// ([`HostWorkload::Scan`]), beside the copy-based baseline (the same reassembly, then each stream assembled into a contiguous buffer and
/// scanned there). Each step is timed `repeat` times and the best run kept, both in wall time
/// and in this thread's CPU time (which leaves out time spent waiting for a core on a shared
/// machine). The zero-copy side is also timed with the byte histogram in place of the scan,
/// the compute-bound variant.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SpeedBench {
    /// Size of the capture buffer.
    pub capture_bytes: u64,
    /// Packets read.
    pub packets: u64,
    /// TCP flows.
    pub flows: u64,
    /// Flow directions with data.
    pub streams: u64,
    /// Stream bytes (holes excluded): the bytes the scan reads.
    pub stream_bytes: u64,
    /// Runs of each timed step.
    pub repeat: u32,
    /// Best reassembly wall time (parse every record, update the flow and translation tables).
    pub reassembly_seconds: f64,
    /// Best wall time of the scan over the flow views (in place).
    pub flow_scan_seconds: f64,
    /// Best wall time of the byte histogram over the flow views (in place).
    pub flow_histogram_seconds: f64,
    /// Zero-copy with the histogram: stream bytes / (reassembly + histogram), wall time, in
    /// Gbit/s.
    pub flow_histogram_gbps: f64,
    /// Best wall time of the baseline's assembly into contiguous buffers plus the same scan.
    pub copy_assemble_scan_seconds: f64,
    /// Zero-copy: stream bytes / (reassembly + scan), wall time, in Gbit/s.
    pub flow_gbps: f64,
    /// Copy-based: stream bytes / (reassembly + assembly + scan), wall time, in Gbit/s.
    pub copy_gbps: f64,
    /// `flow_gbps / copy_gbps`.
    pub speedup: f64,
    /// Reassembly alone: stream bytes / reassembly wall time, in Gbit/s.
    pub reassembly_gbps: f64,
    /// The same three steps' best times in this thread's CPU time (0 where unknown).
    pub reassembly_cpu_seconds: f64,
    /// Zero-copy scan, CPU time.
    pub flow_scan_cpu_seconds: f64,
    /// Baseline assembly and scan, CPU time.
    pub copy_assemble_scan_cpu_seconds: f64,
    /// Zero-copy Gbit/s per core of CPU time.
    pub flow_gbps_cpu: f64,
    /// Copy-based Gbit/s per core of CPU time.
    pub copy_gbps_cpu: f64,
    /// Bytes the baseline copied (zero-copy: 0).
    pub copy_bytes_copied: u64,
    /// Bytes the baseline read (its copy and its scan).
    pub copy_bytes_read: u64,
    /// Bytes the zero-copy scan read.
    pub flow_bytes_read: u64,
    /// Translation-table entries over all directions.
    pub segments: u64,
    /// The scan's answer (bytes equal to [`SCAN_BYTE`]), the same for both designs.
    pub result: u64,
    /// Peak resident memory of this process so far (Linux `VmHWM`; 0 where unknown).
    pub peak_rss_bytes: u64,
}

/// Best wall and CPU seconds of a step, over its runs.
#[derive(Debug, Clone, Copy)]
struct Best {
    wall_s: f64,
    cpu_s: f64,
}

impl Best {
    fn new() -> Self {
        Best {
            wall_s: f64::INFINITY,
            cpu_s: f64::INFINITY,
        }
    }

    /// Runs `step` once, keeping the best times.
    fn time<T>(&mut self, step: impl FnOnce() -> T) -> T {
        let (wall, cpu) = (Instant::now(), thread_cpu_seconds());
        let out = step();
        self.wall_s = self.wall_s.min(wall.elapsed().as_secs_f64());
        self.cpu_s = self.cpu_s.min(thread_cpu_seconds() - cpu);
        out
    }
}

/// This thread's CPU time in seconds (user and system), 0 where unknown.
fn thread_cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a `rusage` into the pointer it is given, which is valid and
    // zero-initialised; RUSAGE_THREAD is Linux's per-thread accounting.
    #[cfg(target_os = "linux")]
    let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) } == 0;
    #[cfg(not(target_os = "linux"))]
    let ok = false;
    if !ok {
        return 0.0;
    }
    // SAFETY: zero-initialised above and filled by a successful getrusage.
    let usage = unsafe { usage.assume_init() };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Reads the capture file at `path` into memory and runs [`speed_bench`] on it with the default
/// [`crate::Config`]; the error names the file.
pub fn speed_bench_file(path: &std::path::Path, repeat: u32) -> Result<SpeedBench, String> {
    let name = path.display();
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {name}: {e}"))?;
    speed_bench(Arc::new(bytes), crate::Config::default(), repeat)
        .map_err(|e| format!("{name}: {e}"))
}

/// Runs [`SpeedBench`] on `capture` (a pcap or pcapng file's bytes), best of `repeat`.
pub fn speed_bench(
    capture: Arc<Vec<u8>>,
    config: crate::Config,
    repeat: u32,
) -> Result<SpeedBench, crate::FlowError> {
    let repeat = repeat.max(1);
    let mut reassembly_best = Best::new();
    let mut reassembly = None;
    for _ in 0..repeat {
        // The previous run's tables are freed first: one set of tables at a time.
        drop(reassembly.take());
        let r = reassembly_best.time(|| Reassembly::from_capture_bytes(capture.clone(), config))?;
        reassembly = Some(r);
    }
    let r = reassembly.expect("at least one run");
    let views = views(&r);
    let stream_bytes: u64 = views
        .iter()
        .map(|v| v.segments().iter().map(|s| s.len_bytes).sum::<u64>())
        .sum();
    let (mut flow_best, mut copy_best, mut histogram_best) =
        (Best::new(), Best::new(), Best::new());
    let (mut result, mut copied, mut copy_read, mut flow_read) = (0, 0, 0, 0);
    for _ in 0..repeat {
        let before: u64 = views.iter().map(|v| v.read_bytes()).sum();
        let flow_result = flow_best.time(|| flow_pass(&views, &HostWorkload::Scan))?;
        flow_read = views.iter().map(|v| v.read_bytes()).sum::<u64>() - before;
        (result, copied, copy_read) = copy_best.time(|| copy_pass(&views, &HostWorkload::Scan));
        assert_eq!(flow_result, result, "the two designs disagree");
        let counted = histogram_best.time(|| flow_pass(&views, &HostWorkload::Histogram))?;
        assert_eq!(counted, stream_bytes, "the histogram missed bytes");
    }
    let gbps = |seconds: f64| {
        if seconds > 0.0 && seconds.is_finite() {
            stream_bytes as f64 * 8.0 / seconds / 1e9
        } else {
            0.0
        }
    };
    let flow_gbps = gbps(reassembly_best.wall_s + flow_best.wall_s);
    let copy_gbps = gbps(reassembly_best.wall_s + copy_best.wall_s);
    Ok(SpeedBench {
        capture_bytes: capture.len() as u64,
        packets: r.counts.read,
        flows: r.flows.len() as u64,
        streams: views.len() as u64,
        stream_bytes,
        repeat,
        reassembly_seconds: reassembly_best.wall_s,
        flow_scan_seconds: flow_best.wall_s,
        flow_histogram_seconds: histogram_best.wall_s,
        flow_histogram_gbps: gbps(reassembly_best.wall_s + histogram_best.wall_s),
        copy_assemble_scan_seconds: copy_best.wall_s,
        flow_gbps,
        copy_gbps,
        speedup: if copy_gbps > 0.0 {
            flow_gbps / copy_gbps
        } else {
            0.0
        },
        reassembly_gbps: gbps(reassembly_best.wall_s),
        reassembly_cpu_seconds: reassembly_best.cpu_s,
        flow_scan_cpu_seconds: flow_best.cpu_s,
        copy_assemble_scan_cpu_seconds: copy_best.cpu_s,
        flow_gbps_cpu: gbps(reassembly_best.cpu_s + flow_best.cpu_s),
        copy_gbps_cpu: gbps(reassembly_best.cpu_s + copy_best.cpu_s),
        copy_bytes_copied: copied,
        copy_bytes_read: copy_read,
        flow_bytes_read: flow_read,
        segments: r
            .flows
            .iter()
            .flat_map(|f| &f.dirs)
            .map(|d| d.segments.len() as u64)
            .sum(),
        result,
        peak_rss_bytes: peak_rss_bytes(),
    })
}

/// Peak resident memory of this process (`VmHWM` in `/proc/self/status`), 0 where unknown.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        })
        .unwrap_or(0)
}
