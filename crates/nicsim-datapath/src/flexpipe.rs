//! FlexPipe (Zyla et al., 2023), Fig. 1 and Fig. 2, and StaticPipe on the same structure.
//!
//! Ingress Traffic Controller (recirculated traffic first, then new traffic) → Offloads in their
//! physical order → Egress Traffic Controller (done → DMA engine; not done → recirculate).
//! Each Offload: Traffic Splitter (process here, or bypass) → Load Balancer (least-loaded unit
//! by byte counters: +size when storing starts, −fragment as the unit reads) → N Offload Units
//! (a unit of w bits at f MHz with d non-pipelined cycles serves s bytes in ceil(8s/w) + d
//! cycles) → nested round robin over units that finished a whole packet → Traffic Arbiter
//! (highest demand first between the bypass FIFO and the units' FIFO, 16 kB each).
//! StaticPipe is this structure with every packet's chain set to every offload.
//!
//! An Offload acts through five ports, in this order at every pipeline edge: the units' events
//! (finish a packet, start the next), the Traffic Arbiter, the nested round robin, the Traffic
//! Splitter with its Load Balancer, and once more the units' events (for a unit the round robin
//! freed in this very cycle).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use nicsim_kernel::{Clock, Component, Link, Port, Slot, Time, Width};

use crate::packet::{Pkt, PktId};
use crate::world::{FifoId, World};

/// Merges recirculated and new traffic into the first Offload; recirculated packets go first
/// so that the loop always drains.
pub struct IngressTc {
    pub new: FifoId,
    pub recirc: FifoId,
    pub out: FifoId,
    pub link: Link,
}

impl Component<World> for IngressTc {
    fn ports(&self) -> Vec<Port> {
        vec![Port::new(self.link.clock)
            .reads(&[self.new, self.recirc])
            .writes(&[self.out])]
    }
    fn step(&mut self, _: usize, now: Time, w: &mut World) {
        if self.link.is_free(now) {
            for from in [self.recirc, self.new] {
                if let Some(p) = w.ready_front(from, now) {
                    if w.room(self.out, p.size) {
                        w.forward(now, &mut self.link, from, self.out, 0);
                    }
                    break;
                }
            }
        }
        w.cal.busy_until(0, self.link.busy_until());
        for from in [self.recirc, self.new] {
            w.wake_forward(0, &self.link, from, self.out);
        }
    }
}

/// Sends finished packets to the DMA engine and the others back to the Ingress Traffic Controller.
pub struct EgressTc {
    pub inp: FifoId,
    pub dma: FifoId,
    pub recirc: FifoId,
    pub link: Link,
}

impl EgressTc {
    fn target(&self, p: &Pkt) -> FifoId {
        if p.done() {
            self.dma
        } else {
            self.recirc
        }
    }
}

impl Component<World> for EgressTc {
    fn ports(&self) -> Vec<Port> {
        vec![Port::new(self.link.clock)
            .reads(&[self.inp])
            .writes(&[self.dma, self.recirc])]
    }
    fn step(&mut self, _: usize, now: Time, w: &mut World) {
        if let Some(p) = w.ready_front(self.inp, now) {
            let to = self.target(p);
            if self.link.is_free(now) && w.room(to, p.size) {
                if to == self.recirc {
                    // The metadata update travels with the packet: count the extra pass.
                    if let Some(front) = w.front_pkt_mut(self.inp) {
                        front.recircs = front.recircs.saturating_add(1);
                    }
                }
                w.forward(now, &mut self.link, self.inp, to, 0);
            }
        }
        w.cal.busy_until(0, self.link.busy_until());
        if let Some(p) = w.front_pkt(self.inp) {
            let to = self.target(p);
            w.wake_forward(0, &self.link, self.inp, to);
        }
    }
}

