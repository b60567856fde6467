//! The run loop: ports on a calendar.
//!
//! A model is a list of [`Component`]s, each made of one or more *ports*: pieces of cycle-step
//! logic on one clock (an Offload's arbiter, its round robin, its splitter). At an edge of its
//! clock a port's `step` does what the hardware would do in that cycle. At every instant the
//! ports act in one fixed global order (models list consumers before producers, so room freed
//! in a cycle is seen by the producer in the same cycle).
//!
//! Two modes give identical results:
//! - [`Mode::Stepped`] steps every port at every edge of its clock: a plain cycle-level
//!   simulation, the reference.
//! - [`Mode::Skip`] steps a port only at instants it has been *woken* for, so idle cycles cost
//!   nothing. A port is woken by itself, for work it knows is pending (its link is busy until
//!   t, its front packet's first beat lands at t); by a FIFO, which wakes its readers when a
//!   packet lands in it while it is empty (or at any push, when the reader asked for that),
//!   its writers when a packet leaves it after one of
//!   them found no room, and its watchers on both; and by another port, explicitly, for shared
//!   state that is not a FIFO ([`Calendar::touched`]).
//!
//! The one rule that makes skipping exact: a wake-up for an instant at which the port has
//! already had its turn (it comes earlier in the order, or it is the port being stepped) moves
//! to the port's next edge, which is exactly when the stepped simulation would act on the
//! change. So the two modes agree as long as every port is woken whenever its step could do
//! something; the models' tests compare them.
//!
//! The calendar ([`Wakes`]) holds one pending wake-up per port, ordered by time and then by
//! port order, so taking the earliest gives both the next instant and the order within it.

use crate::fifoset::FifoId;
use crate::time::{Clock, Time};
use crate::wakes::Wakes;

/// One port of a component: its clock and the FIFOs it takes from, puts into, or only looks
/// at (the calendar's resources are the model's FIFOs, named by their [`FifoId`]).
#[derive(Debug, Clone)]
pub struct Port {
    /// The clock at whose edges the port steps.
    pub clock: Clock,
    /// Woken when one of these becomes non-empty, at the first beat of the packet.
    pub reads: Vec<FifoId>,
    /// Woken when a packet leaves one of these after a writer found no room.
    pub writes: Vec<FifoId>,
    /// Woken at any change of these.
    pub watches: Vec<FifoId>,
}

impl Port {
    /// A port on `clock` that reads, writes and watches no FIFO yet.
    pub fn new(clock: Clock) -> Port {
        Port {
            clock,
            reads: Vec::new(),
            writes: Vec::new(),
            watches: Vec::new(),
        }
    }
    /// Adds FIFOs the port takes from. A FIFO has at most one reader.
    pub fn reads(mut self, r: &[FifoId]) -> Port {
        self.reads.extend_from_slice(r);
        self
    }
    /// Adds FIFOs the port puts into. A FIFO has at most one writer.
    pub fn writes(mut self, r: &[FifoId]) -> Port {
        self.writes.extend_from_slice(r);
        self
    }
    /// Adds FIFOs the port only looks at; a FIFO may have any number of watchers.
    pub fn watches(mut self, r: &[FifoId]) -> Port {
        self.watches.extend_from_slice(r);
        self
    }
}

/// A part of a model: one or more ports that the run loop steps, acting on the shared world `W`.
pub trait Component<W> {
    /// The component's ports, in the order in which they act at an instant.
    fn ports(&self) -> Vec<Port>;
    /// Port `port` acts at `now`, an edge of its clock.
    fn step(&mut self, port: usize, now: Time, world: &mut W);
}

/// The shared world carries the calendar, so that components (and the world's FIFOs) can
/// wake ports while they act.
pub trait HasCalendar {
    /// The calendar, to request wake-ups while a port acts.
    fn cal(&mut self) -> &mut Calendar;
    /// The calendar, read-only (the current instant, the wake-ups requested so far).
    fn cal_ref(&self) -> &Calendar;
}

