//! The packet as the datapath models see it: the metadata FlexPipe's Pre-Processor writes
//! (size, flow type, priority, offload chain, next offload, timestamp) and that travels beside
//! the data, plus the frame bytes when functional offloads are on. Packets in flight live in
//! a slab ([`Pkts`]); FIFOs and units hold their [`PktId`], so moving a packet from one queue to
//! the next moves four bytes.

use std::net::IpAddr;

use nicsim_kernel::Time;
use nicsim_offloads::FuncMeta;

/// Longest offload chain a packet can carry.
pub const MAX_CHAIN: usize = 8;

/// A sequence of offload indices (positions in the physical order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Chain {
    hops: [u8; MAX_CHAIN],
    len: u8,
}

impl Chain {
    /// A chain of the given hops, in order.
    pub fn new(hops: &[u8]) -> Chain {
        let mut c = Chain::default();
        for &h in hops {
            c.push(h);
        }
        c
    }
    /// Appends a hop; beyond `MAX_CHAIN` hops the chain saturates (and will not compare equal).
    pub fn push(&mut self, hop: u8) {
        if (self.len as usize) < MAX_CHAIN {
            self.hops[self.len as usize] = hop;
        }
        self.len = self.len.saturating_add(1);
    }
    /// Number of hops.
    pub fn len(&self) -> usize {
        self.len as usize
    }
    /// Whether the chain has no hops.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The `i`th hop, if there is one.
    pub fn get(&self, i: usize) -> Option<u8> {
        (i < self.len() && i < MAX_CHAIN).then(|| self.hops[i])
    }
    /// The hops, in order.
    pub fn hops(&self) -> &[u8] {
        &self.hops[..self.len().min(MAX_CHAIN)]
    }
}

/// Header fields the Pre-Processor matches on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderKey {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// IP protocol number.
    pub proto: u8,
    /// Type-of-service byte.
    pub tos: u8,
    /// VLAN id (none: untagged).
    pub vlan: Option<u16>,
}

/// The frame bytes of a functional run, and what the sink needs to check them.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The frame as it currently is, including the 4-byte FCS.
    pub bytes: Vec<u8>,
    /// The L4 payload bytes the sender meant to deliver (the region offloads transform).
    pub plain: Vec<u8>,
    /// Where `plain` sits in `bytes`.
    pub plain_offset: usize,
    /// Per-packet results that offloads hand to later stages (the RSS hash and queue).
    pub meta: FuncMeta,
}

/// A packet in flight. Laid out by hand in two cache lines (the slab is a run of them): what
/// every hop reads and writes (chain, progress, size, flow) in the first, the header fields
/// only the generator and the Pre-Processor use in the second, so that a hop touches one line.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub struct Pkt {
    /// The offload chain written by the Pre-Processor.
    pub chain: Chain,
    /// Offloads that actually processed the packet, in order.
    pub trace: Chain,
    /// Index into `chain` of the next required offload.
    pub next: u8,
    /// Times the packet went round the recirculation path.
    pub recircs: u8,
    /// Priority class written by the Pre-Processor (PANIC's PIFO rank).
    pub priority: u8,
    /// Flow type written by the Pre-Processor (index into the configured flows).
    pub flow: u16,
    /// Bytes on the datapath (the Ethernet frame including FCS).
    pub size: u32,
    /// When the Pre-Processor parsed the packet (its latency is counted from here).
    pub t_parse: Time,
    /// The frame bytes (functional runs and egress captures only).
    pub frame: Option<Box<Frame>>,
    /// When the packet arrives at the MAC.
    pub t_arrival: Time,
    /// The packet's number in generation order.
    pub id: u64,
    /// Its header fields, which the Pre-Processor matches on.
    pub hdr: HeaderKey,
}

impl Pkt {
    /// The offload this packet needs next, if any.
    #[inline]
    pub fn next_offload(&self) -> Option<u8> {
        self.chain.get(self.next as usize)
    }
    /// Whether the offload this packet needs next is `idx`; computed without a branch (which
    /// offload a packet needs next is as random as its flow).
    #[inline]
    pub fn next_is(&self, idx: u8) -> bool {
        let i = self.next as usize;
        (i < self.chain.len().min(MAX_CHAIN)) & (self.chain.hops[i % MAX_CHAIN] == idx)
    }
    /// Whether the packet has passed every offload of its chain.
    #[inline]
    pub fn done(&self) -> bool {
        self.next as usize >= self.chain.len()
    }
}

/// A packet in flight: its index in [`Pkts`].
pub type PktId = nicsim_kernel::SlabId;

/// The packets in flight, and the generator's next one waiting at the MAC: the kernel's slab,
/// so that FIFOs and units hold 4-byte ids. Freed slots are reused, so the slab is as large as
/// the most packets ever in flight at once (plus that one).
pub type Pkts = nicsim_kernel::Slab<Pkt>;

#[cfg(test)]
mod tests {
    use super::*;

    /// `next_is` (without a branch) answers as `next_offload` does, for every position, within
    /// a chain, past its end and on a chain longer than `MAX_CHAIN` (saturated).
    #[test]
    fn next_is_agrees_with_next_offload() {
        let long: Vec<u8> = (0..MAX_CHAIN as u8 + 3).map(|h| h % 5).collect();
        for hops in [&[][..], &[2], &[0, 3, 1, 3], &long[..]] {
            let chain = Chain::new(hops);
            for next in 0..=(MAX_CHAIN as u8 + 4) {
                let p = Pkt {
                    id: 0,
                    size: 64,
                    hdr: HeaderKey {
                        src: "10.0.0.1".parse().unwrap(),
                        dst: "10.0.0.2".parse().unwrap(),
                        sport: 1,
                        dport: 2,
                        proto: 17,
                        tos: 0,
                        vlan: None,
                    },
                    flow: 0,
                    priority: 0,
                    chain,
                    next,
                    trace: Chain::default(),
                    recircs: 0,
                    t_arrival: Time::ZERO,
                    t_parse: Time::ZERO,
                    frame: None,
                };
                for idx in 0..6 {
                    assert_eq!(
                        p.next_is(idx),
                        p.next_offload() == Some(idx),
                        "{hops:?} {next} {idx}"
                    );
                }
            }
        }
    }
}
