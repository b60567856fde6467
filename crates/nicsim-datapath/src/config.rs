//! The datapath configuration: one TOML (or JSON) document, validated once on load.
//!
//! Deserialisation rejects unknown keys and wrong types with the key path
//! (`traffic.rate_gbps: invalid type ...`); [`Config::validate`](crate::Validate::validate) then checks meaning
//! (chains naming known offloads, capacities that hold a maximum-size packet, ...) and reports
//! the key path of the first problem. Every field carries its unit in its name.

use crate::packet::{Chain, HeaderKey};
use crate::preproc::Rule;
use serde::Deserialize;

pub use nicsim_kernel::config::ConfigError;
use nicsim_kernel::config::{
    check_range, check_timebase, err, Span, MAX_BUFFERED_BYTES, MAX_CLOCK_MHZ, MAX_FIFO_BYTES,
    MAX_LATENCY_CYCLES,
};

/// The largest Ethernet frame nicsim models, with its FCS (a 9,000-byte jumbo payload and
/// headroom); generated sizes and captured frames above it are refused.
pub const MAX_FRAME_BYTES: u32 = 9600;

/// How the run loop advances (`mode = "skip" | "stepped"`).
pub use nicsim_kernel::Mode;

/// The widest link or unit (bits per beat): 64 kbit, a hundred times the paper's 512-bit
/// datapath. Widths size nothing, but Eq. 1 gives units in proportion to the pipeline's.
pub const MAX_WIDTH_BITS: u32 = 1 << 16;
/// Units of one offload at most (explicit or by Eq. 1): 32 times the paper's largest (the
/// Firewall's 128). Every unit has its own queue, event slot and leaf in the units' event tree,
/// the Load Balancer looks at every unit for every packet, and PANIC's full variant makes each
/// unit a component with its own crossbar port and four FIFOs.
pub const MAX_UNITS_PER_OFFLOAD: u64 = 4096;
/// Units of all offloads together at most: 74 times the paper's 222 (and below the 16-bit
/// crossbar port number PANIC's full variant gives each unit).
pub const MAX_TOTAL_UNITS: u64 = 16384;
/// Packets offered at most (`traffic.packets`): 10^10, about three hours of simulation at a
/// million packets per second. Memory does not grow with packets; run time does.
pub const MAX_PACKETS: u64 = 10_000_000_000;
/// Latency statistics the sink may keep: one HDR histogram (32-128 kB) per (flow, frame size)
/// seen in the measurement window, so at most min(window length, flows × frame sizes) of them.
/// 32768 is about 1 GB for sub-millisecond latencies and 4 GB at the histograms' full range.
pub const MAX_LATENCY_HISTOGRAMS: u64 = 32768;
/// PANIC: credits per unit at most; units × credits is a 32-bit counter.
pub const MAX_CREDITS: u64 = 1_000_000;
/// PANIC: PIFO entries per offload at most (each a queued packet).
pub const MAX_PIFO_ENTRIES: u64 = 1 << 20;
/// PANIC: the descriptor's bits at most (it travels as beats ahead of every packet).
pub const MAX_DESCRIPTOR_BITS: u64 = 1 << 16;
/// Frame sizes counted per flow for the latency statistics when sizes come from a capture:
/// 64 to 1522 bytes, the sizes the capacity checks assume for captures.
const CAPTURE_SIZE_CLASSES: u64 = 1522 - 64 + 1;

/// The datapath architecture to model (`arch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    /// FlexPipe: each packet visits the offloads its flow's chain names, recirculating as needed.
    Flexpipe,
    /// StaticPipe: FlexPipe's structure with every packet's chain set to every offload.
    Staticpipe,
    /// PANIC (Lin et al., OSDI 2020): a central scheduler and a crossbar that steer packets to the
    /// offloads' compute engines.
    Panic,
}

impl Arch {
    /// The name as written in the configuration (`"flexpipe"`, `"staticpipe"`, `"panic"`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Arch::Flexpipe => "flexpipe",
            Arch::Staticpipe => "staticpipe",
            Arch::Panic => "panic",
        }
    }
}

/// A datapath run's configuration: the whole TOML document (see docs/config-reference.md).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Seed of every random stream (sizes, flows, arrivals, payloads, faults); same seed, same
    /// bytes.
    #[serde(default = "d_seed")]
    pub seed: u64,
    /// The architecture (`arch`).
    pub arch: Arch,
    /// Really compute the offloads (CRC, AES, ...) on real frames; off = timing only.
    #[serde(default)]
    pub functional: bool,
    /// Jump over idle time (`skip`) or visit every clock edge (`stepped`, for cross-checking).
    #[serde(default)]
    pub mode: Mode,
    /// The datapath's width, clock, FIFOs and latencies (`[pipeline]`).
    #[serde(default)]
    pub pipeline: Pipeline,
    /// The offloads, in physical order (`[[offloads]]`).
    pub offloads: Vec<OffloadCfg>,
    /// PANIC's parameters (`[panic]`, only for `arch = "panic"`).
    #[serde(default)]
    pub panic: PanicCfg,
    /// The offered traffic (`[traffic]`).
    pub traffic: Traffic,
    /// The flow types, in match priority order (`[[flows]]`).
    pub flows: Vec<FlowCfg>,
    /// The sink's measurement window and egress capture (`[measure]`).
    #[serde(default)]
    pub measure: Measure,
    /// The firewall offload's rules (`[firewall]`).
    #[serde(default)]
    pub firewall: FirewallCfg,
    /// The SDN controller's scheduled chain updates (`[[remap]]`).
    #[serde(default)]
    pub remap: Vec<RemapCfg>,
    /// Priority classes in FlexPipe and StaticPipe (`[qos]`; none by default, as in the paper).
    #[serde(default)]
    pub qos: QosCfg,
}

fn d_seed() -> u64 {
    1
}

/// The datapath's width, clock, FIFO sizes and latencies (`[pipeline]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Pipeline {
    /// Datapath width in bits (paper §IV); Eq. 1's units grow with it.
    pub width_bits: u32,
    /// Datapath clock in MHz (paper §IV); Eq. 1's units grow with it.
    pub clock_mhz: u32,
    /// Traffic Arbiter FIFOs (bypass and unit side) of every Offload.
    pub arbiter_fifo_bytes: u32,
    /// Skid buffer in front of the Pre-Processor and the DMA engine (PANIC: parser, scheduler);
    /// Offloads are directly connected.
    pub stage_fifo_bytes: u32,
    /// Input queue of every Offload Unit.
    pub unit_queue_bytes: u32,
    /// FIFO from the Egress to the Ingress Traffic Controller.
    pub recirc_fifo_bytes: u32,
    /// FIFO from the Pre-Processor to the Ingress Traffic Controller.
    pub ingress_fifo_bytes: u32,
    /// Pipeline latency of the Pre-Processor's match-action tables, in pipeline cycles.
    pub preprocessor_latency_cycles: u32,
    /// Extra latency from the DMA engine to the sink, in DMA cycles.
    pub dma_latency_cycles: u32,
    /// DMA engine to host: width and clock (PCIe side).
    pub dma_width_bits: u32,
    /// Clock of the DMA engine's link to the host, in MHz.
    pub dma_clock_mhz: u32,
}