/// `impl HasCalendar` for a world type that keeps its calendar in its field `cal`, as every
/// model's world does: `nicsim_kernel::has_calendar!(World);`.
#[macro_export]
macro_rules! has_calendar {
    ($world:ty) => {
        impl $crate::HasCalendar for $world {
            #[inline]
            fn cal(&mut self) -> &mut $crate::Calendar {
                &mut self.cal
            }
            #[inline]
            fn cal_ref(&self) -> &$crate::Calendar {
                &self.cal
            }
        }
    };
}

/// How the run loop advances; a model's config names it as `mode = "skip" | "stepped"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Step every port at every edge of its clock (for cross-checking).
    Stepped,
    /// Jump from one wake-up to the next (the default).
    #[default]
    Skip,
}

/// The work a run did, as reported by [`Engine::stats`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RunStats {
    /// Instants visited.
    pub instants: u64,
    /// `step` calls made.
    pub steps: u64,
    /// Wake-ups requested.
    pub wakes: u64,
}

/// Lists of ports per FIFO (compressed rows, indexed by [`FifoId::index`]).
#[derive(Debug, Clone, Default)]
struct Lists {
    start: Vec<u32>,
    items: Vec<u32>,
}

impl Lists {
    fn build(n: usize, pairs: &mut [(usize, u32)]) -> Lists {
        pairs.sort_unstable();
        let mut start = vec![0u32; n + 1];
        for &(r, _) in pairs.iter() {
            start[r + 1] += 1;
        }
        for r in 0..n {
            start[r + 1] += start[r];
        }
        Lists {
            start,
            items: pairs.iter().map(|&(_, a)| a).collect(),
        }
    }
    #[inline]
    fn get(&self, r: usize) -> &[u32] {
        match (self.start.get(r), self.start.get(r + 1)) {
            (Some(&a), Some(&b)) => &self.items[a as usize..b as usize],
            _ => &[],
        }
    }
}

/// No port (a FIFO without a reader or writer).
const NOBODY: u32 = u32::MAX;

/// Pending wake-ups, the current instant and port, and who is woken by which FIFO.
#[derive(Debug, Clone)]
pub struct Calendar {
    now: Time,
    /// The port being stepped, and the first port of its component.
    cur: usize,
    base: usize,
    clocks: Vec<Clock>,
    wakes: Wakes,
    /// The earliest wake-up the port being stepped asked for itself (rounded to its clock
    /// once, after the step).
    own: Time,
    /// Per port: a packet landing in one of its FIFOs wakes it no earlier than this (see
    /// [`Calendar::busy_until`]).
    not_before: Vec<Time>,
    /// Per FIFO: the port that reads it and the port that writes it (a FIFO connects
    /// two ports), and the ports that watch it.
    reader: Vec<u32>,
    writer: Vec<u32>,
    watchers: Lists,
    requested: u64,
}

impl Default for Calendar {
    fn default() -> Self {
        Calendar {
            now: Time::ZERO,
            cur: 0,
            base: 0,
            clocks: Vec::new(),
            wakes: Wakes::new(0, 1),
            own: Time::MAX,
            not_before: Vec::new(),
            reader: Vec::new(),
            writer: Vec::new(),
            watchers: Lists::default(),
            requested: 0,
        }
    }
}

impl Calendar {
    /// The current instant.
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Wake port `p` (global index) at the first edge of its clock at or after `t`; an instant
    /// at which `p` has already had its turn becomes its next edge.
    #[inline(always)]
    pub fn wake(&mut self, p: usize, t: Time) {
        self.requested += 1;
        if p == self.cur {
            // The port being stepped: rounded once, after its step.
            self.own = self.own.min(t);
            return;
        }
        let e = self.round(p, t.max(self.now));
        self.wakes.add(p, e);
    }

    /// The first edge of port `p`'s clock at or after `t` (≥ now), or the next edge if that is
    /// now and `p` has already had its turn.
    #[inline(always)]
    fn round(&self, p: usize, t: Time) -> Time {
        let clk = &self.clocks[p];
        let e = clk.edge_at_or_after(t);
        if e == self.now && p <= self.cur {
            e + clk.period
        } else {
            e
        }
    }

    /// Wake port `port` of the component being stepped.
    #[inline]
    pub fn wake_port(&mut self, port: usize, t: Time) {
        self.wake(self.base + port, t);
    }

