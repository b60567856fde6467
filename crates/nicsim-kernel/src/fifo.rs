//! FIFOs with byte capacities.
//!
//! A packet occupies its bytes from the moment its transfer into the FIFO starts (`push`) until
//! its transfer out starts (`pop`). Each slot also records when the packet's first and last
//! beats arrive, so a consumer can cut through. The FIFO integrates its own occupancy over time,
//! which gives mean occupancy and lets tests check Little's law (L = λ W) on every FIFO.
//!
//! The integral of occupancy is the sum over packets of what each contributes while it is in:
//! bytes × sojourn. It is added when a packet leaves, and for the packets still in when the
//! statistics are read, so a push or a pop costs no multiplication by elapsed time.

use std::cell::Cell;
use std::collections::VecDeque;

use serde::Serialize;

use crate::time::{Time, Timebase};

/// A packet in a [`Fifo`]: the item, its size, and when it was pushed and its beats land.
#[derive(Debug, Clone)]
pub struct Slot<T> {
    /// The packet, or the id that stands for it (a model's FIFOs usually hold slab ids).
    pub item: T,
    /// Bytes the packet occupies in the FIFO, from its push until its pop.
    pub bytes: u32,
    /// First beat available to the consumer.
    pub head: Time,
    /// Last beat available to the consumer.
    pub tail: Time,
    /// When the packet was pushed (its transfer in started), in ticks; its sojourn counts from
    /// here.
    pub enq: Time,
}

/// Occupancy statistics. Areas are integrals over time (ticks).
#[derive(Debug, Clone, Default)]
pub struct FifoStats {
    /// Packets pushed.
    pub pushes: u64,
    /// Packets popped.
    pub pops: u64,
    /// Highest occupancy reached, in bytes.
    pub max_bytes: u64,
    /// Highest occupancy reached, in packets.
    pub max_packets: u64,
    /// Integral of the bytes held over time (byte·ticks), packets still in included; divided by the
    /// elapsed ticks it is the mean occupancy in bytes.
    pub byte_area: u128,
    /// Integral of the packets held over time (packet·ticks), packets still in included; divided by
    /// the elapsed ticks it is the mean queue length (L in Little's law).
    pub packet_area: u128,
    /// Sum over popped packets of (pop time − push time).
    pub sojourn_ticks: u128,
}

/// A FIFO of packets bounded by a capacity in bytes, which keeps its own occupancy statistics
/// ([`FifoStats`]).
#[derive(Debug, Clone)]
pub struct Fifo<T> {
    capacity_bytes: u64,
    used_bytes: u64,
    q: VecDeque<Slot<T>>,
    stats: FifoStats,
    /// Of the popped packets: Σ bytes × sojourn.
    byte_sojourn: u128,
    /// Its writer found no room, so the next pop must wake it (see [`crate::FifoSet`]).
    pub(crate) wait_room: Cell<bool>,
    /// Its reader waits for any push, not only one into an empty FIFO.
    pub(crate) wait_push: Cell<bool>,
}

impl<T> Fifo<T> {
    /// An empty FIFO that holds at most `capacity_bytes` bytes.
    pub fn new(capacity_bytes: u64) -> Fifo<T> {
        Fifo {
            capacity_bytes,
            used_bytes: 0,
            q: VecDeque::new(),
            stats: FifoStats::default(),
            byte_sojourn: 0,
            wait_room: Cell::new(false),
            wait_push: Cell::new(false),
        }
    }
    /// Whether a packet of `bytes` fits beside the bytes already held (a model's writer asks
    /// [`FifoSet::room`](crate::FifoSet::room) instead, which also arranges its wake-up).
    #[inline]
    pub fn has_room(&self, bytes: u32) -> bool {
        self.used_bytes + bytes as u64 <= self.capacity_bytes
    }
    /// Bytes held, counting packets still arriving (see [`Fifo::stored_bytes`]).
    #[inline]
    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }
    /// The capacity in bytes, as given to [`Fifo::new`].
    #[inline]
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }
    /// Packets held, counting packets still arriving.
    #[inline]
    pub fn len(&self) -> usize {
        self.q.len()
    }
    /// Whether no packet is held.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    /// The oldest packet (the next to pop), whether or not its first beat has landed.
    #[inline]
    pub fn front(&self) -> Option<&Slot<T>> {
        self.q.front()
    }
    /// The front packet, to update its metadata in place.
    #[inline]
    pub fn front_mut(&mut self) -> Option<&mut Slot<T>> {
        self.q.front_mut()
    }
    /// Bytes of the packets whose last beat is in by `now`. Only for a FIFO whose packets land
    /// in the order they were pushed (one writer over one link, as a NIC's input FIFO): it
    /// counts the packets still arriving from the back.
    #[inline]
    pub fn stored_bytes(&self, now: Time) -> u64 {
        let arriving: u64 = self
            .q
            .iter()
            .rev()
            .take_while(|s| s.tail > now)
            .map(|s| s.bytes as u64)
            .sum();
        self.used_bytes - arriving
    }
    /// The packets held, from the front (oldest) to the back (newest).
    pub fn iter(&self) -> impl Iterator<Item = &Slot<T>> {
        self.q.iter()
    }
    /// Start writing a packet whose first and last beats land at `head` and `tail`.
    #[inline]
    pub fn push(&mut self, now: Time, item: T, bytes: u32, head: Time, tail: Time) {
        debug_assert!(self.has_room(bytes));
        self.used_bytes += bytes as u64;
        self.q.push_back(Slot {
            item,
            bytes,
            head,
            tail,
            enq: now,
        });
        self.stats.pushes += 1;
        self.stats.max_bytes = self.stats.max_bytes.max(self.used_bytes);
        self.stats.max_packets = self.stats.max_packets.max(self.q.len() as u64);
    }
    /// Start reading the front packet out.
    #[inline]
    pub fn pop(&mut self, now: Time) -> Option<Slot<T>> {
        let s = self.q.pop_front()?;
        self.used_bytes -= s.bytes as u64;
        self.stats.pops += 1;
        let dt = now - s.enq;
        self.stats.sojourn_ticks += dt as u128;
        self.byte_sojourn += dt as u128 * s.bytes as u128;
        Some(s)
    }
    /// Statistics integrated up to `now` (not before the last push or pop).
    pub fn stats_at(&self, now: Time) -> FifoStats {
        let mut s = self.stats.clone();
        s.packet_area = s.sojourn_ticks;
        s.byte_area = self.byte_sojourn;
        for slot in &self.q {
            let dt = (now - slot.enq) as u128;
            s.packet_area += dt;
            s.byte_area += dt * slot.bytes as u128;
        }
        s
    }
}