impl Default for Pipeline {
    fn default() -> Self {
        Pipeline {
            width_bits: 512,
            clock_mhz: 250,
            arbiter_fifo_bytes: 16384,
            stage_fifo_bytes: 4096,
            unit_queue_bytes: 4096,
            recirc_fifo_bytes: 16384,
            ingress_fifo_bytes: 16384,
            preprocessor_latency_cycles: 4,
            dma_latency_cycles: 0,
            dma_width_bits: 512,
            dma_clock_mhz: 250,
        }
    }
}

/// One offload (`[[offloads]]`): its units' width, clock and delay, and how many units it has.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffloadCfg {
    /// Name used in chains.
    pub name: String,
    /// Functional kind (crc, firewall, sha3, aes, jpeg, rss); defaults to `name`.
    pub kind: Option<String>,
    /// Unit input width in bits (a multiple of 8).
    pub width_bits: u32,
    /// Unit clock in MHz.
    pub clock_mhz: u32,
    /// Non-pipelined cycles per packet: a unit serves `s` bytes in
    /// `ceil(8 s / width_bits) + delay_cycles` cycles.
    #[serde(default)]
    pub delay_cycles: u32,
    /// Number of units; default from Eq. 1.
    pub units: Option<u32>,
}

impl OffloadCfg {
    /// Eq. 1 of the FlexPipe paper: n = ceil(w_pipe/w_unit · f_pipe/f_unit + delay), in exact
    /// integer arithmetic.
    pub fn eq1_units(&self, p: &Pipeline) -> u32 {
        let num = p.width_bits as u64 * p.clock_mhz as u64;
        let den = self.width_bits as u64 * self.clock_mhz as u64;
        (num + self.delay_cycles as u64 * den).div_ceil(den) as u32
    }
    /// Eq. 1 without truncation to 32 bits (validation compares it with the limit).
    pub fn eq1_units_u64(&self, p: &Pipeline) -> u64 {
        let num = p.width_bits as u64 * p.clock_mhz as u64;
        let den = (self.width_bits as u64 * self.clock_mhz as u64).max(1);
        (num + self.delay_cycles as u64 * den).div_ceil(den)
    }
    /// Number of units: `units` if given, else Eq. 1.
    pub fn units(&self, p: &Pipeline) -> u32 {
        self.units.unwrap_or_else(|| self.eq1_units(p))
    }
    /// The functional kind: `kind` if given, else `name`.
    pub fn kind_name(&self) -> &str {
        self.kind.as_deref().unwrap_or(&self.name)
    }
}

/// One row of Eq. 1's table (`nicsim offloads units`): an offload's width, clock and delay,
/// the units Eq. 1 gives, the units the configuration uses, and one unit's line rate. Fields
/// are in the order the table's JSON has always had (by name).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Eq1Row {
    /// Unit clock in MHz.
    pub clock_mhz: u32,
    /// Non-pipelined cycles per packet.
    pub delay_cycles: u32,
    /// Units Eq. 1 gives.
    pub eq1_units: u32,
    /// The offload's name.
    pub name: String,
    /// `width_bits × clock_mhz`, in Gbit/s.
    pub unit_gbps: f64,
    /// Units the configuration uses (`units`, else Eq. 1).
    pub units: u32,
    /// Unit input width in bits.
    pub width_bits: u32,
}

impl Config {
    /// Eq. 1's table: a row per offload, in the configuration's order.
    pub fn eq1_table(&self) -> Vec<Eq1Row> {
        self.offloads
            .iter()
            .map(|o| Eq1Row {
                clock_mhz: o.clock_mhz,
                delay_cycles: o.delay_cycles,
                eq1_units: o.eq1_units(&self.pipeline),
                name: o.name.clone(),
                unit_gbps: o.width_bits as f64 * o.clock_mhz as f64 / 1e3,
                units: o.units(&self.pipeline),
                width_bits: o.width_bits,
            })
            .collect()
    }
}

/// How FlexPipe's blocks choose among priority classes (`qos.policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum QosPolicy {
    /// No classes: one ingress FIFO, and the blocks as the paper has them.
    #[default]
    None,
    /// The highest class first, at the Ingress Traffic Controller and every Traffic Arbiter.
    Strict,
    /// Byte shares by `qos.weights` (self-clocked fair queueing, see `flexpipe::qos`).
    Weighted,
}

/// Priority classes in FlexPipe and StaticPipe (`[qos]`): a flow's `priority` is its class.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct QosCfg {
    /// How the Ingress Traffic Controller and the Traffic Arbiters choose among classes.
    pub policy: QosPolicy,
    /// `weighted`: the weight of each class, indexed by priority (every class in use needs
    /// one).
    pub weights: Vec<u32>,
    /// Room the Load Balancer keeps free in every unit's input queue for the highest class in
    /// use: a packet of a lower class goes to a unit only if the queue keeps this much free.
    pub unit_reserve_bytes: u32,
}

/// What `[qos]` asks of the model, checked ([`Checked::qos`]).
#[derive(Debug, Clone)]
pub struct Qos {
    /// Strict or weighted.
    pub policy: crate::flexpipe::qos::Policy,
    /// The classes in use: 0 to `classes - 1` (the largest flow priority + 1).
    pub classes: u8,
    /// Per class, its weight (1 for classes without one; only `Weighted` reads them).
    pub weights: [u32; crate::flexpipe::qos::MAX_CLASSES],
    /// The Load Balancer's reserve for the highest class in use, in bytes.
    pub unit_reserve_bytes: u32,
}

/// Which PANIC to model (`panic.variant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PanicVariant {
    /// The FlexPipe paper's evaluation variant of the PANIC prototype.
    #[default]
    Eval,
    /// PANIC as its OSDI'20 paper describes it.
    Full,
}

impl PanicVariant {
    /// The name as written in the configuration (`"eval"`, `"full"`).
    pub fn as_str(&self) -> &'static str {
        match self {
            PanicVariant::Eval => "eval",
            PanicVariant::Full => "full",
        }
    }
}

