//! Zero-copy TCP reassembly: payloads go to the arena once, each flow direction keeps a
//! translation table (stream offset → arena address, length) in a flow table keyed by 5-tuple.
//!
//! Sequence numbers are unwrapped to 64-bit offsets relative to the first one seen, so 32-bit
//! wrap-around is invisible. A stream starts after the SYN when one was seen, otherwise at its
//! lowest sequence number. Overlaps are resolved by [`OverlapPolicy`] without moving bytes: the
//! table entries are trimmed or split. Every packet read ends in exactly one [`PacketCounts`]
//! bucket, so `read == accounted()`.
//!
//! Holes (stream bytes the capture does not hold) cost nothing here, but everything that lays a
//! stream out contiguously (the stream files of `nicsim flowmem reassemble`, the copy-based
//! baseline, the memory model's flow address space) sizes it by the sequence numbers, which a
//! capture sets freely: [`Limits::max_hole_bytes`] bounds the hole bytes of each direction, and
//! a segment, FIN or SYN that would go past it is dropped ([`PacketCounts::hole_too_large`]); a
//! segment beyond the data cuts the direction where it starts ([`Direction::cut`]): nothing
//! from there on is kept.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::convert::Infallible;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use nicsim_kernel::{run_in_slices, RunTo};
use nicsim_packet::capture::{CaptureReader, CaptureSlice, Leniency, Record, RecordRef};
use nicsim_packet::defrag::{DefragCounts, Defragmenter, Pushed};
use nicsim_packet::ip::protocol;
use nicsim_packet::tcp::flags;
use nicsim_packet::{
    decode, decode_datagram, decode_ipcomp, ipcomp_inflate, linktype, FiveTuple, TcpInfo, Tunnel,
    TunnelStack,
};

use crate::arena::{Arena, SharedBytes};
use crate::view::FlowView;
use crate::FlowError;

/// Which bytes a stream keeps where two segments disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OverlapPolicy {
    /// The bytes that arrived first stay (what most end hosts do; the default).
    #[default]
    FirstWins,
    /// The bytes that arrived last replace earlier ones.
    LastWins,
}

/// What a stream keeps of the data its peer never acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum UnackedPolicy {
    /// Every byte captured stays (the default).
    #[default]
    Keep,
    /// A direction ends at the highest sequence number its peer acknowledged (when the peer
    /// acknowledged any), at the last byte captured before it: data sent after the last ACK
    /// (before a RST, or at the capture's end) is left out, and so is a hole that no captured
    /// data follows.
    Drop,
    /// As tshark's `follow,tcp` shows a stream: data before the first hole all; a run after a
    /// hole once the hole's data arrives, or once a later packet of the peer acknowledges
    /// beyond the run's start (never, in a capture of one direction); no hole at the end.
    Tshark,
}

/// Memory bounds. Packets beyond a bound are dropped and counted with the bound's reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Flows (both directions together) in the flow table.
    pub max_flows: usize,
    /// Payload bytes in the arena.
    pub max_arena_bytes: u64,
    /// Translation-table entries per flow direction.
    pub max_segments_per_direction: usize,
    /// Hole bytes per flow direction, all its holes together (the head after a SYN, the gaps,
    /// the tail before a FIN). A stream is at most its payload plus this many bytes long.
    pub max_hole_bytes: u64,
    /// What IP defragmentation holds (docs/flowmem.md, "IP fragments").
    pub defrag: nicsim_packet::defrag::Limits,
}

/// The default [`Limits::max_hole_bytes`], 64 MiB: what a capture can miss of one direction
/// while the connection goes on (docs/flowmem.md, "Holes are bounded").
pub const DEFAULT_MAX_HOLE_BYTES: u64 = 64 << 20;

/// The largest [`Limits::max_hole_bytes`] accepted, 4 GiB (the TCP sequence space): a stream
/// laid out contiguously (a stream file, the copy baseline's buffer, `to_bytes()`) is at most
/// its payload plus this, and the copy baseline allocates it.
pub const MAX_HOLE_BYTES: u64 = 4 << 30;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_flows: 1 << 20,
            max_arena_bytes: 4 << 30,
            max_segments_per_direction: 1 << 20,
            max_hole_bytes: DEFAULT_MAX_HOLE_BYTES,
            defrag: nicsim_packet::defrag::Limits::default(),
        }
    }
}

/// Reassembler settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Config {
    /// Overlap resolution.
    pub overlap: OverlapPolicy,
    /// Data the peer never acknowledged.
    pub unacked: UnackedPolicy,
    /// Memory bounds.
    pub limits: Limits,
}

/// What happened to each packet read. Every packet is in exactly one bucket besides `read`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PacketCounts {
    /// Packets read.
    pub read: u64,
    /// TCP segments that put bytes into a stream.
    pub data: u64,
    /// TCP segments without payload (SYN, pure ACK, FIN, RST).
    pub control: u64,
    /// Segments whose payload was entirely present already, with identical bytes.
    pub retransmission: u64,
    /// Segments whose payload was entirely present already with some bytes different, and
    /// the first-wins policy kept the old bytes.
    pub overlap_discarded: u64,
    /// Frames that are not IPv4 or IPv6.
    pub non_ip: u64,
    /// IP packets that are not TCP.
    pub non_tcp: u64,
    /// IP fragments held for their datagram (the datagram's segment is counted with the
    /// fragment that completed it), or never completed, or cut by the capture.
    pub ip_fragment: u64,
    /// Records of a link type the packet library does not parse.
    pub unsupported_link: u64,
    /// Packets whose headers or payload the capture's snap length cut.
    pub snaplen_cut: u64,
    /// Complete packets whose headers do not parse.
    pub malformed: u64,
    /// Packets of new flows once the flow table was full.
    pub over_flow_limit: u64,
    /// Packets whose payload did not fit in the arena.
    pub over_arena_limit: u64,
    /// Packets that would have grown a translation table beyond its limit.
    pub over_segment_limit: u64,
    /// Segments (and FINs, SYNs) whose position would have taken their direction's holes
    /// beyond [`Limits::max_hole_bytes`], and every later one at or past the point where that
    /// cut the direction.
    pub hole_too_large: u64,
}

impl PacketCounts {
    /// Sum of all outcome buckets; equals `read` (packets are conserved).
    pub fn accounted(&self) -> u64 {
        self.data
            + self.control
            + self.retransmission
            + self.overlap_discarded
            + self.non_ip
            + self.non_tcp
            + self.ip_fragment
            + self.unsupported_link
            + self.snaplen_cut
            + self.malformed
            + self.over_flow_limit
            + self.over_arena_limit
            + self.over_segment_limit
            + self.hole_too_large
    }

