//! What the components of one datapath share: the FIFOs between them, the Pre-Processor's
//! tables (which the SDN controller may rewrite while packets are in flight), the drop
//! counters, and the sink.

use std::collections::{BTreeMap, VecDeque};

use nicsim_kernel::{Changes, Fifo, Link, Slot, Time};

use crate::measure::Sink;
use crate::packet::{Chain, Pkt};
use crate::preproc::MatchTable;
use crate::traffic::Funcs;

pub type FifoId = usize;

pub struct World {
    pub fifos: Vec<Fifo<Pkt>>,
    pub fifo_names: Vec<String>,
    /// Header fields → flow type.
    pub table: MatchTable,
    /// Flow type → offload chain.
    pub chains: Vec<Chain>,
    /// Scheduled chain updates (time, flow type, chain), earliest first.
    pub remaps: VecDeque<(Time, u16, Chain)>,
    pub drops: BTreeMap<&'static str, u64>,
    pub sink: Sink,
    pub funcs: Option<Funcs>,
    pub offered: u64,
    /// Busy time of each offload's units, summed (ticks).
    pub unit_busy_ticks: Vec<u64>,
    /// PANIC: free cells in the central packet buffer.
    pub free_cells: u32,
    /// PANIC: free credits per credit holder. Eval variant: one per offload module
    /// (units × credits − packets held); full variant: one per unit (credits − packets held −
    /// credits the scheduler took for packets on their way to it).
    pub module_free_credits: Vec<u32>,
    /// PANIC: packets sent back to the scheduler because their next unit had no credit.
    pub detours: u64,
    /// PANIC: ports of the crossbar as modelled (for the summary).
    pub crossbar_ports: u32,
    /// Resources changed in the current instant (bit `id % 128` per FIFO).
    pub changed: u128,
}

/// The change bit of FIFO `id`.
#[inline]
pub fn bit(id: FifoId) -> u128 {
    1u128 << (id % 128)
}

impl Changes for World {
    fn changes(&self) -> u128 {
        self.changed
    }
    fn take_changes(&mut self) -> u128 {
        std::mem::take(&mut self.changed)
    }
}

impl World {
    pub fn add_fifo(&mut self, name: impl Into<String>, capacity_bytes: u32) -> FifoId {
        self.fifos.push(Fifo::new(capacity_bytes as u64));
        self.fifo_names.push(name.into());
        self.fifos.len() - 1
    }

    #[inline]
    pub fn push(&mut self, id: FifoId, now: Time, item: Pkt, bytes: u32, head: Time, tail: Time) {
        self.changed |= bit(id);
        self.fifos[id].push(now, item, bytes, head, tail);
    }

    #[inline]
    pub fn pop(&mut self, id: FifoId, now: Time) -> Option<Slot<Pkt>> {
        self.changed |= bit(id);
        self.fifos[id].pop(now)
    }

    #[inline]
    pub fn front_mut(&mut self, id: FifoId) -> Option<&mut Slot<Pkt>> {
        self.changed |= bit(id);
        self.fifos[id].front_mut()
    }

    pub fn drop_pkt(&mut self, reason: &'static str) {
        *self.drops.entry(reason).or_default() += 1;
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
        self.fifos[from]
            .front()
            .filter(|s| s.head <= now)
            .map(|s| &s.item)
    }

    /// Move the front packet of `from` into `to` over `link` at `now` (caller checked room).
    pub fn forward(&mut self, now: Time, link: &mut Link, from: FifoId, to: FifoId, latency: Time) {
        let slot = self.pop(from, now).expect("forward from an empty FIFO");
        let tr = link.send(now, slot.bytes, slot.tail);
        self.push(
            to,
            now,
            slot.item,
            slot.bytes,
            tr.head + latency,
            tr.tail + latency,
        );
    }

    /// When a forward from `from` over `link` could next happen, ignoring room downstream.
    #[inline]
    pub fn forward_wake(&self, now: Time, link: &Link, from: FifoId) -> Option<Time> {
        let s = self.fifos[from].front()?;
        Some(link.free_edge(s.head.max(now + 1)))
    }
}
