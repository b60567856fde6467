//! The traffic sink: throughput over a window of received packets (the paper measures from the
//! 500th to the 10,500th of 11,000), latency from the Pre-Processor to the sink overall, per
//! flow and per size (mean, min, p50, p99, max), and the check that every delivered packet
//! passed exactly its chain, in order, with its payload restored. Statistics stream: memory
//! does not grow with the number of packets. On request, a [`PacketLog`] also keeps a record
//! of every delivered packet, which the caller takes in batches (`nicsim run --packets parquet`).

use std::collections::BTreeMap;

use nicsim_kernel::{LatStats, LatSummary, Time, Timebase};
use serde::Serialize;

use crate::summary::{ClassSummary, FlowSummary};

use crate::packet::{Chain, Pkt};

#[derive(Clone, Default)]
struct FlowStats {
    /// Latency per packet size (a packet's latency is recorded once, here: the flow's and the
    /// overall statistics are these merged, see [`Sink::latency`]), in the order sizes
    /// were first seen.
    per_size: Vec<(u32, LatStats)>,
    /// Per frame size in bytes: 1 + its index in `per_size` (0: none yet).
    size_slot: Vec<u32>,
    delivered: u64,
    bytes: u64,
    /// Delivered packets (whole run) by the chain they carried (few chains per flow).
    chains: Vec<(Chain, u64)>,
}

impl FlowStats {
    fn size_stats(&mut self, size: u32) -> &mut LatStats {
        // A look-up by size, not a search: which size a packet has is random, and a search's
        // exit mispredicts.
        let s = size as usize;
        if s >= self.size_slot.len() {
            self.size_slot.resize(s + 1, 0);
        }
        if self.size_slot[s] == 0 {
            self.per_size.push((size, LatStats::default()));
            self.size_slot[s] = self.per_size.len() as u32;
        }
        &mut self.per_size[self.size_slot[s] as usize - 1].1
    }
    /// The flow's latency statistics: its sizes' merged.
    fn latency(&self) -> LatStats {
        let mut l = LatStats::default();
        self.per_size.iter().for_each(|(_, s)| l.merge(s));
        l
    }
    fn count_chain(&mut self, chain: Chain) {
        match self.chains.iter_mut().find(|(c, _)| *c == chain) {
            Some((_, n)) => *n += 1,
            None => self.chains.push((chain, 1)),
        }
    }
}

/// The sink's checks of delivered packets: those that did not pass exactly their chain, in
/// order, or whose payload was not restored (functional runs).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Verify {
    /// Packets checked.
    pub checked: u64,
    /// Packets whose offloads were not exactly their chain, in order.
    pub chain_mismatches: u64,
    /// Packets whose payload did not come back to what the sender meant.
    pub payload_mismatches: u64,
}

/// A callback that sees every delivered packet with its arrival time (egress capture).
pub type EgressHook = Box<dyn FnMut(Time, &Pkt)>;

/// One record per delivered packet, in delivery order, as columns; times in ticks. It grows
/// until the caller takes it ([`PacketLog::take`]), so a caller that keeps memory bounded takes
/// it between slices of the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PacketLog {
    /// The packet's number in generation order.
    pub id: Vec<u64>,
    /// Index of its flow in the configuration (the number of flows or more: none of them).
    pub flow: Vec<u16>,
    /// Frame bytes on the datapath (FCS included).
    pub size_bytes: Vec<u32>,
    /// When its first byte reached the MAC, was parsed, and its last byte reached the sink.
    pub t_arrival: Vec<Time>,
    /// When it was parsed (its latency starts here).
    pub t_parse: Vec<Time>,
    /// When its last byte reached the sink.
    pub t_rx: Vec<Time>,
    /// Times it went round the recirculation path.
    pub recircs: Vec<u8>,
    /// Whether it is inside the measurement window (its latency is in the statistics).
    pub in_window: Vec<bool>,
}

impl PacketLog {
    fn push(&mut self, t_rx: Time, pkt: &Pkt, in_window: bool) {
        self.id.push(pkt.id);
        self.flow.push(pkt.flow);
        self.size_bytes.push(pkt.size);
        self.t_arrival.push(pkt.t_arrival);
        self.t_parse.push(pkt.t_parse);
        self.t_rx.push(t_rx);
        self.recircs.push(pkt.recircs);
        self.in_window.push(in_window);
    }
    /// Records held.
    pub fn len(&self) -> usize {
        self.id.len()
    }
    /// Whether no records are held.
    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }
    /// The records so far; the log starts empty again.
    pub fn take(&mut self) -> PacketLog {
        std::mem::take(self)
    }
}

/// One priority class's window packets at the sink.
#[derive(Clone, Default)]
struct ClassStats {
    sojourn: LatStats,
    delivered: u64,
    bytes: u64,
}