/// PANIC's parameters (`[panic]`, only for `arch = "panic"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PanicCfg {
    /// The FlexPipe paper's evaluation variant, or PANIC as published.
    pub variant: PanicVariant,
    /// Descriptor size in bits; it travels as its own beat(s) ahead of the packet on every link.
    pub descriptor_bits: u32,
    /// Clock of the PIFO domain, in MHz.
    pub pifo_clock_mhz: u32,
    /// PIFO capacity per offload, in packets; a full PIFO drops (`pifo_full`).
    pub pifo_entries: u32,
    /// PIFO cycles the scheduler spends per dispatched packet (enqueue + dequeue).
    pub pifo_cycles_per_packet: u32,
    /// Credits per unit (packets a unit may have queued).
    pub credits: u32,
    /// The prototype's crossbar ports (informative: the eval variant has offloads + 2 ports,
    /// the full variant units + 2).
    pub crossbar_ports: u32,
    /// Latency through the crossbar, in pipeline cycles.
    pub crossbar_latency_cycles: u32,
    /// Bytes of each crossbar port buffer: one on either side of every port, and the DMA
    /// engine's input and each unit's output buffer have this size too.
    pub crossbar_port_buffer_bytes: u32,
    /// Size of one cell of the central packet buffer, in bytes.
    pub cell_bytes: u32,
    /// Cells in the central packet buffer; a packet that finds no free cell is dropped
    /// (`buffer_full`).
    pub buffer_cells: u32,
    /// Parser pipeline latency, in pipeline cycles.
    pub parser_latency_cycles: u32,
    /// Cycles a compute engine's input port takes nothing after each packet (the RTL's input
    /// state machine returns to idle after `tlast`).
    pub engine_rx_gap_cycles: u32,
    /// Cycles a compute engine's output port sends nothing after each packet (the RTL's
    /// compute state machine and registered output-arbiter grant; 2 for its AES and SHA
    /// engines).
    pub engine_tx_gap_cycles: u32,
    /// Offload every chain starts with in the eval variant (ignored by the full variant).
    pub first_offload: Option<String>,
}

impl Default for PanicCfg {
    fn default() -> Self {
        PanicCfg {
            variant: PanicVariant::Eval,
            descriptor_bits: 96,
            pifo_clock_mhz: 125,
            pifo_entries: 128,
            pifo_cycles_per_packet: 2,
            credits: 2,
            crossbar_ports: 8,
            crossbar_latency_cycles: 2,
            crossbar_port_buffer_bytes: 4096,
            cell_bytes: 1536,
            buffer_cells: 84,
            parser_latency_cycles: 4,
            engine_rx_gap_cycles: 1,
            engine_tx_gap_cycles: 1,
            first_offload: None,
        }
    }
}

/// How packet arrivals are spaced (`traffic.arrivals`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Packet i+1 arrives when packet i's bits have been offered at `rate_gbps`.
    #[default]
    Constant,
    /// Exponential gaps with mean `8·E[size]/rate`.
    Poisson,
}

/// The distribution of packet (frame) sizes (`traffic.size`, chosen by `dist`); sizes in bytes
/// include the 4-byte FCS.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "dist", rename_all = "snake_case", deny_unknown_fields)]
pub enum SizeDist {
    /// Uniform choice from a set (the paper: 64, 128, 256, 512, 1024, 1500).
    UniformSet {
        /// The sizes to choose from, in bytes.
        values: Vec<u32>,
    },
    /// Every packet the same size.
    Fixed {
        /// Frame size in bytes.
        bytes: u32,
    },
    /// A choice from a set of sizes with given weights.
    Weighted {
        /// The sizes to choose from, in bytes.
        values: Vec<u32>,
        /// Relative weight of each size, in the order of `values`.
        weights: Vec<f64>,
    },
    /// Exponentially distributed sizes, rounded and clamped to `[min_bytes, max_bytes]`.
    Exponential {
        /// Mean size in bytes.
        mean_bytes: f64,
        /// Smallest size in bytes.
        min_bytes: u32,
        /// Largest size in bytes.
        max_bytes: u32,
    },
    /// Log-normally distributed sizes, rounded and clamped to `[min_bytes, max_bytes]`.
    Lognormal {
        /// Mean of the underlying normal distribution (of the natural log of the size in bytes).
        mu: f64,
        /// Standard deviation of the underlying normal distribution.
        sigma: f64,
        /// Smallest size in bytes.
        min_bytes: u32,
        /// Largest size in bytes.
        max_bytes: u32,
    },
    /// Sizes drawn from the frames of a capture.
    Capture {
        /// Path of the capture whose frame sizes are drawn.
        path: String,
    },
}

impl Default for SizeDist {
    fn default() -> Self {
        SizeDist::UniformSet {
            values: vec![64, 128, 256, 512, 1024, 1500],
        }
    }
}

/// The timing of a replayed capture (`traffic.replay.timing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ReplayTiming {
    /// Keep the capture's inter-arrival times.
    #[default]
    Original,
    /// Rescale to `traffic.rate_gbps`.
    Rate,
}

/// A capture to replay (`traffic.replay`); flows are then assigned by the Pre-Processor's match
/// rules.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replay {
    /// Path of the capture (pcap or pcapng).
    pub path: String,
    /// Keep the capture's own timing, or rescale it to `traffic.rate_gbps`.
    #[serde(default)]
    pub timing: ReplayTiming,
}

/// Corrupted packets to send (`traffic.faults`, functional runs).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Faults {
    /// Share of packets whose FCS is corrupted on the wire.
    pub bad_fcs: f64,
    /// Share of packets whose SHA-3 tag is corrupted.
    pub bad_tag: f64,
}

/// The offered traffic (`[traffic]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Traffic {
    /// Packets offered.
    #[serde(default = "d_packets")]
    pub packets: u64,
    /// Offered rate in Gbit/s of packet (frame) bytes.
    pub rate_gbps: f64,
    /// How arrivals are spaced: constant or Poisson.
    #[serde(default)]
    pub arrivals: Arrivals,
    /// The packet size distribution.
    #[serde(default)]
    pub size: SizeDist,
    /// A capture to replay in place of generated packets.
    pub replay: Option<Replay>,
    /// Share of packets sent with a corrupted FCS or SHA-3 tag.
    #[serde(default)]
    pub faults: Faults,
}

fn d_packets() -> u64 {
    11000
}

/// The largest VLAN id (12 bits, IEEE 802.1Q).
pub const MAX_VLAN_ID: u16 = 4095;

/// A port or a port range: `80` or `"1000-2000"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum PortSpec {
    /// A single port.
    One(u16),
    /// A range `"lo-hi"`, both ends included.
    Range(String),
}

