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
//! The Offloads are "directly connected to each other" (§III): a Traffic Arbiter hands its
//! packet straight to the next Offload's Traffic Splitter, which "forwards the packet
//! immediately" into its bypass FIFO or a unit's queue, so the arbiter sends only when that
//! destination can take the packet (valid/ready through the splitter). The Ingress Traffic
//! Controller feeds the first Splitter the same way, and the last Arbiter feeds the Egress
//! Traffic Controller. The whole chain is one component, [`Pipeline`]. PANIC's compute
//! engines reuse [`Offload`] on its own, fed from a FIFO by a Splitter port of their own.
//!
//! An Offload acts through these ports, in this order at every pipeline edge: the Traffic
//! Arbiter; the units' events (finish a packet, start the next) with the nested round robin
//! right after them; and once more the units' events, for a unit the round robin freed in this
//! very cycle (on its own, that is a port after its Traffic Splitter's). The arbiter comes
//! first because nothing it reads (its two FIFOs, the next stage) depends on this Offload's
//! units, and the round robin after the arbiter because it fills the FIFO the arbiter empties.

use std::collections::VecDeque;

use nicsim_kernel::{Clock, Component, Link, Port, Slot, Time, Transfer, Width};

use crate::packet::{Pkt, PktId};
use crate::world::{FifoId, World};

/// Where a sender's packet goes next, and whether it can go there now.
pub enum Next<'a> {
    /// A FIFO (PANIC: a crossbar port).
    Fifo(FifoId),
    /// An Offload's Traffic Splitter (FlexPipe: the Offloads are directly connected).
    Offload(&'a mut Offload),
    /// The Egress Traffic Controller.
    Egress(&'a EgressTc),
}

/// Where a packet handed to a [`Next`] lands.
#[derive(Debug, Clone, Copy)]
pub enum Route {
    /// A FIFO: the next stage's, an Offload's bypass FIFO, the DMA engine's or the
    /// recirculation FIFO.
    Fifo(FifoId),
    /// A unit of the Offload, through its Load Balancer.
    Unit(usize),
    /// PANIC full variant: back through the bypass path to the scheduler, for lack of credit.
    Detour,
}

impl Next<'_> {
    /// Where packet `item` of `bytes` would land if sent at `now`; `None` when it cannot be
    /// taken now (whoever would free room wakes the sender).
    #[inline]
    fn route(&mut self, now: Time, w: &mut World, item: PktId, bytes: u32) -> Option<Route> {
        match self {
            Next::Fifo(f) => w.room(*f, bytes).then_some(Route::Fifo(*f)),
            Next::Offload(o) => o.route(now, w, item, bytes),
            Next::Egress(e) => {
                let to = e.target(&w.pkts[item]);
                w.room(to, bytes).then_some(Route::Fifo(to))
            }
        }
    }

    /// Packet `item` is on its way over transfer `tr`, to `route`.
    #[inline]
    fn enter(
        &mut self,
        now: Time,
        w: &mut World,
        route: Route,
        item: PktId,
        bytes: u32,
        tr: Transfer,
    ) {
        match (self, route) {
            (Next::Offload(o), r) => o.enter(now, w, r, item, bytes, tr),
            (Next::Egress(e), Route::Fifo(to)) => {
                if to == e.recirc {
                    // The metadata update travels with the packet: count the extra pass.
                    let p = &mut w.pkts[item];
                    p.recircs = p.recircs.saturating_add(1);
                }
                w.push(to, now, item, bytes, tr.head, tr.tail);
            }
            (_, Route::Fifo(to)) => w.push(to, now, item, bytes, tr.head, tr.tail),
            (_, r) => unreachable!("{r:?} into a FIFO"),
        }
    }

    /// Whether the sender should wake for packet `item` (when its first beat is there and its
    /// link is free): it might be taken then. Otherwise whatever frees room wakes the sender.
    #[inline]
    fn may_take(&mut self, w: &mut World, item: PktId, bytes: u32) -> bool {
        match self {
            Next::Fifo(f) => w.room(*f, bytes),
            Next::Offload(o) => o.may_take(w, item, bytes),
            Next::Egress(e) => w.room(e.target(&w.pkts[item]), bytes),
        }
    }
}

/// The front packet of a sender's input, as its pick found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Front {
    fifo: FifoId,
    item: PktId,
    bytes: u32,
}

