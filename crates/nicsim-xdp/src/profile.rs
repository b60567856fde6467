//! Profiling an XDP program on a capture (issue 36, `nicsim xdp profile`): every packet of the
//! capture runs through the interpreter ([`crate::interp`]) in order, on one map state carried
//! from packet to packet as in a deployment, and the instructions it executed are followed
//! through the analysis's costed graph ([`Analysis::dag`]), so that each packet's path is costed
//! by the analysis's own cost function ([`crate::paths::path_cost`], [`crate::paths::rate_of`]): the same
//! edges and cost vectors the search ranks paths by, not a second model.
//!
//! Per packet the profile keeps a fixed-size row ([`PacketRow`]: time, length, action, path id,
//! cost vector); per distinct path one [`PathStat`]; and the [`TOP_PACKETS`] costliest packets'
//! bytes. Nothing else grows with the capture: the interpreter's run and the walk through the
//! graph reuse their buffers' capacity, the capture is streamed a record at a time.
//!
//! Packets shorter than the target's minimum are padded with zeros to it (the wire pads a frame
//! to 60 bytes; a capture taken on a host leaves the padding out), packets longer than the
//! target's MTU plus the Ethernet header are skipped and counted (no XDP program of that target
//! sees them: a capture taken after GRO holds such packets). A capture of another link type
//! (Linux cooked, raw IP, loopback, …) gives each packet as the Ethernet frame with its
//! EtherType ([`ethernet_frame`]); packets that have none (802.11, PPP) are counted, not run.

use std::collections::HashMap;
use std::path::Path;

use nicsim_packet::capture::{CaptureError, CaptureReader};
use nicsim_packet::decode::{ethernet_frame, linktype};
use serde::Serialize;

use crate::analysis::Analysis;
use crate::cost::{Dag, NC};
use crate::differential::match_trace;
use crate::interp::{self, MapState, RunOptions};
use crate::load::Program;
use crate::paths::{path_cost, rate_at, rate_of, Rate};
use crate::target::Target;

/// The costliest packets whose bytes the profile keeps (written as a pcap).
pub const TOP_PACKETS: usize = 20;
/// Faults and unmatched traces described by message (the rest are counted).
pub const KEPT_MESSAGES: usize = 10;
/// The path id of a packet that took no costed path (a fault, a trace the graph does not
/// follow, a skipped packet).
pub const NO_PATH: u32 = u32::MAX;
/// The action of a packet whose run faulted.
pub const ACTION_FAULT: u32 = u32::MAX;
/// The action of a packet that was skipped (longer than the target's MTU + 14).
pub const ACTION_SKIPPED: u32 = u32::MAX - 1;
/// The action of a packet whose trace no path of the graph follows.
pub const ACTION_UNMATCHED: u32 = u32::MAX - 2;
/// The action of a packet of another link type that gives no Ethernet frame (802.11, PPP,
/// not IP: [`nicsim_packet::decode::ethernet_frame`]).
pub const ACTION_NOT_ETHERNET: u32 = u32::MAX - 3;

/// One packet of the capture, profiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketRow {
    /// Capture time (ns since the Unix epoch).
    pub ts_ns: u64,
    /// Bytes the program ran on (the captured bytes, padded to the target's minimum).
    pub bytes: u32,
    /// The XDP action (r0 at exit), or [`ACTION_FAULT`], [`ACTION_SKIPPED`], [`ACTION_UNMATCHED`].
    pub action: u32,
    /// Index into [`Profile::paths`], or [`NO_PATH`].
    pub path: u32,
    /// The path's cost vector (millionths of a cycle: core cycles, DRAM-engine cycles).
    pub cost: [u64; NC],
}

