//! Python bindings of nicsim-flowmem: `FlowCapture` (a reassembled capture) and `FlowView`
//! (one flow direction read in place). Bad input raises `nicsim.InputError` with one line.

use std::path::PathBuf;
use std::sync::Mutex;

/// Frames `flow_synth` writes between two looks for a signal (Ctrl-C, SIGTERM).
const SIGNAL_CHECK_FRAMES: u64 = 4096;

use nicsim_flowmem::baseline::Contiguous;
use nicsim_flowmem::bench::{host_bench, speed_bench_file};
use nicsim_flowmem::model::{Comparison, MemConfig, MemModel, Workload};
use nicsim_flowmem::names;
use nicsim_flowmem::synth::{generate, SynthConfig};
use nicsim_flowmem::{Config, Reassembly, StreamRegex};
use nicsim_packet::capture::{CaptureError, CaptureFormat, CaptureWriter};
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyMemoryView, PySlice};

use crate::InputError;

fn input_error(e: impl ToString) -> PyErr {
    InputError::new_err(e.to_string())
}

/// A Python buffer (the capture's read-only memory map, or a `bytes` object), shared with the
/// arena without copying.
struct PyBufferBytes {
    buffer: PyBuffer<u8>,
}

impl AsRef<[u8]> for PyBufferBytes {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the buffer is C-contiguous (checked when it was taken) and read-only: its
        // exporter (an mmap in ACCESS_READ mode, or bytes) neither changes nor moves it while
        // the export that `PyBuffer` holds lives, which is as long as this value.
        unsafe {
            std::slice::from_raw_parts(self.buffer.buf_ptr() as *const u8, self.buffer.len_bytes())
        }
    }
}

/// The TCP flows of a pcap or pcapng file, reassembled without copying payloads: the file is
/// mapped into memory read-only (Python's `mmap`), and the mapping is the arena; chunks are
/// memoryviews of it. A capture larger than memory needs no more: the mapping's pages are the
/// file's, which the kernel reads in and drops as it needs (an empty file is an empty `bytes`).
#[pyclass(frozen, module = "nicsim._core")]
struct FlowCapture {
    inner: Reassembly,
    data: Py<PyAny>,
}

