//! FlexPipe's Traffic Arbiter (Fig. 2): between the bypass FIFO and the units' FIFO (16 kB
//! each), the front packet of the one with the highest fill level among those whose front
//! packet has arrived (the units' FIFO on a tie), handed to the next stage when it can take it.
//! With priority classes (`[qos]`), two front packets of different classes are chosen between
//! by the class scheduler ([`ClassSched`]); the fill levels decide within a class.

use nicsim_kernel::{Link, Time};

use super::handshake::{send_front, wake_send, Front, Next, Receiver};
use super::qos::ClassSched;
use crate::world::{FifoId, World};

/// The Traffic Arbiter of one Offload.
pub struct Arbiter {
    /// Its link to the next stage.
    pub link: Link,
    /// The bypass FIFO.
    pub bypass: FifoId,
    /// The units' FIFO.
    pub units_out: FifoId,
    /// With priority classes: how it chooses between front packets of different classes.
    pub classes: Option<ClassSched>,
}

impl Arbiter {
    /// Its choice at `now`.
    #[inline]
    fn pick(&self, now: Time, w: &World) -> Option<Front> {
        match (
            Front::ready(w, self.units_out, now),
            Front::ready(w, self.bypass, now),
        ) {
            (Some(u), Some(b)) => Some(match &self.classes {
                Some(s) if w.pkts[u.item].priority != w.pkts[b.item].priority => {
                    if s.before(w.pkts[b.item].priority, w.pkts[u.item].priority) {
                        b
                    } else {
                        u
                    }
                }
                _ if w.q[self.bypass].used_bytes() > w.q[self.units_out].used_bytes() => b,
                _ => u,
            }),
            (u, b) => u.or(b),
        }
    }

    /// Port `port`'s step: hand the packet it picks to `next`, then sleep until it may send
    /// again (or until `wake_at`, if given: the Offload has something due then).
    pub fn step<R: Receiver>(
        &mut self,
        port: usize,
        now: Time,
        w: &mut World,
        next: &mut Next<R>,
        wake_at: Option<Time>,
    ) {
        if self.link.is_free(now) {
            if let Some(f) = self.pick(now, w) {
                let class = w.pkts[f.item].priority;
                // Strict: the other FIFO's waiting packet is of no higher class.
                debug_assert!(
                    !self
                        .classes
                        .as_ref()
                        .is_some_and(|s| s.policy() == super::qos::Policy::Strict)
                        || [self.bypass, self.units_out]
                            .into_iter()
                            .filter_map(|q| Front::ready(w, q, now))
                            .all(|o| w.pkts[o.item].priority <= class),
                    "class {class} sent before a waiting higher class"
                );
                if send_front(now, w, f, &mut self.link, next) {
                    if let Some(s) = self.classes.as_mut() {
                        s.sent(class, f.bytes);
                    }
                }
            }
        }
        w.cal.busy_until(port, self.link.busy_until());
        if let Some(t) = wake_at {
            w.cal.wake_port(port, t);
        }
        let pick = |w: &World, t: Time| self.pick(t, w);
        let inputs = [self.bypass, self.units_out];
        wake_send(w, port, &self.link, inputs, pick, next);
    }
}