/// What a run's summary says about one FIFO (`fifos.<name>`), over a span of simulated time.
/// A FIFO counts bytes; a ring of descriptors ([`FifoSummary::of_ring`]) counts packets, and
/// has no byte fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FifoSummary {
    /// Capacity in bytes (a FIFO of bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    /// Capacity in packets (a ring of descriptors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_packets: Option<u64>,
    /// Mean occupancy in bytes over the span.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_bytes: Option<f64>,
    /// Highest occupancy in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// Mean occupancy in packets over the span (L in Little's law).
    pub mean_packets: f64,
    /// Highest occupancy in packets.
    pub max_packets: u64,
    /// Packets pushed.
    pub arrivals: u64,
    /// Packets popped.
    pub departures: u64,
    /// Little's law's three terms, to check L = λW.
    pub littles_law: LittlesLaw,
}

/// L = λW for one FIFO over a span.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LittlesLaw {
    /// Mean packets held.
    #[serde(rename = "L_packets")]
    pub l_packets: f64,
    /// Departures per µs.
    pub lambda_per_us: f64,
    /// Mean sojourn of a departed packet, in µs.
    #[serde(rename = "W_us")]
    pub w_us: f64,
}

impl FifoSummary {
    /// FIFO `f` (of bytes) from time 0 to `horizon` (> 0) ticks of `tb`.
    pub fn of<T>(f: &Fifo<T>, horizon: Time, tb: &Timebase) -> FifoSummary {
        FifoSummary::at(f, horizon, tb, false)
    }

    /// A ring of descriptors (each pushed as one byte, so that its capacity counts packets)
    /// from time 0 to `horizon` (> 0) ticks of `tb`.
    pub fn of_ring<T>(f: &Fifo<T>, horizon: Time, tb: &Timebase) -> FifoSummary {
        FifoSummary::at(f, horizon, tb, true)
    }

    /// [`FifoSummary::of`], or [`FifoSummary::of_ring`] when `ring`: its statistics integrated
    /// once.
    fn at<T>(f: &Fifo<T>, horizon: Time, tb: &Timebase, ring: bool) -> FifoSummary {
        let s = f.stats_at(horizon);
        let l = s.packet_area as f64 / horizon.ticks() as f64;
        let w_us = if s.pops > 0 {
            s.sojourn_ticks as f64 / s.pops as f64 / tb.ticks_per_us() as f64
        } else {
            0.0
        };
        let bytes = |v| (!ring).then_some(v);
        FifoSummary {
            capacity_bytes: bytes(f.capacity_bytes()),
            capacity_packets: ring.then_some(f.capacity_bytes()),
            mean_bytes: (!ring).then(|| s.byte_area as f64 / horizon.ticks() as f64),
            max_bytes: bytes(s.max_bytes),
            mean_packets: l,
            max_packets: s.max_packets,
            arrivals: s.pushes,
            departures: s.pops,
            littles_law: LittlesLaw {
                l_packets: l,
                lambda_per_us: s.pops as f64 / tb.to_us(horizon),
                w_us,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ticks: u64) -> Time {
        Time::from_ticks(ticks)
    }

    #[test]
    fn capacity_and_littles_law() {
        let mut f: Fifo<u32> = Fifo::new(3000);
        assert!(f.has_room(1500));
        f.push(t(0), 1, 1500, t(1), t(10));
        f.push(t(5), 2, 1500, t(6), t(15));
        assert!(!f.has_room(1));
        assert_eq!(f.pop(t(20)).unwrap().item, 1);
        assert_eq!(f.pop(t(30)).unwrap().item, 2);
        let s = f.stats_at(t(40));
        // L = area / T, λ = n / T, W = sojourn / n  →  area == sojourn exactly.
        assert_eq!(s.packet_area, s.sojourn_ticks);
        assert_eq!(s.max_bytes, 3000);
        // Mid-run, with a packet still in: 1500 B from 50 on.
        f.push(t(50), 3, 1500, t(51), t(60));
        let s = f.stats_at(t(70));
        assert_eq!(s.packet_area, 20 + 25 + 20);
        assert_eq!(s.byte_area, 1500 * (20 + 25 + 20));
    }

    #[test]
    fn stored_bytes_leave_out_packets_still_arriving() {
        let mut f: Fifo<u32> = Fifo::new(10_000);
        f.push(t(0), 1, 100, t(1), t(10));
        f.push(t(10), 2, 200, t(11), t(20));
        f.push(t(20), 3, 300, t(21), t(30));
        assert_eq!(f.stored_bytes(t(9)), 0);
        assert_eq!(f.stored_bytes(t(10)), 100);
        assert_eq!(f.stored_bytes(t(25)), 300);
        assert_eq!(f.stored_bytes(t(30)), 600);
        f.pop(t(31));
        assert_eq!(f.stored_bytes(t(31)), 500);
    }
}
