//! FlexPipe's Ingress Traffic Controller (Fig. 1): merges recirculated and new traffic into
//! the first Offload, recirculated packets first so that the recirculation loop always drains.

use nicsim_kernel::{Link, Time};

use super::handshake::{send_front, wake_send, Front, Next, Receiver};
use crate::world::{FifoId, World};

/// The Ingress Traffic Controller: its two input FIFOs and its link to the first Offload.
pub struct IngressTc {
    /// New traffic from the Pre-Processor.
    pub new: FifoId,
    /// Traffic the Egress Traffic Controller sent back.
    pub recirc: FifoId,
    /// Its link to the first Offload's Traffic Splitter.
    pub link: Link,
}

impl IngressTc {
    /// The packet it takes at `t`: recirculated traffic whenever its front packet is there.
    fn pick(recirc: FifoId, new: FifoId, w: &World, t: Time) -> Option<Front> {
        Front::ready(w, recirc, t).or_else(|| Front::ready(w, new, t))
    }

    /// Hand the packet it picks to `next` (the first Offload), then sleep until it may send
    /// again. Out of line, so that the pipeline's step, which dispatches to every port (mostly
    /// the Offloads'), stays small: without this it saves and restores registers on every step.
    #[inline(never)]
    pub fn step<R: Receiver>(&mut self, port: usize, now: Time, w: &mut World, next: &mut Next<R>) {
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
}