    /// Port `port` of the component being stepped cannot act on an arriving packet before
    /// `t` (its link is busy until then, and everything it does with a packet needs that
    /// link): a packet landing in its FIFO wakes it then, not at the packet's first beat.
    #[inline]
    pub fn busy_until(&mut self, port: usize, t: Time) {
        self.not_before[self.base + port] = t;
    }

    /// A packet whose first beat lands at `head` was put into FIFO `f`; `wake_reader`: it
    /// was empty before, or its reader waits for any push.
    #[inline]
    pub fn pushed(&mut self, f: FifoId, head: Time, wake_reader: bool) {
        let r = f.index();
        if wake_reader {
            if let Some(&p) = self.reader.get(r).filter(|&&p| p != NOBODY) {
                let t = head.max(self.not_before[p as usize]);
                self.wake(p as usize, t);
            }
        }
        self.wake_watchers(r);
    }

    /// A packet left FIFO `f`; `wake_writer`: its writer found no room in it and is
    /// waiting for this.
    #[inline(always)]
    pub fn popped(&mut self, f: FifoId, wake_writer: bool) {
        let r = f.index();
        if wake_writer {
            self.wake_writer(r);
        }
        self.wake_watchers(r);
    }

    /// The writer of FIFO `r` waits for room in it: wake it now.
    fn wake_writer(&mut self, r: usize) {
        if let Some(&p) = self.writer.get(r).filter(|&&p| p != NOBODY) {
            self.wake(p as usize, self.now);
        }
    }

    /// FIFO `f` (or state that goes with it, such as credits) changed: wake everyone on it.
    pub fn touched(&mut self, f: FifoId) {
        let r = f.index();
        for list in [&self.reader, &self.writer] {
            if let Some(&p) = list.get(r).filter(|&&p| p != NOBODY) {
                let e = self.round(p as usize, self.now);
                if p as usize == self.cur {
                    self.own = self.own.min(self.now);
                } else {
                    self.wakes.add(p as usize, e);
                }
            }
        }
        self.wake_watchers(r);
    }

    #[inline(always)]
    fn wake_watchers(&mut self, r: usize) {
        if !self.watchers.items.is_empty() {
            self.wake_watchers_of(r);
        }
    }

    fn wake_watchers_of(&mut self, r: usize) {
        for i in 0..self.watchers.get(r).len() {
            let p = self.watchers.get(r)[i] as usize;
            self.wake(p, self.now);
        }
    }
}

/// Where a port belongs: its component, its index within it, and the component's first port.
#[derive(Debug, Clone, Copy)]
struct Owner {
    comp: u32,
    port: u32,
    base: u32,
}

/// Components, the world they share, and the loop that runs them.
pub struct Engine<W> {
    /// The model's components; their ports act in this order (and, within one, in the order of
    /// [`Component::ports`]) at every instant.
    pub components: Vec<Box<dyn Component<W>>>,
    /// The state the components share, which carries the calendar.
    pub world: W,
    /// Whether the loop steps every edge or jumps from one wake-up to the next.
    pub mode: Mode,
    /// Instants visited and steps taken (the wake-ups that [`Engine::stats()`] reports are
    /// counted by the calendar).
    stats: RunStats,
    /// Per port: its component, its index within it and the component's first port.
    owner: Vec<Owner>,
    /// Distinct clocks (stepped mode walks their edges).
    clocks: Vec<Clock>,
    /// Steps taken per port, when asked for with [`Engine::count_port_steps`] (for profiling
    /// a model; empty otherwise).
    pub port_steps: Vec<u64>,
    /// The current instant has been visited (stepped mode), or: some instant has (skip mode).
    visited: bool,
}

