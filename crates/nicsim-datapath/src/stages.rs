//! Components every architecture shares: the traffic generator (the MAC side) with the
//! Pre-Processor / parser it streams packets into (match-action tables that write the
//! metadata), and the DMA engine that hands packets to the host and the sink.

use nicsim_kernel::{Component, Link, Port, Time, Timebase};

use crate::config::Pipeline;

use crate::packet::{Chain, PktId};
use crate::traffic::Source;
use crate::world::{FifoId, World};

/// The MAC side: the source's packets at their arrival times, each handed straight to the
/// Pre-Processor over the datapath's first link as soon as that link is free and the
/// Pre-Processor's output can take it (valid/ready: the paper's traffic generator feeds FlexPipe
/// over AXI4-Stream, with no buffer between them). Until then the packet waits at the MAC,
/// unmeasured (latency is counted from the parse).
pub struct Generator {
    /// Where the packets and their arrival times come from.
    pub source: Source,
    /// The link from the MAC to the Pre-Processor.
    pub link: Link,
    /// The Pre-Processor the MAC streams packets into.
    pub pre: PreProcessor,
    /// The next packet, already in the slab, waiting at the MAC for its arrival time and room.
    pending: Option<PktId>,
    /// Chain to prepare frames for when it does not come from the flow table (StaticPipe).
    pub fixed_chain: Option<Chain>,
}

impl Generator {
    /// A generator of `source`'s packets over `link` into `pre`; `fixed_chain` for StaticPipe.
    pub fn new(
        source: Source,
        link: Link,
        pre: PreProcessor,
        fixed_chain: Option<Chain>,
    ) -> Generator {
        Generator {
            source,
            link,
            pre,
            pending: None,
            fixed_chain,
        }
    }
    fn refill(&mut self, w: &mut World) {
        if self.pending.is_none() && self.source.next_arrival().is_some() {
            let fixed = self.fixed_chain;
            let (table, chains) = (&w.table, &w.chains);
            let chain_for = |h: &crate::packet::HeaderKey, hint: Option<u16>| -> Option<Chain> {
                fixed.or_else(|| {
                    hint.or_else(|| table.lookup(h))
                        .and_then(|f| chains.get(f as usize).copied())
                })
            };
            let p = self.source.take(&chain_for, w.funcs.as_ref());
            self.pending = Some(w.pkts.alloc(p));
            w.offered += 1;
        }
    }
}

impl Component<World> for Generator {
    fn ports(&self) -> Vec<Port> {
        // With classes, `out` is class 0's FIFO.
        let out = self.pre.class_out.clone().unwrap_or(vec![self.pre.out]);
        vec![Port::new(self.link.clock).writes(&out)]
    }
    fn step(&mut self, _: usize, now: Time, w: &mut World) {
        self.refill(w);
        let Some(id) = self.pending else { return };
        let (t_arrival, size) = (w.pkts[id].t_arrival, w.pkts[id].size);
        if t_arrival <= now && self.link.is_free(now) && self.pre.may_enter(w, size) {
            self.pending = None;
            self.pre.parse(now, w, id, size, &mut self.link);
            self.refill(w);
        }
        // Next: the pending packet's arrival once the link is free (no room: the reader's
        // pop wakes us).
        if let Some(id) = self.pending {
            let p = &w.pkts[id];
            if self.pre.may_enter(w, p.size) {
                let t = self.link.free_from(p.t_arrival);
                w.cal.wake_port(0, t);
            }
        }
    }
}

/// How the Pre-Processor assigns a chain once the flow type is known.
#[derive(Debug, Clone, Copy)]
pub enum ChainPolicy {
    /// The flow table's chain (FlexPipe, PANIC full).
    Table,
    /// Every offload in physical order (StaticPipe).
    All(Chain),
    /// The table's chain with this offload moved or added to its front (PANIC evaluation
    /// variant, whose scheduler serves only a fixed first offload).
    FirstFixed(u8),
}

