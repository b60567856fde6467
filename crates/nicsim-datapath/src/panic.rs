//! PANIC (Lin et al., OSDI 2020) as the FlexPipe paper evaluates it, following the public RTL.
//!
//! Parser (writes a 96-bit descriptor that travels as its own beat *ahead of* the packet on
//! every link) → central Scheduler (packet buffer of 1536-byte cells; one PIFO per offload in a
//! 125 MHz clock domain, one enqueue per PIFO cycle and one dequeue every
//! `pifo_cycles_per_packet` PIFO cycles; dispatch only while the first offload has credit) →
//! crossbar (a transfer holds the sender's and the receiver's port for descriptor + data
//! beats; round robin per receiving port) → offload modules (the evaluation variant: units of
//! one type grouped behind one port, the unit chosen at the module's ingress by credits) →
//! push-based chaining to the next module over the crossbar → DMA engine.
//!
//! The evaluation variant has no detours and a fixed first offload (`panic.first_offload`, by
//! default the first offload in physical order).

use std::collections::{BinaryHeap, VecDeque};

use nicsim_kernel::{Clock, Component, Link, Time, Timebase};

use crate::config::{Config, PanicVariant};
use crate::flexpipe::{Offload, Steering, UnitSpec};
use crate::model::{BuildError, OffloadInfo};
use crate::packet::Pkt;
use crate::stages::{ChainPolicy, Dma, Generator, PreProcessor};
use crate::traffic::Source;
use crate::world::{bit, FifoId, World};

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
    cdc_in: VecDeque<(Time, Pkt, u32, Time)>,
    next_deq: Vec<Time>,
    seq: u64,
    pifo_entries: usize,
    deq_interval: Time,
    cdc_latency: Time,
    /// Crossbar input FIFO of each offload module (to count packets already sent its way).
    module_in: Vec<FifoId>,
    dispatch_depth: usize,
}

/// A packet waiting in a PIFO (ordering ignores it).
struct PktBox(Pkt, u32, Time);
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
        let in_flight = w.fifos[self.module_in[o]].len() + w.fifos[self.out].iter().filter(|s| s.item.next_offload() == Some(o as u8)).count();
        (w.module_free_credits[o] as usize) > in_flight
    }
}

impl Component<World> for Scheduler {
    fn has_edge(&self, t: Time) -> bool {
        self.fclk.is_edge(t) || self.pclk.is_edge(t)
    }
    fn edge_after(&self, t: Time) -> Time {
        self.fclk.edge_after(t).min(self.pclk.edge_after(t))
    }
    fn watches(&self) -> u128 {
        self.module_in.iter().fold(bit(self.inp) | bit(self.out), |m, &f| m | bit(f))
    }
    fn step(&mut self, now: Time, w: &mut World) {
        if self.fclk.is_edge(now) {
            // Write arriving packets into the buffer; the descriptor crosses to the PIFO domain.
            while let Some(s) = w.fifos[self.inp].front() {
                if s.head > now {
                    break;
                }
                let s = w.pop(self.inp, now).unwrap();
                if w.free_cells == 0 {
                    w.drop_pkt("buffer_full");
                    continue;
                }
                w.free_cells -= 1;
                self.cdc_in.push_back((now + self.cdc_latency, s.item, s.bytes, s.tail));
            }
        }
        if !self.pclk.is_edge(now) {
            return;
        }
        // One enqueue per PIFO cycle.
        if let Some((t, _, _, _)) = self.cdc_in.front() {
            if *t <= now {
                let (_, pkt, bytes, tail) = self.cdc_in.pop_front().unwrap();
                let o = pkt.next_offload().unwrap_or(0) as usize;
                if self.pifos[o].len() >= self.pifo_entries {
                    w.free_cells += 1;
                    w.drop_pkt("pifo_full");
                } else {
                    self.seq += 1;
                    self.pifos[o].push((Entry { priority: pkt.priority, seq: std::cmp::Reverse(self.seq) }, PktBox(pkt, bytes, tail)));
                }
            }
        }
        // Dequeue: one every `deq_interval`, while the target has credit and the dispatch FIFO room.
        for o in 0..self.pifos.len() {
            if now < self.next_deq[o] || w.fifos[self.out].len() >= self.dispatch_depth {
                continue;
            }
            let Some((_, PktBox(_, _, tail))) = self.pifos[o].peek() else { continue };
            if *tail > now || !self.credit_left(o, w) {
                continue;
            }
            let (_, PktBox(pkt, bytes, _)) = self.pifos[o].pop().unwrap();
            let ready = self.fclk.edge_at_or_after(now + self.cdc_latency);
            w.push(self.out, now, pkt, bytes, ready, ready);
            self.next_deq[o] = now + self.deq_interval;
        }
    }
    fn next_wake(&self, now: Time, w: &World) -> Option<Time> {
        let mut t: Option<Time> = None;
        let mut consider = |x: Time| t = Some(t.map_or(x, |y: Time| y.min(x)));
        if let Some(s) = w.fifos[self.inp].front() {
            consider(self.fclk.edge_at_or_after(s.head.max(now + 1)));
        }
        if let Some((r, _, _, _)) = self.cdc_in.front() {
            consider(self.pclk.edge_at_or_after((*r).max(now + 1)));
        }
        if w.fifos[self.out].len() < self.dispatch_depth {
            for o in 0..self.pifos.len() {
                if let Some((_, PktBox(_, _, tail))) = self.pifos[o].peek() {
                    if self.credit_left(o, w) {
                        consider(self.pclk.edge_at_or_after(self.next_deq[o].max(*tail).max(now + 1)));
                    }
                }
            }
        }
        t
    }
}

