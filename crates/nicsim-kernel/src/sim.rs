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

use crate::time::{Clock, Time};
use crate::wakes::Wakes;

pub trait Component<W> {
    /// The clock the component acts on.
    fn clock(&self) -> Clock;
    /// Whether one of this component's clocks has an edge at `t` (override for several clocks).
    fn has_edge(&self, t: Time) -> bool {
        self.clock().is_edge(t)
    }
    /// The first edge of any of its clocks strictly after `t`.
    fn edge_after(&self, t: Time) -> Time {
        self.clock().edge_after(t)
    }
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
    /// `next_wake` calls made.
    pub wake_calls: u64,
}

/// A set of component indices.
#[derive(Debug, Clone, Default)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    #[inline]
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    #[inline]
    fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }
    /// The first member at or after `from`.
    #[inline]
    fn next_from(&self, from: usize) -> Option<usize> {
        let mut w = from / 64;
        let mut word = *self.0.get(w)? & (!0u64 << (from % 64));
        loop {
            if word != 0 {
                return Some(w * 64 + word.trailing_zeros() as usize);
            }
            w += 1;
            word = *self.0.get(w)?;
        }
    }
    /// Add the members of `other` that are at or after `from`.
    fn union_from(&mut self, other: &Bits, from: usize) {
        for (w, (a, b)) in self.0.iter_mut().zip(&other.0).enumerate() {
            if (w + 1) * 64 <= from {
                continue;
            }
            let mask = if w * 64 >= from {
                !0
            } else {
                !0u64 << (from % 64)
            };
            *a |= b & mask;
        }
    }
    fn union(&mut self, other: &Bits) {
        self.union_from(other, 0);
    }
}

/// Components, the world they share, and the current instant.
pub struct Engine<W> {
    pub components: Vec<Box<dyn Component<W>>>,
    pub world: W,
    pub mode: Mode,
    pub now: Time,
    pub stats: RunStats,
    visited: bool,
    /// Every component's next wake-up.
    wakes: Wakes,
    /// For every change bit, the components that watch it.
    watchers: Vec<Bits>,
    /// Change bits that some component watches.
    watched: u128,
    pending: Bits,
    recompute: Bits,
}

impl<W: Changes> Engine<W> {
    pub fn new(components: Vec<Box<dyn Component<W>>>, world: W, mode: Mode) -> Engine<W> {
        let n = components.len();
        let mut watchers = vec![Bits::new(n); 128];
        for (i, c) in components.iter().enumerate() {
            let w = c.watches();
            for (b, set) in watchers.iter_mut().enumerate() {
                if w >> b & 1 == 1 {
                    set.set(i);
                }
            }
        }
        let watched = components.iter().fold(0, |m, c| m | c.watches());
        // Every component is due at time 0.
        let mut wakes = Wakes::new(n);
        (0..n).for_each(|i| wakes.set(i, Some(0)));
        Engine {
            components,
            world,
            mode,
            now: 0,
            stats: RunStats::default(),
            visited: false,
            wakes,
            watchers,
            watched,
            pending: Bits::new(n),
            recompute: Bits::new(n),
        }
    }

    fn visit(&mut self) {
        let now = self.now;
        let n = self.components.len();
        self.stats.instants += 1;
        // Due components, then (in order) those whose watched resources change as we go.
        if self.mode == Mode::Stepped {
            (0..n).for_each(|i| self.pending.set(i));
        }
        let pending = &mut self.pending;
        self.wakes.for_each_due(now, |i| pending.set(i));
        self.recompute.union(&self.pending);
        let mut seen = 0u128;
        let mut from = 0;
        while let Some(i) = self.pending.next_from(from) {
            self.pending.clear(i);
            from = i + 1;
            let c = &mut self.components[i];
            if !c.has_edge(now) {
                continue;
            }
            c.step(now, &mut self.world);
            self.stats.steps += 1;
            let changes = self.world.changes();
            let mut new = changes & !seen & self.watched;
            seen = changes;
            while new != 0 {
                let b = new.trailing_zeros() as usize;
                new &= new - 1;
                self.pending.union_from(&self.watchers[b], from);
                self.recompute.union(&self.watchers[b]);
            }
        }
        self.world.take_changes();
        let mut from = 0;
        while let Some(i) = self.recompute.next_from(from) {
            self.recompute.clear(i);
            from = i + 1;
            let w = self.components[i].next_wake(now, &self.world);
            self.stats.wake_calls += 1;
            if let Some(t) = w {
                assert!(t > now, "component {i}: next_wake {t} is not after {now}");
            }
            self.wakes.set(i, w);
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
            let Some((wake, _)) = self.wakes.earliest() else {
                return true;
            };
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
