//! IP defragmentation (IPv4 and IPv6) as tshark 4.0 does it (`ip.defragment` and
//! `ipv6.defragment`, both on by default; epan/reassemble.c), so that TCP carried in fragmented
//! datagrams, and tunnels whose outer datagrams were fragmented, are followed as tshark
//! follows them.
//!
//! - **Key**: source, destination, identification, protocol and VLAN (tshark folds the last
//!   three into one number beside the two addresses).
//! - **Complete** once the last fragment (more-fragments clear) has set the length and the
//!   fragments cover every byte from 0 to it; the datagram is then handed on (rebuilt with a
//!   plain IPv4 or IPv6 header, [`Defragmenter::push`]) and forgotten, so a later fragment with
//!   the same key starts a new datagram. The first last-fragment's length stands (tshark flags
//!   later ones "multiple tails" and keeps it); bytes beyond it are left out.
//! - **Overlaps**: each byte comes from the fragment that starts lowest among those holding it,
//!   of equal starts the one that arrived first: tshark keeps its fragments sorted by offset
//!   (a new one after those at the same offset) and copies each only beyond what the ones
//!   before it covered.
//! - **Cut fragments** (a snaplen shorter than the fragment) are not reassembled, as tshark
//!   reassembles only fragments whose bytes are all captured.
//! - **No timeout**: tshark 4.0 keeps an incomplete datagram until the end of the capture, and
//!   so does this. What it holds is bounded instead ([`Limits`]): past a bound the oldest
//!   incomplete datagram is dropped (its fragments counted in [`DefragCounts::evicted`]).
//!
//! Written here rather than taken from a crate: `etherparse`'s `IpDefragPool` (the one
//! maintained Rust defragmenter for captures) lets the last copy of an overlapping byte win
//! and refuses fragments whose length is not a multiple of 16 (IP's unit is 8, so a 1,480-byte
//! fragment, the common Ethernet one, is refused); neither is what tshark does. smoltcp's
//! assembler is tied to its interface and keeps no overlap rule.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use crate::decode::Segment;
use crate::parse::IpInfo;

/// Bounds on what the defragmenter holds. A fragment past a bound is dropped and counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Fragments held for one datagram.
    pub max_fragments_per_datagram: usize,
    /// Fragment bytes held for one datagram (copies of overlapping bytes included).
    pub max_bytes_per_datagram: usize,
    /// Incomplete datagrams held for one pair of source and destination addresses.
    pub max_datagrams_per_pair: usize,
    /// Incomplete datagrams held in all.
    pub max_datagrams: usize,
    /// Fragment bytes held in all.
    pub max_bytes: usize,
}

/// The largest datagram payload put together: IPv4's total length and IPv6's payload length
/// are 16 bits.
pub const MAX_DATAGRAM_BYTES: usize = 65_535;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // The smallest fragments (8 bytes) of the largest datagram.
            max_fragments_per_datagram: MAX_DATAGRAM_BYTES / 8 + 1,
            max_bytes_per_datagram: 4 * MAX_DATAGRAM_BYTES,
            max_datagrams_per_pair: 4096,
            max_datagrams: 65_536,
            max_bytes: 64 << 20,
        }
    }
}

/// What became of the fragments pushed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DefragCounts {
    /// Fragments pushed.
    pub fragments: u64,
    /// Datagrams put together.
    pub datagrams: u64,
    /// Fragments that went into them.
    pub fragments_reassembled: u64,
    /// Bytes that another fragment of the same datagram also held.
    pub overlap_bytes: u64,
    /// Of those, bytes that differed (the first copy by the rule above was kept).
    pub conflict_bytes: u64,
    /// Fragments not reassembled because the capture cut them.
    pub cut: u64,
    /// Fragments dropped by a [`Limits`] bound (their own, or their datagram's when it was
    /// the oldest and dropped to make room).
    pub evicted: u64,
    /// Fragments of datagrams still incomplete (at the end of the capture: never completed).
    pub pending: u64,
}