    /// `(name, count)` for every bucket, in a fixed order (for reports).
    pub fn buckets(&self) -> [(&'static str, u64); 14] {
        [
            ("data", self.data),
            ("control", self.control),
            ("retransmission", self.retransmission),
            ("overlap_discarded", self.overlap_discarded),
            ("non_ip", self.non_ip),
            ("non_tcp", self.non_tcp),
            ("ip_fragment", self.ip_fragment),
            ("unsupported_link", self.unsupported_link),
            ("snaplen_cut", self.snaplen_cut),
            ("malformed", self.malformed),
            ("over_flow_limit", self.over_flow_limit),
            ("over_arena_limit", self.over_arena_limit),
            ("over_segment_limit", self.over_segment_limit),
            ("hole_too_large", self.hole_too_large),
        ]
    }
}

/// Byte accounting of one flow direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ByteCounts {
    /// Payload bytes of all segments seen (retransmissions included).
    pub payload_bytes: u64,
    /// Bytes that filled a position for the first time.
    pub new_bytes: u64,
    /// Overlapping bytes equal to the ones already present.
    pub duplicate_bytes: u64,
    /// Overlapping bytes that differ from the ones already present (kept or replaced per policy).
    pub conflict_bytes: u64,
    /// Bytes that lay before the stream start (sequence numbers before SYN + 1), left out.
    pub before_start_bytes: u64,
    /// Bytes left out as never acknowledged by the peer ([`UnackedPolicy::Drop`]), or as
    /// tshark's follow leaves them out ([`UnackedPolicy::Tshark`]: a run after a hole that no
    /// later acknowledgement reached, data arriving in a hole it had passed).
    pub unacked_bytes: u64,
    /// Payload bytes the capture did not hold (a snap length cut, a record shorter than its
    /// IP length): each cut segment's rest is a hole. tshark's follow leaves them out without a
    /// marker, so its stream moves up there.
    pub snaplen_cut_bytes: u64,
}

/// One translation-table entry: `len_bytes` stream bytes from `offset` live at arena `addr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Segment {
    /// Stream offset of the first byte.
    pub offset: u64,
    /// Arena address of the first byte.
    pub addr: u64,
    /// Length in bytes.
    pub len_bytes: u64,
}

/// Stream bytes the capture does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hole {
    /// Stream offset of the first missing byte.
    pub offset: u64,
    /// Missing bytes.
    pub len_bytes: u64,
}

/// One direction of a flow, reassembled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Direction {
    /// Sender address.
    pub src: IpAddr,
    /// Receiver address.
    pub dst: IpAddr,
    /// Sender port.
    pub sport: u16,
    /// Receiver port.
    pub dport: u16,
    /// Sequence number of stream offset 0 (SYN + 1, or the lowest seen); `None` without segments.
    pub start_seq: Option<u32>,
    /// A SYN was seen.
    pub syn: bool,
    /// A FIN was seen.
    pub fin: bool,
    /// A RST was seen.
    pub rst: bool,
    /// Stream length in bytes, holes included (up to the FIN when one was seen).
    pub len_bytes: u64,
    /// Translation table, sorted by offset, disjoint.
    pub segments: Vec<Segment>,
    /// Missing ranges, sorted.
    pub holes: Vec<Hole>,
    /// TCP packets of this direction that reached the flow table.
    pub packets: u64,
    /// Byte accounting.
    pub bytes: ByteCounts,
    /// [`Limits::max_hole_bytes`] dropped packets of this direction. A segment too far beyond
    /// the data cut the stream where that segment starts: no byte from there on is kept (data
    /// before it still fills in, within the bound), so the stream ends at the data before the
    /// hole. A FIN too far beyond the data, or a segment or SYN too far before it (the start),
    /// was dropped alone.
    pub cut: bool,
}

/// A TCP connection: direction 0 is the sender of the first packet seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    /// The 5-tuple of direction 0 (of the innermost IP packet, for a tunnelled flow).
    pub tuple: FiveTuple,
    /// The outermost tunnel (GRE, VXLAN, GTP-U, ...) of the flow's first packet, if it came
    /// through one.
    pub tunnel: Option<Tunnel>,
    /// Every tunnel the flow's first packet came through, outermost first.
    pub tunnels: TunnelStack,
    /// Both directions (0: as `tuple`, 1: reversed).
    pub dirs: [Direction; 2],
}

/// The result of reassembling a capture: the arena and the flows pointing into it.
#[derive(Debug, Clone)]
pub struct Reassembly {
    /// Payload memory.
    pub arena: Arena,
    /// Flows in order of their first packet.
    pub flows: Vec<Flow>,
    /// Packet outcomes.
    pub counts: PacketCounts,
    /// IP defragmentation: fragments seen, datagrams put together, fragments left over.
    pub defrag: DefragCounts,
    /// What the capture reader skipped (malformed pcapng options) or cut (records longer than
    /// their block) without refusing the capture.
    pub leniency: Leniency,
    /// The link types of the packets counted `unsupported_link`.
    pub unsupported_links: BTreeSet<u32>,
    /// Connections that reused an earlier connection's 5-tuple (a SYN at a new sequence
    /// number): each is a flow of its own, as tshark's streams are.
    pub reused_tuples: u64,
    /// The settings used.
    pub config: Config,
}

impl Reassembly {
    /// Reassembles every TCP flow of a pcap or pcapng file, streaming: one record is in memory
    /// at a time and each payload is appended to the arena once (memory: the stream bytes, not
    /// the file). For a capture already in memory, [`Reassembly::from_capture_bytes`] copies
    /// nothing.
    pub fn from_capture(path: &Path, config: Config) -> Result<Self, FlowError> {
        let mut reassembler = Reassembler::new(config);
        let mut reader = CaptureReader::open(path)?;
        while let Some(record) = reader.next_record() {
            reassembler.push(&record?);
        }
        let mut out = reassembler.finish();
        out.leniency = reader.leniency();
        Ok(out)
    }

    /// Reassembles every TCP flow of a pcap or pcapng capture held in memory, without copying:
    /// the capture buffer is the arena (a payload's address is its byte offset in `capture`).
    /// The flows are those of [`Reassembly::from_capture`]; only the addresses differ.
    /// `capture` is shared, not copied: an `Arc<Vec<u8>>`, or any buffer its owner keeps
    /// unchanged (the Python bindings pass the `bytes` object they read the file into).
    pub fn from_capture_bytes(capture: SharedBytes, config: Config) -> Result<Self, FlowError> {
        match Self::from_capture_bytes_until(capture, config, || Ok::<(), Infallible>(())) {
            Ok(r) => r,
            Err(never) => match never {},
        }
    }

    /// As [`Reassembly::from_capture_bytes`], calling `between` every
    /// [`RECORDS_PER_SLICE`] records (with [`nicsim_kernel::run_in_slices`], as the models
    /// run): an error from it (Ctrl-C, SIGTERM) stops the reassembly at once and is returned
    /// as the outer error.
    pub fn from_capture_bytes_until<E>(
        capture: SharedBytes,
        config: Config,
        between: impl FnMut() -> Result<(), E>,
    ) -> Result<Result<Self, FlowError>, E> {
        let reassembler = Reassembler {
            arena: Arena::over_capture(Arc::clone(&capture), config.limits.max_arena_bytes),
            ..Reassembler::new(config)
        };
        let records = match CaptureSlice::new((*capture).as_ref()) {
            Ok(r) => r,
            Err(e) => return Ok(Err(e.into())),
        };
        let mut feed = Feed {
            reassembler,
            records,
            fed: 0,
            error: None,
        };
        run_in_slices(&mut feed, None, RECORDS_PER_SLICE as f64, between)?;
        Ok(match feed.error {
            Some(e) => Err(e),
            None => {
                let mut out = feed.reassembler.finish();
                out.leniency = feed.records.leniency();
                Ok(out)
            }
        })
    }

