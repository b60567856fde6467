//! One Offload (Fig. 2), wired from its blocks: Traffic Splitter → Load Balancer (or another
//! [`Steer`]ing, such as PANIC's credits) → Offload Units → nested round robin → Traffic
//! Arbiter. Each block keeps its own state; this file only connects them, and says in which
//! order they act at every pipeline edge.
//!
//! An Offload acts through these ports, in this order: the Traffic Arbiter; the units' events
//! (finish a packet, start the next) with the nested round robin right after them; and once
//! more the units' events, for a unit the round robin freed in this very cycle (on its own,
//! that is a port after its Traffic Splitter's). The arbiter comes first because nothing it
//! reads (its two FIFOs, the next stage) depends on this Offload's units, and the round robin
//! after the arbiter because it fills the FIFO the arbiter empties.
//!
//! In FlexPipe the Offloads are parts of one [`super::Pipeline`]; a PANIC compute engine is an
//! Offload on its own ([`Offload::alone`]), a component fed from a FIFO by a Splitter port of
//! its own.

use nicsim_kernel::{Clock, Component, Link, Port, Time, Transfer};

use super::arbiter::Arbiter;
use super::handshake::{send_front, wake_send, Front, Next, Receiver, Route};
use super::round_robin::RoundRobin;
use super::splitter::Splitter;
use super::units::{Finished, Ports, UnitSpec, Units};
use crate::packet::PktId;
use crate::world::{FifoId, World};

/// Which unit takes a packet the Offload processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// This unit.
    Unit(usize),
    /// None can now; a unit event may change that.
    Wait,
    /// The unit refuses it: it goes back out through the bypass path.
    Refuse,
}