/// A distinct path the capture's packets took.
#[derive(Debug, Clone, Serialize)]
pub struct PathStat {
    /// Its id (index in [`Profile::paths`], in order of first appearance).
    pub id: u32,
    /// Packets that took it.
    pub packets: u64,
    /// Index in the capture of the first packet that took it.
    pub first_packet: u64,
    /// Its action (r0 at exit).
    pub retval: u32,
    /// Instructions executed on it.
    pub insns: u32,
    /// Its cost vector (millionths of a cycle).
    pub cost: [u64; NC],
    /// Core cycles of the path.
    pub core_cycles: f64,
    /// DRAM-engine cycles of the path.
    pub dram_cycles: f64,
    /// Its packet rate on the target (MAC limit as the profile's target has it).
    pub pps: f64,
    /// What limits that rate: `mac`, `cores` or `dram`.
    pub bottleneck: &'static str,
    /// The target's time per packet on it, cores and DRAM engine alone (ns: 1e9 over the rate
    /// without the MAC limit).
    pub ns: f64,
    /// The largest packet length its bounds checks guarantee (at least the target's minimum):
    /// the minimum packet size the analysis gives the path.
    pub min_packet_bytes: u32,
}

/// A packet the profile keeps the bytes of.
#[derive(Debug, Clone, Serialize)]
pub struct KeptPacket {
    /// Index in the capture.
    pub index: u64,
    /// Capture time (ns).
    pub ts_ns: u64,
    /// The target's time per packet on its path (ns, as [`PathStat::ns`]).
    pub ns: f64,
    /// Its path id.
    pub path: u32,
    /// The bytes it ran on (hex).
    pub packet_hex: String,
}

/// A packet described by message (a fault, an unmatched trace).
#[derive(Debug, Clone, Serialize)]
pub struct Noted {
    /// Index in the capture.
    pub index: u64,
    /// What happened.
    pub what: String,
}

/// Why a capture could not be profiled.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The capture could not be read.
    #[error("{file}: {source}")]
    Capture {
        /// The capture's path.
        file: String,
        /// The reader's error (names the offset).
        source: CaptureError,
    },
}

/// The profile of a capture, built one packet at a time ([`Profile::packet`]).
pub struct Profile<'a> {
    dag: &'a Dag,
    program: &'a Program,
    target: &'a Target,
    unlimited: Target,
    maps: MapState,
    opts: RunOptions,
    ids: HashMap<(u64, u32), u32>,
    walk: Vec<u32>,
    pad: Vec<u8>,
    /// One row per packet, in capture order.
    pub rows: Vec<PacketRow>,
    /// The distinct paths, by id.
    pub paths: Vec<PathStat>,
    /// The costliest packets (at most [`TOP_PACKETS`]), in no order.
    pub top: Vec<KeptPacket>,
    /// Runs that faulted: how many.
    pub faults: u64,
    /// The first [`KEPT_MESSAGES`] of them.
    pub fault_notes: Vec<Noted>,
    /// Packets whose executed instructions no path of the graph follows: how many.
    pub unmatched: u64,
    /// The first [`KEPT_MESSAGES`] of them.
    pub unmatched_notes: Vec<Noted>,
    /// Packets longer than the target's MTU + 14 bytes (not run).
    pub skipped_long: u64,
    /// Packets shorter than the target's minimum (padded with zeros to it).
    pub padded: u64,
    /// Packets the capture cut short (its snap length): run as captured.
    pub cut: u64,
    /// Packets of another link type made Ethernet frames (its EtherType behind an Ethernet
    /// header): [`nicsim_packet::decode::ethernet_frame`].
    pub relinked: u64,
    /// Packets of another link type that give no Ethernet frame (not run).
    pub not_ethernet: u64,
    /// What the capture reader skipped or cut without refusing the capture, one line each (a
    /// file that ends inside its last record, malformed pcapng options: the first ones).
    pub capture_warnings: Vec<String>,
}