/// A flow type's ternary match (`flows[i].match`); an absent field matches anything.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct MatchCfg {
    /// Prefixes such as `10.0.0.0/8` or `2001:db8::/32`.
    pub src: Option<String>,
    /// Destination prefix, like `src`.
    pub dst: Option<String>,
    /// Source port or port range.
    pub sport: Option<PortSpec>,
    /// Destination port or port range.
    pub dport: Option<PortSpec>,
    /// Protocol: `tcp`, `udp`, `icmp` (any case) or a protocol number (as text or a number).
    #[serde(default, deserialize_with = "de_opt_proto")]
    pub proto: Option<String>,
    /// Type-of-service byte.
    pub tos: Option<u8>,
    /// VLAN id.
    pub vlan: Option<u16>,
}

/// A flow type (`[[flows]]`): its offload chain, its share of the traffic, and its packets' header
/// fields.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowCfg {
    /// The flow type's name (used by `[[remap]]`).
    pub name: String,
    /// Share of generated packets (relative to the other flows' weights).
    #[serde(default = "d_weight")]
    pub weight: f64,
    /// Offload names in processing order.
    pub chain: Vec<String>,
    /// Priority class written to the metadata (PANIC's PIFO rank).
    #[serde(default)]
    pub priority: u8,
    /// Header fields of generated packets.
    #[serde(default = "d_src")]
    pub src: String,
    /// Destination IPv4 or IPv6 address of generated packets.
    #[serde(default = "d_dst")]
    pub dst: String,
    /// Protocol of generated packets: `tcp`, `udp`, `icmp` (any case) or a protocol number (as
    /// text or a number).
    #[serde(default = "d_proto", deserialize_with = "de_proto")]
    pub proto: String,
    /// Source port of generated packets.
    #[serde(default = "d_sport")]
    pub sport: u16,
    /// Destination port of generated packets.
    #[serde(default = "d_dport")]
    pub dport: u16,
    /// Type-of-service byte of generated packets.
    #[serde(default)]
    pub tos: u8,
    /// VLAN id of generated packets (none: untagged).
    pub vlan: Option<u16>,
    /// Pre-Processor match for this flow type; default: exact match on the header fields.
    #[serde(rename = "match")]
    pub match_: Option<MatchCfg>,
}

fn d_weight() -> f64 {
    1.0
}
fn d_src() -> String {
    "10.0.0.1".into()
}
fn d_dst() -> String {
    "10.0.1.1".into()
}
fn d_proto() -> String {
    "udp".into()
}

/// A protocol given by name (`"udp"`) or by number (`17`, or `"17"`), kept as its text for
/// `nicsim_packet::ip::protocol::from_name`, which checks it.
fn de_proto<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    struct Proto;
    impl serde::de::Visitor<'_> for Proto {
        type Value = String;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a protocol name (tcp, udp, icmp) or number")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<String, E> {
            Ok(v.to_string())
        }
    }
    d.deserialize_any(Proto)
}

/// [`de_proto`] of an optional field.
fn de_opt_proto<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    de_proto(d).map(Some)
}
fn d_sport() -> u16 {
    1024
}
fn d_dport() -> u16 {
    4791
}

/// What the sink measures (`[measure]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Measure {
    /// Received-packet indices [start, end) over which throughput and latency are measured.
    pub window: [u64; 2],
    /// Write delivered packets to `egress.pcap` in the output folder.
    pub egress_pcap: bool,
}

impl Default for Measure {
    fn default() -> Self {
        Measure {
            window: [500, 10500],
            egress_pcap: false,
        }
    }
}

/// The firewall offload's configuration (`[firewall]`).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct FirewallCfg {
    /// Rules, one per entry, in the firewall's line format (`deny tcp 10.0.0.0/8 any dport 22`).
    pub rules: Vec<String>,
}

/// One scheduled chain update of the SDN controller (`[[remap]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemapCfg {
    /// Simulated time in µs from which the new chain applies.
    pub at_us: f64,
    /// Name of the flow type whose chain changes.
    pub flow: String,
    /// The new chain: offload names in processing order.
    pub chain: Vec<String>,
}

/// What validation produces ([`Config::check`](crate::Validate::check)): every string of the configuration that names
/// something, parsed once into the type the model uses.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Per flow: the header fields of its packets.
    pub headers: Vec<HeaderKey>,
    /// Per flow: the Pre-Processor's rule (its `match`, else an exact match on its headers).
    pub rules: Vec<Rule>,
    /// Per flow: its offload chain.
    pub chains: Vec<Chain>,
    /// The SDN controller's scheduled updates: (at µs, flow, chain), in configuration order.
    pub remaps: Vec<(f64, u16, Chain)>,
    /// Per offload: its functional kind (empty unless `functional`).
    pub kinds: Vec<nicsim_offloads::OffloadKind>,
    /// The firewall's rules (none configured: `None`).
    pub firewall: Option<nicsim_offloads::RuleSet>,
    /// PANIC's eval variant: the offload every chain starts with.
    pub first_offload: u8,
    /// Priority classes (`[qos]` with a policy; FlexPipe and StaticPipe only).
    pub qos: Option<Qos>,
}

impl nicsim_kernel::config::Validate for Config {
    type Checked = Checked;