    /// A zero-copy view of one flow direction (`dir` 0 or 1).
    pub fn view(&self, flow: usize, dir: usize) -> Option<FlowView<'_>> {
        let direction = self.flows.get(flow)?.dirs.get(dir)?;
        Some(FlowView::new(&self.arena, direction))
    }

    /// As [`Reassembly::view`], or [`FlowError::NoView`] naming what the capture has.
    pub fn try_view(&self, flow: usize, dir: usize) -> Result<FlowView<'_>, FlowError> {
        self.view(flow, dir).ok_or(FlowError::NoView {
            flow,
            direction: dir,
            flows: self.flows.len(),
        })
    }
}

/// Records of a capture between two looks for an interrupt
/// ([`Reassembly::from_capture_bytes_until`]): a few milliseconds of reassembly.
pub const RECORDS_PER_SLICE: u64 = 1 << 15;

/// A capture's records fed to a reassembler, as a model whose time is the number of records
/// fed, so that [`run_in_slices`] runs it in slices.
struct Feed<'a> {
    reassembler: Reassembler,
    records: CaptureSlice<'a>,
    fed: u64,
    error: Option<FlowError>,
}

impl RunTo for Feed<'_> {
    fn now_us(&self) -> f64 {
        self.fed as f64
    }

    fn run_to(&mut self, until: Option<f64>) -> bool {
        while until.is_none_or(|u| (self.fed as f64) < u) {
            match self.records.next_record() {
                None => return true,
                Some(Err(e)) => {
                    self.error = Some(e.into());
                    return true;
                }
                Some(Ok(record)) => {
                    let addr = record.data_offset as u64;
                    self.reassembler.push_frame_at(
                        record.linktype,
                        record.data,
                        record.cut_len() as usize,
                        Some(addr),
                    );
                    self.fed += 1;
                }
            }
        }
        false
    }
}

/// Maps 32-bit sequence numbers to 64-bit offsets relative to the first one seen.
#[derive(Debug, Clone, Copy)]
struct SeqTracker {
    /// The highest sequence number seen and its offset.
    last_seq: u32,
    last_off: i64,
}

impl SeqTracker {
    fn offset(&mut self, seq: u32) -> i64 {
        let delta = i64::from(seq.wrapping_sub(self.last_seq) as i32);
        let off = self.last_off + delta;
        if delta > 0 {
            self.last_seq = seq;
            self.last_off = off;
        }
        off
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    addr: u64,
    len: u64,
}

#[derive(Debug)]
struct DirState {
    /// Sequence number at offset 0 (the first one seen).
    anchor_seq: u32,
    /// tshark's base sequence number of the direction: its first packet's, less one unless
    /// that was a SYN. A SYN (without ACK) at another sequence number starts a new connection.
    base_seq: u32,
    tracker: SeqTracker,
    syn_off: Option<i64>,
    fin_off: Option<i64>,
    rst: bool,
    table: BTreeMap<i64, Entry>,
    packets: u64,
    bytes: ByteCounts,
    /// The stream as far as it is known: its start (SYN + 1, or the lowest data offset) once
    /// there is one, its end (of the data or the FIN) and the hole bytes between them.
    extent: Option<Extent>,
    /// Where a hole too large cut the stream (the start of the first segment refused beyond
    /// the data): no byte at or after it is kept.
    cut_at: Option<i64>,
    /// The hole bound dropped a packet (or a FIN or SYN) of this direction.
    cut: bool,
    /// The highest acknowledgement number this direction's sender sent (of its peer's stream).
    max_ack: Option<u32>,
}

/// One direction as tshark's `follow,tcp` writes it, in capture order
/// (epan/dissectors/packet-tcp.c, `follow_tcp_tap_listener` and `check_follow_fragments`): the
/// stream written so far ends at `next` (set at the direction's first packet, data or not);
/// data beyond a hole waits in `queued` until the hole's data arrives, or until a later packet
/// of the peer acknowledges *beyond* its start, and then tshark writes a marker in the hole's
/// place and goes on from the lowest run queued. What is still queued at the end is not written.
#[derive(Debug)]
struct Follow {
    next: i64,
    /// Runs waiting after a hole: start offset -> end offset.
    queued: BTreeMap<i64, i64>,
    /// The holes passed with a marker, `[from, to)` in offset order: data that arrives in one
    /// later is not written.
    passed: Vec<(i64, i64)>,
}

impl Follow {
    /// The direction's first packet, whose data (if any) starts at offset `lo`.
    fn new(lo: i64) -> Self {
        Follow {
            next: lo,
            queued: BTreeMap::new(),
            passed: Vec::new(),
        }
    }

    /// A packet of this direction whose data starts at offset `lo` and ends at `hi`.
    fn packet(&mut self, lo: i64, hi: i64) {
        if hi <= lo {
            return;
        }
        if lo <= self.next {
            if hi > self.next {
                self.next = hi;
                self.drain();
            }
        } else {
            let end = self.queued.entry(lo).or_insert(hi);
            *end = (*end).max(hi);
        }
    }

    /// A packet of the peer acknowledging up to offset `ack` of this direction.
    fn ack(&mut self, ack: i64) {
        while let Some((&lo, _)) = self.queued.first_key_value() {
            if ack <= lo {
                break;
            }
            self.passed.push((self.next, lo));
            self.next = lo;
            self.drain();
        }
    }

    /// Writes every queued run the stream now reaches.
    fn drain(&mut self) {
        while let Some((&lo, &hi)) = self.queued.first_key_value() {
            if lo > self.next {
                break;
            }
            self.next = self.next.max(hi);
            self.queued.pop_first();
        }
    }
}

/// The known part of a stream, `[lo, hi)`, and the bytes missing in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Extent {
    lo: i64,
    hi: i64,
    hole_bytes: u64,
}

impl DirState {
    fn new(seq: u32, syn: bool) -> Self {
        DirState {
            anchor_seq: seq,
            base_seq: if syn { seq } else { seq.wrapping_sub(1) },
            tracker: SeqTracker {
                last_seq: seq,
                last_off: 0,
            },
            syn_off: None,
            fin_off: None,
            rst: false,
            table: BTreeMap::new(),
            packets: 0,
            bytes: ByteCounts::default(),
            extent: None,
            cut_at: None,
            cut: false,
            max_ack: None,
        }
    }

    /// Bytes of `[lo, hi)` that no table entry covers (one walk over the entries there).
    fn holes_in(&self, lo: i64, hi: i64) -> u64 {
        let first = self.table.range(..=lo).next_back().map_or(lo, |(&k, _)| k);
        let mut covered = 0;
        for (&k, e) in self.table.range(first..hi) {
            let (a, b) = (k.max(lo), (k + e.len as i64).min(hi));
            covered += (b - a).max(0);
        }
        ((hi - lo) - covered).max(0) as u64
    }

    /// The stream's start is known now (`lo`: the first data, or SYN + 1): a FIN seen before
    /// it extends the end, unless that would leave more than `max_hole` bytes missing (then
    /// the FIN is forgotten).
    fn start_at(&mut self, lo: i64, hi: i64, max_hole: u64) {
        let mut extent = Extent {
            lo,
            hi: hi.max(lo),
            hole_bytes: 0,
        };
        if let Some(fin) = self.fin_off.filter(|&f| f > extent.hi) {
            if (fin - extent.hi) as u64 > max_hole {
                self.fin_off = None;
                self.cut = true;
            } else {
                extent.hole_bytes = (fin - extent.hi) as u64;
                extent.hi = fin;
            }
        }
        self.extent = Some(extent);
    }

