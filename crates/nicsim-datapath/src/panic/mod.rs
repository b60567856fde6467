//! PANIC (Lin et al., OSDI 2020), following its public RTL (`panic_define.v`,
//! `compute_engine.v`, `panic_scheduler.v`, `pifo_warp.v`), in two variants (`panic.variant`).
//!
//! Common to both: the parser (Pre-Processor, `panic.parser_latency_cycles`) writes a descriptor
//! of `panic.descriptor_bits` that travels as its own beat(s) *ahead of* the packet on every
//! link → the central Scheduler: a packet buffer of `panic.buffer_cells` cells of
//! `panic.cell_bytes` (no free cell → drop `buffer_full`; a cell is freed when the crossbar reads
//! the packet out), one PIFO of `panic.pifo_entries` per offload (full → drop `pifo_full`) in a
//! `panic.pifo_clock_mhz` domain behind clock-domain crossings of 2 PIFO cycles, one enqueue per
//! PIFO cycle and one dequeue per PIFO every `panic.pifo_cycles_per_packet` PIFO cycles, at most
//! 8 descriptors in the dispatch FIFO → a crossbar of 512-bit (`pipeline.width_bits`) ports at
//! the pipeline clock (a transfer holds the sender's and the receiver's port for descriptor +
//! data beats, round robin per receiving port, `panic.crossbar_latency_cycles`, an input buffer
//! of `panic.crossbar_port_buffer_bytes` per port) → compute engines (the `Offload` component;
//! an engine's input port takes nothing for `panic.engine_rx_gap_cycles` after each packet and
//! its output port sends nothing for `panic.engine_tx_gap_cycles`, as `compute_engine.v`'s state
//! machines do; `panic.credits` per engine) → the next
//! offload over the crossbar (push-based chaining) → the DMA engine.
//!
//! **`eval`** (default): the FlexPipe paper's evaluation variant (its §IV). The units of one
//! offload sit behind one crossbar port (`offloads.len() + 2` ports: 8 for the paper's six, the
//! prototype's `panic.crossbar_ports`); the scheduler dispatches while the module has credit
//! (units × credits minus packets held or on their way); the module's ingress picks the unit
//! (sticky: the same unit until it has no credit); no detours; every chain starts with a fixed
//! offload (`panic.first_offload`, by default the first in physical order), moved to the
//! front of a chain that names it elsewhere and prepended to one that lacks it.
//!
//! **`full`**: PANIC as published. Every unit is its own crossbar port, so the crossbar grows to
//! units + 2 ports (scheduler, DMA engine) whatever `panic.crossbar_ports` says (the summary's
//! `panic.crossbar_ports` gives the modelled count). Chains are the flow table's, unchanged;
//! `panic.first_offload` is ignored. Credits are per unit (`Shared::free_credits`, one
//! slot per unit): free = credits − packets the unit holds − credits the scheduler took for
//! packets on their way to it.
//! - First hop: the PIFO of the packet's first offload dequeues only when some unit of that
//!   offload has a free credit; the packet goes to the unit with the most (lowest index on a
//!   tie), whose credit is taken at dispatch (the packet is *credited* to it, see `credits`).
//! - Push-based chaining: a finished packet goes straight to its next offload's predetermined
//!   unit with no credit check by the sender. Per offload a sticky pointer (kept by the
//!   crossbar, standing for the scheduler's table) names that unit; it stays while the unit has
//!   a free credit and otherwise moves, at the next push, to the unit with the most free
//!   credits (lowest index on a tie; it stays if none has one).
//! - The receiving unit decides on arrival: a `credited` packet, or any packet while a credit
//!   is free, is accepted (taking the credit); otherwise the whole packet goes back out of the
//!   unit with its *detour* tag set and the crossbar sends it to the scheduler's port (a *detour*,
//!   counted in the summary as `panic.detours`). The scheduler writes it back into a buffer cell
//!   and enqueues it in the PIFO of that offload with priority − 1 (saturating at 0; the
//!   descriptor's priority is rewritten); it is then dispatched like a first hop.
//! - A credit comes back when the last beat of the finished packet has left the engine.
//! - A finished packet (or one with an empty chain, through an extra PIFO without credits) goes
//!   to the DMA engine's port.
//!
//! One file per mechanism: `buffer` (the central packet buffer), `pifo`, `scheduler`,
//! `credits` (the compute engines' steering, see `flexpipe::Steer`), `crossbar`; [`build`]
//! wires them. The compute engines are FlexPipe's `Offload` on its own, with PANIC's credits.