impl<W: HasCalendar> Engine<W> {
    /// Wire the components' ports into the world's calendar; every port is due at time 0.
    pub fn new(components: Vec<Box<dyn Component<W>>>, mut world: W, mode: Mode) -> Engine<W> {
        let mut owner = Vec::new();
        let mut port_clocks = Vec::new();
        let (mut rd, mut wr, mut wa) = (Vec::new(), Vec::new(), Vec::new());
        let mut n_res = 0;
        for (c, comp) in components.iter().enumerate() {
            let base = owner.len() as u32;
            for (k, port) in comp.ports().into_iter().enumerate() {
                let id = owner.len() as u32;
                owner.push(Owner {
                    comp: c as u32,
                    port: k as u32,
                    base,
                });
                port_clocks.push(port.clock);
                for (list, res) in [
                    (&mut rd, &port.reads),
                    (&mut wr, &port.writes),
                    (&mut wa, &port.watches),
                ] {
                    for &f in res {
                        let r = f.index();
                        list.push((r, id));
                        n_res = n_res.max(r + 1);
                    }
                }
            }
        }
        let n = owner.len();
        let one_each = |pairs: &[(usize, u32)], what: &str| {
            let mut v = vec![NOBODY; n_res];
            for &(r, p) in pairs {
                assert!(
                    v[r] == NOBODY,
                    "FIFO {r} has two {what}s: ports {} and {p}",
                    v[r]
                );
                v[r] = p;
            }
            v
        };
        let (reader, writer) = (one_each(&rd, "reader"), one_each(&wr, "writer"));
        let mut clocks: Vec<Clock> = Vec::new();
        for c in &port_clocks {
            if !clocks.contains(c) {
                clocks.push(*c);
            }
        }
        let g = port_clocks
            .iter()
            .fold(0, |g, c| crate::time::gcd(c.period, g));
        let mut wakes = Wakes::new(n, g);
        (0..n).for_each(|p| wakes.add(p, Time::ZERO));
        *world.cal() = Calendar {
            now: Time::ZERO,
            cur: 0,
            base: 0,
            clocks: port_clocks,
            wakes,
            own: Time::MAX,
            not_before: vec![Time::ZERO; n],
            reader,
            writer,
            watchers: Lists::build(n_res, &mut wa),
            requested: 0,
        };
        Engine {
            components,
            world,
            mode,
            stats: RunStats::default(),
            owner,
            clocks,
            port_steps: Vec::new(),
            visited: false,
        }
    }

    /// The current (last visited) instant.
    pub fn now(&self) -> Time {
        self.world.cal_ref().now
    }

    /// The instant of the next pending wake-up, if any (what a run would visit next).
    pub fn next_wake(&self) -> Option<Time> {
        self.world.cal_ref().wakes.peek()
    }

    /// Count the steps of each port from now on, in [`Engine::port_steps`].
    pub fn count_port_steps(&mut self) {
        self.port_steps = vec![0; self.owner.len()];
    }

    /// Statistics so far.
    pub fn stats(&self) -> RunStats {
        RunStats {
            wakes: self.world.cal_ref().requested,
            ..self.stats
        }
    }

    /// Step port `p` at `now`; its own wake-up (popped, or none) becomes what it asks for.
    #[inline]
    fn step(&mut self, p: usize, now: Time) {
        let o = self.owner[p];
        let cal = self.world.cal();
        cal.cur = p;
        cal.base = o.base as usize;
        cal.own = Time::MAX;
        self.components[o.comp as usize].step(o.port as usize, now, &mut self.world);
        self.stats.steps += 1;
        if !self.port_steps.is_empty() {
            self.port_steps[p] += 1;
        }
        let cal = self.world.cal();
        let own = std::mem::replace(&mut cal.own, Time::MAX);
        if own != Time::MAX {
            let e = cal.round(p, own.max(now));
            cal.wakes.add(p, e);
        }
    }

    /// Run until no port has anything left to do (returns `true`) or the next instant would
    /// lie after `until` (returns `false`; a later call resumes exactly there).
    pub fn run_until(&mut self, until: Time) -> bool {
        match self.mode {
            Mode::Skip => self.run_skipping(until),
            Mode::Stepped => self.run_stepped(until),
        }
    }

    fn run_skipping(&mut self, until: Time) -> bool {
        loop {
            let cal = self.world.cal();
            let Some((t, p)) = cal.wakes.pop_until(until) else {
                return cal.wakes.is_empty();
            };
            // Counted without a branch on whether the instant changed (data-dependent).
            self.stats.instants += (t != cal.now || !self.visited) as u64;
            self.visited = true;
            cal.now = t;
            self.step(p, t);
        }
    }