/// The file at `path` mapped read-only (`mmap.mmap(fd, 0, access=ACCESS_READ)`), or an empty
/// `bytes` for an empty file.
fn map_file<'py>(py: Python<'py>, path: &std::path::Path) -> PyResult<Bound<'py, PyAny>> {
    let read_error = |e: std::io::Error| input_error(format!("{}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(read_error)?;
    if file.metadata().map_err(read_error)?.len() == 0 {
        return Ok(PyBytes::new(py, b"").into_any());
    }
    let mmap = py.import("mmap")?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("access", mmap.getattr("ACCESS_READ")?)?;
    use std::os::fd::AsRawFd;
    let m = mmap
        .getattr("mmap")?
        .call((file.as_raw_fd(), 0), Some(&kwargs))
        .map_err(|e| input_error(format!("{}: cannot map the capture: {e}", path.display())))?;
    // The file's pages are read in order once: read ahead of the reassembler.
    if let Ok(seq) = mmap.getattr("MADV_SEQUENTIAL") {
        let _ = m.call_method1("madvise", (seq,));
    }
    Ok(m) // (the mapping stays valid once the file is closed)
}

#[pymethods]
impl FlowCapture {
    /// Reassemble `path`. `overlap`: "first" (default) or "last" wins on conflicting bytes;
    /// `unacked`: "keep" (default), "drop" the data the peer never acknowledged, or "tshark"
    /// (drop it only past the first hole, as tshark's follow does). The limits
    /// default to `nicsim_flowmem::Limits::default()`.
    #[new]
    #[pyo3(signature = (path, overlap="first", max_flows=None, max_arena_bytes=None, max_segments_per_direction=None, max_hole_bytes=None, unacked="keep"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        overlap: &str,
        max_flows: Option<usize>,
        max_arena_bytes: Option<u64>,
        max_segments_per_direction: Option<usize>,
        max_hole_bytes: Option<u64>,
        unacked: &str,
    ) -> PyResult<Self> {
        let config = Config::from_names(
            overlap,
            unacked,
            max_flows,
            max_arena_bytes,
            max_segments_per_direction,
            max_hole_bytes,
        )
        .map_err(input_error)?;
        let data = map_file(py, &path)?;
        let buffer = PyBuffer::<u8>::get(&data)?;
        if !buffer.is_c_contiguous() || !buffer.readonly() {
            return Err(input_error(format!(
                "{}: the capture's mapping is not a read-only contiguous buffer",
                path.display()
            )));
        }
        let shared = std::sync::Arc::new(PyBufferBytes { buffer });
        // Ctrl-C and SIGTERM are looked for between slices of records (a few milliseconds).
        let inner = py
            .detach(|| {
                Reassembly::from_capture_bytes_until(shared, config, || {
                    Python::attach(|py| py.check_signals())
                })
            })?
            .map_err(|e| input_error(format!("{}: {e}", path.display())))?;
        Ok(FlowCapture {
            inner,
            data: data.unbind(),
        })
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

    /// The link types of the packets counted `unsupported_link` (at most 16), each as
    /// (number, libpcap name or None).
    #[getter]
    fn unsupported_links(&self) -> Vec<(u32, Option<&'static str>)> {
        self.inner
            .unsupported_links
            .iter()
            .map(|&lt| (lt, nicsim_packet::linktype::name(lt)))
            .collect()
    }

    /// Connections that reused an earlier connection's 5-tuple (each is a flow of its own).
    #[getter]
    fn reused_tuples(&self) -> u64 {
        self.inner.reused_tuples
    }

    /// The limits used, as a dict (`max_flows`, `max_arena_bytes`,
    /// `max_segments_per_direction`, `max_hole_bytes`).
    #[getter]
    fn limits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let l = &self.inner.config.limits;
        let d = PyDict::new(py);
        d.set_item("max_flows", l.max_flows)?;
        d.set_item("max_arena_bytes", l.max_arena_bytes)?;
        d.set_item("max_segments_per_direction", l.max_segments_per_direction)?;
        d.set_item("max_hole_bytes", l.max_hole_bytes)?;
        Ok(d)
    }

    /// IP defragmentation: `fragments` seen, `datagrams` put together from
    /// `fragments_reassembled`, `overlap_bytes` (of which `conflict_bytes` differed), fragments
    /// `cut` by the capture, `evicted` by a bound, and `pending` (never completed).
    fn defrag<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.inner.defrag;
        let d = PyDict::new(py);
        d.set_item("fragments", c.fragments)?;
        d.set_item("datagrams", c.datagrams)?;
        d.set_item("fragments_reassembled", c.fragments_reassembled)?;
        d.set_item("overlap_bytes", c.overlap_bytes)?;
        d.set_item("conflict_bytes", c.conflict_bytes)?;
        d.set_item("cut", c.cut)?;
        d.set_item("evicted", c.evicted)?;
        d.set_item("pending", c.pending)?;
        Ok(d)
    }

    /// What the capture reader skipped or cut without refusing the capture:
    /// (`warnings`: the first lines, `warning_count`, `records_cut`, `cut_short_at`: the offset
    /// of the record inside which the file ends, or `None`).
    #[getter]
    fn leniency(&self) -> (Vec<String>, u64, u64, Option<u64>) {
        let l = &self.inner.leniency;
        (
            l.warnings.clone(),
            l.warning_count,
            l.records_cut,
            l.cut_short_at,
        )
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
        (0..2 * self.inner.flows.len())
            .map(|i| {
                if i % 8192 == 0 {
                    py.check_signals()?; // 131,070 directions take seconds: Ctrl-C and SIGTERM end them
                }
                self.direction(py, i)
            })
            .collect()
    }

    /// Per flow, in flow order, its stream bytes and segments over both directions (two
    /// little-endian u64s per flow), and the number of cut directions: what `flowmem sizes`
    /// needs, 16 bytes a flow instead of two dicts (a 200,000-flow SYN flood took 1.2 GB of
    /// dicts).
    fn flow_sizes<'py>(&self, py: Python<'py>) -> (Bound<'py, PyBytes>, u64) {
        let mut packed = Vec::with_capacity(16 * self.inner.flows.len());
        let mut cut = 0u64;
        for flow in &self.inner.flows {
            let bytes: u64 = flow.dirs.iter().map(|d| d.len_bytes).sum();
            let segments: u64 = flow.dirs.iter().map(|d| d.segments.len() as u64).sum();
            cut += flow.dirs.iter().filter(|d| d.cut).count() as u64;
            packed.extend_from_slice(&bytes.to_le_bytes());
            packed.extend_from_slice(&segments.to_le_bytes());
        }
        (PyBytes::new(py, &packed), cut)
    }

    /// The dict of flow direction `i` of [`FlowCapture::directions`] (flow `i / 2`, direction
    /// `i % 2`), so that a caller can go through them one at a time.
    fn direction<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyDict>> {
        let flows = self.inner.flows.len();
        let Some(flow) = self.inner.flows.get(i / 2) else {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "direction {i}: the capture has {flows} flows, {} directions",
                2 * flows
            )));
        };
        let d = i % 2;
        let dir = &flow.dirs[d];
        let row = PyDict::new(py);
        row.set_item("flow", i / 2)?;
        row.set_item("direction", d)?;
        row.set_item("src", dir.src.to_string())?;
        row.set_item("dst", dir.dst.to_string())?;
        row.set_item("sport", dir.sport)?;
        row.set_item("dport", dir.dport)?;
        row.set_item("proto", "tcp")?;
        // A tunnelled flow: the outermost tunnel's kind and endpoints.
        let t = flow.tunnel;
        row.set_item("tunnel", t.map(|t| t.kind.name()))?;
        row.set_item("tunnel_src", t.map(|t| t.src.to_string()))?;
        row.set_item("tunnel_dst", t.map(|t| t.dst.to_string()))?;
        // Every tunnel, outermost first ("gtp-u/gre"; "" without one).
        row.set_item("tunnels", flow.tunnels.names())?;
        row.set_item("bytes", dir.len_bytes)?;
        let holes: Vec<(u64, u64)> = dir.holes.iter().map(|h| (h.offset, h.len_bytes)).collect();
        row.set_item("holes", holes)?;
        row.set_item("segments", dir.segments.len())?;
        row.set_item("packets", dir.packets)?;
        row.set_item("syn", dir.syn)?;
        row.set_item("fin", dir.fin)?;
        row.set_item("rst", dir.rst)?;
        row.set_item("cut", dir.cut)?;
        row.set_item("start_seq", dir.start_seq)?;
        row.set_item("payload_bytes", dir.bytes.payload_bytes)?;
        row.set_item("new_bytes", dir.bytes.new_bytes)?;
        row.set_item("duplicate_bytes", dir.bytes.duplicate_bytes)?;
        row.set_item("conflict_bytes", dir.bytes.conflict_bytes)?;
        row.set_item("before_start_bytes", dir.bytes.before_start_bytes)?;
        row.set_item("unacked_bytes", dir.bytes.unacked_bytes)?;
        row.set_item("snaplen_cut_bytes", dir.bytes.snaplen_cut_bytes)?;
        Ok(row)
    }

    /// Write `flows.json`, `directions.csv` and a stream file per direction with a stream byte
    /// into `folder` (`nicsim_flowmem::write`), holes shown as `hole_marker` says ("zero" or
    /// "tshark"). Returns the totals for the summary, and `sizes`: every direction's stream
    /// length as little-endian u64s.
    fn write_directions<'py>(
        &self,
        py: Python<'py>,
        folder: PathBuf,
        hole_marker: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let marker: names::HoleMarker = hole_marker.parse().map_err(input_error)?;
        let w = py
            .detach(|| nicsim_flowmem::write::write_directions(&self.inner, &folder, marker))
            .map_err(input_error)?;
        let d = PyDict::new(py);
        d.set_item("directions", w.directions)?;
        d.set_item("files", w.files)?;
        d.set_item("stream_bytes", w.stream_bytes)?;
        d.set_item("hole_bytes", w.hole_bytes)?;
        d.set_item("unacked_bytes", w.unacked_bytes)?;
        d.set_item("cut_directions", w.cut_directions)?;
        d.set_item("tunnelled_flows", w.tunnelled_flows)?;
        let sizes: Vec<u8> = w.sizes.iter().flat_map(|s| s.to_le_bytes()).collect();
        d.set_item("sizes", PyBytes::new(py, &sizes))?;
        Ok(d)
    }

    /// A view of flow `flow`, direction `direction` (0 or 1).
    fn view(slf: &Bound<'_, Self>, flow: usize, direction: usize) -> PyResult<FlowView> {
        slf.get()
            .inner
            .try_view(flow, direction)
            .map_err(input_error)?;
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

    /// The contiguous chunks as (offset, memoryview): read-only views of the capture's bytes,
    /// in stream order; nothing is copied (but for payloads of IP datagrams put together from
    /// fragments, which lie in the arena's side buffer: those are copied into `bytes`).
    fn chunks<'py>(&self, py: Python<'py>) -> PyResult<Vec<(u64, Bound<'py, PyAny>)>> {
        let whole = PyMemoryView::from(self.capture.get().data.bind(py).as_any())?;
        let arena = &self.capture.get().inner.arena;
        let segments: Vec<(u64, u64, u64)> = self.with(|v| {
            v.segments()
                .iter()
                .map(|s| (s.offset, s.addr, s.len_bytes))
                .collect()
        });
        segments
            .into_iter()
            .map(|(offset, addr, len)| {
                if !arena.in_capture(addr) {
                    let bytes = arena.get(addr, len as usize);
                    return Ok((offset, PyBytes::new(py, bytes).into_any()));
                }
                let (start, end) = (addr as isize, (addr + len) as isize);
                Ok((offset, whole.get_item(PySlice::new(py, start, end, 1))?))
            })
            .collect()
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

fn mem_config(target_toml: &str, retrieval: Option<&str>) -> PyResult<MemConfig> {
    MemConfig::from_toml_with_retrieval(target_toml, retrieval).map_err(input_error)
}

fn mem_workload(kind: &str, pattern: Option<&str>) -> PyResult<Workload> {
    names::model_workload(kind, pattern).map_err(input_error)
}

/// Every flow-memory option with a fixed set of names (`overlap`, `unacked`, `hole_marker`,
/// `retrieval`, `workload`), with its names: `nicsim_flowmem::names::option_names`.
#[pyfunction]
fn flow_names<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (option, values) in names::option_names() {
        d.set_item(option, values)?;
    }
    Ok(d)
}