    /// Check meaning beyond types, and parse every string that names something into the type
    /// the model uses ([`Checked`]): the model builds from that and parses nothing again. The
    /// first problem is reported with its key path.
    fn check(&self) -> Result<Checked, ConfigError> {
        self.check_packet_sizes()?;
        let firewall = self.check_firewall_rules()?;
        let mut kinds = Vec::new();
        let p = &self.pipeline;
        for (key, v) in [
            ("pipeline.width_bits", p.width_bits),
            ("pipeline.dma_width_bits", p.dma_width_bits),
        ] {
            check_range(key, v as u64, 1, MAX_WIDTH_BITS as u64, "bits")?;
        }
        for (key, v) in [
            ("pipeline.clock_mhz", p.clock_mhz),
            ("pipeline.dma_clock_mhz", p.dma_clock_mhz),
        ] {
            check_range(key, v as u64, 1, MAX_CLOCK_MHZ as u64, "MHz")?;
        }
        for (key, v) in [
            (
                "pipeline.preprocessor_latency_cycles",
                p.preprocessor_latency_cycles,
            ),
            ("pipeline.dma_latency_cycles", p.dma_latency_cycles),
        ] {
            check_range(key, v as u64, 0, MAX_LATENCY_CYCLES, "cycles")?;
        }
        let max_size = self.max_packet_bytes();
        for (key, v) in [
            ("pipeline.arbiter_fifo_bytes", p.arbiter_fifo_bytes),
            ("pipeline.stage_fifo_bytes", p.stage_fifo_bytes),
            ("pipeline.unit_queue_bytes", p.unit_queue_bytes),
            ("pipeline.recirc_fifo_bytes", p.recirc_fifo_bytes),
            ("pipeline.ingress_fifo_bytes", p.ingress_fifo_bytes),
        ] {
            if v < max_size {
                return err(
                    key,
                    format!("{v} bytes cannot hold the largest packet ({max_size} bytes)"),
                );
            }
            check_range(key, v as u64, 1, MAX_FIFO_BYTES, "bytes")?;
        }
        if self.offloads.is_empty() {
            return err("offloads", "at least one offload is required");
        }
        if self.offloads.len() > 15 {
            return err("offloads", "at most 15 offloads are supported");
        }
        for (i, o) in self.offloads.iter().enumerate() {
            let path = format!("offloads[{i}]");
            if o.width_bits == 0 || o.width_bits % 8 != 0 {
                return err(
                    format!("{path}.width_bits"),
                    "must be a positive multiple of 8",
                );
            }
            check_range(
                &format!("{path}.width_bits"),
                o.width_bits as u64,
                8,
                MAX_WIDTH_BITS as u64,
                "bits",
            )?;
            check_range(
                &format!("{path}.clock_mhz"),
                o.clock_mhz as u64,
                1,
                MAX_CLOCK_MHZ as u64,
                "MHz",
            )?;
            check_range(
                &format!("{path}.delay_cycles"),
                o.delay_cycles as u64,
                0,
                MAX_LATENCY_CYCLES,
                "cycles",
            )?;
            match o.units {
                Some(n) => check_range(
                    &format!("{path}.units"),
                    n as u64,
                    1,
                    MAX_UNITS_PER_OFFLOAD,
                    "units",
                )?,
                None => {
                    let n = o.eq1_units_u64(p);
                    if n > MAX_UNITS_PER_OFFLOAD {
                        return err(
                            format!("{path}.units"),
                            format!(
                                "Eq. 1 gives {n} units (pipeline {} bits at {} MHz over units of \
                                 {} bits at {} MHz with {} delay cycles), more than the \
                                 {MAX_UNITS_PER_OFFLOAD} an offload may have: set units or \
                                 narrow the gap",
                                p.width_bits,
                                p.clock_mhz,
                                o.width_bits,
                                o.clock_mhz,
                                o.delay_cycles
                            ),
                        );
                    }
                }
            }
            if self.offloads[..i].iter().any(|x| x.name == o.name) {
                return err(
                    format!("{path}.name"),
                    format!("duplicate offload name '{}'", o.name),
                );
            }
            if self.functional {
                let k = o.kind_name();
                match k.parse::<nicsim_offloads::OffloadKind>() {
                    Ok(kind) => kinds.push(kind),
                    Err(_) => return err(format!("{path}.kind"), format!("unknown offload kind '{k}' (expected crc, firewall, sha3, aes, jpeg or rss)")),
                }
            }
        }
        let total_units: u64 = self.offloads.iter().map(|o| o.units(p) as u64).sum();
        if total_units > MAX_TOTAL_UNITS {
            return err(
                "offloads",
                format!(
                    "{total_units} units in all, more than the {MAX_TOTAL_UNITS} a datapath may \
                     have"
                ),
            );
        }
        let t = &self.traffic;
        if !(t.rate_gbps.is_finite() && t.rate_gbps > 0.0) {
            return err("traffic.rate_gbps", "must be a positive number");
        }
        check_range("traffic.packets", t.packets, 1, MAX_PACKETS, "packets")?;
        for (key, v) in [
            ("traffic.faults.bad_fcs", t.faults.bad_fcs),
            ("traffic.faults.bad_tag", t.faults.bad_tag),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return err(key, "must be a share between 0 and 1");
            }
        }
        if self.flows.is_empty() {
            return err("flows", "at least one flow is required");
        }
        if self.flows.len() > u16::MAX as usize {
            return err("flows", "too many flows");
        }
        let (mut headers, mut rules, mut chains) = (Vec::new(), Vec::new(), Vec::new());
        // Names seen so far: a set, not a scan of the flows before (65,535 flows took a minute).
        let mut names = std::collections::HashSet::with_capacity(self.flows.len());
        for (i, f) in self.flows.iter().enumerate() {
            let path = format!("flows[{i}]");
            if !names.insert(f.name.as_str()) {
                return err(
                    format!("{path}.name"),
                    format!("duplicate flow name '{}'", f.name),
                );
            }
            if !(f.weight.is_finite() && f.weight >= 0.0) {
                return err(format!("{path}.weight"), "must be a non-negative number");
            }
            // An 802.1Q VLAN id is 12 bits (0..=4095).
            for (key, vlan) in [
                ("vlan", f.vlan),
                ("match.vlan", f.match_.as_ref().and_then(|m| m.vlan)),
            ] {
                if let Some(v) = vlan.filter(|v| *v > MAX_VLAN_ID) {
                    return err(
                        format!("{path}.{key}"),
                        format!("VLAN id {v} is not 0..={MAX_VLAN_ID} (12 bits, IEEE 802.1Q)"),
                    );
                }
            }
            chains.push(self.check_chain(&format!("{path}.chain"), &f.chain)?);
            let proto = crate::traffic::parse_proto(&f.proto).map_err(|m| ConfigError {
                path: format!("{path}.proto"),
                msg: m,
            })?;
            let [src, dst] = [("src", &f.src), ("dst", &f.dst)].map(|(k, a)| {
                a.parse::<std::net::IpAddr>().map_err(|_| ConfigError {
                    path: format!("{path}.{k}"),
                    msg: format!("'{a}' is not an IP address"),
                })
            });
            let (src, dst) = (src?, dst?);
            if src.is_ipv4() != dst.is_ipv4() {
                // No IP header carries both: the frames could not be built.
                return err(
                    format!("{path}.dst"),
                    format!(
                        "'{}' is {} while src '{}' is {}: a flow's addresses are of one family",
                        f.dst,
                        if dst.is_ipv4() { "IPv4" } else { "IPv6" },
                        f.src,
                        if src.is_ipv4() { "IPv4" } else { "IPv6" }
                    ),
                );
            }
            let header = HeaderKey {
                src,
                dst,
                sport: f.sport,
                dport: f.dport,
                proto,
                tos: f.tos,
                vlan: f.vlan,
            };
            rules.push(match &f.match_ {
                Some(m) => crate::preproc::Rule::from_cfg(m).map_err(|(k, msg)| ConfigError {
                    path: format!("{path}.match.{k}"),
                    msg,
                })?,
                None => crate::preproc::Rule::exact(&header),
            });
            headers.push(header);
        }
        let flow_weights = self.flows.iter().map(|f| f.weight).sum::<f64>();
        if !flow_weights.is_finite() {
            return err(
                "flows",
                "flow weights must have a finite sum (these overflow f64)",
            );
        }
        if flow_weights <= 0.0 && t.replay.is_none() {
            return err("flows", "flow weights must have a positive sum");
        }
        let [a, b] = self.measure.window;
        if a >= b {
            return err("measure.window", format!("start {a} must be below end {b}"));
        }
        if b > t.packets {
            return err(
                "measure.window",
                format!(
                    "end {b} is past the {} packets offered (traffic.packets)",
                    t.packets
                ),
            );
        }
        let histograms = (b - a).min(self.flows.len() as u64 * self.size_classes());
        if histograms > MAX_LATENCY_HISTOGRAMS {
            return err(
                "measure.window",
                format!(
                    "{} packets in the window over {} flows and {} frame sizes would keep up to \
                     {histograms} latency histograms, more than {MAX_LATENCY_HISTOGRAMS}: \
                     shorten the window or use fewer flows or sizes",
                    b - a,
                    self.flows.len(),
                    self.size_classes()
                ),
            );
        }
        let mut remaps = Vec::new();
        for (i, r) in self.remap.iter().enumerate() {
            let path = format!("remap[{i}]");
            if !(r.at_us.is_finite() && r.at_us >= 0.0) {
                return err(format!("{path}.at_us"), "must be a non-negative time in µs");
            }
            let Some(flow) = self.flows.iter().position(|f| f.name == r.flow) else {
                return err(format!("{path}.flow"), format!("unknown flow '{}'", r.flow));
            };
            let chain = self.check_chain(&format!("{path}.chain"), &r.chain)?;
            remaps.push((r.at_us, flow as u16, chain));
        }
        let mut first_offload = 0;
        if self.arch == Arch::Panic {
            let c = &self.panic;
            if c.pifo_clock_mhz == 0 || c.credits == 0 || c.pifo_entries == 0 || c.cell_bytes == 0 {
                return err(
                    "panic",
                    "pifo_clock_mhz, credits, pifo_entries and cell_bytes must be > 0",
                );
            }
            for (key, v, lo, hi, unit) in [
                (
                    "panic.pifo_clock_mhz",
                    c.pifo_clock_mhz as u64,
                    1,
                    MAX_CLOCK_MHZ as u64,
                    "MHz",
                ),
                ("panic.credits", c.credits as u64, 1, MAX_CREDITS, ""),
                (
                    "panic.pifo_entries",
                    c.pifo_entries as u64,
                    1,
                    MAX_PIFO_ENTRIES,
                    "",
                ),
                (
                    "panic.descriptor_bits",
                    c.descriptor_bits as u64,
                    0,
                    MAX_DESCRIPTOR_BITS,
                    "bits",
                ),
                (
                    "panic.pifo_cycles_per_packet",
                    c.pifo_cycles_per_packet as u64,
                    0,
                    MAX_LATENCY_CYCLES,
                    "cycles",
                ),
                (
                    "panic.crossbar_latency_cycles",
                    c.crossbar_latency_cycles as u64,
                    0,
                    MAX_LATENCY_CYCLES,
                    "cycles",
                ),
                (
                    "panic.parser_latency_cycles",
                    c.parser_latency_cycles as u64,
                    0,
                    MAX_LATENCY_CYCLES,
                    "cycles",
                ),
                (
                    "panic.engine_rx_gap_cycles",
                    c.engine_rx_gap_cycles as u64,
                    0,
                    MAX_LATENCY_CYCLES,
                    "cycles",
                ),
                (
                    "panic.engine_tx_gap_cycles",
                    c.engine_tx_gap_cycles as u64,
                    0,
                    MAX_LATENCY_CYCLES,
                    "cycles",
                ),
                (
                    "panic.crossbar_port_buffer_bytes",
                    c.crossbar_port_buffer_bytes as u64,
                    1,
                    MAX_FIFO_BYTES,
                    "bytes",
                ),
                (
                    "panic.cell_bytes",
                    c.cell_bytes as u64,
                    1,
                    MAX_FIFO_BYTES,
                    "bytes",
                ),
            ] {
                check_range(key, v, lo, hi, unit)?;
            }
            if c.cell_bytes < max_size {
                return err(
                    "panic.cell_bytes",
                    format!(
                        "{} bytes cannot hold the largest packet ({max_size} bytes)",
                        c.cell_bytes
                    ),
                );
            }
            if c.crossbar_port_buffer_bytes < max_size {
                return err(
                    "panic.crossbar_port_buffer_bytes",
                    format!("cannot hold the largest packet ({max_size} bytes)"),
                );
            }
            if let Some(f) = &c.first_offload {
                match self.offload_index(f) {
                    Some(o) => first_offload = o as u8,
                    None => return err("panic.first_offload", format!("unknown offload '{f}'")),
                }
            }
        }
        let buffered = self.buffered_bytes();
        if buffered > MAX_BUFFERED_BYTES {
            return err(
                "pipeline",
                format!(
                    "the FIFOs and buffers hold {buffered} bytes in all (unit queues count once \
                     per unit), more than {MAX_BUFFERED_BYTES}"
                ),
            );
        }
        // 64-bit time must hold the offered traffic with these clocks (a replay at the
        // capture's own timing is checked when the capture is read). Clocks that cannot hold
        // even the drain are named first, then a rate at which one packet is too long, then
        // the packet count.
        let mut spans = Vec::new();
        if !t
            .replay
            .as_ref()
            .is_some_and(|r| r.timing == ReplayTiming::Original)
        {
            let one_us = 8.0 * max_size as f64 / (t.rate_gbps * 1e3);
            spans.push(Span {
                key: "traffic.rate_gbps".into(),
                span_us: one_us,
                context: format!(
                    "one {max_size}-byte packet at {:e} Gbit/s takes {one_us:.3e} µs",
                    t.rate_gbps
                ),
            });
            spans.push(Span {
                key: "traffic.packets".into(),
                span_us: t.packets as f64 * one_us,
                context: format!(
                    "{} packets of up to {max_size} bytes at {:e} Gbit/s",
                    t.packets, t.rate_gbps
                ),
            });
        }
        check_timebase(&self.clock_keys(), &spans)?;
        let qos = self.check_qos()?;
        Ok(Checked {
            headers,
            rules,
            chains,
            remaps,
            kinds,
            firewall,
            first_offload,
            qos,
        })
    }
}