    fn run_stepped(&mut self, until: Time) -> bool {
        loop {
            let now = self.world.cal_ref().now;
            if !self.visited {
                self.visited = true;
                self.stats.instants += 1;
                for p in 0..self.owner.len() {
                    if self.world.cal_ref().clocks[p].is_edge(now) {
                        self.step(p, now);
                    }
                }
                // Every port with an edge now has been stepped: its wake-ups for now are spent.
                self.world.cal().wakes.clear_at(now);
            }
            if self.world.cal_ref().wakes.is_empty() {
                return true;
            }
            let next = self
                .clocks
                .iter()
                .map(|c| c.edge_after(now))
                .min()
                .expect("a model has ports");
            if next > until {
                return false;
            }
            let cal = self.world.cal();
            cal.now = next;
            cal.wakes.move_to(next);
            self.visited = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Timebase;

    /// A world of one counter per port and a log of who acted when.
    #[derive(Default)]
    struct W {
        cal: Calendar,
        log: Vec<(Time, usize)>,
    }
    crate::has_calendar!(W);

    /// Acts at the given times (port 0) and, when it does, wakes port 1 of the same component
    /// for the same instant and the component `poke` (port 0) for the same instant.
    struct Ticker {
        id: usize,
        clock: Clock,
        at: Vec<Time>,
        poke: Option<usize>,
    }
    impl Component<W> for Ticker {
        fn ports(&self) -> Vec<Port> {
            vec![Port::new(self.clock), Port::new(self.clock)]
        }
        fn step(&mut self, port: usize, now: Time, w: &mut W) {
            if port == 1 {
                if w.log.last() == Some(&(now, self.id * 10)) {
                    w.log.push((now, self.id * 10 + 1));
                }
                return;
            }
            if self.at.first() == Some(&now) {
                self.at.remove(0);
                w.log.push((now, self.id * 10));
                w.cal.wake_port(1, now);
                if let Some(p) = self.poke {
                    w.cal.wake(p, now);
                }
            }
            if let Some(&t) = self.at.first() {
                w.cal.wake_port(0, t);
            }
        }
    }

    fn run(mode: Mode) -> (Vec<(Time, usize)>, RunStats) {
        let tb = Timebase::for_clocks_mhz(&[250, 150]);
        let (a, b) = (tb.clock(250), tb.clock(150));
        let comps: Vec<Box<dyn Component<W>>> = vec![
            // Port 0 of component 0 is woken by component 1 for an instant it has passed.
            Box::new(Ticker {
                id: 0,
                clock: a,
                at: vec![a.edge(3), a.edge(10)],
                poke: None,
            }),
            Box::new(Ticker {
                id: 1,
                clock: b,
                at: vec![b.edge(2), b.edge(5)],
                poke: Some(0),
            }),
        ];
        let mut e = Engine::new(comps, W::default(), mode);
        assert!(e.run_until(Time::MAX));
        (std::mem::take(&mut e.world.log), e.stats())
    }

    #[test]
    fn skipping_matches_stepping_and_late_wakes_move_to_the_next_edge() {
        let (skip, s1) = run(Mode::Skip);
        let (stepped, s2) = run(Mode::Stepped);
        assert_eq!(skip, stepped);
        assert!(s1.instants < s2.instants && s1.steps < s2.steps);
        // Port 1 acts in the same instant as port 0 (it comes later in the order).
        assert!(skip
            .windows(2)
            .all(|w| w[0].1 % 10 == 1 || w[1] == (w[0].0, w[0].1 + 1)));
    }

    #[test]
    fn resumes_exactly_where_it_stopped() {
        let tb = Timebase::for_clocks_mhz(&[250]);
        let a = tb.clock(250);
        let mk = || -> Vec<Box<dyn Component<W>>> {
            vec![Box::new(Ticker {
                id: 0,
                clock: a,
                at: (1..50).map(|k| a.edge(k * 7)).collect(),
                poke: None,
            })]
        };
        for mode in [Mode::Skip, Mode::Stepped] {
            let mut whole = Engine::new(mk(), W::default(), mode);
            whole.run_until(Time::MAX);
            let mut sliced = Engine::new(mk(), W::default(), mode);
            let mut t = Time::ZERO;
            while !sliced.run_until(t) {
                t += 37;
            }
            assert_eq!(whole.world.log, sliced.world.log, "{mode:?}");
        }
    }
}
