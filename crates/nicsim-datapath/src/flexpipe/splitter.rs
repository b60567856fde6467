//! FlexPipe's Traffic Splitter (Fig. 2): it "forwards the packet immediately" to the Load
//! Balancer if the packet's next offload is this one (every packet, in StaticPipe), else into
//! the bypass FIFO. With priority classes (`[qos]`) the bypass FIFO is one per class.

use crate::packet::Pkt;
use crate::world::{FifoId, World};

/// The Traffic Splitter of one Offload.
pub struct Splitter {
    /// The Offload's position in the physical order.
    pub idx: u8,
    /// Process every packet here (StaticPipe).
    pub process_all: bool,
    /// The bypass FIFO, which the Traffic Arbiter reads.
    pub bypass: FifoId,
    /// It found no unit able to take its packet; only a unit event can change that.
    pub blocked: bool,
    /// With priority classes: the bypass FIFO of each class (index: class; class 0's is
    /// `bypass`); empty without.
    pub lanes: Vec<FifoId>,
}

impl Splitter {
    /// Whether packet `p` is processed here (else it bypasses the units).
    #[inline]
    pub fn wants(&self, p: &Pkt) -> bool {
        self.process_all | p.next_is(self.idx)
    }

    /// The bypass FIFO of packet `p` (its class's, with classes).
    #[inline]
    pub fn bypass_of(&self, p: &Pkt) -> FifoId {
        if self.lanes.is_empty() {
            self.bypass
        } else {
            self.lanes[p.priority as usize]
        }
    }

    /// Whether packet `p`'s bypass FIFO has room for `bytes`.
    #[inline]
    pub fn bypass_room(&self, w: &World, p: &Pkt, bytes: u32) -> bool {
        w.room(self.bypass_of(p), bytes)
    }
}
