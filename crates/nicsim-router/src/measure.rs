//! The testers' view: per input port what was offered, per output port what was forwarded
//! (packets, frame bytes and wire bytes — preamble and inter-frame gap included, as a router
//! tester counts line rate), within the measurement window, per class; latency from the
//! first bit a tester sends to the last bit it receives back (hdrhistogram percentiles).
//! Classes here are the traffic's marking (what the input NIC's classification masks say),
//! also when a NIC's classification is off and it queues everything as low priority, so that
//! the two classes' losses can be compared either way. Statistics stream: memory does not grow with the number of packets.

use std::collections::BTreeMap;

use nicsim_kernel::{LatStats, Time, Timebase};
use nicsim_packet::ethernet::wire_bytes;

use crate::summary::{PortSummary, Rates};

use crate::world::{Pkt, CLASS_NAMES};

/// Packets and bytes, per class.
#[derive(Debug, Clone, Copy, Default)]
pub struct Count {
    /// Packets, per class.
    pub packets: [u64; 2],
    /// Frame bytes (FCS included), per class.
    pub frame_bytes: [u64; 2],
}

impl Count {
    /// Count one frame of `class`.
    #[inline]
    pub fn add(&mut self, class: u8, frame_bytes: u32) {
        let c = class as usize & 1;
        self.packets[c] += 1;
        self.frame_bytes[c] += frame_bytes as u64;
    }
    /// Packets of both classes.
    pub fn total_packets(&self) -> u64 {
        self.packets[0] + self.packets[1]
    }
    /// Rates over `secs`: Mbit/s of wire bits and of frame bits, kpkt/s.
    pub fn rates(&self, secs: f64, class: Option<usize>) -> Rates {
        let (p, b) = match class {
            Some(c) => (self.packets[c], self.frame_bytes[c]),
            None => (
                self.total_packets(),
                self.frame_bytes[0] + self.frame_bytes[1],
            ),
        };
        let wire = b + p * (wire_bytes(0) as u64);
        if secs <= 0.0 {
            return Rates {
                mbps: 0.0,
                mbps_frame: 0.0,
                kpps: 0.0,
                packets: p,
            };
        }
        Rates {
            mbps: wire as f64 * 8.0 / secs / 1e6,
            mbps_frame: b as f64 * 8.0 / secs / 1e6,
            kpps: p as f64 / secs / 1e3,
            packets: p,
        }
    }
}

/// Where the testers count what they offered and what came back.
pub struct Sink {
    ticks_per_us: u64,
    /// Measurement window [start, end) in ticks.
    pub window: (Time, Time),
    /// Per input port: offered in the window, and in the whole run.
    pub offered: Vec<Count>,
    /// Per input port: offered in the whole run.
    pub offered_all: Vec<Count>,
    /// Per output port: forwarded in the window, and in the whole run.
    pub forwarded: Vec<Count>,
    /// Per output port: forwarded in the whole run.
    pub forwarded_all: Vec<Count>,
    /// Per output port and class (window).
    pub latency: Vec<[LatStats; 2]>,
    /// Per (input, output) port pair: forwarded in the window.
    pub pairs: Vec<Vec<Count>>,
}

impl Sink {
    /// An empty sink for `n_nics` ports, measuring over `window` (ticks).
    pub fn new(n_nics: usize, window: (Time, Time), tb: &Timebase) -> Sink {
        Sink {
            ticks_per_us: tb.ticks_per_us(),
            window,
            offered: vec![Count::default(); n_nics],
            offered_all: vec![Count::default(); n_nics],
            forwarded: vec![Count::default(); n_nics],
            forwarded_all: vec![Count::default(); n_nics],
            latency: (0..n_nics).map(|_| Default::default()).collect(),
            pairs: vec![vec![Count::default(); n_nics]; n_nics],
        }
    }

    #[inline]
    fn in_window(&self, t: Time) -> bool {
        t >= self.window.0 && t < self.window.1
    }

    /// A tester port started sending a packet (its first bit at `p.t_sent`).
    pub fn offer(&mut self, port: u8, p: &Pkt) {
        self.offered_all[port as usize].add(p.marked, p.frame_bytes);
        if self.in_window(p.t_sent) {
            self.offered[port as usize].add(p.marked, p.frame_bytes);
        }
    }

    /// A packet's last bit reached the tester at `t_rx` from output NIC `nic`.
    pub fn deliver(&mut self, t_rx: Time, nic: u8, p: &Pkt) {
        let o = nic as usize;
        self.forwarded_all[o].add(p.marked, p.frame_bytes);
        if self.in_window(t_rx) {
            self.forwarded[o].add(p.marked, p.frame_bytes);
            self.pairs[p.in_nic as usize][o].add(p.marked, p.frame_bytes);
            let lat = t_rx - p.t_sent;
            let ns = (lat * 1000).div_ceil(self.ticks_per_us);
            self.latency[o][p.marked as usize & 1].record(lat, ns);
        }
    }

    /// The window's length in seconds, cut at `now` when the run stopped inside it (Ctrl-C).
    pub fn window_secs(&self, tb: &Timebase, now: Time) -> f64 {
        let end = self.window.1.min(now.max(self.window.0));
        tb.ticks_to_us(end - self.window.0) / 1e6
    }

    /// Per port: offered and forwarded rates (total and per class) and latency per class, over
    /// the window up to `now`.
    pub fn ports(
        &self,
        tb: &Timebase,
        names: &[String],
        now: Time,
    ) -> BTreeMap<String, PortSummary> {
        let secs = self.window_secs(tb, now);
        let mut m = BTreeMap::new();
        for (i, name) in names.iter().enumerate() {
            let per_class = |c: &Count| {
                CLASS_NAMES
                    .iter()
                    .enumerate()
                    .map(|(k, cn)| (cn.to_string(), c.rates(secs, Some(k))))
                    .collect()
            };
            let latency_us = CLASS_NAMES
                .iter()
                .enumerate()
                .map(|(k, cn)| (cn.to_string(), self.latency[i][k].summary(tb)))
                .collect();
            let forwarded_from = names
                .iter()
                .enumerate()
                .filter(|(j, _)| self.pairs[*j][i].total_packets() > 0)
                .map(|(j, src)| (src.clone(), self.pairs[j][i].rates(secs, None)))
                .collect();
            m.insert(
                name.clone(),
                PortSummary {
                    offered: self.offered[i].rates(secs, None),
                    offered_by_class: per_class(&self.offered[i]),
                    forwarded: self.forwarded[i].rates(secs, None),
                    forwarded_by_class: per_class(&self.forwarded[i]),
                    forwarded_from,
                    latency_us,
                },
            );
        }
        m
    }
}