impl Front {
    /// FIFO `fifo`'s front packet, if its first beat is there by `t`.
    #[inline]
    fn ready(w: &World, fifo: FifoId, t: Time) -> Option<Front> {
        w.q.ready_front(fifo, t).map(|s| Front {
            fifo,
            item: s.item,
            bytes: s.bytes,
        })
    }
}

/// Send `front` (its first beat there by `now`) over `link` (with `extra_beats` ahead of its
/// data) to `next`, if the link is free and `next` can take it.
fn send_front(
    now: Time,
    w: &mut World,
    front: Front,
    link: &mut Link,
    extra_beats: u64,
    next: &mut Next,
) -> bool {
    debug_assert_eq!(Some(front), Front::ready(w, front.fifo, now));
    let Front { fifo, item, bytes } = front;
    if !link.is_free(now) {
        return false;
    }
    let Some(route) = next.route(now, w, item, bytes) else {
        return false;
    };
    let slot = w.pop(fifo, now).unwrap();
    let tr = link.send_beats(now, link.beats_for(bytes) + extra_beats, slot.tail);
    next.enter(now, w, route, item, bytes, tr);
    true
}

/// Wake `port` (of the component being stepped) for its next [`send_front`] from one of
/// `inputs`, where `pick(w, t)` is the front packet it takes at time `t` (of those whose front
/// packet's first beat is there by `t`). What it picks changes only as front packets arrive,
/// so it is woken at the first of those times (once `link` is free) at which it would pick a
/// packet `next` might take. If it would pick one `next` cannot take, only `next` making room
/// (which wakes it) or a push into one of its inputs (which can change what it picks) can
/// change that: the inputs then wake it at their next push.
fn wake_send(
    w: &mut World,
    port: usize,
    link: &Link,
    inputs: [FifoId; 2],
    pick: impl Fn(&World, Time) -> Option<Front>,
    next: &mut Next,
) {
    let now = w.cal.now();
    let at = |f: FifoId| w.q.front(f).map(|s| link.free_from(s.head.max(now)));
    let times = match (at(inputs[0]), at(inputs[1])) {
        (None, None) => return, // a push wakes it
        (Some(t), None) | (None, Some(t)) => [t, Time::MAX],
        (Some(a), Some(b)) => [a.min(b), a.max(b)],
    };
    let (mut last, mut blocked) = (None, false);
    for t in times.into_iter().filter(|&t| t != Time::MAX) {
        let Some(f) = pick(w, t).filter(|f| Some(f.fifo) != last) else {
            continue;
        };
        last = Some(f.fifo);
        if next.may_take(w, f.item, f.bytes) {
            w.cal.wake_port(port, t);
            return;
        }
        blocked = true;
    }
    if blocked {
        inputs.iter().for_each(|&f| w.q.wait_for_push(f));
    }
}

/// Merges recirculated and new traffic into the first Offload; recirculated packets go first
/// so that the loop always drains.
pub struct IngressTc {
    pub new: FifoId,
    pub recirc: FifoId,
    pub link: Link,
}

impl IngressTc {
    /// The packet it takes at `t`: recirculated traffic whenever its front packet is there.
    fn pick(recirc: FifoId, new: FifoId, w: &World, t: Time) -> Option<Front> {
        Front::ready(w, recirc, t).or_else(|| Front::ready(w, new, t))
    }

    /// Out of line, so that the pipeline's step, which dispatches to every port (mostly the
    /// Offloads'), stays small: without this it saves and restores registers on every step.
    #[inline(never)]
    fn step(&mut self, port: usize, now: Time, w: &mut World, next: &mut Next) {
        let (recirc, new) = (self.recirc, self.new);
        if self.link.is_free(now) {
            if let Some(f) = IngressTc::pick(recirc, new, w, now) {
                send_front(now, w, f, &mut self.link, 0, next);
            }
        }
        w.cal.busy_until(port, self.link.busy_until());
        let pick = |w: &World, t: Time| IngressTc::pick(recirc, new, w, t);
        wake_send(w, port, &self.link, [recirc, new], pick, next);
    }
}