/// What a pushed fragment did.
#[derive(Debug)]
pub enum Pushed {
    /// The datagram is still incomplete (or the fragment was dropped: see the counts).
    Held,
    /// This fragment completed its datagram: an IPv4 or IPv6 packet (a plain header, then the
    /// payload put together) that [`crate::decode::decode_datagram`] walks on.
    Complete(Vec<u8>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    src: IpAddr,
    dst: IpAddr,
    ident: u32,
    protocol: u8,
    vlan: Option<u16>,
}

#[derive(Debug)]
struct Pending {
    ip: IpInfo,
    /// Sorted by offset; of equal offsets, in arrival order.
    pieces: Vec<(usize, Vec<u8>)>,
    /// The datagram's length, once a last fragment set it.
    tail: Option<usize>,
    bytes: usize,
    serial: u64,
}

/// Puts fragmented IP datagrams together (see the module).
#[derive(Debug, Default)]
pub struct Defragmenter {
    limits: Limits,
    table: HashMap<Key, Pending>,
    /// Incomplete datagrams oldest first, with their serial (stale entries are skipped).
    order: VecDeque<(Key, u64)>,
    per_pair: HashMap<(IpAddr, IpAddr), usize>,
    bytes: usize,
    serial: u64,
    counts: DefragCounts,
}

impl Defragmenter {
    /// A defragmenter with these bounds.
    pub fn new(limits: Limits) -> Self {
        Defragmenter {
            limits,
            ..Defragmenter::default()
        }
    }

    /// What happened so far; `pending` counts the fragments held now.
    pub fn counts(&self) -> DefragCounts {
        DefragCounts {
            pending: self.table.values().map(|p| p.pieces.len() as u64).sum(),
            ..self.counts
        }
    }

    /// Takes the fragment `seg` (decoded from `frame`, [`Segment::frag`] set).
    pub fn push(&mut self, frame: &[u8], seg: &Segment) -> Pushed {
        let Some(frag) = &seg.frag else {
            return Pushed::Held;
        };
        self.counts.fragments += 1;
        if !frag.complete {
            self.counts.cut += 1;
            return Pushed::Held;
        }
        let data = frame.get(frag.data.clone()).unwrap_or_default();
        let end = frag.offset_bytes + data.len();
        let key = Key {
            src: seg.ip.src,
            dst: seg.ip.dst,
            ident: frag.ident,
            protocol: frag.protocol,
            vlan: seg.vlan,
        };
        if end > MAX_DATAGRAM_BYTES {
            self.counts.evicted += 1;
            return Pushed::Held;
        }
        if !self.table.contains_key(&key) {
            let pair = self.per_pair.get(&(key.src, key.dst)).copied().unwrap_or(0);
            if pair >= self.limits.max_datagrams_per_pair {
                self.counts.evicted += 1;
                return Pushed::Held;
            }
            while self.table.len() >= self.limits.max_datagrams {
                self.evict_oldest();
            }
            self.serial += 1;
            if self.order.len() > 2 * self.table.len() + 64 {
                // Completed datagrams left stale entries: keep the order's size to the table's.
                let table = &self.table;
                self.order
                    .retain(|(k, s)| table.get(k).is_some_and(|p| p.serial == *s));
            }
            self.order.push_back((key, self.serial));
            *self.per_pair.entry((key.src, key.dst)).or_default() += 1;
            let mut ip = seg.ip;
            ip.proto = frag.protocol;
            self.table.insert(
                key,
                Pending {
                    ip,
                    pieces: Vec::new(),
                    tail: None,
                    bytes: 0,
                    serial: self.serial,
                },
            );
        }
        // Room in all: drop the oldest other datagrams first.
        while self.bytes + data.len() > self.limits.max_bytes
            && self.order.front().is_some_and(|(k, _)| *k != key)
        {
            self.evict_oldest();
        }
        let Some(pending) = self.table.get_mut(&key) else {
            return Pushed::Held;
        };
        if pending.pieces.len() >= self.limits.max_fragments_per_datagram
            || pending.bytes + data.len() > self.limits.max_bytes_per_datagram
            || self.bytes + data.len() > self.limits.max_bytes
        {
            self.counts.evicted += 1;
            return Pushed::Held;
        }
        let at = pending
            .pieces
            .partition_point(|(o, _)| *o <= frag.offset_bytes);
        pending
            .pieces
            .insert(at, (frag.offset_bytes, data.to_vec()));
        pending.bytes += data.len();
        self.bytes += data.len();
        if frag.offset_bytes == 0 {
            // The first fragment's header describes the datagram.
            pending.ip = IpInfo {
                proto: frag.protocol,
                ..seg.ip
            };
        }
        if !frag.more && pending.tail.is_none() {
            pending.tail = Some(end);
        }
        let Some(len) = pending.tail else {
            return Pushed::Held;
        };
        // Complete when the pieces cover [0, len).
        let mut covered = 0;
        for (o, d) in &pending.pieces {
            if *o > covered {
                break;
            }
            covered = covered.max(o + d.len());
        }
        if covered < len {
            return Pushed::Held;
        }
        let Some(pending) = self.table.remove(&key) else {
            return Pushed::Held;
        };
        self.forget(&key, &pending);
        Pushed::Complete(self.assemble(pending, len))
    }

