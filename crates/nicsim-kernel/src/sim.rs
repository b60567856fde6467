//! The run loop.
//!
//! A [`Component`] is cycle-step logic over a shared world `W` (the FIFOs between components
//! and whatever else the model keeps in common): at a clock edge `step` does what the hardware
//! would do in that cycle, and `next_wake` says when it next could do anything, given the world
//! as it is now. The loop either visits every edge of every clock ([`Mode::Stepped`], a plain
//! cycle-level simulation) or jumps to the earliest `next_wake` ([`Mode::Skip`]), so that idle
//! cycles cost nothing. At each visited instant every component with an edge there is stepped,
//! in the order given (models list consumers before producers, so room freed in a cycle is
//! seen by the producer in the same cycle). Both modes give identical results when every
//! component's `step` is a no-op at instants where it has nothing to do and `next_wake` never
//! overshoots; the models' tests check this.
//!
//! In skipping mode the loop also caches every component's wake-up. The world reports which
//! shared resources (FIFOs, counters; up to 128 bits, aliased beyond) changed, each component
//! says which it watches, and a component is stepped at an instant only if it is due there or
//! something it watches changed earlier in the same instant; its wake-up is recomputed only if
//! it was stepped or something it watches changed. That keeps both modes identical while an
//! instant costs only the few components that take part in it.

use crate::time::Time;

pub trait Component<W> {
    /// Whether one of this component's clocks has an edge at `t`.
    fn has_edge(&self, t: Time) -> bool;
    /// The first edge of any of its clocks strictly after `t`.
    fn edge_after(&self, t: Time) -> Time;
    /// Act at edge `now`.
    fn step(&mut self, now: Time, world: &mut W);
    /// The earliest instant after `now` at which `step` could change anything, or `None`
    /// if only another component's action can give it work.
    fn next_wake(&self, now: Time, world: &W) -> Option<Time>;
    /// Bits of the shared resources whose changes can give this component work.
    fn watches(&self) -> u128 {
        u128::MAX
    }
}

/// The shared world tells the loop which resources changed since it last asked.
pub trait Changes {
    /// Bits changed since the last `take_changes`.
    fn changes(&self) -> u128;
    /// Return and clear the changed bits.
    fn take_changes(&mut self) -> u128;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Visit every clock edge.
    Stepped,
    /// Jump from one wake-up to the next.
    Skip,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct RunStats {
    /// Instants visited.
    pub instants: u64,
    /// `step` calls made.
    pub steps: u64,
}

/// Components, the world they share, and the current instant.
pub struct Engine<W> {
    pub components: Vec<Box<dyn Component<W>>>,
    pub world: W,
    pub mode: Mode,
    pub now: Time,
    pub stats: RunStats,
    visited: bool,
    wakes: Vec<Option<Time>>,
    watches: Vec<u128>,
    stepped: Vec<bool>,
}

impl<W: Changes> Engine<W> {
    pub fn new(components: Vec<Box<dyn Component<W>>>, world: W, mode: Mode) -> Engine<W> {
        let n = components.len();
        let watches = components.iter().map(|c| c.watches()).collect();
        // Every component is due at time 0.
        Engine {
            components,
            world,
            mode,
            now: 0,
            stats: RunStats::default(),
            visited: false,
            wakes: vec![Some(0); n],
            watches,
            stepped: vec![false; n],
        }
    }

    fn visit(&mut self) {
        let now = self.now;
        self.stats.instants += 1;
        for (i, c) in self.components.iter_mut().enumerate() {
            let due = self.mode == Mode::Stepped
                || self.wakes[i].is_some_and(|t| t <= now)
                || self.world.changes() & self.watches[i] != 0;
            self.stepped[i] = due && c.has_edge(now);
            if self.stepped[i] {
                c.step(now, &mut self.world);
                self.stats.steps += 1;
            }
        }
        let changed = self.world.take_changes();
        for (i, c) in self.components.iter().enumerate() {
            if self.mode == Mode::Stepped
                || self.stepped[i]
                || changed & self.watches[i] != 0
                || self.wakes[i].is_some_and(|t| t <= now)
            {
                self.wakes[i] = c.next_wake(now, &self.world);
            }
        }
    }

    /// Run until no component has anything left to do (returns `true`) or the next instant
    /// would lie after `until` (returns `false`; a later call resumes exactly there).
    pub fn run_until(&mut self, until: Time) -> bool {
        loop {
            if !self.visited {
                self.visit();
                self.visited = true;
            }
            let t = self.now;
            let Some(wake) = self.wakes.iter().flatten().copied().min() else {
                return true;
            };
            debug_assert!(wake > t, "next_wake must lie in the future");
            let next = match self.mode {
                Mode::Skip => wake,
                Mode::Stepped => self
                    .components
                    .iter()
                    .map(|c| c.edge_after(t))
                    .min()
                    .unwrap_or(wake),
            };
            if next > until {
                return false;
            }
            self.now = next;
            self.visited = false;
        }
    }
}