impl Config {
    /// `[qos]`: a policy other than none needs FlexPipe or StaticPipe, flow priorities of at
    /// most 7, and (weighted) a weight of 1 to 10⁶ for every class in use; the Load Balancer's
    /// reserve must leave a lower class room for the largest packet.
    fn check_qos(&self) -> Result<Option<Qos>, ConfigError> {
        use crate::flexpipe::qos::{Policy, MAX_CLASSES};
        let q = &self.qos;
        let policy = match q.policy {
            QosPolicy::None => {
                if !q.weights.is_empty() || q.unit_reserve_bytes != 0 {
                    return err(
                        "qos.policy",
                        "weights and unit_reserve_bytes need a policy (strict or weighted)",
                    );
                }
                return Ok(None);
            }
            QosPolicy::Strict => Policy::Strict,
            QosPolicy::Weighted => Policy::Weighted,
        };
        if self.arch == Arch::Panic {
            return err(
                "qos.policy",
                "priority classes are FlexPipe's and StaticPipe's; PANIC orders packets by its \
                 PIFO (set the flows' priority and leave [qos] out)",
            );
        }
        for (i, f) in self.flows.iter().enumerate() {
            if f.priority as usize >= MAX_CLASSES {
                return err(
                    format!("flows[{i}].priority"),
                    format!(
                        "with [qos], a class from 0 to {} (got {})",
                        MAX_CLASSES - 1,
                        f.priority
                    ),
                );
            }
        }
        let classes = self.flows.iter().map(|f| f.priority).max().unwrap_or(0) + 1;
        let mut weights = [1u32; MAX_CLASSES];
        if policy == Policy::Weighted {
            if q.weights.len() < classes as usize || q.weights.len() > MAX_CLASSES {
                return err(
                    "qos.weights",
                    format!(
                        "one weight per class, indexed by priority: the flows use classes 0 to \
                         {}, so {} to {MAX_CLASSES} weights (got {})",
                        classes - 1,
                        classes,
                        q.weights.len()
                    ),
                );
            }
            for (i, &w) in q.weights.iter().enumerate() {
                check_range(&format!("qos.weights[{i}]"), w as u64, 1, 1_000_000, "")?;
                weights[i] = w;
            }
        } else if !q.weights.is_empty() {
            return err("qos.weights", "weights are for policy = \"weighted\"");
        }
        let room = self
            .pipeline
            .unit_queue_bytes
            .saturating_sub(self.max_packet_bytes());
        if q.unit_reserve_bytes > room {
            return err(
                "qos.unit_reserve_bytes",
                format!(
                    "at most {room} bytes: a unit's queue ({} bytes) must keep room for the \
                     largest packet ({} bytes) of a lower class",
                    self.pipeline.unit_queue_bytes,
                    self.max_packet_bytes()
                ),
            );
        }
        Ok(Some(Qos {
            policy,
            classes,
            weights,
            unit_reserve_bytes: q.unit_reserve_bytes,
        }))
    }