    /// The datagram of `pending`, `len` payload bytes, with a plain IP header.
    fn assemble(&mut self, pending: Pending, len: usize) -> Vec<u8> {
        let ip = pending.ip;
        let mut out = match (ip.src, ip.dst) {
            (IpAddr::V4(src), IpAddr::V4(dst)) => {
                let mut h = vec![0x45, ip.tos];
                h.extend(((20 + len) as u16).to_be_bytes());
                h.extend([0, 0, 0, 0, ip.ttl, ip.proto, 0, 0]);
                h.extend(src.octets());
                h.extend(dst.octets());
                h
            }
            (src, dst) => {
                let octets = |a: IpAddr| match a {
                    IpAddr::V6(a) => a.octets(),
                    IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
                };
                let mut h = vec![0x60 | (ip.tos >> 4), ip.tos << 4, 0, 0];
                h.extend((len as u16).to_be_bytes());
                h.extend([ip.proto, ip.ttl]);
                h.extend(octets(src));
                h.extend(octets(dst));
                h
            }
        };
        let header = out.len();
        out.resize(header + len, 0);
        let mut filled = 0; // bytes [0, filled) are placed
        self.counts.datagrams += 1;
        self.counts.fragments_reassembled += pending.pieces.len() as u64;
        for (o, d) in &pending.pieces {
            let piece_end = (o + d.len()).min(len);
            if piece_end <= *o {
                continue;
            }
            // Bytes before `filled` were placed by a fragment that starts lower (or equally,
            // and came first): they stay; compare them.
            let overlap_end = filled.min(piece_end);
            if *o < overlap_end {
                let old = &out[header + o..header + overlap_end];
                let new = &d[..overlap_end - o];
                self.counts.overlap_bytes += new.len() as u64;
                self.counts.conflict_bytes +=
                    old.iter().zip(new).filter(|(a, b)| a != b).count() as u64;
            }
            if piece_end > filled {
                let from = filled.max(*o);
                out[header + from..header + piece_end].copy_from_slice(&d[from - o..piece_end - o]);
                filled = piece_end;
            }
        }
        out
    }

    fn forget(&mut self, key: &Key, pending: &Pending) {
        self.bytes -= pending.bytes;
        if let Some(n) = self.per_pair.get_mut(&(key.src, key.dst)) {
            *n -= 1;
            if *n == 0 {
                self.per_pair.remove(&(key.src, key.dst));
            }
        }
    }

    fn evict_oldest(&mut self) {
        while let Some((key, serial)) = self.order.pop_front() {
            if self.table.get(&key).is_some_and(|p| p.serial == serial) {
                if let Some(p) = self.table.remove(&key) {
                    self.counts.evicted += p.pieces.len() as u64;
                    self.forget(&key, &p);
                }
                return;
            }
        }
    }
}