/// Match-action tables on header fields → flow type → chain; writes the metadata beside the
/// data (FlexPipe) or as a descriptor beat ahead of it (PANIC, `descriptor_beats` > 0). It
/// parses a packet as the MAC streams it in and streams it on to `out`, `latency` later.
pub struct PreProcessor {
    /// The FIFO it writes parsed packets to.
    pub out: FifoId,
    /// Latency of the match-action tables, in ticks.
    pub latency: u64,
    /// How a packet's chain is chosen.
    pub policy: ChainPolicy,
    /// Descriptor beats sent ahead of every packet (PANIC; 0 for FlexPipe).
    pub descriptor_beats: u64,
    /// Priority class of each flow type, written to the metadata.
    pub priorities: Vec<u8>,
    /// With priority classes (`[qos]`): one output FIFO per class (index: class), each
    /// dropping a packet it has no room for (`ingress_full`) rather than stalling the MAC, so
    /// that a full low class does not hold up a higher one.
    pub class_out: Option<Vec<FifoId>>,
}

impl PreProcessor {
    /// Whether the MAC may stream a packet of `bytes` in now: with classes always (the class's
    /// FIFO drops what it has no room for), else when `out` has room.
    #[inline]
    fn may_enter(&self, w: &World, bytes: u32) -> bool {
        self.class_out.is_some() || w.room(self.out, bytes)
    }

    /// Packet `id` of `bytes` streams in over `link` from `now` (the caller checked that the
    /// link is free and `out` has room): parse it, write its metadata and send it on.
    fn parse(&mut self, now: Time, w: &mut World, id: PktId, bytes: u32, link: &mut Link) {
        w.apply_remaps(now);
        let beats = link.beats_for(bytes) + self.descriptor_beats;
        let tr = link.send_beats(now, beats, now);
        let Some(flow) = w.table.lookup(&w.pkts[id].hdr) else {
            w.drop_pkt(id, "no_flow");
            return;
        };
        let chain = match self.policy {
            ChainPolicy::Table => w.chains[flow as usize],
            ChainPolicy::All(c) => c,
            ChainPolicy::FirstFixed(first) => {
                // The fixed offload goes first; a chain that names it elsewhere has it moved to
                // the front (same work, other order), one that lacks it gets it prepended.
                let c = w.chains[flow as usize];
                let mut n = Chain::new(&[first]);
                c.hops()
                    .iter()
                    .filter(|&&h| h != first)
                    .for_each(|&h| n.push(h));
                n
            }
        };
        let pkt = &mut w.pkts[id];
        pkt.flow = flow;
        let class = self.priorities.get(flow as usize).copied().unwrap_or(0);
        pkt.priority = class;
        pkt.t_parse = now;
        pkt.chain = chain;
        w.class_offered(class);
        let out = match &self.class_out {
            Some(fifos) => {
                let f = fifos[class as usize];
                if !w.room(f, bytes) {
                    w.drop_pkt(id, "ingress_full");
                    return;
                }
                f
            }
            None => self.out,
        };
        w.push(
            out,
            now,
            id,
            bytes,
            tr.head + self.latency,
            tr.tail + self.latency,
        );
    }
}

/// The DMA engine: moves finished packets to the host over its own link; the sink records
/// each packet when its last byte lands.
pub struct Dma {
    /// The FIFO it reads finished packets from.
    pub inp: FifoId,
    /// The link to the host (`dma_width_bits`, `dma_clock_mhz`).
    pub link: Link,
    /// Extra latency to the sink (`dma_latency_cycles`), in ticks.
    pub latency: u64,
}

impl Dma {
    /// The DMA engine of `pipeline` (its `dma_*` link), reading from `inp`.
    pub fn new(inp: FifoId, pipeline: &Pipeline, tb: &Timebase) -> Dma {
        let clock = tb.clock(pipeline.dma_clock_mhz);
        Dma {
            inp,
            link: Link::new(pipeline.dma_width_bits, clock),
            latency: clock.cycles(pipeline.dma_latency_cycles as u64),
        }
    }
}

impl Component<World> for Dma {
    fn ports(&self) -> Vec<Port> {
        vec![Port::new(self.link.clock).reads(&[self.inp])]
    }
    fn step(&mut self, _: usize, now: Time, w: &mut World) {
        if w.ready_front(self.inp, now).is_some() && self.link.is_free(now) {
            let slot = w.pop(self.inp, now).unwrap();
            let tr = self.link.send(now, slot.bytes, slot.tail);
            w.deliver(slot.item, tr.tail + self.latency);
            w.cal.busy_until(0, self.link.busy_until());
        }
        if let Some(s) = w.q[self.inp].front() {
            let t = self.link.free_from(s.head);
            w.cal.wake_port(0, t);
        }
    }
}
