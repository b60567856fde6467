//! FlexPipe's Traffic Splitter (Fig. 2): it "forwards the packet immediately" to the Load
//! Balancer if the packet's next offload is this one (every packet, in StaticPipe), else into
//! the bypass FIFO.

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
}

impl Splitter {
    /// Whether packet `p` is processed here (else it bypasses the units).
    #[inline]
    pub fn wants(&self, p: &Pkt) -> bool {
        self.process_all | p.next_is(self.idx)
    }

    /// Whether the bypass FIFO has room for `bytes`.
    #[inline]
    pub fn bypass_room(&self, w: &World, bytes: u32) -> bool {
        w.room(self.bypass, bytes)
    }
}