/// One Offload Unit.
struct Unit {
    queue: VecDeque<Slot<PktId>>,
    /// Bytes queued, including a packet started ahead (see `ahead`).
    queued_bytes: u64,
    /// Packet in service: (packet, bytes, start, end).
    cur: Option<(PktId, u32, Time, Time)>,
    /// A packet handed to the unit while it was idle with nothing queued starts at a time
    /// known then, and `cur` holds it from then on; but the rest of the Offload sees the start
    /// only from the pipeline edge at which the unit's event would have been taken up (as if
    /// it had waited in the queue until then): (that edge, its bytes, still in
    /// `queued_bytes`). Settled by the unit's next event.
    ahead: Option<(Time, u32)>,
    /// Finished packets waiting for the round robin.
    done: VecDeque<(PktId, u32)>,
    done_bytes: u64,
    /// The unit may start its next packet from then on (PANIC's engine idles after a hand-over).
    free_at: Time,
    /// Packets assigned to the unit and not yet handed on (for credits).
    held: u32,
}

/// How a packet is steered to one of an offload's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steering {
    /// FlexPipe's Load Balancer: the unit with the smallest byte counter; a unit takes a
    /// packet while its input queue has room for it.
    LeastLoaded,
    /// PANIC's credit scheme: a unit holds at most `credits` packets. `sticky`: keep sending to
    /// the same unit until it runs out of credits (as the FlexPipe paper describes PANIC's
    /// steering); otherwise the unit with the most credits.
    Credits { credits: u32, sticky: bool },
}

/// Geometry and timing of one offload's units.
#[derive(Debug, Clone)]
pub struct UnitSpec {
    pub width_bits: u32,
    pub clock: Clock,
    pub delay_cycles: u32,
    pub queue_bytes: u32,
    /// Output buffer of every unit: finished packets wait there for the round robin.
    pub out_bytes: u32,
    pub steering: Steering,
    /// Extra beats on the Offload's output (PANIC's descriptor ahead of the packet).
    pub descriptor_beats: u64,
    /// Pipeline cycles a unit idles after handing over a packet (PANIC's compute engine).
    pub idle_cycles: u32,
}

pub struct Offload {
    pub idx: u8,
    pub name: String,
    pclk: Clock,
    spec: UnitSpec,
    /// The units' data width.
    width: Width,
    /// Process every packet here (StaticPipe).
    process_all: bool,
    inp: FifoId,
    bypass: FifoId,
    ufifo: FifoId,
    out: FifoId,
    split_link: Link,
    rr_link: Link,
    arb_link: Link,
    units: Vec<Unit>,
    ready: Vec<u64>,
    /// Units with a finished packet (members of `ready`).
    n_ready: u32,
    rr_next: usize,
    sticky_unit: usize,
    /// The splitter found no unit able to take its packet; only a unit event can change that.
    lb_blocked: bool,
    /// The units' events: (unit edge, unit) at which a unit next looks at its packet in
    /// service or its queue, earliest first.
    unit_wakes: BinaryHeap<Reverse<(Time, u32)>>,
    /// The earliest pipeline edge for which the units' first port has been woken (and not yet
    /// stepped), so that it is not woken again for a later one.
    units_woken: Time,
    /// Where this Offload's credits live in `World::module_free_credits` (PANIC).
    credit_id: usize,
    /// PANIC full variant (one unit per Offload): a packet that finds no free credit goes back
    /// out through the bypass path with `detour` set, and credits come back when the last beat
    /// of a finished packet has left the unit (`returns`: when, unit).
    detour: bool,
    returns: VecDeque<(Time, usize)>,
}

