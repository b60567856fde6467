//! Python bindings of nicsim-flowmem: `FlowCapture` (a reassembled capture) and `FlowView`
//! (one flow direction read in place). Bad input raises `nicsim.InputError` with one line.

use std::path::PathBuf;

use nicsim_flowmem::baseline::Contiguous;
use nicsim_flowmem::{Config, Limits, OverlapPolicy, Reassembly, StreamRegex};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::InputError;

fn input_error(e: impl ToString) -> PyErr {
    InputError::new_err(e.to_string())
}

/// The TCP flows of a pcap or pcapng file, reassembled without copying payloads.
#[pyclass(frozen, module = "nicsim._core")]
struct FlowCapture {
    inner: Reassembly,
}

#[pymethods]
impl FlowCapture {
    /// Reassemble `path`. `overlap`: "first" (default) or "last" wins on conflicting bytes.
    #[new]
    #[pyo3(signature = (path, overlap="first", max_flows=None, max_arena_bytes=None, max_segments_per_direction=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        overlap: &str,
        max_flows: Option<usize>,
        max_arena_bytes: Option<u64>,
        max_segments_per_direction: Option<usize>,
    ) -> PyResult<Self> {
        let overlap = match overlap {
            "first" => OverlapPolicy::FirstWins,
            "last" => OverlapPolicy::LastWins,
            other => {
                return Err(input_error(format!(
                    "overlap policy {other:?}: expected \"first\" or \"last\""
                )))
            }
        };
        let defaults = Limits::default();
        let config = Config {
            overlap,
            limits: Limits {
                max_flows: max_flows.unwrap_or(defaults.max_flows),
                max_arena_bytes: max_arena_bytes.unwrap_or(defaults.max_arena_bytes),
                max_segments_per_direction: max_segments_per_direction
                    .unwrap_or(defaults.max_segments_per_direction),
            },
        };
        let inner = py
            .detach(|| Reassembly::from_capture(&path, config))
            .map_err(input_error)?;
        Ok(FlowCapture { inner })
    }

    /// Packet outcomes: `read` and one count per reason (they sum to `read`).
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("read", self.inner.counts.read)?;
        for (name, n) in self.inner.counts.buckets() {
            d.set_item(name, n)?;
        }
        Ok(d)
    }

    /// Arena bytes used.
    #[getter]
    fn arena_bytes(&self) -> u64 {
        self.inner.arena.used_bytes()
    }

    /// Number of flows.
    fn __len__(&self) -> usize {
        self.inner.flows.len()
    }

    /// One dict per flow direction, in flow order (direction 0 first).
    fn directions<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut out = Vec::new();
        for (i, flow) in self.inner.flows.iter().enumerate() {
            for (d, dir) in flow.dirs.iter().enumerate() {
                let row = PyDict::new(py);
                row.set_item("flow", i)?;
                row.set_item("direction", d)?;
                row.set_item("src", dir.src.to_string())?;
                row.set_item("dst", dir.dst.to_string())?;
                row.set_item("sport", dir.sport)?;
                row.set_item("dport", dir.dport)?;
                row.set_item("proto", "tcp")?;
                row.set_item("bytes", dir.len_bytes)?;
                let holes: Vec<(u64, u64)> =
                    dir.holes.iter().map(|h| (h.offset, h.len_bytes)).collect();
                row.set_item("holes", holes)?;
                row.set_item("segments", dir.segments.len())?;
                row.set_item("packets", dir.packets)?;
                row.set_item("syn", dir.syn)?;
                row.set_item("fin", dir.fin)?;
                row.set_item("rst", dir.rst)?;
                row.set_item("start_seq", dir.start_seq)?;
                row.set_item("payload_bytes", dir.bytes.payload_bytes)?;
                row.set_item("new_bytes", dir.bytes.new_bytes)?;
                row.set_item("duplicate_bytes", dir.bytes.duplicate_bytes)?;
                row.set_item("conflict_bytes", dir.bytes.conflict_bytes)?;
                row.set_item("before_start_bytes", dir.bytes.before_start_bytes)?;
                out.push(row);
            }
        }
        Ok(out)
    }

    /// A view of flow `flow`, direction `direction` (0 or 1).
    fn view(slf: &Bound<'_, Self>, flow: usize, direction: usize) -> PyResult<FlowView> {
        if slf.get().inner.view(flow, direction).is_none() {
            return Err(input_error(format!(
                "no flow {flow} direction {direction}: the capture has {} flows, directions 0 and 1",
                slf.get().inner.flows.len()
            )));
        }
        Ok(FlowView {
            capture: slf.clone().unbind(),
            flow,
            direction,
        })
    }
}

/// One flow direction, read in place through its translation table.
#[pyclass(frozen, module = "nicsim._core")]
struct FlowView {
    capture: Py<FlowCapture>,
    flow: usize,
    direction: usize,
}