/// Sends finished packets to the DMA engine and the others back to the Ingress Traffic
/// Controller, as the last Traffic Arbiter hands them over.
pub struct EgressTc {
    pub dma: FifoId,
    pub recirc: FifoId,
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

/// An Offload's ports, numbered within the component it belongs to (in the order they act).
#[derive(Debug, Clone, Copy)]
struct Ports {
    /// The Traffic Arbiter.
    arb: usize,
    /// The units' events, then the nested round robin (then, without a `late` port, the units'
    /// events once more).
    units: usize,
    /// The port that feeds the Traffic Splitter: its own (PANIC) or the previous stage's
    /// sender (FlexPipe), woken when the Load Balancer may take a packet again.
    split: usize,
    /// On its own, the units' events once more come after the Splitter, in a port of their own.
    late: Option<usize>,
}

impl Ports {
    /// The port that takes up unit events due at the current edge once the units' port has
    /// acted (for a unit the round robin freed).
    fn late(&self) -> usize {
        self.late.unwrap_or(self.units)
    }
}

/// The ports of an Offload that is a component of its own: arbiter, units and round robin,
/// splitter, units again.
const ALONE: Ports = Ports {
    arb: 0,
    units: 1,
    split: 2,
    late: Some(3),
};

/// The units' next events: one time per unit (`Time::MAX`: none), and a tournament tree over
/// them that holds the earliest, the lower unit first on a tie. A unit's event reschedules it
/// (see `finish_and_start`), so one pending time per unit is enough: a wake for later than the
/// pending one is the event's to set again.
struct UnitWakes {
    /// Node `i` (from 1) holds the earliest (time, unit) below it; its children are `2i` and
    /// `2i + 1`, and unit `u`'s leaf is `leaves + u`.
    nodes: Vec<(Time, u32)>,
    /// Leaves: the number of units rounded up to a power of two.
    leaves: usize,
}

impl UnitWakes {
    /// No events for `n_units` units.
    fn new(n_units: usize) -> UnitWakes {
        let leaves = n_units.next_power_of_two();
        let mut nodes = vec![(Time::MAX, 0); 2 * leaves];
        for (u, leaf) in nodes[leaves..].iter_mut().enumerate() {
            leaf.1 = u as u32;
        }
        for i in (1..leaves).rev() {
            nodes[i] = nodes[2 * i];
        }
        UnitWakes { nodes, leaves }
    }

    /// The earliest event: (unit edge, unit); `Time::MAX` when there is none.
    #[inline]
    fn first(&self) -> (Time, u32) {
        self.nodes[1]
    }

    /// Unit `u`'s next event is at `t` (`Time::MAX`: none).
    fn set(&mut self, u: usize, t: Time) {
        let mut i = self.leaves + u;
        self.nodes[i] = (t, u as u32);
        while i > 1 {
            i /= 2;
            let [a, b] = self.nodes[2 * i..2 * i + 2] else {
                unreachable!("two children")
            };
            // The left child holds the lower units: it wins a tie.
            self.nodes[i] = if b.0 < a.0 { b } else { a };
        }
    }

    /// Unit `u` looks at its packet in service or its queue at `t` at the latest.
    fn arm(&mut self, u: usize, t: Time) {
        let mut i = self.leaves + u;
        if t >= self.nodes[i].0 {
            return;
        }
        let new = (t, u as u32);
        self.nodes[i] = new;
        // An earlier time: it only wins where it beats the earliest so far (unless that was
        // this unit's own, later time).
        while i > 1 {
            i >>= 1;
            let old = self.nodes[i];
            // old <= new for another unit's event (one condition, without branches inside).
            if (old.0 < t) | ((old.0 == t) & (old.1 < new.1)) {
                break;
            }
            self.nodes[i] = new;
        }
    }
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
    bypass: FifoId,
    ufifo: FifoId,
    /// An Offload on its own (PANIC): the FIFO its Traffic Splitter reads and the FIFO its
    /// Traffic Arbiter writes. In a [`Pipeline`] its neighbours feed it and take from it.
    io: Option<(FifoId, FifoId)>,
    ports: Ports,
    /// On its own: the Traffic Splitter's link (in a [`Pipeline`], the feeder's link).
    split_link: Option<Link>,
    rr_link: Link,
    arb_link: Link,
    units: Vec<Unit>,
    /// Per unit: from when its Load Balancer counter is 0 if nothing else is queued (see
    /// `refresh_zero`), so that the least-loaded unit is found without computing counters.
    zero_from: Vec<Time>,
    ready: Vec<u64>,
    /// Units with a finished packet (members of `ready`).
    n_ready: u32,
    rr_next: usize,
    sticky_unit: usize,
    /// The splitter found no unit able to take its packet; only a unit event can change that.
    lb_blocked: bool,
    /// The units' events: per unit, the unit edge at which it next looks at its packet in
    /// service or its queue.
    unit_wakes: UnitWakes,
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
    /// An Offload of `n_units` units with a pipeline of (width, clock), whose Traffic Splitter
    /// puts bypassing packets into `bypass` and whose round robin fills `ufifo`. It is a
    /// component of its own once given its input and output ([`Offload::alone`]); otherwise a
    /// [`Pipeline`] connects it to its neighbours.
    pub fn new(
        idx: u8,
        name: String,
        n_units: u32,
        spec: UnitSpec,
        pipe: (u32, Clock),
        process_all: bool,
        [bypass, ufifo]: [FifoId; 2],
    ) -> Offload {
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
            bypass,
            ufifo,
            io: None,
            ports: ALONE,
            split_link: None,
            rr_link: link.clone(),
            arb_link: link,
            units,
            zero_from: vec![0; n_units as usize],
            ready: vec![0; (n_units as usize).div_ceil(64)],
            n_ready: 0,
            rr_next: 0,
            sticky_unit: 0,
            lb_blocked: false,
            unit_wakes: UnitWakes::new(n_units as usize),
            units_woken: Time::MAX,
            credit_id: idx as usize,
            detour: false,
            returns: VecDeque::new(),
        }
    }

