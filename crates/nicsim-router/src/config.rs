//! The router configuration: one TOML (or JSON) document, validated once on load.
//!
//! Deserialisation rejects unknown keys and wrong types with the key path
//! (`nics[1].routes[0].to: ...`); [`Config::validate`](crate::Validate::validate) then checks meaning (names that exist,
//! masks that parse, FIFOs that hold a frame, rates a Gigabit port can carry) and reports the
//! key path of the first problem. Every field carries its unit in its name. Defaults are the
//! paper's prototype (docs/router.md gives the source of each).

use serde::Deserialize;

use crate::ternary::{parse_ip_ternary, parse_u8_ternary, Ternary, Ternary80};
use crate::world::{ANY, SLOW};

pub use nicsim_kernel::config::ConfigError;
use nicsim_kernel::config::{
    check_range, check_timebase, err, Span, MAX_BUFFERED_BYTES, MAX_FIFO_BYTES, MAX_LATENCY_CYCLES,
};
/// How the run loop advances (`mode = "skip" | "stepped"`).
pub use nicsim_kernel::Mode;

/// Packets the router's queues may hold at once, all NICs together: the FIFOs' bytes over the
/// 64-byte minimum frame, plus the RAM rings' slots. Each queued packet is a record in memory;
/// about four million of them (as many as the datapath's buffers allow) is some hundreds of MB.
pub const MAX_QUEUED_PACKETS: u64 = MAX_BUFFERED_BYTES / 64;

/// The whole router configuration: PC, NICs and testers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Seed of the testers' random number generators.
    #[serde(default = "d_seed")]
    pub seed: u64,
    /// How the run loop advances.
    #[serde(default)]
    pub mode: Mode,
    /// How long the run lasts and when measurement starts.
    #[serde(default)]
    pub run: Run,
    /// The PC: CPU, memory, bus and driver.
    #[serde(default)]
    pub pc: Pc,
    /// What every FPGA NIC has.
    #[serde(default)]
    pub nic: NicParams,
    /// The NICs, each with its name, subnet and tables.
    pub nics: Vec<NicCfg>,
    /// The tester ports, one per entry.
    pub traffic: Vec<TrafficCfg>,
}

fn d_seed() -> u64 {
    1
}

/// Run length and measurement window.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Run {
    /// The testers send for this long (simulated µs); the run then drains.
    pub duration_us: f64,
    /// Rates are measured from here to `duration_us`.
    pub warmup_us: f64,
}

impl Default for Run {
    fn default() -> Self {
        Run {
            duration_us: 2000.0,
            warmup_us: 200.0,
        }
    }
}

/// The PC the NICs sit in.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Pc {
    /// The CPU that runs the Linux IP stack.
    pub cpu: Cpu,
    /// Main memory, where the driver's rings live.
    pub memory: Memory,
    /// The shared PCI/PCI-X bus.
    pub bus: Bus,
    /// The NIC driver's rings.
    pub driver: Driver,
}

/// The PC's CPU.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Cpu {
    /// CPU clock (MHz).
    pub clock_mhz: u32,
    /// CPU cycles to forward one packet through the Linux IP stack (NAPI receive, route
    /// lookup, transmit), memory stalls included. 4667 at 2.8 GHz = 600 kpkt/s.
    pub forward_cycles: u32,
    /// Packets a device may hand over per NAPI poll before the next device's turn.
    pub napi_weight: u32,
}

impl Default for Cpu {
    fn default() -> Self {
        Cpu {
            clock_mhz: 2800,
            forward_cycles: 4667,
            napi_weight: 64,
        }
    }
}

/// The memory bus that DMA transfers occupy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Memory {
    /// Memory bus width (bits).
    pub width_bits: u32,
    /// Memory clock (MHz).
    pub clock_mhz: u32,
    /// Data transfers per clock (2: DDR).
    pub transfers_per_clock: u32,
    /// From a NIC's read request to the first data of the completion (split transaction: the
    /// bus is free meanwhile).
    pub read_latency_ns: u32,
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            width_bits: 128,
            clock_mhz: 100,
            transfers_per_clock: 2,
            read_latency_ns: 880,
        }
    }
}