/// The crossbar: sources are the scheduler and each module's output; destinations each
/// module's input and the DMA engine. A transfer holds both ports for descriptor + data beats.
pub struct Crossbar {
    clk: Clock,
    srcs: Vec<FifoId>,
    src_links: Vec<Link>,
    /// Destination FIFO per offload, then the DMA engine's.
    dsts: Vec<FifoId>,
    dst_links: Vec<Link>,
    rr: Vec<usize>,
    descriptor_beats: u64,
    latency: Time,
}

impl Crossbar {
    fn dest_of(&self, p: &Pkt) -> usize {
        p.next_offload().map_or(self.dsts.len() - 1, |o| o as usize)
    }
}

impl Component<World> for Crossbar {
    fn has_edge(&self, t: Time) -> bool {
        self.clk.is_edge(t)
    }
    fn edge_after(&self, t: Time) -> Time {
        self.clk.edge_after(t)
    }
    fn watches(&self) -> u128 {
        self.srcs.iter().chain(&self.dsts).fold(0, |m, &f| m | bit(f))
    }
    fn step(&mut self, now: Time, w: &mut World) {
        let n = self.srcs.len();
        for d in 0..self.dsts.len() {
            if !self.dst_links[d].is_free(now) {
                continue;
            }
            for k in 0..n {
                let s = (self.rr[d] + k) % n;
                if !self.src_links[s].is_free(now) {
                    continue;
                }
                let Some(p) = w.ready_front(self.srcs[s], now) else { continue };
                if self.dest_of(p) != d || !w.fifos[self.dsts[d]].has_room(p.size) {
                    continue;
                }
                let slot = w.pop(self.srcs[s], now).unwrap();
                if s == 0 {
                    w.free_cells += 1; // read out of the central buffer
                }
                let beats = self.src_links[s].beats_for(slot.bytes) + self.descriptor_beats;
                let tr = self.src_links[s].send_beats(now, beats, slot.tail);
                self.dst_links[d].send_beats(now, beats, slot.tail);
                w.push(self.dsts[d], now, slot.item, slot.bytes, tr.head + self.latency, tr.tail + self.latency);
                self.rr[d] = (s + 1) % n;
                break;
            }
        }
    }
    fn next_wake(&self, now: Time, w: &World) -> Option<Time> {
        (0..self.srcs.len())
            .filter_map(|s| {
                let f = w.fifos[self.srcs[s]].front()?;
                let d = self.dest_of(&f.item);
                if !w.fifos[self.dsts[d]].has_room(f.bytes) {
                    return None;
                }
                let t = f.head.max(now + 1);
                Some(self.src_links[s].free_edge(t).max(self.dst_links[d].free_edge(t)))
            })
            .min()
    }
}

