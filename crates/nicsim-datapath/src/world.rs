//! What the components of one datapath share: the FIFOs between them, the Pre-Processor's
//! tables (which the SDN controller may rewrite while packets are in flight), the drop
//! counters, and the sink.

use std::collections::{BTreeMap, VecDeque};

use nicsim_kernel::{Fifo, Link, Time};

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
    /// PANIC: credits each offload module has free (units × credits − packets held).
    pub module_free_credits: Vec<u32>,
}

impl World {
    pub fn add_fifo(&mut self, name: impl Into<String>, capacity_bytes: u32) -> FifoId {
        self.fifos.push(Fifo::new(capacity_bytes as u64));
        self.fifo_names.push(name.into());
        self.fifos.len() - 1
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
        self.fifos[from].front().filter(|s| s.head <= now).map(|s| &s.item)
    }

    /// Move the front packet of `from` into `to` over `link` at `now` (caller checked room).
    pub fn forward(&mut self, now: Time, link: &mut Link, from: FifoId, to: FifoId, latency: Time) {
        let slot = self.fifos[from].pop(now).expect("forward from an empty FIFO");
        let tr = link.send(now, slot.bytes, slot.tail);
        self.fifos[to].push(now, slot.item, slot.bytes, tr.head + latency, tr.tail + latency);
    }

    /// When a forward from `from` over `link` could next happen, ignoring room downstream.
    #[inline]
    pub fn forward_wake(&self, now: Time, link: &Link, from: FifoId) -> Option<Time> {
        let s = self.fifos[from].front()?;
        Some(link.free_edge(s.head.max(now + 1)))
    }
}