/// How a packet the Offload processes finds its unit, and what else follows the units'
/// holdings: FlexPipe's Load Balancer ([`super::LoadBalancer`]) or PANIC's credits
/// (`panic::credits`). Every method but `choose` has a default that does nothing.
pub trait Steer {
    /// The unit for packet `item` of `bytes` at pipeline edge `now`.
    fn choose(&self, now: Time, units: &Units, w: &World, item: PktId, bytes: u32) -> Choice;
    /// Whether `choose` may answer [`Choice::Refuse`].
    fn may_refuse(&self) -> bool {
        false
    }
    /// Whether the answer may change at the next edge as units read on (with no event).
    fn falling(&self, _now: Time, _units: &Units) -> bool {
        false
    }
    /// Unit `u`'s queue or packet in service changed.
    fn unit_changed(&mut self, _units: &Units, _u: usize) {}
    /// Unit `u` took packet `item`.
    fn took(&mut self, _u: usize, _item: PktId, _w: &mut World) {}
    /// The packet `item` was refused; it goes back out through the bypass path.
    fn refused(&mut self, _item: PktId, _w: &mut World) {}
    /// Unit `u` handed a packet over, its last beat leaving at `tail`: the Traffic Arbiter's
    /// port is woken at the time returned, if any (see [`Steer::due`]).
    fn handed_over(&mut self, _u: usize, _tail: Time, _w: &mut World) -> Option<Time> {
        None
    }
    /// Unit `u` dropped its packet.
    fn dropped(&mut self, _u: usize, _w: &mut World) {}
    /// At the Traffic Arbiter's step at `now`: settle what is due; when the arbiter's port
    /// must be woken next for it.
    fn due(&mut self, _now: Time, _w: &mut World) -> Option<Time> {
        None
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

/// One Offload: its blocks and how they are wired.
pub struct Offload<S> {
    /// Its name in the configuration.
    pub name: String,
    pclk: Clock,
    splitter: Splitter,
    steer: S,
    units: Units,
    rr: RoundRobin,
    arbiter: Arbiter,
    pub(super) ports: Ports,
    /// An Offload on its own (PANIC): the FIFO its Traffic Splitter reads over a link of its
    /// own, and the FIFO its Traffic Arbiter writes. In a [`super::Pipeline`] its neighbours
    /// feed it and take from it.
    io: Option<(FifoId, FifoId, Link)>,
    /// On its own: cycles its input link takes nothing after each packet (a PANIC compute
    /// engine's input port).
    rx_gap_cycles: u64,
}

impl<S: Steer> Offload<S> {
    /// The Offload at position `idx` in the physical order, of `n_units` units with a pipeline
    /// of (width, clock), steered by `steer`; its Traffic Splitter puts bypassing packets into
    /// `bypass` and its round robin fills `ufifo`. It is a component of its own once given its
    /// input and output ([`Offload::alone`]); otherwise a [`super::Pipeline`] connects it to
    /// its neighbours.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        idx: u8,
        name: String,
        n_units: u32,
        spec: UnitSpec,
        pipe: (u32, Clock),
        process_all: bool,
        [bypass, ufifo]: [FifoId; 2],
        steer: S,
    ) -> Offload<S> {
        let link = Link::new(pipe.0, pipe.1);
        Offload {
            name,
            pclk: pipe.1,
            splitter: Splitter {
                idx,
                process_all,
                bypass,
                blocked: false,
                lanes: Vec::new(),
            },
            steer,
            units: Units::new(n_units, spec, pipe.1),
            rr: RoundRobin::new(link.clone(), ufifo),
            arbiter: Arbiter {
                link,
                bypass,
                units_out: ufifo,
                classes: None,
                lanes: Vec::new(),
                gap_cycles: 0,
            },
            ports: ALONE,
            io: None,
            rx_gap_cycles: 0,
        }
    }

    /// With priority classes: per class c ≥ 1 a bypass FIFO and a units' FIFO of its own
    /// (`lanes[c - 1]`; class 0 keeps the Offload's), and a Traffic Arbiter that chooses
    /// between classes by `sched`.
    pub fn with_classes(
        mut self,
        sched: super::qos::ClassSched,
        lanes: &[[FifoId; 2]],
    ) -> Offload<S> {
        let all: Vec<[FifoId; 2]> = std::iter::once([self.splitter.bypass, self.rr.out])
            .chain(lanes.iter().copied())
            .collect();
        self.splitter.lanes = all.iter().map(|l| l[0]).collect();
        self.rr.lanes = all.iter().map(|l| l[1]).collect();
        self.arbiter.lanes = all;
        self.arbiter.classes = Some(sched);
        self
    }

    /// A component of its own: its Traffic Splitter reads `inp` (over a link of its own), its
    /// Traffic Arbiter writes `out`.
    pub fn alone(mut self, inp: FifoId, out: FifoId) -> Offload<S> {
        self.io = Some((inp, out, self.arbiter.link.clone()));
        self.ports = ALONE;
        self
    }

    /// On its own, with ports that leave gaps between packets (a PANIC compute engine): its
    /// input link takes nothing for `rx_cycles` after each packet, its output link sends
    /// nothing for `tx_cycles`.
    pub fn with_port_gaps(mut self, rx_cycles: u64, tx_cycles: u64) -> Offload<S> {
        self.rx_gap_cycles = rx_cycles;
        self.arbiter.gap_cycles = tx_cycles;
        self
    }

    /// Part of a [`super::Pipeline`], acting through `ports`.
    pub(super) fn in_pipeline(&mut self, ports: Ports) {
        self.io = None;
        self.ports = ports;
    }

    /// Its position in the physical order.
    pub fn idx(&self) -> u8 {
        self.splitter.idx
    }

    /// How many units it has.
    pub fn n_units(&self) -> usize {
        self.units.len()
    }

    /// Its bypass FIFOs (the Traffic Splitter's output for packets not processed here): one,
    /// or one per class.
    pub(super) fn bypass(&self) -> Vec<FifoId> {
        if self.splitter.lanes.is_empty() {
            vec![self.splitter.bypass]
        } else {
            self.splitter.lanes.clone()
        }
    }

    /// Its units' FIFOs (the round robin's output): one, or one per class.
    pub(super) fn units_out(&self) -> Vec<FifoId> {
        if self.rr.lanes.is_empty() {
            vec![self.rr.out]
        } else {
            self.rr.lanes.clone()
        }
    }

    /// Its pipeline clock.
    pub(super) fn clock(&self) -> Clock {
        self.pclk
    }

    /// Unit events due at or before pipeline edge `now`, each at its own unit edge: the units
    /// keep their own clock, and what they did is seen by the Offload's pipeline-clock logic
    /// (and the rest of the datapath) from the next pipeline edge on, as through a clock-domain
    /// crossing. `rr_follows`: the round robin acts right after, in the same step.
    #[inline]
    fn unit_events(&mut self, now: Time, rr_follows: bool, w: &mut World) {
        // Most steps find none due: look no further then.
        if self.units.wakes.first().0 <= now {
            self.due_unit_events(now, rr_follows, w);
        }
    }

    /// [`Offload::unit_events`], the earliest being due.
    #[inline(never)]
    fn due_unit_events(&mut self, now: Time, rr_follows: bool, w: &mut World) {
        loop {
            let (t, u) = self.units.wakes.first();
            if t > now {
                break;
            }
            if std::mem::take(&mut self.splitter.blocked) {
                // A unit changed: the Load Balancer may find room now.
                w.cal.wake_port(self.ports.split, now);
            }
            self.units.settle(u as usize, now);
            self.unit_event(u as usize, t, rr_follows, w);
        }
    }

    /// A unit event at unit edge `now`: finish the packet in service, start the next.
    /// Out of line, so that the loop over due events (mostly one) does not load everything this
    /// needs before its first turn.
    #[inline(never)]
    fn unit_event(&mut self, u: usize, now: Time, rr_follows: bool, w: &mut World) {
        let next = match self.units.finish(u, now, self.splitter.idx, w) {
            Finished::Busy(end) => end,
            finished => {
                match finished {
                    // The round robin has a finished packet to take (once its link is free).
                    Finished::Done if !rr_follows => {
                        let t = self.rr.link.free_from(w.cal.now());
                        w.cal.wake_port(self.ports.units, t);
                    }
                    Finished::Dropped(id, reason) => {
                        self.steer.dropped(u, w);
                        w.drop_pkt(id, reason);
                    }
                    _ => {}
                }
                self.units.start(u, now)
            }
        };
        self.units.wakes.set(u, next);
        self.steer.unit_changed(&self.units, u);
    }

    /// The units' port: unit events due by now, the nested round robin, and (when no late
    /// port of its own follows) the unit events the round robin made due.
    pub(super) fn units_step(&mut self, now: Time, w: &mut World) {
        self.units.woken = Time::MAX;
        self.unit_events(now, true, w);
        self.round_robin(now, w);
        if self.ports.late.is_none() {
            self.unit_events(now, false, w);
        }
        self.units.wake_ports(self.ports.units, self.ports, w);
    }

    /// The late units' port of an Offload on its own.
    fn late_step(&mut self, port: usize, now: Time, w: &mut World) {
        self.unit_events(now, false, w);
        self.units.wake_ports(port, self.ports, w);
    }

    /// The nested round robin: a unit that finished a whole packet → units' FIFO.
    #[inline]
    fn round_robin(&mut self, now: Time, w: &mut World) {
        if let Some((u, tail)) = self.rr.hand_over(now, &mut self.units, w) {
            if let Some(t) = self.steer.handed_over(u, tail, w) {
                w.cal.wake_port(self.ports.arb, t);
            }
        }
        self.rr.wake(self.ports.units, now, &self.units, w);
    }

    /// What is due for the steering, then the Traffic Arbiter → `next`.
    pub(super) fn arbiter<R: Receiver>(&mut self, now: Time, w: &mut World, next: &mut Next<R>) {
        let due = self.steer.due(now, w);
        self.arbiter.step(self.ports.arb, now, w, next, due);
    }

    /// The Traffic Splitter of an Offload on its own: its input FIFO → bypass or units.
    fn split_step(&mut self, now: Time, w: &mut World) {
        let (inp, out, mut link) = self
            .io
            .take()
            .expect("an Offload on its own has an input FIFO");
        if let Some(f) = Front::ready(w, inp, now) {
            if send_front(now, w, f, &mut link, &mut Next::Offload(self)) {
                link.hold(self.rx_gap_cycles);
            }
        }
        w.cal.busy_until(self.ports.split, link.busy_until());
        let pick = move |w: &World, t: Time| Front::ready(w, inp, t);
        let port = self.ports.split;
        wake_send(w, port, &link, [inp, inp], pick, &mut Next::Offload(self));
        self.io = Some((inp, out, link));
    }
}

/// The Traffic Splitter, as the previous block's sender sees it.
impl<S: Steer> Receiver for Offload<S> {
    /// The Traffic Splitter's decision for packet `item` of `bytes` at `now`: the bypass FIFO,
    /// the unit the steering picks, or back out through the bypass path if the unit refuses
    /// it; `None` when that destination cannot take it now.
    #[inline]
    fn route(&mut self, now: Time, w: &mut World, item: PktId, bytes: u32) -> Option<Route> {
        let p = &w.pkts[item];
        if !self.splitter.wants(p) {
            return self
                .splitter
                .bypass_room(w, p, bytes)
                .then_some(Route::Fifo(self.splitter.bypass_of(p)));
        }
        match self.steer.choose(now, &self.units, w, item, bytes) {
            Choice::Unit(u) => {
                self.splitter.blocked = false;
                Some(Route::Unit(u))
            }
            Choice::Wait => {
                self.splitter.blocked = true;
                None
            }
            Choice::Refuse => self
                .splitter
                .bypass_room(w, &w.pkts[item], bytes)
                .then_some(Route::Refused),
        }
    }

