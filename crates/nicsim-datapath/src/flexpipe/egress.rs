//! FlexPipe's Egress Traffic Controller (Fig. 1): as the last Traffic Arbiter hands a packet
//! over, it sends a finished packet to the DMA engine and any other back to the Ingress
//! Traffic Controller, counting the extra pass in the packet's metadata.

use nicsim_kernel::{Time, Transfer};

use crate::packet::{Pkt, PktId};
use crate::world::{FifoId, World};

/// The Egress Traffic Controller: where finished and unfinished packets go.
pub struct EgressTc {
    /// The DMA engine's input.
    pub dma: FifoId,
    /// The Ingress Traffic Controller's recirculation FIFO.
    pub recirc: FifoId,
}

impl EgressTc {
    /// Where packet `p` goes: the DMA engine once its chain is done, else back round.
    pub fn target(&self, p: &Pkt) -> FifoId {
        if p.done() {
            self.dma
        } else {
            self.recirc
        }
    }

    /// Packet `item` of `bytes` arrives over transfer `tr`, bound for `to` (its [`target`]).
    ///
    /// [`target`]: EgressTc::target
    #[inline]
    pub fn enter(
        &self,
        now: Time,
        w: &mut World,
        to: FifoId,
        item: PktId,
        bytes: u32,
        tr: Transfer,
    ) {
        if to == self.recirc {
            // The metadata update travels with the packet: count the extra pass.
            let p = &mut w.pkts[item];
            p.recircs = p.recircs.saturating_add(1);
        }
        w.push(to, now, item, bytes, tr.head, tr.tail);
    }
}