mod buffer;
mod credits;
mod crossbar;
mod pifo;
mod scheduler;

pub use buffer::PacketBuffer;
pub use credits::{Credits, Tags};
pub use crossbar::Crossbar;
pub use pifo::Pifo;
pub use scheduler::Scheduler;

use std::collections::VecDeque;

use nicsim_kernel::{Component, Link, Time, Timebase};

use crate::config::{Config, PanicVariant};
use crate::flexpipe::{Offload, UnitSpec};
use crate::model::OffloadInfo;
use crate::stages::{ChainPolicy, Dma, Generator, PreProcessor};
use crate::traffic::Source;
use crate::world::{FifoId, World};
use scheduler::FullSched;

/// What PANIC's components share through the world (`World::panic`; its default, for the
/// other architectures, holds nothing).
#[derive(Debug, Default)]
pub struct Shared {
    /// The central packet buffer.
    pub buffer: PacketBuffer,
    /// Free credits per credit holder. Eval variant: one per offload module (units × credits −
    /// packets held); full variant: one per unit (credits − packets held − credits the
    /// scheduler took for packets on their way to it).
    pub free_credits: Vec<u32>,
    /// The packets' credit and detour tags.
    pub tags: Tags,
    /// Packets sent back to the scheduler because their next unit had no credit.
    pub detours: u64,
    /// Ports of the crossbar as modelled (for the summary).
    pub crossbar_ports: u32,
}

