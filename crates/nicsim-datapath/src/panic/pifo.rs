//! PANIC's PIFO (`pifo_warp.v`): a push-in first-out queue of packet descriptors of bounded
//! depth, higher priority first, then arrival order.

use std::collections::BinaryHeap;

use nicsim_kernel::Time;

use crate::packet::PktId;

/// A PIFO entry: higher priority first, then arrival order.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    priority: u8,
    seq: std::cmp::Reverse<u64>,
}

/// A packet waiting in a PIFO (ordering ignores it): (packet, bytes, its data complete at).
struct PktBox(PktId, u32, Time);
impl PartialEq for PktBox {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for PktBox {}
impl PartialOrd for PktBox {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for PktBox {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

/// One PIFO.
pub struct Pifo {
    heap: BinaryHeap<(Entry, PktBox)>,
    /// Entries pushed so far (the arrival order).
    seq: u64,
    entries: usize,
}

impl Pifo {
    /// An empty PIFO of `entries` entries.
    pub fn new(entries: usize) -> Pifo {
        Pifo {
            heap: BinaryHeap::new(),
            seq: 0,
            entries,
        }
    }

    /// Whether it has no free entry.
    pub fn is_full(&self) -> bool {
        self.heap.len() >= self.entries
    }

    /// Push packet `pkt` of `bytes` at `priority`, its data complete at `tail` (the PIFO has
    /// room: see [`Pifo::is_full`]).
    pub fn push(&mut self, priority: u8, pkt: PktId, bytes: u32, tail: Time) {
        debug_assert!(!self.is_full());
        self.seq += 1;
        let entry = Entry {
            priority,
            seq: std::cmp::Reverse(self.seq),
        };
        self.heap.push((entry, PktBox(pkt, bytes, tail)));
    }

    /// When the data of the packet it would pop next is complete, if it holds one.
    pub fn head_tail(&self) -> Option<Time> {
        self.heap.peek().map(|(_, PktBox(_, _, tail))| *tail)
    }

    /// Pop the first packet: (packet, bytes).
    pub fn pop(&mut self) -> Option<(PktId, u32)> {
        self.heap
            .pop()
            .map(|(_, PktBox(pkt, bytes, _))| (pkt, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Higher priority first, then arrival order; full at its depth.
    #[test]
    fn priority_then_arrival() {
        let mut slab = nicsim_kernel::Slab::default();
        let id: Vec<PktId> = (0..4).map(|n| slab.alloc(n)).collect();
        let mut p = Pifo::new(4);
        let at = Time::from_ticks;
        p.push(1, id[0], 64, at(5));
        p.push(3, id[1], 64, at(6));
        p.push(1, id[2], 64, at(7));
        p.push(3, id[3], 64, at(8));
        assert!(p.is_full());
        assert_eq!(p.head_tail(), Some(at(6)));
        let order: Vec<PktId> = std::iter::from_fn(|| p.pop().map(|x| x.0)).collect();
        assert_eq!(order, [id[1], id[3], id[0], id[2]]);
    }
}