/// The traffic sink: counts and checks delivered packets and keeps the window's throughput and
/// latency statistics.
pub struct Sink {
    ticks_per_us: u64,
    window: [u64; 2],
    /// Packets delivered so far.
    pub received: u64,
    t_window_start: Option<Time>,
    t_window_end: Time,
    window_bytes: u64,
    /// Latencies of packets of no configured flow (the flows' own are in `flows`).
    unmatched: LatStats,
    /// Per priority class (index: the packet's priority), its window packets: their sojourn
    /// (from arrival, when the traffic offered the packet, to the sink, so it includes any wait
    /// to enter the datapath), count and bytes.
    classes: Vec<ClassStats>,
    flows: Vec<FlowStats>,
    /// Each flow's class (its `priority`; PANIC may rewrite a packet's priority on a detour,
    /// its class stays its flow's).
    flow_class: Vec<u8>,
    /// The checks of delivered packets.
    pub verify: Verify,
    /// Delivered packets that went round the recirculation path at least once.
    pub recirculated: u64,
    /// Called with every delivered packet and the time it reached the sink, when set.
    pub egress: Option<EgressHook>,
    /// The egress capture, when asked for (boxed: the sink's hot fields stay together).
    pub capture: Option<Box<crate::egress_capture::EgressCapture>>,
    /// Records of delivered packets, when asked for.
    pub log: Option<PacketLog>,
}

impl Sink {
    /// A sink measuring over received-packet indices `window` [start, end), for flows whose
    /// priority classes are `flow_class` (one per flow).
    pub fn new(window: [u64; 2], flow_class: Vec<u8>, tb: &Timebase) -> Sink {
        let n_classes = flow_class
            .iter()
            .map(|&c| c as usize + 1)
            .max()
            .unwrap_or(1);
        Sink {
            ticks_per_us: tb.ticks_per_us(),
            window,
            received: 0,
            t_window_start: if window[0] == 0 {
                Some(Time::ZERO)
            } else {
                None
            },
            t_window_end: Time::ZERO,
            window_bytes: 0,
            unmatched: LatStats::default(),
            classes: vec![ClassStats::default(); n_classes],
            flows: vec![FlowStats::default(); flow_class.len()],
            flow_class,
            verify: Verify::default(),
            recirculated: 0,
            egress: None,
            capture: None,
            log: None,
        }
    }

    /// A packet's last byte reached the sink at `t_rx`.
    pub fn deliver(&mut self, t_rx: Time, pkt: &Pkt) {
        let k = self.received;
        self.received += 1;
        if pkt.recircs > 0 {
            self.recirculated += 1;
        }
        self.verify.checked += 1;
        if pkt.trace != pkt.chain {
            self.verify.chain_mismatches += 1;
        }
        if let Some(f) = &pkt.frame {
            let end = f.plain_offset + f.plain.len();
            if f.bytes.get(f.plain_offset..end) != Some(&f.plain[..]) {
                self.verify.payload_mismatches += 1;
            }
        }
        if let Some(fs) = self.flows.get_mut(pkt.flow as usize) {
            fs.count_chain(pkt.chain);
        }
        if let Some(cb) = self.egress.as_mut() {
            cb(t_rx, pkt);
        }
        if let Some(c) = self.capture.as_mut() {
            c.write(t_rx, pkt);
        }
        let [a, b] = self.window;
        if let Some(log) = self.log.as_mut() {
            log.push(t_rx, pkt, k >= a && k < b);
        }
        if k + 1 == a {
            self.t_window_start = Some(t_rx);
        }
        if k >= a && k < b {
            self.window_bytes += pkt.size as u64;
            self.t_window_end = t_rx;
            let lat = t_rx - pkt.t_parse;
            let ns = (lat * 1000).div_ceil(self.ticks_per_us);
            let class = self.class_of(pkt.flow);
            if let Some(c) = self.classes.get_mut(class) {
                let sojourn = t_rx - pkt.t_arrival;
                c.sojourn
                    .record(sojourn, (sojourn * 1000).div_ceil(self.ticks_per_us));
                c.delivered += 1;
                c.bytes += pkt.size as u64;
            }
            if let Some(fs) = self.flows.get_mut(pkt.flow as usize) {
                fs.size_stats(pkt.size).record(lat, ns);
                fs.delivered += 1;
                fs.bytes += pkt.size as u64;
            } else {
                self.unmatched.record(lat, ns);
            }
        }
    }

    /// Throughput over the window in Gbit/s (over whatever part of it was received).
    pub fn throughput_gbps(&self, tb: &Timebase) -> f64 {
        match self.t_window_start {
            Some(t0) if self.t_window_end > t0 => {
                self.window_bytes as f64 * 8.0 / (tb.ticks_to_ns(self.t_window_end - t0))
            }
            _ => 0.0,
        }
    }

