//! FlexPipe's nested round robin (Fig. 2): over the units that have finished a whole packet,
//! starting after the unit served last, into the units' FIFO in front of the Traffic Arbiter.

use nicsim_kernel::{Link, Time};

use super::units::Units;
use crate::world::{FifoId, World};

/// The nested round robin of one Offload.
pub struct RoundRobin {
    /// Its link into the units' FIFO.
    pub link: Link,
    /// The units' FIFO.
    pub out: FifoId,
    /// The unit it looks at first.
    next: usize,
}

impl RoundRobin {
    /// A round robin over a link into `out`.
    pub fn new(link: Link, out: FifoId) -> RoundRobin {
        RoundRobin { link, out, next: 0 }
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
        let u = units.next_ready(self.next)?;
        if !w.room(self.out, units.done_front_bytes(u)) {
            return None;
        }
        let (pkt, bytes) = units.pop_done(u);
        let tr = self.link.send(now, bytes, now);
        w.push(self.out, now, pkt, bytes, tr.head, tr.tail);
        units.handed_over(u, now, tr.tail);
        self.next = if u + 1 == units.len() { 0 } else { u + 1 };
        Some((u, tr.tail))
    }

    /// Wake `port` (the units' port) for the next hand-over, if a finished packet can go then.
    #[inline]
    pub fn wake(&self, port: usize, now: Time, units: &Units, w: &mut World) {
        if let Some(u) = units.next_ready(self.next) {
            if w.room(self.out, units.done_front_bytes(u)) {
                let t = self.link.free_from(now + 1);
                w.cal.wake_port(port, t);
            }
        }
    }
}