    /// Position of the offload named `name` in the physical order.
    pub fn offload_index(&self, name: &str) -> Option<usize> {
        self.offloads.iter().position(|o| o.name == name)
    }

    fn check_chain(&self, path: &str, chain: &[String]) -> Result<Chain, ConfigError> {
        if chain.len() > crate::packet::MAX_CHAIN {
            return err(
                path,
                format!(
                    "chain has {} hops, at most {} supported",
                    chain.len(),
                    crate::packet::MAX_CHAIN
                ),
            );
        }
        let mut hops = Chain::default();
        for (i, name) in chain.iter().enumerate() {
            let Some(o) = self.offload_index(name) else {
                let known: Vec<&str> = self.offloads.iter().map(|o| o.name.as_str()).collect();
                return err(
                    format!("{path}[{i}]"),
                    format!("unknown offload '{name}' (known: {})", known.join(", ")),
                );
            };
            hops.push(o as u8);
        }
        Ok(hops)
    }

    /// The firewall's rules parse, whether or not the run is functional (a timing run today is
    /// a functional run tomorrow), and are few enough for the rule table's 16-bit index. A
    /// problem names the entry (`firewall.rules[i]`).
    fn check_firewall_rules(&self) -> Result<Option<nicsim_offloads::RuleSet>, ConfigError> {
        let rules = &self.firewall.rules;
        if rules.len() > u16::MAX as usize {
            return err(
                "firewall.rules",
                format!("{} rules: at most {} are supported", rules.len(), u16::MAX),
            );
        }
        if rules.is_empty() {
            return Ok(None);
        }
        let e = match nicsim_offloads::RuleSet::parse(&rules.join("\n")) {
            Ok(set) => return Ok(Some(set)),
            Err(e) => e,
        };
        // The error's line is in the rules joined by newlines: find the entry it is in.
        let mut first_line = 1;
        for (i, r) in rules.iter().enumerate() {
            let lines = r.split('\n').count();
            if e.line < first_line + lines {
                return err(format!("firewall.rules[{i}]"), e.message);
            }
            first_line += lines;
        }
        err("firewall.rules", e.to_string())
    }

    /// The traffic's packet sizes, checked before anything sized by the largest packet (a
    /// FIFO that "cannot hold" a 10 kB packet is the packet's fault, not the FIFO's).
    fn check_packet_sizes(&self) -> Result<(), ConfigError> {
        let t = &self.traffic;
        match &t.size {
            SizeDist::UniformSet { values } => check_sizes("traffic.size.values", values)?,
            SizeDist::Fixed { bytes } => check_sizes("traffic.size.bytes", &[*bytes])?,
            SizeDist::Weighted { values, weights } => {
                check_sizes("traffic.size.values", values)?;
                if weights.len() != values.len() {
                    return err(
                        "traffic.size.weights",
                        format!("has {} entries, values has {}", weights.len(), values.len()),
                    );
                }
                let sum = weights.iter().sum::<f64>();
                if weights.iter().any(|w| !(w.is_finite() && *w >= 0.0))
                    || !(sum.is_finite() && sum > 0.0)
                {
                    return err(
                        "traffic.size.weights",
                        "must be non-negative with a positive, finite sum",
                    );
                }
            }
            SizeDist::Exponential {
                mean_bytes,
                min_bytes,
                max_bytes,
            } => {
                if !(mean_bytes.is_finite() && *mean_bytes > 0.0) {
                    return err("traffic.size.mean_bytes", "must be positive");
                }
                check_bounds(*min_bytes, *max_bytes)?;
            }
            SizeDist::Lognormal {
                sigma,
                min_bytes,
                max_bytes,
                ..
            } => {
                if !(sigma.is_finite() && *sigma > 0.0) {
                    return err("traffic.size.sigma", "must be positive");
                }
                check_bounds(*min_bytes, *max_bytes)?;
            }
            SizeDist::Capture { .. } => {}
        }
        Ok(())
    }