/// The shared PCI/PCI-X bus.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Bus {
    /// Bus width (bits); one data phase carries this many bits.
    pub width_bits: u32,
    /// 33, 66, 100 or 133 (PCI-X 66 is what the paper's FPGA NICs ran at).
    pub clock_mhz: u32,
    /// Bus cycles per transaction besides its data phases: address, attribute, target
    /// response, turnaround.
    pub overhead_cycles: u32,
    /// Longest transaction; longer transfers are split and re-arbitrated.
    pub max_burst_bytes: u32,
}

impl Default for Bus {
    fn default() -> Self {
        Bus {
            width_bits: 64,
            clock_mhz: 66,
            overhead_cycles: 5,
            max_burst_bytes: 512,
        }
    }
}

/// The driver's descriptor rings in RAM.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Driver {
    /// Descriptors per ring (each NIC: two reception rings, one per class, and one transmit
    /// ring).
    pub rx_ring_slots: u32,
    /// Descriptors per transmit ring (one per NIC).
    pub tx_ring_slots: u32,
    /// Bytes of one descriptor, read or written on the bus with each slow-path packet.
    pub descriptor_bytes: u32,
}

impl Default for Driver {
    fn default() -> Self {
        Driver {
            rx_ring_slots: 256,
            tx_ring_slots: 256,
            descriptor_bytes: 16,
        }
    }
}

/// What every FPGA NIC has (the prototype's values by default).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NicParams {
    /// The IP-handling block's clock (and its 64-bit datapath).
    pub clock_mhz: u32,
    /// Width of the IP-handling block's datapath (bits).
    pub datapath_bits: u32,
    /// The Ethernet MAC's clock (8 bits per cycle: 1 Gbit/s at 125 MHz).
    pub mac_clock_mhz: u32,
    /// Every input FIFO (per output NIC and class, and the slow-path pair).
    pub input_fifo_bytes: u32,
    /// The fast-path and the slow-path output FIFO.
    pub output_fifo_bytes: u32,
    /// The MAC's receive buffer ahead of input processing.
    pub mac_rx_fifo_bytes: u32,
    /// Cycles of `clock_mhz` from a frame's last byte at the MAC to its routing decision.
    pub rx_latency_cycles: u32,
    /// REQ and RES messages, burst header, per-packet length header (bytes on the bus).
    pub msg_bytes: u32,
    /// Bytes of a burst's header.
    pub burst_header_bytes: u32,
    /// Bytes of the length header ahead of each packet in a burst.
    pub length_header_bytes: u32,
    /// An output NIC sends a RES only when its fast-path output FIFO has room for the bytes
    /// the REQ asked for, or for this many. Default: the largest frame the port takes (1518
    /// bytes, the largest untagged Ethernet frame, or the traffic's largest if it sends jumbo
    /// frames), so that the grant admits the head-of-line packet and no burst is empty for
    /// want of room; 0 is the literal reading (a RES whenever a REQ waits).
    pub res_min_free_bytes: Option<u32>,
}

impl Default for NicParams {
    fn default() -> Self {
        NicParams {
            clock_mhz: 66,
            datapath_bits: 64,
            mac_clock_mhz: 125,
            input_fifo_bytes: 15 * 1024,
            output_fifo_bytes: 15 * 1024,
            mac_rx_fifo_bytes: 4096,
            rx_latency_cycles: 4,
            msg_bytes: 8,
            burst_header_bytes: 8,
            length_header_bytes: 8,
            res_min_free_bytes: None,
        }
    }
}

/// One FPGA NIC: its port, subnet and tables.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicCfg {
    /// Name that routes, classes and tester ports refer to.
    pub name: String,
    /// The subnet behind this NIC (the Linux routing table of the slow path), e.g.
    /// `10.0.1.0/24`.
    pub subnet: String,
    /// FPGA fast path on (false: a bare-bones commercial NIC, every packet takes the slow path).
    #[serde(default = "d_true")]
    pub fast_path: bool,
    /// Classification on (false: every packet is low priority).
    #[serde(default = "d_true")]
    pub classify: bool,
    /// Ternary routing masks, matched in order; a miss takes the slow path.
    #[serde(default)]
    pub routes: Vec<RouteCfg>,
    /// Ternary classification masks; a match makes the packet high priority.
    #[serde(default)]
    pub classes: Vec<ClassCfg>,
}

fn d_true() -> bool {
    true
}

/// One ternary routing entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteCfg {
    /// 32-bit ternary mask on the destination address: `10.0.1.0/24`, `10.0.1.0/255.255.0.255`,
    /// an address (exact) or `*`.
    pub dst: String,
    /// The NIC that owns the destination.
    pub to: String,
}

