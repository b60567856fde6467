//! FlexPipe (Zyla et al., 2023), Fig. 1 and Fig. 2, and StaticPipe on the same structure.
//!
//! Ingress Traffic Controller (recirculated traffic first, then new traffic) → Offloads in their
//! physical order → Egress Traffic Controller (done → DMA engine; not done → recirculate).
//! Each Offload: Traffic Splitter (process here, or bypass) → Load Balancer (least-loaded unit
//! by byte counters: +size when storing starts, −fragment as the unit reads) → N Offload Units
//! (a unit of w bits at f MHz with d non-pipelined cycles serves s bytes in ceil(8s/w) + d
//! cycles) → nested round robin over units that finished a whole packet → Traffic Arbiter
//! (highest demand first between the bypass FIFO and the units' FIFO, 16 kB each).
//! StaticPipe is this structure with every packet's chain set to every offload.
//!
//! The Offloads are "directly connected to each other" (§III): a Traffic Arbiter hands its
//! packet straight to the next Offload's Traffic Splitter, which "forwards the packet
//! immediately" into its bypass FIFO or a unit's queue, so the arbiter sends only when that
//! destination can take the packet (valid/ready through the splitter). The Ingress Traffic
//! Controller feeds the first Splitter the same way, and the last Arbiter feeds the Egress
//! Traffic Controller. The whole chain is one component, [`Pipeline`]. PANIC's compute
//! engines reuse [`Offload`] on its own, fed from a FIFO by a Splitter port of their own, and
//! steered by PANIC's credits in place of the Load Balancer.
//!
//! One file per block of the paper's figures: `ingress`, `splitter`, `load_balancer`, `units`,
//! `round_robin`, `arbiter`, `egress`; `offload` wires the blocks of one Offload, `handshake`
//! is the valid/ready hand-over between directly connected blocks, `pipeline` the chain, and
//! [`build`] wires FlexPipe or StaticPipe into a datapath. `qos` is beyond the paper: priority
//! classes (`[qos]`), which the Ingress Traffic Controller, the Load Balancers and the Traffic
//! Arbiters honour.

mod arbiter;
mod egress;
mod handshake;
mod ingress;
mod load_balancer;
mod offload;
mod pipeline;
pub mod qos;
mod round_robin;
mod splitter;
mod units;

pub use egress::EgressTc;
pub use handshake::{Next, Receiver, Route};
pub use ingress::IngressTc;
pub use load_balancer::LoadBalancer;
pub use offload::{Choice, Offload, Steer};
pub use pipeline::Pipeline;
pub use units::{UnitSpec, Units};

use nicsim_kernel::{Component, Link, Timebase};

use crate::config::{Arch, Config};
use crate::model::OffloadInfo;
use crate::packet::Chain;
use crate::stages::{ChainPolicy, Dma, Generator, PreProcessor};
use crate::traffic::Source;
use crate::world::World;

/// Build FlexPipe, or StaticPipe (`cfg.arch`): the MAC and Pre-Processor, the Ingress
/// Traffic Controller, the Offloads, the Egress Traffic Controller and the DMA engine; with
/// `qos`, priority classes in the Pre-Processor, the Ingress Traffic Controller, the Load
/// Balancers and the Traffic Arbiters.
#[allow(clippy::too_many_arguments)]
pub fn build(
    cfg: &Config,
    tb: &Timebase,
    world: &mut World,
    comps: &mut Vec<Box<dyn Component<World>>>,
    offloads: &mut Vec<OffloadInfo>,
    source: Source,
    priorities: Vec<u8>,
    qos: Option<&crate::config::Qos>,
) {
    let p = &cfg.pipeline;
    let pclk = tb.clock(p.clock_mhz);
    let link = Link::new(p.width_bits, pclk);
    let all = Chain::new(&(0..cfg.offloads.len() as u8).collect::<Vec<_>>());
    let staticpipe = cfg.arch == Arch::Staticpipe;
    let ing_new = world.add_fifo("ingress.new", p.ingress_fifo_bytes);
    // With classes, class 0's FIFO is `ingress.new`, and every other class has its own.
    let classes = qos.map(|q| {
        let mut fifos = vec![ing_new];
        for c in 1..q.classes {
            fifos.push(world.add_fifo(format!("ingress.new.{c}"), p.ingress_fifo_bytes));
        }
        fifos
    });
    let sched = qos.map(|q| qos::ClassSched::new(q.policy, q.weights));
    let recirc = world.add_fifo("ingress.recirc", p.recirc_fifo_bytes);
    let dma_in = world.add_fifo("dma.in", p.stage_fifo_bytes);
    // Consumers first.
    comps.push(Box::new(Dma::new(dma_in, p, tb)));
    let mut chain = Vec::new();
    for (i, o) in cfg.offloads.iter().enumerate() {
        let bypass = world.add_fifo(format!("{}.bypass", o.name), p.arbiter_fifo_bytes);
        let ufifo = world.add_fifo(format!("{}.units_out", o.name), p.arbiter_fifo_bytes);
        let spec = UnitSpec {
            width_bits: o.width_bits,
            clock: tb.clock(o.clock_mhz),
            delay_cycles: o.delay_cycles,
            out_bytes: p.unit_queue_bytes,
        };
        let units = o.units(p);
        offloads.push(OffloadInfo {
            name: o.name.clone(),
            units,
        });
        let mut lb = LoadBalancer::new(units, p.unit_queue_bytes);
        if let Some(q) = qos {
            lb = lb.with_reserve(q.unit_reserve_bytes, q.classes - 1);
        }
        let offload = Offload::new(
            i as u8,
            o.name.clone(),
            units,
            spec,
            (p.width_bits, pclk),
            staticpipe,
            [bypass, ufifo],
            lb,
        );
        chain.push(match (&sched, qos) {
            (Some(s), Some(q)) => {
                // Classes above 0 get a lane of their own: a bypass and a units' FIFO.
                let lanes: Vec<[_; 2]> = (1..q.classes)
                    .map(|c| {
                        [
                            world.add_fifo(format!("{}.bypass.{c}", o.name), p.arbiter_fifo_bytes),
                            world.add_fifo(
                                format!("{}.units_out.{c}", o.name),
                                p.arbiter_fifo_bytes,
                            ),
                        ]
                    })
                    .collect();
                offload.with_classes(s.clone(), &lanes)
            }
            _ => offload,
        });
    }
    comps.push(Box::new(Pipeline::new(
        IngressTc {
            new: ing_new,
            recirc,
            link: link.clone(),
            classes: classes.clone().zip(sched),
        },
        chain,
        EgressTc {
            dma: dma_in,
            recirc,
        },
    )));
    // The MAC streams each packet straight into the Pre-Processor.
    let pre = PreProcessor {
        out: ing_new,
        latency: pclk.cycles(p.preprocessor_latency_cycles as u64),
        policy: if staticpipe {
            ChainPolicy::All(all)
        } else {
            ChainPolicy::Table
        },
        descriptor_beats: 0,
        priorities,
        class_out: classes,
    };
    comps.push(Box::new(Generator::new(
        source,
        link,
        pre,
        staticpipe.then_some(all),
    )));
}
