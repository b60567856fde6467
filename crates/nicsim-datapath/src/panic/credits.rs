//! PANIC's credits (`panic_scheduler.v`, `compute_engine.v`), as the steering of the Offload
//! that models a compute-engine port (see `flexpipe::Steer`).
//!
//! - **eval variant**: the units of one offload sit behind one crossbar port. The module holds
//!   units × `panic.credits` credits, of which the scheduler dispatches while some are free;
//!   the module's ingress picks the unit, sticky: the same unit until it holds `panic.credits`
//!   packets, then the next that holds fewer. A credit comes back when the unit hands the
//!   packet on (or drops it).
//! - **full variant**: every unit is an engine with `panic.credits` credits of its own. The
//!   scheduler takes a credit at dispatch (the packet is *credited* to that unit); a pushed
//!   packet is accepted while a credit is free, else *refused*: it goes back out with its
//!   *detour* tag set, and the crossbar sends it to the scheduler. A credit comes back when
//!   the finished packet's last beat has left the engine.
//!
//! The free credits live in [`Shared::free_credits`](super::Shared) (one slot per module or
//! unit), where the scheduler and the crossbar read them; a change touches the port's input
//! FIFO, which wakes whoever watches it.

use std::collections::VecDeque;

use nicsim_kernel::Time;

use crate::flexpipe::{Choice, Steer, Units};
use crate::packet::PktId;
use crate::world::{FifoId, World};

/// PANIC's fields of a packet's descriptor beyond FlexPipe's metadata (full variant).
#[derive(Debug, Clone, Copy, Default)]
struct Tag {
    /// The scheduler took a credit of this unit (a global unit index) at dispatch; the unit
    /// accepts the packet unconditionally and clears it.
    credited_to: Option<u16>,
    /// The receiving unit had no credit left; the crossbar sends the packet back to the
    /// scheduler, which clears it.
    detour: bool,
}

/// The tags of the packets in flight, by packet id (ids are reused; a tag is cleared when it
/// is used).
#[derive(Debug, Default)]
pub struct Tags(Vec<Tag>);

impl Tags {
    fn get(&self, id: PktId) -> Tag {
        self.0.get(id.index()).copied().unwrap_or_default()
    }

    fn get_mut(&mut self, id: PktId) -> &mut Tag {
        let i = id.index();
        if i >= self.0.len() {
            self.0.resize(i + 1, Tag::default());
        }
        &mut self.0[i]
    }

    /// The unit packet `id` carries a credit of, if any.
    #[inline]
    pub fn credited_to(&self, id: PktId) -> Option<usize> {
        self.get(id).credited_to.map(usize::from)
    }

    /// The scheduler took a credit of unit `u` for packet `id`.
    pub fn credit(&mut self, id: PktId, u: usize) {
        self.get_mut(id).credited_to = Some(u as u16);
    }

    /// Whether packet `id` carried a credit (cleared).
    fn take_credit(&mut self, id: PktId) -> bool {
        id.index() < self.0.len() && self.0[id.index()].credited_to.take().is_some()
    }

    /// Whether packet `id` is on a detour.
    #[inline]
    pub fn detour(&self, id: PktId) -> bool {
        self.get(id).detour
    }

    /// Whether packet `id` was on a detour (cleared).
    pub fn take_detour(&mut self, id: PktId) -> bool {
        id.index() < self.0.len() && std::mem::take(&mut self.0[id.index()].detour)
    }
}

/// The credits of one compute-engine port.
pub struct Credits {
    /// Credits per unit.
    credits: u32,
    /// Packets each unit holds (taken and not yet handed on).
    held: Vec<u32>,
    /// The unit that took the last packet (eval variant's sticky choice).
    sticky_unit: usize,
    /// Its slot in `Shared::free_credits`.
    credit_id: usize,
    /// The port's input FIFO: touched when its credits change.
    watch: FifoId,
    /// Full variant: refuse a packet when no credit is free, and return credits when a
    /// packet's last beat has left (`returns`: when, unit).
    refuses: bool,
    returns: VecDeque<(Time, usize)>,
}

impl Credits {
    /// Eval variant: `n_units` units of `credits` credits each behind the port whose input
    /// FIFO is `watch`, with slot `credit_id`.
    pub fn module(n_units: u32, credits: u32, credit_id: usize, watch: FifoId) -> Credits {
        Credits {
            credits,
            held: vec![0; n_units as usize],
            sticky_unit: 0,
            credit_id,
            watch,
            refuses: false,
            returns: VecDeque::new(),
        }
    }

    /// Full variant: one engine of `credits` credits, slot `credit_id`, input FIFO `watch`.
    pub fn engine(credits: u32, credit_id: usize, watch: FifoId) -> Credits {
        Credits {
            refuses: true,
            ..Credits::module(1, credits, credit_id, watch)
        }
    }

    /// Unit `u` took (+1) or handed on (−1) a packet: the free credits follow.
    fn hold(&mut self, u: usize, delta: i32, w: &mut World) {
        self.held[u] = self.held[u].wrapping_add_signed(delta);
        let c = &mut w.panic.free_credits[self.credit_id];
        *c = c.wrapping_add_signed(-delta);
        // Whoever looks at these credits (the splitter, the scheduler, the crossbar).
        w.cal.touched(self.watch);
    }
}

impl Steer for Credits {
    fn choose(&self, _: Time, _: &Units, w: &World, item: PktId, _: u32) -> Choice {
        if self.refuses {
            // Its one unit, if the packet carries a credit or one is free.
            let admits = w.panic.tags.credited_to(item).is_some()
                || w.panic.free_credits[self.credit_id] > 0;
            return if admits {
                Choice::Unit(0)
            } else {
                Choice::Refuse
            };
        }
        let n = self.held.len();
        (0..n)
            .map(|k| (self.sticky_unit + k) % n)
            .find(|&u| self.held[u] < self.credits)
            .map_or(Choice::Wait, Choice::Unit)
    }

    fn may_refuse(&self) -> bool {
        self.refuses
    }

    fn took(&mut self, u: usize, item: PktId, w: &mut World) {
        self.sticky_unit = u;
        if w.panic.tags.take_credit(item) {
            // The scheduler took this unit's credit at dispatch: hand it back so that `hold`
            // takes it again.
            w.panic.free_credits[self.credit_id] += 1;
        }
        self.hold(u, 1, w);
    }

    fn refused(&mut self, item: PktId, w: &mut World) {
        w.panic.tags.get_mut(item).detour = true;
        w.panic.detours += 1;
    }

    fn handed_over(&mut self, u: usize, tail: Time, w: &mut World) -> Option<Time> {
        if self.refuses {
            self.returns.push_back((tail, u));
            Some(tail)
        } else {
            self.hold(u, -1, w);
            None
        }
    }

    fn dropped(&mut self, u: usize, w: &mut World) {
        self.hold(u, -1, w);
    }

    /// Credits of packets whose last beat has left the unit (full variant).
    fn due(&mut self, now: Time, w: &mut World) -> Option<Time> {
        while let Some(&(t, u)) = self.returns.front() {
            if t > now {
                return Some(t);
            }
            self.returns.pop_front();
            self.hold(u, -1, w);
        }
        None
    }
}
