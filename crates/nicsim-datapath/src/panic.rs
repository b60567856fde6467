//! PANIC (Lin et al., OSDI 2020), following its public RTL (`panic_define.v`,
//! `compute_engine.v`, `panic_scheduler.v`, `pifo_warp.v`), in two variants (`panic.variant`).
//!
//! Common to both: the parser (Pre-Processor, `panic.parser_latency_cycles`) writes a descriptor
//! of `panic.descriptor_bits` that travels as its own beat(s) *ahead of* the packet on every
//! link → the central Scheduler: a packet buffer of `panic.buffer_cells` cells of
//! `panic.cell_bytes` (no free cell → drop `buffer_full`; a cell is freed when the crossbar reads
//! the packet out), one PIFO of `panic.pifo_entries` per offload (full → drop `pifo_full`) in a
//! `panic.pifo_clock_mhz` domain behind clock-domain crossings of 2 PIFO cycles, one enqueue per
//! PIFO cycle and one dequeue per PIFO every `panic.pifo_cycles_per_packet` PIFO cycles, at most
//! 8 descriptors in the dispatch FIFO → a crossbar of 512-bit (`pipeline.width_bits`) ports at
//! the pipeline clock (a transfer holds the sender's and the receiver's port for descriptor +
//! data beats, round robin per receiving port, `panic.crossbar_latency_cycles`, an input buffer
//! of `panic.crossbar_port_buffer_bytes` per port) → compute engines (the `Offload` component;
//! an engine idles one cycle after handing a packet on; `panic.credits` per engine) → the next
//! offload over the crossbar (push-based chaining) → the DMA engine.
//!
//! **`eval`** (default): the FlexPipe paper's evaluation variant (its §IV). The units of one
//! offload sit behind one crossbar port (`offloads.len() + 2` ports: 8 for the paper's six, the
//! prototype's `panic.crossbar_ports`); the scheduler dispatches while the module has credit
//! (units × credits minus packets held or on their way); the module's ingress picks the unit
//! (sticky: the same unit until it has no credit); no detours; every chain starts with a fixed
//! offload (`panic.first_offload`, by default the first in physical order), moved to the
//! front of a chain that names it elsewhere and prepended to one that lacks it.
//!
//! **`full`**: PANIC as published. Every unit is its own crossbar port, so the crossbar grows to
//! units + 2 ports (scheduler, DMA engine) whatever `panic.crossbar_ports` says (the summary's
//! `panic.crossbar_ports` gives the modelled count). Chains are the flow table's, unchanged;
//! `panic.first_offload` is ignored. Credits are per unit (`World::module_free_credits`, one
//! slot per unit): free = credits − packets the unit holds − credits the scheduler took for
//! packets on their way to it.
//! - First hop: the PIFO of the packet's first offload dequeues only when some unit of that
//!   offload has a free credit; the packet goes to the unit with the most (lowest index on a
//!   tie), whose credit is taken at dispatch (`Pkt::credited`, `Pkt::dest_unit`).
//! - Push-based chaining: a finished packet goes straight to its next offload's predetermined
//!   unit with no credit check by the sender. Per offload a sticky pointer (kept by the
//!   crossbar, standing for the scheduler's table) names that unit; it stays while the unit has
//!   a free credit and otherwise moves, at the next push, to the unit with the most free
//!   credits (lowest index on a tie; it stays if none has one).
//! - The receiving unit decides on arrival: a `credited` packet, or any packet while a credit
//!   is free, is accepted (taking the credit); otherwise the whole packet goes back out of the
//!   unit with `Pkt::detour` set and the crossbar sends it to the scheduler's port (a *detour*,
//!   counted in the summary as `panic.detours`). The scheduler writes it back into a buffer cell
//!   and enqueues it in the PIFO of that offload with priority − 1 (saturating at 0; the
//!   descriptor's priority is rewritten); it is then dispatched like a first hop.
//! - A credit comes back when the last beat of the finished packet has left the engine.
//! - A finished packet (or one with an empty chain, through an extra PIFO without credits) goes
//!   to the DMA engine's port.

use std::collections::{BinaryHeap, VecDeque};

use nicsim_kernel::{Clock, Component, Link, Port, Time, Timebase};