impl Offload {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        idx: u8,
        name: String,
        n_units: u32,
        spec: UnitSpec,
        pipe: (u32, Clock),
        process_all: bool,
        fifos: [FifoId; 4],
    ) -> Offload {
        let [inp, bypass, ufifo, out] = fifos;
        let units = (0..n_units)
            .map(|_| Unit {
                queue: VecDeque::new(),
                queued_bytes: 0,
                cur: None,
                done: VecDeque::new(),
                done_bytes: 0,
                free_at: 0,
                held: 0,
                ahead: None,
            })
            .collect();
        let link = Link::new(pipe.0, pipe.1);
        Offload {
            idx,
            name,
            pclk: pipe.1,
            width: Width::new(spec.width_bits),
            spec,
            process_all,
            inp,
            bypass,
            ufifo,
            out,
            split_link: link.clone(),
            rr_link: link.clone(),
            arb_link: link,
            units,
            ready: vec![0; (n_units as usize).div_ceil(64)],
            n_ready: 0,
            rr_next: 0,
            sticky_unit: 0,
            lb_blocked: false,
            unit_wakes: BinaryHeap::new(),
            units_woken: Time::MAX,
            credit_id: idx as usize,
            detour: false,
            returns: VecDeque::new(),
        }
    }

    /// Make this one-unit Offload a PANIC compute engine of the full variant: its credits are
    /// `World::module_free_credits[credit_id]`, which the scheduler also takes at dispatch; a
    /// packet is admitted if it carries a credit (`credited`) or a credit is free, otherwise it
    /// is detoured back to the scheduler; credits return when a packet's last beat has left.
    pub fn panic_engine(mut self, credit_id: usize) -> Offload {
        assert_eq!(self.units.len(), 1, "a PANIC engine is one unit");
        self.credit_id = credit_id;
        self.detour = true;
        self
    }

    /// Full variant: whether the unit admits `p` (else it is detoured).
    fn admits(&self, p: &Pkt, w: &World) -> bool {
        p.credited || w.module_free_credits[self.credit_id] > 0
    }

    pub fn n_units(&self) -> usize {
        self.units.len()
    }

    fn wants(&self, p: &Pkt) -> bool {
        self.process_all || p.next_offload() == Some(self.idx)
    }

    /// The Load Balancer's counter: bytes stored for the unit that it has not yet read.
    fn load(&self, u: usize, now: Time) -> u64 {
        let unit = &self.units[u];
        let mut l = self.queued(u, now);
        if let Some((_, bytes, start, _)) = &unit.cur {
            if unit.ahead.is_none_or(|(seen, _)| seen <= now) {
                let cycles = self.spec.clock.cycles_in(now.saturating_sub(*start));
                let read = (cycles * self.spec.width_bits as u64 / 8).min(*bytes as u64);
                l += *bytes as u64 - read;
            }
        }
        l
    }

    /// Bytes waiting in unit `u`'s queue as seen at pipeline edge `now`.
    #[inline]
    fn queued(&self, u: usize, now: Time) -> u64 {
        let unit = &self.units[u];
        match unit.ahead {
            Some((seen, bytes)) if seen <= now => unit.queued_bytes - bytes as u64,
            _ => unit.queued_bytes,
        }
    }

    /// The unit's start ahead of time is now seen by everyone (`now` ≥ its edge).
    #[inline]
    fn settle(&mut self, u: usize, now: Time) {
        let unit = &mut self.units[u];
        if let Some((seen, bytes)) = unit.ahead {
            if seen <= now {
                unit.queued_bytes -= bytes as u64;
                unit.ahead = None;
            }
        }
    }

    /// The unit a packet of `bytes` would be steered to at `now`, if one can take it.
    fn steer(&self, now: Time, bytes: u32) -> Option<usize> {
        match self.spec.steering {
            Steering::LeastLoaded => {
                let mut best = (u64::MAX, 0);
                for u in 0..self.units.len() {
                    let l = self.load(u, now);
                    if l < best.0 {
                        best = (l, u);
                        if l == 0 {
                            break;
                        }
                    }
                }
                let u = best.1;
                (self.queued(u, now) + bytes as u64 <= self.spec.queue_bytes as u64).then_some(u)
            }
            Steering::Credits {
                credits,
                sticky: true,
            } => {
                let n = self.units.len();
                (0..n)
                    .map(|k| (self.sticky_unit + k) % n)
                    .find(|&u| self.units[u].held < credits)
            }
            Steering::Credits {
                credits,
                sticky: false,
            } => {
                let u = (0..self.units.len()).min_by_key(|&u| self.units[u].held)?;
                (self.units[u].held < credits).then_some(u)
            }
        }
    }

    fn set_ready(&mut self, u: usize, on: bool) {
        let (w, b) = (u / 64, 1u64 << (u % 64));
        let was = self.ready[w] & b != 0;
        if on {
            self.ready[w] |= b;
        } else {
            self.ready[w] &= !b;
        }
        self.n_ready = self.n_ready + on as u32 - was as u32;
    }

    /// A unit took (+1) or handed on (−1) a packet: PANIC's credit counters follow.
    fn hold(&mut self, u: usize, delta: i32, w: &mut World) {
        let unit = &mut self.units[u];
        unit.held = unit.held.wrapping_add_signed(delta);
        if let Steering::Credits { .. } = self.spec.steering {
            let c = &mut w.module_free_credits[self.credit_id];
            *c = c.wrapping_add_signed(-delta);
            // Whoever looks at these credits (the splitter, the scheduler, the crossbar).
            w.cal.touched(self.inp);
        }
    }

    /// The next unit with a finished packet, in round-robin order from `rr_next`.
    fn next_ready(&self) -> Option<usize> {
        if self.n_ready == 0 {
            return None;
        }
        let n = self.units.len();
        let scan = |from: usize, to: usize| -> Option<usize> {
            let mut u = from;
            while u < to {
                let word = self.ready[u / 64] >> (u % 64);
                if word != 0 {
                    let c = u + word.trailing_zeros() as usize;
                    return (c < to).then_some(c);
                }
                u = (u / 64 + 1) * 64;
            }
            None
        };
        scan(self.rr_next, n).or_else(|| scan(0, self.rr_next))
    }

    /// Schedule unit `u` to look at its queue at the first unit edge at or after `t`; `port` is
    /// the port asking.
    fn wake_unit(&mut self, u: usize, t: Time, port: usize, w: &mut World) {
        self.unit_wakes
            .push(Reverse((self.spec.clock.edge_at_or_after(t), u as u32)));
        self.wake_units(port, w);
    }

    /// Wake the port that takes up the units' earliest event: the last port of this very edge
    /// if the event is due by now and that port is still to come, otherwise the first port at
    /// the pipeline edge that follows the event.
    fn wake_units(&mut self, port: usize, w: &mut World) {
        if let Some(&Reverse((t, _))) = self.unit_wakes.peek() {
            let now = w.cal.now();
            if t <= now && port < UNITS_LATE {
                w.cal.wake_port(UNITS_LATE, now);
            } else if t < self.units_woken || self.units_woken <= now {
                let e = self.pclk.edge_at_or_after(t.max(now + 1));
                self.units_woken = e;
                w.cal.wake_port(UNITS, e);
            }
        }
    }

    /// A unit event at unit edge `now` (observed by the rest of the Offload at the next pipeline
    /// edge): finish the packet in service, start the next.
    fn unit_event(&mut self, u: usize, now: Time, w: &mut World) {
        let unit = &mut self.units[u];
        if let Some((_, _, _, end)) = &unit.cur {
            if *end > now {
                return;
            }
            let (id, bytes, start, end) = unit.cur.take().unwrap();
            w.unit_busy_ticks[self.idx as usize] += end - start;
            let pkt = &mut w.pkts[id];
            let verdict = match (&w.funcs, pkt.frame.as_mut()) {
                (Some(f), Some(fr)) => f[self.idx as usize].process(&mut fr.bytes, &mut fr.meta),
                _ => Ok(()),
            };
            match verdict {
                Ok(()) => {
                    pkt.trace.push(self.idx);
                    if pkt.next_offload() == Some(self.idx) {
                        pkt.next += 1;
                    }
                    unit.done.push_back((id, bytes));
                    unit.done_bytes += bytes as u64;
                    self.set_ready(u, true);
                    // The round robin has a finished packet to take (once its link is free).
                    w.cal.wake_port(RR, self.rr_link.free_from(w.cal.now()));
                }
                Err(reason) => {
                    self.hold(u, -1, w);
                    w.drop_pkt(id, reason.as_str());
                }
            }
        }
        let unit = &mut self.units[u];
        if unit.cur.is_some() || now < unit.free_at {
            return;
        }
        let Some(front) = unit.queue.front() else {
            return;
        };
        if unit.done_bytes + front.bytes as u64 > self.spec.out_bytes as u64 {
            return; // output buffer full: wait for the round robin
        }
        let clk = self.spec.clock;
        if clk.edge_at_or_after(front.head) > now {
            let t = front.head;
            self.unit_wakes
                .push(Reverse((clk.edge_at_or_after(t), u as u32)));
            return;
        }
        let slot = unit.queue.pop_front().unwrap();
        unit.queued_bytes -= slot.bytes as u64;
        let end = self.service_end(now, slot.bytes, slot.tail);
        self.units[u].cur = Some((slot.item, slot.bytes, now, end));
        self.unit_wakes.push(Reverse((end, u as u32)));
    }

    /// When a unit that starts a packet of `bytes` at unit edge `start`, whose last beat lands
    /// at `tail`, is done with it: ceil(8 s / w) cycles reading (it cannot read the last
    /// fragment before it has arrived), then the non-pipelined delay.
    fn service_end(&self, start: Time, bytes: u32, tail: Time) -> Time {
        let clk = self.spec.clock;
        let beats = self.width.beats(bytes);
        let read_end = (start + clk.cycles(beats)).max(clk.edge_at_or_after(tail) + clk.period);
        read_end + clk.cycles(self.spec.delay_cycles as u64)
    }

    /// The Traffic Arbiter's choice: the FIFO with the highest fill level among those whose
    /// front packet has arrived (units' FIFO on a tie).
    fn arbiter_pick(&self, now: Time, w: &World) -> Option<FifoId> {
        let ready = |f: FifoId| w.q[f].front().is_some_and(|s| s.head <= now);
        match (ready(self.ufifo), ready(self.bypass)) {
            (true, true) => Some(
                if w.q[self.bypass].used_bytes() > w.q[self.ufifo].used_bytes() {
                    self.bypass
                } else {
                    self.ufifo
                },
            ),
            (true, false) => Some(self.ufifo),
            (false, true) => Some(self.bypass),
            (false, false) => None,
        }
    }
}