/// FNV-1a over a path's edge indices: with its length, the key of a distinct path.
fn path_hash(path: &[u32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &e in path {
        for b in e.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The instruction that node `u` of `dag` executes (`None` for the sink).
fn node_pc(dag: &Dag, u: u32) -> Option<u32> {
    let r = dag.edges(u);
    (!r.is_empty()).then(|| dag.pc[r.start])
}

/// The edges of `dag` that execute `trace` in order, into `out` (its capacity reused).
/// Each step takes the one edge to the next instruction; where two edges lead to different
/// nodes of that instruction (which only [`match_trace`]'s search tells apart), it decides.
/// `Err(k)`: no path follows the trace beyond its first `k + 1` instructions.
pub fn follow(dag: &Dag, trace: &[u32], out: &mut Vec<u32>) -> Result<(), usize> {
    out.clear();
    if trace.is_empty() || dag.n < 2 || node_pc(dag, 0) != Some(trace[0]) {
        return Err(0);
    }
    let sink = dag.sink();
    let mut u = 0u32;
    for i in 0..trace.len() {
        let last = i + 1 == trace.len();
        let mut chosen: Option<usize> = None;
        for e in dag.edges(u) {
            let v = dag.to[e];
            let fits = if last {
                v == sink
            } else {
                v != sink && node_pc(dag, v) == Some(trace[i + 1])
            };
            if !fits {
                continue;
            }
            match chosen {
                None => chosen = Some(e),
                // Two edges to the same node (a jump by 0): the first, as match_trace takes it.
                Some(c) if dag.to[c] == v => {}
                Some(_) => {
                    let mut found = match_trace(dag, trace, 1)?;
                    *out = found.swap_remove(0);
                    return Ok(());
                }
            }
        }
        let Some(e) = chosen else {
            return Err(i);
        };
        out.push(e as u32);
        u = dag.to[e];
    }
    Ok(())
}

impl<'a> Profile<'a> {
    /// A profile of `program` (the analysis's program, its maps sized as they run:
    /// [`MapState::size_from_json`]) costed on `analysis`' graph and `target` (the analysis's
    /// target, with or without its MAC limit), from the map state `maps`.
    pub fn new(
        analysis: &'a Analysis,
        program: &'a Program,
        target: &'a Target,
        maps: MapState,
    ) -> Profile<'a> {
        Profile {
            dag: &analysis.dag,
            program,
            target,
            unlimited: target.clone().without_mac_limit(),
            maps,
            opts: RunOptions::default(),
            ids: HashMap::new(),
            walk: Vec::new(),
            pad: Vec::new(),
            rows: Vec::new(),
            paths: Vec::new(),
            top: Vec::new(),
            faults: 0,
            fault_notes: Vec::new(),
            unmatched: 0,
            unmatched_notes: Vec::new(),
            skipped_long: 0,
            padded: 0,
            cut: 0,
            relinked: 0,
            not_ethernet: 0,
            capture_warnings: Vec::new(),
        }
    }

    /// The map state the packets so far left.
    pub fn maps(&self) -> &MapState {
        &self.maps
    }

    /// The target's time per packet (ns) at cost `cost`: 1e9 over the rate of the cores and
    /// the DRAM engine (the MAC limit left out, so that packets cheaper than it still differ).
    pub fn ns_of(&self, cost: &[u64; NC]) -> f64 {
        1e9 / rate_of(&self.unlimited, cost).pps
    }

    /// Run the next packet (captured at `ts_ns`, `cut` if the capture left bytes out).
    pub fn packet(&mut self, ts_ns: u64, data: &[u8], cut: bool) {
        self.packet_with(ts_ns, data, cut, &mut |_, _, _| {});
    }

    /// [`Profile::packet`], then, if the interpreter ran it to its exit, `each(index, the
    /// bytes it ran on, its action)` (`--kernel` runs the same bytes in the kernel).
    pub fn packet_with(
        &mut self,
        ts_ns: u64,
        data: &[u8],
        cut: bool,
        each: &mut dyn FnMut(u64, &[u8], u32),
    ) {
        let index = self.rows.len() as u64;
        let limits = &self.target.limits;
        let mut row = PacketRow {
            ts_ns,
            bytes: data.len().min(u32::MAX as usize) as u32,
            action: ACTION_SKIPPED,
            path: NO_PATH,
            cost: [0; NC],
        };
        if data.len() > limits.mtu_bytes as usize + interp::ETH_HLEN_BYTES {
            self.skipped_long += 1;
            self.rows.push(row);
            return;
        }
        self.cut += cut as u64;
        let min = limits.min_packet_bytes as usize;
        let packet: &[u8] = if data.len() < min {
            self.padded += 1;
            self.pad.clear();
            self.pad.extend_from_slice(data);
            self.pad.resize(min, 0);
            row.bytes = min as u32;
            &self.pad
        } else {
            data
        };
        // Time as the capture gives it (rate limiters see its gaps); random numbers differ
        // from packet to packet.
        self.opts.ktime_ns = ts_ns;
        self.opts.prandom_seed = index;
        let run = interp::run(self.program, packet, &mut self.maps, &self.opts);
        let o = match run {
            Ok(o) => o,
            Err(f) => {
                self.faults += 1;
                if self.fault_notes.len() < KEPT_MESSAGES {
                    self.fault_notes.push(Noted {
                        index,
                        what: f.to_string(),
                    });
                }
                row.action = ACTION_FAULT;
                self.rows.push(row);
                return;
            }
        };
        each(index, packet, o.retval as u32);
        if let Err(k) = follow(self.dag, &o.trace, &mut self.walk) {
            self.unmatched += 1;
            if self.unmatched_notes.len() < KEPT_MESSAGES {
                let at = o.trace.get(k).copied().unwrap_or(0);
                let next = o
                    .trace
                    .get(k + 1)
                    .map_or("the end".to_string(), |n| format!("instruction {n}"));
                self.unmatched_notes.push(Noted {
                    index,
                    what: format!(
                        "the graph has no edge from instruction {at} (executed instruction {}) \
                         to {next}",
                        k + 1
                    ),
                });
            }
            row.action = ACTION_UNMATCHED;
            self.rows.push(row);
            return;
        }
        let key = (path_hash(&self.walk), self.walk.len() as u32);
        let id = match self.ids.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.paths.len() as u32;
                let cost = path_cost(self.dag, &self.walk);
                let need = self
                    .walk
                    .iter()
                    .map(|&e| self.dag.need[e as usize])
                    .max()
                    .unwrap_or(0)
                    .max(limits.min_packet_bytes);
                let r = rate_of(self.target, &cost);
                self.paths.push(PathStat {
                    id,
                    packets: 0,
                    first_packet: index,
                    retval: o.retval as u32,
                    insns: o.trace.len() as u32,
                    cost,
                    core_cycles: cost[0] as f64 / crate::cost::UNITS_PER_CYCLE,
                    dram_cycles: cost[1] as f64 / crate::cost::UNITS_PER_CYCLE,
                    pps: r.pps,
                    bottleneck: r.bottleneck,
                    ns: self.ns_of(&cost),
                    min_packet_bytes: need,
                });
                self.ids.insert(key, id);
                id
            }
        };
        let p = &mut self.paths[id as usize];
        p.packets += 1;
        row.action = o.retval as u32;
        row.path = id;
        row.cost = p.cost;
        let ns = p.ns;
        keep_if_costly(&mut self.top, index, ts_ns, ns, id, packet);
        self.rows.push(row);
    }

    /// Run every record of the capture at `path`, in order.
    pub fn capture(&mut self, path: &Path) -> Result<(), ProfileError> {
        self.capture_with(path, &mut |_, _, _| {})
    }

    /// [`Profile::capture`] with [`Profile::packet_with`]'s `each`.
    pub fn capture_with(
        &mut self,
        path: &Path,
        each: &mut dyn FnMut(u64, &[u8], u32),
    ) -> Result<(), ProfileError> {
        let file = path.display().to_string();
        let mut reader = CaptureReader::open(path).map_err(|source| ProfileError::Capture {
            file: file.clone(),
            source,
        })?;
        let mut frame = Vec::new();
        while let Some(rec) = reader.next_record() {
            let rec = rec.map_err(|source| ProfileError::Capture {
                file: file.clone(),
                source,
            })?;
            if rec.linktype == linktype::ETHERNET {
                self.packet_with(rec.ts_ns, &rec.data, rec.cut_len() > 0, each);
            } else if ethernet_frame(rec.linktype, &rec.data, &mut frame) {
                self.relinked += 1;
                self.packet_with(rec.ts_ns, &frame, rec.cut_len() > 0, each);
            } else {
                self.not_ethernet += 1;
                self.rows.push(PacketRow {
                    ts_ns: rec.ts_ns,
                    bytes: rec.data.len().min(u32::MAX as usize) as u32,
                    action: ACTION_NOT_ETHERNET,
                    path: NO_PATH,
                    cost: [0; NC],
                });
            }
        }
        self.capture_warnings = reader.leniency().warnings;
        Ok(())
    }
}