/// Build PANIC: the parser, the scheduler, the crossbar and one engine port per offload module
/// (eval variant, all of an offload's units behind it) or per unit (full variant).
#[allow(clippy::too_many_arguments)]
pub fn build(
    cfg: &Config,
    first_offload: u8,
    tb: &Timebase,
    world: &mut World,
    comps: &mut Vec<Box<dyn Component<World>>>,
    offloads: &mut Vec<OffloadInfo>,
    source: Source,
    priorities: Vec<u8>,
) {
    let p = &cfg.pipeline;
    let c = &cfg.panic;
    let full = c.variant == PanicVariant::Full;
    let fclk = tb.clock(p.clock_mhz);
    let pifo_clk = tb.clock(c.pifo_clock_mhz);
    let link = Link::new(p.width_bits, fclk);
    let desc_beats = (c.descriptor_bits as u64).div_ceil(p.width_bits as u64);
    let sched_in = world.add_fifo("scheduler.in", p.stage_fifo_bytes);
    let sched_out = world.add_fifo("scheduler.dispatch", u32::MAX);
    let detour_in =
        full.then(|| world.add_fifo("scheduler.detour_in", c.crossbar_port_buffer_bytes));
    let dma_in = world.add_fifo("dma.in", c.crossbar_port_buffer_bytes);

    // Engine ports: (offload, units behind the port, name); offload `o` owns ports
    // `base[o]..base[o + 1]`.
    let mut ports: Vec<(usize, u32, String)> = Vec::new();
    let mut base = vec![0usize];
    for (i, o) in cfg.offloads.iter().enumerate() {
        let units = o.units(p);
        offloads.push(OffloadInfo {
            name: o.name.clone(),
            units,
        });
        if full {
            ports.extend((0..units).map(|k| (i, 1, format!("{}[{k}]", o.name))));
        } else {
            ports.push((i, units, o.name.clone()));
        }
        base.push(ports.len());
    }
    let port_in: Vec<FifoId> = ports
        .iter()
        .map(|(_, _, name)| world.add_fifo(format!("{name}.xbar_in"), c.crossbar_port_buffer_bytes))
        .collect();
    let port_out: Vec<FifoId> = ports
        .iter()
        .map(|(_, _, name)| {
            world.add_fifo(format!("{name}.xbar_out"), c.crossbar_port_buffer_bytes)
        })
        .collect();
    world.panic = Shared {
        buffer: PacketBuffer::new(c.buffer_cells),
        free_credits: ports
            .iter()
            .map(|&(_, units, _)| units * c.credits)
            .collect(),
        crossbar_ports: ports.len() as u32 + 2,
        ..Shared::default()
    };

    comps.push(Box::new(Dma::new(dma_in, p, tb)));
    let srcs: Vec<FifoId> = std::iter::once(sched_out)
        .chain(port_out.iter().copied())
        .collect();
    let dsts: Vec<FifoId> = port_in
        .iter()
        .copied()
        .chain([dma_in])
        .chain(detour_in)
        .collect();
    comps.push(Box::new(Crossbar {
        clk: fclk,
        src_links: srcs.iter().map(|_| link.clone()).collect(),
        dst_links: dsts.iter().map(|_| link.clone()).collect(),
        rr: vec![0; dsts.len()],
        pick: vec![usize::MAX; dsts.len()],
        granted: Vec::new(),
        srcs,
        dsts,
        sticky: base[..cfg.offloads.len()].to_vec(),
        base: base.clone(),
        descriptor_beats: desc_beats,
        latency: fclk.cycles(c.crossbar_latency_cycles as u64),
    }));
    for (port, (i, units, name)) in ports.into_iter().enumerate() {
        let o = &cfg.offloads[i];
        let spec = UnitSpec {
            width_bits: o.width_bits,
            clock: tb.clock(o.clock_mhz),
            delay_cycles: o.delay_cycles,
            out_bytes: c.crossbar_port_buffer_bytes,
        };
        let ufifo = world.add_fifo(format!("{name}.units_out"), p.arbiter_fifo_bytes);
        let detour = world.add_fifo(format!("{name}.detour"), p.arbiter_fifo_bytes);
        let credits = if full {
            Credits::engine(c.credits, port, port_in[port])
        } else {
            Credits::module(units, c.credits, port, port_in[port])
        };
        let engine = Offload::new(
            i as u8,
            name,
            units,
            spec,
            (p.width_bits, fclk),
            true,
            [detour, ufifo],
            credits,
        )
        .alone(port_in[port], port_out[port])
        .with_port_gaps(c.engine_rx_gap_cycles as u64, c.engine_tx_gap_cycles as u64);
        comps.push(Box::new(engine));
    }
    // The full variant has one more PIFO, without credits, for packets whose chain is empty.
    let n_pifos = cfg.offloads.len() + full as usize;
    comps.push(Box::new(Scheduler {
        fclk,
        pclk: pifo_clk,
        inp: sched_in,
        out: sched_out,
        pifos: (0..n_pifos)
            .map(|_| Pifo::new(c.pifo_entries as usize))
            .collect(),
        cdc_in: VecDeque::new(),
        next_deq: vec![Time::ZERO; n_pifos],
        deq_interval: pifo_clk.cycles(c.pifo_cycles_per_packet as u64),
        cdc_latency: pifo_clk.cycles(2),
        module_in: port_in,
        dispatch_depth: 8,
        full: detour_in.map(|detour_in| FullSched { base, detour_in }),
    }));
    let policy = if full {
        ChainPolicy::Table
    } else {
        ChainPolicy::FirstFixed(first_offload)
    };
    // The MAC streams each packet straight into the parser.
    let parser = PreProcessor {
        out: sched_in,
        latency: fclk.cycles(c.parser_latency_cycles as u64),
        policy,
        descriptor_beats: desc_beats,
        priorities,
        class_out: None,
    };
    comps.push(Box::new(Generator::new(source, link, parser, None)));
}
