//! Writing a reassembled capture out, as `nicsim flowmem reassemble` does: `flows.json` and
//! `directions.csv` (one entry per flow direction) and a stream file per direction that has at
//! least one stream byte, written one direction at a time straight from the arena, so that
//! memory does not grow with the flows (a SYN flood of a million flows writes no stream file
//! and holds no per-flow text). The formats are docs/summary-schema.md's.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;

use crate::names::HoleMarker;
use crate::{Direction, Flow, FlowError, FlowView, Reassembly};

/// What [`write_directions`] wrote, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// Flow directions (two per flow).
    pub directions: u64,
    /// Stream files written (directions with a stream byte).
    pub files: u64,
    /// Stream bytes of all directions, holes included.
    pub stream_bytes: u64,
    /// Bytes of those in holes.
    pub hole_bytes: u64,
    /// Bytes left out as never acknowledged.
    pub unacked_bytes: u64,
    /// Directions the hole bound cut.
    pub cut_directions: u64,
    /// Every direction's stream length, in order (for the size plot: 8 bytes per direction).
    pub sizes: Vec<u64>,
    /// Tunnelled flows per tunnel stack ("gtp-u", "gre/erspan", ...).
    pub tunnelled_flows: BTreeMap<String, u64>,
}

/// The stream file of flow `flow`, direction `dir`.
pub fn stream_file_name(flow: usize, dir: usize) -> String {
    format!("flow{flow:05}.{dir}.bin")
}

/// One entry of `flows.json`, its keys sorted.
#[derive(Serialize)]
struct Entry<'a> {
    before_start_bytes: u64,
    bytes: u64,
    conflict_bytes: u64,
    cut: bool,
    direction: usize,
    dport: u16,
    dst: String,
    duplicate_bytes: u64,
    file: Option<&'a str>,
    fin: bool,
    flow: usize,
    holes: Vec<(u64, u64)>,
    new_bytes: u64,
    packets: u64,
    payload_bytes: u64,
    proto: &'static str,
    rst: bool,
    segments: usize,
    snaplen_cut_bytes: u64,
    sport: u16,
    src: String,
    start_seq: Option<u32>,
    syn: bool,
    tunnel: Option<&'static str>,
    tunnel_dst: Option<String>,
    tunnel_src: Option<String>,
    /// Every tunnel, outermost first ("gtp-u/gre"; "" without one).
    tunnels: String,
    unacked_bytes: u64,
}

/// The columns of `directions.csv`: the entry's keys in the order the summary schema lists
/// them, `holes` (their number) last.
const CSV_COLUMNS: &str = "flow,direction,src,dst,sport,dport,proto,tunnel,tunnel_src,\
tunnel_dst,tunnels,bytes,segments,packets,syn,fin,rst,cut,start_seq,payload_bytes,new_bytes,\
duplicate_bytes,conflict_bytes,before_start_bytes,unacked_bytes,snaplen_cut_bytes,file,holes";

fn entry<'a>(i: usize, flow: &Flow, d: usize, dir: &Direction, file: Option<&'a str>) -> Entry<'a> {
    let t = flow.tunnel;
    Entry {
        before_start_bytes: dir.bytes.before_start_bytes,
        bytes: dir.len_bytes,
        conflict_bytes: dir.bytes.conflict_bytes,
        cut: dir.cut,
        direction: d,
        dport: dir.dport,
        dst: dir.dst.to_string(),
        duplicate_bytes: dir.bytes.duplicate_bytes,
        file,
        fin: dir.fin,
        flow: i,
        holes: dir.holes.iter().map(|h| (h.offset, h.len_bytes)).collect(),
        new_bytes: dir.bytes.new_bytes,
        packets: dir.packets,
        payload_bytes: dir.bytes.payload_bytes,
        proto: "tcp",
        rst: dir.rst,
        segments: dir.segments.len(),
        snaplen_cut_bytes: dir.bytes.snaplen_cut_bytes,
        sport: dir.sport,
        src: dir.src.to_string(),
        start_seq: dir.start_seq,
        syn: dir.syn,
        tunnel: t.map(|t| t.kind.name()),
        tunnel_dst: t.map(|t| t.dst.to_string()),
        tunnel_src: t.map(|t| t.src.to_string()),
        tunnels: flow.tunnels.names(),
        unacked_bytes: dir.bytes.unacked_bytes,
    }
}

/// A CSV row of `e` (no value holds a comma, a quote or a line break: addresses, numbers,
/// names); booleans as Python's csv writes them, `None` as an empty cell.
fn csv_row(e: &Entry<'_>) -> String {
    let b = |v: bool| if v { "True" } else { "False" };
    let o = |v: Option<String>| v.unwrap_or_default();
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
        e.flow,
        e.direction,
        e.src,
        e.dst,
        e.sport,
        e.dport,
        e.proto,
        e.tunnel.unwrap_or_default(),
        o(e.tunnel_src.clone()),
        o(e.tunnel_dst.clone()),
        e.tunnels,
        e.bytes,
        e.segments,
        e.packets,
        b(e.syn),
        b(e.fin),
        b(e.rst),
        b(e.cut),
        e.start_seq.map(|s| s.to_string()).unwrap_or_default(),
        e.payload_bytes,
        e.new_bytes,
        e.duplicate_bytes,
        e.conflict_bytes,
        e.before_start_bytes,
        e.unacked_bytes,
        e.snaplen_cut_bytes,
        e.file.unwrap_or_default(),
        e.holes.len(),
    )
}