#[allow(clippy::too_many_arguments)]
pub fn build(
    cfg: &Config,
    tb: &Timebase,
    world: &mut World,
    comps: &mut Vec<Box<dyn Component<World>>>,
    offloads: &mut Vec<OffloadInfo>,
    source: Source,
    priorities: Vec<u8>,
) -> Result<(), BuildError> {
    let p = &cfg.pipeline;
    let c = &cfg.panic;
    if c.variant == PanicVariant::Full {
        return Err("panic.variant: 'full' is not implemented yet; use 'eval'".into());
    }
    let fclk = tb.clock(p.clock_mhz);
    let pifo_clk = tb.clock(c.pifo_clock_mhz);
    let link = Link::new(p.width_bits, fclk);
    let desc_beats = (c.descriptor_bits as u64).div_ceil(p.width_bits as u64);
    let first = match &c.first_offload {
        Some(n) => cfg.offload_index(n).unwrap() as u8,
        None => 0,
    };
    let pre_in = world.add_fifo("parser.in", p.stage_fifo_bytes);
    let sched_in = world.add_fifo("scheduler.in", p.stage_fifo_bytes);
    let sched_out = world.add_fifo("scheduler.dispatch", u32::MAX);
    let dma_in = world.add_fifo("dma.in", c.crossbar_port_buffer_bytes);
    let mod_in: Vec<FifoId> = cfg.offloads.iter().map(|o| world.add_fifo(format!("{}.xbar_in", o.name), c.crossbar_port_buffer_bytes)).collect();
    let mod_out: Vec<FifoId> = cfg.offloads.iter().map(|o| world.add_fifo(format!("{}.xbar_out", o.name), c.crossbar_port_buffer_bytes)).collect();
    world.module_free_credits = cfg.offloads.iter().map(|o| o.units(p) * c.credits).collect();

    comps.push(Box::new(Dma { inp: dma_in, link: Link::new(p.dma_width_bits, tb.clock(p.dma_clock_mhz)), latency: tb.clock(p.dma_clock_mhz).cycles(p.dma_latency_cycles as u64) }));
    let mut srcs = vec![sched_out];
    srcs.extend(&mod_out);
    let mut dsts = mod_in.clone();
    dsts.push(dma_in);
    comps.push(Box::new(Crossbar {
        clk: fclk,
        src_links: srcs.iter().map(|_| link.clone()).collect(),
        dst_links: dsts.iter().map(|_| link.clone()).collect(),
        rr: vec![0; dsts.len()],
        srcs,
        dsts,
        descriptor_beats: desc_beats,
        latency: fclk.cycles(c.crossbar_latency_cycles as u64),
    }));
    for (i, o) in cfg.offloads.iter().enumerate() {
        let units = o.units(p);
        let spec = UnitSpec {
            width_bits: o.width_bits,
            clock: tb.clock(o.clock_mhz),
            delay_cycles: o.delay_cycles,
            queue_bytes: u32::MAX,
            out_bytes: c.crossbar_port_buffer_bytes,
            steering: Steering::Credits { credits: c.credits, sticky: true },
            descriptor_beats: 0,
            idle_cycles: 1,
        };
        let ufifo = world.add_fifo(format!("{}.units_out", o.name), p.arbiter_fifo_bytes);
        let bypass = world.add_fifo(format!("{}.unused", o.name), p.arbiter_fifo_bytes);
        offloads.push(OffloadInfo { name: o.name.clone(), units });
        comps.push(Box::new(Offload::new(i as u8, o.name.clone(), units, spec, (p.width_bits, fclk), true, [mod_in[i], bypass, ufifo, mod_out[i]])));
    }
    comps.push(Box::new(Scheduler {
        fclk,
        pclk: pifo_clk,
        inp: sched_in,
        out: sched_out,
        pifos: cfg.offloads.iter().map(|_| BinaryHeap::new()).collect(),
        cdc_in: VecDeque::new(),
        next_deq: vec![0; cfg.offloads.len()],
        seq: 0,
        pifo_entries: c.pifo_entries as usize,
        deq_interval: pifo_clk.cycles(c.pifo_cycles_per_packet as u64),
        cdc_latency: pifo_clk.cycles(2),
        module_in: mod_in,
        dispatch_depth: 8,
    }));
    comps.push(Box::new(PreProcessor {
        inp: pre_in,
        out: sched_in,
        link: link.clone(),
        latency: fclk.cycles(c.parser_latency_cycles as u64),
        policy: ChainPolicy::FirstFixed(first),
        descriptor_beats: desc_beats,
        priorities,
    }));
    comps.push(Box::new(Generator::new(source, link, pre_in, None)));
    Ok(())
}