/// One ternary classification entry (80 bits: ToS, source, destination, protocol).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassCfg {
    /// The destination this mask belongs to: a NIC name, `slow` (the slow-path pair) or `*`.
    #[serde(default = "d_any")]
    pub to: String,
    /// 8-bit ternary on the ToS byte: `0xb8`, `184`, `0xb8/0xfc` or `*`.
    #[serde(default = "d_any")]
    pub tos: String,
    /// 32-bit ternary on the source address, written as for [`RouteCfg::dst`].
    #[serde(default = "d_any")]
    pub src: String,
    /// 32-bit ternary on the destination address, written as for [`RouteCfg::dst`].
    #[serde(default = "d_any")]
    pub dst: String,
    /// 8-bit ternary on the IP protocol: `17`, `udp`, `tcp` or `*`.
    #[serde(default = "d_any")]
    pub proto: String,
}

fn d_any() -> String {
    "*".into()
}

/// How a tester spaces its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Evenly spaced at the offered rate (the default).
    #[default]
    Constant,
    /// Exponential gaps with the offered rate as mean (Poisson arrivals).
    Poisson,
}

/// One tester port and the flows it sends.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficCfg {
    /// The NIC the tester port is cabled to.
    pub port: String,
    /// Offered load in Mbit/s of wire bits (preamble, frame and inter-frame gap, as a tester
    /// counts line rate); at most 1000.
    pub rate_mbps: f64,
    /// Constant or Poisson spacing of the frames.
    #[serde(default)]
    pub arrivals: Arrivals,
    /// How the flows share the port: `interleaved` (each flow a stream at its weight's share,
    /// smooth weighted round robin, as a router tester sends) or `random` (each frame's flow
    /// drawn by weight).
    #[serde(default)]
    pub mix: crate::traffic::Mix,
    /// Frame size including FCS (flows may override it).
    #[serde(default = "d_frame")]
    pub frame_bytes: u32,
    /// The flows the port sends; at least one weight must be positive.
    pub flows: Vec<FlowCfg>,
}

fn d_frame() -> u32 {
    64
}

/// One flow of a tester port: the headers of its frames and its share of the port.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowCfg {
    /// Destination IPv4 address.
    pub dst: String,
    /// Default: the first address of the sending port's subnet + 1.
    pub src: Option<String>,
    /// Share of the port's frames, relative to the other flows' weights.
    #[serde(default = "d_weight")]
    pub weight: f64,
    /// IP ToS byte.
    #[serde(default)]
    pub tos: u8,
    /// IP TTL the frames leave the tester with.
    #[serde(default = "d_ttl")]
    pub ttl: u8,
    /// IP protocol, by name or number (`udp`, `tcp`, `17`).
    #[serde(default = "d_proto")]
    pub proto: String,
    /// Frame size including FCS (default: the port's `frame_bytes`).
    pub frame_bytes: Option<u32>,
}

fn d_weight() -> f64 {
    1.0
}
fn d_ttl() -> u8 {
    64
}
fn d_proto() -> String {
    "udp".into()
}

/// An IPv4 protocol by name or number (`nicsim_packet::ip::protocol::parse`).
pub fn parse_proto(s: &str) -> Result<u8, String> {
    nicsim_packet::ip::protocol::parse(s)
}

/// `a.b.c.d/len` as (network, mask).
pub fn parse_subnet(s: &str) -> Result<Ternary, String> {
    let p: nicsim_packet::ip::Prefix = s
        .trim()
        .parse()
        .map_err(|m| format!("'{s}' is not a prefix (a.b.c.d/len): {m}"))?;
    if p.is_v6() {
        return Err(format!("'{s}' is not an IPv4 prefix"));
    }
    let (value, mask) = p.bits();
    Ok(Ternary {
        value: value as u32,
        mask: mask as u32,
    })
}

/// What validation produces ([`Config::check`](crate::Validate::check)): every string of the configuration that names
/// something, parsed once into the type the model uses.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Per NIC: its subnet (its entry in the Linux routing table).
    pub subnets: Vec<Ternary>,
    /// Per NIC: its fast-path routes (destination, output NIC).
    pub routes: Vec<Vec<(Ternary, u8)>>,
    /// Per NIC: its classes (target: a NIC, `SLOW` or `ANY`; the match).
    pub classes: Vec<Vec<(u8, Ternary80)>>,
    /// Per tester port (`traffic[i]`): its NIC and its flows' addresses.
    pub ports: Vec<(u8, Vec<FlowAddrs>)>,
}

