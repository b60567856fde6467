//! The router run's summary as types (`summary.json`; docs/router.md "Summary schema" says
//! what every field means). Serialized through `serde_json::Value`, so that keys come out
//! sorted.

use std::collections::BTreeMap;

use nicsim_kernel::{FifoSummary, LatSummary};
use serde::Serialize;

pub use crate::world::ProtoStats;

/// A router run's summary.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The traffic's seed.
    pub seed: u64,
    /// Whether every packet was delivered or dropped.
    pub finished: bool,
    /// The simulated time the run covers, µs.
    pub sim_time_us: f64,
    /// The measurement window: warm-up and end, µs.
    pub window_us: [f64; 2],
    /// Per tester port, by NIC name: what it offered and got back over the window.
    pub ports: BTreeMap<String, PortSummary>,
    /// Packet conservation over the whole run.
    pub packets: Packets,
    /// Frame-byte conservation over the whole run.
    pub bytes: Bytes,
    /// Per class of the traffic's marking (`high`, `low`), over the whole run.
    pub classes: BTreeMap<String, ClassSummary>,
    /// Every drop count: where, which class, why.
    pub drops: Vec<Drop>,
    /// Packets dropped per place.
    pub drops_by_place: BTreeMap<String, u64>,
    /// The PCI bus.
    pub bus: BusSummary,
    /// The RAM bus.
    pub memory_bus: Utilisation,
    /// The CPU's slow path.
    pub cpu: CpuSummary,
    /// The NICs' REQ/RES/burst protocol and its invariant counters.
    pub protocol: ProtoStats,
    /// Every queue, by name.
    pub fifos: BTreeMap<String, FifoSummary>,
    /// What the simulation engine did.
    pub engine: EngineSummary,
}

/// Rates over the window.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rates {
    /// Mbit/s of wire bits (preamble, frame and gap).
    pub mbps: f64,
    /// Mbit/s of frame bits.
    pub mbps_frame: f64,
    /// Thousands of packets per second.
    pub kpps: f64,
    /// Packets.
    pub packets: u64,
}

/// One tester port over the window.
#[derive(Debug, Clone, Serialize)]
pub struct PortSummary {
    /// What it sent.
    pub offered: Rates,
    /// What it sent, per class.
    pub offered_by_class: BTreeMap<String, Rates>,
    /// What came back to it.
    pub forwarded: Rates,
    /// What came back to it, per class.
    pub forwarded_by_class: BTreeMap<String, Rates>,
    /// What came back to it, per sending port (those that sent it any).
    pub forwarded_from: BTreeMap<String, Rates>,
    /// Latency per class, µs.
    pub latency_us: BTreeMap<String, LatSummary>,
}

/// Packet conservation: offered = delivered + dropped + in flight.
#[derive(Debug, Clone, Serialize)]
pub struct Packets {
    /// Packets the testers sent.
    pub offered: u64,
    /// Packets that came back.
    pub delivered: u64,
    /// Packets dropped.
    pub dropped: u64,
    /// Packets still inside.
    pub in_flight: u64,
    /// Whether the four add up.
    pub conserved: bool,
}

/// Frame-byte conservation.
#[derive(Debug, Clone, Serialize)]
pub struct Bytes {
    /// Frame bytes the testers sent.
    pub offered: u64,
    /// Frame bytes that came back.
    pub delivered: u64,
    /// Frame bytes dropped.
    pub dropped: u64,
    /// Frame bytes still inside.
    pub in_flight: u64,
}

/// One class over the whole run.
#[derive(Debug, Clone, Serialize)]
pub struct ClassSummary {
    /// Packets offered.
    pub offered: u64,
    /// Packets delivered.
    pub delivered: u64,
    /// Packets dropped.
    pub dropped: u64,
    /// Dropped / offered.
    pub loss: f64,
}

/// One drop count.
#[derive(Debug, Clone, Serialize)]
pub struct Drop {
    /// Where: `NIC.mac_rx`, `NIC.input`, `cpu` or `NIC.output`.
    pub place: String,
    /// `high` or `low`.
    pub class: &'static str,
    /// Why (`input_fifo_full`, `no_route`, ...).
    pub reason: &'static str,
    /// Packets.
    pub packets: u64,
    /// Their frame bytes.
    pub frame_bytes: u64,
}

/// The PCI bus.
#[derive(Debug, Clone, Serialize)]
pub struct BusSummary {
    /// Its data width.
    pub width_bits: u32,
    /// Its clock.
    pub clock_mhz: u32,
    /// Width × clock, Gbit/s.
    pub peak_gbps: f64,
    /// Its busy share of the run.
    pub utilisation: f64,
    /// Transactions.
    pub transactions: u64,
    /// Data-phase cycles.
    pub data_cycles: u64,
    /// Address, arbitration and turnaround cycles.
    pub overhead_cycles: u64,
    /// Cycles per channel.
    pub cycles_by_channel: Channels,
    /// Bus bytes of packets dropped after crossing it.
    pub wasted_bytes: u64,
}

/// Bus cycles per channel.
#[derive(Debug, Clone, Serialize)]
pub struct Channels {
    /// Slow path, NIC → RAM.
    pub slow_download: u64,
    /// Slow path, RAM → NIC.
    pub slow_upload: u64,
    /// REQ and RES messages.
    pub messages: u64,
    /// Fast-path bursts.
    pub bursts: u64,
}

/// A busy share of the run.
#[derive(Debug, Clone, Serialize)]
pub struct Utilisation {
    /// Busy time over the run's.
    pub utilisation: f64,
}

/// The CPU's slow path.
#[derive(Debug, Clone, Serialize)]
pub struct CpuSummary {
    /// Busy time over the run's.
    pub utilisation: f64,
    /// Packets it forwarded per second over the run, thousands.
    pub forwarded_kpps: f64,
}

/// What the simulation engine did.
#[derive(Debug, Clone, Serialize)]
pub struct EngineSummary {
    /// Instants visited.
    pub instants: u64,
    /// Port steps taken.
    pub steps: u64,
    /// Ticks per µs of the run's time base.
    pub ticks_per_us: u64,
}
