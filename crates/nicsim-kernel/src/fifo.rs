//! FIFOs with byte capacities.
//!
//! A packet occupies its bytes from the moment its transfer into the FIFO starts (`push`) until
//! its transfer out starts (`pop`). Each slot also records when the packet's first and last
//! beats arrive, so a consumer can cut through. The FIFO integrates its own occupancy over time,
//! which gives mean occupancy and lets tests check Little's law (L = λ W) on every FIFO.

use std::collections::VecDeque;

use crate::time::Time;

#[derive(Debug, Clone)]
pub struct Slot<T> {
    pub item: T,
    pub bytes: u32,
    /// First beat available to the consumer.
    pub head: Time,
    /// Last beat available to the consumer.
    pub tail: Time,
    pub enq: Time,
}

/// Occupancy statistics. Areas are integrals over time (ticks).
#[derive(Debug, Clone, Default)]
pub struct FifoStats {
    pub pushes: u64,
    pub pops: u64,
    pub max_bytes: u64,
    pub max_packets: u64,
    pub byte_area: u128,
    pub packet_area: u128,
    /// Sum over popped packets of (pop time − push time).
    pub sojourn_ticks: u128,
    last: Time,
}

#[derive(Debug, Clone)]
pub struct Fifo<T> {
    capacity_bytes: u64,
    used_bytes: u64,
    q: VecDeque<Slot<T>>,
    stats: FifoStats,
}

impl<T> Fifo<T> {
    pub fn new(capacity_bytes: u64) -> Fifo<T> {
        Fifo {
            capacity_bytes,
            used_bytes: 0,
            q: VecDeque::new(),
            stats: FifoStats::default(),
        }
    }
    #[inline]
    pub fn has_room(&self, bytes: u32) -> bool {
        self.used_bytes + bytes as u64 <= self.capacity_bytes
    }
    #[inline]
    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }
    #[inline]
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.q.len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    #[inline]
    pub fn front(&self) -> Option<&Slot<T>> {
        self.q.front()
    }
    /// The front packet, to update its metadata in place.
    #[inline]
    pub fn front_mut(&mut self) -> Option<&mut Slot<T>> {
        self.q.front_mut()
    }
    pub fn iter(&self) -> impl Iterator<Item = &Slot<T>> {
        self.q.iter()
    }
    fn account(&mut self, now: Time) {
        let dt = (now - self.stats.last) as u128;
        self.stats.byte_area += dt * self.used_bytes as u128;
        self.stats.packet_area += dt * self.q.len() as u128;
        self.stats.last = now;
    }
    /// Start writing a packet whose first and last beats land at `head` and `tail`.
    pub fn push(&mut self, now: Time, item: T, bytes: u32, head: Time, tail: Time) {
        debug_assert!(self.has_room(bytes));
        self.account(now);
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
    pub fn pop(&mut self, now: Time) -> Option<Slot<T>> {
        self.account(now);
        let s = self.q.pop_front()?;
        self.used_bytes -= s.bytes as u64;
        self.stats.pops += 1;
        self.stats.sojourn_ticks += (now - s.enq) as u128;
        Some(s)
    }
    /// Statistics integrated up to `now`.
    pub fn stats_at(&mut self, now: Time) -> &FifoStats {
        self.account(now);
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_and_littles_law() {
        let mut f: Fifo<u32> = Fifo::new(3000);
        assert!(f.has_room(1500));
        f.push(0, 1, 1500, 1, 10);
        f.push(5, 2, 1500, 6, 15);
        assert!(!f.has_room(1));
        assert_eq!(f.pop(20).unwrap().item, 1);
        assert_eq!(f.pop(30).unwrap().item, 2);
        let s = f.stats_at(40).clone();
        // L = area / T, λ = n / T, W = sojourn / n  →  area == sojourn exactly.
        assert_eq!(s.packet_area, s.sojourn_ticks);
        assert_eq!(s.max_bytes, 3000);
    }
}