    /// Every clock of the run with its key, in the order of [`Config::clocks_mhz`].
    pub fn clock_keys(&self) -> Vec<(String, u32)> {
        let mut v = vec![
            ("pipeline.clock_mhz".to_string(), self.pipeline.clock_mhz),
            (
                "pipeline.dma_clock_mhz".to_string(),
                self.pipeline.dma_clock_mhz,
            ),
        ];
        v.extend(
            self.offloads
                .iter()
                .enumerate()
                .map(|(i, o)| (format!("offloads[{i}].clock_mhz"), o.clock_mhz)),
        );
        if self.arch == Arch::Panic {
            v.push((
                "panic.pifo_clock_mhz".to_string(),
                self.panic.pifo_clock_mhz,
            ));
        }
        v
    }

    /// Frame sizes the traffic can have, for the latency statistics (one histogram per flow
    /// and size seen).
    fn size_classes(&self) -> u64 {
        if self.traffic.replay.is_some() {
            return CAPTURE_SIZE_CLASSES;
        }
        match &self.traffic.size {
            SizeDist::UniformSet { values } | SizeDist::Weighted { values, .. } => {
                let mut v = values.clone();
                v.sort_unstable();
                v.dedup();
                v.len() as u64
            }
            SizeDist::Fixed { .. } => 1,
            SizeDist::Exponential {
                min_bytes,
                max_bytes,
                ..
            }
            | SizeDist::Lognormal {
                min_bytes,
                max_bytes,
                ..
            } => (*max_bytes as u64).saturating_sub(*min_bytes as u64) + 1,
            SizeDist::Capture { .. } => CAPTURE_SIZE_CLASSES,
        }
    }

    /// Bytes all FIFOs and buffers of the datapath can hold together: what bounds the packets
    /// in flight (unit queues and output buffers count once per unit; PANIC's unit queues are
    /// bounded by credits instead, and its central buffer is `buffer_cells × cell_bytes`).
    pub fn buffered_bytes(&self) -> u64 {
        let p = &self.pipeline;
        let n_off = self.offloads.len() as u64;
        let units: u64 = self.offloads.iter().map(|o| o.units(p) as u64).sum();
        match self.arch {
            Arch::Flexpipe | Arch::Staticpipe => {
                // With [qos], one ingress FIFO and one lane of arbiter FIFOs per class.
                let classes = match self.qos.policy {
                    QosPolicy::None => 1,
                    _ => {
                        self.flows
                            .iter()
                            .map(|f| f.priority as u64)
                            .max()
                            .unwrap_or(0)
                            + 1
                    }
                };
                classes * p.ingress_fifo_bytes as u64
                    + p.recirc_fifo_bytes as u64
                    + p.stage_fifo_bytes as u64
                    + classes * n_off * 2 * p.arbiter_fifo_bytes as u64
                    + units * 2 * p.unit_queue_bytes as u64
            }
            Arch::Panic => {
                let c = &self.panic;
                let ports = if c.variant == PanicVariant::Full {
                    units
                } else {
                    n_off
                };
                let xbar = c.crossbar_port_buffer_bytes as u64;
                p.stage_fifo_bytes as u64
                    + (2 * ports + 2) * xbar
                    + ports * 2 * p.arbiter_fifo_bytes as u64
                    + units * xbar
                    + c.buffer_cells as u64 * c.cell_bytes as u64
            }
        }
    }

    /// Every buffer that must hold a whole packet, by key, with its size in bytes: the
    /// pipeline's FIFOs and, for PANIC, a buffer cell and a crossbar port's buffer.
    pub fn must_hold_packet(&self) -> Vec<(&'static str, u32)> {
        let p = &self.pipeline;
        let mut v = vec![
            ("pipeline.arbiter_fifo_bytes", p.arbiter_fifo_bytes),
            ("pipeline.stage_fifo_bytes", p.stage_fifo_bytes),
            ("pipeline.unit_queue_bytes", p.unit_queue_bytes),
            ("pipeline.recirc_fifo_bytes", p.recirc_fifo_bytes),
            ("pipeline.ingress_fifo_bytes", p.ingress_fifo_bytes),
        ];
        if self.arch == Arch::Panic {
            v.push(("panic.cell_bytes", self.panic.cell_bytes));
            v.push((
                "panic.crossbar_port_buffer_bytes",
                self.panic.crossbar_port_buffer_bytes,
            ));
        }
        v
    }

    /// The largest packet the traffic can hold (bytes), for capacity checks.
    pub fn max_packet_bytes(&self) -> u32 {
        match &self.traffic.size {
            SizeDist::UniformSet { values } | SizeDist::Weighted { values, .. } => {
                values.iter().copied().max().unwrap_or(0)
            }
            SizeDist::Fixed { bytes } => *bytes,
            SizeDist::Exponential { max_bytes, .. } | SizeDist::Lognormal { max_bytes, .. } => {
                *max_bytes
            }
            SizeDist::Capture { .. } => 1522,
        }
        .max(if self.traffic.replay.is_some() {
            1522
        } else {
            0
        })
    }

    /// Every clock of the run, for the timebase.
    pub fn clocks_mhz(&self) -> Vec<u32> {
        let mut v = vec![self.pipeline.clock_mhz, self.pipeline.dma_clock_mhz];
        v.extend(self.offloads.iter().map(|o| o.clock_mhz));
        if self.arch == Arch::Panic {
            v.push(self.panic.pifo_clock_mhz);
        }
        v
    }
}

fn check_sizes(key: &str, v: &[u32]) -> Result<(), ConfigError> {
    if v.is_empty() {
        return err(key, "needs at least one size");
    }
    if let Some(s) = v.iter().find(|&&s| !(64..=MAX_FRAME_BYTES).contains(&s)) {
        return err(
            key,
            format!("packet size {s} outside 64..={MAX_FRAME_BYTES} bytes"),
        );
    }
    Ok(())
}

fn check_bounds(min: u32, max: u32) -> Result<(), ConfigError> {
    if min < 64 || max > MAX_FRAME_BYTES || min > max {
        return err(
            "traffic.size",
            format!("bounds {min}..{max} must satisfy 64 <= min <= max <= {MAX_FRAME_BYTES}"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper_offloads() -> Vec<OffloadCfg> {
        let mk = |n: &str, w, f, d| OffloadCfg {
            name: n.into(),
            kind: None,
            width_bits: w,
            clock_mhz: f,
            delay_cycles: d,
            units: None,
        };
        vec![
            mk("crc", 64, 250, 0),
            mk("firewall", 8, 150, 21),
            mk("sha3", 64, 150, 25),
            mk("aes", 128, 250, 0),
            mk("jpeg", 32, 100, 0),
            mk("rss", 256, 200, 0),
        ]
    }

    #[test]
    fn eq1_gives_table2() {
        let p = Pipeline::default();
        let units: Vec<u32> = paper_offloads().iter().map(|o| o.eq1_units(&p)).collect();
        assert_eq!(units, vec![8, 128, 39, 4, 40, 3]);
    }
}