    /// A SYN at stream offset `syn_off` (the first one): false when it is refused, as it would
    /// put the stream's start more than `max_hole` hole bytes before the data already seen.
    fn accept_syn(&mut self, syn_off: i64, max_hole: u64) -> bool {
        let start = syn_off + 1;
        match self.extent {
            None => {
                self.syn_off = Some(syn_off);
                self.start_at(start, start, max_hole);
            }
            Some(x) if start < x.lo => {
                let hole_bytes = x.hole_bytes + (x.lo - start) as u64;
                if hole_bytes > max_hole {
                    self.cut = true;
                    return false;
                }
                self.syn_off = Some(syn_off);
                self.extent = Some(Extent {
                    lo: start,
                    hole_bytes,
                    ..x
                });
            }
            Some(x) => {
                // Data before the start is left out now: the holes can only shrink.
                self.syn_off = Some(syn_off);
                let hi = x.hi.max(start);
                self.extent = Some(Extent {
                    lo: start,
                    hi,
                    hole_bytes: self.holes_in(start, hi),
                });
            }
        }
        true
    }

    /// A FIN ending the stream at offset `fin_end`: false when it is refused, as it lies past
    /// the cut or would leave more than `max_hole` bytes missing before it.
    fn accept_fin(&mut self, fin_end: i64, max_hole: u64) -> bool {
        if self.extent.is_some() && !self.extend_to(fin_end, fin_end, max_hole) {
            return false;
        }
        self.fin_off = Some(self.fin_off.map_or(fin_end, |f| f.max(fin_end)));
        true
    }

    /// The stream reaches `end` (a segment starting at `lo` if none came before): the bytes up
    /// to there that the capture does not hold are a hole. False when it lies past the cut or
    /// would leave more than `max_hole` bytes missing.
    fn extend_to(&mut self, lo: i64, end: i64, max_hole: u64) -> bool {
        if self.extent.is_none() {
            self.start_at(lo, lo, max_hole);
        }
        let Some(mut x) = self.extent else {
            return false;
        };
        if self.cut_at.is_some_and(|c| end > c) {
            self.cut = true;
            return false;
        }
        if end > x.hi {
            let hole_bytes = x.hole_bytes + (end - x.hi) as u64;
            if hole_bytes > max_hole {
                self.cut = true;
                return false;
            }
            x.hole_bytes = hole_bytes;
            x.hi = end;
            self.extent = Some(x);
        }
        true
    }

    /// The extent once `[start, end)` is stored, `new_bytes` of it (the uncovered pieces,
    /// `pieces` when given) filling positions for the first time; `Err` when that would leave
    /// more than `max_hole` bytes missing.
    fn extent_with(
        &self,
        start: i64,
        end: i64,
        pieces: Option<&[(i64, i64)]>,
        max_hole: u64,
    ) -> Result<Extent, ()> {
        let Some(x) = self.extent else {
            return Ok(Extent {
                lo: start,
                hi: end,
                hole_bytes: 0,
            });
        };
        // Without a SYN the stream starts at the lowest data; with one, bytes before it are
        // not part of the stream (nor of its holes).
        let lo = if self.syn_off.is_some() {
            x.lo
        } else {
            x.lo.min(start)
        };
        let hi = x.hi.max(end);
        let inside = |(a, b): (i64, i64)| (b.min(hi) - a.max(lo)).max(0);
        let new_inside: i64 = match pieces {
            Some(pieces) => pieces.iter().map(|&p| inside(p)).sum(),
            None => inside((start, end)),
        };
        let hole_bytes = x.hole_bytes as i64 + (x.lo - lo) + (hi - x.hi) - new_inside;
        debug_assert!(hole_bytes >= 0, "{x:?} {start} {end}");
        if hole_bytes as u64 > max_hole {
            return Err(());
        }
        Ok(Extent {
            lo,
            hi,
            hole_bytes: hole_bytes as u64,
        })
    }

    /// A segment `[start, ..)` was refused by the hole bound: one beyond the data cuts the
    /// stream where it starts.
    fn refuse_hole(&mut self, start: i64) -> Outcome {
        if self.extent.is_some_and(|x| start >= x.hi) {
            self.cut_at = Some(self.cut_at.map_or(start, |c| c.min(start)));
        }
        self.cut = true;
        Outcome::HoleTooLarge
    }
}

/// A flow while it is reassembled. Its directions' states are held in place, not boxed: a
/// `FlowState` is then at least as large as the [`Flow`] it becomes, so that
/// [`Reassembler::finish`] turns the flows into `Flow`s in the same allocation.
struct FlowState {
    tuple: FiveTuple,
    tunnel: Option<Tunnel>,
    tunnels: TunnelStack,
    dirs: [Option<DirState>; 2],
}

/// What one payload does to a translation table.
enum Outcome {
    Data,
    Retransmission,
    OverlapDiscarded,
    OverArena,
    OverSegments,
    HoleTooLarge,
}

/// Streaming reassembler: feed records with [`Reassembler::push`], then [`Reassembler::finish`].
pub struct Reassembler {
    config: Config,
    arena: Arena,
    /// Flow index of each connection, by its endpoints in a fixed order (one entry per flow: the
    /// direction is whether a packet's sender is the flow's `tuple.src`).
    index: HashMap<FlowKey, usize, FoldState>,
    flows: Vec<FlowState>,
    counts: PacketCounts,
    unsupported_links: BTreeSet<u32>,
    defrag: Defragmenter,
    reused_tuples: u64,
    /// tshark's follow of each flow's two directions, by flow index ([`UnackedPolicy::Tshark`]
    /// only, else empty: the other policies spend nothing on it).
    follows: Vec<[Option<Follow>; 2]>,
}

impl Reassembler {
    /// An empty reassembler.
    pub fn new(config: Config) -> Self {
        Reassembler {
            config,
            arena: Arena::new(config.limits.max_arena_bytes),
            index: HashMap::with_hasher(FoldState::new()),
            flows: Vec::new(),
            counts: PacketCounts::default(),
            unsupported_links: BTreeSet::new(),
            reused_tuples: 0,
            defrag: Defragmenter::new(config.limits.defrag),
            follows: Vec::new(),
        }
    }

    /// Packet outcomes so far.
    pub fn counts(&self) -> &PacketCounts {
        &self.counts
    }

    /// Feeds one captured record.
    pub fn push(&mut self, record: &Record) {
        let cut = record.cut_len() as usize;
        self.push_frame_at(record.linktype, &record.data, cut, None);
    }

    /// Feeds one borrowed record (its payload is appended to the arena).
    pub fn push_ref(&mut self, record: &RecordRef<'_>) {
        let cut = record.cut_len() as usize;
        self.push_frame_at(record.linktype, record.data, cut, None);
    }

    /// Feeds one frame of pcap link type `linktype`; `cut` says the capture cut it short (by
    /// an amount not known: what its IP length claims beyond the frame is taken as cut).
    pub fn push_frame(&mut self, linktype: u32, frame: &[u8], cut: bool) {
        self.push_frame_at(linktype, frame, if cut { usize::MAX } else { 0 }, None);
    }

