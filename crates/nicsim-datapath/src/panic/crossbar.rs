//! PANIC's crossbar (`panic_define.v`; the FlexPipe paper's 8-port prototype in the eval
//! variant): 512-bit ports at the pipeline clock, a descriptor ahead of every packet, round
//! robin per receiving port, a fixed latency, and push-based chaining (a finished packet goes
//! straight to its next offload's predetermined unit).

use nicsim_kernel::{Clock, Component, Link, Port, Time};

use crate::packet::PktId;
use crate::world::{FifoId, World};

/// The crossbar. Its engine ports are the offload modules (eval variant: one port per offload)
/// or the units (full variant: `base[o]..base[o + 1]` are offload `o`'s); then come the DMA
/// engine's port and, in the full variant, the scheduler's detour input. Sources are the
/// scheduler's dispatch FIFO and every engine port's output. A packet the scheduler dispatched
/// with a credit goes to the unit it took the credit of; a pushed packet (push-based chaining,
/// no credit check by the sender) to its next offload's predetermined port; a detoured one to
/// the scheduler; a finished one to the DMA engine. A transfer holds the sender's and the
/// receiver's port for descriptor + data beats; each receiving port grants one sender per cycle,
/// round robin.
pub struct Crossbar {
    pub(super) clk: Clock,
    pub(super) srcs: Vec<FifoId>,
    pub(super) src_links: Vec<Link>,
    pub(super) dsts: Vec<FifoId>,
    pub(super) dst_links: Vec<Link>,
    pub(super) rr: Vec<usize>,
    /// Units of offload `o` are `base[o]..base[o + 1]`.
    pub(super) base: Vec<usize>,
    /// Per offload: the predetermined unit pushed packets go to. It stays while that unit has
    /// a free credit and then moves to the unit with the most (the lowest index on a tie).
    pub(super) sticky: Vec<usize>,
    pub(super) descriptor_beats: u64,
    /// From a grant to the first beat at the destination, in ticks.
    pub(super) latency: u64,
    /// Per destination, the source granted in the current cycle (`usize::MAX`: none yet).
    pub(super) pick: Vec<usize>,
    /// Destinations granted in the current cycle.
    pub(super) granted: Vec<usize>,
}

impl Crossbar {
    /// Engine ports (modules or units).
    fn n_units(&self) -> usize {
        self.base[self.base.len() - 1]
    }
    /// The unit a packet pushed to offload `o` goes to.
    fn push_target(&self, o: usize, w: &World) -> usize {
        let mut best = self.sticky[o];
        if w.panic.free_credits[best] == 0 {
            for u in self.base[o]..self.base[o + 1] {
                if w.panic.free_credits[u] > w.panic.free_credits[best] {
                    best = u;
                }
            }
        }
        best
    }
    /// Where packet `id` goes: the scheduler (detoured), the unit it carries a credit of, its
    /// next offload's unit, or the DMA engine.
    fn dest_of(&self, id: PktId, w: &World) -> usize {
        let n = self.n_units();
        if w.panic.tags.detour(id) {
            n + 1
        } else if let Some(u) = w.panic.tags.credited_to(id) {
            u
        } else {
            w.pkts[id]
                .next_offload()
                .map_or(n, |o| self.push_target(o as usize, w))
        }
    }
}

impl Component<World> for Crossbar {
    // Units' credit changes touch their input FIFO, which wakes the crossbar as its writer.
    fn ports(&self) -> Vec<Port> {
        vec![Port::new(self.clk).reads(&self.srcs).writes(&self.dsts)]
    }
    fn step(&mut self, _: usize, now: Time, w: &mut World) {
        self.grant(now, w);
        // Next: every source whose front packet's destination has room, when both ports are free.
        for s in 0..self.srcs.len() {
            let Some(f) = w.q[self.srcs[s]].front() else {
                continue;
            };
            let d = self.dest_of(f.item, w);
            if w.room(self.dsts[d], f.bytes) {
                let t = self.src_links[s]
                    .free_from(f.head)
                    .max(self.dst_links[d].free_from(f.head));
                w.cal.wake_port(0, t);
            }
        }
    }
}

impl Crossbar {
    fn grant(&mut self, now: Time, w: &mut World) {
        let n = self.srcs.len();
        // Requests: each source's front packet asks for one destination.
        for s in 0..n {
            if !self.src_links[s].is_free(now) {
                continue;
            }
            let Some(f) = w.q.ready_front(self.srcs[s], now) else {
                continue;
            };
            let d = self.dest_of(f.item, w);
            if !self.dst_links[d].is_free(now) || !w.room(self.dsts[d], w.pkts[f.item].size) {
                continue;
            }
            let rr = self.rr[d];
            let dist = |x: usize| (x + n - rr) % n;
            if self.pick[d] == usize::MAX {
                self.granted.push(d);
                self.pick[d] = s;
            } else if dist(s) < dist(self.pick[d]) {
                self.pick[d] = s;
            }
        }
        // Grants: one source per destination, round robin from `rr`.
        for i in 0..self.granted.len() {
            let d = self.granted[i];
            let s = std::mem::replace(&mut self.pick[d], usize::MAX);
            let slot = w.pop(self.srcs[s], now).unwrap();
            if s == 0 {
                w.panic.buffer.release(); // read out of the central buffer
            }
            if d < self.n_units() && w.panic.tags.credited_to(slot.item).is_none() {
                if let Some(o) = w.pkts[slot.item].next_offload() {
                    self.sticky[o as usize] = d;
                }
            }
            let beats = self.src_links[s].beats_for(slot.bytes) + self.descriptor_beats;
            let tr = self.src_links[s].send_beats(now, beats, slot.tail);
            self.dst_links[d].send_beats(now, beats, slot.tail);
            w.push(
                self.dsts[d],
                now,
                slot.item,
                slot.bytes,
                tr.head + self.latency,
                tr.tail + self.latency,
            );
            self.rr[d] = (s + 1) % n;
        }
        self.granted.clear();
    }
}