    /// A component of its own: its Traffic Splitter reads `inp` (over a link of its own), its
    /// Traffic Arbiter writes `out`.
    pub fn alone(mut self, inp: FifoId, out: FifoId) -> Offload {
        self.io = Some((inp, out));
        self.ports = ALONE;
        self.split_link = Some(self.arb_link.clone());
        self
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
        self.process_all | p.next_is(self.idx)
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

    /// When a unit that started a packet of `bytes` at `start` has read it all (ceil(8 s / w)
    /// unit cycles), so that its Load Balancer counter holds none of it.
    fn read_by(&self, start: Time, bytes: u32) -> Time {
        start + self.spec.clock.cycles(self.width.beats(bytes))
    }

    /// Unit `u`'s queue, packet in service or start ahead changed: from when its Load
    /// Balancer counter is 0 (nothing queued, its start seen, its packet read), if nothing
    /// else comes.
    fn refresh_zero(&mut self, u: usize) {
        let unit = &self.units[u];
        self.zero_from[u] = if unit.queue.is_empty() {
            let seen = unit.ahead.map_or(0, |a| a.0);
            let read_by = unit
                .cur
                .map_or(0, |(_, bytes, start, _)| self.read_by(start, bytes));
            seen.max(read_by)
        } else {
            Time::MAX
        };
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
                // The first unit whose counter is 0, else the first with the smallest.
                let u = match self.zero_from.iter().position(|&t| t <= now) {
                    Some(u) => u,
                    None => {
                        let mut best = (u64::MAX, 0);
                        for u in 0..self.units.len() {
                            let l = self.load(u, now);
                            if l < best.0 {
                                best = (l, u);
                            }
                        }
                        best.1
                    }
                };
                debug_assert_eq!(
                    Some(u),
                    (0..self.units.len()).min_by_key(|&u| (self.load(u, now), u)),
                    "{}: zero_from {:?} at {now}",
                    self.name,
                    self.zero_from
                );
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
            if let Some((inp, _)) = self.io {
                w.cal.touched(inp);
            }
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

    /// Schedule unit `u` to look at its queue at the first unit edge at or after `t` (the
    /// caller then wakes whoever takes it up, see `wake_units`).
    fn wake_unit(&mut self, u: usize, t: Time) {
        self.unit_wakes.arm(u, self.spec.clock.edge_at_or_after(t));
    }

    /// Wake the port that takes up the units' earliest event: the late units' port of this
    /// very edge if the event is due by now and that port is still to come, otherwise the
    /// units' port at the pipeline edge that follows the event.
    fn wake_units(&mut self, port: usize, w: &mut World) {
        let (t, _) = self.unit_wakes.first();
        if t != Time::MAX {
            let now = w.cal.now();
            if t <= now && port < self.ports.late() {
                w.cal.wake_port(self.ports.late(), now);
            } else if (t < self.units_woken) | (self.units_woken <= now) {
                let e = self.pclk.edge_at_or_after(t.max(now + 1));
                self.units_woken = e;
                w.cal.wake_port(self.ports.units, e);
            }
        }
    }

    /// A unit event at unit edge `now` (observed by the rest of the Offload at the next pipeline
    /// edge): finish the packet in service, start the next.
    /// `rr_follows`: the round robin acts right after, in the same step.
    /// Out of line, so that the loop over due events (mostly one) does not load everything this
    /// needs before its first turn.
    #[inline(never)]
    fn unit_event(&mut self, u: usize, now: Time, rr_follows: bool, w: &mut World) {
        let next = self.finish_and_start(u, now, rr_follows, w);
        self.unit_wakes.set(u, next);
        self.refresh_zero(u);
    }

    /// Finish unit `u`'s packet in service if it is done by unit edge `now`, then start the
    /// front packet of its queue if it can. Returns the unit edge of the unit's next event: the
    /// end of its packet in service, else the first edge at which the front packet may start
    /// (its first beat there, the unit's idle time over); `Time::MAX` when only a packet
    /// entering (see `enter`) or the round robin making room (see `round_robin`) can let it
    /// go on, and they wake it.
    fn finish_and_start(&mut self, u: usize, now: Time, rr_follows: bool, w: &mut World) -> Time {
        let unit = &mut self.units[u];
        if let Some((_, _, _, end)) = unit.cur {
            if end > now {
                return end;
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
                    if pkt.next_is(self.idx) {
                        pkt.next += 1;
                    }
                    unit.done.push_back((id, bytes));
                    unit.done_bytes += bytes as u64;
                    self.set_ready(u, true);
                    // The round robin has a finished packet to take (once its link is free).
                    if !rr_follows {
                        w.cal
                            .wake_port(self.ports.units, self.rr_link.free_from(w.cal.now()));
                    }
                }
                Err(reason) => {
                    self.hold(u, -1, w);
                    w.drop_pkt(id, reason.as_str());
                }
            }
        }
        let unit = &mut self.units[u];
        let Some(front) = unit.queue.front() else {
            return Time::MAX;
        };
        if unit.done_bytes + front.bytes as u64 > self.spec.out_bytes as u64 {
            return Time::MAX; // output buffer full: wait for the round robin
        }
        let start = self
            .spec
            .clock
            .edge_at_or_after(front.head.max(unit.free_at));
        if start > now {
            return start;
        }
        let slot = unit.queue.pop_front().unwrap();
        unit.queued_bytes -= slot.bytes as u64;
        let end = self.service_end(now, slot.bytes, slot.tail);
        self.units[u].cur = Some((slot.item, slot.bytes, now, end));
        end
    }

    /// When a unit that starts a packet of `bytes` at unit edge `start`, whose last beat lands
    /// at `tail`, is done with it: ceil(8 s / w) cycles reading (it cannot read the last
    /// fragment before it has arrived), then the non-pipelined delay.
    fn service_end(&self, start: Time, bytes: u32, tail: Time) -> Time {
        let clk = self.spec.clock;
        let read_end = self
            .read_by(start, bytes)
            .max(clk.edge_at_or_after(tail) + clk.period);
        read_end + clk.cycles(self.spec.delay_cycles as u64)
    }

    /// The Traffic Arbiter's choice: the front packet of the FIFO with the highest fill level
    /// among those whose front packet has arrived (units' FIFO on a tie).
    fn arbiter_pick(&self, now: Time, w: &World) -> Option<Front> {
        match (
            Front::ready(w, self.ufifo, now),
            Front::ready(w, self.bypass, now),
        ) {
            (Some(u), Some(b)) => Some(
                if w.q[self.bypass].used_bytes() > w.q[self.ufifo].used_bytes() {
                    b
                } else {
                    u
                },
            ),
            (u, b) => u.or(b),
        }
    }
}

impl Offload {
    /// Unit events due at or before pipeline edge `now`, each at its own unit edge: the units
    /// keep their own clock, and what they did is seen by the Offload's pipeline-clock logic
    /// (and the rest of the datapath) from the next pipeline edge on, as through a clock-domain
    /// crossing.
    #[inline]
    fn unit_events(&mut self, now: Time, rr_follows: bool, w: &mut World) {
        // Most steps find none due: look no further then.
        if self.unit_wakes.first().0 <= now {
            self.due_unit_events(now, rr_follows, w);
        }
    }