    /// Feeds one frame the capture cut by `cut_bytes` (its original length less what it holds);
    /// `frame_addr` is its address in a capture-backed arena (payloads are referenced there),
    /// `None` to append payloads.
    fn push_frame_at(
        &mut self,
        linktype: u32,
        frame: &[u8],
        cut_bytes: usize,
        frame_addr: Option<u64>,
    ) {
        self.counts.read += 1;
        let bucket = self.classify(linktype, frame, cut_bytes, frame_addr);
        let counts = &mut self.counts;
        *match bucket {
            Bucket::Data => &mut counts.data,
            Bucket::Control => &mut counts.control,
            Bucket::Retransmission => &mut counts.retransmission,
            Bucket::OverlapDiscarded => &mut counts.overlap_discarded,
            Bucket::NonIp => &mut counts.non_ip,
            Bucket::NonTcp => &mut counts.non_tcp,
            Bucket::IpFragment => &mut counts.ip_fragment,
            Bucket::UnsupportedLink => &mut counts.unsupported_link,
            Bucket::SnaplenCut => &mut counts.snaplen_cut,
            Bucket::Malformed => &mut counts.malformed,
            Bucket::OverFlowLimit => &mut counts.over_flow_limit,
            Bucket::OverArenaLimit => &mut counts.over_arena_limit,
            Bucket::OverSegmentLimit => &mut counts.over_segment_limit,
            Bucket::HoleTooLarge => &mut counts.hole_too_large,
        } += 1;
    }

    fn classify(
        &mut self,
        lt: u32,
        frame: &[u8],
        cut_bytes: usize,
        frame_addr: Option<u64>,
    ) -> Bucket {
        let cut = cut_bytes > 0;
        if !linktype::is_supported(lt) {
            if self.unsupported_links.len() < 16 {
                self.unsupported_links.insert(lt); // (a few name the capture's problem)
            }
            return Bucket::UnsupportedLink;
        }
        let mut seg = match decode(lt, frame) {
            Ok(Some(seg)) => seg,
            Ok(None) => return Bucket::NonIp,
            Err(_) if cut => return Bucket::SnaplenCut,
            Err(_) => return Bucket::Malformed,
        };
        // A fragment is held until its datagram is complete; the fragment that completes it
        // carries the datagram on (into its tunnels, or to its segment), whose payload is
        // appended to the arena (it does not lie in one piece in the capture). A datagram can
        // hold fragments of an inner one: each round walks deeper into the frame's layers,
        // which `MAX_LAYERS` bounds.
        let mut datagram: Option<Vec<u8>> = None;
        while seg.frag.is_some() {
            let bytes = datagram.as_deref().unwrap_or(frame);
            let Pushed::Complete(whole) = self.defrag.push(bytes, &seg) else {
                return Bucket::IpFragment;
            };
            seg = match decode_datagram(&whole, &seg) {
                Ok(Some(inner)) => inner,
                Ok(None) => return Bucket::NonIp,
                Err(_) => return Bucket::Malformed,
            };
            datagram = Some(whole);
        }
        if let Some((next, inflated)) = ipcomp_inflate(datagram.as_deref().unwrap_or(frame), &seg) {
            // An IPComp payload compressed with DEFLATE, inflated as tshark does (its
            // fragments, if it held any, are not put together).
            seg = match decode_ipcomp(&inflated, next, &seg) {
                Ok(Some(inner)) if inner.frag.is_none() => inner,
                Ok(Some(_)) => return Bucket::IpFragment,
                Ok(None) => return Bucket::NonIp,
                Err(_) => return Bucket::Malformed,
            };
            datagram = Some(inflated);
        }
        if seg.ip.proto != protocol::TCP {
            return Bucket::NonTcp;
        }
        let (Some(l4), Some(tcp)) = (seg.l4, seg.l4.and_then(|l4| l4.tcp)) else {
            return Bucket::IpFragment;
        };
        // The payload is what the frame holds of the IP packet (Ethernet padding and FCS are
        // not payload); what its length claims beyond is missing (a cut or short record).
        let bytes = datagram.as_deref().unwrap_or(frame);
        let payload = &bytes[seg.payload.clone()];
        let tuple = FiveTuple {
            src: seg.ip.src,
            dst: seg.ip.dst,
            sport: l4.sport,
            dport: l4.dport,
            proto: seg.ip.proto,
        };
        let payload_addr = match datagram {
            Some(_) => None,
            None => frame_addr.map(|a| a + seg.payload.start as u64),
        };
        // Missing are the bytes the capture cut, at most: an IP length that claims more than an
        // uncut frame holds is the packet's own error (tshark: "IPv4 total length exceeds packet
        // length"), and its payload is what the frame holds.
        let (missing, tunnel, tunnels) = (seg.missing.min(cut_bytes), seg.tunnel, seg.tunnels);
        self.segment(tuple, tcp, payload, payload_addr, missing, tunnel, tunnels)
    }