/// A flow's IPv4 addresses and protocol, as the tester writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowAddrs {
    /// Source address (given, or the port's subnet address + 1).
    pub src: u32,
    /// Destination address.
    pub dst: u32,
    /// IP protocol number.
    pub proto: u8,
}

impl nicsim_kernel::config::Validate for Config {
    type Checked = Checked;

    /// Check meaning beyond types, and parse every string that names something into the type
    /// the model uses ([`Checked`]): the model builds from that and parses nothing again. The
    /// first problem is reported with its key path.
    fn check(&self) -> Result<Checked, ConfigError> {
        let r = &self.run;
        if !(r.duration_us.is_finite() && r.duration_us > 0.0 && r.duration_us <= 1e8) {
            return err(
                "run.duration_us",
                "must be a positive time in µs (at most 1e8)",
            );
        }
        if !(r.warmup_us.is_finite() && r.warmup_us >= 0.0 && r.warmup_us < r.duration_us) {
            return err(
                "run.warmup_us",
                format!("must be >= 0 and below run.duration_us ({})", r.duration_us),
            );
        }
        let pc = &self.pc;
        for (key, v, lo, hi) in [
            ("pc.cpu.clock_mhz", pc.cpu.clock_mhz, 1, 10_000),
            (
                "pc.cpu.forward_cycles",
                pc.cpu.forward_cycles,
                1,
                MAX_LATENCY_CYCLES as u32,
            ),
            ("pc.cpu.napi_weight", pc.cpu.napi_weight, 1, 1 << 20),
            ("pc.memory.width_bits", pc.memory.width_bits, 8, 4096),
            ("pc.memory.clock_mhz", pc.memory.clock_mhz, 1, 10_000),
            (
                "pc.memory.transfers_per_clock",
                pc.memory.transfers_per_clock,
                1,
                8,
            ),
            ("pc.bus.width_bits", pc.bus.width_bits, 8, 1024),
            ("pc.bus.clock_mhz", pc.bus.clock_mhz, 1, 1000),
            ("pc.bus.max_burst_bytes", pc.bus.max_burst_bytes, 8, 1 << 20),
            (
                "pc.driver.rx_ring_slots",
                pc.driver.rx_ring_slots,
                1,
                1 << 16,
            ),
            (
                "pc.driver.tx_ring_slots",
                pc.driver.tx_ring_slots,
                1,
                1 << 16,
            ),
            (
                "pc.driver.descriptor_bytes",
                pc.driver.descriptor_bytes,
                1,
                MAX_HEADER_BYTES,
            ),
            (
                "nic.rx_latency_cycles",
                self.nic.rx_latency_cycles,
                0,
                MAX_LATENCY_CYCLES as u32,
            ),
            ("nic.clock_mhz", self.nic.clock_mhz, 1, 1000),
            ("nic.datapath_bits", self.nic.datapath_bits, 8, 1024),
            ("nic.mac_clock_mhz", self.nic.mac_clock_mhz, 1, 1000),
            ("nic.msg_bytes", self.nic.msg_bytes, 1, MAX_HEADER_BYTES),
            (
                "nic.burst_header_bytes",
                self.nic.burst_header_bytes,
                0,
                MAX_HEADER_BYTES,
            ),
            (
                "nic.length_header_bytes",
                self.nic.length_header_bytes,
                0,
                MAX_HEADER_BYTES,
            ),
        ] {
            if v < lo || v > hi {
                return err(key, format!("{v} is outside {lo}..={hi}"));
            }
        }
        if !pc.bus.width_bits.is_multiple_of(8) {
            return err("pc.bus.width_bits", "must be a multiple of 8");
        }
        if !pc.memory.width_bits.is_multiple_of(8) {
            return err("pc.memory.width_bits", "must be a multiple of 8");
        }
        if !self.nic.datapath_bits.is_multiple_of(8) {
            return err("nic.datapath_bits", "must be a multiple of 8");
        }
        self.check_time_range()?;
        if pc.bus.overhead_cycles > 1000 {
            return err("pc.bus.overhead_cycles", "must be at most 1000");
        }
        if pc.memory.read_latency_ns > 1_000_000 {
            return err("pc.memory.read_latency_ns", "must be at most 1 ms");
        }
        // Frame sizes first: a FIFO that "cannot hold" a 10 kB frame is the frame's fault.
        for (i, t) in self.traffic.iter().enumerate() {
            check_frame(&format!("traffic[{i}].frame_bytes"), t.frame_bytes)?;
            for (k, f) in t.flows.iter().enumerate() {
                if let Some(b) = f.frame_bytes {
                    check_frame(&format!("traffic[{i}].flows[{k}].frame_bytes"), b)?;
                }
            }
        }
        let max_frame = self.max_frame_bytes();
        for (key, v) in [
            ("nic.input_fifo_bytes", self.nic.input_fifo_bytes),
            ("nic.output_fifo_bytes", self.nic.output_fifo_bytes),
            ("nic.mac_rx_fifo_bytes", self.nic.mac_rx_fifo_bytes),
        ] {
            if v < max_frame {
                return err(
                    key,
                    format!("{v} bytes cannot hold the largest frame ({max_frame} bytes)"),
                );
            }
            check_range(key, v as u64, 1, MAX_FIFO_BYTES, "bytes")?;
        }
        // A RES goes out only while the fast-path output FIFO has this much room; more than
        // the FIFO holds and no RES is ever sent (0: a RES whenever a REQ waits).
        let res_min = self.res_min_free_bytes();
        if res_min > self.nic.output_fifo_bytes {
            return err(
                "nic.res_min_free_bytes",
                format!(
                    "{res_min} is more than the fast-path output FIFO holds \
                     (nic.output_fifo_bytes = {}): no RES could ever be sent",
                    self.nic.output_fifo_bytes
                ),
            );
        }
        if self.nics.len() < 2 {
            return err("nics", "a router needs at least two NICs");
        }
        if self.nics.len() > 64 {
            return err("nics", "at most 64 NICs are supported");
        }
        let queued = self.max_queued_packets();
        if queued > MAX_QUEUED_PACKETS {
            return err(
                "nics",
                format!(
                    "{} NICs with these FIFOs and rings can hold {queued} packets at once, more \
                     than {MAX_QUEUED_PACKETS}: use fewer NICs or smaller nic.*_fifo_bytes or \
                     pc.driver.*_ring_slots",
                    self.nics.len()
                ),
            );
        }
        // Every name first, so that a duplicate is reported as such and not as an unknown
        // route or class target further on.
        for (i, n) in self.nics.iter().enumerate() {
            let path = format!("nics[{i}]");
            if n.name.is_empty() || RESERVED_NAMES.contains(&n.name.as_str()) {
                return err(
                    format!("{path}.name"),
                    "must be a non-empty name other than 'slow', '*', 'cpu' and 'ram'",
                );
            }
            // Place and FIFO names are `nic0.in.nic2.low`: a name is one dot-free word.
            if n.name.contains('.') || n.name.chars().any(char::is_whitespace) {
                return err(
                    format!("{path}.name"),
                    format!("'{}' must not contain '.' or whitespace", n.name),
                );
            }
            if self.nics[..i].iter().any(|m| m.name == n.name) {
                return err(
                    format!("{path}.name"),
                    format!("duplicate NIC name '{}'", n.name),
                );
            }
        }
        let mut subnets: Vec<Ternary> = Vec::new();
        let (mut routes, mut classes) = (Vec::new(), Vec::new());
        for (i, n) in self.nics.iter().enumerate() {
            let path = format!("nics[{i}]");
            let sub = parse_subnet(&n.subnet).map_err(|m| ConfigError {
                path: format!("{path}.subnet"),
                msg: m,
            })?;
            if let Some(j) = subnets.iter().position(|s| s.overlaps(&sub)) {
                return err(
                    format!("{path}.subnet"),
                    format!("overlaps nics[{j}].subnet (subnets must be disjoint)"),
                );
            }
            subnets.push(sub);
            let mut nic_routes = Vec::new();
            for (k, rt) in n.routes.iter().enumerate() {
                let rp = format!("{path}.routes[{k}]");
                let dst = parse_ip_ternary(&rt.dst).map_err(|m| ConfigError {
                    path: format!("{rp}.dst"),
                    msg: m,
                })?;
                match self.nic_index(&rt.to) {
                    None => return err(format!("{rp}.to"), format!("unknown NIC '{}'", rt.to)),
                    Some(j) if j == i => {
                        return err(format!("{rp}.to"), "a NIC cannot route to itself")
                    }
                    Some(j) if !self.nics[j].fast_path => {
                        return err(
                            format!("{rp}.to"),
                            format!("NIC '{}' has fast_path = false", rt.to),
                        )
                    }
                    Some(j) => nic_routes.push((dst, j as u8)),
                }
            }
            routes.push(nic_routes);
            if !n.fast_path && !n.routes.is_empty() {
                return err(format!("{path}.routes"), "routes need fast_path = true");
            }
            let mut nic_classes = Vec::new();
            for (k, c) in n.classes.iter().enumerate() {
                let cp = format!("{path}.classes[{k}]");
                let dest = match c.to.as_str() {
                    "slow" => SLOW,
                    "*" => ANY,
                    other => match self.nic_index(other) {
                        Some(j) => j as u8,
                        None => {
                            return err(
                                format!("{cp}.to"),
                                format!("'{}' is not a NIC name, 'slow' or '*'", c.to),
                            )
                        }
                    },
                };
                let cp = &cp;
                let at = |key: &'static str| {
                    move |m: String| ConfigError {
                        path: format!("{cp}.{key}"),
                        msg: m,
                    }
                };
                let tos = parse_u8_ternary(&c.tos).map_err(at("tos"))?;
                let proto = crate::ternary::parse_proto_ternary(&c.proto).map_err(at("proto"))?;
                let src = parse_ip_ternary(&c.src).map_err(at("src"))?;
                let dst = parse_ip_ternary(&c.dst).map_err(at("dst"))?;
                nic_classes.push((dest, Ternary80::new(tos, src, dst, proto)));
            }
            classes.push(nic_classes);
        }
        let mut ports = Vec::new();
        if self.traffic.is_empty() {
            return err("traffic", "at least one traffic source is required");
        }
        for (i, t) in self.traffic.iter().enumerate() {
            let path = format!("traffic[{i}]");
            let Some(nic) = self.nic_index(&t.port) else {
                return err(format!("{path}.port"), format!("unknown NIC '{}'", t.port));
            };
            let mut flows = Vec::new();
            if self.traffic[..i].iter().any(|u| u.port == t.port) {
                return err(
                    format!("{path}.port"),
                    format!("NIC '{}' already has a tester port", t.port),
                );
            }
            if !(t.rate_mbps.is_finite() && t.rate_mbps > 0.0 && t.rate_mbps <= 1000.0) {
                return err(
                    format!("{path}.rate_mbps"),
                    "must be in (0, 1000] Mbit/s of wire bits (Gigabit Ethernet)",
                );
            }
            check_frame(&format!("{path}.frame_bytes"), t.frame_bytes)?;
            if t.flows.is_empty() {
                return err(format!("{path}.flows"), "at least one flow is required");
            }
            for (k, f) in t.flows.iter().enumerate() {
                let fp = format!("{path}.flows[{k}]");
                let v4 = |key: &str, a: &str| {
                    a.parse::<std::net::Ipv4Addr>()
                        .map(u32::from)
                        .map_err(|_| ConfigError {
                            path: format!("{fp}.{key}"),
                            msg: format!("'{a}' is not an IPv4 address"),
                        })
                };
                let dst = v4("dst", &f.dst)?;
                let src = if let Some(s) = &f.src {
                    v4("src", s)?
                } else {
                    // The default source is the port's subnet address + 1, which a /32 does
                    // not contain (and 255.255.255.255/32 + 1 overflows).
                    let sub = subnets[nic];
                    if sub.mask == u32::MAX {
                        return err(
                            format!("nics[{nic}].subnet"),
                            format!(
                                "a /32 has no address for the default src of {fp} \
                                 (subnet address + 1): use a shorter prefix or give the flow a src"
                            ),
                        );
                    }
                    sub.value + 1
                };
                if !(f.weight.is_finite() && f.weight >= 0.0) {
                    return err(format!("{fp}.weight"), "must be a non-negative number");
                }
                let proto = parse_proto(&f.proto).map_err(|m| ConfigError {
                    path: format!("{fp}.proto"),
                    msg: m,
                })?;
                if let Some(b) = f.frame_bytes {
                    check_frame(&format!("{fp}.frame_bytes"), b)?;
                }
                flows.push(FlowAddrs { src, dst, proto });
            }
            // Summed in flow order, as the weighted pick sums them.
            let total: f64 = t.flows.iter().map(|f| f.weight).sum();
            if !total.is_finite() {
                return err(
                    format!("{path}.flows"),
                    "flow weights must have a finite sum (these overflow f64)",
                );
            }
            if total <= 0.0 {
                return err(
                    format!("{path}.flows"),
                    "flow weights must have a positive sum",
                );
            }
            ports.push((nic as u8, flows));
        }
        Ok(Checked {
            subnets,
            routes,
            classes,
            ports,
        })
    }
}

