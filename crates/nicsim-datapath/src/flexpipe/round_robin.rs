//! FlexPipe's nested round robin (Fig. 2): over the units that have finished a whole packet,
//! starting after the unit served last, into the units' FIFO in front of the Traffic Arbiter.
//! With priority classes (`[qos]`) the units' FIFO is one per class, and a unit whose packet's
//! FIFO is full is passed over for the next whose packet can go.

use nicsim_kernel::{Link, Time};

use super::units::Units;
use crate::world::{FifoId, World};

/// The nested round robin of one Offload.
pub struct RoundRobin {
    /// Its link into the units' FIFO.
    pub link: Link,
    /// The units' FIFO.
    pub out: FifoId,
    /// With priority classes: the units' FIFO of each class (index: class; class 0's is
    /// `out`); empty without.
    pub lanes: Vec<FifoId>,
    /// The unit it looks at first.
    next: usize,
}

impl RoundRobin {
    /// A round robin over a link into `out`.
    pub fn new(link: Link, out: FifoId) -> RoundRobin {
        RoundRobin {
            link,
            out,
            lanes: Vec::new(),
            next: 0,
        }
    }

    /// Hand the next finished packet over into the units' FIFO, if the link is free and the
    /// FIFO has room: (the unit, when the packet's last beat has left it).
    #[inline]
    pub fn hand_over(
        &mut self,
        now: Time,
        units: &mut Units,
        w: &mut World,
    ) -> Option<(usize, Time)> {
        if !self.link.is_free(now) {
            return None;
        }
        let (u, out) = self.next_to_go(units, w)?;
        let (pkt, bytes) = units.pop_done(u);
        let tr = self.link.send(now, bytes, now);
        w.push(out, now, pkt, bytes, tr.head, tr.tail);
        units.handed_over(u, now);
        self.next = if u + 1 == units.len() { 0 } else { u + 1 };
        Some((u, tr.tail))
    }

    /// Wake `port` (the units' port) for the next hand-over, if a finished packet can go then.
    #[inline]
    pub fn wake(&self, port: usize, now: Time, units: &Units, w: &mut World) {
        if self.next_to_go(units, w).is_some() {
            let t = self.link.free_from(now + 1);
            w.cal.wake_port(port, t);
        }
    }

    /// The unit whose finished packet goes next, and its FIFO: the next ready unit in round
    /// robin order if its FIFO has room; with classes, the first ready unit in that order
    /// whose packet's class FIFO has room.
    #[inline(always)]
    fn next_to_go(&self, units: &Units, w: &World) -> Option<(usize, FifoId)> {
        let u = units.next_ready(self.next)?;
        if self.lanes.is_empty() {
            return w
                .room(self.out, units.done_front_bytes(u))
                .then_some((u, self.out));
        }
        self.next_to_go_class(u, units, w)
    }

    /// [`RoundRobin::next_to_go`] with priority classes, from ready unit `u` on (out of line:
    /// the paper's round robin stays small enough to inline).
    #[inline(never)]
    fn next_to_go_class(&self, u: usize, units: &Units, w: &World) -> Option<(usize, FifoId)> {
        let mut at = u;
        loop {
            let (pkt, bytes) = units.done_front(at);
            let out = self.lanes[w.pkts[pkt].priority as usize];
            if w.room(out, bytes) {
                return Some((at, out));
            }
            at = units.next_ready(if at + 1 == units.len() { 0 } else { at + 1 })?;
            if at == u {
                return None;
            }
        }
    }
}
