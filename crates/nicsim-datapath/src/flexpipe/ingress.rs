//! FlexPipe's Ingress Traffic Controller (Fig. 1): merges recirculated and new traffic into
//! the first Offload, recirculated packets first so that the recirculation loop always drains.
//! With priority classes (`[qos]`) new traffic waits in one FIFO per class, and the class
//! scheduler ([`ClassSched`]) chooses among the classes' front packets; recirculated packets,
//! whatever their class, still go first (the loop must drain), and keep their class.

use nicsim_kernel::{Link, Time};

use super::handshake::{send_front, wake_send, Front, Next, Receiver};
use super::qos::{ClassSched, MAX_CLASSES};
use crate::world::{FifoId, World};

/// The Ingress Traffic Controller: its input FIFOs and its link to the first Offload.
pub struct IngressTc {
    /// New traffic from the Pre-Processor (with classes: class 0's).
    pub new: FifoId,
    /// Traffic the Egress Traffic Controller sent back.
    pub recirc: FifoId,
    /// Its link to the first Offload's Traffic Splitter.
    pub link: Link,
    /// With priority classes: one FIFO of new traffic per class (index: class), and how it
    /// chooses among them.
    pub classes: Option<(Vec<FifoId>, ClassSched)>,
}

impl IngressTc {
    /// The packet it takes at `t`: recirculated traffic whenever its front packet is there.
    fn pick(recirc: FifoId, new: FifoId, w: &World, t: Time) -> Option<Front> {
        Front::ready(w, recirc, t).or_else(|| Front::ready(w, new, t))
    }

    /// With classes: recirculated traffic first, then the class the scheduler picks among
    /// those whose front packet is there by `t`.
    fn pick_class(
        recirc: FifoId,
        fifos: &[FifoId],
        s: &ClassSched,
        w: &World,
        t: Time,
    ) -> Option<Front> {
        Front::ready(w, recirc, t).or_else(|| {
            let ready =
                (0..fifos.len() as u8).filter(|&c| Front::ready(w, fifos[c as usize], t).is_some());
            s.best(ready)
                .and_then(|c| Front::ready(w, fifos[c as usize], t))
        })
    }

    /// Hand the packet it picks to `next` (the first Offload), then sleep until it may send
    /// again. Out of line, so that the pipeline's step, which dispatches to every port (mostly
    /// the Offloads'), stays small: without this it saves and restores registers on every step.
    #[inline(never)]
    pub fn step<R: Receiver>(&mut self, port: usize, now: Time, w: &mut World, next: &mut Next<R>) {
        if self.classes.is_some() {
            return self.step_classes(port, now, w, next);
        }
        let (recirc, new) = (self.recirc, self.new);
        if self.link.is_free(now) {
            if let Some(f) = IngressTc::pick(recirc, new, w, now) {
                send_front(now, w, f, &mut self.link, next);
            }
        }
        w.cal.busy_until(port, self.link.busy_until());
        let pick = |w: &World, t: Time| IngressTc::pick(recirc, new, w, t);
        wake_send(w, port, &self.link, [recirc, new], pick, next);
    }

    /// [`IngressTc::step`] with priority classes.
    fn step_classes<R: Receiver>(
        &mut self,
        port: usize,
        now: Time,
        w: &mut World,
        next: &mut Next<R>,
    ) {
        let recirc = self.recirc;
        let (fifos, sched) = self.classes.as_mut().expect("classes");
        if self.link.is_free(now) {
            if let Some(f) = IngressTc::pick_class(recirc, fifos, sched, w, now) {
                let class = w.pkts[f.item].priority;
                // Strict: no higher class has a packet waiting at this decision.
                debug_assert!(
                    f.fifo == recirc
                        || sched.policy() != super::qos::Policy::Strict
                        || fifos[class as usize + 1..]
                            .iter()
                            .all(|&h| Front::ready(w, h, now).is_none()),
                    "class {class} sent before a waiting higher class"
                );
                if send_front(now, w, f, &mut self.link, next) && f.fifo != recirc {
                    sched.sent(class, f.bytes);
                }
            }
        }
        w.cal.busy_until(port, self.link.busy_until());
        // Every input, the unused places filled with the recirculation FIFO again.
        let mut inputs = [recirc; MAX_CLASSES + 1];
        inputs[1..=fifos.len()].copy_from_slice(fifos);
        let (fifos, sched) = (&*fifos, &*sched);
        let pick = |w: &World, t: Time| IngressTc::pick_class(recirc, fifos, sched, w, t);
        wake_send(w, port, &self.link, inputs, pick, next);
    }
}