/// Keep the packet's bytes if it is among the [`TOP_PACKETS`] costliest so far (the first
/// of equally costly ones stay).
fn keep_if_costly(
    top: &mut Vec<KeptPacket>,
    index: u64,
    ts_ns: u64,
    ns: f64,
    path: u32,
    packet: &[u8],
) {
    let kept = KeptPacket {
        index,
        ts_ns,
        ns,
        path,
        packet_hex: String::new(),
    };
    if top.len() < TOP_PACKETS {
        top.push(KeptPacket {
            packet_hex: hex(packet),
            ..kept
        });
        return;
    }
    let (low, low_ns) = top
        .iter()
        .enumerate()
        .map(|(i, k)| (i, k.ns))
        .min_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
        .expect("the list is full");
    if ns > low_ns {
        top[low] = KeptPacket {
            packet_hex: hex(packet),
            ..kept
        };
    }
}

fn hex(b: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(2 * b.len());
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// The packet rate the target sustains on a traffic whose packets' costs sum to `sum` over
/// `packets` packets: the cores share the packets (their cycles averaged), the DRAM engine
/// serves them all, the MAC limits the count — the analysis's rate ([`rate_at`]) at the mean
/// cost vector.
pub fn sustained_rate(t: &Target, sum: &[u128; NC], packets: u64) -> Rate {
    let n = packets.max(1) as f64;
    let units = crate::cost::UNITS_PER_CYCLE;
    rate_at(t, sum[0] as f64 / units / n, sum[1] as f64 / units / n)
}

impl Profile<'_> {
    /// The rate the target sustains on the packets that took a costed path ([`sustained_rate`]),
    /// how many they were, and their mean length (bytes the program ran on).
    pub fn sustained(&self) -> (Rate, u64, f64) {
        let mut sum = [0u128; NC];
        let (mut n, mut bytes) = (0u64, 0u128);
        for r in self.rows.iter().filter(|r| r.path != NO_PATH) {
            for (s, c) in sum.iter_mut().zip(r.cost) {
                *s += c as u128;
            }
            n += 1;
            bytes += r.bytes as u128;
        }
        (
            sustained_rate(self.target, &sum, n),
            n,
            bytes as f64 / n.max(1) as f64,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::MAP_ARRAY;
    use crate::testasm::*;

    fn target() -> Target {
        Target::builtin("nfp").unwrap().unwrap()
    }

    /// Counts packets in array `cnt`: the first two pass (2), the rest drop (1), as does a
    /// failed lookup. The path a packet takes depends on the packets before it.
    fn counter() -> Program {
        let mut s = vec![st(W, 10, -4, 0), movr(2, 10), add(2, -4)];
        s.extend(ld_map(1, 0));
        s.extend([
            call(1),
            jeq(0, 0, 7),
            ldx(DW, 1, 0, 0),
            movr(2, 1),
            add(2, 1),
            stx(DW, 0, 2, 0),
            i(0x25, 1, 0, 2, 1), // if r1 > 1 goto drop
            mov(0, 2),
            exit(),
            mov(0, 1),
            exit(),
        ]);
        prog(&s, vec![map("cnt", MAP_ARRAY, 4, 8, 1)])
    }

    #[test]
    fn follow_takes_the_path_match_trace_finds() {
        let a = nfp_analysis(counter());
        let mut maps = MapState::new(&a.program);
        let mut out = Vec::new();
        for _ in 0..3 {
            let o = interp::run(&a.program, &[0; 60], &mut maps, &RunOptions::default()).unwrap();
            follow(&a.dag, &o.trace, &mut out).unwrap();
            assert_eq!(out, match_trace(&a.dag, &o.trace, 1).unwrap()[0]);
            assert_eq!(a.path_insns(&a.dag, &out), o.trace);
        }
        // A trace that leaves the graph, one that stops early, one that starts elsewhere.
        assert_eq!(follow(&a.dag, &[0, 1, 2, 3, 5, 6, 13], &mut out), Err(5));
        assert_eq!(follow(&a.dag, &[0, 1, 2], &mut out), Err(2));
        assert_eq!(follow(&a.dag, &[1, 2], &mut out), Err(0));
    }

    #[test]
    fn map_state_is_carried_from_packet_to_packet() {
        let a = nfp_analysis(counter());
        let t = target();
        let mut p = Profile::new(&a, &a.program, &t, MapState::new(&a.program));
        for k in 0..5u64 {
            p.packet(k * 1000, &[0; 60], false);
        }
        let actions: Vec<u32> = p.rows.iter().map(|r| r.action).collect();
        assert_eq!(actions, [2, 2, 1, 1, 1]);
        let ids: Vec<u32> = p.rows.iter().map(|r| r.path).collect();
        assert_eq!(ids, [0, 0, 1, 1, 1]);
        assert_eq!(p.paths.len(), 2);
        assert_eq!((p.paths[0].packets, p.paths[1].packets), (2, 3));
        assert_eq!(p.paths[1].first_packet, 2);
        assert_eq!(
            p.maps().get("cnt", &[0; 4]).unwrap().unwrap(),
            5u64.to_le_bytes()
        );
        // Each packet's cost is its path's cost on the graph, by the analysis's function.
        let mut maps = MapState::new(&a.program);
        let o = interp::run(&a.program, &[0; 60], &mut maps, &RunOptions::default()).unwrap();
        let path = match_trace(&a.dag, &o.trace, 1).unwrap().remove(0);
        assert_eq!(p.rows[0].cost, path_cost(&a.dag, &path));
        assert_eq!(p.paths[0].pps, rate_of(&t, &path_cost(&a.dag, &path)).pps);
        // From a given state: the counter at 7, every packet drops.
        let mut st = MapState::new(&a.program);
        st.set("cnt", &[0; 4], &7u64.to_le_bytes()).unwrap();
        let mut p = Profile::new(&a, &a.program, &t, st);
        p.packet(0, &[0; 60], false);
        assert_eq!(p.rows[0].action, 1);
    }

    #[test]
    fn short_packets_are_padded_and_long_ones_skipped() {
        let a = nfp_analysis(counter());
        let t = target();
        let mut p = Profile::new(&a, &a.program, &t, MapState::new(&a.program));
        p.packet(0, &[1; 42], false);
        let long = vec![0u8; t.limits.mtu_bytes as usize + 15];
        p.packet(1, &long, false);
        p.packet(2, &[0; 60], true);
        assert_eq!(p.rows[0].bytes, t.limits.min_packet_bytes);
        assert_eq!((p.padded, p.skipped_long, p.cut), (1, 1, 1));
        assert_eq!(p.rows[1].action, ACTION_SKIPPED);
        assert_eq!(p.rows[1].path, NO_PATH);
        assert_eq!(p.rows[2].action, 2);
    }

    #[test]
    fn the_sustained_rate_of_one_path_is_its_rate() {
        let a = nfp_analysis(counter());
        let t = target();
        let mut p = Profile::new(&a, &a.program, &t, MapState::new(&a.program));
        p.packet(0, &[0; 60], false);
        p.packet(0, &[0; 60], false);
        let (r, n, bytes) = p.sustained();
        assert_eq!(n, 2);
        assert_eq!(bytes, 60.0);
        let one = rate_of(&t, &p.rows[0].cost).pps;
        assert!((r.pps - one).abs() <= one * 1e-12, "{} vs {one}", r.pps);
        // Two paths: the mean of the cost vectors, not of the rates.
        for _ in 0..2 {
            p.packet(0, &[0; 60], false);
        }
        let (r, _, _) = p.sustained();
        let mean = [
            (p.rows[0].cost[0] + p.rows[3].cost[0]) as f64 / 2e6,
            (p.rows[0].cost[1] + p.rows[3].cost[1]) as f64 / 2e6,
        ];
        assert!((r.pps - rate_at(&t, mean[0], mean[1]).pps).abs() < 1e-6 * r.pps);
    }

    #[test]
    fn the_costliest_packets_are_kept() {
        let a = nfp_analysis(counter());
        let t = target();
        let mut p = Profile::new(&a, &a.program, &t, MapState::new(&a.program));
        for k in 0..(TOP_PACKETS as u64 + 10) {
            p.packet(k, &[k as u8; 60], false);
        }
        assert_eq!(p.top.len(), TOP_PACKETS);
        let worst = p.paths.iter().map(|q| q.ns).fold(0.0, f64::max);
        assert!(p.top.iter().all(|k| k.ns == worst) || p.paths.len() == 1);
        assert!(p.top.iter().all(|k| k.packet_hex.len() == 120));
    }
}