use crate::config::{Config, PanicVariant};
use crate::flexpipe::{Offload, Steering, UnitSpec};
use crate::model::OffloadInfo;
use crate::packet::{Pkt, PktId};
use crate::stages::{ChainPolicy, Dma, Generator, PreProcessor};
use crate::traffic::Source;
use crate::world::{FifoId, World};

/// A PIFO entry: higher priority first, then arrival order.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    priority: u8,
    seq: std::cmp::Reverse<u64>,
}

/// The central scheduler: packet buffer and PIFOs.
pub struct Scheduler {
    fclk: Clock,
    pclk: Clock,
    inp: FifoId,
    out: FifoId,
    /// Per offload: PIFO of (entry, packet, bytes, data complete at).
    pifos: Vec<BinaryHeap<(Entry, PktBox)>>,
    /// Descriptors crossing into the PIFO domain: (ready at, packet, bytes, tail).
    cdc_in: VecDeque<(Time, PktId, u32, Time)>,
    next_deq: Vec<Time>,
    seq: u64,
    pifo_entries: usize,
    deq_interval: Time,
    cdc_latency: Time,
    /// Crossbar input FIFO of each offload module (to count packets already sent its way);
    /// in the full variant of each unit (their change bits carry the units' credit changes).
    module_in: Vec<FifoId>,
    dispatch_depth: usize,
    /// The full variant's per-unit credits and detour input.
    full: Option<FullSched>,
}

/// What the scheduler of the full variant knows beyond the eval variant's.
struct FullSched {
    /// Units of offload `o` are `base[o]..base[o + 1]` (global unit indices, which are also
    /// their crossbar ports and their slots in `World::module_free_credits`).
    base: Vec<usize>,
    /// The scheduler's crossbar input: detoured packets.
    detour_in: FifoId,
}

impl FullSched {
    /// The unit of offload `o` with the most free credits (the lowest index on a tie).
    fn best_unit(&self, o: usize, w: &World) -> usize {
        let mut best = self.base[o];
        for u in self.base[o] + 1..self.base[o + 1] {
            if w.module_free_credits[u] > w.module_free_credits[best] {
                best = u;
            }
        }
        best
    }
}

/// A packet waiting in a PIFO (ordering ignores it).
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

impl Scheduler {
    /// Credits the module of offload `o` has left after what is already on its way there.
    fn credit_left(&self, o: usize, w: &World) -> bool {
        if let Some(f) = &self.full {
            // The last PIFO holds packets with an empty chain: straight to the DMA engine.
            return o + 1 == self.pifos.len() || w.module_free_credits[f.best_unit(o, w)] > 0;
        }
        let in_flight = w.q[self.module_in[o]].len()
            + w.q[self.out]
                .iter()
                .filter(|s| w.pkts[s.item].next_offload() == Some(o as u8))
                .count();
        (w.module_free_credits[o] as usize) > in_flight
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
                if w.free_cells == 0 {
                    w.drop_pkt(s.item, "buffer_full");
                    continue;
                }
                w.free_cells -= 1;
                let pkt = &mut w.pkts[s.item];
                if std::mem::take(&mut pkt.detour) {
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
                if self.pifos[o].len() >= self.pifo_entries {
                    w.free_cells += 1;
                    w.drop_pkt(pkt, "pifo_full");
                } else {
                    self.seq += 1;
                    self.pifos[o].push((
                        Entry {
                            priority: w.pkts[pkt].priority,
                            seq: std::cmp::Reverse(self.seq),
                        },
                        PktBox(pkt, bytes, tail),
                    ));
                }
            }
        }
        // Dequeue: one every `deq_interval`, while the target has credit and the dispatch FIFO room.
        for o in 0..self.pifos.len() {
            if now < self.next_deq[o] || w.q[self.out].len() >= self.dispatch_depth {
                continue;
            }
            let Some((_, PktBox(_, _, tail))) = self.pifos[o].peek() else {
                continue;
            };
            if *tail > now || !self.credit_left(o, w) {
                continue;
            }
            let (_, PktBox(pkt, bytes, _)) = self.pifos[o].pop().unwrap();
            if let Some(f) = self.full.as_ref().filter(|_| o + 1 < self.pifos.len()) {
                // Take a credit of the unit with the most: the packet is on its way there.
                let u = f.best_unit(o, w);
                w.module_free_credits[u] -= 1;
                w.cal.touched(self.module_in[u]);
                let p = &mut w.pkts[pkt];
                p.dest_unit = u as u16;
                p.credited = true;
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
                if let Some((_, PktBox(_, _, tail))) = self.pifos[o].peek() {
                    if self.credit_left(o, w) {
                        let t = self.next_deq[o].max(*tail);
                        w.cal.wake_port(PIFO, t);
                    }
                }
            }
        }
    }
}

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
    clk: Clock,
    srcs: Vec<FifoId>,
    src_links: Vec<Link>,
    dsts: Vec<FifoId>,
    dst_links: Vec<Link>,
    rr: Vec<usize>,
    /// Units of offload `o` are `base[o]..base[o + 1]`.
    base: Vec<usize>,
    /// Per offload: the predetermined unit pushed packets go to. It stays while that unit has
    /// a free credit and then moves to the unit with the most (the lowest index on a tie).
    sticky: Vec<usize>,
    descriptor_beats: u64,
    latency: Time,
    /// Per destination, the source granted in the current cycle (`usize::MAX`: none yet).
    pick: Vec<usize>,
    /// Destinations granted in the current cycle.
    granted: Vec<usize>,
}

