//! PANIC's central scheduler (`panic_scheduler.v`): it writes every packet into the central
//! packet buffer (its write side at the pipeline clock), and its descriptor crosses into the
//! PIFO clock domain (2 PIFO cycles) to be enqueued in the PIFO of the packet's next offload,
//! one enqueue per PIFO cycle. Each PIFO dequeues one packet every
//! `panic.pifo_cycles_per_packet` PIFO cycles while its module has credit left and the dispatch
//! FIFO (8 descriptors) has room; the dispatched packet goes to the crossbar. In the full
//! variant a detoured packet comes back into the buffer one priority level lower, and the
//! dispatch takes a credit of the unit with the most.

use std::collections::VecDeque;

use nicsim_kernel::{Clock, Component, Port, Time};

use super::pifo::Pifo;
use crate::packet::PktId;
use crate::world::{FifoId, World};

/// The central scheduler: packet buffer and PIFOs.
pub struct Scheduler {
    pub(super) fclk: Clock,
    pub(super) pclk: Clock,
    pub(super) inp: FifoId,
    pub(super) out: FifoId,
    /// One PIFO per offload (and in the full variant one more, for packets whose chain is
    /// empty).
    pub(super) pifos: Vec<Pifo>,
    /// Descriptors crossing into the PIFO domain: (ready at, packet, bytes, tail).
    pub(super) cdc_in: VecDeque<(Time, PktId, u32, Time)>,
    /// Per PIFO: its next dequeue may come no earlier than this.
    pub(super) next_deq: Vec<Time>,
    /// Between two dequeues of one PIFO, in ticks.
    pub(super) deq_interval: u64,
    /// Across the clock-domain crossing, in ticks.
    pub(super) cdc_latency: u64,
    /// Crossbar input FIFO of each offload module (to count packets already sent its way);
    /// in the full variant of each unit (their change bits carry the units' credit changes).
    pub(super) module_in: Vec<FifoId>,
    pub(super) dispatch_depth: usize,
    /// The full variant's per-unit credits and detour input.
    pub(super) full: Option<FullSched>,
}

/// What the scheduler of the full variant knows beyond the eval variant's.
pub(super) struct FullSched {
    /// Units of offload `o` are `base[o]..base[o + 1]` (global unit indices, which are also
    /// their crossbar ports and their slots in `Shared::free_credits`).
    pub(super) base: Vec<usize>,
    /// The scheduler's crossbar input: detoured packets.
    pub(super) detour_in: FifoId,
}

impl FullSched {
    /// The unit of offload `o` with the most free credits (the lowest index on a tie).
    fn best_unit(&self, o: usize, w: &World) -> usize {
        let mut best = self.base[o];
        for u in self.base[o] + 1..self.base[o + 1] {
            if w.panic.free_credits[u] > w.panic.free_credits[best] {
                best = u;
            }
        }
        best
    }
}

impl Scheduler {
    /// Credits the module of offload `o` has left after what is already on its way there.
    fn credit_left(&self, o: usize, w: &World) -> bool {
        if let Some(f) = &self.full {
            // The last PIFO holds packets with an empty chain: straight to the DMA engine.
            return o + 1 == self.pifos.len() || w.panic.free_credits[f.best_unit(o, w)] > 0;
        }
        let in_flight = w.q[self.module_in[o]].len()
            + w.q[self.out]
                .iter()
                .filter(|s| w.pkts[s.item].next_offload() == Some(o as u8))
                .count();
        (w.panic.free_credits[o] as usize) > in_flight
    }
}

/// The Scheduler's ports: the packet buffer's write side at the pipeline clock, then the PIFOs
/// at the PIFO clock.
const BUFFER: usize = 0;
const PIFO: usize = 1;