/// Check that `value` is one of `option`'s names (`flow_names`), with the core's message.
#[pyfunction]
fn flow_check_name(option: &str, value: &str) -> PyResult<()> {
    names::check_name(option, value).map_err(input_error)
}

/// Check a memory-model target (TOML) and a retrieval, without a capture.
#[pyfunction]
#[pyo3(signature = (target_toml, retrieval=None))]
fn flow_check_target(target_toml: &str, retrieval: Option<&str>) -> PyResult<()> {
    mem_config(target_toml, retrieval).map(|_| ())
}

/// Check a workload and its pattern (both the host's and the model's regex), without a capture.
#[pyfunction]
#[pyo3(signature = (workload, pattern=None))]
fn flow_check_workload(workload: &str, pattern: Option<&str>) -> PyResult<()> {
    names::check_workload(workload, pattern).map_err(input_error)
}

fn comparison_json(c: &MemConfig, cmp: &Comparison) -> String {
    serde_json::to_string(&cmp.summary(c)).expect("serializable")
}

/// The SmartNIC memory model (both designs) over every flow direction of `capture`; JSON.
#[pyfunction]
#[pyo3(signature = (capture, workload, pattern, target_toml, retrieval=None))]
fn flow_model(
    py: Python<'_>,
    capture: &FlowCapture,
    workload: &str,
    pattern: Option<&str>,
    target_toml: &str,
    retrieval: Option<&str>,
) -> PyResult<String> {
    let c = mem_config(target_toml, retrieval)?;
    let w = mem_workload(workload, pattern)?;
    let r = &capture.inner;
    let cmp = py.detach(|| MemModel::new(c.clone()).compare_reassembly(r, &w));
    Ok(comparison_json(&c, &cmp))
}

