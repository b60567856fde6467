//! A slab of items in flight (packets): FIFOs and queues hold 4-byte ids into it, so moving
//! an item from one queue to the next copies no more than the id. Freed slots are reused, so
//! the slab is as large as the most items ever alive at once.

/// An index into a [`Slab`]: four bytes, and not a number, so that a packet's id cannot be
/// mistaken for a FIFO's, a count or a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlabId(u32);

impl SlabId {
    /// Its position in the slab.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Items in flight, each addressed by the [`SlabId`] that [`Slab::alloc`] returns until
/// [`Slab::free`].
#[derive(Debug, Clone)]
pub struct Slab<T> {
    slots: Vec<T>,
    free: Vec<SlabId>,
    live: u64,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }
}

impl<T> Slab<T> {
    /// Store `item`; its id stays valid until [`Slab::free`].
    pub fn alloc(&mut self, item: T) -> SlabId {
        self.live += 1;
        match self.free.pop() {
            Some(id) => {
                self.slots[id.index()] = item;
                id
            }
            None => {
                self.slots.push(item);
                SlabId((self.slots.len() - 1) as u32)
            }
        }
    }
    /// The item left the model; its slot will be reused.
    pub fn free(&mut self, id: SlabId) {
        self.live -= 1;
        self.free.push(id);
    }
    /// Items alive (allocated and not freed).
    pub fn live(&self) -> u64 {
        self.live
    }
}

impl<T> std::ops::Index<SlabId> for Slab<T> {
    type Output = T;
    #[inline]
    fn index(&self, id: SlabId) -> &T {
        &self.slots[id.index()]
    }
}

impl<T> std::ops::IndexMut<SlabId> for Slab<T> {
    #[inline]
    fn index_mut(&mut self, id: SlabId) -> &mut T {
        &mut self.slots[id.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_freed_slots() {
        let mut s = Slab::default();
        let a = s.alloc(1);
        let b = s.alloc(2);
        s.free(a);
        assert_eq!(s.live(), 1);
        let c = s.alloc(3);
        assert_eq!(c, a);
        assert_eq!((s[b], s[c]), (2, 3));
    }
}