    /// [`Offload::unit_events`], the earliest being due.
    #[inline(never)]
    fn due_unit_events(&mut self, now: Time, rr_follows: bool, w: &mut World) {
        loop {
            let (t, u) = self.unit_wakes.first();
            if t > now {
                break;
            }
            if std::mem::take(&mut self.lb_blocked) {
                // A unit changed: the Load Balancer may find room now.
                w.cal.wake_port(self.ports.split, now);
            }
            self.settle(u as usize, now);
            self.unit_event(u as usize, t, rr_follows, w);
        }
    }

    /// The units' port: unit events due by now, the nested round robin, and (when no late
    /// port of its own follows) the unit events the round robin made due.
    fn units_step(&mut self, now: Time, w: &mut World) {
        self.units_woken = Time::MAX;
        self.unit_events(now, true, w);
        self.round_robin(now, w);
        if self.ports.late.is_none() {
            self.unit_events(now, false, w);
        }
        self.wake_units(self.ports.units, w);
    }

    /// The late units' port of an Offload on its own.
    fn late_step(&mut self, port: usize, now: Time, w: &mut World) {
        self.unit_events(now, false, w);
        self.wake_units(port, w);
    }

    /// Credits of packets whose last beat has left the unit (full PANIC variant), then the
    /// Traffic Arbiter → `next`.
    fn arbiter(&mut self, now: Time, w: &mut World, next: &mut Next) {
        while let Some(&(t, u)) = self.returns.front() {
            if t > now {
                break;
            }
            self.returns.pop_front();
            self.hold(u, -1, w);
        }
        if self.arb_link.is_free(now) {
            if let Some(f) = self.arbiter_pick(now, w) {
                let beats = self.spec.descriptor_beats;
                send_front(now, w, f, &mut self.arb_link, beats, next);
            }
        }
        w.cal.busy_until(self.ports.arb, self.arb_link.busy_until());
        if let Some(&(r, _)) = self.returns.front() {
            w.cal.wake_port(self.ports.arb, r);
        }
        let this = &*self;
        let pick = |w: &World, t: Time| this.arbiter_pick(t, w);
        let inputs = [this.bypass, this.ufifo];
        wake_send(w, this.ports.arb, &this.arb_link, inputs, pick, next);
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
                        w.cal.wake_port(self.ports.arb, tr.tail);
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
                    // The unit may go on (its output buffer has room, its idle time starts) if
                    // a packet waits in its queue; one in service has its event at its end.
                    let unit = &self.units[u];
                    if unit.cur.is_none() && !unit.queue.is_empty() {
                        let t = unit.free_at.max(now);
                        self.wake_unit(u, t);
                    }
                }
            }
        }
        if let Some(u) = self.next_ready() {
            if w.room(self.ufifo, self.units[u].done.front().unwrap().1) {
                let t = self.rr_link.free_from(now + 1);
                w.cal.wake_port(self.ports.units, t);
            }
        }
    }

    /// The Traffic Splitter's decision for packet `item` of `bytes` at `now`: the bypass FIFO,
    /// a unit picked by the Load Balancer, or (PANIC full variant, no credit) a detour; `None`
    /// when that destination cannot take it now.
    fn route(&mut self, now: Time, w: &mut World, item: PktId, bytes: u32) -> Option<Route> {
        let p = &w.pkts[item];
        if !self.wants(p) {
            w.room(self.bypass, bytes)
                .then_some(Route::Fifo(self.bypass))
        } else if !self.detour {
            let target = self.steer(now, bytes);
            self.lb_blocked = target.is_none();
            target.map(Route::Unit)
        } else if self.admits(p, w) {
            // PANIC full variant: its one unit.
            self.lb_blocked = false;
            Some(Route::Unit(0))
        } else {
            // No credit: the whole packet goes back to the scheduler.
            w.room(self.bypass, bytes).then_some(Route::Detour)
        }
    }

    /// Packet `item` of `bytes` enters the Traffic Splitter over transfer `tr`, bound for
    /// `route` (from [`Offload::route`] at the same instant).
    fn enter(
        &mut self,
        now: Time,
        w: &mut World,
        route: Route,
        item: PktId,
        bytes: u32,
        tr: Transfer,
    ) {
        let u = match route {
            Route::Fifo(to) => return w.push(to, now, item, bytes, tr.head, tr.tail),
            Route::Detour => {
                w.pkts[item].detour = true;
                w.detours += 1;
                return w.push(self.bypass, now, item, bytes, tr.head, tr.tail);
            }
            Route::Unit(u) => u,
        };
        self.sticky_unit = u;
        if std::mem::take(&mut w.pkts[item].credited) {
            // The scheduler took this unit's credit at dispatch: hand it back so that `hold`
            // takes it again.
            w.module_free_credits[self.credit_id] += 1;
        }
        self.settle(u, now);
        let unit = &mut self.units[u];
        unit.queued_bytes += bytes as u64;
        let idle = unit.cur.is_none() && unit.queue.is_empty();
        // Nothing can change when an idle unit starts this packet (its first edge once the
        // first beat is there and its idle time is over) if its output buffer has room, and no
        // hand-over of a finished packet can still move its idle time.
        if idle
            && unit.done_bytes + bytes as u64 <= self.spec.out_bytes as u64
            && (self.spec.idle_cycles == 0 || unit.done.is_empty())
        {
            let clk = self.spec.clock;
            let start = clk.edge_at_or_after(tr.head.max(unit.free_at));
            let end = self.service_end(start, bytes, tr.tail);
            let unit = &mut self.units[u];
            unit.cur = Some((item, bytes, start, end));
            unit.ahead = Some((self.pclk.edge_at_or_after(start), bytes));
            self.unit_wakes.arm(u, end);
            self.wake_units(self.ports.split, w);
        } else {
            unit.queue.push_back(Slot {
                item,
                bytes,
                head: tr.head,
                tail: tr.tail,
                enq: now,
            });
            if idle {
                let t = tr.head.max(unit.free_at);
                self.wake_unit(u, t);
                self.wake_units(self.ports.split, w);
            }
        }
        self.refresh_zero(u);
        self.hold(u, 1, w);
    }

    /// Whether the feeder should wake for packet `item`: the Splitter might take it then.
    /// A packet for the Load Balancer is tried unless the Load Balancer has refused a packet
    /// since the last unit event and has no unit for this one either. Then only a unit event
    /// (which wakes the feeder), a start ahead being seen (which frees queue room) or a unit
    /// reading on (which lowers its counter, so that another unit may become the least
    /// loaded) can change that: the feeder is woken for the last two here.
    fn may_take(&mut self, w: &mut World, item: PktId, bytes: u32) -> bool {
        let p = &w.pkts[item];
        if !self.wants(p) {
            w.room(self.bypass, bytes)
        } else if self.detour {
            self.admits(p, w) || w.room(self.bypass, bytes)
        } else {
            let now = w.cal.now();
            if !self.lb_blocked || self.steer(now, bytes).is_some() {
                return true;
            }
            if let Some(t) = self.units.iter().filter_map(|u| u.ahead).map(|a| a.0).min() {
                w.cal.wake_port(self.ports.split, t);
            }
            if self.spec.steering == Steering::LeastLoaded && self.any_reading(now) {
                w.cal.wake_port(self.ports.split, now + 1);
            }
            false
        }
    }

    /// Whether some unit's Load Balancer counter is falling at `now`: its packet in service,
    /// its start seen, is still being read.
    fn any_reading(&self, now: Time) -> bool {
        self.units.iter().any(|unit| {
            unit.cur.is_some_and(|(_, bytes, start, _)| {
                unit.ahead.is_none_or(|(seen, _)| seen <= now) && now < self.read_by(start, bytes)
            })
        })
    }

    /// The Traffic Splitter of an Offload on its own: its input FIFO → bypass or units.
    fn splitter(&mut self, now: Time, w: &mut World) {
        let (inp, _) = self.io.expect("an Offload on its own has an input FIFO");
        let mut link = self
            .split_link
            .take()
            .expect("an Offload on its own has a link");
        if let Some(f) = Front::ready(w, inp, now) {
            send_front(now, w, f, &mut link, 0, &mut Next::Offload(self));
        }
        w.cal.busy_until(self.ports.split, link.busy_until());
        let pick = move |w: &World, t: Time| Front::ready(w, inp, t);
        let port = self.ports.split;
        wake_send(w, port, &link, [inp, inp], pick, &mut Next::Offload(self));
        self.split_link = Some(link);
    }
}