    #[allow(clippy::too_many_arguments)]
    fn segment(
        &mut self,
        tuple: FiveTuple,
        tcp: TcpInfo,
        payload: &[u8],
        payload_addr: Option<u64>,
        missing: usize,
        tunnel: Option<Tunnel>,
        tunnels: TunnelStack,
    ) -> Bucket {
        let key = FlowKey::new(tuple.src, tuple.sport, tuple.dst, tuple.dport);
        let tshark = self.config.unacked == UnackedPolicy::Tshark;
        let mut found = self.index.get(&key).copied();
        if let Some(f) = found {
            // A SYN (without ACK) at another sequence number than its direction's base opens a
            // new connection on the same 5-tuple, as tshark separates them ("TCP port numbers
            // reused"): the later packets belong to it.
            let first = &self.flows[f].tuple;
            let dir = usize::from((first.src, first.sport) != (tuple.src, tuple.sport));
            if tcp.flags & (flags::SYN | flags::ACK) == flags::SYN
                && self.flows[f].dirs[dir]
                    .as_ref()
                    .is_some_and(|d| d.base_seq != tcp.seq)
            {
                found = None;
                self.reused_tuples += 1;
            }
        }
        let (flow_idx, dir) = match found {
            Some(found) => {
                let first = &self.flows[found].tuple;
                let from_first = (first.src, first.sport) == (tuple.src, tuple.sport);
                (found, usize::from(!from_first))
            }
            None => {
                if self.flows.len() >= self.config.limits.max_flows {
                    return Bucket::OverFlowLimit;
                }
                let idx = self.flows.len();
                self.flows.push(FlowState {
                    tuple,
                    tunnel,
                    tunnels,
                    dirs: [None, None],
                });
                self.index.insert(key, idx);
                if tshark {
                    self.follows.push([None, None]);
                }
                (idx, 0)
            }
        };
        let (seq, tcp_flags) = (tcp.seq, tcp.flags);
        let syn = tcp_flags & flags::SYN != 0;
        let [d0, d1] = &mut self.flows[flow_idx].dirs;
        let (state, peer) = if dir == 0 { (d0, d1) } else { (d1, d0) };
        let mut no_follows = [None, None];
        let [f0, f1] = match self.follows.get_mut(flow_idx) {
            Some(f) => f,
            None => &mut no_follows,
        };
        let (follow, peer_follow) = if dir == 0 { (f0, f1) } else { (f1, f0) };
        if let (Some(peer), Some(peer_follow), true) = (
            peer.as_ref(),
            peer_follow.as_mut(),
            tcp_flags & flags::ACK != 0,
        ) {
            // tshark looks at the peer's runs waiting after a hole before this packet's data.
            let t = peer.tracker;
            peer_follow.ack(t.last_off + i64::from(tcp.ack.wrapping_sub(t.last_seq) as i32));
        }
        let state = state.get_or_insert_with(|| DirState::new(seq, syn));
        if tshark
            && tcp_flags & (flags::SYN | flags::ACK) == flags::SYN | flags::ACK
            && state.base_seq != seq
            && state.table.is_empty()
            && state.extent.is_none_or(|x| x.hi == x.lo)
        {
            // tshark takes a SYN-ACK at another sequence number as the direction's new base
            // (its relative numbers start there): the direction starts again at it, while it
            // has no data (what it wrote before would stay; not modelled).
            let mut again = DirState::new(seq, true);
            (again.packets, again.bytes, again.max_ack) =
                (state.packets, state.bytes, state.max_ack);
            (again.rst, again.cut) = (state.rst, state.cut);
            *state = again;
            *follow = None;
        }
        state.packets += 1;
        if tcp_flags & flags::ACK != 0 {
            // The highest acknowledgement, in sequence order (32-bit wrap-around).
            state.max_ack = Some(match state.max_ack {
                Some(a) if (tcp.ack.wrapping_sub(a) as i32) <= 0 => a,
                _ => tcp.ack,
            });
        }
        let max_hole = self.config.limits.max_hole_bytes;
        let seq_off = state.tracker.offset(seq);
        let fin = tcp_flags & flags::FIN != 0;
        let data_off = seq_off + i64::from(syn);
        let syn_refused = syn && state.syn_off.is_none() && !state.accept_syn(seq_off, max_hole);
        if tcp_flags & flags::RST != 0 {
            state.rst = true;
        }
        if tshark && follow.is_none() {
            *follow = Some(Follow::new(data_off));
        }
        if payload.is_empty() && missing == 0 {
            if syn_refused || (fin && !state.accept_fin(data_off, max_hole)) {
                return Bucket::HoleTooLarge;
            }
            return Bucket::Control;
        }
        state.bytes.snaplen_cut_bytes += missing as u64;
        let mut outcome = if payload.is_empty() {
            Outcome::Data // all of it missing: the hole below
        } else {
            state.bytes.payload_bytes += payload.len() as u64;
            insert(
                state,
                &mut self.arena,
                &self.config,
                data_off,
                payload,
                payload_addr,
            )
            .unwrap_or_else(|refused| refused)
        };
        // Where the segment ends: after the bytes the record holds, and those it does not (a
        // snaplen cut, a record shorter than its IP length), which are a hole.
        let end = data_off + (payload.len() + missing) as i64;
        if missing > 0
            && !matches!(outcome, Outcome::HoleTooLarge)
            && !state.extend_to(data_off, end, max_hole)
        {
            outcome = state.refuse_hole(data_off + payload.len() as i64);
        }
        if tshark
            && !payload.is_empty()
            && matches!(
                outcome,
                Outcome::Data | Outcome::Retransmission | Outcome::OverlapDiscarded
            )
        {
            // tshark's stream moves on by the segment's length, captured or not.
            if let Some(follow) = follow {
                follow.packet(data_off, end);
            }
        }
        if fin && !matches!(outcome, Outcome::HoleTooLarge) {
            // The FIN ends where the segment does (also when a memory limit dropped the payload,
            // leaving a hole): checked like any FIN; past a cut it is left out.
            state.accept_fin(end, max_hole);
        }
        match outcome {
            Outcome::Data => Bucket::Data,
            Outcome::Retransmission => Bucket::Retransmission,
            Outcome::OverlapDiscarded => Bucket::OverlapDiscarded,
            Outcome::OverArena => Bucket::OverArenaLimit,
            Outcome::OverSegments => Bucket::OverSegmentLimit,
            Outcome::HoleTooLarge => Bucket::HoleTooLarge,
        }
    }

    /// Closes every flow: fixes stream starts, builds the translation tables and hole lists.
    pub fn finish(self) -> Reassembly {
        let unacked = self.config.unacked;
        // The flow table's index is not needed to close the flows: freed before the finished
        // flows are allocated, which is the peak of a capture of many flows.
        drop(self.index);
        let mut follows = self.follows.into_iter();
        let flows = self
            .flows
            .into_iter()
            .map(|flow| {
                let [f0, f1] = follows.next().unwrap_or_default();
                let reversed = FiveTuple {
                    src: flow.tuple.dst,
                    dst: flow.tuple.src,
                    sport: flow.tuple.dport,
                    dport: flow.tuple.sport,
                    proto: flow.tuple.proto,
                };
                let [d0, d1] = flow.dirs;
                // What each direction's peer acknowledged, when unacknowledged data is dropped.
                let acked = |peer: &Option<DirState>| match unacked {
                    UnackedPolicy::Keep | UnackedPolicy::Tshark => None,
                    UnackedPolicy::Drop => peer.as_ref().and_then(|p| p.max_ack),
                };
                let after_hole = unacked == UnackedPolicy::Tshark;
                let (a0, a1) = (acked(&d1), acked(&d0));
                Flow {
                    tuple: flow.tuple,
                    tunnel: flow.tunnel,
                    tunnels: flow.tunnels,
                    dirs: [
                        finish_direction(d0, flow.tuple, a0, after_hole, f0),
                        finish_direction(d1, reversed, a1, after_hole, f1),
                    ],
                }
            })
            .collect();
        Reassembly {
            arena: self.arena,
            flows,
            counts: self.counts,
            defrag: self.defrag.counts(),
            leniency: Leniency::default(),
            unsupported_links: self.unsupported_links,
            reused_tuples: self.reused_tuples,
            config: self.config,
        }
    }
}

/// A connection's endpoints packed for hashing (TCP only): addresses as 128-bit numbers (IPv4
/// in the low bits), the lower endpoint first; ports and the address family in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FlowKey {
    src: u128,
    dst: u128,
    ports_family: u64,
}

impl FlowKey {
    /// The key of the connection between the two endpoints, whichever sends: the lower
    /// endpoint (address, then port) first.
    fn new(src: IpAddr, sport: u16, dst: IpAddr, dport: u16) -> Self {
        let bits = |a: IpAddr| match a {
            IpAddr::V4(a) => u128::from(u32::from(a)),
            IpAddr::V6(a) => u128::from(a),
        };
        let (a, b) = ((bits(src), sport), (bits(dst), dport));
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        FlowKey {
            src: lo.0,
            dst: hi.0,
            ports_family: u64::from(lo.1) << 32 | u64::from(hi.1) << 16 | u64::from(src.is_ipv6()),
        }
    }
}

impl Hash for FlowKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u128(self.src);
        state.write_u128(self.dst);
        state.write_u64(self.ports_family);
    }
}

