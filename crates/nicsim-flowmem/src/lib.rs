//! nicsim-flowmem: flow memory, after "Packets are Not Pages" (seed 001).
//!
//! A capture's TCP payloads are written once into an [`Arena`] (standing for NIC DRAM); each
//! flow direction keeps a translation table of [`Segment`]s (stream offset → arena address,
//! length). A [`FlowView`] reads any range, iterates contiguous chunks without copying, and
//! runs linear scans and regex searches across segment boundaries without materialising the
//! stream. [`baseline`] is the copy-based design it is measured against: each stream is first
//! assembled into a contiguous buffer.

#![warn(missing_docs)]

mod arena;
pub mod baseline;
pub mod bench;
pub mod model;
pub mod names;
mod reassembly;
pub mod synth;
mod view;
pub mod write;

pub use arena::{Arena, SharedBytes};
pub use reassembly::{
    ByteCounts, Config, Direction, Flow, Hole, Limits, OverlapPolicy, PacketCounts, Reassembler,
    Reassembly, Segment, UnackedPolicy, DEFAULT_MAX_HOLE_BYTES, MAX_HOLE_BYTES, RECORDS_PER_SLICE,
};
pub use view::{regex_limits, Chunk, FlowView, StreamRegex};

use nicsim_packet::capture::CaptureError;

/// `pattern` quoted for a message, its first 60 characters when it is longer.
fn short_pattern(pattern: &str) -> String {
    const SHOWN_CHARS: usize = 60;
    match pattern.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{:?}... ({} bytes)", &pattern[..cut], pattern.len()),
        None => format!("{pattern:?}"),
    }
}

/// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
fn quoted_list(names: &[&str]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    match q.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => q.join(""),
    }
}

/// A flow-memory failure; the message is one line.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// The capture could not be read.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// The regular expression does not compile into a DFA (or is too large to: see
    /// [`regex_limits`]). The message shows at most the pattern's first 60 characters.
    #[error("invalid regex {}: {reason}", short_pattern(pattern))]
    Regex {
        /// The pattern.
        pattern: String,
        /// Why it was rejected.
        reason: String,
    },
    /// An option's value is none of its names ([`names`]).
    #[error("{what} {value:?}: expected {}", quoted_list(expected))]
    Choice {
        /// The option.
        what: &'static str,
        /// The value given.
        value: String,
        /// Its names.
        expected: Vec<&'static str>,
    },
    /// A flow direction the capture does not have ([`Reassembly::try_view`]).
    #[error(
        "no flow {flow} direction {direction}: the capture has {flows} flows, directions 0 and 1"
    )]
    NoView {
        /// The flow asked for.
        flow: usize,
        /// The direction asked for.
        direction: usize,
        /// The capture's flows.
        flows: usize,
    },
    /// The regex workload was given no pattern.
    #[error("the regex workload needs a pattern")]
    NoPattern,
    /// The regex search stopped on a byte the DFA cannot handle.
    #[error("regex search gave up at stream offset {offset}: {reason}")]
    Search {
        /// Stream offset.
        offset: u64,
        /// Why.
        reason: String,
    },
    /// An output file could not be written ([`mod@write`]).
    #[error("{path}: cannot write it: {reason}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// A limit given outside its range ([`names`]).
    #[error("{option} {value}: expected {lo}..={hi}{why}")]
    Limit {
        /// The option (`max_hole_bytes`, ...).
        option: &'static str,
        /// The value given.
        value: u64,
        /// Its smallest value.
        lo: u64,
        /// Its largest value.
        hi: u64,
        /// What the bound is for (", ..." or empty).
        why: &'static str,
    },
    /// A read beyond the end of the stream.
    #[error("read of {len_bytes} bytes at offset {offset} is beyond the stream's {stream_len_bytes} bytes")]
    OutOfRange {
        /// Requested offset.
        offset: u64,
        /// Requested length.
        len_bytes: u64,
        /// Stream length.
        stream_len_bytes: u64,
    },
    /// A read that touches bytes the capture does not hold.
    #[error("read of {len_bytes} bytes at offset {offset} touches a hole at offset {hole_offset} ({hole_len_bytes} bytes missing from the capture)")]
    Hole {
        /// Requested offset.
        offset: u64,
        /// Requested length.
        len_bytes: u64,
        /// First missing byte.
        hole_offset: u64,
        /// Missing bytes.
        hole_len_bytes: u64,
    },
}