impl Config {
    /// Index of the NIC called `name` in `nics`.
    pub fn nic_index(&self, name: &str) -> Option<usize> {
        self.nics.iter().position(|n| n.name == name)
    }

    /// Every clock of the run, for the timebase.
    pub fn clocks_mhz(&self) -> Vec<u32> {
        vec![
            self.pc.cpu.clock_mhz,
            self.pc.bus.clock_mhz,
            self.pc.memory.clock_mhz,
            self.nic.clock_mhz,
            self.nic.mac_clock_mhz,
        ]
    }

    /// The room an output waits for before it sends a RES (see `nic.res_min_free_bytes`).
    pub fn res_min_free_bytes(&self) -> u32 {
        self.nic
            .res_min_free_bytes
            .unwrap_or_else(|| self.max_frame_bytes().max(ETHERNET_MAX_FRAME_BYTES))
    }

    /// The largest frame any flow sends.
    pub fn max_frame_bytes(&self) -> u32 {
        self.traffic
            .iter()
            .flat_map(|t| {
                t.flows
                    .iter()
                    .map(move |f| f.frame_bytes.unwrap_or(t.frame_bytes))
            })
            .max()
            .unwrap_or(64)
    }
}

impl Config {
    /// Simulated time counts u64 ticks of 1 / lcm(clocks in MHz) µs. The run sends for
    /// `duration_us`, then drains: the kernel checks that the clocks leave room for it
    /// ([`check_timebase`]), naming the clock that leaves no room even for the drain, else
    /// `run.duration_us`.
    fn check_time_range(&self) -> Result<(), ConfigError> {
        // duration_us is finite and in (0, 1e8] (checked first).
        check_timebase(
            &self.clock_keys(),
            &[Span {
                key: "run.duration_us".into(),
                span_us: self.run.duration_us,
                context: String::new(),
            }],
        )
        .map(|_| ())
    }