    /// Packet `item` of `bytes` enters the Traffic Splitter over transfer `tr`, bound for
    /// `route` (from [`Offload::route`] at the same instant).
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
        let u = match route {
            Route::Fifo(to) => return w.push(to, now, item, bytes, tr.head, tr.tail),
            Route::Refused => {
                self.steer.refused(item, w);
                let bypass = self.splitter.bypass_of(&w.pkts[item]);
                return w.push(bypass, now, item, bytes, tr.head, tr.tail);
            }
            Route::Unit(u) => u,
        };
        self.units.enter(u, now, item, bytes, tr, self.ports, w);
        self.steer.unit_changed(&self.units, u);
        self.steer.took(u, item, w);
    }

    /// Whether the feeder should wake for packet `item`: the Splitter might take it then.
    /// A packet for the units is tried unless the Splitter has found no unit for a packet
    /// since the last unit event and has none for this one either (a steering that may refuse
    /// decides at once). Then only a unit event (which wakes the feeder), a start ahead being
    /// seen (which frees queue room) or a unit reading on (which lowers its Load Balancer
    /// counter, so that another unit may become the least loaded) can change that: the
    /// feeder is woken for the last two here.
    #[inline]
    fn may_take(&mut self, w: &mut World, item: PktId, bytes: u32) -> bool {
        let p = &w.pkts[item];
        if !self.splitter.wants(p) {
            return self.splitter.bypass_room(w, p, bytes);
        }
        if !self.splitter.blocked && !self.steer.may_refuse() {
            return true;
        }
        let now = w.cal.now();
        match self.steer.choose(now, &self.units, w, item, bytes) {
            Choice::Unit(_) => true,
            Choice::Refuse => self.splitter.bypass_room(w, &w.pkts[item], bytes),
            Choice::Wait => {
                if let Some(t) = self.units.first_ahead() {
                    w.cal.wake_port(self.ports.split, t);
                }
                if self.steer.falling(now, &self.units) {
                    w.cal.wake_port(self.ports.split, now + 1);
                }
                false
            }
        }
    }
}

impl<S: Steer> Component<World> for Offload<S> {
    // An Offload on its own (PANIC). Every port acts at pipeline edges; the units' events, at
    // their own edges, are taken up at the next pipeline edge (see `unit_events`).
    fn ports(&self) -> Vec<Port> {
        let (inp, out, _) = self
            .io
            .as_ref()
            .expect("an Offload on its own has an input and an output");
        let (bypass, ufifo) = (self.splitter.bypass, self.rr.out);
        let p = || Port::new(self.pclk);
        let mut ports = vec![p(); 4];
        ports[ALONE.arb] = p().reads(&[bypass, ufifo]).writes(&[*out]);
        ports[ALONE.units] = p().writes(&[ufifo]);
        ports[ALONE.split] = p().reads(&[*inp]).writes(&[bypass]);
        ports
    }

    fn step(&mut self, port: usize, now: Time, w: &mut World) {
        match port {
            0 => {
                let out = self.io.as_ref().expect("an Offload on its own").1;
                self.arbiter(now, w, &mut Next::<Self>::Fifo(out))
            }
            1 => self.units_step(now, w),
            2 => self.split_step(now, w),
            _ => self.late_step(port, now, w),
        }
    }
}