/// A fast keyed hasher for [`FlowKey`]s (folded 64×64→128-bit multiplies, as foldhash does),
/// seeded per reassembler from the standard library's random keys so that a crafted capture
/// cannot aim its flows at one bucket. Only lookups use it: outputs never depend on the seed.
#[derive(Debug, Clone, Copy)]
struct FoldState {
    seed: u64,
}

impl FoldState {
    fn new() -> Self {
        FoldState {
            seed: RandomState::new().hash_one(0x5eed_u64) | 1,
        }
    }
}

impl BuildHasher for FoldState {
    type Hasher = FoldHasher;

    fn build_hasher(&self) -> FoldHasher {
        FoldHasher { state: self.seed }
    }
}

struct FoldHasher {
    state: u64,
}

impl FoldHasher {
    #[inline]
    fn mix(&mut self, x: u64) {
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        let product = u128::from(self.state ^ x) * u128::from(K);
        self.state = (product as u64) ^ ((product >> 64) as u64);
    }
}

impl Hasher for FoldHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.mix(x);
    }

    #[inline]
    fn write_u128(&mut self, x: u128) {
        self.mix(x as u64);
        self.mix((x >> 64) as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // A last round so that the high bits (hashbrown's control bytes) depend on every input.
        let product = u128::from(self.state) * u128::from(0xa076_1d64_78bd_642f_u64);
        (product as u64) ^ ((product >> 64) as u64)
    }
}

enum Bucket {
    Data,
    Control,
    Retransmission,
    OverlapDiscarded,
    NonIp,
    NonTcp,
    IpFragment,
    UnsupportedLink,
    SnaplenCut,
    Malformed,
    OverFlowLimit,
    OverArenaLimit,
    OverSegmentLimit,
    HoleTooLarge,
}

/// Counts equal and differing bytes of `new` against the arena bytes at `addr`.
fn compare(arena: &Arena, addr: u64, new: &[u8], bytes: &mut ByteCounts) -> bool {
    let old = arena.get(addr, new.len());
    if old == new {
        bytes.duplicate_bytes += new.len() as u64;
        return false;
    }
    let differing = old.iter().zip(new).filter(|(a, b)| a != b).count() as u64;
    bytes.duplicate_bytes += new.len() as u64 - differing;
    bytes.conflict_bytes += differing;
    differing > 0
}

/// Puts `payload` (stream offset `start`) into the direction's translation table: appended
/// to the arena, or referenced at `payload_addr` in a capture-backed one. `Err` is the limit
/// that refused it. Past a cut nothing is kept (a payload that reaches past it keeps the part
/// before it).
fn insert(
    state: &mut DirState,
    arena: &mut Arena,
    config: &Config,
    start: i64,
    payload: &[u8],
    payload_addr: Option<u64>,
) -> Result<Outcome, Outcome> {
    let max_hole = config.limits.max_hole_bytes;
    let payload = match state.cut_at {
        Some(c) if start >= c => {
            state.cut = true;
            return Err(Outcome::HoleTooLarge);
        }
        Some(c) => &payload[..payload.len().min((c - start) as usize)],
        None => payload,
    };
    let end = start + payload.len() as i64;
    // Fast path, the common case (in order, or filling a gap): no entry overlaps [start, end).
    // The entry before `end`, when it ends by `start`, proves it (entries are disjoint).
    let before_end = state.table.range(..end).next_back().map(|(&k, &e)| (k, e));
    if before_end.is_none_or(|(k, e)| k + e.len as i64 <= start) {
        let base = payload_addr.unwrap_or_else(|| arena.next_addr());
        let coalesce = before_end
            .filter(|(k, e)| k + e.len as i64 == start && e.addr + e.len == base)
            .map(|(k, _)| k);
        let added = usize::from(coalesce.is_none());
        let Ok(extent) = state.extent_with(start, end, None, max_hole) else {
            return Err(state.refuse_hole(start));
        };
        let addr = store(
            state.table.len() + added,
            config,
            arena,
            payload,
            payload_addr,
        )?;
        state.bytes.new_bytes += payload.len() as u64;
        put(
            &mut state.table,
            start,
            addr,
            payload.len() as u64,
            coalesce,
        );
        if state.extent.is_none() {
            state.start_at(extent.lo, extent.hi, max_hole);
        } else {
            state.extent = Some(extent);
        }
        return Ok(Outcome::Data);
    }
    // Existing entries that overlap [start, end).
    let first_key = state
        .table
        .range(..=start)
        .next_back()
        .filter(|(&k, e)| k + e.len as i64 > start)
        .map_or(start, |(&k, _)| k);
    let overlapping: Vec<(i64, Entry)> = state
        .table
        .range(first_key..end)
        .map(|(&k, &e)| (k, e))
        .collect();
    // Uncovered pieces, and the comparison of covered bytes.
    let mut pieces = Vec::new();
    let mut cursor = start;
    let mut scratch = state.bytes;
    let mut conflict = false;
    for &(k, e) in &overlapping {
        let (ov_start, ov_end) = (k.max(start), (k + e.len as i64).min(end));
        let new = &payload[(ov_start - start) as usize..(ov_end - start) as usize];
        conflict |= compare(arena, e.addr + (ov_start - k) as u64, new, &mut scratch);
        if k > cursor {
            pieces.push((cursor, k));
        }
        cursor = cursor.max(k + e.len as i64);
    }
    if cursor < end {
        pieces.push((cursor, end));
    }
    let new_bytes: i64 = pieces.iter().map(|(s, e)| e - s).sum();
    let base = payload_addr.unwrap_or_else(|| arena.next_addr());
    // An entry ending at `start` whose bytes end where this payload will be written grows.
    let coalesce = state
        .table
        .range(..start)
        .next_back()
        .filter(|(&k, e)| k + e.len as i64 == start && e.addr + e.len == base)
        .map(|(&k, _)| k);
    let added = match config.overlap {
        OverlapPolicy::FirstWins => {
            if pieces.is_empty() {
                state.bytes = scratch;
                return Ok(if conflict {
                    Outcome::OverlapDiscarded
                } else {
                    Outcome::Retransmission
                });
            }
            let merges = usize::from(coalesce.is_some() && pieces[0].0 == start);
            pieces.len() - merges
        }
        OverlapPolicy::LastWins => {
            if pieces.is_empty() && !conflict {
                state.bytes = scratch;
                return Ok(Outcome::Retransmission);
            }
            let covered = overlapping
                .iter()
                .filter(|(k, e)| *k >= start && k + e.len as i64 <= end)
                .count();
            let split = usize::from(
                overlapping
                    .first()
                    .is_some_and(|(k, e)| *k < start && k + e.len as i64 > end),
            );
            let merges = usize::from(coalesce.is_some());
            (1 + split).saturating_sub(covered + merges)
        }
    };
    // Bytes that overlap what is there cannot widen the stream: the check is for form's sake.
    let Ok(extent) = state.extent_with(start, end, Some(&pieces), max_hole) else {
        return Err(state.refuse_hole(start));
    };
    let addr = store(
        state.table.len() + added,
        config,
        arena,
        payload,
        payload_addr,
    )?;
    debug_assert_eq!(addr, base);
    state.extent = Some(extent);
    state.bytes = scratch;
    state.bytes.new_bytes += new_bytes as u64;
    match config.overlap {
        OverlapPolicy::FirstWins => {
            for (s, e) in pieces {
                put(
                    &mut state.table,
                    s,
                    addr + (s - start) as u64,
                    (e - s) as u64,
                    coalesce,
                );
            }
        }
        OverlapPolicy::LastWins => {
            for (k, e) in overlapping {
                let k_end = k + e.len as i64;
                state.table.remove(&k);
                if k < start {
                    state.table.insert(
                        k,
                        Entry {
                            addr: e.addr,
                            len: (start - k) as u64,
                        },
                    );
                }
                if k_end > end {
                    state.table.insert(
                        end,
                        Entry {
                            addr: e.addr + (end - k) as u64,
                            len: (k_end - end) as u64,
                        },
                    );
                }
            }
            put(
                &mut state.table,
                start,
                addr,
                payload.len() as u64,
                coalesce,
            );
        }
    }
    Ok(Outcome::Data)
}