/// The Offload's ports, in the order they act at a pipeline edge.
const UNITS: usize = 0;
const ARB: usize = 1;
const RR: usize = 2;
const SPLIT: usize = 3;
const UNITS_LATE: usize = 4;

impl Offload {
    /// Unit events due at or before pipeline edge `now`, each at its own unit edge: the units
    /// keep their own clock, and what they did is seen by the Offload's pipeline-clock logic
    /// (and the rest of the datapath) from the next pipeline edge on, as through a clock-domain
    /// crossing.
    fn unit_events(&mut self, port: usize, now: Time, w: &mut World) {
        if port == UNITS {
            self.units_woken = Time::MAX;
        }
        while let Some(&Reverse((t, u))) = self.unit_wakes.peek() {
            if t > now {
                break;
            }
            self.unit_wakes.pop();
            if std::mem::take(&mut self.lb_blocked) {
                // A unit changed: the Load Balancer may find room now.
                w.cal.wake_port(SPLIT, now);
            }
            self.settle(u as usize, now);
            self.unit_event(u as usize, t, w);
        }
        self.wake_units(port, w);
    }

    /// Credits of packets whose last beat has left the unit (full PANIC variant), then the
    /// Traffic Arbiter → next Offload.
    fn arbiter(&mut self, now: Time, w: &mut World) {
        while let Some(&(t, u)) = self.returns.front() {
            if t > now {
                break;
            }
            self.returns.pop_front();
            self.hold(u, -1, w);
        }
        if self.arb_link.is_free(now) {
            if let Some(from) = self.arbiter_pick(now, w) {
                let bytes = w.q[from].front().unwrap().bytes;
                if w.room(self.out, bytes) {
                    let slot = w.pop(from, now).unwrap();
                    let beats = self.arb_link.beats_for(slot.bytes) + self.spec.descriptor_beats;
                    let tr = self.arb_link.send_beats(now, beats, slot.tail);
                    w.push(self.out, now, slot.item, slot.bytes, tr.head, tr.tail);
                }
            }
        }
        w.cal.busy_until(ARB, self.arb_link.busy_until());
        if let Some(&(r, _)) = self.returns.front() {
            w.cal.wake_port(ARB, r);
        }
        for f in [self.bypass, self.ufifo] {
            if let Some(s) = w.q[f].front() {
                if w.room(self.out, s.bytes) {
                    let t = self.arb_link.free_from(s.head);
                    w.cal.wake_port(ARB, t);
                }
            }
        }
    }

