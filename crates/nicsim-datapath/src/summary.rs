//! The datapath run's summary as types (`summary.json`; docs/summary-schema.md describes every
//! field). Serialized through `serde_json::Value`, so that keys come out sorted.

use std::collections::BTreeMap;

use nicsim_kernel::{FifoSummary, LatSummary};
use serde::Serialize;

pub use crate::measure::Verify;

/// A datapath run's summary.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// `flexpipe`, `staticpipe` or `panic`.
    pub arch: &'static str,
    /// The traffic's seed.
    pub seed: u64,
    /// Whether the offloads ran on real frames.
    pub functional: bool,
    /// The offered rate, Gbit/s.
    pub offered_gbps: f64,
    /// Throughput over the measurement window, Gbit/s.
    pub throughput_gbps: f64,
    /// The simulated time the run covers, µs.
    pub sim_time_us: f64,
    /// Whether the run ended (no packet left to move).
    pub finished: bool,
    /// Nothing can move any more, yet packets are still inside (e.g. a recirculation loop
    /// whose FIFOs are all full, as it would stay in hardware).
    pub deadlocked: bool,
    /// Packet conservation.
    pub packets: Packets,
    /// Latency of the packets in the window, µs.
    pub latency_us: LatSummary,
    /// Sojourn of the packets in the window (arrival, when the traffic offered the packet, to
    /// the sink; includes any wait to enter the datapath), µs.
    pub sojourn_us: LatSummary,
    /// Per priority class (the flows' `priority`), by class.
    pub classes: BTreeMap<String, ClassSummary>,
    /// Per flow, by name.
    pub per_flow: BTreeMap<String, FlowSummary>,
    /// Packets that took more than one pass.
    pub recirculation: Recirculation,
    /// The sink's checks of delivered packets.
    pub verify: Verify,
    /// Every FIFO, by name.
    pub fifos: BTreeMap<String, FifoSummary>,
    /// Every offload's units, by name.
    pub offloads: BTreeMap<String, UnitUse>,
    /// What the simulation engine did.
    pub engine: EngineSummary,
    /// PANIC only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub panic: Option<PanicSummary>,
}

/// Packet conservation: offered = delivered + dropped + in flight.
#[derive(Debug, Clone, Serialize)]
pub struct Packets {
    /// Packets the source offered.
    pub offered: u64,
    /// Packets the sink received.
    pub delivered: u64,
    /// Drops by reason.
    pub dropped: BTreeMap<&'static str, u64>,
    /// All drops.
    pub dropped_total: u64,
    /// Packets still inside.
    pub in_flight: u64,
}

/// One flow's results over the window.
#[derive(Debug, Clone, Serialize)]
pub struct FlowSummary {
    /// Packets delivered in the window.
    pub delivered_in_window: u64,
    /// Gbit/s over the window.
    pub throughput_gbps: f64,
    /// Latency, µs.
    pub latency_us: LatSummary,
    /// Latency per packet size (bytes, as a string key), µs.
    pub per_size: BTreeMap<String, LatSummary>,
    /// Packets delivered per chain actually taken (offload names joined by `>`).
    pub chains: BTreeMap<String, u64>,
}

/// One priority class's results (the class is the flows' `priority`).
#[derive(Debug, Clone, Serialize)]
pub struct ClassSummary {
    /// Packets of the class the Pre-Processor classified (whole run).
    pub offered: u64,
    /// Packets of the class delivered (whole run): with `dropped_total`, what is not still in
    /// flight of `offered`.
    pub delivered: u64,
    /// Packets delivered in the window.
    pub delivered_in_window: u64,
    /// Gbit/s over the window.
    pub throughput_gbps: f64,
    /// Latency (Pre-Processor to sink), µs.
    pub latency_us: LatSummary,
    /// Sojourn (arrival to sink), µs.
    pub sojourn_us: LatSummary,
    /// Drops by reason (whole run).
    pub dropped: BTreeMap<&'static str, u64>,
    /// Sum of the drops.
    pub dropped_total: u64,
}

/// Packets that took more than one pass.
#[derive(Debug, Clone, Serialize)]
pub struct Recirculation {
    /// Delivered packets that were recirculated at least once.
    pub packets_recirculated: u64,
    /// Their share of the delivered packets.
    pub fraction: f64,
}

/// One offload's units.
#[derive(Debug, Clone, Serialize)]
pub struct UnitUse {
    /// How many units it has.
    pub units: u32,
    /// Their mean busy share over the run.
    pub utilisation: f64,
}

/// What the simulation engine did.
#[derive(Debug, Clone, Serialize)]
pub struct EngineSummary {
    /// Instants visited.
    pub instants: u64,
    /// Port steps taken.
    pub steps: u64,
    /// Wake-ups requested.
    pub wakes: u64,
    /// Ticks per µs of the run's time base.
    pub ticks_per_us: u64,
}

/// PANIC's own figures.
#[derive(Debug, Clone, Serialize)]
pub struct PanicSummary {
    /// `eval` or `full`.
    pub variant: &'static str,
    /// Packets a unit sent back to the scheduler for lack of credit (full variant; always 0
    /// in the eval variant).
    pub detours: u64,
    /// Crossbar ports as modelled.
    pub crossbar_ports: u32,
}