impl Component<World> for Offload {
    // An Offload on its own (PANIC). Every port acts at pipeline edges; the units' events, at
    // their own edges, are taken up at the next pipeline edge (see `unit_events`).
    fn ports(&self) -> Vec<Port> {
        let (inp, out) = self
            .io
            .expect("an Offload on its own has an input and an output");
        let p = || Port::new(self.pclk);
        let mut ports = vec![p(); 4];
        ports[ALONE.arb] = p().reads(&[self.bypass, self.ufifo]).writes(&[out]);
        ports[ALONE.units] = p().writes(&[self.ufifo]);
        ports[ALONE.split] = p().reads(&[inp]).writes(&[self.bypass]);
        ports
    }

    fn step(&mut self, port: usize, now: Time, w: &mut World) {
        match port {
            0 => {
                let out = self.io.unwrap().1;
                self.arbiter(now, w, &mut Next::Fifo(out))
            }
            1 => self.units_step(now, w),
            2 => self.splitter(now, w),
            _ => self.late_step(port, now, w),
        }
    }
}

/// FlexPipe's (and StaticPipe's) chain as one component: the Ingress Traffic Controller, the
/// Offloads, directly connected, and the Egress Traffic Controller.
///
/// Ports, consumers first: for each Offload from the last to the first its Traffic Arbiter
/// (which hands over to the next Offload's Splitter, or to the Egress Traffic Controller) and
/// its units (events, round robin, events again); then the Ingress Traffic Controller.
pub struct Pipeline {
    ingress: IngressTc,
    /// In physical order.
    offloads: Vec<Offload>,
    egress: EgressTc,
}

