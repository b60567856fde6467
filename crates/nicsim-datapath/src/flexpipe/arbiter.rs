//! FlexPipe's Traffic Arbiter (Fig. 2): between the bypass FIFO and the units' FIFO (16 kB
//! each), the front packet of the one with the highest fill level among those whose front
//! packet has arrived (the units' FIFO on a tie), handed to the next stage when it can take it.
//! With priority classes (`[qos]`) each class has its own bypass and units' FIFO (a lane), the
//! class scheduler ([`ClassSched`]) chooses the class among those with a packet there, and the
//! fill levels choose within the class's lane.

use nicsim_kernel::{Link, Time};

use super::handshake::{send_front, wake_send, Front, Next, Receiver};
use super::qos::{ClassSched, MAX_CLASSES};
use crate::world::{FifoId, World};

/// The Traffic Arbiter of one Offload.
pub struct Arbiter {
    /// Its link to the next stage.
    pub link: Link,
    /// The bypass FIFO.
    pub bypass: FifoId,
    /// The units' FIFO.
    pub units_out: FifoId,
    /// With priority classes: how it chooses between classes.
    pub classes: Option<ClassSched>,
    /// With priority classes: each class's [bypass, units'] FIFOs (index: class; class 0's
    /// are `bypass` and `units_out`); empty without.
    pub lanes: Vec<[FifoId; 2]>,
    /// Cycles its link stays idle after each packet (a PANIC compute engine's output port;
    /// 0 in FlexPipe).
    pub gap_cycles: u64,
}

impl Arbiter {
    /// Between a lane's two FIFOs at `now`: the one whose front packet is there, the fuller
    /// if both (the units' on a tie).
    #[inline(always)]
    fn pick_lane(w: &World, [bypass, units_out]: [FifoId; 2], now: Time) -> Option<Front> {
        match (
            Front::ready(w, units_out, now),
            Front::ready(w, bypass, now),
        ) {
            (Some(u), Some(b)) => Some(if w.q[bypass].used_bytes() > w.q[units_out].used_bytes() {
                b
            } else {
                u
            }),
            (u, b) => u.or(b),
        }
    }

    /// Its choice at `now` (without classes).
    #[inline]
    fn pick(&self, now: Time, w: &World) -> Option<Front> {
        Arbiter::pick_lane(w, [self.bypass, self.units_out], now)
    }

    /// Its choice at `now` with priority classes (out of line: the paper's arbiter, without
    /// classes, stays small enough to inline).
    #[inline(never)]
    fn pick_class(&self, s: &ClassSched, now: Time, w: &World) -> Option<Front> {
        let ready = |c: u8| {
            let [b, u] = self.lanes[c as usize];
            Front::ready(w, b, now).is_some() || Front::ready(w, u, now).is_some()
        };
        let c = s.best((0..self.lanes.len() as u8).filter(|&c| ready(c)))?;
        Arbiter::pick_lane(w, self.lanes[c as usize], now)
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
        if self.classes.is_some() {
            return self.step_classes(port, now, w, next, wake_at);
        }
        if self.link.is_free(now) {
            if let Some(f) = self.pick(now, w) {
                if send_front(now, w, f, &mut self.link, next) && self.gap_cycles > 0 {
                    self.link.hold(self.gap_cycles);
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

    /// [`Arbiter::step`] with priority classes (out of line: the paper's arbiter stays as it
    /// was).
    #[inline(never)]
    fn step_classes<R: Receiver>(
        &mut self,
        port: usize,
        now: Time,
        w: &mut World,
        next: &mut Next<R>,
        wake_at: Option<Time>,
    ) {
        let mut s = self.classes.take().expect("classes");
        if self.link.is_free(now) {
            if let Some(f) = self.pick_class(&s, now, w) {
                let class = w.pkts[f.item].priority;
                // Strict: no higher class has a packet waiting in its lane.
                debug_assert!(
                    s.policy() != super::qos::Policy::Strict
                        || self.lanes[class as usize + 1..]
                            .iter()
                            .flatten()
                            .all(|&q| Front::ready(w, q, now).is_none()),
                    "class {class} sent before a waiting higher class"
                );
                if send_front(now, w, f, &mut self.link, next) {
                    s.sent(class, f.bytes);
                    self.link.hold(self.gap_cycles);
                }
            }
        }
        w.cal.busy_until(port, self.link.busy_until());
        if let Some(t) = wake_at {
            w.cal.wake_port(port, t);
        }
        // Every lane's FIFOs, the unused places filled with class 0's bypass FIFO again.
        let mut inputs = [self.bypass; 2 * MAX_CLASSES];
        for (i, &q) in self.lanes.iter().flatten().enumerate() {
            inputs[i] = q;
        }
        let pick = |w: &World, t: Time| self.pick_class(&s, t, w);
        wake_send(w, port, &self.link, inputs, pick, next);
        self.classes = Some(s);
    }
}
