//! The FIFOs of one model, wired to the calendar.
//!
//! A model's FIFOs are the resources of the run loop: ports name them by their [`FifoId`] in
//! [`crate::Port::reads`] / `writes` / `watches`. Putting an item into a FIFO that was
//! empty wakes its reader at the item's first beat; taking one out wakes its writer if the
//! writer had asked for room and found none ([`FifoSet::room`]); both wake its watchers. This
//! is the bookkeeping every model needs to keep event skipping exact, kept in one place.

use crate::fifo::{Fifo, Slot};
use crate::sim::Calendar;
use crate::time::Time;

/// A FIFO's index in its [`FifoSet`], which is also the id by which ports and the calendar
/// name it ([`crate::Port::reads`], [`Calendar::touched`]): not a number, so that a FIFO
/// cannot be mistaken for a packet, a count or another index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FifoId(u32);

impl FifoId {
    /// Its position in the set.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A model's FIFOs with their names; pushes, pops and room checks made through it wake the ports
/// that wait on them.
#[derive(Debug, Clone)]
pub struct FifoSet<T> {
    /// The FIFOs, indexed by [`FifoId`].
    pub fifos: Vec<Fifo<T>>,
    /// Each FIFO's name, indexed by [`FifoId`] (for the model's statistics report).
    pub names: Vec<String>,
}

impl<T> Default for FifoSet<T> {
    fn default() -> Self {
        FifoSet {
            fifos: Vec::new(),
            names: Vec::new(),
        }
    }
}

impl<T> FifoSet<T> {
    /// A new FIFO of `capacity_bytes`; returns its id.
    pub fn add(&mut self, name: impl Into<String>, capacity_bytes: u64) -> FifoId {
        let id = FifoId(u32::try_from(self.fifos.len()).expect("fewer than 2^32 FIFOs"));
        self.fifos.push(Fifo::new(capacity_bytes));
        self.names.push(name.into());
        id
    }
    /// Number of FIFOs in the set.
    pub fn len(&self) -> usize {
        self.fifos.len()
    }
    /// Whether the set has no FIFOs (not whether they hold packets; see
    /// [`FifoSet::is_fifo_empty`]).
    pub fn is_empty(&self) -> bool {
        self.fifos.is_empty()
    }
    /// Start writing `item` into FIFO `id` (the caller checked room); its first and last
    /// beats land at `head` and `tail`.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        cal: &mut Calendar,
        id: FifoId,
        now: Time,
        item: T,
        bytes: u32,
        head: Time,
        tail: Time,
    ) {
        let f = &mut self.fifos[id.index()];
        let wake_reader = f.is_empty() | f.wait_push.replace(false);
        f.push(now, item, bytes, head, tail);
        cal.pushed(id, head, wake_reader);
    }
    /// Start reading the front item of FIFO `id` out.
    #[inline(always)]
    pub fn pop(&mut self, cal: &mut Calendar, id: FifoId, now: Time) -> Option<Slot<T>> {
        let f = &mut self.fifos[id.index()];
        let s = f.pop(now)?;
        cal.popped(id, f.wait_room.replace(false));
        Some(s)
    }
    /// Whether FIFO `id` has room for `bytes`. A writer must ask here: when there is no room,
    /// the FIFO remembers to wake its writer at the next pop.
    #[inline]
    pub fn room(&self, id: FifoId, bytes: u32) -> bool {
        let r = self.fifos[id.index()].has_room(bytes);
        if !r {
            self.wait_for_room(id);
        }
        r
    }
    /// A writer waits for FIFO `id` to shrink for a reason other than bytes (a depth limit):
    /// the next pop wakes it.
    #[inline]
    pub fn wait_for_room(&self, id: FifoId) {
        self.fifos[id.index()].wait_room.set(true);
    }
    /// The reader of FIFO `id` waits for it to change (what it would take from it depends on
    /// more than its front): the next push wakes it, as a push into an empty FIFO does.
    #[inline]
    pub fn wait_for_push(&self, id: FifoId) {
        self.fifos[id.index()].wait_push.set(true);
    }
    /// Free bytes of FIFO `id`.
    #[inline]
    pub fn free_bytes(&self, id: FifoId) -> u64 {
        let f = &self.fifos[id.index()];
        f.capacity_bytes() - f.used_bytes()
    }
    /// The front slot of FIFO `id`, whether or not its first beat has landed (see
    /// [`FifoSet::ready_front`]).
    #[inline]
    pub fn front(&self, id: FifoId) -> Option<&Slot<T>> {
        self.fifos[id.index()].front()
    }
    /// The front slot, if its first beat is there by `now`.
    #[inline]
    pub fn ready_front(&self, id: FifoId, now: Time) -> Option<&Slot<T>> {
        self.fifos[id.index()].front().filter(|s| s.head <= now)
    }
    /// Bytes of FIFO `id`'s packets whose last beat is in by `now` (see [`Fifo::stored_bytes`]).
    #[inline]
    pub fn stored_bytes(&self, id: FifoId, now: Time) -> u64 {
        self.fifos[id.index()].stored_bytes(now)
    }
    /// Bytes held by FIFO `id`, counting packets still arriving.
    #[inline]
    pub fn used_bytes(&self, id: FifoId) -> u64 {
        self.fifos[id.index()].used_bytes()
    }
    /// Whether FIFO `id` holds no packet.
    #[inline]
    pub fn is_fifo_empty(&self, id: FifoId) -> bool {
        self.fifos[id.index()].is_empty()
    }
}

impl<T> std::ops::Index<FifoId> for FifoSet<T> {
    type Output = Fifo<T>;
    #[inline]
    fn index(&self, id: FifoId) -> &Fifo<T> {
        &self.fifos[id.index()]
    }
}

impl<T> std::ops::IndexMut<FifoId> for FifoSet<T> {
    #[inline]
    fn index_mut(&mut self, id: FifoId) -> &mut Fifo<T> {
        &mut self.fifos[id.index()]
    }
}