/// The model on the talk's micro-benchmark: `packets` payloads of `payload_bytes`, each in its
/// own `buffer_bytes` packet buffer; JSON.
#[pyfunction]
#[pyo3(signature = (packets, payload_bytes, buffer_bytes, workload, pattern, target_toml, retrieval=None))]
#[allow(clippy::too_many_arguments)]
fn flow_model_micro(
    py: Python<'_>,
    packets: u32,
    payload_bytes: u32,
    buffer_bytes: u32,
    workload: &str,
    pattern: Option<&str>,
    target_toml: &str,
    retrieval: Option<&str>,
) -> PyResult<String> {
    let c = mem_config(target_toml, retrieval)?;
    let w = mem_workload(workload, pattern)?;
    let cmp = py.detach(|| {
        MemModel::new(c.clone()).compare_micro(packets, payload_bytes, buffer_bytes, &w)
    });
    Ok(comparison_json(&c, &cmp))
}

/// A built-in memory-model target's TOML text, by name.
#[pyfunction]
fn flow_model_target(name: &str) -> Option<&'static str> {
    nicsim_flowmem::model::target_toml(name)
}

/// Both designs measured on this host over every flow direction of `capture`; JSON.
#[pyfunction]
#[pyo3(signature = (capture, workload, pattern=None, repeat=3))]
fn flow_host_bench(
    py: Python<'_>,
    capture: &FlowCapture,
    workload: &str,
    pattern: Option<&str>,
    repeat: u32,
) -> PyResult<String> {
    let w = names::host_workload(workload, pattern).map_err(input_error)?;
    let b = py
        .detach(|| host_bench(&capture.inner, &w, repeat))
        .map_err(input_error)?;
    Ok(serde_json::to_string(&b).expect("serializable"))
}