/// Ports per Offload in a [`Pipeline`]: the arbiter, the units.
const PER_OFFLOAD: usize = 2;

impl Pipeline {
    pub fn new(ingress: IngressTc, mut offloads: Vec<Offload>, egress: EgressTc) -> Pipeline {
        let n = offloads.len();
        for (i, o) in offloads.iter_mut().enumerate() {
            let base = (n - 1 - i) * PER_OFFLOAD;
            o.io = None;
            o.split_link = None;
            o.ports = Ports {
                arb: base,
                units: base + 1,
                // The previous Offload's arbiter, or the Ingress Traffic Controller.
                split: if i == 0 {
                    n * PER_OFFLOAD
                } else {
                    base + PER_OFFLOAD
                },
                late: None,
            };
        }
        Pipeline {
            ingress,
            offloads,
            egress,
        }
    }

    pub fn offloads(&self) -> &[Offload] {
        &self.offloads
    }
}

impl Component<World> for Pipeline {
    fn ports(&self) -> Vec<Port> {
        let n = self.offloads.len();
        let mut ports = Vec::with_capacity(n * PER_OFFLOAD + 1);
        for i in (0..n).rev() {
            let o = &self.offloads[i];
            let p = || Port::new(o.pclk);
            let out: Vec<FifoId> = match self.offloads.get(i + 1) {
                Some(next) => vec![next.bypass],
                None => vec![self.egress.dma, self.egress.recirc],
            };
            ports.push(p().reads(&[o.bypass, o.ufifo]).writes(&out));
            ports.push(p().writes(&[o.ufifo]));
        }
        let ing = &self.ingress;
        ports.push(
            Port::new(ing.link.clock)
                .reads(&[ing.new, ing.recirc])
                .writes(&[self.offloads[0].bypass]),
        );
        ports
    }

