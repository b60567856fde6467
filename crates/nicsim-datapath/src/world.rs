//! What the components of one datapath share: the FIFOs between them, the Pre-Processor's
//! tables (which the SDN controller may rewrite while packets are in flight), the drop
//! counters, the sink, and the calendar. Putting a packet into a FIFO or taking one out wakes
//! the ports wired to that FIFO (see `nicsim_kernel::sim`).

use std::collections::{BTreeMap, VecDeque};

use nicsim_kernel::{Calendar, FifoSet, Slot, Time};

use crate::measure::Sink;
use crate::packet::{Chain, Pkt, PktId, Pkts};
use crate::preproc::MatchTable;
use crate::traffic::Funcs;

pub use nicsim_kernel::FifoId;

/// The state the components of one datapath share.
pub struct World {
    /// The packets in flight; FIFOs hold their ids.
    pub pkts: Pkts,
    /// The FIFOs between the components, wired to the calendar.
    pub q: FifoSet<PktId>,
    /// Header fields → flow type.
    pub table: MatchTable,
    /// Flow type → offload chain.
    pub chains: Vec<Chain>,
    /// Scheduled chain updates (time, flow type, chain), earliest first.
    pub remaps: VecDeque<(Time, u16, Chain)>,
    /// Dropped packets, by reason (`no_flow`, `pifo_full`, `buffer_full`, ...).
    pub drops: BTreeMap<&'static str, u64>,
    /// Per priority class (index: class): packets the Pre-Processor classified, and drops by
    /// reason of classified packets.
    pub classes: Vec<(u64, BTreeMap<&'static str, u64>)>,
    /// The traffic sink.
    pub sink: Sink,
    /// The functional offloads, in physical order (functional runs only).
    pub funcs: Option<Funcs>,
    /// Packets the generator has offered so far.
    pub offered: u64,
    /// Busy time of each offload's units, summed (ticks).
    pub unit_busy_ticks: Vec<u64>,
    /// What PANIC's components share (see `panic::Shared`; empty in other architectures).
    pub panic: crate::panic::Shared,
    /// Pending wake-ups and who is woken by which FIFO.
    pub cal: Calendar,
    /// When the last packet so far left the datapath (delivered or dropped).
    pub last_out: Time,
}

nicsim_kernel::has_calendar!(World);

impl World {
    /// A new FIFO named `name` of `capacity_bytes`.
    pub fn add_fifo(&mut self, name: impl Into<String>, capacity_bytes: u32) -> FifoId {
        self.q.add(name, capacity_bytes as u64)
    }

    /// Start writing a packet into FIFO `id` (its reader is woken if it was empty).
    #[inline]
    pub fn push(&mut self, id: FifoId, now: Time, item: PktId, bytes: u32, head: Time, tail: Time) {
        self.q.push(&mut self.cal, id, now, item, bytes, head, tail);
    }

    /// Start reading the front packet of FIFO `id` out (writers that found no room are woken).
    #[inline]
    pub fn pop(&mut self, id: FifoId, now: Time) -> Option<Slot<PktId>> {
        self.q.pop(&mut self.cal, id, now)
    }

    /// Whether FIFO `id` has room for `bytes`. A writer must ask here: when there is no room,
    /// the FIFO remembers to wake its writers at the next pop.
    #[inline]
    pub fn room(&self, id: FifoId, bytes: u32) -> bool {
        self.q.room(id, bytes)
    }

    /// A writer waits for FIFO `id` to shrink (for a reason other than bytes: a depth limit).
    #[inline]
    pub fn wait_for_room(&self, id: FifoId) {
        self.q.wait_for_room(id);
    }

    /// Drop a packet in flight, counting the reason.
    pub fn drop_pkt(&mut self, id: PktId, reason: &'static str) {
        if reason != "no_flow" {
            let c = self.sink.class_of(self.pkts[id].flow);
            if let Some((_, d)) = self.classes.get_mut(c) {
                *d.entry(reason).or_default() += 1;
            }
        }
        self.release(id);
        *self.drops.entry(reason).or_default() += 1;
        self.last_out = self.last_out.max(self.cal.now());
    }

    /// The Pre-Processor classified a packet into `class`.
    #[inline]
    pub fn class_offered(&mut self, class: u8) {
        if let Some((n, _)) = self.classes.get_mut(class as usize) {
            *n += 1;
        }
    }

    /// A packet's last byte reaches the host at `t_rx`: the sink records it.
    pub fn deliver(&mut self, id: PktId, t_rx: Time) {
        self.sink.deliver(t_rx, &self.pkts[id]);
        self.release(id);
        self.last_out = self.last_out.max(t_rx);
    }

    /// The packet left the datapath: its frame's bytes are freed now, its slot is reused.
    fn release(&mut self, id: PktId) {
        self.pkts[id].frame = None;
        self.pkts.free(id);
    }

    /// Apply every scheduled remap due at or before `now`.
    pub fn apply_remaps(&mut self, now: Time) {
        while let Some(&(t, flow, chain)) = self.remaps.front() {
            if t > now {
                break;
            }
            self.chains[flow as usize] = chain;
            self.remaps.pop_front();
        }
    }

    /// The front packet of `from`, if its first beat is there by `now`, and the link is free.
    #[inline]
    pub fn ready_front(&self, from: FifoId, now: Time) -> Option<&Pkt> {
        self.q[from]
            .front()
            .filter(|s| s.head <= now)
            .map(|s| &self.pkts[s.item])
    }
}