    /// Every clock of the run with its key, in the order of [`Config::clocks_mhz`].
    pub fn clock_keys(&self) -> Vec<(String, u32)> {
        [
            "pc.cpu.clock_mhz",
            "pc.bus.clock_mhz",
            "pc.memory.clock_mhz",
            "nic.clock_mhz",
            "nic.mac_clock_mhz",
        ]
        .iter()
        .map(|k| k.to_string())
        .zip(self.clocks_mhz())
        .collect()
    }

    /// Packets all queues can hold at once: per NIC its MAC buffer, its input FIFOs (two per
    /// other NIC with a fast path, two for the slow path) and its two output FIFOs, each over
    /// the 64-byte minimum frame, and its three RAM rings' slots.
    pub fn max_queued_packets(&self) -> u64 {
        let n = self.nics.len() as u64;
        let np = &self.nic;
        let d = &self.pc.driver;
        let per_nic = (np.mac_rx_fifo_bytes as u64
            + (2 * n.saturating_sub(1) + 2) * np.input_fifo_bytes as u64
            + 2 * np.output_fifo_bytes as u64)
            / 64
            + 2 * d.rx_ring_slots as u64
            + d.tx_ring_slots as u64;
        n * per_nic
    }
}

/// The largest untagged Ethernet frame (IEEE 802.3, FCS included).
const ETHERNET_MAX_FRAME_BYTES: u32 = 1518;

/// Bytes of a bus message, descriptor or header at most (keeps per-packet bus byte counts far
/// from u32 overflow).
const MAX_HEADER_BYTES: u32 = 4096;

/// NIC names that place and FIFO names already use (`slow` and `*` in class masks, `cpu` a
/// drop place, `ram.` the driver rings).
const RESERVED_NAMES: [&str; 4] = ["slow", "*", "cpu", "ram"];

fn check_frame(key: &str, bytes: u32) -> Result<(), ConfigError> {
    if !(64..=9018).contains(&bytes) {
        return err(key, format!("frame size {bytes} outside 64..=9018 bytes"));
    }
    Ok(())
}