    /// Nested round robin: a unit that finished a whole packet → units' FIFO.
    fn round_robin(&mut self, now: Time, w: &mut World) {
        if self.rr_link.is_free(now) {
            if let Some(u) = self.next_ready() {
                let bytes = self.units[u].done.front().unwrap().1;
                if w.room(self.ufifo, bytes) {
                    let unit = &mut self.units[u];
                    let (pkt, bytes) = unit.done.pop_front().unwrap();
                    unit.done_bytes -= bytes as u64;
                    let empty = unit.done.is_empty();
                    let tr = self.rr_link.send(now, bytes, now);
                    w.push(self.ufifo, now, pkt, bytes, tr.head, tr.tail);
                    if self.detour {
                        self.returns.push_back((tr.tail, u));
                        w.cal.wake_port(ARB, tr.tail);
                    } else {
                        self.hold(u, -1, w);
                    }
                    if self.spec.idle_cycles > 0 {
                        let unit = &mut self.units[u];
                        unit.free_at = unit
                            .free_at
                            .max(tr.tail + self.pclk.cycles(self.spec.idle_cycles as u64));
                    }
                    if empty {
                        self.set_ready(u, false);
                    }
                    self.rr_next = if u + 1 == self.units.len() { 0 } else { u + 1 };
                    // The unit may go on (its output buffer has room, its idle time starts):
                    // unless it has nothing at all, in service or queued.
                    let unit = &self.units[u];
                    if unit.cur.is_some() || !unit.queue.is_empty() {
                        let t = unit.free_at.max(now);
                        self.wake_unit(u, t, RR, w);
                    }
                }
            }
        }
        if let Some(u) = self.next_ready() {
            if w.room(self.ufifo, self.units[u].done.front().unwrap().1) {
                let t = self.rr_link.free_from(now + 1);
                w.cal.wake_port(RR, t);
            }
        }
    }