impl Component<World> for Scheduler {
    fn ports(&self) -> Vec<Port> {
        let inputs: Vec<FifoId> = std::iter::once(self.inp)
            .chain(self.full.as_ref().map(|f| f.detour_in))
            .collect();
        vec![
            Port::new(self.fclk).reads(&inputs),
            // Dispatch looks at what is on its way to each module (and their credits).
            Port::new(self.pclk)
                .writes(&[self.out])
                .watches(&self.module_in),
        ]
    }
    fn step(&mut self, port: usize, now: Time, w: &mut World) {
        if port == BUFFER {
            self.write_buffer(now, w);
        } else {
            self.pifo_cycle(now, w);
        }
    }
}

impl Scheduler {
    /// Write arriving packets (detoured ones first, full variant) into the buffer; the
    /// descriptor crosses to the PIFO domain. A detoured packet loses one priority level.
    fn write_buffer(&mut self, now: Time, w: &mut World) {
        let detour_in = self.full.as_ref().map(|f| f.detour_in);
        for from in detour_in.into_iter().chain([self.inp]) {
            while let Some(s) = w.q[from].front() {
                if s.head > now {
                    break;
                }
                let s = w.pop(from, now).unwrap();
                let detoured = w.panic.tags.take_detour(s.item);
                if !w.panic.buffer.store() {
                    w.drop_pkt(s.item, "buffer_full");
                    continue;
                }
                if detoured {
                    let pkt = &mut w.pkts[s.item];
                    pkt.priority = pkt.priority.saturating_sub(1);
                }
                self.cdc_in
                    .push_back((now + self.cdc_latency, s.item, s.bytes, s.tail));
                w.cal.wake_port(PIFO, now + self.cdc_latency);
            }
            if let Some(s) = w.q[from].front() {
                w.cal.wake_port(BUFFER, s.head);
            }
        }
    }

    /// One PIFO cycle: one enqueue, and a dequeue from every PIFO that may.
    fn pifo_cycle(&mut self, now: Time, w: &mut World) {
        // One enqueue per PIFO cycle.
        if let Some((t, _, _, _)) = self.cdc_in.front() {
            if *t <= now {
                let (_, pkt, bytes, tail) = self.cdc_in.pop_front().unwrap();
                let done_pifo = if self.full.is_some() {
                    self.pifos.len() - 1
                } else {
                    0
                };
                let o = w.pkts[pkt].next_offload().map_or(done_pifo, |o| o as usize);
                if self.pifos[o].is_full() {
                    w.panic.buffer.release();
                    w.drop_pkt(pkt, "pifo_full");
                } else {
                    self.pifos[o].push(w.pkts[pkt].priority, pkt, bytes, tail);
                }
            }
        }
        // Dequeue: one every `deq_interval`, while the target has credit and the dispatch FIFO room.
        for o in 0..self.pifos.len() {
            if now < self.next_deq[o] || w.q[self.out].len() >= self.dispatch_depth {
                continue;
            }
            let Some(tail) = self.pifos[o].head_tail() else {
                continue;
            };
            if tail > now || !self.credit_left(o, w) {
                continue;
            }
            let (pkt, bytes) = self.pifos[o].pop().unwrap();
            if let Some(f) = self.full.as_ref().filter(|_| o + 1 < self.pifos.len()) {
                // Take a credit of the unit with the most: the packet is on its way there.
                let u = f.best_unit(o, w);
                w.panic.free_credits[u] -= 1;
                w.cal.touched(self.module_in[u]);
                w.panic.tags.credit(pkt, u);
            }
            let ready = self.fclk.edge_at_or_after(now + self.cdc_latency);
            w.push(self.out, now, pkt, bytes, ready, ready);
            self.next_deq[o] = now + self.deq_interval;
        }
        // Next: the next descriptor to enqueue, and each PIFO's next possible dequeue.
        if let Some((r, _, _, _)) = self.cdc_in.front() {
            w.cal.wake_port(PIFO, *r);
        }
        if w.q[self.out].len() >= self.dispatch_depth {
            w.wait_for_room(self.out);
        } else {
            for o in 0..self.pifos.len() {
                if let Some(tail) = self.pifos[o].head_tail() {
                    if self.credit_left(o, w) {
                        let t = self.next_deq[o].max(tail);
                        w.cal.wake_port(PIFO, t);
                    }
                }
            }
        }
    }
}