/// The flow-memory speed benchmark (`make bench`): reads the capture at `path` into memory,
/// then times zero-copy reassembly plus a linear scan beside the copy-based baseline, best of
/// `repeat`. Returns the figures as JSON (`nicsim_flowmem::bench::SpeedBench`).
#[pyfunction]
#[pyo3(signature = (path, repeat=3))]
fn flow_speed_bench(py: Python<'_>, path: PathBuf, repeat: u32) -> PyResult<String> {
    let out = py
        .detach(|| speed_bench_file(&path, repeat))
        .map_err(input_error)?;
    Ok(serde_json::to_string(&out).expect("serializable"))
}

/// Writes a synthetic TCP capture (`config_json`: SynthConfig fields); `progress(packets)` is
/// called now and then. Returns the report as JSON.
#[pyfunction]
#[pyo3(signature = (path, config_json, pcapng=false, progress=None))]
fn flow_synth(
    py: Python<'_>,
    path: PathBuf,
    config_json: &str,
    pcapng: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let config: SynthConfig = serde_json::from_str(config_json).map_err(input_error)?;
    config.check().map_err(input_error)?;
    let format = if pcapng {
        CaptureFormat::PcapNg
    } else {
        CaptureFormat::Pcap
    };
    // A Python error (Ctrl-C, SIGTERM, or the progress callback's) stops the generation at
    // once: the sink refuses the next frame. Signals are looked at every few thousand frames
    // (a few milliseconds), not only at the progress reports.
    let err: Mutex<Option<PyErr>> = Mutex::new(None);
    let mut report = |n: u64| {
        if let Some(cb) = &progress {
            Python::attach(|py| {
                if let Err(e) = cb.call1(py, (n,)) {
                    err.lock().expect("not poisoned").get_or_insert(e);
                }
            });
        }
    };
    let mut frames = 0u64;
    let rep = py.detach(|| -> Result<_, CaptureError> {
        let mut w = CaptureWriter::create(&path, format, 65_535)?;
        let mut sink = |ts: u64, frame: &[u8]| {
            frames += 1;
            if frames.is_multiple_of(SIGNAL_CHECK_FRAMES) {
                if let Err(e) = Python::attach(|py| py.check_signals()) {
                    err.lock().expect("not poisoned").get_or_insert(e);
                }
            }
            if err.lock().expect("not poisoned").is_some() {
                return Err(CaptureError::Io {
                    context: "stopped".into(),
                    source: std::io::ErrorKind::Interrupted.into(),
                });
            }
            w.write(ts, frame)
        };
        let rep = generate(&config, &mut sink, &mut report)?;
        w.finish()?;
        Ok(rep)
    });
    if let Some(e) = err.into_inner().expect("not poisoned") {
        return Err(e);
    }
    let rep = rep.map_err(input_error)?;
    Ok(serde_json::to_string(&rep).expect("serializable"))
}

/// Adds the flow-memory classes and functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FlowCapture>()?;
    m.add_class::<FlowView>()?;
    m.add_function(wrap_pyfunction!(flow_model, m)?)?;
    m.add_function(wrap_pyfunction!(flow_check_target, m)?)?;
    m.add_function(wrap_pyfunction!(flow_check_workload, m)?)?;
    m.add_function(wrap_pyfunction!(flow_names, m)?)?;
    m.add_function(wrap_pyfunction!(flow_check_name, m)?)?;
    m.add_function(wrap_pyfunction!(flow_model_micro, m)?)?;
    m.add_function(wrap_pyfunction!(flow_model_target, m)?)?;
    m.add_function(wrap_pyfunction!(flow_host_bench, m)?)?;
    m.add_function(wrap_pyfunction!(flow_speed_bench, m)?)?;
    m.add_function(wrap_pyfunction!(flow_synth, m)?)?;
    Ok(())
}