    /// Traffic Splitter and Load Balancer.
    fn splitter(&mut self, now: Time, w: &mut World) {
        if self.split_link.is_free(now) {
            if let Some(p) = w.ready_front(self.inp, now) {
                let bytes = w.q[self.inp].front().unwrap().bytes;
                if self.detour && self.wants(p) && !self.admits(p, w) {
                    // No credit: the whole packet goes back to the scheduler.
                    if w.room(self.bypass, bytes) {
                        w.front_pkt_mut(self.inp).unwrap().detour = true;
                        w.forward(now, &mut self.split_link, self.inp, self.bypass, 0);
                        w.detours += 1;
                    }
                } else if self.wants(p) {
                    let target = if self.detour {
                        Some(0)
                    } else {
                        self.steer(now, bytes)
                    };
                    self.lb_blocked = target.is_none();
                    if let Some(u) = target {
                        self.sticky_unit = u;
                        let slot = w.pop(self.inp, now).unwrap();
                        if std::mem::take(&mut w.pkts[slot.item].credited) {
                            // The scheduler took this unit's credit at dispatch: hand it back
                            // so that `hold` takes it again.
                            w.module_free_credits[self.credit_id] += 1;
                        }
                        let tr = self.split_link.send(now, slot.bytes, slot.tail);
                        self.settle(u, now);
                        let unit = &mut self.units[u];
                        unit.queued_bytes += slot.bytes as u64;
                        let idle = unit.cur.is_none() && unit.queue.is_empty();
                        // Nothing can change when an idle unit starts this packet (its first
                        // edge once the first beat is there and its idle time is over) if its
                        // output buffer has room, and no hand-over of a finished packet can
                        // still move its idle time.
                        if idle
                            && unit.done_bytes + slot.bytes as u64 <= self.spec.out_bytes as u64
                            && (self.spec.idle_cycles == 0 || unit.done.is_empty())
                        {
                            let clk = self.spec.clock;
                            let start = clk.edge_at_or_after(tr.head.max(unit.free_at));
                            let end = self.service_end(start, slot.bytes, tr.tail);
                            let unit = &mut self.units[u];
                            unit.cur = Some((slot.item, slot.bytes, start, end));
                            unit.ahead = Some((self.pclk.edge_at_or_after(start), slot.bytes));
                            self.unit_wakes.push(Reverse((end, u as u32)));
                            self.wake_units(SPLIT, w);
                        } else {
                            unit.queue.push_back(Slot {
                                item: slot.item,
                                bytes: slot.bytes,
                                head: tr.head,
                                tail: tr.tail,
                                enq: now,
                            });
                            if idle {
                                let t = tr.head.max(unit.free_at);
                                self.wake_unit(u, t, SPLIT, w);
                            }
                        }
                        self.hold(u, 1, w);
                    }
                } else if w.room(self.bypass, bytes) {
                    w.forward(now, &mut self.split_link, self.inp, self.bypass, 0);
                }
            }
        }
        w.cal.busy_until(SPLIT, self.split_link.busy_until());
        if let Some(s) = w.q[self.inp].front() {
            let p = &w.pkts[s.item];
            let room = if self.detour && self.wants(p) {
                self.admits(p, w) || w.room(self.bypass, s.bytes)
            } else if self.wants(p) {
                if self.lb_blocked {
                    // A start ahead, once seen, frees queue room without a unit event.
                    if let Some(t) = self.units.iter().filter_map(|u| u.ahead).map(|a| a.0).min() {
                        w.cal.wake_port(SPLIT, t);
                    }
                }
                !self.lb_blocked
            } else {
                w.room(self.bypass, s.bytes)
            };
            if room {
                let t = self.split_link.free_from(s.head);
                w.cal.wake_port(SPLIT, t);
            }
        }
    }
}

impl Component<World> for Offload {
    // Every port acts at pipeline edges; the units' events, at their own edges, are taken up at
    // the next pipeline edge (see `unit_events`).
    fn ports(&self) -> Vec<Port> {
        let p = || Port::new(self.pclk);
        let mut ports = vec![p(); 5];
        ports[ARB] = p().reads(&[self.bypass, self.ufifo]).writes(&[self.out]);
        ports[RR] = p().writes(&[self.ufifo]);
        ports[SPLIT] = p().reads(&[self.inp]).writes(&[self.bypass]);
        ports
    }

    fn step(&mut self, port: usize, now: Time, w: &mut World) {
        match port {
            UNITS | UNITS_LATE => self.unit_events(port, now, w),
            ARB => self.arbiter(now, w),
            RR => self.round_robin(now, w),
            _ => self.splitter(now, w),
        }
    }
}