    fn step(&mut self, port: usize, now: Time, w: &mut World) {
        let n = self.offloads.len();
        if port == n * PER_OFFLOAD {
            let next = &mut Next::Offload(&mut self.offloads[0]);
            return self.ingress.step(port, now, w, next);
        }
        let i = n - 1 - port / PER_OFFLOAD;
        if port.is_multiple_of(PER_OFFLOAD) {
            let (this, rest) = self.offloads.split_at_mut(i + 1);
            let mut next = match rest.first_mut() {
                Some(o) => Next::Offload(o),
                None => Next::Egress(&self.egress),
            };
            this[i].arbiter(now, w, &mut next);
        } else {
            self.offloads[i].units_step(now, w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The tree against a plain minimum over per-unit times, through random `set`s and `arm`s
    /// (times repeat, so ties are frequent; the lower unit wins them).
    #[test]
    fn unit_wakes_hold_the_earliest_event() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut rand = |n: u64| rng.gen_range(0..n);
        for n in 1..=13 {
            let mut tree = UnitWakes::new(n);
            let mut plain = vec![Time::MAX; n];
            for _ in 0..2000 {
                let u = rand(n as u64) as usize;
                let t = if rand(8) == 0 { Time::MAX } else { rand(20) };
                if rand(2) == 0 {
                    tree.set(u, t);
                    plain[u] = t;
                } else {
                    tree.arm(u, t);
                    plain[u] = plain[u].min(t);
                }
                let (t_min, u_min) = (0..n).map(|u| (plain[u], u)).min().unwrap();
                let (t_tree, u_tree) = tree.first();
                assert_eq!(t_tree, t_min, "{n} units: {plain:?}");
                if t_min != Time::MAX {
                    assert_eq!(u_tree as usize, u_min, "{n} units: {plain:?}");
                }
            }
        }
    }
}