/// Writes `view`'s stream to `out`: the bytes the capture holds, each hole as `marker` shows it
/// (zeros, so that file offsets are stream offsets; or tshark's "[N bytes missing in capture
/// file]" and a NUL between two runs, none after the last, as `tshark -z follow,tcp,raw`).
pub fn write_stream(
    view: &FlowView<'_>,
    marker: HoleMarker,
    out: &mut impl Write,
) -> std::io::Result<()> {
    static ZEROS: [u8; 1 << 16] = [0; 1 << 16];
    let zeros = |out: &mut dyn Write, mut n: u64| -> std::io::Result<()> {
        while n > 0 {
            let k = n.min(ZEROS.len() as u64);
            out.write_all(&ZEROS[..k as usize])?;
            n -= k;
        }
        Ok(())
    };
    let mut at = 0u64;
    for chunk in view.chunks() {
        if chunk.offset > at {
            match marker {
                HoleMarker::Zero => zeros(out, chunk.offset - at)?,
                HoleMarker::Tshark => {
                    write!(
                        out,
                        "[{} bytes missing in capture file]\0",
                        chunk.offset - at
                    )?;
                }
            }
        }
        out.write_all(chunk.bytes)?;
        at = chunk.offset + chunk.bytes.len() as u64;
    }
    if marker == HoleMarker::Zero && view.len() > at {
        zeros(out, view.len() - at)?;
    }
    Ok(())
}

/// Writes `flows.json`, `directions.csv` and the stream files of `r` into `folder`, one
/// direction at a time (only a direction with a stream byte gets a file; the others have
/// `file` null). An I/O error names the file.
pub fn write_directions(
    r: &Reassembly,
    folder: &Path,
    marker: HoleMarker,
) -> Result<Written, FlowError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |e: std::io::Error| FlowError::Write {
            path: path.display().to_string(),
            reason: e.to_string(),
        }
    };
    let create = |name: &str| -> Result<(PathBuf, BufWriter<File>), FlowError> {
        let path = folder.join(name);
        let f = File::create(&path).map_err(io(&path))?;
        Ok((path, BufWriter::with_capacity(1 << 16, f)))
    };
    let (json_path, mut json) = create("flows.json")?;
    let (csv_path, mut csv) = create("directions.csv")?;
    writeln!(csv, "{CSV_COLUMNS}").map_err(io(&csv_path))?;
    let mut w = Written::default();
    // The entries as one JSON array, indented by two spaces, each made when it is written.
    let mut failed: Option<FlowError> = None;
    {
        let mut ser = serde_json::Serializer::with_formatter(
            &mut json,
            serde_json::ser::PrettyFormatter::with_indent(b"  "),
        );
        let mut seq = ser
            .serialize_seq(Some(2 * r.flows.len()))
            .map_err(|e| FlowError::Write {
                path: json_path.display().to_string(),
                reason: e.to_string(),
            })?;
        'flows: for (i, flow) in r.flows.iter().enumerate() {
            for (d, dir) in flow.dirs.iter().enumerate() {
                let name = (dir.len_bytes > 0).then(|| stream_file_name(i, d));
                if let Some(name) = &name {
                    let step = (|| {
                        let (path, mut f) = create(name)?;
                        write_stream(&FlowView::new(&r.arena, dir), marker, &mut f)
                            .and_then(|()| f.flush())
                            .map_err(io(&path))
                    })();
                    if let Err(e) = step {
                        failed = Some(e);
                        break 'flows;
                    }
                    w.files += 1;
                }
                let e = entry(i, flow, d, dir, name.as_deref());
                if d == 0 && !e.tunnels.is_empty() {
                    *w.tunnelled_flows.entry(e.tunnels.clone()).or_default() += 1;
                }
                if let Err(e) = csv.write_all(csv_row(&e).as_bytes()) {
                    failed = Some(io(&csv_path)(e));
                    break 'flows;
                }
                if let Err(e) = seq.serialize_element(&e) {
                    failed = Some(FlowError::Write {
                        path: json_path.display().to_string(),
                        reason: e.to_string(),
                    });
                    break 'flows;
                }
                w.directions += 1;
                w.stream_bytes += dir.len_bytes;
                w.hole_bytes += dir.holes.iter().map(|h| h.len_bytes).sum::<u64>();
                w.unacked_bytes += dir.bytes.unacked_bytes;
                w.cut_directions += u64::from(dir.cut);
                w.sizes.push(dir.len_bytes);
            }
        }
        if failed.is_none() {
            SerializeSeq::end(seq).map_err(|e| FlowError::Write {
                path: json_path.display().to_string(),
                reason: e.to_string(),
            })?;
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    json.write_all(b"\n")
        .and_then(|()| json.flush())
        .map_err(io(&json_path))?;
    csv.flush().map_err(io(&csv_path))?;
    Ok(w)
}