/// Stores `payload` once the table would hold `entries` (appended to the arena, or referenced
/// at `payload_addr` in a capture-backed one): its address, or the limit that refused it.
fn store(
    entries: usize,
    config: &Config,
    arena: &mut Arena,
    payload: &[u8],
    payload_addr: Option<u64>,
) -> Result<u64, Outcome> {
    if entries > config.limits.max_segments_per_direction {
        return Err(Outcome::OverSegments);
    }
    match payload_addr {
        Some(at) => arena.reference(at, payload.len()),
        None => arena.append(payload),
    }
    .ok_or(Outcome::OverArena)
}

/// Inserts an entry, growing the entry at `coalesce` instead when it ends where this one starts.
fn put(table: &mut BTreeMap<i64, Entry>, start: i64, addr: u64, len: u64, coalesce: Option<i64>) {
    if let Some(k) = coalesce {
        if let Some(prev) = table.get_mut(&k) {
            if k + prev.len as i64 == start && prev.addr + prev.len == addr {
                prev.len += len;
                return;
            }
        }
    }
    table.insert(start, Entry { addr, len });
}

/// Puts `len` stream bytes at sequence offset `k` (arena address `addr`) into `direction`,
/// whose stream starts at offset `start` and is laid out up to `cursor`: bytes before the start
/// are left out and counted, a gap before them is a hole.
fn place(direction: &mut Direction, cursor: &mut u64, start: i64, k: i64, addr: u64, len: u64) {
    let k_end = k + len as i64;
    if k_end <= start {
        direction.bytes.before_start_bytes += len;
        return;
    }
    let skip = (start - k).max(0) as u64;
    direction.bytes.before_start_bytes += skip;
    let offset = (k - start).max(0) as u64;
    if offset > *cursor {
        direction.holes.push(Hole {
            offset: *cursor,
            len_bytes: offset - *cursor,
        });
    }
    direction.segments.push(Segment {
        offset,
        addr: addr + skip,
        len_bytes: len - skip,
    });
    *cursor = offset + len - skip;
}

/// The direction's stream as the reassembler kept it; with `acked` (the highest sequence
/// number its peer acknowledged: [`UnackedPolicy::Drop`]), only up to there, and up to the last
/// byte captured before it; `after_hole` ([`UnackedPolicy::Tshark`]): up to where tshark's
/// `follow` got (all the data before the first hole, and each run after a hole that the hole's
/// data or an acknowledgement beyond the run's start reached), less the holes it passed.
fn finish_direction(
    state: Option<DirState>,
    tuple: FiveTuple,
    acked: Option<u32>,
    after_hole: bool,
    follow: Option<Follow>,
) -> Direction {
    let mut direction = Direction {
        src: tuple.src,
        dst: tuple.dst,
        sport: tuple.sport,
        dport: tuple.dport,
        start_seq: None,
        syn: false,
        fin: false,
        rst: false,
        len_bytes: 0,
        segments: Vec::new(),
        holes: Vec::new(),
        packets: 0,
        bytes: ByteCounts::default(),
        cut: false,
    };
    let Some(state) = state else {
        return direction;
    };
    direction.cut = state.cut;
    direction.syn = state.syn_off.is_some();
    direction.fin = state.fin_off.is_some();
    direction.rst = state.rst;
    direction.packets = state.packets;
    direction.bytes = state.bytes;
    let mut lowest = state.table.keys().next().copied();
    if after_hole && state.syn_off.is_none() && lowest.is_some() {
        // tshark anchors a direction without a SYN at its first packet (offset 0), data or
        // not (a keep-alive's sequence number is one below the data's).
        lowest = Some(0);
    }
    let Some(start) = state
        .syn_off
        .map(|s| s + 1)
        .or(lowest)
        .or(state.extent.map(|x| x.lo))
    else {
        return direction;
    };
    direction.start_seq = Some(state.anchor_seq.wrapping_add(start as u32));
    // Where the stream ends, as a sequence offset (no limit: i64::MAX): where the peer's
    // acknowledgements end, or where tshark's follow got to, packet by packet (`Follow`).
    let limited = acked.is_some() || after_hole;
    let limit = match acked {
        _ if after_hole => follow.as_ref().map_or(start, |f| f.next),
        Some(a) => {
            state.tracker.last_off + i64::from(a.wrapping_sub(state.tracker.last_seq) as i32)
        }
        None => i64::MAX,
    };
    let mut cursor = 0_u64;
    // The holes tshark's follow passed with a marker before their data arrived (sorted).
    let passed = follow.as_ref().map_or(&[][..], |f| &f.passed[..]);
    let mut p = 0;
    for (&k, e) in &state.table {
        let mut e = *e;
        if k + e.len as i64 > limit {
            // Never acknowledged: left out.
            let keep = (limit - k).max(0) as u64;
            direction.bytes.unacked_bytes += e.len - keep;
            e.len = keep;
            if keep == 0 {
                continue;
            }
        }
        // The entry less the passed holes' bytes (left out as tshark leaves them out).
        let (mut lo, hi) = (k, k + e.len as i64);
        while lo < hi {
            while passed.get(p).is_some_and(|&(_, b)| b <= lo) {
                p += 1;
            }
            let end = match passed.get(p) {
                Some(&(a, b)) if a <= lo => {
                    let to = b.min(hi);
                    direction.bytes.unacked_bytes += (to - lo) as u64;
                    lo = to;
                    continue;
                }
                Some(&(a, _)) => a.min(hi),
                None => hi,
            };
            place(
                &mut direction,
                &mut cursor,
                start,
                lo,
                e.addr + (lo - k) as u64,
                (end - lo) as u64,
            );
            lo = end;
        }
    }
    // Bytes announced by a FIN, or by a segment's length, but never captured are a hole at
    // the end (not when unacknowledged data is dropped: the stream ends with its last byte).
    let fin_end = state
        .fin_off
        .map_or(0, |f| (f - start).max(0) as u64)
        .max(state.extent.map_or(0, |x| (x.hi - start).max(0) as u64));
    if fin_end > cursor && !limited {
        direction.holes.push(Hole {
            offset: cursor,
            len_bytes: fin_end - cursor,
        });
        cursor = fin_end;
    }
    direction.len_bytes = cursor;
    debug_assert!(
        limited
            || direction.holes.iter().map(|h| h.len_bytes).sum::<u64>()
                == state.extent.map_or(0, |x| x.hole_bytes),
        "{direction:?} {:?}",
        state.extent
    );
    direction
}