impl FlowView {
    fn with<T>(&self, f: impl FnOnce(&nicsim_flowmem::FlowView<'_>) -> T) -> T {
        let view = self
            .capture
            .get()
            .inner
            .view(self.flow, self.direction)
            .expect("checked when the view was made");
        f(&view)
    }
}

#[pymethods]
impl FlowView {
    /// Stream length in bytes, holes included.
    fn __len__(&self) -> usize {
        self.with(|v| v.len() as usize)
    }

    /// Missing ranges as (offset, length).
    #[getter]
    fn holes(&self) -> Vec<(u64, u64)> {
        self.with(|v| v.holes().iter().map(|h| (h.offset, h.len_bytes)).collect())
    }

    /// The translation table as (stream offset, arena address, length).
    #[getter]
    fn segments(&self) -> Vec<(u64, u64, u64)> {
        self.with(|v| {
            v.segments()
                .iter()
                .map(|s| (s.offset, s.addr, s.len_bytes))
                .collect()
        })
    }

    /// `n` bytes from `offset` (copies exactly those); InputError on a hole or past the end.
    fn read<'py>(&self, py: Python<'py>, offset: u64, n: usize) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.with(|v| v.read(offset, n)).map_err(input_error)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The contiguous chunks as (offset, bytes); Python gets copies, the Rust side copies nothing.
    fn chunks<'py>(&self, py: Python<'py>) -> Vec<(u64, Bound<'py, PyBytes>)> {
        self.with(|v| {
            v.chunks()
                .map(|c| (c.offset, PyBytes::new(py, c.bytes)))
                .collect()
        })
    }

    /// The whole stream as bytes, holes zero-filled (the copy-based assembly).
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let bytes = self.with(|v| Contiguous::assemble(v).bytes);
        PyBytes::new(py, &bytes)
    }

    /// Byte histogram (256 counts) over the stream, read in place.
    fn byte_histogram(&self) -> Vec<u64> {
        self.with(|v| v.byte_histogram().to_vec())
    }

    /// Non-overlapping occurrences of `needle` (never across a hole).
    fn count_literal(&self, needle: &[u8]) -> u64 {
        self.with(|v| v.count_literal(needle))
    }

    /// Regex matches as (start, end) stream offsets, leftmost-first, never across a hole.
    fn regex_matches(&self, py: Python<'_>, pattern: &str) -> PyResult<Vec<(u64, u64)>> {
        let regex = StreamRegex::new(pattern).map_err(input_error)?;
        py.detach(|| self.with(|v| v.regex_matches(&regex)))
            .map_err(input_error)
    }
}

/// The flow-memory speed benchmark (`make bench`): reads the capture at `path` into memory,
/// then times zero-copy reassembly plus a linear scan beside the copy-based baseline, best of
/// `repeat`. Returns the figures as JSON (`nicsim_flowmem::bench::SpeedBench`).
#[pyfunction]
#[pyo3(signature = (path, repeat=3))]
fn flow_speed_bench(py: Python<'_>, path: PathBuf, repeat: u32) -> PyResult<String> {
    py.detach(|| {
        let name = path.display();
        let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {name}: {e}"))?;
        let capture = std::sync::Arc::new(bytes);
        let out = nicsim_flowmem::bench::speed_bench(capture, Config::default(), repeat)
            .map_err(|e| format!("{name}: {e}"))?;
        serde_json::to_string(&out).map_err(|e| e.to_string())
    })
    .map_err(input_error)
}

/// Writes a synthetic TCP capture of `flows` connections (other settings default) to `path`,
/// pcap or pcapng. Returns its report as JSON (`nicsim_flowmem::synth::SynthReport`).
#[pyfunction]
#[pyo3(signature = (path, flows, seed=1, pcapng=false))]
fn flow_synth(
    py: Python<'_>,
    path: PathBuf,
    flows: u64,
    seed: u64,
    pcapng: bool,
) -> PyResult<String> {
    use nicsim_flowmem::synth::{synthesize, SynthConfig};
    use nicsim_packet::capture::CaptureFormat;
    let config = SynthConfig {
        flows,
        seed,
        ..SynthConfig::default()
    };
    config.check().map_err(input_error)?;
    let format = if pcapng {
        CaptureFormat::PcapNg
    } else {
        CaptureFormat::Pcap
    };
    py.detach(|| {
        let report = synthesize(&config, &path, format, &mut |_| {}).map_err(|e| e.to_string())?;
        serde_json::to_string(&report).map_err(|e| e.to_string())
    })
    .map_err(input_error)
}

/// Adds the flow-memory classes and functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FlowCapture>()?;
    m.add_class::<FlowView>()?;
    m.add_function(wrap_pyfunction!(flow_speed_bench, m)?)?;
    m.add_function(wrap_pyfunction!(flow_synth, m)?)?;
    Ok(())
}