    /// Length of the measured part of the window, in seconds of simulated time.
    pub fn window_seconds(&self, tb: &Timebase) -> f64 {
        match self.t_window_start {
            Some(t0) if self.t_window_end > t0 => tb.ticks_to_us(self.t_window_end - t0) / 1e6,
            _ => 0.0,
        }
    }

    /// Latency of every packet in the window.
    pub fn latency(&self, tb: &Timebase) -> LatSummary {
        let mut all = self.unmatched.clone();
        self.flows
            .iter()
            .flat_map(|fs| &fs.per_size)
            .for_each(|(_, s)| all.merge(s));
        all.summary(tb)
    }

    /// The priority class of `flow`'s packets (0 for a packet of no configured flow).
    #[inline]
    pub fn class_of(&self, flow: u16) -> usize {
        self.flow_class
            .get(flow as usize)
            .map_or(0, |&c| c as usize)
    }

    /// Sojourn of every packet in the window: arrival (when the traffic offered it) to the
    /// sink. Unlike [`Sink::latency`] it grows without bound when the datapath cannot keep up.
    pub fn sojourn(&self, tb: &Timebase) -> LatSummary {
        let mut all = LatStats::default();
        self.classes.iter().for_each(|c| all.merge(&c.sojourn));
        all.summary(tb)
    }

    /// Each priority class's results over the window, for every class a flow has (a flow's
    /// latency is merged into its class's); `offered` and `dropped` are each class's packets
    /// offered and dropped by reason (whole run; index: class).
    pub fn per_class(
        &self,
        tb: &Timebase,
        offered: &[u64],
        dropped: &[BTreeMap<&'static str, u64>],
    ) -> BTreeMap<String, ClassSummary> {
        let secs = self.window_seconds(tb);
        let mut m = BTreeMap::new();
        let flow_class = &self.flow_class;
        for (c, cs) in self.classes.iter().enumerate() {
            // The classes the flows use (priorities between them that no flow has are left out).
            if !flow_class.iter().any(|&k| k as usize == c) {
                continue;
            }
            let mut latency = LatStats::default();
            let mut delivered = 0;
            for (fs, _) in self
                .flows
                .iter()
                .zip(flow_class)
                .filter(|(_, &k)| k as usize == c)
            {
                fs.per_size.iter().for_each(|(_, l)| latency.merge(l));
                delivered += fs.chains.iter().map(|(_, n)| n).sum::<u64>();
            }
            let dropped = dropped.get(c).cloned().unwrap_or_default();
            m.insert(
                c.to_string(),
                ClassSummary {
                    offered: offered.get(c).copied().unwrap_or(0),
                    delivered,
                    delivered_in_window: cs.delivered,
                    throughput_gbps: if secs > 0.0 {
                        cs.bytes as f64 * 8.0 / secs / 1e9
                    } else {
                        0.0
                    },
                    latency_us: latency.summary(tb),
                    sojourn_us: cs.sojourn.summary(tb),
                    dropped_total: dropped.values().sum(),
                    dropped,
                },
            );
        }
        m
    }

    /// Each flow's results over the window, by flow name (`names`, in configuration order;
    /// `offloads` names the chains' hops).
    pub fn per_flow(
        &self,
        tb: &Timebase,
        names: &[String],
        offloads: &[String],
    ) -> BTreeMap<String, FlowSummary> {
        let secs = self.window_seconds(tb);
        let mut m = BTreeMap::new();
        for (name, fs) in names.iter().zip(&self.flows) {
            let per_size = fs
                .per_size
                .iter()
                .map(|(s, l)| (s.to_string(), l.summary(tb)))
                .collect();
            let chains = fs
                .chains
                .iter()
                .map(|(c, n)| {
                    let hops: Vec<&str> = c
                        .hops()
                        .iter()
                        .map(|&h| offloads.get(h as usize).map_or("?", |s| s.as_str()))
                        .collect();
                    (hops.join(">"), *n)
                })
                .collect();
            let throughput_gbps = if secs > 0.0 {
                fs.bytes as f64 * 8.0 / secs / 1e9
            } else {
                0.0
            };
            m.insert(
                name.clone(),
                FlowSummary {
                    delivered_in_window: fs.delivered,
                    throughput_gbps,
                    latency_us: fs.latency().summary(tb),
                    per_size,
                    chains,
                },
            );
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_lie_between_min_and_max() {
        let tb = Timebase::for_clocks_mhz(&[250, 150, 100, 200]);
        let mut l = LatStats::default();
        for i in 0..10_000u64 {
            let t = 900 + (i * 7919) % 40_000;
            l.record(t, (t * 1000).div_ceil(tb.ticks_per_us()));
        }
        let j = l.to_json(&tb);
        let [min, p50, p99, max] = ["min", "p50", "p99", "max"].map(|k| j[k].as_f64().unwrap());
        assert!(min <= p50 && p50 <= p99 && p99 <= max, "{j}");
        assert!((p50 - (900.0 + 20_000.0) / 3000.0).abs() < 0.1, "{j}");
    }
}