impl Crossbar {
    /// Engine ports (modules or units).
    fn n_units(&self) -> usize {
        self.base[self.base.len() - 1]
    }
    /// The unit a packet pushed to offload `o` goes to.
    fn push_target(&self, o: usize, w: &World) -> usize {
        let mut best = self.sticky[o];
        if w.module_free_credits[best] == 0 {
            for u in self.base[o]..self.base[o + 1] {
                if w.module_free_credits[u] > w.module_free_credits[best] {
                    best = u;
                }
            }
        }
        best
    }
    fn dest_of(&self, p: &Pkt, w: &World) -> usize {
        let n = self.n_units();
        if p.detour {
            n + 1
        } else if p.credited {
            p.dest_unit as usize
        } else {
            p.next_offload()
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
            let d = self.dest_of(&w.pkts[f.item], w);
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
            let Some(p) = w.ready_front(self.srcs[s], now) else {
                continue;
            };
            let d = self.dest_of(p, w);
            if !self.dst_links[d].is_free(now) || !w.room(self.dsts[d], p.size) {
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
                w.free_cells += 1; // read out of the central buffer
            }
            let p = &w.pkts[slot.item];
            if d < self.n_units() && !p.credited {
                if let Some(o) = p.next_offload() {
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

/// Build PANIC: the parser, the scheduler, the crossbar and one engine port per offload module
/// (eval variant, all of an offload's units behind it) or per unit (full variant).
#[allow(clippy::too_many_arguments)]
pub fn build(
    cfg: &Config,
    tb: &Timebase,
    world: &mut World,
    comps: &mut Vec<Box<dyn Component<World>>>,
    offloads: &mut Vec<OffloadInfo>,
    source: Source,
    priorities: Vec<u8>,
) {
    let p = &cfg.pipeline;
    let c = &cfg.panic;
    let full = c.variant == PanicVariant::Full;
    let fclk = tb.clock(p.clock_mhz);
    let pifo_clk = tb.clock(c.pifo_clock_mhz);
    let link = Link::new(p.width_bits, fclk);
    let desc_beats = (c.descriptor_bits as u64).div_ceil(p.width_bits as u64);
    let sched_in = world.add_fifo("scheduler.in", p.stage_fifo_bytes);
    let sched_out = world.add_fifo("scheduler.dispatch", u32::MAX);
    let detour_in =
        full.then(|| world.add_fifo("scheduler.detour_in", c.crossbar_port_buffer_bytes));
    let dma_in = world.add_fifo("dma.in", c.crossbar_port_buffer_bytes);

    // Engine ports: (offload, units behind the port, name); offload `o` owns ports
    // `base[o]..base[o + 1]`.
    let mut ports: Vec<(usize, u32, String)> = Vec::new();
    let mut base = vec![0usize];
    for (i, o) in cfg.offloads.iter().enumerate() {
        let units = o.units(p);
        offloads.push(OffloadInfo {
            name: o.name.clone(),
            units,
        });
        if full {
            ports.extend((0..units).map(|k| (i, 1, format!("{}[{k}]", o.name))));
        } else {
            ports.push((i, units, o.name.clone()));
        }
        base.push(ports.len());
    }
    let port_in: Vec<FifoId> = ports
        .iter()
        .map(|(_, _, name)| world.add_fifo(format!("{name}.xbar_in"), c.crossbar_port_buffer_bytes))
        .collect();
    let port_out: Vec<FifoId> = ports
        .iter()
        .map(|(_, _, name)| {
            world.add_fifo(format!("{name}.xbar_out"), c.crossbar_port_buffer_bytes)
        })
        .collect();
    world.module_free_credits = ports
        .iter()
        .map(|&(_, units, _)| units * c.credits)
        .collect();
    world.crossbar_ports = ports.len() as u32 + 2;

    comps.push(Box::new(Dma::new(dma_in, p, tb)));
    let srcs: Vec<FifoId> = std::iter::once(sched_out)
        .chain(port_out.iter().copied())
        .collect();
    let dsts: Vec<FifoId> = port_in
        .iter()
        .copied()
        .chain([dma_in])
        .chain(detour_in)
        .collect();
    comps.push(Box::new(Crossbar {
        clk: fclk,
        src_links: srcs.iter().map(|_| link.clone()).collect(),
        dst_links: dsts.iter().map(|_| link.clone()).collect(),
        rr: vec![0; dsts.len()],
        pick: vec![usize::MAX; dsts.len()],
        granted: Vec::new(),
        srcs,
        dsts,
        sticky: base[..cfg.offloads.len()].to_vec(),
        base: base.clone(),
        descriptor_beats: desc_beats,
        latency: fclk.cycles(c.crossbar_latency_cycles as u64),
    }));
    for (port, (i, units, name)) in ports.into_iter().enumerate() {
        let o = &cfg.offloads[i];
        let spec = UnitSpec {
            width_bits: o.width_bits,
            clock: tb.clock(o.clock_mhz),
            delay_cycles: o.delay_cycles,
            queue_bytes: u32::MAX,
            out_bytes: c.crossbar_port_buffer_bytes,
            steering: Steering::Credits {
                credits: c.credits,
                sticky: true,
            },
            descriptor_beats: 0,
            idle_cycles: 1,
        };
        let ufifo = world.add_fifo(format!("{name}.units_out"), p.arbiter_fifo_bytes);
        let detour = world.add_fifo(format!("{name}.detour"), p.arbiter_fifo_bytes);
        let engine = Offload::new(
            i as u8,
            name,
            units,
            spec,
            (p.width_bits, fclk),
            true,
            [detour, ufifo],
        )
        .alone(port_in[port], port_out[port]);
        comps.push(Box::new(if full {
            engine.panic_engine(port)
        } else {
            engine
        }));
    }
    // The full variant has one more PIFO, without credits, for packets whose chain is empty.
    let n_pifos = cfg.offloads.len() + full as usize;
    comps.push(Box::new(Scheduler {
        fclk,
        pclk: pifo_clk,
        inp: sched_in,
        out: sched_out,
        pifos: (0..n_pifos).map(|_| BinaryHeap::new()).collect(),
        cdc_in: VecDeque::new(),
        next_deq: vec![0; n_pifos],
        seq: 0,
        pifo_entries: c.pifo_entries as usize,
        deq_interval: pifo_clk.cycles(c.pifo_cycles_per_packet as u64),
        cdc_latency: pifo_clk.cycles(2),
        module_in: port_in,
        dispatch_depth: 8,
        full: detour_in.map(|detour_in| FullSched { base, detour_in }),
    }));
    let policy = if full {
        ChainPolicy::Table
    } else {
        let first = c
            .first_offload
            .as_ref()
            .map_or(0, |n| cfg.offload_index(n).unwrap() as u8);
        ChainPolicy::FirstFixed(first)
    };
    // The MAC streams each packet straight into the parser.
    let parser = PreProcessor {
        out: sched_in,
        latency: fclk.cycles(c.parser_latency_cycles as u64),
        policy,
        descriptor_beats: desc_beats,
        priorities,
    };
    comps.push(Box::new(Generator::new(source, link, parser, None)));
}
